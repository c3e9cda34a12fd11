/* [redis] url = embedded: wharfd's own redis-server, started for real in a
 * temporary folder; its data survives a restart, and it refuses what it
 * must (a busy socket, a bad data_dir) and never outlives its owner. */
#define _GNU_SOURCE /* nftw, PR_SET_CHILD_SUBREAPER */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <hiredis/hiredis.h>

#include "embedded.h"

static char tmp[64]; /* this test's folder; data_dir goes inside */
static embedded_redis first, second;
static char err[1024];

static void make_tmp(void)
{
    snprintf(tmp, sizeof(tmp), "/tmp/wharf-test-embedded-XXXXXX");
    cr_assert(mkdtemp(tmp) != NULL, "mkdtemp: %s", strerror(errno));
}

static int remove_entry(const char *path, const struct stat *st, int flag,
                        struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

/* Stops whatever a test started and removes its folder. */
static void stop_all(void)
{
    embedded_stop(&first);
    embedded_stop(&second);
    if (tmp[0])
        nftw(tmp, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    tmp[0] = '\0';
}

TestSuite(embedded, .init = make_tmp, .fini = stop_all, .timeout = 60);

/* tmp/<name>, in one of a few static buffers used in turn, so a test may
 * hold several. */
static const char *in_tmp(const char *name)
{
    static char paths[8][PATH_MAX];
    static unsigned next;
    char *path = paths[next++ % 8];

    snprintf(path, PATH_MAX, "%s/%s", tmp, name);
    return path;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* A connection over the server's socket; aborts the test on failure. */
static redisContext *connect_to(const embedded_redis *e)
{
    redisContext *c = redisConnectUnix(e->socket);
    cr_assert(c && !c->err, "connect %s: %s", e->socket,
              c ? c->errstr : "out of memory");
    return c;
}

/* Runs a command and returns the reply's string (status or bulk) in a
 * static buffer, "(nil)", or "(error) ...". */
static const char *command(const embedded_redis *e, const char *cmd,
                           const char *arg1, const char *arg2)
{
    static char out[256];
    redisContext *c = connect_to(e);
    redisReply *r;

    if (arg2)
        r = redisCommand(c, "%s %s %s", cmd, arg1, arg2);
    else if (arg1)
        r = redisCommand(c, "%s %s", cmd, arg1);
    else
        r = redisCommand(c, "%s", cmd);
    cr_assert(r != NULL, "%s: %s", cmd, c->errstr);
    if (r->type == REDIS_REPLY_NIL)
        snprintf(out, sizeof(out), "(nil)");
    else if (r->type == REDIS_REPLY_ERROR)
        snprintf(out, sizeof(out), "(error) %s", r->str);
    else
        snprintf(out, sizeof(out), "%s", r->str ? r->str : "");
    freeReplyObject(r);
    redisFree(c);
    return out;
}

static void start_ok(embedded_redis *e, const char *dir)
{
    int rc = embedded_start(e, dir, err, sizeof(err));
    cr_assert_eq(rc, 0, "embedded_start %s: %s", dir, err);
    cr_assert_gt(e->pid, 0);
}

static void assert_refused(const char *dir, const char *why)
{
    embedded_redis e;

    memset(&e, 0x5a, sizeof(e));
    e.pid = 0;
    cr_assert_eq(embedded_start(&e, dir, err, sizeof(err)), -1, "started in %s",
                 dir);
    cr_assert(strstr(err, why) != NULL, "'%s' not in: %s", why, err);
    cr_assert(strchr(err, '\n') == NULL, "not one line: %s", err);
    cr_assert_eq(e.pid, 0);
    cr_assert_eq(e.dir[0], '\0', "a refused start leaves e reset");
}

static int process_gone(pid_t pid)
{
    return kill(pid, 0) != 0 && errno == ESRCH;
}

static mode_t mode_of(const char *path)
{
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "stat %s: %s", path, strerror(errno));
    return st.st_mode;
}

Test(embedded, creates_data_dir_and_answers_on_its_socket)
{
    const char *dir = in_tmp("state/redis");

    start_ok(&first, dir);
    cr_assert_str_eq(first.dir, dir);
    cr_assert_str_eq(first.socket, in_tmp("state/redis/redis.sock"));
    cr_assert_str_eq(first.log, in_tmp("state/redis/redis.log"));
    cr_assert_str_eq(first.url + strlen("unix://"), first.socket);
    cr_assert_eq(strncmp(first.url, "unix://", 7), 0, "%s", first.url);
    cr_assert(S_ISDIR(mode_of(dir)));
    cr_assert_eq(mode_of(dir) & 07777, 0700);
    cr_assert_eq(mode_of(in_tmp("state")) & 07777, 0700, "parents too");
    cr_assert(S_ISSOCK(mode_of(first.socket)));
    cr_assert_eq(mode_of(first.socket) & 0077, 0, "socket is owner only");
    cr_assert_str_eq(command(&first, "PING", NULL, NULL), "PONG");
    cr_assert_eq(embedded_check(&first, err, sizeof(err)), 0, "%s", err);
}

Test(embedded, serves_with_the_promised_settings)
{
    start_ok(&first, in_tmp("data"));
    {
        redisContext *c = connect_to(&first);
        redisReply *r = redisCommand(c, "CONFIG GET *");
        const char *want[][2] = {{"port", "0"},
                                 {"appendonly", "yes"},
                                 {"appendfsync", "everysec"},
                                 {"save", ""},
                                 {"maxmemory-policy", "noeviction"},
                                 {"daemonize", "no"},
                                 {"dir", first.dir},
                                 {"logfile", first.log}};
        cr_assert(r && r->type == REDIS_REPLY_ARRAY);
        for (size_t w = 0; w < sizeof(want) / sizeof(want[0]); w++) {
            const char *got = NULL;
            for (size_t i = 0; i + 1 < r->elements; i += 2)
                if (strcmp(r->element[i]->str, want[w][0]) == 0)
                    got = r->element[i + 1]->str;
            cr_assert(got != NULL, "no %s", want[w][0]);
            cr_assert_str_eq(got, want[w][1], "%s", want[w][0]);
        }
        freeReplyObject(r);
        redisFree(c);
    }
}

Test(embedded, relative_data_dir_is_made_absolute)
{
    char want[PATH_MAX];

    cr_assert_eq(chdir(tmp), 0);
    start_ok(&first, "rel/data/");
    snprintf(want, sizeof(want), "%s/rel/data", tmp);
    cr_assert_str_eq(first.dir, want);
    cr_assert_str_eq(command(&first, "PING", NULL, NULL), "PONG");
}

Test(embedded, data_survives_stop_and_start)
{
    const char *dir = in_tmp("data");
    pid_t old;

    start_ok(&first, dir);
    cr_assert_str_eq(command(&first, "SET", "wharf:test", "kept"), "OK");
    old = first.pid;
    embedded_stop(&first);
    cr_assert_eq(first.pid, 0);
    cr_assert(process_gone(old), "pid %ld still there", (long)old);
    cr_assert(access(in_tmp("data/redis.sock"), F_OK) != 0,
              "a clean shutdown removes the socket");
    start_ok(&first, dir);
    cr_assert_neq(first.pid, old);
    cr_assert_str_eq(command(&first, "GET", "wharf:test", NULL), "kept");
}

Test(embedded, refuses_a_second_server_on_the_same_socket)
{
    const char *dir = in_tmp("data");

    start_ok(&first, dir);
    cr_assert_eq(embedded_start(&second, dir, err, sizeof(err)), -1);
    cr_assert(strstr(err, "another redis-server is already serving") &&
                  strstr(err, first.socket),
              "%s", err);
    cr_assert_eq(second.pid, 0);
    /* The refused start did not disturb the first one. */
    cr_assert_str_eq(command(&first, "PING", NULL, NULL), "PONG");
    cr_assert_eq(embedded_check(&first, err, sizeof(err)), 0, "%s", err);
}

Test(embedded, refuses_any_listener_on_the_socket)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);

    cr_assert_eq(mkdir(in_tmp("data"), 0700), 0);
    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s",
             in_tmp("data/redis.sock"));
    cr_assert(fd >= 0);
    cr_assert_eq(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
    cr_assert_eq(listen(fd, 4), 0);
    assert_refused(in_tmp("data"), "another redis-server is already serving");
    cr_assert(S_ISSOCK(mode_of(in_tmp("data/redis.sock"))), "left alone");
    close(fd);
}

Test(embedded, refuses_to_start_twice_on_one_handle)
{
    pid_t pid;

    start_ok(&first, in_tmp("data"));
    pid = first.pid;
    cr_assert_eq(embedded_start(&first, in_tmp("other"), err, sizeof(err)), -1);
    cr_assert(strstr(err, "already runs"), "%s", err);
    cr_assert_eq(first.pid, pid, "the running one is kept");
    cr_assert_str_eq(first.dir, in_tmp("data"));
}

Test(embedded, removes_a_stale_socket)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);

    /* A socket file with nobody behind it, as a killed server leaves. */
    cr_assert_eq(mkdir(in_tmp("data"), 0700), 0);
    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s",
             in_tmp("data/redis.sock"));
    cr_assert(fd >= 0);
    cr_assert_eq(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
    close(fd);
    cr_assert(S_ISSOCK(mode_of(addr.sun_path)));
    start_ok(&first, in_tmp("data"));
    cr_assert_str_eq(command(&first, "PING", NULL, NULL), "PONG");
}

Test(embedded, refuses_a_socket_path_that_is_not_a_socket)
{
    FILE *f;

    cr_assert_eq(mkdir(in_tmp("data"), 0700), 0);
    f = fopen(in_tmp("data/redis.sock"), "w");
    cr_assert(f != NULL);
    fclose(f);
    assert_refused(in_tmp("data"), "exists and is not a socket");
}

Test(embedded, refuses_a_data_dir_too_long_for_a_socket)
{
    char dir[PATH_MAX];
    int n = snprintf(dir, sizeof(dir), "%s/", tmp);

    /* 120 bytes: within PATH_MAX, beyond sun_path's 108. */
    while (n < 120)
        dir[n++] = 'x';
    dir[n] = '\0';
    assert_refused(dir, "longer than a unix socket allows (107)");
    cr_assert(access(dir, F_OK) != 0, "nothing was created");
}

Test(embedded, refuses_a_data_dir_that_is_a_file)
{
    FILE *f = fopen(in_tmp("file"), "w");

    cr_assert(f != NULL);
    fclose(f);
    assert_refused(in_tmp("file"), "exists and is not a directory");
    assert_refused(in_tmp("file/data"), "cannot create data_dir");
}

Test(embedded, refuses_a_data_dir_it_cannot_write)
{
    if (geteuid() == 0) {
        stop_all(); /* a skipped test gets no .fini */
        cr_skip_test("root may write anywhere");
    }
    cr_assert_eq(mkdir(in_tmp("ro"), 0500), 0);
    assert_refused(in_tmp("ro"), "not writable");
    assert_refused(in_tmp("ro/data"), "cannot create data_dir");
}

Test(embedded, refuses_without_redis_server_and_names_the_package)
{
    cr_assert_eq(setenv("PATH", tmp, 1), 0);
    assert_refused(in_tmp("data"), "install the Debian package redis-server");
    cr_assert(access(in_tmp("data"), F_OK) != 0, "nothing was created");
}

Test(embedded, check_notices_a_killed_server_and_start_recovers)
{
    const char *dir = in_tmp("data");

    start_ok(&first, dir);
    cr_assert_eq(kill(first.pid, SIGKILL), 0);
    /* Up to 60 s, for a loaded machine; it comes as soon as it is reaped. */
    for (int i = 0; i < 6000 && embedded_check(&first, err, sizeof(err)) == 0;
         i++)
        sleep_ms(10);
    cr_assert_eq(first.pid, 0, "not noticed: %s", err);
    cr_assert(strstr(err, "killed by signal 9"), "%s", err);
    cr_assert_eq(embedded_check(&first, err, sizeof(err)), -1);
    cr_assert(strstr(err, "not running"), "%s", err);
    /* SIGKILL left the socket file behind; a new start clears it. */
    cr_assert(S_ISSOCK(mode_of(in_tmp("data/redis.sock"))));
    start_ok(&first, dir);
    cr_assert_str_eq(command(&first, "PING", NULL, NULL), "PONG");
}

Test(embedded, reaped_recognises_its_server)
{
    pid_t pid;
    int status;

    start_ok(&first, in_tmp("data"));
    cr_assert_eq(
        embedded_reaped(&first, first.pid + 100000, 0, err, sizeof(err)), 0);
    cr_assert_gt(first.pid, 0);
    cr_assert_eq(kill(first.pid, SIGKILL), 0);
    /* As the supervisor does: reap any child, then ask. */
    pid = waitpid(-1, &status, 0);
    cr_assert_eq(pid, first.pid);
    cr_assert_eq(embedded_reaped(&first, pid, status, err, sizeof(err)), 1);
    cr_assert_eq(first.pid, 0);
    cr_assert(strstr(err, "killed by signal 9"), "%s", err);
    embedded_stop(&first); /* accepts it stopped */
}

Test(embedded, check_copes_with_a_server_reaped_elsewhere)
{
    int status;

    start_ok(&first, in_tmp("data"));
    cr_assert_eq(kill(first.pid, SIGKILL), 0);
    cr_assert_eq(waitpid(first.pid, &status, 0), first.pid);
    cr_assert_eq(embedded_check(&first, err, sizeof(err)), -1);
    cr_assert_eq(first.pid, 0);
    cr_assert(strstr(err, "reaped elsewhere"), "%s", err);
}

Test(embedded, stop_leaves_no_process_and_accepts_a_stopped_server)
{
    embedded_redis never;
    pid_t pid;

    memset(&never, 0, sizeof(never));
    embedded_stop(NULL);
    embedded_stop(&never);
    start_ok(&first, in_tmp("data"));
    pid = first.pid;
    embedded_stop(&first);
    cr_assert_eq(first.pid, 0);
    cr_assert(process_gone(pid), "pid %ld still there", (long)pid);
    cr_assert_eq(waitpid(pid, NULL, WNOHANG), -1, "no zombie left");
    embedded_stop(&first);
}

Test(embedded, stop_works_when_the_socket_is_gone)
{
    pid_t pid;

    start_ok(&first, in_tmp("data"));
    pid = first.pid;
    /* SHUTDOWN cannot reach it: SIGTERM does. */
    cr_assert_eq(unlink(first.socket), 0);
    embedded_stop(&first);
    cr_assert(process_gone(pid), "pid %ld still there", (long)pid);
}

Test(embedded, a_killed_owner_leaves_no_server_behind)
{
    int fds[2];
    pid_t owner, server = 0;
    int status;

    /* Orphans come to us, so we can see how the server ended. */
    cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    cr_assert_eq(pipe(fds), 0);
    owner = fork();
    cr_assert(owner >= 0);
    if (owner == 0) {
        embedded_redis e;
        char why[512];
        close(fds[0]);
        if (embedded_start(&e, in_tmp("data"), why, sizeof(why)) != 0)
            _exit(1);
        if (write(fds[1], &e.pid, sizeof(e.pid)) != sizeof(e.pid))
            _exit(1);
        raise(SIGKILL); /* a crashed wharfd */
        _exit(1);
    }
    close(fds[1]);
    cr_assert_eq(read(fds[0], &server, sizeof(server)), sizeof(server),
                 "the owner did not start a server");
    close(fds[0]);
    cr_assert_eq(waitpid(owner, &status, 0), owner);
    cr_assert(WIFSIGNALED(status));
    for (int i = 0; i < 6000 && waitpid(server, &status, WNOHANG) == 0; i++)
        sleep_ms(10);
    cr_assert(process_gone(server), "server %ld outlived its owner",
              (long)server);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "SIGTERM ends it cleanly (status %#x)", status);
    cr_assert(access(in_tmp("data/redis.sock"), F_OK) != 0,
              "no socket left behind");
}

Test(embedded, data_dir_with_spaces_and_quotes)
{
    start_ok(&first, in_tmp("my \"data\" dir"));
    cr_assert_str_eq(command(&first, "SET", "k", "v"), "OK");
    embedded_stop(&first);
    start_ok(&first, in_tmp("my \"data\" dir"));
    cr_assert_str_eq(command(&first, "GET", "k", NULL), "v");
}

/* Puts an executable tmp/redis-server with the given shell body first on
 * PATH, to stand in for a server that fails or hangs. */
static void fake_server(const char *body)
{
    const char *path = in_tmp("redis-server");
    FILE *f = fopen(path, "w");

    cr_assert(f != NULL);
    fprintf(f, "#!/bin/sh\n%s\n", body);
    cr_assert_eq(fclose(f), 0);
    cr_assert_eq(chmod(path, 0700), 0);
    cr_assert_eq(setenv("PATH", tmp, 1), 0);
}

Test(embedded, a_server_that_exits_is_reported_with_its_log)
{
    fake_server("echo 'FATAL: something is wrong' >&2\nexit 3");
    assert_refused(in_tmp("data"), "exited with status 3");
    cr_assert(strstr(err, "FATAL: something is wrong"), "%s", err);
    /* An empty PATH entry is the working directory, as for execvp. */
    cr_assert_eq(chdir(tmp), 0);
    cr_assert_eq(setenv("PATH", "/nonexistent:", 1), 0);
    assert_refused(in_tmp("data"), "exited with status 3");
}

Test(embedded, a_server_that_never_answers_is_stopped)
{
    fake_server("echo 'waiting for ever' >&2\nexec /bin/sleep 60");
    assert_refused(in_tmp("data"), "did not answer PING");
    cr_assert(strstr(err, "within 10 s") && strstr(err, "waiting for ever"),
              "%s", err);
    /* It was stopped and reaped: no child is left. */
    cr_assert_eq(waitpid(-1, NULL, WNOHANG), -1);
    cr_assert_eq(errno, ECHILD);
}

Test(embedded, a_forked_copy_does_not_stop_the_server)
{
    pid_t worker;
    int status;

    start_ok(&first, in_tmp("data"));
    worker = fork();
    cr_assert(worker >= 0);
    if (worker == 0) {
        embedded_stop(&first); /* a worker tidying up its copy */
        _exit(first.pid == 0 ? 0 : 1);
    }
    cr_assert_eq(waitpid(worker, &status, 0), worker);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    cr_assert_str_eq(command(&first, "PING", NULL, NULL), "PONG");
    cr_assert_eq(embedded_check(&first, err, sizeof(err)), 0, "%s", err);
}

/* The whole of /proc/PID/FILE (NUL-separated argv or environ), NULs made
 * newlines so it reads as one string. */
static const char *proc_text(pid_t pid, const char *file)
{
    static char text[65536];
    char path[64];
    size_t n;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
    f = fopen(path, "r");
    cr_assert(f != NULL, "%s: %s", path, strerror(errno));
    n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    for (size_t i = 0; i < n; i++)
        if (text[i] == '\0')
            text[i] = '\n';
    text[n] = '\0';
    return text;
}

/* The server is a long-lived process that others on the machine can list
 * (ps): neither its argv nor its environment carries wharfd's secrets.
 * Redis overwrites its own /proc/PID/environ for its process title, so
 * the environment it was given is seen through a redis-server first in
 * PATH that writes it down and then becomes the real one. */
Test(embedded, keeps_the_secrets_of_its_environment_out_of_the_server)
{
    char real[PATH_MAX], script[PATH_MAX + 256], path_env[PATH_MAX * 2];
    const char *bin = in_tmp("bin"), *wrapper = in_tmp("bin/redis-server");
    const char *seen = in_tmp("environment");
    const char *argv_text;
    char env_text[65536];
    size_t n;
    FILE *f;

    cr_assert_eq(system("command -v redis-server > /dev/null"), 0);
    f = popen("command -v redis-server", "r");
    cr_assert(f && fgets(real, sizeof(real), f));
    pclose(f);
    real[strcspn(real, "\n")] = '\0';
    cr_assert_eq(mkdir(bin, 0700), 0);
    snprintf(script, sizeof(script),
             "#!/bin/sh\nenv > '%s'\nexec '%s' \"$@\"\n", seen, real);
    f = fopen(wrapper, "w");
    cr_assert(f && fputs(script, f) >= 0 && fclose(f) == 0);
    cr_assert_eq(chmod(wrapper, 0700), 0);
    snprintf(path_env, sizeof(path_env), "%s:%s", bin, getenv("PATH"));
    cr_assert_eq(setenv("PATH", path_env, 1), 0);
    cr_assert_eq(setenv("WHARF_REDIS_PASSWORD", "Emb3ddedS3cret", 1), 0);
    cr_assert_eq(setenv("SOME_TOKEN", "Emb3ddedT0ken", 1), 0);
    cr_assert_eq(setenv("TZ", "UTC", 1), 0);

    start_ok(&first, in_tmp("data"));
    argv_text = proc_text(first.pid, "cmdline");
    cr_assert(strstr(argv_text, "redis-server") != NULL, "%s", argv_text);
    cr_assert(strstr(argv_text, "S3cret") == NULL, "%s", argv_text);
    f = fopen(seen, "r");
    cr_assert(f != NULL, "the wrapper did not run: %s", strerror(errno));
    n = fread(env_text, 1, sizeof(env_text) - 1, f);
    fclose(f);
    env_text[n] = '\0';
    cr_assert(strstr(env_text, "TZ=UTC") != NULL, "the time zone stays: %s",
              env_text);
    cr_assert(strstr(env_text, "Emb3ddedS3cret") == NULL, "%s", env_text);
    cr_assert(strstr(env_text, "Emb3ddedT0ken") == NULL, "%s", env_text);
    cr_assert_str_eq(command(&first, "PING", NULL, NULL), "PONG");
}
