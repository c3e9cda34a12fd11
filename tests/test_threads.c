/* A worker with threads: 64 tasks in flight in one worker process, and
 * what happens to them when one crashes, when one overruns its timeout
 * and ignores the cancel, and when the host stops or reloads. Tasks are
 * held in flight by the chaos plugin's wait:GATE until the test creates
 * GATE, so "in flight" never depends on how fast a loaded machine is. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "host_process.h"
#include "redis_server.h"

#define IN_FLIGHT 64

static test_redis redis;
static test_host host;
static redisContext *rc;
static char gate[300];

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
 * type name, with a timeout of 1 s); each task has one attempt, so any
 * charge is final and visible. */
static void start_host(const char *test)
{
    char chaos[64];

    snprintf(gate, sizeof(gate), "%s/%s.gate", redis.dir, test);
    unlink(gate);
    snprintf(chaos, sizeof(chaos), "types = chaos, slow\nthreads = %d\n",
             IN_FLIGHT);
    test_host_up(&host, &redis,
                 &(test_host_opts){.host_keys = "workers = 1\n",
                                   .log_level = "info",
                                   .chaos_keys = chaos,
                                   .extra = "[type.chaos]\nmax_attempts = 1\n"
                                            "[type.slow]\ntimeout = 1s\n"
                                            "max_attempts = 1\n"},
                 rc);
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
              "%lld of %lld results; see %s", results("chaos"), want,
              host.log);
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
    long long when = test_wait_int(rc, 1, TEST_EVENT_MS,
                                   "ZCARD wharf:{%s}:dead", type);

    cr_assert_eq(when, 1, "%s:%s never died; see %s", type, id, host.log);
    r = test_redis_command(rc, "HGET wharf:{%s}:dead:%s error", type, id);
    cr_assert(r->type == REDIS_REPLY_STRING, "%s:%s has no error field", type,
              id);
    cr_expect(strstr(r->str, why) != NULL, "%s:%s died of '%s', not '%s'",
              type, id, r->str, why);
    freeReplyObject(r);
}

static const char *const given_back[] = {"task given back unrun", NULL};

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
