/* Tests of host/notify.c: a unix datagram socket stands in for systemd,
 * NOTIFY_SOCKET names it (a path, or @name in the abstract namespace),
 * and each test reads the datagrams wharfd would send; the last one reads
 * what a real wharfd sends through its start, watchdog, reload and
 * stop. */
#include <criterion/criterion.h>

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "host_process.h"
#include "notify.h"
#include "redis_server.h"

static char socket_dir[64];
static char socket_path[128];

/* Binds a datagram socket at `name` ("/path" or "@abstract") and points
 * NOTIFY_SOCKET at it. Returns the socket. */
static int listen_at(const char *name)
{
    struct sockaddr_un addr;
    socklen_t len;
    struct timeval tv = {.tv_sec = 2};
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

    cr_assert_geq(fd, 0);
    memset(&addr, 0, sizeof(addr));
    addr.sun_family = AF_UNIX;
    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", name);
    len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(name));
    if (name[0] == '@')
        addr.sun_path[0] = '\0';
    else
        len++;
    cr_assert_eq(bind(fd, (struct sockaddr *)&addr, len), 0, "bind %s: %s",
                 name, strerror(errno));
    cr_assert_eq(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
    cr_assert_eq(setenv("NOTIFY_SOCKET", name, 1), 0);
    return fd;
}

static int listen_on_path(void)
{
    snprintf(socket_dir, sizeof(socket_dir), "/tmp/wharf-notify-XXXXXX");
    cr_assert_not_null(mkdtemp(socket_dir));
    snprintf(socket_path, sizeof(socket_path), "%s/notify", socket_dir);
    return listen_at(socket_path);
}

static void remove_path(void)
{
    if (socket_path[0])
        unlink(socket_path);
    if (socket_dir[0])
        rmdir(socket_dir);
}

/* The next datagram, NUL-terminated. */
static void receive(int fd, char *buf, size_t size)
{
    ssize_t n = recv(fd, buf, size - 1, 0);

    cr_assert_geq(n, 0, "no datagram: %s", strerror(errno));
    buf[n] = '\0';
}

static void setup(void)
{
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
}

TestSuite(notify, .init = setup, .fini = remove_path);

Test(notify, every_call_is_a_noop_without_notify_socket)
{
    cr_assert_eq(notify_ready(), 0);
    cr_assert_eq(notify_reloading(), 0);
    cr_assert_eq(notify_stopping(0), 0);
    cr_assert_eq(notify_watchdog(), 0);
    cr_assert_eq(notify_status("serving %d types", 3), 0);
    cr_assert_eq(notify_watchdog_interval_ms(), 0);
}

Test(notify, ready_names_the_main_pid)
{
    char buf[256], want[64];
    int fd = listen_on_path();

    cr_assert_eq(notify_ready(), 0);
    receive(fd, buf, sizeof(buf));
    snprintf(want, sizeof(want), "READY=1\nMAINPID=%ld\n", (long)getpid());
    cr_assert_str_eq(buf, want);
    close(fd);
}

Test(notify, stopping_and_watchdog)
{
    char buf[256];
    int fd = listen_on_path();

    cr_assert_eq(notify_stopping(0), 0);
    receive(fd, buf, sizeof(buf));
    cr_assert_str_eq(buf, "STOPPING=1\n");
    cr_assert_eq(notify_stopping(45000), 0);
    receive(fd, buf, sizeof(buf));
    cr_assert_str_eq(buf, "STOPPING=1\nEXTEND_TIMEOUT_USEC=45000000\n");
    cr_assert_eq(notify_watchdog(), 0);
    receive(fd, buf, sizeof(buf));
    cr_assert_str_eq(buf, "WATCHDOG=1\n");
    close(fd);
}

Test(notify, reloading_carries_the_monotonic_time)
{
    char buf[256];
    struct timespec ts;
    uint64_t before, after, sent;
    int fd = listen_on_path();

    clock_gettime(CLOCK_MONOTONIC, &ts);
    before = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
    cr_assert_eq(notify_reloading(), 0);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    after = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
    receive(fd, buf, sizeof(buf));
    cr_assert_eq(
        sscanf(buf, "RELOADING=1\nMONOTONIC_USEC=%" SCNu64 "\n", &sent), 1,
        "got '%s'", buf);
    cr_assert(sent >= before && sent <= after,
              "%" PRIu64 " not in [%" PRIu64 ", %" PRIu64 "]", sent, before,
              after);
    cr_assert_eq(buf[strlen(buf) - 1], '\n');
    close(fd);
}

Test(notify, status_is_one_line)
{
    char buf[2048];
    char longer[3000];
    int fd = listen_on_path();

    cr_assert_eq(notify_status("serving %d types\non %s", 2, "redis"), 0);
    receive(fd, buf, sizeof(buf));
    cr_assert_str_eq(buf, "STATUS=serving 2 types on redis\n");

    memset(longer, 'x', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    cr_assert_eq(notify_status("%s", longer), 0);
    receive(fd, buf, sizeof(buf));
    cr_assert_eq(strncmp(buf, "STATUS=xxx", 10), 0);
    cr_assert_lt(strlen(buf), 1024, "cut to fit one datagram");
    cr_assert_eq(buf[strlen(buf) - 1], '\n');
    close(fd);
}

Test(notify, abstract_namespace_socket)
{
    char name[64], buf[256];
    int fd;

    snprintf(name, sizeof(name), "@wharf-notify-test-%ld", (long)getpid());
    fd = listen_at(name);
    cr_assert_eq(notify_stopping(0), 0);
    receive(fd, buf, sizeof(buf));
    cr_assert_str_eq(buf, "STOPPING=1\n");
    close(fd);
}

Test(notify, a_missing_or_bad_socket_is_an_error_not_a_crash)
{
    cr_assert_eq(setenv("NOTIFY_SOCKET", "/nonexistent/wharf/notify", 1), 0);
    cr_assert_lt(notify_ready(), 0);
    cr_assert_eq(setenv("NOTIFY_SOCKET", "relative/path", 1), 0);
    cr_assert_eq(notify_ready(), -EINVAL);
}

Test(notify, watchdog_interval_is_half_the_period)
{
    char pid[32];

    cr_assert_eq(setenv("WATCHDOG_USEC", "30000000", 1), 0);
    cr_assert_eq(notify_watchdog_interval_ms(), 15000);
    snprintf(pid, sizeof(pid), "%ld", (long)getpid());
    cr_assert_eq(setenv("WATCHDOG_PID", pid, 1), 0);
    cr_assert_eq(notify_watchdog_interval_ms(), 15000);
    cr_assert_eq(setenv("WATCHDOG_PID", "1", 1), 0);
    cr_assert_eq(notify_watchdog_interval_ms(), 0, "another process's");
    cr_assert_eq(unsetenv("WATCHDOG_PID"), 0);
    cr_assert_eq(setenv("WATCHDOG_USEC", "junk", 1), 0);
    cr_assert_eq(notify_watchdog_interval_ms(), 0);
    cr_assert_eq(setenv("WATCHDOG_USEC", "0", 1), 0);
    cr_assert_eq(notify_watchdog_interval_ms(), 0);
    cr_assert_eq(setenv("WATCHDOG_USEC", "1500", 1), 0);
    cr_assert_eq(notify_watchdog_interval_ms(), 1);
}

/* The next datagram that starts with `prefix`, within timeout_ms (others,
 * such as watchdog pings, are skipped); false if none came. */
static bool receive_starting(int fd, const char *prefix, char *buf, size_t size,
                             int timeout_ms)
{
    int64_t deadline = test_now_ms() + timeout_ms;

    while (test_now_ms() < deadline) {
        ssize_t n = recv(fd, buf, size - 1, 0);

        if (n < 0)
            continue; /* SO_RCVTIMEO: look at the deadline again */
        buf[n] = '\0';
        if (strncmp(buf, prefix, strlen(prefix)) == 0)
            return true;
    }
    return false;
}

/* What the unit's Type=notify and WatchdogSec rely on, from a real
 * wharfd: READY=1 with its pid once serving, WATCHDOG=1 at half the
 * period, RELOADING=1 then READY=1 on SIGHUP, and on SIGTERM STOPPING=1
 * with EXTEND_TIMEOUT_USEC = shutdown_timeout + 15 s. */
Test(notify, wharfd_tells_systemd_ready_watchdog_reloading_and_stopping,
     .timeout = 120)
{
    char buf[1024], want[128];
    test_redis redis;
    test_host host;
    int fd = listen_on_path();

    /* 200 ms: a ping every 100 ms. */
    cr_assert_eq(setenv("WATCHDOG_USEC", "200000", 1), 0);
    test_redis_start(&redis, 0);
    test_host_manifest(&host, &redis, NULL);
    test_host_start(&host);

    snprintf(want, sizeof(want), "READY=1\nMAINPID=%ld\n", (long)host.pid);
    cr_assert(receive_starting(fd, "READY=1", buf, sizeof(buf), 60000),
              "no READY=1; see %s", host.log);
    cr_assert_str_eq(buf, want);
    cr_assert(receive_starting(fd, "STATUS=serving ", buf, sizeof(buf), 10000));
    cr_assert(receive_starting(fd, "WATCHDOG=1", buf, sizeof(buf), 10000),
              "no watchdog ping");
    cr_assert_str_eq(buf, "WATCHDOG=1\n");

    cr_assert_eq(kill(host.pid, SIGHUP), 0);
    cr_assert(receive_starting(fd, "RELOADING=1\nMONOTONIC_USEC=", buf,
                               sizeof(buf), 30000),
              "no RELOADING=1");
    cr_assert(receive_starting(fd, "READY=1", buf, sizeof(buf), 60000),
              "no READY=1 after the reload; see %s", host.log);
    cr_assert(test_host_log_has(&host, "reload checked", NULL));

    cr_assert_eq(kill(host.pid, SIGTERM), 0);
    cr_assert(receive_starting(fd, "STOPPING=1", buf, sizeof(buf), 30000),
              "no STOPPING=1");
    /* host_process's manifest: shutdown_timeout = 10s. */
    cr_assert_str_eq(buf, "STOPPING=1\nEXTEND_TIMEOUT_USEC=25000000\n");
    cr_assert_eq(test_host_wait_exit(&host, TEST_EVENT_MS), 0);
    close(fd);
    test_redis_stop(&redis);
    snprintf(buf, sizeof(buf), "rm -rf %s", host.dir);
    if (system(buf) != 0)
        cr_log_warn("cannot remove %s", host.dir);
}
