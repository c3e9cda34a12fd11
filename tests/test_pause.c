/* wharf pause and resume with two real hosts on one Redis: once a pause
 * is visible no task of the type begins on any host (begin draws no
 * fence), running tasks finish, the waiting ones are not claimed,
 * enqueues still succeed, and a resume (or the end of a --for) drains
 * the backlog with every task run once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "host_process.h"
#include "redis_server.h"
#include "wharf_cli.h"

#define wharf(...)                                                             \
    test_cli(redis.url, redis.dir, (const char *const[]){__VA_ARGS__, NULL})

/* Tasks of the backlog; each sleeps a little so a pause finds some
 * running and most waiting. */
#define BACKLOG 60
/* How long a test lets time pass to show that nothing starts: more than
 * a second of figures (when the supervisors publish the pause) and the
 * workers' own hold of a pause a begin found (3 s). */
#define QUIET_MS 4000

/* Each worker holds one task at a time, so the fence (drawn at begin)
 * counts the tasks begun, not whole batches claimed: with the default
 * prefetch of 16 the four workers begin the whole backlog at once. */
#define ONE_AT_A_TIME "[type.chaos]\nprefetch = 1\n"

static test_redis redis;
static test_host host_a, host_b;
static redisContext *rc;

static void start_redis(void)
{
    test_suite_up(&redis, 0, &rc);
}

static void stop_all(void)
{
    test_suite_down(&redis, &rc, (test_host *const[]){&host_a, &host_b, NULL});
}

TestSuite(pause, .init = start_redis, .fini = stop_all, .timeout = 240);

static void start_hosts(void)
{
    test_host_up(&host_a, &redis,
                 &(test_host_opts){.host_keys = "workers = 2\ninstance = a\n",
                                   .log_level = "info",
                                   .extra = ONE_AT_A_TIME},
                 rc);
    test_host_up(&host_b, &redis,
                 &(test_host_opts){.host_keys = "workers = 2\ninstance = b\n",
                                   .log_level = "info",
                                   .extra = ONE_AT_A_TIME},
                 rc);
}

static void add_backlog(const char *payload)
{
    for (int i = 0; i < BACKLOG; i++) {
        char id[16];
        snprintf(id, sizeof(id), "t%d", i);
        test_add_entry(rc, "chaos", id, payload);
    }
}

static long long fence(void)
{
    return test_redis_int(rc, "GET wharf:{chaos}:fence");
}

static bool fence_reached(void *want)
{
    return fence() >= *(long long *)want;
}

static bool nothing_running(void *arg)
{
    redisReply *r =
        test_redis_command(rc, "XPENDING wharf:{chaos}:stream wharf");
    bool none = r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
                r->element[0]->type == REDIS_REPLY_INTEGER &&
                r->element[0]->integer == 0;
    (void)arg;
    freeReplyObject(r);
    return none;
}

/* Tasks the hosts claimed and sent back because the type was paused
 * (each a log line "outcome":"paused"): the claim / un-claim loop a
 * pause must not turn into. */
static int sent_back(void)
{
    static const char *const parts[] = {"\"outcome\":\"paused\"", NULL};

    return test_host_log_count(&host_a, parts) +
           test_host_log_count(&host_b, parts);
}

/* Runs of id on both hosts (the chaos runs files). */
static int runs_of(const char *id)
{
    return test_host_runs(&host_a, id, 0) + test_host_runs(&host_b, id, 0);
}

/* True once at least *want tasks of chaos have a result. */
static bool all_done(void *want)
{
    return test_redis_keys(rc, "wharf:{chaos}:result:*") >= *(long long *)want;
}

/* After the pause is visible nothing begins, on either host, and once
 * the hosts know of it none of its tasks is claimed; after the
 * resume every task of the backlog, and one enqueued during the pause,
 * runs exactly once. */
Test(pause, no_start_after_pause_and_resume_drains)
{
    long long some = 4, paused_fence, all = BACKLOG + 1;
    int back;
    const test_cli_run *run;

    start_hosts();
    add_backlog("sleep:300");
    cr_assert(test_wait_until(fence_reached, &some, TEST_EVENT_MS),
              "no task began (fence %lld)", fence());

    run = wharf("pause", "chaos");
    cr_assert_eq(run->status, 0, "pause: %s", run->err);
    cr_assert(strstr(run->out, "paused chaos (since "), "%s", run->out);
    paused_fence = fence();
    cr_assert_lt(paused_fence, BACKLOG, "the backlog ran out before the pause");

    /* Running tasks finish; what was claimed goes back unrun. */
    cr_assert(test_wait_until(nothing_running, NULL, TEST_EVENT_MS),
              "tasks still pending long after the pause");
    run = wharf("enqueue", "chaos", "ok", "--id", "during");
    cr_assert_eq(run->status, 0, "enqueue while paused: %s", run->err);
    test_sleep_ms(QUIET_MS);
    back = sent_back();
    test_sleep_ms(QUIET_MS);
    cr_assert_eq(fence(), paused_fence,
                 "%lld tasks began after the pause was visible",
                 fence() - paused_fence);
    cr_assert_eq(sent_back(), back,
                 "%d tasks claimed and sent back while the pause was known",
                 sent_back() - back);
    cr_assert_eq(runs_of("during"), 0);

    run = wharf("stats", "--json");
    cr_assert_eq(run->status, 0, "stats: %s", run->err);
    cr_assert(strstr(run->out, "\"chaos\": {") &&
                  strstr(run->out, "\"paused\": true, \"slots\": 0, "
                                   "\"served\": true"),
              "stats shows no pause:\n%s", run->out);

    run = wharf("resume", "chaos");
    cr_assert_eq(run->status, 0, "resume: %s", run->err);
    cr_assert(strstr(run->out, "resumed chaos (paused since "), "%s", run->out);
    cr_assert(test_wait_until(all_done, &all, TEST_EVENT_MS),
              "the backlog did not drain after the resume");
    for (int i = 0; i < BACKLOG; i++) {
        char id[16];
        snprintf(id, sizeof(id), "t%d", i);
        cr_expect_eq(runs_of(id), 1, "%s ran %d times", id, runs_of(id));
    }
    cr_expect_eq(runs_of("during"), 1);
    /* One fence per begin that took a lock: every task began once. */
    cr_expect_eq(fence(), all, "fence %lld for %lld tasks", fence(), all);
    cr_expect_eq(test_redis_int(rc, "ZCARD wharf:{chaos}:dead"), 0);
}

/* A pause --for ends by itself on every host; the tasks it held then run,
 * each once, without a resume. */
Test(pause, pause_for_ends_by_itself)
{
    long long all = BACKLOG;
    const test_cli_run *run;

    run = wharf("pause", "chaos", "--for", "3s");
    cr_assert_eq(run->status, 0, "pause: %s", run->err);
    cr_assert(strstr(run->out, " until ") && strstr(run->out, "(3s)"), "%s",
              run->out);
    cr_assert_gt(test_redis_int(rc, "PTTL wharf:{chaos}:paused"), 0);
    start_hosts();
    add_backlog("ok");
    cr_assert(test_wait_until(all_done, &all, TEST_EVENT_MS),
              "the backlog did not drain after the pause ran out");
    cr_expect_eq(test_redis_int(rc, "EXISTS wharf:{chaos}:paused"), 0);
    for (int i = 0; i < BACKLOG; i++) {
        char id[16];
        snprintf(id, sizeof(id), "t%d", i);
        cr_expect_eq(runs_of(id), 1, "%s ran %d times", id, runs_of(id));
    }
}

/* Pausing a paused type keeps its start and replaces its end; resuming a
 * type that runs says so and succeeds; bad input is refused with its
 * reason and exit code. */
Test(pause, commands_and_bad_input)
{
    const test_cli_run *run;
    char since[64];

    run = wharf("pause", "mail", "--for", "1h");
    cr_assert_eq(run->status, 0, "%s", run->err);
    /* No host ever served mail: a typo is told, the pause is set. */
    cr_assert(strstr(run->err, "no host serves 'mail'") &&
                  strstr(run->err, "paused all the same"),
              "%s", run->err);
    cr_assert(sscanf(run->out, "paused mail (since %63[^)])", since) == 1, "%s",
              run->out);
    run = wharf("pause", "mail");
    cr_assert_eq(run->status, 0, "%s", run->err);
    cr_assert(strstr(run->out, "mail was paused already (since ") &&
                  strstr(run->out, since) && strstr(run->out, "until resumed"),
              "%s", run->out);
    cr_assert_eq(test_redis_int(rc, "PTTL wharf:{mail}:paused"), -1,
                 "a pause without --for still ends");

    run = wharf("resume", "mail");
    cr_assert_eq(run->status, 0, "%s", run->err);
    cr_assert(strstr(run->out, "resumed mail (paused since "), "%s", run->out);
    run = wharf("resume", "mail");
    cr_assert_eq(run->status, 0, "%s", run->err);
    cr_assert_str_eq(run->out, "mail was not paused\n");

    run = wharf("pause", "mail", "--for", "0s");
    cr_assert_eq(run->status, 64);
    cr_assert(strstr(run->err, "--for '0s' is out of range"), "%s", run->err);
    run = wharf("pause", "mail", "--for", "soon");
    cr_assert_eq(run->status, 64);
    cr_assert(strstr(run->err, "--for 'soon' is not a duration"), "%s",
              run->err);
    run = wharf("pause", "no spaces");
    cr_assert_eq(run->status, 65, "%s", run->err);
    run = wharf("pause");
    cr_assert_eq(run->status, 64);
    cr_assert(strstr(run->err, "missing TYPE"), "%s", run->err);
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{mail}:paused"), 0);
}
