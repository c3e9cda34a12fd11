/* The run protocol end to end (issue 9's situations): timeouts that hold
 * whatever the plugin does, stops and reloads that never interrupt plugin
 * system calls, leases at any batch size, reloads that resize the slots
 * or hang in a plugin's init, a worker dying mid slot-write or calling
 * exit(), and workers that inherit no descriptor of the supervisor. Real
 * wharfd processes against a private redis-server; every wait is for an
 * event, with a generous deadline. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "host_process.h"
#include "redis_server.h"

static test_redis redis;
static test_host host;
static test_host other;
static redisContext *rc;

static void start_redis(void)
{
    test_suite_up(&redis, 1, &rc);
}

static void stop_all(void)
{
    test_suite_down(&redis, &rc, (test_host *const[]){&host, &other, NULL});
}

TestSuite(run, .init = start_redis, .fini = stop_all, .timeout = 180);

/* Waits up to ms for a line of h's log with a and b (b may be NULL). */
static bool wait_log(const test_host *h, int ms, const char *a, const char *b)
{
    return test_host_wait_log(h, ms, (const char *const[]){a, b, NULL});
}

/* Starts h and waits until a worker serves. */
static void start(test_host *h, const test_host_opts *o)
{
    test_host_up(h, &redis, o, NULL);
}

/* Waits up to ms until id has run on h (any attempt). */
static void wait_runs(const test_host *h, const char *id, int ms)
{
    test_host_wait_runs(h, id, 1, ms);
}

static long long wait_key(const char *fmt, const char *id, int ms)
{
    return test_wait_int(rc, 1, ms, fmt, id);
}

/* The error a dead task died of, from its log line. */
static void assert_died_of(const char *id, const char *error)
{
    char task[300];
    snprintf(task, sizeof(task), "\"task\":\"%s\"", id);
    /* The dead record, not the dead set's score: test_wait_int waits
     * for a value equal to 1, which a score (a time) never is. */
    cr_assert_eq(wait_key("EXISTS wharf:{chaos}:dead:%s", id, TEST_EVENT_MS), 1,
                 "%s never died; see %s", id, host.log);
    cr_assert(wait_log(&host, TEST_EVENT_MS, task, error),
              "no line says %s died of '%s'; see %s", id, error, host.log);
}

/* A plugin that returns WHARF_OK once its system call is interrupted
 * must not turn a timeout into a success: the run owns the deadline. */
static void timeout_test(const char *id, const char *payload)
{
    test_host_opts o = {.extra = "[type.chaos]\ntimeout = 2s\n"
                                 "max_attempts = 1\n"};
    start(&host, &o);
    test_add_entry(rc, "chaos", id, payload);
    assert_died_of(id, "timeout after 2000 ms");
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{chaos}:result:%s", id), 0,
                 "a timed-out run stored a result");
    cr_assert_eq(test_host_done(&host, id), 0);
}

Test(run, plain_sleep_past_timeout_ends_as_timeout)
{
    timeout_test("sleep60", "snooze:60");
}

Test(run, one_nanosleep_past_timeout_ends_as_timeout)
{
    timeout_test("nap60", "nap:60000");
}

/* A plugin that watches wharf_cancelled returns at once; what it returns
 * is thrown away, and its worker lives on (no kill, no restart). */
Test(run, cancel_request_ends_a_polite_plugin_without_a_kill)
{
    test_host_opts o = {.extra = "[type.chaos]\ntimeout = 500ms\n"
                                 "max_attempts = 1\n"};
    start(&host, &o);
    test_add_entry(rc, "chaos", "polite", "polite:60000");
    assert_died_of("polite", "timeout after 500 ms");
    cr_assert(test_host_log_has(&host, "polite: cancelled", NULL));
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{chaos}:result:polite"), 0);
    cr_assert(!test_host_log_has(&host, "worker died", NULL),
              "the worker was killed though the plugin returned");
    test_add_entry(rc, "chaos", "after", "ok");
    cr_assert_eq(
        wait_key("EXISTS wharf:{chaos}:result:%s", "after", TEST_EVENT_MS), 1);
}

/* Makes a fifo in h's folder for a read: task. */
static void make_fifo(const test_host *h, const char *name, char *path,
                      size_t len)
{
    snprintf(path, len, "%s/%s", h->dir, name);
    cr_assert_eq(mkfifo(path, 0600), 0, "mkfifo %s: %s", path, strerror(errno));
}

/* Writes one byte into the fifo its reader has open. */
static void feed_fifo(const char *path)
{
    int fd = open(path, O_WRONLY);
    cr_assert(fd >= 0, "open %s: %s", path, strerror(errno));
    cr_assert_eq(write(fd, "x", 1), 1);
    close(fd);
}

/* A plugin blocked in a system call (open and read of a fifo) while the
 * host reloads and then stops: neither interrupts it, and the task
 * finishes ok once its data comes. */
Test(run, blocked_read_survives_sighup_and_sigterm)
{
    char fifo1[400], fifo2[400], payload[420];
    start(&host, &(test_host_opts){.host_keys = "workers = 1\n"});
    make_fifo(&host, "f1", fifo1, sizeof(fifo1));
    make_fifo(&host, "f2", fifo2, sizeof(fifo2));

    snprintf(payload, sizeof(payload), "read:%s", fifo1);
    test_add_entry(rc, "chaos", "r1", payload);
    wait_runs(&host, "r1", TEST_EVENT_MS);
    cr_assert_eq(test_host_runs(&host, "r1", 0), 1, "r1 never started");
    kill(host.pid, SIGHUP);
    cr_assert(wait_log(&host, TEST_EVENT_MS, "reload checked", NULL),
              "the reload did not pass its check");
    /* The worker is asked to stop right after that line. A bounded sleep,
     * not an event (the request is a flag in its slot, with nothing to
     * see): it gives a stop that wrongly came as a signal time to land
     * and break the read. On a slow machine it may land only after the
     * feed, and then this passes without having tested it; it can never
     * fail for being slow. */
    test_sleep_ms(300);
    feed_fifo(fifo1);
    cr_assert_eq(
        wait_key("EXISTS wharf:{chaos}:result:%s", "r1", TEST_EVENT_MS), 1,
        "the read was broken by the reload; see %s", host.log);

    snprintf(payload, sizeof(payload), "read:%s", fifo2);
    test_add_entry(rc, "chaos", "r2", payload);
    wait_runs(&host, "r2", TEST_EVENT_MS);
    cr_assert_eq(test_host_runs(&host, "r2", 0), 1, "r2 never started");
    kill(host.pid, SIGTERM);
    cr_assert(wait_log(&host, TEST_EVENT_MS,
                       "stopping: running tasks may finish", NULL));
    /* Every worker was asked to stop in the same pass that logged that
     * line; as above, a bounded sleep gives a wrongly sent signal time to
     * land, and a slow machine can only make this miss, never fail. */
    test_sleep_ms(300);
    feed_fifo(fifo2);
    cr_assert_eq(test_host_wait_exit(&host, TEST_EVENT_MS), 0);
    host.pid = 0;
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{chaos}:result:r2"), 1,
                 "the read was broken by the stop; see %s", host.log);
    cr_assert_eq(test_host_runs(&host, "r1", 0), 1);
    cr_assert_eq(test_host_runs(&host, "r2", 0), 1);
}

/* One worker holds a batch of 200 tasks whose run outlasts lock_ttl many
 * times, the first and the last of them each running longer than
 * lock_ttl and visibility_timeout on their own: every lease and lock
 * must be renewed, in one call of any size, both of the task in hand and
 * of those waiting behind it. Leases of 2 s (renewed every 667 ms) leave
 * a loaded machine 1.3 s for each renewal; the batch runs about 12 s. */
Test(run, leases_hold_for_a_batch_of_200)
{
    char id[32];
    test_host_opts o = {.host_keys = "workers = 1\n",
                        .extra = "[defaults]\nprefetch = 200\n"
                                 "lock_ttl = 2s\nvisibility_timeout = 3s\n"};
    start(&host, &o);
    redisAppendCommand(rc, "MULTI");
    for (int i = 0; i < 200; i++) {
        snprintf(id, sizeof(id), "l%d", i);
        redisAppendCommand(rc,
                           "XADD wharf:{chaos}:stream * id %s type chaos "
                           "payload %s attempt 1 enqueued_at 1 trace "
                           "00-0af7651916cd43dd8448eb211c80319c-"
                           "b7ad6b7169203331-01",
                           id, i == 0 || i == 199 ? "sleep:3500" : "sleep:25");
    }
    redisAppendCommand(rc, "EXEC");
    for (int i = 0; i < 202; i++) {
        redisReply *r = NULL;
        cr_assert_eq(redisGetReply(rc, (void **)&r), REDIS_OK);
        freeReplyObject(r);
    }
    for (int i = 0; i < 200; i++) {
        snprintf(id, sizeof(id), "l%d", i);
        cr_assert_eq(
            wait_key("EXISTS wharf:{chaos}:result:%s", id, TEST_EVENT_MS), 1,
            "%s never finished; see %s", id, host.log);
    }
    for (int i = 0; i < 200; i++) {
        snprintf(id, sizeof(id), "l%d", i);
        cr_assert_eq(test_host_runs(&host, id, 0), 1, "%s ran %d times", id,
                     test_host_runs(&host, id, 0));
        cr_assert_eq(test_host_runs(&host, id, 1), 1, "%s: not attempt 1", id);
    }
    cr_assert(!test_host_log_has(&host, "\"outcome\":\"stale\"", NULL),
              "stale runs; see %s", host.log);
    cr_assert(!test_host_log_has(&host, "renewing leases", NULL),
              "a renewal failed; see %s", host.log);
}

/* A reload that adds a type and raises prefetch: the workers that load
 * it get slots of the new size, so a hanging task at the end of a batch
 * larger than the first manifest allowed is still stopped at its
 * timeout. */
Test(run, reload_that_grows_the_batch_keeps_timeouts)
{
    /* autoload = no: only the types named here count in the slot. */
    test_host_opts o = {.host_keys = "workers = 1\nautoload = no\n",
                        .extra = "[defaults]\nprefetch = 1\n"};
    start(&host, &o);
    test_host_opts grown = {
        .host_keys = "workers = 1\nautoload = no\n",
        .extra = "types = chaos, chaos2\n"
                 "[defaults]\nprefetch = 10\n"
                 "[type.chaos2]\ntimeout = 1s\nmax_attempts = 1\n"};
    test_host_rewrite(&host, &redis, &grown);
    kill(host.pid, SIGHUP);
    cr_assert(wait_log(&host, TEST_EVENT_MS, "reload checked", NULL));
    /* chaos and chaos2, 10 each */
    cr_assert(wait_log(&host, TEST_EVENT_MS, "\"slot_capacity\":20", NULL),
              "no worker with the grown slot; see %s", host.log);
    cr_assert_eq(
        test_wait_int(rc, 1, TEST_EVENT_MS, "EXISTS wharf:{chaos2}:stream"), 1);
    /* One transaction, so the worker claims all of it in one batch. */
    redisAppendCommand(rc, "MULTI");
    for (int i = 0; i < 9; i++)
        redisAppendCommand(rc,
                           "XADD wharf:{chaos}:stream * id g%d type chaos "
                           "payload ok attempt 1 enqueued_at 1 trace "
                           "00-0af7651916cd43dd8448eb211c80319c-"
                           "b7ad6b7169203331-01",
                           i);
    redisAppendCommand(rc, "XADD wharf:{chaos2}:stream * id hang type chaos2 "
                           "payload snooze:60 attempt 1 enqueued_at 1 trace "
                           "00-0af7651916cd43dd8448eb211c80319c-"
                           "b7ad6b7169203331-01");
    redisAppendCommand(rc, "EXEC");
    for (int i = 0; i < 12; i++) {
        redisReply *r = NULL;
        cr_assert_eq(redisGetReply(rc, (void **)&r), REDIS_OK);
        freeReplyObject(r);
    }
    cr_assert_eq(
        wait_key("EXISTS wharf:{chaos2}:dead:%s", "hang", TEST_EVENT_MS), 1,
        "the hanging task never died; see %s", host.log);
    cr_assert_eq(
        test_wait_int(rc, 1, TEST_EVENT_MS, "ZCARD wharf:{chaos2}:dead"), 1,
        "the hanging task was never stopped; see %s", host.log);
    cr_assert(wait_log(&host, TEST_EVENT_MS, "\"task\":\"hang\"",
                       "timeout after 1000 ms"));
    cr_assert_eq(
        wait_key("EXISTS wharf:{chaos}:result:%s", "g8", TEST_EVENT_MS), 1);
}

/* A reload whose plugin init hangs is refused at init_timeout, and the
 * supervisor keeps renewing the running task's lease meanwhile: another
 * host with a short visibility_timeout takes nothing over. */
Test(run, hanging_init_refuses_the_reload_and_leases_hold)
{
    /* Leases of 2 s, renewed every 667 ms, leave a loaded machine 1.3 s
     * for each renewal; the init hangs for 6 s (init_timeout), three
     * leases, so renewals held up by it would surely lose the task to the
     * other host; the task runs 10 s, through all of it. */
    const char *policy = "[type.chaos]\nvisibility_timeout = 2s\n"
                         "lock_ttl = 2s\n";
    char extra[400];
    test_host_opts o = {.host_keys = "workers = 1\ninit_timeout = 6s\n",
                        .extra = policy};
    start(&host, &o);
    test_host_opts b = {.host_keys = "instance = other\nworkers = 1\n",
                        .extra = policy};
    start(&other, &b);
    test_add_entry(rc, "chaos", "long", "sleep:10000");
    for (int64_t end = test_now_ms() + TEST_EVENT_MS;
         test_host_runs(&host, "long", 0) + test_host_runs(&other, "long", 0) ==
             0 &&
         test_now_ms() < end;)
        test_sleep_ms(10);
    test_host *runner = test_host_runs(&host, "long", 0) ? &host : &other;
    test_host *idle = runner == &host ? &other : &host;
    snprintf(extra, sizeof(extra), "init_sleep_ms = 60000\n%s", policy);
    test_host_opts hang = {.host_keys = runner == &host
                                            ? "workers = 1\ninit_timeout = 6s\n"
                                            : "instance = other\nworkers = 1\n"
                                              "init_timeout = 6s\n",
                           .extra = extra};
    test_host_rewrite(runner, &redis, &hang);
    kill(runner->pid, SIGHUP);
    cr_assert(wait_log(runner, TEST_EVENT_MS, "reload refused", "init_timeout"),
              "the hanging reload was not refused; see %s", runner->log);
    cr_assert_eq(
        wait_key("EXISTS wharf:{chaos}:result:%s", "long", TEST_EVENT_MS), 1);
    cr_assert_eq(test_host_runs(runner, "long", 0), 1);
    cr_assert_eq(test_host_runs(idle, "long", 0), 0, "run a second time");
    cr_assert(!test_host_log_has(idle, "taken over", NULL),
              "the other host took the task over; see %s", idle->log);
    cr_assert(!test_host_log_has(runner, "\"outcome\":\"stale\"", NULL));
}

/* A worker killed in the middle of a slot write (a test hook) is
 * replaced, and its replacement's slot works: timeouts hold there. */
Test(run, worker_killed_mid_slot_write_is_replaced_and_its_slot_works)
{
    char marker[400];
    test_host_manifest_opts(&host, &redis,
                            &(test_host_opts){.host_keys = "workers = 1\n",
                                              .extra =
                                                  "[type.chaos]\ntimeout = 1s\n"
                                                  "max_attempts = 1\n"});
    snprintf(marker, sizeof(marker), "%s/died-once", host.dir);
    setenv("WHARF_TEST_DIE_IN_SLOT_WRITE", marker, 1);
    test_host_start(&host);
    unsetenv("WHARF_TEST_DIE_IN_SLOT_WRITE");
    cr_assert(
        wait_log(&host, TEST_EVENT_MS, "worker died; restarting", "SIGKILL"),
        "the hook did not fire; see %s", host.log);
    test_add_entry(rc, "chaos", "after-death", "snooze:60");
    assert_died_of("after-death", "timeout after 1000 ms");
    test_add_entry(rc, "chaos", "fine", "ok");
    cr_assert_eq(
        wait_key("EXISTS wharf:{chaos}:result:%s", "fine", TEST_EVENT_MS), 1);
}

/* exit() inside process_business is a failed attempt, never a clean
 * worker exit that leaves the entry to run again at attempt 1 forever. */
Test(run, exit_inside_a_plugin_fails_the_attempt)
{
    test_host_opts o = {.host_keys = "workers = 1\n",
                        .extra = "[type.chaos]\nmax_attempts = 2\n"
                                 "backoff_base = 20ms\n"};
    start(&host, &o);
    test_add_entry(rc, "chaos", "quitter", "exit:0");
    assert_died_of("quitter", "worker exited with status 0 during the task");
    cr_assert_eq(test_host_runs(&host, "quitter", 1), 1);
    cr_assert_eq(test_host_runs(&host, "quitter", 2), 1);
    cr_assert_eq(test_host_runs(&host, "quitter", 0), 2);
    test_add_entry(rc, "chaos", "next", "ok");
    cr_assert_eq(
        wait_key("EXISTS wharf:{chaos}:result:%s", "next", TEST_EVENT_MS), 1);
}

/* The inode of the socket listening on 127.0.0.1:port, from
 * /proc/net/tcp (state 0A), or 0. */
static unsigned long listening_inode(int port)
{
    FILE *f = fopen("/proc/net/tcp", "r");
    char line[512];
    unsigned long inode = 0;

    cr_assert(f != NULL);
    while (fgets(line, sizeof(line), f)) {
        unsigned local_port, state;
        unsigned long ino;
        if (sscanf(line, " %*d: %*8X:%X %*8X:%*X %X %*s %*s %*s %*s %*s %lu",
                   &local_port, &state, &ino) == 3 &&
            (int)local_port == port && state == 0x0A)
            inode = ino;
    }
    fclose(f);
    return inode;
}

/* The pid of the first worker from the log. */
static pid_t first_worker(const test_host *h)
{
    FILE *f = fopen(h->log, "r");
    char line[8192];
    pid_t pid = 0;

    while (f && !pid && fgets(line, sizeof(line), f)) {
        char *p = strstr(line, "\"pid\":");
        if (strstr(line, "\"msg\":\"worker started\"") && p)
            pid = (pid_t)atoi(p + 6);
    }
    if (f)
        fclose(f);
    return pid;
}

/* A worker holds no descriptor of the supervisor: not the metrics
 * listener, so a plugin's forked child cannot keep the port. */
Test(run, workers_inherit_no_descriptor)
{
    char listen[64], fds[64], link[512], target[512];
    int port = test_free_port();
    unsigned long inode;
    pid_t pid;
    DIR *d;
    struct dirent *e;
    int sockets = 0;

    snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
    start(&host, &(test_host_opts){.host_keys = "workers = 1\n",
                                   .metrics_listen = listen});
    inode = listening_inode(port);
    cr_assert(inode != 0, "nothing listens on %s", listen);
    pid = first_worker(&host);
    cr_assert(pid > 0);
    snprintf(fds, sizeof(fds), "/proc/%d/fd", (int)pid);
    snprintf(target, sizeof(target), "socket:[%lu]", inode);
    d = opendir(fds);
    cr_assert(d != NULL, "%s: %s", fds, strerror(errno));
    while ((e = readdir(d)) != NULL) {
        char path[600];
        ssize_t n;
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", fds, e->d_name);
        n = readlink(path, link, sizeof(link) - 1);
        if (n < 0)
            continue;
        link[n] = '\0';
        cr_assert_str_neq(link, target, "the worker holds the listener");
        if (atoi(e->d_name) > 2) {
            cr_assert(strncmp(link, "socket:", 7) == 0,
                      "the worker inherited fd %s -> %s", e->d_name, link);
            sockets++;
        }
    }
    closedir(d);
    cr_assert(sockets <= 1,
              "the worker holds %d sockets (its Redis "
              "connection is one)",
              sockets);
}

/* A batch finished while Redis is down, then SIGTERM: the worker keeps
 * the finish and sends it once Redis is back (within shutdown_timeout)
 * instead of dropping it, so the task is not run a second time. */
Test(run, finish_held_across_an_outage_survives_sigterm)
{
    char fifo[400], payload[420];

    start(&host, &(test_host_opts){.host_keys = "workers = 1\n"});
    /* Held by a fifo until Redis is down, so its finish surely meets the
     * outage (a sleep could end first on a slow machine). */
    make_fifo(&host, "held", fifo, sizeof(fifo));
    snprintf(payload, sizeof(payload), "read:%s", fifo);
    test_add_entry(rc, "chaos", "held", payload);
    wait_runs(&host, "held", TEST_EVENT_MS);
    cr_assert_eq(test_host_runs(&host, "held", 0), 1, "never started");
    redisFree(rc);
    rc = NULL;
    test_redis_stop(&redis); /* append-only: what was acked is kept */
    feed_fifo(fifo);
    cr_assert(wait_log(&host, TEST_EVENT_MS, "connection lost mid-batch", NULL),
              "the finish did not meet the outage; see %s", host.log);
    kill(host.pid, SIGTERM);
    cr_assert(wait_log(&host, TEST_EVENT_MS, "stopping", NULL));
    test_redis_restart(&redis);
    rc = test_redis_connect(&redis);
    cr_assert_eq(test_host_wait_exit(&host, TEST_EVENT_MS), 0, "see %s",
                 host.log);
    host.pid = 0;
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{chaos}:result:held"), 1,
                 "the held finish was dropped; see %s", host.log);
    cr_assert_eq(test_redis_int(rc, "XLEN wharf:{chaos}:stream"), 0);
    cr_assert_eq(test_host_runs(&host, "held", 0), 1);
    cr_assert(test_host_log_has(&host, "\"task\":\"held\"",
                                "\"outcome\":\"ok\"", NULL));
}
