/* Priorities between types: a backlog of two types enqueued before the
 * host starts, one worker of one thread, and the order in which the
 * chaos plugin saw the tasks start (its runs file, one line per start).
 * strict: every task of the higher type starts before any of the lower;
 * weighted: while both have a backlog, the starts split as the weights
 * do, within 10 %; either way each type's tasks start in the order they
 * were enqueued. The order is what is asserted, never a time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "host_process.h"
#include "redis_cluster.h"
#include "redis_server.h"

static test_redis redis;
static test_host host;
static redisContext *rc;

static void start_redis(void)
{
    test_suite_up(&redis, 0, &rc);
}

static void stop_all(void)
{
    test_suite_down(&redis, &rc, (test_host *const[]){&host, NULL});
}

TestSuite(priority, .init = start_redis, .fini = stop_all, .timeout = 240);

/* n tasks "<type><i>" of type, i from 0, in that order, through c. */
static void add_backlog_to(redisContext *c, const char *type, int n)
{
    for (int i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof(id), "%s%d", type, i);
        test_add_entry(c, type, id, "ok");
    }
}

static void add_backlog(const char *type, int n)
{
    add_backlog_to(rc, type, n);
}

/* One worker of one thread serving "high" and "low" (chaos under two
 * names) with the given [host] order and priorities, prefetch 4, on
 * url (NULL: the suite's server). */
static void start_host_on(const char *url, const char *order, unsigned high,
                          unsigned low)
{
    char host_keys[64], extra[256];

    snprintf(host_keys, sizeof(host_keys), "workers = 1\norder = %s\n", order);
    snprintf(extra, sizeof(extra),
             "[defaults]\nprefetch = 4\n"
             "[type.high]\npriority = %u\n[type.low]\npriority = %u\n",
             high, low);
    test_host_up(&host, &redis,
                 &(test_host_opts){.redis_url = url,
                                   .host_keys = host_keys,
                                   .log_level = "info",
                                   .chaos_keys = "types = high, low\n",
                                   .extra = extra},
                 NULL);
}

static void start_host(const char *order, unsigned high, unsigned low)
{
    start_host_on(NULL, order, high, low);
}

/* The starts so far, in order: the type's first letter of each line's
 * id ('h', 'l' or 'g') in kinds, its number in numbers (both may be NULL),
 * at most max. Every line must be a first attempt of one of ours. */
static int starts(char *kinds, int *numbers, int max)
{
    FILE *f = fopen(host.runs, "r");
    char id[64];
    unsigned attempt;
    int n = 0;

    if (!f)
        return 0;
    while (n < max && fscanf(f, "%63s %u", id, &attempt) == 2) {
        int number;
        cr_assert_eq(attempt, 1, "%s ran again (attempt %u)", id, attempt);
        if (strncmp(id, "high", 4) == 0)
            number = atoi(id + 4);
        else if (strncmp(id, "low", 3) == 0)
            number = atoi(id + 3);
        else if (strncmp(id, "gate", 4) == 0)
            number = atoi(id + 4);
        else
            cr_assert_fail("a start of an unknown task %s", id);
        if (kinds)
            kinds[n] = id[0];
        if (numbers)
            numbers[n] = number;
        n++;
    }
    fclose(f);
    return n;
}

static bool all_started(void *want)
{
    return starts(NULL, NULL, *(int *)want) >= *(int *)want;
}

/* Waits for every one of total starts and reads them into kinds. */
static void read_all(char *kinds, int total)
{
    int *numbers = calloc((size_t)total, sizeof(*numbers));
    int next_high = 0, next_low = 0;

    cr_assert_not_null(numbers);
    cr_assert(test_wait_until(all_started, &total, 3 * TEST_EVENT_MS),
              "%d of %d tasks started; see %s", starts(NULL, NULL, total),
              total, host.log);
    cr_assert_eq(starts(kinds, numbers, total), total);
    /* FIFO within a type. */
    for (int k = 0; k < total; k++) {
        int *next = kinds[k] == 'h' ? &next_high : &next_low;
        cr_assert_eq(numbers[k], *next, "start %d: %s%d, expected %s%d", k,
                     kinds[k] == 'h' ? "high" : "low", numbers[k],
                     kinds[k] == 'h' ? "high" : "low", *next);
        (*next)++;
    }
    free(numbers);
}

/* strict: the low type was enqueued first, yet none of its tasks starts
 * while one of the high type waits. */
Test(priority, strict_runs_every_higher_task_before_any_lower)
{
    enum { EACH = 1000 };
    char *kinds = calloc(2 * EACH, 1);

    cr_assert_not_null(kinds);
    add_backlog("low", EACH);
    add_backlog("high", EACH);
    start_host("strict", 5, 1);
    read_all(kinds, 2 * EACH);
    for (int k = 0; k < EACH; k++)
        cr_assert_eq(kinds[k], 'h',
                     "start %d is of the low type, with %d of "
                     "the high type still to start",
                     k, EACH - k);
    free(kinds);
}

/* weighted 3 : 1 over 10,000 tasks, 7,500 and 2,500 (so both keep a
 * backlog until near the end): over the first 8,000 starts, when each
 * type still has some, the high type has 75 % of them, within 10 %
 * (67.5 .. 82.5 %), and so it does in each tenth of them. */
Test(priority, weighted_starts_match_the_weights_over_10000_tasks)
{
    enum { HIGH = 7500, LOW = 2500, TOTAL = HIGH + LOW, SPAN = 8000 };
    char *kinds = calloc(TOTAL, 1);
    int high = 0;

    cr_assert_not_null(kinds);
    add_backlog("low", LOW);
    add_backlog("high", HIGH);
    start_host("weighted", 3, 1);
    read_all(kinds, TOTAL);
    for (int part = 0; part < 10; part++) {
        int in_part = 0;
        for (int k = part * SPAN / 10; k < (part + 1) * SPAN / 10; k++)
            in_part += kinds[k] == 'h';
        cr_expect(in_part * 1000 >= 675 * (SPAN / 10) &&
                      in_part * 1000 <= 825 * (SPAN / 10),
                  "starts %d..%d: %d of %d of the high type", part * SPAN / 10,
                  (part + 1) * SPAN / 10 - 1, in_part, SPAN / 10);
        high += in_part;
    }
    cr_assert(high * 1000 >= 675 * SPAN && high * 1000 <= 825 * SPAN,
              "%d of the first %d starts of the high type, not 75 %% +- 10 %%",
              high, SPAN);
    free(kinds);
}

/* Equal priorities under strict: neither type waits for the other; both
 * start within the first claims, as without priorities. */
Test(priority, equal_priorities_share_as_without_priorities)
{
    enum { EACH = 200 };
    char *kinds = calloc(2 * EACH, 1);
    int high = 0;

    cr_assert_not_null(kinds);
    add_backlog("low", EACH);
    add_backlog("high", EACH);
    start_host("strict", 2, 2);
    read_all(kinds, 2 * EACH);
    for (int k = 0; k < EACH; k++)
        high += kinds[k] == 'h';
    cr_assert(high > EACH / 3 && high < 2 * EACH / 3,
              "%d of the first %d starts of one type: not an even share", high,
              EACH);
    free(kinds);
}

static bool gate_held(void *want)
{
    return starts(NULL, NULL, 2) >= *(int *)want;
}

/* The number of type's tasks begun and not finished (their locks). */
static long long begun(const char *type)
{
    char pattern[64];

    snprintf(pattern, sizeof(pattern), "wharf:{%s}:lock:*", type);
    return test_redis_keys(rc, pattern);
}

static bool low_at_its_bound(void *unused)
{
    (void)unused;
    return begun("low") >= 4;
}

static bool high_waits(void *unused)
{
    (void)unused;
    return begun("high") >= 1;
}

/* strict with threads: the waiting entries run higher priority first,
 * not oldest first. Both threads are held by two "gate" tasks; the low
 * type's tasks are claimed and begun first, up to its bound in the
 * worker (2 threads + prefetch 2), then a high one; once the gate opens,
 * the high one starts before the low ones that waited longer. */
Test(priority, strict_threads_take_the_higher_waiting_entry_first)
{
    char payload[320], gate[300], id[32], kinds[32];
    int two = 2, total = 2 + 10 + 10;
    FILE *gate_file;

    snprintf(gate, sizeof(gate), "%s/gate", redis.dir);
    snprintf(payload, sizeof(payload), "wait:%s", gate);
    test_host_up(&host, &redis,
                 &(test_host_opts){.host_keys = "workers = 1\norder = strict\n",
                                   .log_level = "info",
                                   .chaos_keys =
                                       "types = gate, high, low\nthreads = 2\n",
                                   .extra = "[defaults]\nprefetch = 2\n"
                                            "[type.high]\npriority = 5\n"},
                 NULL);
    for (int i = 0; i < 2; i++) {
        snprintf(id, sizeof(id), "gate%d", i);
        test_add_entry(rc, "gate", id, payload);
    }
    cr_assert(test_wait_until(gate_held, &two, TEST_EVENT_MS),
              "the gate tasks did not start; see %s", host.log);
    add_backlog("low", 10);
    cr_assert(test_wait_until(low_at_its_bound, NULL, TEST_EVENT_MS),
              "%lld low tasks begun, not 4; see %s", begun("low"), host.log);
    add_backlog("high", 10);
    cr_assert(test_wait_until(high_waits, NULL, TEST_EVENT_MS),
              "no high task begun; see %s", host.log);
    cr_assert_eq(starts(NULL, NULL, total), 2, "a task started past the gate");
    gate_file = fopen(gate, "w"); /* the gate opens */
    cr_assert_not_null(gate_file, "%s", gate);
    fclose(gate_file);
    cr_assert(test_wait_until(all_started, &total, TEST_EVENT_MS),
              "%d of %d tasks started; see %s", starts(NULL, NULL, total),
              total, host.log);
    cr_assert_eq(starts(kinds, NULL, total), total);
    cr_assert_eq(kinds[2], 'h',
                 "the first start past the gate is of the low type, which "
                 "waited longer, not of the high type");
}

/* The share of the high type in starts [from, to) of kinds, per mille. */
static int high_share(const char *kinds, int from, int to)
{
    int high = 0;

    for (int k = from; k < to; k++)
        high += kinds[k] == 'h';
    return high * 1000 / (to - from);
}

/* On a 3-primary cluster the two types live on two shards ("high" hashes
 * to slot 9976, "low" to 15214), and a claim reads each shard apart:
 * strict still starts every high task before any low one, and weighted
 * 3 : 1 still splits the starts as the weights do, within 10 %. */
Test(priority, strict_and_weighted_hold_across_cluster_shards)
{
    enum { EACH = 300, HIGH = 1500, LOW = 500, SPAN = 1600 };
    char *kinds = calloc(HIGH + LOW, 1);
    redisContext *high_node, *low_node;
    test_cluster c;
    int high_owner, low_owner, share;

    cr_assert_not_null(kinds);
    test_cluster_start(&c, 3, 0);
    high_owner = test_cluster_owner(&c, test_cluster_slot(&c, "{high}"));
    low_owner = test_cluster_owner(&c, test_cluster_slot(&c, "{low}"));
    cr_assert_neq(high_owner, low_owner, "both types on one shard");
    high_node = test_cluster_connect(&c, high_owner);
    low_node = test_cluster_connect(&c, low_owner);

    add_backlog_to(low_node, "low", EACH);
    add_backlog_to(high_node, "high", EACH);
    start_host_on(c.url, "strict", 5, 1);
    read_all(kinds, 2 * EACH);
    for (int k = 0; k < EACH; k++)
        cr_assert_eq(kinds[k], 'h',
                     "start %d is of the low type, with %d of the high type "
                     "still to start",
                     k, EACH - k);
    cr_assert_eq(test_host_stop(&host), 0);

    /* The same ids again, so the results of the first part go. */
    for (int i = 0; i < 3; i++) {
        redisContext *node = test_cluster_connect(&c, i);
        redisReply *r = redisCommand(node, "FLUSHALL");
        cr_assert(r && r->type == REDIS_REPLY_STATUS, "FLUSHALL on %d", i);
        freeReplyObject(r);
        redisFree(node);
    }
    add_backlog_to(low_node, "low", LOW);
    add_backlog_to(high_node, "high", HIGH);
    start_host_on(c.url, "weighted", 3, 1);
    read_all(kinds, HIGH + LOW);
    share = high_share(kinds, 0, SPAN);
    cr_assert(share >= 675 && share <= 825,
              "%d per mille of the first %d starts of the high type, not "
              "750 +- 75",
              share, SPAN);
    cr_assert_eq(test_host_stop(&host), 0);
    redisFree(high_node);
    redisFree(low_node);
    test_cluster_stop(&c);
    free(kinds);
}
