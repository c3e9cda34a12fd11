/* Observability and backpressure end to end: a real wharfd with /metrics
 * on a free loopback port, a known mix of tasks, and exact counts; /readyz
 * across a Redis outage; pressure with hysteresis; max_backlog refusing
 * with exit 75; a trace id followed through the host's log. */
#include <signal.h>
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

static test_redis redis;
static test_host host;
static redisContext *rc;
static int port;
static char body[1 << 20];

static void start_redis(void)
{
    test_redis_start(&redis, 0);
    rc = test_redis_connect(&redis);
}

static void stop_all(void)
{
    test_host_stop(&host);
    if (rc)
        redisFree(rc);
    test_redis_stop(&redis);
}

TestSuite(metrics, .init = start_redis, .fini = stop_all, .timeout = 120);

/* Starts wharfd with /metrics on a free port and waits until it answers. */
static void start(const char *host_keys, const char *extra)
{
    /* The harness writes listen = off (sections may not repeat), so the
     * port goes in with sed. */
    port = test_free_port();
    test_host_opts o = {.host_keys = host_keys, .extra = extra};
    test_host_manifest_opts(&host, &redis, &o);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "sed -i 's/^listen = off$/listen = 127.0.0.1:%d/' %s",
             port, host.manifest);
    cr_assert_eq(system(cmd), 0);
    test_host_start(&host);
    for (int i = 0; i < 500; i++) {
        if (test_http_get(port, "/readyz", body, sizeof(body)) == 200)
            return;
        test_sleep_ms(10);
    }
    cr_assert_fail("wharfd /readyz never 200; see %s", host.log);
}

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

static long long wait_result(const char *id, int ms)
{
    return test_wait_int(rc, 1, ms, "EXISTS wharf:{chaos}:result:%s", id);
}

Test(metrics, exact_counts_after_a_known_mix)
{
    start(NULL, "[type.chaos]\nmax_attempts = 2\nbackoff_base = 10ms\n"
                "lock_retry = 500ms\n");
    test_add_entry(rc, "chaos", "a1", "ok");
    test_add_entry(rc, "chaos", "a2", "ok");
    test_add_entry(rc, "chaos", "a3", "ok");
    test_add_entry(rc, "chaos", "b", "fail:1");
    test_add_entry(rc, "chaos", "c", "fatal");
    freeReplyObject(
        test_redis_command(rc, "SET wharf:{chaos}:lock:d 999 PX 300"));
    test_add_entry(rc, "chaos", "d", "ok");
    cr_assert_eq(wait_result("a1", 5000), 1);
    test_add_entry(rc, "chaos", "a1", "ok"); /* cached now */
    cr_assert_eq(wait_result("b", 5000), 1);
    cr_assert_eq(wait_result("d", 5000), 1);
    cr_assert_eq(test_wait_int(rc, 1, 5000, "ZCARD wharf:{chaos}:dead"), 1);
    cr_assert_eq(test_wait_int(rc, 0, 5000, "XLEN wharf:{chaos}:stream"), 0);
    test_sleep_ms(100);

    cr_assert_eq(scrape("wharf_tasks_total{type=\"chaos\",outcome=\"ok\"}"), 5);
    cr_assert_eq(sample(body, "wharf_tasks_total{type=\"chaos\",outcome=\"retry\"}"), 1);
    cr_assert_eq(sample(body, "wharf_tasks_total{type=\"chaos\",outcome=\"dead\"}"), 1);
    cr_assert_eq(sample(body, "wharf_tasks_total{type=\"chaos\",outcome=\"cached\"}"), 1);
    cr_assert_eq(sample(body, "wharf_tasks_total{type=\"chaos\",outcome=\"locked\"}"), 1);
    cr_assert_eq(sample(body, "wharf_tasks_total{type=\"chaos\",outcome=\"stale\"}"), 0);
    cr_assert_eq(sample(body, "wharf_lock_contended_total"), 1);
    /* Seven plugin runs: a1-a3, b twice, c, d. */
    cr_assert_eq(sample(body, "wharf_task_duration_seconds_count{type=\"chaos\"}"), 7);
    cr_assert_eq(sample(body, "wharf_task_wait_seconds_count{type=\"chaos\"}"), 7);
    cr_assert_eq(sample(body, "wharf_task_duration_seconds_bucket{type=\"chaos\",le=\"+Inf\"}"), 7);
    /* Queue gauges are read at most once a second. */
    for (int i = 0; i < 300 && scrape("wharf_queue_dead{type=\"chaos\"}") != 1;
         i++)
        test_sleep_ms(10);
    cr_assert_eq(sample(body, "wharf_queue_dead{type=\"chaos\"}"), 1);
    cr_assert_eq(sample(body, "wharf_queue_ready{type=\"chaos\"}"), 0);
    cr_assert_eq(sample(body, "wharf_redis_up"), 1);
    cr_assert_eq(sample(body, "wharf_workers{state=\"down\"}"), 0);
    cr_assert(sample(body, "wharf_round_trips_total") > 0);
    cr_assert(strstr(body, "wharf_build_info{version=\"") != NULL);
    cr_assert_eq(sample(body, "wharf_worker_restarts_total{reason=\"crash\"}"), 0);
}

Test(metrics, exposition_passes_promtool_when_available)
{
    start(NULL, NULL);
    test_add_entry(rc, "chaos", "p1", "ok");
    cr_assert_eq(wait_result("p1", 5000), 1);
    if (system("command -v promtool >/dev/null 2>&1") != 0)
        cr_skip_test("promtool is not installed");
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
    cr_assert_eq(test_wait_int(rc, 1, 10000, "ZCARD wharf:{chaos}:dead"), 1);
    for (int i = 0; i < 200; i++) {
        if (scrape("wharf_worker_restarts_total{reason=\"crash\"}") == 1)
            break;
        test_sleep_ms(10);
    }
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
    int status = 0;
    for (int i = 0; i < 300; i++) {
        status = test_http_get(port, "/readyz", body, sizeof(body));
        if (status == 503)
            break;
        test_sleep_ms(10);
    }
    cr_assert_eq(status, 503, "readyz still %d with Redis down", status);
    cr_assert(strstr(body, "redis") != NULL, "%s", body);
    cr_assert_eq(test_http_get(port, "/healthz", body, sizeof(body)), 200);
    cr_assert_eq(scrape("wharf_redis_up"), 0);
    test_redis_restart(&redis);
    rc = test_redis_connect(&redis);
    for (int i = 0; i < 1000; i++) {
        status = test_http_get(port, "/readyz", body, sizeof(body));
        if (status == 200)
            break;
        test_sleep_ms(10);
    }
    cr_assert_eq(status, 200, "readyz not back after Redis returned");
}

Test(metrics, pressure_sets_above_high_and_clears_below_low)
{
    wharf_client *client = NULL;
    wharf_enqueue_reply reply;
    char err[256], id[32];

    start("workers = 1\n", "[defaults]\nprefetch = 1\n"
                           "[type.chaos]\nhigh_watermark = 8\n"
                           "low_watermark = 3\n");
    for (int i = 0; i < 20; i++) {
        snprintf(id, sizeof(id), "slow-%d", i);
        test_add_entry(rc, "chaos", id, "sleep:150");
    }
    cr_assert_eq(test_wait_int(rc, 1, 5000, "EXISTS wharf:{chaos}:pressure"),
                 1, "pressure not set above the high watermark");
    cr_assert(test_redis_int(rc, "PTTL wharf:{chaos}:pressure") > 0,
              "pressure must expire by itself if every host dies");
    cr_assert(test_redis_int(rc, "GET wharf:{chaos}:backlog") > 8);
    /* Producers are told. */
    cr_assert_eq(wharf_client_open(&client, redis.url, NULL, NULL, err,
                                   sizeof(err)),
                 WHARF_CLIENT_OK);
    wharf_enqueue_opts task = {.type = "chaos", .payload = "ok",
                               .payload_len = 2, .id = "told"};
    cr_assert_eq(wharf_enqueue(client, &task, &reply), WHARF_CLIENT_OK);
    cr_assert_eq(reply.pressure, 1);
    cr_assert_eq(scrape("wharf_queue_pressure{type=\"chaos\"}"), 1);
    /* Between the marks it stays on; below low it clears. */
    long long backlog = 0;
    for (int i = 0; i < 1000; i++) {
        backlog = test_redis_int(rc, "GET wharf:{chaos}:backlog");
        if (backlog < 8 && backlog >= 3)
            break;
        test_sleep_ms(10);
    }
    if (backlog < 8 && backlog >= 3)
        cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{chaos}:pressure"), 1,
                     "cleared between the watermarks (backlog %lld)",
                     backlog);
    cr_assert_eq(test_wait_int(rc, 0, 10000, "EXISTS wharf:{chaos}:pressure"),
                 0, "pressure not cleared below the low watermark");
    cr_assert(test_redis_int(rc, "GET wharf:{chaos}:backlog") < 3);
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
    /* Hold the worker so the backlog builds. */
    test_add_entry(rc, "chaos", "blocker", "sleep:1500");
    for (int i = 0; i < 200 && test_host_runs(&host, "blocker", 0) == 0; i++)
        test_sleep_ms(10);
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
    /* Every accepted task is processed; no refused one was half-written. */
    for (int i = 0; i < 20; i++) {
        snprintf(id, sizeof(id), "cap-%d", i);
        if (i < 10)
            cr_assert_eq(wait_result(id, 10000), 1, "%s lost", id);
        else
            cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{chaos}:seen:%s",
                                        id),
                         0, "%s was half-written", id);
    }
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
    cr_assert_eq(wait_result("traced", 5000), 1);
    test_sleep_ms(100);
    cr_assert(test_host_log_has(&host, "\"msg\":\"task started\"",
                                "\"task\":\"traced\"",
                                "4bf92f3577b34da6a3ce929d0e0e4736", NULL));
    cr_assert(test_host_log_has(&host, "\"msg\":\"task finished\"",
                                "\"task\":\"traced\"",
                                "4bf92f3577b34da6a3ce929d0e0e4736", NULL));
}

Test(metrics, listen_address_in_use_is_refused)
{
    char cmd[600];

    /* The test's redis-server holds its port: ask wharfd for that one. */
    test_host_manifest_opts(&host, &redis, &(test_host_opts){0});
    snprintf(cmd, sizeof(cmd),
             "sed -i 's/^listen = off$/listen = 127.0.0.1:%d/' %s", redis.port,
             host.manifest);
    cr_assert_eq(system(cmd), 0);
    test_host_start(&host);
    int status = test_host_wait_exit(&host, 10000);
    cr_assert_eq(status, 78, "exit %d", status);
    cr_assert(test_host_log_has(&host, "listen", "in use", NULL));
}
