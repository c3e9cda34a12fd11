/* Per-task options at enqueue (timeout, max_attempts, expires) against a
 * real host running chaos.so, whose type allows more attempts and a far
 * longer timeout than the tasks ask for: a task's timeout ends its run
 * with "timeout after N ms" (its own N), its max_attempts ends its
 * retries, an expired task is dead with "expired" and never ran (the
 * chaos runs file), a retry keeps the options, and bad values are refused
 * with nothing enqueued (test_scripts checks the script's own refusal).
 * No assertion on time: each test waits for the
 * outcome it means, and a run that must end by its timeout sleeps ten
 * minutes otherwise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <wharf/client.h>

#include "host_process.h"
#include "http_get.h"
#include "spawn.h"
#include "redis_server.h"
#include "wharf_cli.h"

#define wharf(...)                                                             \
    test_cli(redis.url, redis.dir, (const char *const[]){__VA_ARGS__, NULL})

/* The type allows five attempts, and a timeout of ten minutes that no
 * test may reach. */
#define TYPE_POLICY                                                            \
    "[type.chaos]\nmax_attempts = 5\nbackoff_base = 10ms\ntimeout = 10m\n"

static test_redis redis;
static test_host host;
static int metrics_port;
static redisContext *rc;
static wharf_client *client;

static void start_redis(void)
{
    char err[256];

    test_suite_up(&redis, 0, &rc);
    cr_assert_eq(
        wharf_client_open(&client, redis.url, NULL, NULL, err, sizeof(err)),
        WHARF_CLIENT_OK, "%s", err);
}

static void stop_all(void)
{
    wharf_client_close(client);
    test_suite_down(&redis, &rc, (test_host *const[]){&host, NULL});
}

TestSuite(taskopts, .init = start_redis, .fini = stop_all, .timeout = 240);

/* A host with `threads` tasks in flight per worker (0: none, the plain
 * worker). */
static void start_host(int threads)
{
    char chaos[64], listen[64];

    snprintf(chaos, sizeof(chaos), threads ? "threads = %d\n" : "", threads);
    metrics_port = test_free_port();
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", metrics_port);
    test_host_up(&host, &redis,
                 &(test_host_opts){.host_keys = "workers = 1\n",
                                   .log_level = "info",
                                   .metrics_listen = listen,
                                   .chaos_keys = chaos,
                                   .extra = TYPE_POLICY},
                 rc);
}

/* Enqueues a chaos task id with payload and options o; asserts it went
 * in. */
static void enqueue(const char *id, const char *payload,
                    const wharf_task_options *o)
{
    wharf_enqueue_reply reply;
    wharf_client_status status =
        wharf_enqueue_with(client,
                           &(wharf_enqueue_opts){.type = "chaos",
                                                 .payload = payload,
                                                 .payload_len = strlen(payload),
                                                 .id = id},
                           o, &reply);

    cr_assert(status == WHARF_CLIENT_OK || status == WHARF_CLIENT_UNSERVED,
              "%s: %s", id, wharf_client_errstr(client));
}

static bool is_dead(void *id)
{
    return test_redis_int(rc, "EXISTS wharf:{chaos}:dead:%s",
                          (const char *)id) == 1;
}

/* Waits for task id's dead record; returns its field `field` (malloc'd,
 * "" when missing). */
static char *dead_field(const char *id, const char *field)
{
    redisReply *r;
    char *out;

    cr_assert(test_wait_until(is_dead, (void *)id, TEST_EVENT_MS),
              "%s never died; see %s", id, host.log);
    r = test_redis_command(rc, "HGET wharf:{chaos}:dead:%s %s", id, field);
    out = strdup(r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
    return out;
}

static void assert_dead_field(const char *id, const char *field,
                              const char *want)
{
    char *got = dead_field(id, field);

    cr_assert_str_eq(got, want, "%s: dead %s", id, field);
    free(got);
}

/* Its own timeout, shorter than the type's, ends the run of a task that
 * would otherwise run ten minutes; the retry keeps it (both attempts end
 * so, and max_attempts 2 ends it before the type's five). */
static void timeout_ends_the_run(int threads)
{
    start_host(threads);
    enqueue("slow", "polite:600000",
            &(wharf_task_options){.size = sizeof(wharf_task_options),
                                  .timeout_ms = 300,
                                  .max_attempts = 2});
    assert_dead_field("slow", "error", "timeout after 300 ms");
    assert_dead_field("slow", "attempt", "2");
    assert_dead_field("slow", "timeout_ms", "300");
    cr_assert_eq(test_host_runs(&host, "slow", 1), 1);
    cr_assert_eq(test_host_runs(&host, "slow", 2), 1);
    cr_assert_eq(test_host_runs(&host, "slow", 0), 2);
}

Test(taskopts, its_timeout_ends_the_run_and_a_retry_keeps_it)
{
    timeout_ends_the_run(0);
}

Test(taskopts, its_timeout_ends_the_run_with_threads)
{
    timeout_ends_the_run(2);
}

/* max_attempts 1 on a task that fails thrice: dead after one attempt,
 * though the type allows five; a task without it gets the type's and
 * succeeds on its fourth. */
Test(taskopts, its_max_attempts_ends_the_retries)
{
    redisReply *r;

    start_host(0);
    enqueue("once", "fail:3",
            &(wharf_task_options){.size = sizeof(wharf_task_options),
                                  .max_attempts = 1});
    enqueue("plain", "fail:3", NULL);
    assert_dead_field("once", "attempt", "1");
    assert_dead_field("once", "max_attempts", "1");
    cr_assert_eq(test_host_runs(&host, "once", 0), 1);
    cr_assert_eq(test_wait_int(rc, 1, TEST_EVENT_MS,
                               "EXISTS wharf:{chaos}:result:plain"),
                 1);
    r = test_redis_command(rc, "GET wharf:{chaos}:result:plain");
    cr_assert_str_eq(r->str, "ok attempt=4");
    freeReplyObject(r);
}

static bool three_dead(void *arg)
{
    (void)arg;
    return test_redis_int(rc, "ZCARD wharf:{chaos}:dead") >= 3;
}

/* wharf enqueue --file gives every line's task the options. */
Test(taskopts, every_task_of_a_file_gets_them)
{
    char path[300];
    const test_cli_run *c;
    redisReply *r;
    FILE *f;

    start_host(0);
    snprintf(path, sizeof(path), "%s/lines", redis.dir);
    f = fopen(path, "w");
    cr_assert(f != NULL);
    fputs("fail:3\nfail:4\nfail:5\n", f);
    cr_assert_eq(fclose(f), 0);
    c = wharf("enqueue", "chaos", "--file", path, "--max-attempts", "1");
    cr_assert_eq(c->status, 0, "%s", c->err);
    cr_assert(test_wait_until(three_dead, NULL, TEST_EVENT_MS),
              "not all dead; see %s", host.log);
    r = test_redis_command(rc, "ZRANGE wharf:{chaos}:dead 0 -1");
    cr_assert_eq(r->elements, 3);
    for (size_t i = 0; i < r->elements; i++) {
        assert_dead_field(r->element[i]->str, "attempt", "1");
        cr_assert_eq(test_host_runs(&host, r->element[i]->str, 0), 1);
    }
    freeReplyObject(r);
}

static bool two_expired_counted(void *arg)
{
    static char body[65536];

    (void)arg;
    return test_http_get(metrics_port, "/metrics", body, sizeof(body)) == 200 &&
           strstr(body, "wharf_tasks_expired_total{type=\"chaos\"} 2\n");
}

/* An expiry past before any host serves the type, and one past before a
 * delayed task is due: both dead with "expired", neither ever ran; an
 * expiry far off does not stop a task. */
static void expired_never_runs(int threads)
{
    const test_cli_run *c;

    c = wharf("enqueue", "chaos", "ok", "--id", "early", "--expire-in", "1ms");
    cr_assert_eq(c->status, 0, "%s", c->err);
    start_host(threads);
    c = wharf("enqueue", "chaos", "ok", "--id", "late", "--delay", "200ms",
              "--expire-in", "1ms");
    cr_assert_eq(c->status, 0, "%s", c->err);
    c = wharf("enqueue", "chaos", "ok", "--id", "fresh", "--expire-in", "1h");
    cr_assert_eq(c->status, 0, "%s", c->err);
    assert_dead_field("early", "error", "expired");
    assert_dead_field("late", "error", "expired");
    cr_assert_eq(test_wait_int(rc, 1, TEST_EVENT_MS,
                               "EXISTS wharf:{chaos}:result:fresh"),
                 1);
    cr_assert_eq(test_host_runs(&host, "early", 0), 0);
    cr_assert_eq(test_host_runs(&host, "late", 0), 0);
    cr_assert_eq(test_host_runs(&host, "fresh", 0), 1);
    /* /metrics counts them (the supervisor publishes each second). */
    cr_assert(test_wait_until(two_expired_counted, NULL, TEST_EVENT_MS),
              "wharf_tasks_expired_total{type=\"chaos\"} never 2");
    /* An operator's replay runs it: the expiry stays behind. */
    c = wharf("dead", "replay", "chaos", "early");
    cr_assert_eq(c->status, 0, "%s", c->err);
    cr_assert_eq(test_wait_int(rc, 1, TEST_EVENT_MS,
                               "EXISTS wharf:{chaos}:result:early"),
                 1);
}

Test(taskopts, an_expired_task_is_dead_and_never_ran)
{
    expired_never_runs(0);
}

Test(taskopts, an_expired_task_is_dead_with_threads)
{
    expired_never_runs(2);
}

/* Bad values: the CLI says which (64 for what is not a value, 65 out of
 * bounds), the C client refuses them, and an entry with a malformed option is a
 * bad task (dead, with why). Nothing bad is ever enqueued. */
Test(taskopts, bad_values_are_refused)
{
    static const char *const usage[][2] = {
        {"--timeout", "soon"},
        {"--max-attempts", "x"},
        {"--expire-in", "-1s"},
        {"--expires", "tomorrow"},
    };
    static const char *const data[][2] = {
        {"--timeout", "0ms"},
        {"--timeout", "31d"},
        {"--max-attempts", "0"},
        {"--max-attempts", "1001"},
        {"--expires", "2001-01-01T00:00:00Z"},
    };
    const test_cli_run *c;
    wharf_task_options o = {.size = sizeof(o)};

    for (size_t i = 0; i < sizeof(usage) / sizeof(usage[0]); i++) {
        c = wharf("enqueue", "chaos", "ok", usage[i][0], usage[i][1]);
        cr_assert_eq(c->status, 64, "%s %s: %d %s", usage[i][0], usage[i][1],
                     c->status, c->err);
        cr_assert(strstr(c->err, usage[i][0]), "%s", c->err);
    }
    for (size_t i = 0; i < sizeof(data) / sizeof(data[0]); i++) {
        c = wharf("enqueue", "chaos", "ok", data[i][0], data[i][1]);
        cr_assert_eq(c->status, 65, "%s %s: %d %s", data[i][0], data[i][1],
                     c->status, c->err);
        cr_assert(strstr(c->err, data[i][0]), "%s", c->err);
    }
    c = wharf("enqueue", "chaos", "ok", "--expire-in", "1s", "--after",
              "chaos:p");
    cr_assert_eq(c->status, 64, "%s", c->err);

    o.max_attempts = 1001;
    cr_assert_eq(wharf_enqueue_with(
                     client, &(wharf_enqueue_opts){.type = "chaos"}, &o, NULL),
                 WHARF_CLIENT_BAD_INPUT);
    cr_assert(strstr(wharf_client_errstr(client), "max_attempts"));
    o = (wharf_task_options){.size = 1, .max_attempts = 2};
    cr_assert_eq(wharf_enqueue_with(
                     client, &(wharf_enqueue_opts){.type = "chaos"}, &o, NULL),
                 WHARF_CLIENT_BAD_INPUT);
    cr_assert_eq(test_redis_keys(rc, "wharf:{chaos}:*"), 0);

    /* An entry whose option is malformed (not from a wharf producer). */
    start_host(0);
    freeReplyObject(test_redis_command(
        rc,
        "XADD wharf:{chaos}:stream * id odd type chaos payload ok attempt 1 "
        "enqueued_at 1 trace "
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01 "
        "max_attempts lots"));
    assert_dead_field("odd", "error",
                      "bad task: max_attempts 'lots' is not a number from 1 "
                      "to 1000");
    cr_assert_eq(test_host_runs(&host, "odd", 0), 0);
}

/* wharf status shows a task's own options, waiting (delayed) and queued,
 * and not for a task without them. */
Test(taskopts, status_shows_the_options)
{
    const test_cli_run *c;

    c = wharf("enqueue", "chaos", "ok", "--id", "later", "--delay", "1h",
              "--timeout", "2s", "--max-attempts", "7", "--expires",
              "2999-01-01T00:00:00Z");
    cr_assert_eq(c->status, 0, "%s", c->err);
    c = wharf("status", "chaos", "later");
    cr_assert_eq(c->status, 0, "%s", c->err);
    cr_assert(strstr(c->out, "state: delayed\n"), "%s", c->out);
    cr_assert(strstr(c->out, "timeout_ms: 2000\n"), "%s", c->out);
    cr_assert(strstr(c->out, "max_attempts: 7\n"), "%s", c->out);
    cr_assert(strstr(c->out, "expires_at: 2999-01-01T00:00:00"), "%s", c->out);
    c = wharf("enqueue", "chaos", "ok", "--id", "now", "--max-attempts", "3");
    cr_assert_eq(c->status, 0, "%s", c->err);
    c = wharf("status", "--json", "chaos", "now");
    cr_assert_eq(c->status, 0, "%s", c->err);
    cr_assert(strstr(c->out, "\"state\": \"queued\""), "%s", c->out);
    cr_assert(strstr(c->out, "\"max_attempts\": 3"), "%s", c->out);
    cr_assert_null(strstr(c->out, "timeout_ms"), "%s", c->out);
    c = wharf("enqueue", "chaos", "ok", "--id", "bare");
    cr_assert_eq(c->status, 0, "%s", c->err);
    c = wharf("status", "chaos", "bare");
    cr_assert_null(strstr(c->out, "max_attempts"), "%s", c->out);
}

/* Runs tests/clients/driver.<lang> ("py" or "js") with args
 * (NULL-terminated) after "URL <op> chaos"; returns its exit code, its
 * stdout in redis.dir/driver.out. */
static int driver_op(const char *lang, const char *op, const char *const *args)
{
    const char *argv[24];
    char path[512], out[300], err[300];
    size_t k = 0;
    int py = strcmp(lang, "py") == 0;

    snprintf(path, sizeof(path), "%s/tests/clients/driver.%s", WHARF_SOURCE_DIR,
             lang);
    snprintf(out, sizeof(out), "%s/driver.out", redis.dir);
    snprintf(err, sizeof(err), "%s/driver.err", redis.dir);
    argv[k++] = py ? "/usr/bin/python3" : "/usr/bin/node";
    argv[k++] = path;
    argv[k++] = redis.url;
    argv[k++] = op;
    argv[k++] = "chaos";
    for (; *args && k < 23; args++)
        argv[k++] = *args;
    argv[k] = NULL;
    cr_assert_eq(setenv("WHARF_LUA_DIR", WHARF_SOURCE_DIR "/sdk/lua", 1), 0);
    return test_spawn(argv, NULL, out, err, py ? "PYTHONPATH" : NULL,
                      py ? WHARF_SOURCE_DIR "/clients/python" : NULL);
}

static int driver(const char *lang, const char *const *args)
{
    return driver_op(lang, "enqueue", args);
}

/* The driver's stdout of its last run (malloc'd). */
static char *driver_out(void)
{
    char path[300], *buf = calloc(1, 4096);
    FILE *f;

    snprintf(path, sizeof(path), "%s/driver.out", redis.dir);
    f = fopen(path, "r");
    cr_assert(f != NULL && buf != NULL);
    cr_assert(fread(buf, 1, 4095, f) < 4095);
    fclose(f);
    return buf;
}

/* The Python or Node client sets each option: a timeout that ends the
 * run, max_attempts 1 that ends the retries, an expiry past before the
 * task is due; its status shows them; and it refuses a bad value with nothing
 * enqueued. */
static void client_sets_options(const char *lang)
{
    char slow[16], once[16], gone[16], *out;
    int lines;

    snprintf(slow, sizeof(slow), "%s-slow", lang);
    snprintf(once, sizeof(once), "%s-once", lang);
    snprintf(gone, sizeof(gone), "%s-gone", lang);
    start_host(0);
    cr_assert_eq(
        driver(lang,
               (const char *const[]){"polite:600000", "--id", slow, "--timeout",
                                     "300", "--max-attempts", "1", NULL}),
        0);
    cr_assert_eq(
        driver(lang, (const char *const[]){"fail:3", "--id", once,
                                           "--max-attempts", "1", NULL}),
        0);
    cr_assert_eq(
        driver(lang, (const char *const[]){"ok", "--id", gone, "--delay", "200",
                                           "--expire-in", "1", NULL}),
        0);
    assert_dead_field(slow, "error", "timeout after 300 ms");
    assert_dead_field(once, "attempt", "1");
    assert_dead_field(gone, "error", "expired");
    cr_assert_eq(test_host_runs(&host, once, 0), 1);
    cr_assert_eq(test_host_runs(&host, gone, 0), 0);
    /* A batch: every task gets them. */
    cr_assert_eq(driver_op(lang, "many",
                           (const char *const[]){"fail:7", "fail:8",
                                                 "--max-attempts", "1", NULL}),
                 0);
    out = driver_out();
    lines = 0;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        assert_dead_field(line, "attempt", "1");
        cr_assert_eq(test_host_runs(&host, line, 0), 1);
        lines++;
    }
    cr_assert_eq(lines, 2);
    free(out);
    /* Its status shows them, named as the CLI's --json names them. */
    cr_assert_eq(driver_op(lang, "status", (const char *const[]){once, NULL}),
                 0);
    out = driver_out();
    cr_assert(strstr(out, "\"max_attempts\": 1"), "%s", out);
    free(out);
    cr_assert_neq(
        driver(lang, (const char *const[]){"ok", "--id", "bad",
                                           "--max-attempts", "1001", NULL}),
        0);
    cr_assert_neq(driver(lang, (const char *const[]){"ok", "--id", "bad",
                                                     "--timeout", "0", NULL}),
                  0);
    cr_assert_eq(test_redis_keys(rc, "wharf:{chaos}:*:bad"), 0);
}

Test(taskopts, the_python_client_sets_them)
{
    client_sets_options("py");
}

Test(taskopts, the_node_client_sets_them)
{
    client_sets_options("js");
}
