/* rate_limit with real hosts on one Redis: the starts of a type keep to
 * the schedule its GCRA bucket allows across every host (held against
 * Redis's own clock, never against a window the machine may miss), every
 * task runs once and none is charged an attempt for its wait; a task
 * waiting for its turn says so and when in wharf status. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "host_process.h"
#include "http_get.h"
#include "redis_server.h"
#include "wharf_cli.h"

#define TASKS 150
#define RATE 50 /* per second: a start every 20 ms */
#define BURST 5
#define STEP_MS (1000.0 / RATE)

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

TestSuite(rate, .init = start_redis, .fini = stop_all, .timeout = 240);

/* Starts host i (instance "h<i>") of `workers` workers serving stamp with
 * the rate keys type_keys, its /metrics on 127.0.0.1:port (0: none). */
static void start_host_on(int i, int workers, const char *type_keys, int port)
{
    char host_keys[64], extra[1024], listen[32];

    snprintf(host_keys, sizeof(host_keys), "workers = %d\ninstance = h%d\n",
             workers, i);
    snprintf(extra, sizeof(extra),
             "[plugin.stamp]\npath = %s/stamp.so\n[type.stamp]\n%s",
             WHARF_FIXTURE_DIR, type_keys);
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
    test_host_up(&hosts[i], &redis,
                 &(test_host_opts){.host_keys = host_keys,
                                   .log_level = "info",
                                   .extra = extra,
                                   .metrics_listen = port ? listen : NULL},
                 rc);
}

static void start_host(int i, int workers, const char *type_keys)
{
    start_host_on(i, workers, type_keys, 0);
}

static int metrics_port;

/* True once the console's type row has the rate and the one wait. */
static bool console_shows_rate(void *unused)
{
    static char body[65536];

    (void)unused;
    return test_http_get(metrics_port, "/api/overview", body, sizeof(body)) ==
               200 &&
           strstr(body, "\"rate_limit\":\"1/min\",\"rate_burst\":1,"
                        "\"limit_key\":null,\"rate_waits\":1");
}

/* True once /metrics counts one rate wait of stamp. */
static bool one_rate_wait(void *unused)
{
    static char body[65536];

    (void)unused;
    return test_http_get(metrics_port, "/metrics", body, sizeof(body)) == 200 &&
           strstr(body, "wharf_rate_waits_total{type=\"stamp\"} 1\n");
}

/* Redis's clock, in ms. */
static long long redis_now_ms(void)
{
    redisReply *r = test_redis_command(rc, "TIME");
    long long ms;

    cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2);
    ms = atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;
    freeReplyObject(r);
    return ms;
}

static bool all_done(void *want)
{
    return test_redis_keys(rc, "wharf:{stamp}:result:*") >= *(long long *)want;
}

/* The start (ms) in the stamp result of task id. */
static long long start_of(const char *id)
{
    redisReply *r = test_redis_command(rc, "GET wharf:{stamp}:result:%s", id);
    long long start;

    cr_assert(r && r->type == REDIS_REPLY_STRING, "no result for %s", id);
    start = atoll(r->str);
    freeReplyObject(r);
    return start;
}

static int by_value(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;

    return (x > y) - (x < y);
}

/* Three hosts of two workers each, 50/s with a burst of 5, the backlog
 * enqueued at once: the bucket starts no earlier than t0 (Redis's clock
 * before the first enqueue), each start charges one step, and a start is
 * allowed once its charge is within burst steps of now. So the k-th
 * start (k from 1, in time order) is at t0 + (k - burst) steps or later,
 * however late the machine runs any of them: that is asserted for every
 * k (1 ms for the clocks' rounding), and it holds over the whole run
 * only if no more than burst + rate * t ever started in t. Every task
 * runs once (one fence per run: a task that waits for its turn draws
 * none), none dies, nothing is left waiting, and the bucket keeps no
 * reservation. The achieved rate is logged, not asserted. */
Test(rate, starts_keep_to_the_gcra_schedule_across_three_hosts)
{
    long long want = TASKS, t0, starts[TASKS];
    char keys[64];

    snprintf(keys, sizeof(keys), "rate_limit = %d/s\nrate_burst = %d\n", RATE,
             BURST);
    for (int i = 0; i < 3; i++)
        start_host(i, 2, keys);
    t0 = redis_now_ms();
    for (int i = 0; i < TASKS; i++) {
        char id[32];
        snprintf(id, sizeof(id), "t%d", i);
        test_add_entry(rc, "stamp", id, "0");
    }
    cr_assert(test_wait_until(all_done, &want, TEST_EVENT_MS * 2),
              "%lld of %d tasks done; see %s",
              test_redis_keys(rc, "wharf:{stamp}:result:*"), TASKS,
              hosts[0].log);
    for (int i = 0; i < TASKS; i++) {
        char id[32];
        snprintf(id, sizeof(id), "t%d", i);
        starts[i] = start_of(id);
    }
    qsort(starts, TASKS, sizeof(starts[0]), by_value);
    for (int k = 1; k <= TASKS; k++) {
        long long earliest = t0 + (long long)((k - BURST) * STEP_MS) - 1;
        cr_assert_geq(starts[k - 1], earliest,
                      "start %d at t0%+lld ms, before its turn at t0%+lld", k,
                      starts[k - 1] - t0, earliest - t0);
    }
    cr_log_info("rate: %d starts over %lld ms, %.1f/s (limit %d/s)", TASKS,
                starts[TASKS - 1] - starts[0],
                (TASKS - 1) * 1000.0 /
                    (double)(starts[TASKS - 1] - starts[0] + 1),
                RATE);
    cr_expect_eq(test_redis_int(rc, "GET wharf:{stamp}:fence"), TASKS,
                 "a task began more than once");
    cr_expect_eq(test_redis_int(rc, "ZCARD wharf:{stamp}:dead"), 0);
    cr_expect_eq(test_redis_int(rc, "ZCARD wharf:{stamp}:delayed"), 0,
                 "tasks still waiting for their turn");
    cr_expect_eq(test_redis_int(rc, "HLEN wharf:{stamp}:rate"), 1,
                 "reservations left in the bucket");
    cr_expect_gt(test_redis_int(rc, "PTTL wharf:{stamp}:rate"), 0,
                 "the bucket never expires");
}

/* One start a minute: the second task waits for its turn, which is
 * reserved for it in the bucket a minute on; wharf status says it is
 * delayed, why and until when; its wait spends no attempt and draws no
 * fence; wharf stats shows the rate and the one waiting; /metrics
 * counts it in wharf_rate_waits_total, and the console's type row shows
 * both. */
Test(rate, a_task_waiting_for_its_turn_says_so_and_when)
{
    const test_cli_run *run;
    long long now, turn;
    redisReply *r;

    metrics_port = test_free_port();
    start_host_on(0, 1, "rate_limit = 1/min\n", metrics_port);
    test_add_entry(rc, "stamp", "first", "0");
    test_add_entry(rc, "stamp", "second", "0");
    cr_assert_eq(
        test_wait_int(rc, 1, TEST_EVENT_MS, "ZCARD wharf:{stamp}:delayed"), 1,
        "the second task never waited; see %s", hosts[0].log);
    cr_assert_eq(test_wait_int(rc, 1, TEST_EVENT_MS,
                               "EXISTS wharf:{stamp}:result:first"),
                 1);
    now = redis_now_ms();
    r = test_redis_command(rc, "HGET wharf:{stamp}:rate second");
    cr_assert(r && r->type == REDIS_REPLY_STRING, "no turn reserved");
    turn = atoll(r->str);
    freeReplyObject(r);
    cr_expect(turn > now && turn <= now + 60000, "turn at now%+lld ms",
              turn - now);
    run = test_cli(redis.url, redis.dir,
                   (const char *const[]){"status", "stamp", "second", NULL});
    cr_assert_eq(run->status, 0, "%s", run->err);
    cr_expect(strstr(run->out, "state: delayed") != NULL, "%s", run->out);
    cr_expect(strstr(run->out, "due_at: ") != NULL, "%s", run->out);
    cr_expect(strstr(run->out, "attempt: 1\n") != NULL, "%s", run->out);
    cr_expect(strstr(run->out,
                     "error: waiting for its rate turn (rate_limit)") != NULL,
              "%s", run->out);
    cr_expect_eq(test_redis_int(rc, "GET wharf:{stamp}:fence"), 1);
    run = test_cli(redis.url, redis.dir, (const char *const[]){"stats", NULL});
    cr_assert_eq(run->status, 0, "%s", run->err);
    cr_expect(strstr(run->out, "\nstamp: rate_limit 1/min, burst 1, 1 "
                               "waiting for their turn\n") != NULL,
              "%s", run->out);
    run = test_cli(redis.url, redis.dir,
                   (const char *const[]){"stats", "--json", NULL});
    cr_assert_eq(run->status, 0, "%s", run->err);
    cr_expect(strstr(run->out,
                     "\"rate_limit\": \"1/min\", \"rate_burst\": 1, "
                     "\"limit_key\": null, \"rate_waiting\": 1, ") != NULL,
              "%s", run->out);
    cr_expect(test_wait_until(one_rate_wait, NULL, TEST_EVENT_MS),
              "/metrics never counted the rate wait");
    cr_expect(test_wait_until(console_shows_rate, NULL, TEST_EVENT_MS),
              "/api/overview never showed the rate");
}

/* The start and end (ms) in the stamp result of task id. */
static void run_of(const char *id, long long *start, long long *end)
{
    redisReply *r = test_redis_command(rc, "GET wharf:{stamp}:result:%s", id);

    cr_assert(r && r->type == REDIS_REPLY_STRING, "no result for %s", id);
    cr_assert_eq(sscanf(r->str, "%lld %lld", start, end), 2);
    freeReplyObject(r);
}

#define PER_CUSTOMER 12

static bool file_there(void *path)
{
    return access(path, F_OK) == 0;
}

/* One run at a time per customer (concurrency_limit = 1 with limit_key =
 * /customer), three hosts of two workers: while a task of customer a
 * holds a's one slot (held by a gate file), a task of customer b runs and
 * ends, so the cap is per customer and not per type; never two of one
 * customer run at once (each run of a customer starts no earlier than the
 * one before it ended, by the fixture's clock); every task runs once,
 * none dies, none is left waiting; the per-customer slots keys expire. */
Test(rate, a_limit_key_caps_each_customer_and_not_the_type)
{
    long long want = 2 * PER_CUSTOMER + 2, start[2][PER_CUSTOMER],
              end[2][PER_CUSTOMER];
    const char *who[2] = {"a", "b"};
    char gate[300], in[310], held[400];
    FILE *f;

    for (int i = 0; i < 3; i++)
        start_host(i, 2, "concurrency_limit = 1\nlimit_key = /customer\n");
    snprintf(gate, sizeof(gate), "%s/gate", redis.dir);
    snprintf(in, sizeof(in), "%s.in", gate);
    snprintf(held, sizeof(held),
             "{\"customer\": \"a\", \"ms\": 0, \"wait\": \"%s\"}", gate);
    test_add_entry(rc, "stamp", "a-held", held);
    cr_assert(test_wait_until(file_there, in, TEST_EVENT_MS),
              "customer a's held task never started; see %s", hosts[0].log);
    test_add_entry(rc, "stamp", "b-free", "{\"customer\": \"b\", \"ms\": 0}");
    cr_assert_eq(test_wait_int(rc, 1, TEST_EVENT_MS,
                               "EXISTS wharf:{stamp}:result:b-free"),
                 1, "customer b waited for customer a's slot; see %s",
                 hosts[0].log);
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{stamp}:result:a-held"), 0,
                 "customer a's held task ended before its gate opened");
    f = fopen(gate, "w");
    cr_assert_not_null(f, "%s", gate);
    fclose(f);
    for (int k = 0; k < PER_CUSTOMER; k++)
        for (int c = 0; c < 2; c++) {
            char id[32], payload[64];
            snprintf(id, sizeof(id), "%s%d", who[c], k);
            snprintf(payload, sizeof(payload),
                     "{\"customer\": \"%s\", \"ms\": 100}", who[c]);
            test_add_entry(rc, "stamp", id, payload);
        }
    cr_assert(test_wait_until(all_done, &want, TEST_EVENT_MS * 2),
              "%lld of %lld tasks done; see %s",
              test_redis_keys(rc, "wharf:{stamp}:result:*"), want,
              hosts[0].log);
    for (int c = 0; c < 2; c++)
        for (int k = 0; k < PER_CUSTOMER; k++) {
            char id[32];
            snprintf(id, sizeof(id), "%s%d", who[c], k);
            run_of(id, &start[c][k], &end[c][k]);
        }
    for (int c = 0; c < 2; c++)
        for (int k = 0; k < PER_CUSTOMER; k++)
            for (int m = 0; m < PER_CUSTOMER; m++) {
                if (m != k)
                    cr_assert(start[c][m] >= end[c][k] ||
                                  start[c][k] >= end[c][m],
                              "%s%d [%lld, %lld] and %s%d [%lld, %lld] ran "
                              "at once",
                              who[c], k, start[c][k], end[c][k], who[c], m,
                              start[c][m], end[c][m]);
            }
    cr_expect_eq(test_redis_int(rc, "GET wharf:{stamp}:fence"), want,
                 "a task began more than once");
    cr_expect_eq(test_redis_int(rc, "ZCARD wharf:{stamp}:dead"), 0);
    cr_expect_eq(test_redis_int(rc, "ZCARD wharf:{stamp}:delayed"), 0,
                 "tasks still waiting for a slot");
    cr_expect_eq(test_redis_int(rc, "ZCARD wharf:{stamp}:running"), 0);
    cr_expect_gt(test_redis_int(rc, "PTTL wharf:{stamp}:slots:a"), 0);
    cr_expect_gt(test_redis_int(rc, "PTTL wharf:{stamp}:slots:b"), 0);
}

/* The dead record's error of task id. */
static void expect_dead(const char *id, const char *error)
{
    redisReply *r =
        test_redis_command(rc, "HGET wharf:{stamp}:dead:%s error", id);

    cr_assert(r && r->type == REDIS_REPLY_STRING, "%s is not dead", id);
    cr_expect_str_eq(r->str, error);
    freeReplyObject(r);
}

/* A rate per customer (one a minute each): a's first and b's first run
 * at once, a's second waits for its turn in a's own bucket; a payload
 * that is not JSON, or has no such member, or whose member is not a
 * string or an integer, is dead at once with the reason, never run. */
Test(rate, a_limit_key_gives_each_value_its_own_rate_and_refuses_no_value)
{
    start_host(0, 2, "rate_limit = 1/min\nlimit_key = /customer\n");
    test_add_entry(rc, "stamp", "a1", "{\"customer\": \"a\"}");
    test_add_entry(rc, "stamp", "b1", "{\"customer\": \"b\"}");
    test_add_entry(rc, "stamp", "a2", "{\"customer\": \"a\"}");
    test_add_entry(rc, "stamp", "n1", "{\"customer\": 7}");
    test_add_entry(rc, "stamp", "text", "not json");
    test_add_entry(rc, "stamp", "none", "{\"client\": \"a\"}");
    test_add_entry(rc, "stamp", "list", "{\"customer\": [1]}");
    cr_assert_eq(test_wait_int(rc, 3, TEST_EVENT_MS,
                               "EXISTS wharf:{stamp}:result:a1 "
                               "wharf:{stamp}:result:b1 "
                               "wharf:{stamp}:result:n1"),
                 3, "see %s", hosts[0].log);
    cr_assert_eq(
        test_wait_int(rc, 3, TEST_EVENT_MS, "ZCARD wharf:{stamp}:dead"), 3,
        "see %s", hosts[0].log);
    cr_assert_eq(
        test_wait_int(rc, 1, TEST_EVENT_MS, "ZCARD wharf:{stamp}:delayed"), 1);
    cr_expect_eq(test_redis_int(rc, "HEXISTS wharf:{stamp}:rate:a a2"), 1,
                 "a2's turn is not reserved in a's bucket");
    cr_expect_gt(test_redis_int(rc, "PTTL wharf:{stamp}:rate:b"), 0);
    cr_expect_gt(test_redis_int(rc, "PTTL wharf:{stamp}:rate:7"), 0);
    expect_dead("text", "limit_key /customer: the payload is not JSON");
    expect_dead("none", "limit_key /customer: payload has no such member");
    expect_dead("list", "limit_key /customer: the member is not a string or an "
                        "integer");
    cr_expect_eq(test_redis_int(rc, "GET wharf:{stamp}:fence"), 3,
                 "a task without a value began");
}

/* A host killed with -9 while its run holds customer a's one slot: the
 * slot is held until another host takes the task over (its entry idle
 * past visibility_timeout), which ends the dead run as a retry and frees
 * the slot; then a1's retry and a2 run one after the other, never at
 * once, b1 runs too, none dies and none is left waiting. */
Test(rate, a_killed_host_holds_its_key_slot_until_its_task_is_taken_over)
{
    static const char *lease = "concurrency_limit = 1\nlimit_key = /customer\n"
                               "lock_ttl = 2s\nvisibility_timeout = 2s\n"
                               "prefetch = 1\n";
    long long a1[2], a2[2];

    start_host(0, 2, lease);
    test_add_entry(rc, "stamp", "a1", "{\"customer\": \"a\", \"ms\": 3000}");
    cr_assert_eq(
        test_wait_int(rc, 1, TEST_EVENT_MS, "HLEN wharf:{stamp}:slots:a"), 1,
        "a1 never took a's slot; see %s", hosts[0].log);
    cr_assert_eq(kill(hosts[0].pid, SIGKILL), 0);
    waitpid(hosts[0].pid, NULL, 0);
    hosts[0].pid = 0;
    test_add_entry(rc, "stamp", "a2", "{\"customer\": \"a\", \"ms\": 50}");
    test_add_entry(rc, "stamp", "b1", "{\"customer\": \"b\", \"ms\": 50}");
    start_host(1, 2, lease);
    cr_assert_eq(test_wait_int(rc, 3, TEST_EVENT_MS * 2,
                               "EXISTS wharf:{stamp}:result:a1 "
                               "wharf:{stamp}:result:a2 "
                               "wharf:{stamp}:result:b1"),
                 3, "see %s", hosts[1].log);
    run_of("a1", &a1[0], &a1[1]);
    run_of("a2", &a2[0], &a2[1]);
    cr_expect(a2[0] >= a1[1] || a1[0] >= a2[1],
              "a1 [%lld, %lld] and a2 [%lld, %lld] ran at once", a1[0], a1[1],
              a2[0], a2[1]);
    cr_expect_eq(test_redis_int(rc, "GET wharf:{stamp}:fence"), 4,
                 "a1 twice, a2 and b1 once each");
    cr_expect_eq(test_redis_int(rc, "ZCARD wharf:{stamp}:dead"), 0);
    cr_expect_eq(
        test_wait_int(rc, 0, TEST_EVENT_MS, "ZCARD wharf:{stamp}:delayed"), 0);
}
