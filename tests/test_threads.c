/* A worker with threads: 64 tasks in flight in one worker process, and
 * what happens to them when one crashes, when one overruns its timeout
 * and ignores the cancel, and when the host stops or reloads. Tasks are
 * held in flight by the chaos plugin's wait:GATE until the test creates
 * GATE, so "in flight" never depends on how fast a loaded machine is.
 * And the webhook plugin with 200 threads in one worker against a local
 * server that holds every request until 200 are in flight at once. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <microhttpd.h>

#include "host_process.h"
#include "http_get.h"
#include "redis_server.h"
#include "wharf_cli.h"

#define IN_FLIGHT 64

static test_redis redis;
static test_host host;
static redisContext *rc;
static char gate[300];
static int metrics_port;

static void start_redis(void)
{
    test_suite_up(&redis, 0, &rc);
}

static void stop_all(void)
{
    test_suite_down(&redis, &rc, (test_host *const[]){&host, NULL});
}

TestSuite(threads, .init = start_redis, .fini = stop_all, .timeout = 240);

/* One worker of 64 threads serving chaos and slow (chaos under a second
 * type name), each task with one attempt, so any charge is final and
 * visible; types: the [type.*] sections. */
static void start_host_with(const char *test, const char *types)
{
    char chaos[64], listen[64];

    metrics_port = test_free_port();
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", metrics_port);
    snprintf(gate, sizeof(gate), "%s/%s.gate", redis.dir, test);
    unlink(gate);
    snprintf(chaos, sizeof(chaos), "types = chaos, slow\nthreads = %d\n",
             IN_FLIGHT);
    test_host_up(&host, &redis,
                 &(test_host_opts){.host_keys = "workers = 1\n",
                                   .log_level = "info",
                                   .metrics_listen = listen,
                                   .chaos_keys = chaos,
                                   .extra = types},
                 rc);
}

/* slow has a timeout of 1 s. */
static void start_host(const char *test)
{
    start_host_with(test, "[type.chaos]\nmax_attempts = 1\n"
                          "[type.slow]\ntimeout = 1s\nmax_attempts = 1\n");
}

static void add_waiting(const char *prefix, int n)
{
    char payload[320];

    snprintf(payload, sizeof(payload), "wait:%s", gate);
    for (int i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof(id), "%s%d", prefix, i);
        test_add_entry(rc, "chaos", id, payload);
    }
}

/* Lines of the chaos runs file: one per task started. */
static int started(void)
{
    FILE *f = fopen(host.runs, "r");
    int n = 0, c;

    if (!f)
        return 0;
    while ((c = fgetc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

static bool all_started(void *want)
{
    return started() >= *(int *)want;
}

static void wait_started(int want)
{
    cr_assert(test_wait_until(all_started, &want, TEST_EVENT_MS),
              "%d of %d tasks started; see %s", started(), want, host.log);
}

static void open_gate(void)
{
    FILE *f = fopen(gate, "w");
    cr_assert(f != NULL);
    fclose(f);
}

static long long results(const char *type)
{
    char pattern[64];

    snprintf(pattern, sizeof(pattern), "wharf:{%s}:result:*", type);
    return test_redis_keys(rc, pattern);
}

static bool results_at_least(void *want)
{
    return results("chaos") >= *(long long *)want;
}

static void wait_results(long long want)
{
    cr_assert(test_wait_until(results_at_least, &want, TEST_EVENT_MS),
              "%lld of %lld results; see %s", results("chaos"), want, host.log);
}

/* Each of the n tasks prefix0.. finished once: a result, one line in
 * the done file. */
static void each_finished_once(const char *prefix, int n)
{
    for (int i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof(id), "%s%d", prefix, i);
        cr_expect_eq(test_redis_int(rc, "EXISTS wharf:{chaos}:result:%s", id),
                     1, "%s has no result", id);
        cr_expect_eq(test_host_done(&host, id), 1, "%s finished %d times", id,
                     test_host_done(&host, id));
    }
}

/* The dead record of type:id says why. */
static void dead_because(const char *type, const char *id, const char *why)
{
    redisReply *r;
    long long dead = test_wait_int(rc, 1, TEST_EVENT_MS,
                                   "EXISTS wharf:{%s}:dead:%s", type, id);

    cr_assert_eq(dead, 1, "%s:%s never died; see %s", type, id, host.log);
    r = test_redis_command(rc, "HGET wharf:{%s}:dead:%s error", type, id);
    cr_assert(r->type == REDIS_REPLY_STRING, "%s:%s has no error field", type,
              id);
    cr_expect(strstr(r->str, why) != NULL, "%s:%s died of '%s', not '%s'", type,
              id, r->str, why);
    freeReplyObject(r);
}

static const char *const given_back[] = {"task given back unrun", NULL};

/* The console's overview (on the metrics listener) has this text. */
static bool overview_has(const char *want)
{
    static char body[1 << 20];
    int status = test_http_get_within(metrics_port, "/api/overview", body,
                                      sizeof(body), 10);

    cr_assert_eq(status, 200, "/api/overview answered %d", status);
    return strstr(body, want) != NULL;
}

/* /metrics has this exact line. */
static bool metrics_have(const char *want)
{
    static char body[1 << 17];
    int status =
        test_http_get_within(metrics_port, "/metrics", body, sizeof(body), 10);

    cr_assert_eq(status, 200, "/metrics answered %d", status);
    return strstr(body, want) != NULL;
}

/* 63 tasks in flight and one that faults: it alone is charged (its own
 * thread's fault, found by the worker), the 63 go back uncharged and run
 * again, and none finishes twice. */
Test(threads, a_crash_charges_the_faulting_task_alone)
{
    start_host("crash");
    add_waiting("w", IN_FLIGHT - 1);
    wait_started(IN_FLIGHT - 1);
    test_add_entry(rc, "chaos", "bad", "segv");
    dead_because("chaos", "bad", "worker crashed: SIGSEGV");
    cr_expect_eq(test_host_log_count(&host, given_back), IN_FLIGHT - 1,
                 "not every neighbour was given back; see %s", host.log);
    cr_expect(metrics_have("wharf_tasks_given_back_total{type=\"chaos\"} 63\n"),
              "/metrics does not count the 63 given back");
    open_gate();
    wait_results(IN_FLIGHT - 1);
    each_finished_once("w", IN_FLIGHT - 1);
    for (int i = 0; i < IN_FLIGHT - 1; i++) {
        char id[32];
        snprintf(id, sizeof(id), "w%d", i);
        cr_expect_eq(test_host_runs(&host, id, 1), 2,
                     "%s: not run again at attempt 1 (uncharged)", id);
    }
    cr_expect_eq(test_host_runs(&host, "bad", 1), 1);
}

/* A task that overflows its thread's stack is still found: the fault
 * handler runs on a stack of its own. */
Test(threads, a_stack_overflow_charges_that_task_alone)
{
    start_host("overflow");
    add_waiting("w", 10);
    wait_started(10);
    test_add_entry(rc, "chaos", "deep", "overflow");
    dead_because("chaos", "deep", "worker crashed: SIGSEGV");
    cr_expect_eq(test_host_log_count(&host, given_back), 10,
                 "not every neighbour was given back; see %s", host.log);
    open_gate();
    wait_results(10);
    each_finished_once("w", 10);
}

/* 63 in flight and one that overruns its timeout and ignores the cancel:
 * its worker is killed; it alone is charged ("timeout after 1000 ms"),
 * the rest go back uncharged. */
Test(threads, an_overrun_charges_the_task_that_overran_alone)
{
    start_host("overrun");
    add_waiting("w", IN_FLIGHT - 1);
    wait_started(IN_FLIGHT - 1);
    test_add_entry(rc, "slow", "hung", "snooze:120");
    dead_because("slow", "hung", "timeout after 1000 ms");
    cr_expect(test_host_log_has(&host, "ignored its cancel request", NULL),
              "the worker was not killed for it; see %s", host.log);
    cr_expect_eq(test_host_log_count(&host, given_back), IN_FLIGHT - 1,
                 "not every neighbour was given back; see %s", host.log);
    open_gate();
    wait_results(IN_FLIGHT - 1);
    each_finished_once("w", IN_FLIGHT - 1);
}

/* Stops and reloads with 64 in flight and more queued: what runs
 * finishes, what waits goes back, nothing is lost or run twice. */
static void stop_or_reload(const char *test, int sig)
{
    int total = IN_FLIGHT * 2;

    start_host(test);
    add_waiting("w", total);
    wait_started(IN_FLIGHT);
    cr_expect(metrics_have("wharf_tasks_in_flight 64\n"),
              "/metrics does not show 64 tasks in flight");
    cr_expect(overview_has("\"in_flight\":64,\"running\":[{"),
              "the console does not list the worker's 64 tasks");
    cr_assert_eq(kill(host.pid, sig), 0);
    if (sig == SIGTERM) {
        /* The runs under way hold the stop until they end. */
        test_sleep_ms(300);
        open_gate();
        cr_assert_eq(test_host_wait_exit(&host, TEST_EVENT_MS), 0,
                     "wharfd did not stop cleanly; see %s", host.log);
        cr_expect_eq(results("chaos"), started(),
                     "a task that started did not finish before the stop");
        test_host_launch(&host, rc);
    } else {
        test_sleep_ms(300);
        open_gate();
    }
    wait_results(total);
    each_finished_once("w", total);
    for (int i = 0; i < total; i++) {
        char id[32];
        snprintf(id, sizeof(id), "w%d", i);
        cr_expect_eq(test_host_runs(&host, id, 1), 1, "%s ran twice", id);
    }
    cr_expect_eq(test_redis_int(rc, "ZCARD wharf:{chaos}:dead"), 0);
}

Test(threads, a_stop_with_64_in_flight_loses_nothing)
{
    stop_or_reload("stop", SIGTERM);
}

Test(threads, a_reload_with_64_in_flight_loses_nothing)
{
    stop_or_reload("reload", SIGHUP);
}

/* The pid of the host's one worker: its last "worker started" line. */
static pid_t worker_pid(void)
{
    FILE *f = fopen(host.log, "r");
    char line[8192];
    pid_t pid = 0;

    cr_assert(f != NULL, "%s", host.log);
    while (fgets(line, sizeof(line), f)) {
        char *p = strstr(line, "\"pid\":");
        if (strstr(line, "\"msg\":\"worker started\"") && p)
            pid = (pid_t)atoi(p + 6);
    }
    fclose(f);
    cr_assert_gt(pid, 0, "no worker started; see %s", host.log);
    return pid;
}

/* A kill from outside names no task: every one in flight is charged,
 * and the reason says how many there were. */
Test(threads, a_kill_from_outside_charges_every_task_in_flight)
{
    char why[64];

    start_host("kill");
    add_waiting("w", 5);
    wait_started(5);
    cr_assert_eq(kill(worker_pid(), SIGKILL), 0);
    cr_assert_eq(
        test_wait_int(rc, 5, TEST_EVENT_MS, "ZCARD wharf:{chaos}:dead"), 5,
        "not every task in flight was charged; see %s", host.log);
    snprintf(why, sizeof(why), "worker crashed: SIGKILL while running 5 tasks");
    for (int i = 0; i < 5; i++) {
        char id[32];
        snprintf(id, sizeof(id), "w%d", i);
        dead_because("chaos", id, why);
    }
    cr_expect_eq(test_host_log_count(&host, given_back), 0);
}

static bool slow_done(void *unused)
{
    (void)unused;
    return results("slow") >= 20;
}

/* A type capped by concurrency never fills the worker: with 20 of it
 * held in flight, only 2 run, and tasks of another type still run. */
Test(threads, a_capped_type_leaves_threads_to_the_others)
{
    char payload[320];

    start_host_with("cap", "[type.slow]\nconcurrency = 2\n");
    snprintf(payload, sizeof(payload), "wait:%s", gate);
    for (int i = 0; i < 20; i++) {
        char id[32];
        snprintf(id, sizeof(id), "s%d", i);
        test_add_entry(rc, "slow", id, payload);
    }
    wait_started(2);
    for (int i = 0; i < 10; i++) {
        char id[32];
        snprintf(id, sizeof(id), "f%d", i);
        test_add_entry(rc, "chaos", id, "ok");
    }
    wait_results(10);
    cr_expect_eq(started(), 12, "%d started: more than 2 of the capped type",
                 started());
    open_gate();
    cr_assert(test_wait_until(slow_done, NULL, TEST_EVENT_MS),
              "%lld of 20 of the capped type done; see %s", results("slow"),
              host.log);
}

/* wharf cancel of one task among many ends that one only. */
Test(threads, a_cancel_ends_that_task_only)
{
    const test_cli_run *r;

    start_host("cancel");
    add_waiting("w", 10);
    test_add_entry(rc, "chaos", "polite", "polite:600000");
    wait_started(11);
    r = test_cli(redis.url, redis.dir,
                 (const char *const[]){"cancel", "chaos", "polite", NULL});
    cr_assert_eq(r->status, 0, "%s%s", r->out, r->err);
    cr_assert(test_host_wait_log(&host, TEST_EVENT_MS,
                                 (const char *const[]){"\"outcome\":"
                                                       "\"cancelled\"",
                                                       "polite", NULL}),
              "the task did not end as cancelled; see %s", host.log);
    cr_expect_eq(started(), 11, "a task ended by the cancel ran again");
    open_gate();
    wait_results(10);
    each_finished_once("w", 10);
    cr_expect_eq(test_redis_int(rc, "EXISTS wharf:{chaos}:result:polite"), 0);
}

/* ---- the webhook plugin, 200 calls in flight in one worker ---- */

#define HOOK_CALLS 200

/* The server holds each request until HOOK_CALLS are in flight at once
 * (or TEST_EVENT_MS passed, so a host that never gets there fails on the
 * counts below, not on the suite's timeout), then answers each after
 * 100 ms more, as a slow API would. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int in_flight, most, requests;
    int64_t first_ms;
    char keys[HOOK_CALLS * 2][64];
} hook = {.lock = PTHREAD_MUTEX_INITIALIZER,
          .changed = PTHREAD_COND_INITIALIZER};

static enum MHD_Result on_hook(void *cls, struct MHD_Connection *conn,
                               const char *url, const char *method,
                               const char *version, const char *data,
                               size_t *data_len, void **con_cls)
{
    const char *key;
    struct MHD_Response *r;
    enum MHD_Result queued;

    (void)cls, (void)url, (void)method, (void)version, (void)data;
    if (*con_cls == NULL) {
        *con_cls = &hook; /* the headers: the body follows */
        return MHD_YES;
    }
    if (*data_len > 0) {
        *data_len = 0; /* the body is not needed */
        return MHD_YES;
    }
    key = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Idempotency-Key");
    pthread_mutex_lock(&hook.lock);
    if (hook.requests < HOOK_CALLS * 2)
        snprintf(hook.keys[hook.requests], sizeof(hook.keys[0]), "%s",
                 key ? key : "");
    hook.requests++;
    if (hook.first_ms == 0)
        hook.first_ms = test_now_ms();
    if (++hook.in_flight > hook.most)
        hook.most = hook.in_flight;
    pthread_cond_broadcast(&hook.changed);
    while (hook.most < HOOK_CALLS &&
           test_now_ms() - hook.first_ms < TEST_EVENT_MS) {
        pthread_mutex_unlock(&hook.lock);
        test_sleep_ms(10);
        pthread_mutex_lock(&hook.lock);
    }
    pthread_mutex_unlock(&hook.lock);
    test_sleep_ms(100);
    pthread_mutex_lock(&hook.lock);
    hook.in_flight--;
    pthread_mutex_unlock(&hook.lock);
    r = MHD_create_response_from_buffer(2, (void *)"ok",
                                        MHD_RESPMEM_PERSISTENT);
    queued = MHD_queue_response(conn, 200, r);
    MHD_destroy_response(r);
    return queued;
}

static long long webhook_results(void *unused)
{
    (void)unused;
    return results("webhook");
}

static bool hooks_done(void *want)
{
    return webhook_results(NULL) >= *(long long *)want;
}

Test(threads, the_webhook_keeps_200_calls_in_flight_in_one_worker)
{
    struct sockaddr_in addr = {.sin_family = AF_INET};
    const union MHD_DaemonInfo *info;
    struct MHD_Daemon *server;
    char extra[256];
    long long want = HOOK_CALLS;
    int seen[HOOK_CALLS] = {0};

    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    server = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, 0,
        NULL, NULL, on_hook, NULL, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *)&addr, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)(HOOK_CALLS * 2), MHD_OPTION_END);
    cr_assert_not_null(server, "cannot start the HTTP server");
    info = MHD_get_daemon_info(server, MHD_DAEMON_INFO_BIND_PORT);
    cr_assert_not_null(info);
    snprintf(extra, sizeof(extra),
             "[plugin.webhook]\npath = webhook.so\n"
             "url = http://127.0.0.1:%u/hook\nthreads = %d\n"
             "[type.webhook]\ntimeout = 120s\n",
             info->port, HOOK_CALLS);
    test_host_up(&host, &redis,
                 &(test_host_opts){.host_keys = "workers = 1\n",
                                   .log_level = "info",
                                   .extra = extra},
                 rc);
    for (int i = 0; i < HOOK_CALLS; i++) {
        char id[32], payload[64];
        snprintf(id, sizeof(id), "hook-%d", i);
        snprintf(payload, sizeof(payload), "{\"n\":%d}", i);
        test_add_entry(rc, "webhook", id, payload);
    }
    cr_assert(test_wait_until(hooks_done, &want, TEST_EVENT_MS * 2),
              "%lld of %d webhook tasks done; see %s", webhook_results(NULL),
              HOOK_CALLS, host.log);
    pthread_mutex_lock(&hook.lock);
    cr_expect_eq(hook.most, HOOK_CALLS,
                 "at most %d calls were in flight at once in the worker",
                 hook.most);
    cr_expect_eq(hook.requests, HOOK_CALLS, "%d requests for %d tasks",
                 hook.requests, HOOK_CALLS);
    for (int j = 0; j < hook.requests && j < HOOK_CALLS * 2; j++) {
        int i = -1;
        if (sscanf(hook.keys[j], "hook-%d", &i) == 1 && i >= 0 &&
            i < HOOK_CALLS)
            seen[i]++;
    }
    pthread_mutex_unlock(&hook.lock);
    for (int i = 0; i < HOOK_CALLS; i++)
        cr_expect_eq(seen[i], 1, "hook-%d reached the server %d times", i,
                     seen[i]);
    cr_expect_eq(test_redis_int(rc, "ZCARD wharf:{webhook}:dead"), 0);
    test_host_stop(&host);
    MHD_stop_daemon(server);
}
