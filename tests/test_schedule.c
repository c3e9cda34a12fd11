/* Schedules across real hosts on one Redis (host/schedule_timer.c): three
 * hosts firing one `every = 1s` schedule enqueue each tick once, none
 * lost between the first and the last; and after the only host was down
 * for five ticks of an hourly schedule, catch_up fires none, the last or
 * all five. The catch-up tests move a fake clock (WHARF_TEST_CLOCK_FILE,
 * a test hook) rather than wait hours, and wait on what Redis holds,
 * never on wall time. */
#define _GNU_SOURCE /* timegm */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "host_process.h"
#include "http_get.h"
#include "redis_cluster.h"
#include "redis_server.h"
#include "wharf_cli.h"

static test_redis redis;
static test_host hosts[3];
static redisContext *rc;

static void start_redis(void)
{
    test_suite_up(&redis, 0, &rc);
}

static void stop_all(void)
{
    test_suite_down(
        &redis, &rc,
        (test_host *const[]){&hosts[0], &hosts[1], &hosts[2], NULL});
}

TestSuite(schedule, .init = start_redis, .fini = stop_all, .timeout = 240);

/* The tick time of an id "sched:NAME:2026-12-03T03:00:00Z", or -1. */
static long long tick_of(const char *id, const char *name)
{
    char prefix[128];
    struct tm tm;
    const char *rest;

    snprintf(prefix, sizeof(prefix), "sched:%s:", name);
    if (strncmp(id, prefix, strlen(prefix)) != 0)
        return -1;
    memset(&tm, 0, sizeof(tm));
    rest = strptime(id + strlen(prefix), "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (rest == NULL || *rest != '\0')
        return -1;
    return (long long)timegm(&tm);
}

/* The ids of type's stream, in order, into ids (up to max); how many. */
static size_t stream_ids(const char *type, char ids[][128], size_t max)
{
    redisReply *r =
        test_redis_command(rc, "XRANGE wharf:{%s}:stream - +", type);
    size_t n = 0;

    cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
    for (size_t i = 0; i < r->elements && n < max; i++) {
        redisReply *fields = r->element[i]->element[1];

        for (size_t f = 0; f + 1 < fields->elements; f += 2)
            if (strcmp(fields->element[f]->str, "id") == 0)
                snprintf(ids[n++], sizeof(ids[0]), "%s",
                         fields->element[f + 1]->str);
    }
    freeReplyObject(r);
    return n;
}

/* The payload of the stream entry of task id in type's stream. */
static void stream_payload(const char *type, const char *id, char *out,
                           size_t len)
{
    redisReply *r =
        test_redis_command(rc, "XRANGE wharf:{%s}:stream - +", type);

    out[0] = '\0';
    for (size_t i = 0; i < r->elements; i++) {
        redisReply *fields = r->element[i]->element[1];
        const char *entry_id = NULL, *payload = NULL;

        for (size_t f = 0; f + 1 < fields->elements; f += 2) {
            if (strcmp(fields->element[f]->str, "id") == 0)
                entry_id = fields->element[f + 1]->str;
            if (strcmp(fields->element[f]->str, "payload") == 0)
                payload = fields->element[f + 1]->str;
        }
        if (entry_id && payload && strcmp(entry_id, id) == 0)
            snprintf(out, len, "%s", payload);
    }
    freeReplyObject(r);
}

static long long last_tick(const char *type, const char *name)
{
    redisReply *r =
        test_redis_command(rc, "ZSCORE wharf:{%s}:schedules %s", type, name);
    long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;

    freeReplyObject(r);
    return v;
}

typedef struct want_len {
    const char *type;
    long long n;
} want_len;

static bool stream_has(void *arg)
{
    want_len *w = arg;

    return test_redis_int(rc, "XLEN wharf:{%s}:stream", w->type) >= w->n;
}

#define BEAT                                                                   \
    "[schedule.beat]\n"                                                        \
    "type = beat\n"                                                            \
    "every = 1s\n"                                                             \
    "payload = {\"at\":\"{{tick}}\",\"unix\":{{tick_unix}}}\n"

/* No task of type beat is served here, so each tick's task stays in the
 * stream for the count. */
Test(schedule, three_hosts_enqueue_each_tick_once)
{
    static char ids[200][128];
    static const char *const names[] = {"instance = a\n", "instance = b\n",
                                        "instance = c\n"};
    long long first = -1, newest = -1, t, recorded;
    char payload[512], want[512];
    size_t n;

    for (int i = 0; i < 3; i++)
        test_host_up(&hosts[i], &redis,
                     &(test_host_opts){.host_keys = names[i],
                                       .log_level = "info",
                                       .extra = BEAT},
                     rc);
    for (int i = 0; i < 3; i++)
        cr_assert(test_host_wait_log(
                      &hosts[i], TEST_EVENT_MS,
                      (const char *const[]){"schedules started", NULL}),
                  "host %d runs no timer", i);
    /* Twenty ticks or more, however long a loaded machine takes. */
    cr_assert(
        test_wait_until(stream_has, &(want_len){"beat", 20}, TEST_EVENT_MS),
        "20 ticks did not come");
    for (int i = 0; i < 3; i++)
        test_host_stop(&hosts[i]);
    recorded = last_tick("beat", "beat");
    n = stream_ids("beat", ids, 200);
    cr_assert_geq(n, 20);
    for (size_t i = 0; i < n; i++) {
        t = tick_of(ids[i], "beat");
        cr_assert_geq(t, 0, "not a tick id: %s", ids[i]);
        for (size_t j = 0; j < i; j++)
            cr_assert_str_neq(ids[i], ids[j], "tick %s enqueued twice", ids[i]);
        if (first < 0 || t < first)
            first = t;
        if (t > newest)
            newest = t;
    }
    /* Every tick from the first to the last, each once: none lost. */
    cr_assert_eq((long long)n, newest - first + 1,
                 "%zu tasks for the ticks %lld..%lld", n, first, newest);
    cr_assert_eq(recorded, newest, "the last tick is recorded");
    /* The payload carries the tick's time. */
    stream_payload("beat", ids[0], payload, sizeof(payload));
    snprintf(want, sizeof(want), "{\"at\":\"%.40s\",\"unix\":%lld}",
             ids[0] + strlen("sched:beat:"), tick_of(ids[0], "beat"));
    cr_assert_str_eq(payload, want);
}

/* ---- catch-up, on a fake clock ---- */

static char clock_file[300];

static void set_clock(long long seconds)
{
    char tmp[320];
    FILE *f;

    snprintf(tmp, sizeof(tmp), "%s.tmp", clock_file);
    f = fopen(tmp, "w");
    cr_assert_not_null(f);
    fprintf(f, "%lld\n", seconds);
    fclose(f);
    cr_assert_eq(rename(tmp, clock_file), 0);
}

typedef struct want_tick {
    const char *type, *name;
    long long tick;
} want_tick;

static bool tick_recorded(void *arg)
{
    want_tick *w = arg;

    return last_tick(w->type, w->name) == w->tick;
}

typedef struct want_metrics {
    int port;
    const char *line;
} want_metrics;

static bool metrics_have(void *arg)
{
    want_metrics *w = arg;
    static char body[65536];

    return test_http_get(w->port, "/metrics", body, sizeof(body)) == 200 &&
           strstr(body, w->line) != NULL;
}

static bool api_has(void *arg)
{
    want_metrics *w = arg;
    static char body[65536];

    return test_http_get(w->port, "/api/schedules", body, sizeof(body)) ==
               200 &&
           strstr(body, w->line) != NULL;
}

/* 2026-12-03T00:00:00Z */
#define DAY 1796256000LL

/* An hourly schedule whose only host fires 01:00, is down while 02:00 ..
 * 06:00 pass, and comes back at 06:30: the ticks enqueued after it is
 * back, which must be `expected` (from 02:00 on, oldest first). */
static void catch_up_after_five_missed(const char *mode, int expected)
{
    static char ids[20][128];
    char extra[256], listen[64], line[256];
    size_t n;
    int port;

    snprintf(clock_file, sizeof(clock_file), "%s/clock-%d", redis.dir,
             (int)getpid());
    setenv("WHARF_TEST_CLOCK_FILE", clock_file, 1);
    snprintf(extra, sizeof(extra),
             "[schedule.hourly]\ntype = report\ncron = @hourly\n"
             "catch_up = %s\n",
             mode);
    set_clock(DAY + 30);
    port = test_free_port();
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
    test_host_up(&hosts[0], &redis,
                 &(test_host_opts){.log_level = "info",
                                   .extra = extra,
                                   .metrics_listen = listen},
                 rc);
    /* The timer's first look is done (it starts from the clock of that
     * look) before the clock moves on. */
    snprintf(line, sizeof(line), "\"next_tick\":%lld,", DAY + 3600);
    cr_assert(
        test_wait_until(api_has, &(want_metrics){port, line}, TEST_EVENT_MS),
        "/api/schedules lacks %s", line);
    set_clock(DAY + 3600 + 10);
    cr_assert(test_wait_until(tick_recorded,
                              &(want_tick){"report", "hourly", DAY + 3600},
                              TEST_EVENT_MS),
              "01:00 did not fire");
    test_host_stop(&hosts[0]);
    set_clock(DAY + 6 * 3600 + 1800);
    port = test_free_port();
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
    test_host_up(&hosts[0], &redis,
                 &(test_host_opts){.log_level = "info",
                                   .extra = extra,
                                   .metrics_listen = listen},
                 rc);
    cr_assert(test_wait_until(tick_recorded,
                              &(want_tick){"report", "hourly", DAY + 6 * 3600},
                              TEST_EVENT_MS),
              "the host did not catch up to 06:00");
    /* /metrics: the last tick, the next, and (when one fired) how late:
     * half an hour, on this clock. */
    snprintf(line, sizeof(line),
             "wharf_schedule_last_tick_seconds{schedule=\"hourly\","
             "type=\"report\"} %lld\n",
             DAY + 6 * 3600);
    cr_assert(test_wait_until(metrics_have, &(want_metrics){port, line},
                              TEST_EVENT_MS),
              "/metrics lacks %s", line);
    snprintf(line, sizeof(line),
             "wharf_schedule_next_tick_seconds{schedule=\"hourly\","
             "type=\"report\"} %lld\n",
             DAY + 7 * 3600);
    cr_assert(metrics_have(&(want_metrics){port, line}), "%s", line);
    cr_assert(metrics_have(&(want_metrics){
                  port, "wharf_schedule_lag_seconds{schedule=\"hourly\","
                        "type=\"report\"} 1800.000\n"}) == (expected > 0));
    test_host_stop(&hosts[0]);
    n = stream_ids("report", ids, 20);
    cr_assert_eq(n, 1 + (size_t)expected, "%zu tasks with catch_up = %s", n,
                 mode);
    cr_assert_eq(tick_of(ids[0], "hourly"), DAY + 3600);
    for (int i = 0; i < expected; i++)
        cr_assert_eq(tick_of(ids[1 + i], "hourly"),
                     DAY + (7 - expected + i) * 3600LL, "%s", ids[1 + i]);
    unlink(clock_file);
}

Test(schedule, catch_up_none_fires_no_missed_tick)
{
    catch_up_after_five_missed("none", 0);
}

Test(schedule, catch_up_last_fires_the_newest_missed_tick)
{
    catch_up_after_five_missed("last", 1);
}

Test(schedule, catch_up_all_fires_each_missed_tick)
{
    catch_up_after_five_missed("all", 5);
}

/* wharf schedules and wharf schedule run, against what a host fired. */
Test(schedule, wharf_schedules_lists_and_schedule_run_fires)
{
    static char ids[20][128];
    static char body[65536];
    const test_cli_run *run;
    char want[512], id[160], listen[64];
    size_t n;
    int port;

    snprintf(clock_file, sizeof(clock_file), "%s/clock-%d", redis.dir,
             (int)getpid());
    setenv("WHARF_TEST_CLOCK_FILE", clock_file, 1);
    set_clock(DAY + 30);
    port = test_free_port();
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
    test_host_up(&hosts[0], &redis,
                 &(test_host_opts){.log_level = "info",
                                   .metrics_listen = listen,
                                   .extra = "[schedule.hourly]\n"
                                            "type = report\n"
                                            "cron = 0 * * * *\n"
                                            "timezone = Europe/Berlin\n"
                                            "payload = at {{tick_unix}}\n"},
                 rc);
    cr_assert(
        test_host_wait_log(&hosts[0], TEST_EVENT_MS,
                           (const char *const[]){"schedules started", NULL}));
    /* Nothing fired yet: no last tick, the next one at 01:00. */
    snprintf(want, sizeof(want), "\"last_tick\":0,\"next_tick\":%lld,",
             DAY + 3600);
    cr_assert(
        test_wait_until(api_has, &(want_metrics){port, want}, TEST_EVENT_MS),
        "/api/schedules lacks %s", want);
    set_clock(DAY + 3600 + 5);
    cr_assert(test_wait_until(tick_recorded,
                              &(want_tick){"report", "hourly", DAY + 3600},
                              TEST_EVENT_MS));
    /* The console's panel reads the timer's figures. */
    snprintf(want, sizeof(want),
             "{\"name\":\"hourly\",\"type\":\"report\",\"when\":\"0 * * * "
             "*\",\"timezone\":\"Europe/Berlin\",\"last_tick\":%lld,"
             "\"next_tick\":%lld,\"fired\":1,\"lag_ms\":5000}",
             DAY + 3600, DAY + 7200);
    cr_assert_eq(test_http_get(port, "/api/schedules", body, sizeof(body)),
                 200);
    cr_assert(strstr(body, want) != NULL, "%s lacks %s", body, want);
    run = test_cli(redis.url, redis.dir,
                   (const char *const[]){"--config", hosts[0].manifest,
                                         "schedules", NULL});
    cr_assert_eq(run->status, 0, "%s", run->err);
    cr_assert(strstr(run->out, "NAME") == run->out, "%s", run->out);
    cr_assert(strstr(run->out, "hourly  report  0 * * * *  Europe/Berlin") !=
                  NULL,
              "%s", run->out);
    cr_assert(strstr(run->out, "2026-12-03T01:00:00Z  queued") != NULL, "%s",
              run->out);
    run = test_cli(redis.url, redis.dir,
                   (const char *const[]){"--config", hosts[0].manifest,
                                         "schedules", "--json", NULL});
    cr_assert_eq(run->status, 0, "%s", run->err);
    snprintf(want, sizeof(want),
             "\"last_tick\": %lld, \"last_task\": \"queued\"}", DAY + 3600);
    cr_assert(strstr(run->out, want) != NULL, "%s", run->out);
    cr_assert(strstr(run->out, "\"cron\": \"0 * * * *\"") != NULL, "%s",
              run->out);

    run = test_cli(redis.url, redis.dir,
                   (const char *const[]){"--config", hosts[0].manifest,
                                         "schedule", "run", "hourly", NULL});
    cr_assert_eq(run->status, 0, "%s", run->err);
    cr_assert_eq(sscanf(run->out, "report %159s", id), 1, "%s", run->out);
    cr_assert(strncmp(id, "sched:hourly:manual:", 20) == 0, "%s", id);
    n = stream_ids("report", ids, 20);
    cr_assert_eq(n, 2, "the 01:00 tick and the manual one");
    cr_assert_str_eq(ids[1], id);
    cr_assert_eq(last_tick("report", "hourly"), DAY + 3600,
                 "a manual run is not a tick");

    run = test_cli(redis.url, redis.dir,
                   (const char *const[]){"--config", hosts[0].manifest,
                                         "schedule", "run", "nightly", NULL});
    cr_assert_eq(run->status, 1);
    cr_assert(strstr(run->err, "no [schedule.nightly] in the manifest") != NULL,
              "%s", run->err);
    run = test_cli(redis.url, redis.dir,
                   (const char *const[]){"schedules", NULL});
    cr_assert_eq(run->status, 64);
    cr_assert(strstr(run->err, "wharf --config FILE") != NULL, "%s", run->err);
    test_host_stop(&hosts[0]);
    unlink(clock_file);
}

/* A reload changes the schedules at once: the one it removes fires no
 * more, the one it adds fires from its next tick, and the console and
 * /metrics show the new ones only. */
Test(schedule, a_reload_starts_the_new_manifests_schedules)
{
    char listen[64], line[256];
    int port;

    snprintf(clock_file, sizeof(clock_file), "%s/clock-%d", redis.dir,
             (int)getpid());
    setenv("WHARF_TEST_CLOCK_FILE", clock_file, 1);
    set_clock(DAY + 30);
    port = test_free_port();
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
    test_host_up(&hosts[0], &redis,
                 &(test_host_opts){.log_level = "info",
                                   .metrics_listen = listen,
                                   .extra = "[schedule.hourly]\n"
                                            "type = report\n"
                                            "cron = @hourly\n"},
                 rc);
    snprintf(line, sizeof(line), "\"name\":\"hourly\"");
    cr_assert(
        test_wait_until(api_has, &(want_metrics){port, line}, TEST_EVENT_MS),
        "/api/schedules lacks %s", line);
    test_host_rewrite(&hosts[0], &redis,
                      &(test_host_opts){.log_level = "info",
                                        .metrics_listen = listen,
                                        .extra = "[schedule.halfhour]\n"
                                                 "type = report\n"
                                                 "cron = 30 * * * *\n"});
    cr_assert_eq(kill(hosts[0].pid, SIGHUP), 0);
    snprintf(line, sizeof(line), "\"name\":\"halfhour\"");
    cr_assert(
        test_wait_until(api_has, &(want_metrics){port, line}, TEST_EVENT_MS),
        "the reload did not start the new schedule; see %s", hosts[0].log);
    cr_assert(!api_has(&(want_metrics){port, "\"name\":\"hourly\""}),
              "the removed schedule is still shown");
    set_clock(DAY + 3600 + 30 * 60 + 5);
    cr_assert(test_wait_until(tick_recorded,
                              &(want_tick){"report", "halfhour",
                                           DAY + 3600 + 30 * 60},
                              TEST_EVENT_MS),
              "01:30 did not fire after the reload; see %s", hosts[0].log);
    cr_expect_eq(last_tick("report", "hourly"), -1,
                 "the removed schedule fired");
    test_host_stop(&hosts[0]);
    unlink(clock_file);
}

/* ---- on Sentinel ---- */

static redisContext *beat_node;

/* The tick ids in beat's stream on beat_node, into ids; how many. */
static size_t node_tick_ids(char ids[][128], size_t max)
{
    redisContext *saved = rc;
    size_t n;

    rc = beat_node;
    n = stream_ids("beat", ids, max);
    rc = saved;
    return n;
}

static bool node_has_ticks(void *want)
{
    redisReply *r = redisCommand(beat_node, "XLEN wharf:{beat}:stream");
    bool has = r && r->type == REDIS_REPLY_INTEGER &&
               r->integer >= *(long long *)want;

    freeReplyObject(r);
    return has;
}

/* A host on a Sentinel url fires its schedule through the master the
 * sentinels name, and, after the master is killed and the replica
 * promoted, goes on firing into the new master, each tick at most once
 * (a tick written to the old master just before it died may be lost
 * with it: replication is asynchronous without min_replicas_ack). */
Test(schedule, a_schedule_follows_a_sentinel_failover)
{
    static test_sentinels sentinels;
    static char ids[400][128];
    char url[600];
    long long three = 3, more;
    size_t n;

    test_sentinels_start(&sentinels);
    snprintf(url, sizeof(url), "%s/0", sentinels.url);
    test_host_up(&hosts[0], &redis,
                 &(test_host_opts){.redis_url = url,
                                   .log_level = "info",
                                   .extra = BEAT},
                 NULL);
    beat_node = test_redis_connect(&sentinels.primary);
    cr_assert(test_wait_until(node_has_ticks, &three, TEST_EVENT_MS),
              "no tick reached the master (see %s)", hosts[0].log);
    redisFree(beat_node);

    test_sentinels_kill_primary(&sentinels);
    beat_node = test_redis_connect(&sentinels.replica);
    n = node_tick_ids(ids, 400);
    more = (long long)n + 3;
    cr_assert(test_wait_until(node_has_ticks, &more, 3 * TEST_EVENT_MS),
              "no tick reached the new master (see %s)", hosts[0].log);
    cr_assert_eq(test_host_stop(&hosts[0]), 0);
    n = node_tick_ids(ids, 400);
    for (size_t i = 0; i < n; i++) {
        cr_assert_geq(tick_of(ids[i], "beat"), 0, "not a tick id: %s", ids[i]);
        for (size_t j = 0; j < i; j++)
            cr_assert_str_neq(ids[i], ids[j], "tick %s enqueued twice", ids[i]);
    }
    redisFree(beat_node);
    beat_node = NULL;
    test_sentinels_stop(&sentinels);
}
