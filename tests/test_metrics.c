/* Observability and backpressure end to end: a real wharfd with /metrics
 * on a free loopback port, a known mix of tasks, and exact counts; /readyz
 * across a Redis outage; pressure with hysteresis; max_backlog refusing
 * with exit 75; a trace id followed through the host's log. */
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <wharf/client.h>

#include "host_process.h"
#include "http_get.h"
#include "redis_server.h"
#include "tools.h"

static test_redis redis;
static test_host host;
static redisContext *rc;
static int port;
static char body[1 << 20];

static void start_redis(void)
{
    test_suite_up(&redis, 0, &rc);
}

static void stop_all(void)
{
    test_suite_down(&redis, &rc, (test_host *const[]){&host, NULL});
}

TestSuite(metrics, .init = start_redis, .fini = stop_all, .timeout = 120);

/* The value of the sample named exactly `name` (with its labels). */
static double sample(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *line = text; line && *line;) {
        if (strncmp(line, name, n) == 0 && line[n] == ' ')
            return strtod(line + n + 1, NULL);
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    return -1;
}

static double scrape(const char *name)
{
    cr_assert_eq(test_http_get(port, "/metrics", body, sizeof(body)), 200);
    return sample(body, name);
}

/* Generous: every wait below is for an event, so this is only how long a
 * loaded machine may take before the test gives up on it. */
#define EVENT_DEADLINE_MS TEST_EVENT_MS

/* Scrapes until the sample `name` equals want, for up to
 * EVENT_DEADLINE_MS; returns the last value (body holds that scrape). */
static double scrape_until(const char *name, double want)
{
    int64_t deadline = test_now_ms() + EVENT_DEADLINE_MS;
    double v = scrape(name);

    while (v != want && test_now_ms() < deadline) {
        test_sleep_ms(20);
        v = scrape(name);
    }
    return v;
}

/* GETs path until it answers want, for up to EVENT_DEADLINE_MS; returns
 * the last status (body holds that answer). */
static int get_until(const char *path, int want)
{
    int64_t deadline = test_now_ms() + EVENT_DEADLINE_MS;
    int status = test_http_get(port, path, body, sizeof(body));

    while (status != want && test_now_ms() < deadline) {
        test_sleep_ms(20);
        status = test_http_get(port, path, body, sizeof(body));
    }
    return status;
}

static long long wait_result(const char *id)
{
    return test_wait_int(rc, 1, EVENT_DEADLINE_MS,
                         "EXISTS wharf:{chaos}:result:%s", id);
}

/* Starts wharfd with /metrics on a free port and waits until it answers. */
static void start(const char *host_keys, const char *extra)
{
    char listen[64];

    port = test_free_port();
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
    test_host_opts o = {.host_keys = host_keys,
                        .extra = extra,
                        .metrics_listen = listen};
    test_host_up(&host, &redis, &o, rc);
    cr_assert_eq(get_until("/readyz", 200), 200,
                 "wharfd /readyz never 200; see %s", host.log);
}

Test(metrics, exact_counts_after_a_known_mix)
{
    const char *locked_line[] = {"\"msg\":\"task finished\"",
                                 "\"task\":\"d\"", "\"outcome\":\"locked\"",
                                 NULL};
    int locked;

    start(NULL, "[type.chaos]\nmax_attempts = 2\nbackoff_base = 10ms\n"
                "lock_retry = 500ms\n");
    test_add_entry(rc, "chaos", "a1", "ok");
    test_add_entry(rc, "chaos", "a2", "ok");
    test_add_entry(rc, "chaos", "a3", "ok");
    test_add_entry(rc, "chaos", "b", "fail:1");
    test_add_entry(rc, "chaos", "c", "fatal");
    /* Another run holds d's lock until the host has met it at least once
     * (not for a fixed time, which a loaded machine can outlast). */
    freeReplyObject(test_redis_command(rc, "SET wharf:{chaos}:lock:d 999"));
    test_add_entry(rc, "chaos", "d", "ok");
    cr_assert_eq(wait_result("a1"), 1);
    test_add_entry(rc, "chaos", "a1", "ok"); /* cached now */
    cr_assert(test_host_wait_log(&host, EVENT_DEADLINE_MS, locked_line),
              "d's lock was never met; see %s", host.log);
    freeReplyObject(test_redis_command(rc, "DEL wharf:{chaos}:lock:d"));
    cr_assert_eq(wait_result("b"), 1);
    cr_assert_eq(wait_result("d"), 1);
    cr_assert_eq(test_wait_int(rc, 1, EVENT_DEADLINE_MS,
                               "ZCARD wharf:{chaos}:dead"),
                 1);
    cr_assert_eq(test_wait_int(rc, 0, EVENT_DEADLINE_MS,
                               "XLEN wharf:{chaos}:stream"),
                 0);

    /* Every outcome is counted once it is in Redis; wait for the last
     * of them to reach the counters, then every figure must be exact. */
    cr_assert_eq(scrape_until("wharf_task_duration_seconds_count{type="
                              "\"chaos\"}",
                              7),
                 7);
    cr_assert_eq(scrape_until("wharf_tasks_total{type=\"chaos\",outcome="
                              "\"ok\"}",
                              5),
                 5);
    /* d met its lock once or more (each retry after lock_retry counts):
     * the counters say exactly as often as the log does. */
    locked = test_host_log_count(&host, locked_line);
    cr_assert(locked >= 1);
    cr_assert_eq(scrape_until("wharf_tasks_total{type=\"chaos\",outcome="
                              "\"locked\"}",
                              locked),
                 locked);
    cr_assert_eq(scrape("wharf_tasks_total{type=\"chaos\",outcome=\"ok\"}"), 5);
    cr_assert_eq(sample(body, "wharf_tasks_total{type=\"chaos\",outcome=\"retry\"}"), 1);
    cr_assert_eq(sample(body, "wharf_tasks_total{type=\"chaos\",outcome=\"dead\"}"), 1);
    cr_assert_eq(sample(body, "wharf_tasks_total{type=\"chaos\",outcome=\"cached\"}"), 1);
    cr_assert_eq(sample(body, "wharf_tasks_total{type=\"chaos\",outcome=\"locked\"}"), locked);
    cr_assert_eq(sample(body, "wharf_tasks_total{type=\"chaos\",outcome=\"stale\"}"), 0);
    cr_assert_eq(sample(body, "wharf_lock_contended_total"), locked);
    /* Seven plugin runs: a1-a3, b twice, c, d. */
    cr_assert_eq(sample(body, "wharf_task_duration_seconds_count{type=\"chaos\"}"), 7);
    cr_assert_eq(sample(body, "wharf_task_wait_seconds_count{type=\"chaos\"}"), 7);
    cr_assert_eq(sample(body, "wharf_task_duration_seconds_bucket{type=\"chaos\",le=\"+Inf\"}"), 7);
    /* Queue gauges are read at most once a second. */
    cr_assert_eq(scrape_until("wharf_queue_dead{type=\"chaos\"}", 1), 1);
    cr_assert_eq(sample(body, "wharf_queue_ready{type=\"chaos\"}"), 0);
    cr_assert_eq(sample(body, "wharf_queue_paused{type=\"chaos\"}"), 0);
    cr_assert_eq(sample(body, "wharf_redis_up"), 1);
    /* A served type's pause reaches the gauge with the next figures. */
    freeReplyObject(test_redis_command(rc, "SET wharf:{chaos}:paused 1"));
    cr_assert_eq(scrape_until("wharf_queue_paused{type=\"chaos\"}", 1), 1,
                 "the pause of a served type is not shown");
    cr_assert_eq(sample(body, "wharf_workers{state=\"down\"}"), 0);
    cr_assert(sample(body, "wharf_round_trips_total") > 0);
    cr_assert(strstr(body, "wharf_build_info{version=\"") != NULL);
    cr_assert_eq(sample(body, "wharf_worker_restarts_total{reason=\"crash\"}"), 0);
}

/* A type no host here serves (nor any host: its tasks wait for nobody)
 * has its queue gauges on /metrics too, read as wharf stats reads them:
 * ready leaves out what is pending, no group yet counts 0 running. */
Test(metrics, unserved_types_have_their_gauges)
{
    redisReply *r;

    start(NULL, NULL);
    freeReplyObject(test_redis_command(rc, "SADD wharf:types ghost lost"));
    for (int i = 0; i < 3; i++)
        freeReplyObject(
            test_redis_command(rc, "XADD wharf:{ghost}:stream * id g%d", i));
    freeReplyObject(
        test_redis_command(rc, "XGROUP CREATE wharf:{ghost}:stream wharf 0"));
    r = test_redis_command(rc, "XREADGROUP GROUP wharf someone COUNT 1 STREAMS "
                               "wharf:{ghost}:stream >");
    cr_assert(r->type == REDIS_REPLY_ARRAY, "XREADGROUP took nothing");
    freeReplyObject(r);
    freeReplyObject(
        test_redis_command(rc, "ZADD wharf:{ghost}:delayed 1 a 2 b"));
    freeReplyObject(test_redis_command(rc, "ZADD wharf:{ghost}:dead 1 c"));
    freeReplyObject(test_redis_command(rc, "SET wharf:{ghost}:pressure 1"));
    freeReplyObject(test_redis_command(rc, "XADD wharf:{lost}:stream * id l"));
    freeReplyObject(test_redis_command(rc, "SET wharf:{ghost}:paused 1"));
    freeReplyObject(
        test_redis_command(rc, "ZADD wharf:{ghost}:running 9 a:1 9 b:2"));

    cr_assert_eq(scrape_until("wharf_queue_dead{type=\"ghost\"}", 1), 1,
                 "no gauges for an unserved type; see %s", host.log);
    cr_assert_eq(sample(body, "wharf_queue_ready{type=\"ghost\"}"), 2);
    cr_assert_eq(sample(body, "wharf_queue_running{type=\"ghost\"}"), 1);
    cr_assert_eq(sample(body, "wharf_queue_delayed{type=\"ghost\"}"), 2);
    cr_assert_eq(sample(body, "wharf_queue_pressure{type=\"ghost\"}"), 1);
    cr_assert_eq(sample(body, "wharf_queue_paused{type=\"ghost\"}"), 1);
    cr_assert_eq(sample(body, "wharf_queue_paused{type=\"lost\"}"), 0);
    cr_assert_eq(sample(body, "wharf_queue_slots{type=\"ghost\"}"), 2);
    cr_assert_eq(sample(body, "wharf_queue_ready{type=\"lost\"}"), 1);
    cr_assert_eq(sample(body, "wharf_queue_running{type=\"lost\"}"), 0);
    /* the served type is there as before, and Redis is up */
    cr_assert_eq(sample(body, "wharf_queue_ready{type=\"chaos\"}"), 0);
    cr_assert_eq(sample(body, "wharf_queue_paused{type=\"chaos\"}"), 0);
    cr_assert_eq(sample(body, "wharf_redis_up"), 1);
    /* A served type's pause reaches the gauge with the next figures. */
    freeReplyObject(test_redis_command(rc, "SET wharf:{chaos}:paused 1"));
    cr_assert_eq(scrape_until("wharf_queue_paused{type=\"chaos\"}", 1), 1,
                 "the pause of a served type is not shown");
}

Test(metrics, exposition_passes_promtool)
{
    test_need_tools((const char *const[]){"promtool", NULL});
    start(NULL, NULL);
    test_add_entry(rc, "chaos", "p1", "ok");
    cr_assert_eq(wait_result("p1"), 1);
    char path[300], cmd[700];
    snprintf(path, sizeof(path), "%s/metrics.txt", host.dir);
    cr_assert_eq(test_http_get(port, "/metrics", body, sizeof(body)), 200);
    FILE *f = fopen(path, "w");
    fputs(body, f);
    fclose(f);
    snprintf(cmd, sizeof(cmd), "promtool check metrics < %s", path);
    cr_assert_eq(system(cmd), 0, "promtool check metrics failed");
}

Test(metrics, restarts_are_counted_by_reason)
{
    start(NULL, "[type.chaos]\nmax_attempts = 1\n");
    test_add_entry(rc, "chaos", "boom", "crash");
    cr_assert_eq(test_wait_int(rc, 1, EVENT_DEADLINE_MS,
                               "ZCARD wharf:{chaos}:dead"),
                 1);
    cr_assert_eq(
        scrape_until("wharf_worker_restarts_total{reason=\"crash\"}", 1), 1);
    cr_assert_eq(
        scrape_until("wharf_tasks_total{type=\"chaos\",outcome=\"dead\"}", 1),
        1);
    cr_assert_eq(scrape("wharf_worker_restarts_total{reason=\"crash\"}"), 1);
    cr_assert_eq(sample(body, "wharf_tasks_total{type=\"chaos\",outcome=\"dead\"}"), 1);
}

Test(metrics, readyz_follows_redis)
{
    start(NULL, NULL);
    cr_assert_eq(test_http_get(port, "/readyz", body, sizeof(body)), 200);
    redisFree(rc);
    rc = NULL;
    test_redis_stop(&redis);
    int status = get_until("/readyz", 503);
    cr_assert_eq(status, 503, "readyz still %d with Redis down", status);
    cr_assert(strstr(body, "redis") != NULL, "%s", body);
    cr_assert_eq(test_http_get(port, "/healthz", body, sizeof(body)), 200);
    cr_assert_eq(scrape("wharf_redis_up"), 0);
    test_redis_restart(&redis);
    rc = test_redis_connect(&redis);
    status = get_until("/readyz", 200);
    cr_assert_eq(status, 200, "readyz not back after Redis returned");
}

/* Reads the type's backlog and whether its pressure flag is set in one
 * MULTI, so both are the same moment: a host writes them in one script. */
static void read_pressure(long long *backlog, long long *pressure)
{
    redisReply *r;

    freeReplyObject(test_redis_command(rc, "MULTI"));
    freeReplyObject(test_redis_command(rc, "GET wharf:{chaos}:backlog"));
    freeReplyObject(test_redis_command(rc, "EXISTS wharf:{chaos}:pressure"));
    r = test_redis_command(rc, "EXEC");
    cr_assert(r->type == REDIS_REPLY_ARRAY && r->elements == 2);
    *backlog = r->element[0]->type == REDIS_REPLY_STRING
                   ? strtoll(r->element[0]->str, NULL, 10)
                   : -1;
    *pressure = r->element[1]->integer;
    freeReplyObject(r);
}

Test(metrics, pressure_sets_above_high_and_clears_below_low)
{
    wharf_client *client = NULL;
    wharf_enqueue_reply reply;
    char err[256], id[32], fifo[320], payload[340];
    long long backlog = -1, pressure = 0, last = -1;
    bool between = false;
    int64_t deadline;

    start("workers = 1\n", "[defaults]\nprefetch = 1\n"
                           "[type.chaos]\nhigh_watermark = 8\n"
                           "low_watermark = 3\n");
    /* The one worker is held by the first task (a fifo) until the test
     * has seen the pressure on: the backlog stays above the high mark
     * however slow the machine, then drains. */
    snprintf(fifo, sizeof(fifo), "%s/hold.fifo", host.dir);
    test_fifo_make(fifo);
    snprintf(payload, sizeof(payload), "read:%s", fifo);
    for (int i = 0; i < 20; i++) {
        snprintf(id, sizeof(id), "slow-%d", i);
        test_add_entry(rc, "chaos", id, i == 0 ? payload : "sleep:150");
    }
    cr_assert_eq(test_wait_int(rc, 1, EVENT_DEADLINE_MS,
                               "EXISTS wharf:{chaos}:pressure"),
                 1, "pressure not set above the high watermark");
    cr_assert(test_redis_int(rc, "PTTL wharf:{chaos}:pressure") > 0,
              "pressure must expire by itself if every host dies");
    /* Producers are told. */
    cr_assert_eq(wharf_client_open(&client, redis.url, NULL, NULL, err,
                                   sizeof(err)),
                 WHARF_CLIENT_OK);
    wharf_enqueue_opts task = {.type = "chaos", .payload = "ok",
                               .payload_len = 2, .id = "told"};
    cr_assert_eq(wharf_enqueue(client, &task, &reply), WHARF_CLIENT_OK);
    cr_assert_eq(reply.pressure, 1);
    cr_assert_eq(scrape_until("wharf_queue_pressure{type=\"chaos\"}", 1), 1);
    cr_assert(test_fifo_feed(fifo, EVENT_DEADLINE_MS),
              "the first task was not reading");
    /* Follow each published figure down: at every moment the flag must
     * agree with the hysteresis. Above high it is on, between the marks
     * it stays on (it was set on the way up), below low it clears. */
    deadline = test_now_ms() + EVENT_DEADLINE_MS;
    do {
        read_pressure(&backlog, &pressure);
        if (backlog != last && backlog >= 0) {
            if (backlog > 8)
                cr_assert_eq(pressure, 1, "off at backlog %lld", backlog);
            else if (backlog >= 3) {
                cr_assert_eq(pressure, 1,
                             "cleared between the watermarks (backlog "
                             "%lld)",
                             backlog);
                between = true;
            } else
                cr_assert_eq(pressure, 0, "on at backlog %lld", backlog);
            last = backlog;
        }
        if (backlog >= 0 && backlog < 3)
            break;
        test_sleep_ms(5);
    } while (test_now_ms() < deadline);
    cr_assert(backlog >= 0 && backlog < 3, "backlog stuck at %lld", backlog);
    cr_assert_eq(pressure, 0, "pressure not cleared below the low watermark");
    /* The host publishes at least every second and a task takes 150 ms,
     * so a figure between the marks is published on the way down; if a
     * loaded machine skipped them all, the checks above still hold. */
    if (!between)
        cr_log_warn("no figure between the watermarks was published");
    cr_assert_eq(wharf_enqueue(client, &(wharf_enqueue_opts){.type = "chaos",
                                   .payload = "ok", .payload_len = 2,
                                   .id = "calm"},
                               &reply),
                 WHARF_CLIENT_OK);
    cr_assert_eq(reply.pressure, 0);
    wharf_client_close(client);
}

Test(metrics, max_backlog_refuses_with_75_and_keeps_what_it_took)
{
    char cmd[600], id[32];
    int accepted = 0, refused = 0;

    start("workers = 1\n", "[defaults]\nprefetch = 1\n"
                           "[type.chaos]\nmax_backlog = 10\n");
    /* The host has published the type's policy: the enqueue script
     * enforces it without any host. Stop the host so that nothing drains
     * the queue while the CLI fills it: the backlog then depends on no
     * clock (a task that sleeps to hold the worker is a window a loaded
     * machine can miss: 20 CLI launches had to fit 1.5 s). */
    cr_assert_eq(test_redis_int(rc, "HGET wharf:{chaos}:policy max_backlog"),
                 10);
    cr_assert_eq(test_host_stop(&host), 0);
    cr_assert_eq(test_redis_int(rc, "HGET wharf:{chaos}:policy max_backlog"),
                 10, "the policy must outlive the host");
    for (int i = 0; i < 20; i++) {
        snprintf(cmd, sizeof(cmd),
                 "%s/wharf --redis %s enqueue chaos ok --id cap-%d "
                 ">/dev/null 2>>%s/enqueue.err",
                 WHARF_BINARY_DIR, redis.url, i, host.dir);
        int status = system(cmd);
        cr_assert(WIFEXITED(status));
        if (WEXITSTATUS(status) == 0)
            accepted++;
        else if (WEXITSTATUS(status) == 75)
            refused++;
        else
            cr_assert_fail("enqueue exited %d", WEXITSTATUS(status));
    }
    cr_assert_eq(accepted, 10, "accepted %d", accepted);
    cr_assert_eq(refused, 10, "refused %d", refused);
    char errpath[300], line[512];
    snprintf(errpath, sizeof(errpath), "%s/enqueue.err", host.dir);
    FILE *f = fopen(errpath, "r");
    cr_assert(f && fgets(line, sizeof(line), f));
    fclose(f);
    cr_assert(strstr(line, "backlog") != NULL, "unclear refusal: %s", line);
    /* A host again: every accepted task is processed; no refused one was
     * half-written. */
    test_host_start(&host);
    for (int i = 0; i < 20; i++) {
        snprintf(id, sizeof(id), "cap-%d", i);
        if (i < 10)
            cr_assert_eq(wait_result(id), 1, "%s lost", id);
        else
            cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{chaos}:seen:%s",
                                        id),
                         0, "%s was half-written", id);
    }
    cr_assert_eq(test_redis_int(rc, "XLEN wharf:{chaos}:stream"), 0);
}

Test(metrics, trace_id_given_at_enqueue_is_in_the_host_log)
{
    const char *trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    char cmd[600];

    start(NULL, NULL);
    snprintf(cmd, sizeof(cmd),
             "%s/wharf --redis %s enqueue chaos ok --id traced --trace %s "
             ">/dev/null",
             WHARF_BINARY_DIR, redis.url, trace);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(wait_result("traced"), 1);
    /* The worker logs after it stores the result: wait for the line. */
    cr_assert(test_host_wait_log(&host, EVENT_DEADLINE_MS,
                                 (const char *const[]){
                                     "\"msg\":\"task finished\"",
                                     "\"task\":\"traced\"",
                                     "4bf92f3577b34da6a3ce929d0e0e4736",
                                     NULL}),
              "see %s", host.log);
    cr_assert(test_host_log_has(&host, "\"msg\":\"task started\"",
                                "\"task\":\"traced\"",
                                "4bf92f3577b34da6a3ce929d0e0e4736", NULL));
}

Test(metrics, listen_address_in_use_is_refused)
{
    char listen[64];

    /* The test's redis-server holds its port: ask wharfd for that one. */
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", redis.port);
    test_host_manifest_opts(&host, &redis,
                            &(test_host_opts){.metrics_listen = listen});
    test_host_start(&host);
    int status = test_host_wait_exit(&host, EVENT_DEADLINE_MS);
    cr_assert_eq(status, 78, "exit %d", status);
    cr_assert(test_host_log_has(&host, "listen", "in use", NULL));
}
