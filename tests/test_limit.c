/* concurrency_limit with real hosts on one Redis: at most N tasks of the
 * type run at once across every host (counted by the overlap fixture,
 * in a file all of them share), N do run at once, every task runs once,
 * and the slots of a host killed with -9 come back within lock_ttl. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <criterion/criterion.h>

#include "host_process.h"
#include "redis_server.h"

#define LIMIT 3
#define TASKS 45
/* A lease short enough that a killed host's slots and tasks come back
 * soon. */
#define LEASE "lock_ttl = 2s\nvisibility_timeout = 2s\nprefetch = 1\n"

static test_redis redis;
static test_host hosts[3];
static redisContext *rc;
static char counter[300];

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

TestSuite(limit, .init = start_redis, .fini = stop_all, .timeout = 240);

/* Starts host i (instance "h<i>") of `workers` workers serving overlap
 * with the limit and type_keys. */
static void start_host(int i, int workers, const char *type_keys)
{
    char host_keys[64], extra[1024];

    snprintf(counter, sizeof(counter), "%s/overlap-counter", redis.dir);
    snprintf(host_keys, sizeof(host_keys), "workers = %d\ninstance = h%d\n",
             workers, i);
    snprintf(extra, sizeof(extra),
             "[plugin.overlap]\npath = %s/overlap.so\ncounter = %s\n"
             "[type.overlap]\nconcurrency_limit = %d\n%s",
             WHARF_FIXTURE_DIR, counter, LIMIT, type_keys);
    test_host_up(&hosts[i], &redis,
                 &(test_host_opts){.host_keys = host_keys,
                                   .log_level = "info",
                                   .extra = extra},
                 rc);
}

/* The most tasks the overlap fixture saw running at once, and how many
 * run now. */
static void overlap(long *running, long *most)
{
    FILE *f = fopen(counter, "r");

    *running = *most = 0;
    if (!f)
        return;
    if (fscanf(f, "%ld %ld", running, most) != 2)
        *running = *most = 0;
    fclose(f);
}

static long long results(void)
{
    return test_redis_keys(rc, "wharf:{overlap}:result:*");
}

/* True once *want tasks have a result; fails the test as soon as more
 * slots are held than the limit allows. */
static bool done_within_limit(void *want)
{
    long long slots = test_redis_int(rc, "ZCARD wharf:{overlap}:running");

    cr_assert_leq(slots, LIMIT, "%lld slots held, limit %d", slots, LIMIT);
    return results() >= *(long long *)want;
}

static void add_tasks(const char *prefix, int n, const char *payload)
{
    for (int i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof(id), "%s%d", prefix, i);
        test_add_entry(rc, "overlap", id, payload);
    }
}

/* Three hosts of two workers each, a limit of three: the overlap never
 * goes above three and reaches it; every task runs once (one fence per
 * run: a task that waits for a slot draws none), none dies, and at the
 * end every slot is given back. */
Test(limit, at_most_the_limit_run_at_once_across_three_hosts)
{
    long long want = TASKS;
    long running, most;

    for (int i = 0; i < 3; i++)
        start_host(i, 2, "");
    add_tasks("t", TASKS, "200");
    cr_assert(test_wait_until(done_within_limit, &want, TEST_EVENT_MS * 2),
              "%lld of %d tasks done", results(), TASKS);
    overlap(&running, &most);
    cr_expect_eq(most, LIMIT, "at most %ld ran at once, limit %d", most, LIMIT);
    cr_expect_eq(running, 0);
    cr_expect_eq(test_redis_int(rc, "GET wharf:{overlap}:fence"), TASKS,
                 "a task began more than once");
    cr_expect_eq(test_redis_int(rc, "ZCARD wharf:{overlap}:dead"), 0);
    cr_expect_eq(test_redis_int(rc, "ZCARD wharf:{overlap}:running"), 0,
                 "slots not given back");
    cr_expect_eq(test_redis_int(rc, "ZCARD wharf:{overlap}:delayed"), 0,
                 "tasks still waiting for a slot");
}

/* A host killed with -9 while it holds every slot: no other host starts
 * a task of the type while its slots live (the slots never number more
 * than the limit), and they come back by themselves within lock_ttl, so
 * the rest run, and the killed host's tasks are taken over and run. */
Test(limit, slots_of_a_killed_host_come_back_within_lock_ttl)
{
    long long want = LIMIT + 6;

    start_host(0, LIMIT + 1, LEASE);
    add_tasks("long", LIMIT, "4000");
    cr_assert_eq(test_wait_int(rc, LIMIT, TEST_EVENT_MS,
                               "ZCARD wharf:{overlap}:running"),
                 LIMIT, "host h0 never held every slot; see %s", hosts[0].log);
    cr_assert_eq(kill(hosts[0].pid, SIGKILL), 0);
    waitpid(hosts[0].pid, NULL, 0);
    hosts[0].pid = 0;
    add_tasks("short", 6, "50");
    start_host(1, 2, LEASE);
    cr_assert(test_wait_until(done_within_limit, &want, TEST_EVENT_MS * 2),
              "%lld of %lld tasks done; see %s", results(), want, hosts[1].log);
    cr_expect_eq(test_redis_int(rc, "ZCARD wharf:{overlap}:dead"), 0);
    cr_expect_eq(test_redis_int(rc, "ZCARD wharf:{overlap}:running"), 0,
                 "slots not given back");
}
