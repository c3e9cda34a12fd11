/* Producers in every language against one real wharfd and redis-server:
 * the Python client, the Node client, the C client (called here) and the
 * wharf CLI enqueue the same payloads, read the same results and status,
 * and cancel, and must agree: the same ids (one run, the rest
 * duplicates), the same delays, traces, refusals and exit codes. The
 * Python and Node calls go through tests/clients/driver.{py,js}, which
 * exit with their errors' exit codes as the CLI does. Every test runs
 * twice: over TCP (suite parity) and with producers and host on Redis's
 * unix socket (parity_unix), as the embedded Redis is reached. */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <wharf/client.h>

#include "host_process.h"
#include "redis_server.h"

#define DRIVERS WHARF_SOURCE_DIR "/tests/clients"
#define WHARF WHARF_BINARY_DIR "/wharf"
#define TRACE "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

static test_redis redis;
static test_host host;
static redisContext *rc;
/* What every producer and the host are given: redis.url, or the unix
 * socket's URL; sock_dir holds that socket. */
static char url[320];
static char sock_dir[64], sock_path[128];

/* Python, Node, C, the CLI. */
enum { PY, NODE, C, CLI, PRODUCERS };
static const char *const names[PRODUCERS] = {"python", "node", "c", "cli"};

typedef struct answer {
    int status;
    char out[4096], err[4096];
} answer;

static void stop_all(void)
{
    test_suite_down(&redis, &rc, (test_host *const[]){&host, NULL});
    if (sock_dir[0]) {
        unlink(sock_path);
        rmdir(sock_dir);
    }
}

/* A wharfd serving chaos and bp (at most one task waiting), reached at
 * url: redis.url, or unix_socket's. */
static void start(int unix_socket)
{
    static const char *const sock_args[] = {"--unixsocket", sock_path,
                                            "--unixsocketperm", "700", NULL};
    test_host_opts o = {.extra = "types = chaos bp\n"
                                 "[type.bp]\nmax_backlog = 1\n"
                                 "[type.chaos]\nprefetch = 1\n"};

    if (unix_socket) {
        snprintf(sock_dir, sizeof(sock_dir), "/tmp/wharf-parity-XXXXXX");
        cr_assert(mkdtemp(sock_dir) != NULL, "mkdtemp: %s", strerror(errno));
        snprintf(sock_path, sizeof(sock_path), "%s/redis.sock", sock_dir);
        test_redis_start_with(&redis, NULL, sock_args);
        snprintf(url, sizeof(url), "unix://%s", sock_path);
        o.redis_url = url;
    } else {
        test_redis_start(&redis, 0);
        snprintf(url, sizeof(url), "%s", redis.url);
    }
    rc = test_redis_connect(&redis);
    test_host_up(&host, &redis, &o, rc);
    if (test_wait_int(rc, 2, TEST_EVENT_MS,
                      "EXISTS wharf:{chaos}:policy wharf:{bp}:policy") != 2)
        cr_assert_fail("wharfd did not publish its policies; see %s", host.log);
    if (unix_socket) {
        /* The host's connections are the socket's (Redis names a unix
         * client's address by the socket path). */
        char want[160];
        redisReply *list = test_redis_command(rc, "CLIENT LIST");
        snprintf(want, sizeof(want), "addr=%s", sock_path);
        cr_assert(list->type == REDIS_REPLY_STRING,
                  "CLIENT LIST: reply type %d", list->type);
        cr_assert(strstr(list->str, want), "no client on %s: %s", sock_path,
                  list->str);
        freeReplyObject(list);
    }
}

static void start_tcp(void)
{
    start(0);
}
static void start_unix(void)
{
    start(1);
}

TestSuite(parity, .init = start_tcp, .fini = stop_all, .timeout = 240);
TestSuite(parity_unix, .init = start_unix, .fini = stop_all, .timeout = 240);

static void slurp(FILE *f, char *buf, size_t cap)
{
    size_t n;

    rewind(f);
    n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
}

/* Runs argv (NULL-terminated) with stdout and stderr captured. */
static void run_program(const char *const *argv, answer *a)
{
    FILE *out = tmpfile(), *err = tmpfile();
    int status;
    pid_t pid;

    cr_assert(out && err);
    pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        dup2(fileno(out), STDOUT_FILENO);
        dup2(fileno(err), STDERR_FILENO);
        setenv("PYTHONPATH", WHARF_SOURCE_DIR "/clients/python", 1);
        setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    a->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    slurp(out, a->out, sizeof(a->out));
    slurp(err, a->err, sizeof(a->err));
}

/* The C client's part: the same commands as the drivers, in-process. */
static void run_c(const char *op, const char *const *args, answer *a)
{
    wharf_client *c = NULL;
    char err[512];
    wharf_client_status s;
    int strict = 0;

    memset(a, 0, sizeof(*a));
    for (size_t i = 0; args[i]; i++)
        strict |= strcmp(args[i], "--strict") == 0;
    s = wharf_client_open(&c, url, NULL, NULL, err, sizeof(err));
    cr_assert_eq(s, WHARF_CLIENT_OK, "%s", err);
    wharf_client_set_strict(c, strict);
    if (strcmp(op, "enqueue") == 0) {
        wharf_enqueue_opts o = {.type = args[0],
                                .payload = args[1],
                                .payload_len = strlen(args[1])};
        wharf_enqueue_reply r;
        for (size_t i = 2; args[i] && args[i + 1]; i++) {
            if (strcmp(args[i], "--id") == 0)
                o.id = args[i + 1];
            else if (strcmp(args[i], "--trace") == 0)
                o.trace = args[i + 1];
            else if (strcmp(args[i], "--delay") == 0)
                o.delay_ms = atoll(args[i + 1]);
        }
        s = wharf_enqueue(c, &o, &r);
        if (s == WHARF_CLIENT_OK || s == WHARF_CLIENT_DUPLICATE)
            snprintf(a->out, sizeof(a->out), "%s\n", r.id);
        if (s == WHARF_CLIENT_DUPLICATE)
            snprintf(a->err, sizeof(a->err), "duplicate\n");
    } else if (strcmp(op, "result") == 0) {
        void *data = NULL;
        size_t len = 0;
        int64_t wait = args[2] ? atoll(args[3]) : 0;
        s = wharf_result_wait(c, args[0], args[1], wait, &data, &len);
        if (s == WHARF_CLIENT_OK)
            snprintf(a->out, sizeof(a->out), "%.*s", (int)len, (char *)data);
        wharf_free(data);
    } else if (strcmp(op, "status") == 0) {
        wharf_task_info t;
        s = wharf_task_status(c, args[0], args[1], &t);
        if (s == WHARF_CLIENT_OK)
            snprintf(a->out, sizeof(a->out), "{\"state\": \"%s\"}\n",
                     wharf_task_state_name(t.state));
    } else if (strcmp(op, "cancel") == 0) {
        wharf_cancel_reply r;
        s = wharf_cancel(c, args[0], args[1], &r);
        if (s == WHARF_CLIENT_OK)
            snprintf(a->out, sizeof(a->out), "%s\n",
                     r.outcome == WHARF_CANCEL_REMOVED     ? "removed"
                     : r.outcome == WHARF_CANCEL_REQUESTED ? "cancelling"
                                                           : "already");
    }
    if (s != WHARF_CLIENT_OK && s != WHARF_CLIENT_DUPLICATE)
        snprintf(a->err, sizeof(a->err), "%s\n", wharf_client_errstr(c));
    /* As the CLI maps them (cli_exit_status). */
    a->status = s == WHARF_CLIENT_OK || s == WHARF_CLIENT_DUPLICATE        ? 0
                : s == WHARF_CLIENT_NOT_FOUND || s == WHARF_CLIENT_TIMEOUT ? 1
                : s == WHARF_CLIENT_DEAD                                   ? 2
                : s == WHARF_CLIENT_CANCELLED                              ? 3
                : s == WHARF_CLIENT_BAD_INPUT || s == WHARF_CLIENT_TOO_LARGE ||
                        s == WHARF_CLIENT_UNSERVED
                    ? 65
                : s == WHARF_CLIENT_UNAVAILABLE                            ? 69
                : s == WHARF_CLIENT_BACKPRESSURE || s == WHARF_CLIENT_FULL ? 75
                : s == WHARF_CLIENT_PROTOCOL                               ? 76
                : s == WHARF_CLIENT_AUTH                                   ? 78
                                                                           : 70;
    if (strcmp(op, "status") == 0 && s == WHARF_CLIENT_OK &&
        strstr(a->out, "\"unknown\""))
        a->status = 1;
    wharf_client_close(c);
}

/* One call by producer who: op and its arguments (NULL-terminated),
 * written as for the drivers ("--delay MS", "--wait MS"). */
static const answer *produce(int who, const char *op, ...)
{
    static answer a;
    const char *args[24], *argv[32];
    char cli_ms[2][32];
    size_t n = 0, k = 0;
    va_list ap;

    va_start(ap, op);
    while (n < 23 && (args[n] = va_arg(ap, const char *)) != NULL)
        n++;
    va_end(ap);
    args[n] = NULL;
    if (who == C) {
        run_c(op, args, &a);
        return &a;
    }
    if (who == PY) {
        argv[k++] = "/usr/bin/python3";
        argv[k++] = DRIVERS "/driver.py";
    } else if (who == NODE) {
        argv[k++] = "node";
        argv[k++] = DRIVERS "/driver.js";
    } else {
        argv[k++] = WHARF;
        argv[k++] = "--redis";
    }
    argv[k++] = url;
    argv[k++] = op;
    for (size_t i = 0; i < n; i++) {
        /* The CLI takes durations with a unit, and status --json. */
        if (who == CLI && i > 0 &&
            (strcmp(args[i - 1], "--delay") == 0 ||
             strcmp(args[i - 1], "--wait") == 0)) {
            snprintf(cli_ms[i % 2], sizeof(cli_ms[0]), "%sms", args[i]);
            argv[k++] = cli_ms[i % 2];
        } else {
            argv[k++] = args[i];
        }
    }
    if (who == CLI && strcmp(op, "status") == 0)
        argv[k++] = "--json";
    argv[k] = NULL;
    run_program(argv, &a);
    return &a;
}

/* The first line of out (an id). */
static void first_line(const char *out, char *buf, size_t len)
{
    size_t n = strcspn(out, "\n");

    cr_assert(n < len, "%s", out);
    memcpy(buf, out, n);
    buf[n] = '\0';
}

/* Waits up to ms for status of id to be state, asked through who. */
static void wait_state(int who, const char *type, const char *id,
                       const char *state, int ms)
{
    char want[64];
    const answer *a = NULL;
    int64_t deadline = test_now_ms() + ms;

    snprintf(want, sizeof(want), "\"state\": \"%s\"", state);
    while (test_now_ms() < deadline) {
        a = produce(who, "status", type, id, NULL);
        if (strstr(a->out, want))
            return;
        test_sleep_ms(20);
    }
    cr_assert_fail("%s: %s %s is not %s: %s %s", names[who], type, id, state,
                   a ? a->out : "", a ? a->err : "");
}

static void same_payload_same_id_one_run_the_same_result(void)
{
    char ids[PRODUCERS][80];
    const answer *a;

    for (int who = 0; who < PRODUCERS; who++) {
        a = produce(who, "enqueue", "chaos", "ok", NULL);
        cr_assert_eq(a->status, 0, "%s: %s", names[who], a->err);
        first_line(a->out, ids[who], sizeof(ids[who]));
        cr_assert_str_eq(ids[who], ids[0], "%s", names[who]);
        cr_assert_eq(strstr(a->err, "duplicate") != NULL, who != PY, "%s: %s",
                     names[who], a->err);
    }
    for (int who = 0; who < PRODUCERS; who++) {
        a = produce(who, "result", "chaos", ids[0], "--wait", "60000", NULL);
        cr_assert_eq(a->status, 0, "%s: %s", names[who], a->err);
        cr_assert_str_eq(a->out, "ok attempt=1", "%s", names[who]);
        a = produce(who, "status", "chaos", ids[0], NULL);
        cr_assert(strstr(a->out, "\"state\": \"done\""), "%s: %s", names[who],
                  a->out);
    }
    cr_assert_eq(test_host_done(&host, ids[0]), 1, "one run");
    /* Bulk enqueue: the same ids as one at a time. */
    a = produce(PY, "many", "chaos", "ok", "polite:1", NULL);
    cr_assert_eq(a->status, 0, "%s", a->err);
    cr_assert(strncmp(a->out, ids[0], 64) == 0, "%s", a->out);
    const answer *b = produce(NODE, "many", "chaos", "ok", "polite:1", NULL);
    cr_assert_eq(b->status, 0, "%s", b->err);
    cr_assert(strstr(b->out, ids[0]), "%s", b->out);
}

static void delays_traces_refusals_and_dead_tasks_alike(void)
{
    char id[80], want[128];
    const answer *a;

    for (int who = 0; who < PRODUCERS; who++) {
        snprintf(id, sizeof(id), "delayed-%s", names[who]);
        a = produce(who, "enqueue", "chaos", "ok", "--id", id, "--delay",
                    "3600000", "--trace", TRACE, NULL);
        cr_assert_eq(a->status, 0, "%s: %s", names[who], a->err);
        a = produce(who, "status", "chaos", id, NULL);
        cr_assert(strstr(a->out, "\"state\": \"delayed\""), "%s: %s",
                  names[who], a->out);
    }
    /* Due now, as if the hour had passed (a short delay would race the
     * status calls on a loaded machine): the host promotes them. */
    for (int who = 0; who < PRODUCERS; who++) {
        snprintf(id, sizeof(id), "delayed-%s", names[who]);
        cr_assert_eq(
            test_redis_int(rc, "ZADD wharf:{chaos}:delayed XX CH 0 %s", id),
            1, "%s is not in the delayed set", id);
    }
    for (int who = 0; who < PRODUCERS; who++) {
        snprintf(id, sizeof(id), "delayed-%s", names[who]);
        a = produce(who, "result", "chaos", id, "--wait", "60000", NULL);
        cr_assert_eq(a->status, 0, "%s: %s", names[who], a->err);
        /* The trace went with it: the host logged it at the start. */
        snprintf(want, sizeof(want), "\"task\":\"%s\"", id);
        cr_assert(
            test_host_wait_log(
                &host, 10000,
                (const char *[]){"task started", want,
                                 "4bf92f3577b34da6a3ce929d0e0e4736", NULL}),
            "%s", names[who]);
    }
    /* Backpressure: bp holds one waiting task at most. */
    a = produce(CLI, "enqueue", "bp", "ok", "--delay", "3600000", NULL);
    cr_assert_eq(a->status, 0, "%s", a->err);
    for (int who = 0; who < PRODUCERS; who++) {
        a = produce(who, "enqueue", "bp", "another", NULL);
        cr_assert_eq(a->status, 75, "%s: %d %s", names[who], a->status, a->err);
        cr_assert(strstr(a->err, "backlog limit (max_backlog 1)"), "%s: %s",
                  names[who], a->err);
    }
    cr_assert_eq(test_redis_int(rc, "XLEN wharf:{bp}:stream"), 0);
    /* Dead: every result wait ends at once with the error, exit 2. */
    a = produce(CLI, "enqueue", "chaos", "fatal", "--id", "doomed", NULL);
    cr_assert_eq(a->status, 0, "%s", a->err);
    wait_state(C, "chaos", "doomed", "dead", 60000);
    for (int who = 0; who < PRODUCERS; who++) {
        a = produce(who, "result", "chaos", "doomed", "--wait", "600000", NULL);
        cr_assert_eq(a->status, 2, "%s: %d %s", names[who], a->status, a->err);
        cr_assert(strstr(a->err, "fatal: asked to fail for good"), "%s: %s",
                  names[who], a->err);
        a = produce(who, "status", "chaos", "doomed", NULL);
        cr_assert(strstr(a->out, "\"state\": \"dead\""), "%s", a->out);
    }
    /* Refusals before anything is written, with the CLI's codes. */
    freeReplyObject(test_redis_command(
        rc, "HSET wharf:{future}:policy idempotency payload protocol 99"));
    for (int who = 0; who < PRODUCERS; who++) {
        a = produce(who, "enqueue", "webhok", "x", "--strict", NULL);
        cr_assert_eq(a->status, 65, "%s: %d %s", names[who], a->status, a->err);
        cr_assert(strstr(a->err, "no host serves 'webhok'; served types: bp, "
                                 "chaos"),
                  "%s: %s", names[who], a->err);
        a = produce(who, "enqueue", "bad type", "x", NULL);
        cr_assert_eq(a->status, 65, "%s: %s", names[who], a->err);
        a = produce(who, "enqueue", "future", "x", NULL);
        cr_assert_eq(a->status, 76, "%s: %d %s", names[who], a->status, a->err);
        a = produce(who, "status", "future", "x", NULL);
        cr_assert_eq(a->status, 76, "%s: %d %s", names[who], a->status, a->err);
    }
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{webhok}:stream "
                                    "wharf:{future}:stream"),
                 0);
    /* Not strict: added, with the same warning. */
    for (int who = 0; who < PRODUCERS; who++) {
        if (who == C)
            continue; /* the library says it in the reply, not on stderr */
        a = produce(who, "enqueue", "webhok", names[who], NULL);
        cr_assert_eq(a->status, 0, "%s: %s", names[who], a->err);
        cr_assert(strstr(a->err, "no host serves 'webhok'; served types: bp, "
                                 "chaos"),
                  "%s: %s", names[who], a->err);
    }
}

/* A running task cancelled from each producer: its plugin sees the cancel,
 * the run ends as cancelled and writes no result. */
static void cancel_of_a_running_task_from_each(void)
{
    char id[80], want[128];
    const answer *a;

    for (int who = 0; who < PRODUCERS; who++) {
        snprintf(id, sizeof(id), "long-%s", names[who]);
        a = produce(CLI, "enqueue", "chaos", "polite:120000", "--id", id, NULL);
        cr_assert_eq(a->status, 0, "%s", a->err);
        snprintf(want, sizeof(want), "\"task\":\"%s\"", id);
        cr_assert(
            test_host_wait_log(&host, 60000,
                               (const char *[]){"task started", want, NULL}),
            "%s did not start", id);
        a = produce(who, "cancel", "chaos", id, NULL);
        cr_assert_eq(a->status, 0, "%s: %s", names[who], a->err);
        cr_assert(strstr(a->out, "cancelling"), "%s: %s", names[who], a->out);
        cr_assert(test_host_wait_log(&host, 60000,
                                     (const char *[]){"task finished", want,
                                                      "\"outcome\":"
                                                      "\"cancelled\"",
                                                      NULL}),
                  "%s: the run did not end as cancelled", names[who]);
        wait_state(who, "chaos", id, "cancelled", 10000);
        a = produce(who, "result", "chaos", id, "--wait", "600000", NULL);
        cr_assert_eq(a->status, 3, "%s: %d %s", names[who], a->status, a->err);
        cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{chaos}:result:%s", id),
                     0);
        cr_assert_eq(test_host_runs(&host, id, 0), 1, "%s", names[who]);
        /* Waiting tasks go at once; finished ones say so. */
        a = produce(who, "enqueue", "chaos", "ok", "--id", "w", "--delay",
                    "3600000", NULL);
        cr_assert_eq(a->status, 0, "%s: %s", names[who], a->err);
        a = produce(who, "cancel", "chaos", "w", NULL);
        cr_assert_eq(a->status, 0, "%s: %s", names[who], a->err);
        cr_assert(strstr(a->out, "removed"), "%s: %s", names[who], a->out);
        a = produce(who, "cancel", "chaos", "nothing-here", NULL);
        cr_assert_eq(a->status, 1, "%s: %d %s", names[who], a->status, a->err);
    }
}

/* Each test over TCP and over the unix socket. */
#define BOTH(name)                                                             \
    Test(parity, name)                                                         \
    {                                                                          \
        name();                                                                \
    }                                                                          \
    Test(parity_unix, name)                                                    \
    {                                                                          \
        name();                                                                \
    }

BOTH(same_payload_same_id_one_run_the_same_result)
BOTH(delays_traces_refusals_and_dead_tasks_alike)
BOTH(cancel_of_a_running_task_from_each)
