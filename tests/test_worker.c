/* The queue core end to end: a real wharfd with the chaos and echo plugins
 * against a private redis-server, tasks added to the streams by hand so
 * that every path (cached, locked, retry, dead, stale, bad entries) is
 * driven exactly. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include <wharf/client.h>

#include "host_process.h"
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

/* Starts wharfd with extra manifest text and waits until it serves and
 * has made the chaos stream's consumer group. */
static void start_host_redis(const char *redis_keys, const char *extra)
{
    test_host_up(&host, &redis,
                 &(test_host_opts){.redis_keys = redis_keys, .extra = extra},
                 rc);
}

static void start_host(const char *extra)
{
    start_host_redis(NULL, extra);
}

/* The result of a task as a string ("" if none). */
static char *result_of(const char *type, const char *id)
{
    redisReply *r =
        test_redis_command(rc, "GET wharf:{%s}:result:%s", type, id);
    char *s = strdup(r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
    return s;
}

/* A field of a task's record: its dead record dead:<id> if it died, else
 * its envelope task:<id> (waiting for a retry). */
static char *envelope_field(const char *type, const char *id, const char *f)
{
    const char *record =
        test_redis_int(rc, "EXISTS wharf:{%s}:dead:%s", type, id) ? "dead"
                                                                  : "task";
    redisReply *r =
        test_redis_command(rc, "HGET wharf:{%s}:%s:%s %s", type, record, id, f);
    char *s = strdup(r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
    return s;
}

/* Waits up to ms for at least want runs of id (any attempt); returns the
 * runs seen. */
static int wait_runs(const char *id, int want, int ms)
{
    return test_host_wait_runs(&host, id, want, ms);
}

static long long wait_result(const char *type, const char *id, int ms)
{
    return test_wait_int(rc, 1, ms, "EXISTS wharf:{%s}:result:%s", type, id);
}

/* True once id is in type's dead set (waiting up to ms). */
static bool wait_dead(const char *type, const char *id, int ms)
{
    return test_wait_int(rc, 1, ms, "EVAL %s 1 wharf:{%s}:dead %s",
                         "return redis.call('ZSCORE', KEYS[1], ARGV[1]) "
                         "and 1 or 0",
                         type, id) == 1;
}

TestSuite(worker, .init = start_redis, .fini = stop_all, .timeout = 60);

Test(worker, ok_task_stores_result_and_leaves_no_entry)
{
    start_host(NULL);
    test_add_entry(rc, "chaos", "t-ok", "ok");
    cr_assert_eq(wait_result("chaos", "t-ok", TEST_EVENT_MS), 1, "no result");
    char *res = result_of("chaos", "t-ok");
    cr_assert_str_eq(res, "ok attempt=1");
    free(res);
    cr_assert_eq(
        test_wait_int(rc, 0, TEST_EVENT_MS, "XLEN wharf:{chaos}:stream"), 0,
        "acked entry not deleted");
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{chaos}:lock:t-ok"), 0,
                 "lock not released");
    cr_assert(test_redis_int(rc, "PTTL wharf:{chaos}:result:t-ok") > 0,
              "result has no TTL");
    cr_assert_eq(test_host_runs(&host, "t-ok", 0), 1);
    cr_assert_eq(test_host_stop(&host), 0, "wharfd did not exit 0");
}

Test(worker, cached_result_is_not_run_again)
{
    start_host(NULL);
    test_add_entry(rc, "chaos", "t-cache", "ok");
    cr_assert_eq(wait_result("chaos", "t-cache", TEST_EVENT_MS), 1);
    /* The same id again (its dedupe marker bypassed by a raw XADD). */
    test_add_entry(rc, "chaos", "t-cache", "ok");
    cr_assert_eq(
        test_wait_int(rc, 0, TEST_EVENT_MS, "XLEN wharf:{chaos}:stream"), 0);
    /* Its finish is logged once it is over: a run would have come before. */
    cr_assert(
        test_host_wait_log(&host, TEST_EVENT_MS,
                           (const char *const[]){"\"task\":\"t-cache\"",
                                                 "\"outcome\":\"cached\"",
                                                 "\"cache\":\"hit\"", NULL}),
        "the second entry was not answered from the cache; see %s", host.log);
    cr_assert_eq(test_host_runs(&host, "t-cache", 0), 1,
                 "a cached task ran twice");
}

Test(worker, echo_result_is_the_payload)
{
    start_host("[plugin.echo]\npath = echo.so\n");
    redisReply *r = test_redis_command(
        rc,
        "XADD wharf:{echo}:stream * id e1 type echo payload %b attempt 1 "
        "enqueued_at 1 trace "
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "a\0b\nc", (size_t)5);
    freeReplyObject(r);
    cr_assert_eq(wait_result("echo", "e1", TEST_EVENT_MS), 1);
    r = test_redis_command(rc, "GET wharf:{echo}:result:e1");
    cr_assert_eq(r->len, 5);
    cr_assert(memcmp(r->str, "a\0b\nc", 5) == 0, "binary payload changed");
    freeReplyObject(r);
}

Test(worker, retries_until_success_with_attempts_visible)
{
    start_host("[defaults]\nbackoff_base = 50ms\njitter = 0%\n");
    test_add_entry(rc, "chaos", "t-fail2", "fail:2");
    cr_assert_eq(wait_result("chaos", "t-fail2", TEST_EVENT_MS), 1);
    char *res = result_of("chaos", "t-fail2");
    cr_assert_str_eq(res, "ok attempt=3");
    free(res);
    cr_assert_eq(test_host_runs(&host, "t-fail2", 1), 1);
    cr_assert_eq(test_host_runs(&host, "t-fail2", 2), 1);
    cr_assert_eq(test_host_runs(&host, "t-fail2", 3), 1);
    cr_assert_eq(test_host_runs(&host, "t-fail2", 0), 3);
    /* Nothing is left behind once it succeeded. */
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{chaos}:task:t-fail2"), 0);
    cr_assert_eq(test_redis_int(rc, "ZCARD wharf:{chaos}:delayed"), 0);
    cr_assert(test_host_log_has(&host, "\"task\":\"t-fail2\"",
                                "\"outcome\":\"retry\"",
                                "fail:2: attempt 1 fails", NULL));
}

/* One look at t-back, due at *(long long *)arg: Redis's clock, whether
 * the task is still delayed and whether it has a result, read in one
 * script, at one instant, on the clock the promotion itself reads.
 * Asserts that before it is due it is still delayed and has not run;
 * true once it has its result. */
static bool delayed_until_due(void *arg)
{
    static const char *look =
        "local t = redis.call('TIME') "
        "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) "
        "return {now, redis.call('ZSCORE', KEYS[1], ARGV[1]) and 1 or 0, "
        "redis.call('EXISTS', KEYS[2])}";
    long long due = *(const long long *)arg;
    redisReply *r = test_redis_command(
        rc,
        "EVAL %s 2 wharf:{chaos}:delayed wharf:{chaos}:result:t-back t-back",
        look);

    cr_assert(r->type == REDIS_REPLY_ARRAY && r->elements == 3);
    long long now = r->element[0]->integer;
    bool waiting = r->element[1]->integer == 1;
    bool done = r->element[2]->integer == 1;
    freeReplyObject(r);
    if (now < due)
        cr_assert(waiting && !done,
                  "left the delayed set %lld ms before its backoff was over",
                  due - now);
    return done;
}

/* Delayed task id's failed_at and due time, both Redis's, read with its
 * envelope in one script (so at one instant, while it still waits); its
 * envelope must keep attempt+1 (2). */
static void delayed_times(const char *id, long long *failed_at,
                          long long *due)
{
    redisReply *r = test_redis_command(
        rc, "EVAL %s 2 wharf:{chaos}:task:%s wharf:{chaos}:delayed %s",
        "return {redis.call('HGET', KEYS[1], 'attempt'), "
        "redis.call('HGET', KEYS[1], 'failed_at'), "
        "redis.call('ZSCORE', KEYS[2], ARGV[1])}",
        id, id);

    cr_assert(r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
                  r->element[0]->type == REDIS_REPLY_STRING &&
                  r->element[1]->type == REDIS_REPLY_STRING &&
                  r->element[2]->type == REDIS_REPLY_STRING,
              "%s was promoted before it could be read; see %s", id, host.log);
    cr_assert_str_eq(r->element[0]->str, "2",
                     "the delayed envelope keeps attempt+1");
    *failed_at = atoll(r->element[1]->str);
    *due = atoll(r->element[2]->str);
    freeReplyObject(r);
}

/* How long after it failed delayed task id is due (delayed_times). */
static long long delayed_by(const char *id)
{
    long long failed_at, due;

    delayed_times(id, &failed_at, &due);
    return due - failed_at;
}

Test(worker, retry_waits_for_its_backoff)
{
    /* linear, no jitter: attempt 1 fails -> due 3 s after it failed. The
     * backoff is long so that this test sees the retry wait in the delayed
     * set however slow the machine; what it checks does not depend on how
     * soon it looks. */
    start_host("[defaults]\nbackoff_base = 3s\njitter = 0%\n");
    test_add_entry(rc, "chaos", "t-back", "fail:1");
    cr_assert_eq(
        test_wait_int(rc, 1, TEST_EVENT_MS, "ZCARD wharf:{chaos}:delayed"), 1,
        "the failed task was never delayed; see %s", host.log);
    /* Due exactly the backoff after it failed, both times Redis's. */
    long long failed_at, due;
    delayed_times("t-back", &failed_at, &due);
    cr_assert_eq(due - failed_at, 3000, "due %lld, failed at %lld", due,
                 failed_at);
    /* Then it must not leave the delayed set, nor run, before it is due
     * (delayed_until_due's looks). A loaded machine only makes a look
     * come later, which this cannot mistake for an early run. */
    cr_assert(test_wait_until(delayed_until_due, &due, TEST_EVENT_MS),
              "the retry never ran; see %s", host.log);
    char *res = result_of("chaos", "t-back");
    cr_assert_str_eq(res, "ok attempt=2");
    free(res);
}

/* wharf_retry_in sets the attempt's delay in place of the backoff (3 s
 * here), without jitter, capped by max_retry_delay. The delays are long
 * so the tasks still wait when they are read, however slow the machine. */
Test(worker, retry_in_replaces_the_backoff_up_to_max_retry_delay)
{
    start_host("[defaults]\nbackoff_base = 3s\njitter = 50%\n"
               "[type.chaos]\nmax_retry_delay = 40s\n");
    test_add_entry(rc, "chaos", "t-later", "later:25000");
    test_add_entry(rc, "chaos", "t-capped", "later:90000");
    cr_assert_eq(
        test_wait_int(rc, 2, TEST_EVENT_MS, "ZCARD wharf:{chaos}:delayed"), 2,
        "the tasks were never delayed; see %s", host.log);
    cr_assert_eq(delayed_by("t-later"), 25000);
    cr_assert_eq(delayed_by("t-capped"), 40000);
    cr_assert(test_host_log_has(&host, "\"task\":\"t-later\"",
                                "\"outcome\":\"retry\"",
                                "later:25000: asked to come back in 25000 ms",
                                NULL));
}

Test(worker, fatal_goes_to_dead_set_with_reason)
{
    start_host(NULL);
    test_add_entry(rc, "chaos", "t-fatal", "fatal");
    cr_assert(wait_dead("chaos", "t-fatal", TEST_EVENT_MS), "not dead");
    char *err = envelope_field("chaos", "t-fatal", "error");
    cr_assert_str_eq(err, "fatal: asked to fail for good");
    free(err);
    char *attempt = envelope_field("chaos", "t-fatal", "attempt");
    cr_assert_str_eq(attempt, "1");
    free(attempt);
    char *payload = envelope_field("chaos", "t-fatal", "payload");
    cr_assert_str_eq(payload, "fatal");
    free(payload);
    cr_assert(test_redis_int(rc, "PTTL wharf:{chaos}:dead:t-fatal") > 0,
              "dead envelope has no TTL (dead_ttl)");
    cr_assert_eq(test_host_runs(&host, "t-fatal", 0), 1, "FAIL was retried");
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{chaos}:lock:t-fatal"), 0);
}

Test(worker, exhausted_retries_go_to_dead_set)
{
    start_host("[type.chaos]\nmax_attempts = 3\nbackoff_base = 10ms\n");
    test_add_entry(rc, "chaos", "t-exh", "fail:100");
    cr_assert(wait_dead("chaos", "t-exh", TEST_EVENT_MS), "not dead");
    cr_assert_eq(test_host_runs(&host, "t-exh", 0), 3);
    char *err = envelope_field("chaos", "t-exh", "error");
    cr_assert_str_eq(err, "fail:100: attempt 3 fails");
    free(err);
    char *attempt = envelope_field("chaos", "t-exh", "attempt");
    cr_assert_str_eq(attempt, "3");
    free(attempt);
}

Test(worker, locked_task_is_rescheduled_not_run)
{
    start_host("[defaults]\nlock_retry = 200ms\n");
    /* Another run holds the lock of this id, until this test lets it go
     * (a TTL could run out before wharfd even looked, on a slow machine). */
    freeReplyObject(
        test_redis_command(rc, "SET wharf:{chaos}:lock:t-locked 999"));
    test_add_entry(rc, "chaos", "t-locked", "ok");
    cr_assert_eq(
        test_wait_int(rc, 1, TEST_EVENT_MS, "ZCARD wharf:{chaos}:delayed"), 1,
        "locked task was not rescheduled");
    char *attempt = envelope_field("chaos", "t-locked", "attempt");
    cr_assert_str_eq(attempt, "1", "a locked reschedule spent an attempt");
    free(attempt);
    cr_assert_eq(test_host_runs(&host, "t-locked", 0), 0,
                 "ran while another run held the lock");
    /* Once the other holder's lock is gone, it runs, still attempt 1. */
    freeReplyObject(test_redis_command(rc, "DEL wharf:{chaos}:lock:t-locked"));
    cr_assert_eq(wait_result("chaos", "t-locked", TEST_EVENT_MS), 1);
    char *res = result_of("chaos", "t-locked");
    cr_assert_str_eq(res, "ok attempt=1");
    free(res);
    cr_assert(test_host_log_has(&host, "\"task\":\"t-locked\"",
                                "\"outcome\":\"locked\"", NULL));
}

Test(worker, stale_run_writes_nothing)
{
    char fifo[320], payload[340];

    start_host(NULL);
    /* Held by a fifo, not a sleep: it is still running when it is taken
     * over, however slow the machine, and ends when fed. */
    snprintf(fifo, sizeof(fifo), "%s/stale.fifo", host.dir);
    test_fifo_make(fifo);
    snprintf(payload, sizeof(payload), "read:%s", fifo);
    test_add_entry(rc, "chaos", "t-stale", payload);
    /* Wait until its plugin runs, then take it over. */
    cr_assert_eq(wait_runs("t-stale", 1, TEST_EVENT_MS), 1, "never started");
    redisReply *p =
        test_redis_command(rc, "XPENDING wharf:{chaos}:stream wharf - + 10");
    cr_assert_eq(p->type, REDIS_REPLY_ARRAY);
    cr_assert_eq(p->elements, 1);
    char entry[64];
    snprintf(entry, sizeof(entry), "%s", p->element[0]->element[0]->str);
    freeReplyObject(p);
    freeReplyObject(test_redis_command(
        rc, "XCLAIM wharf:{chaos}:stream wharf other-host 0 %s", entry));
    /* The late run finishes and must write nothing. */
    cr_assert(test_fifo_feed(fifo, TEST_EVENT_MS), "the run was not reading");
    cr_assert(test_host_wait_log(&host, TEST_EVENT_MS,
                                 (const char *const[]){"\"task\":\"t-stale\"",
                                                       "\"outcome\":\"stale\"",
                                                       NULL}),
              "the late run was not found stale; see %s", host.log);
    cr_assert_eq(test_host_runs(&host, "t-stale", 1), 1);
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{chaos}:result:t-stale"), 0,
                 "a stale run stored a result");
    cr_assert_eq(test_redis_int(rc, "XLEN wharf:{chaos}:stream"), 1,
                 "a stale run deleted the entry");
    p = test_redis_command(rc, "XPENDING wharf:{chaos}:stream wharf - + 10 "
                               "other-host");
    cr_assert_eq(p->elements, 1, "the entry is no longer the other's");
    freeReplyObject(p);
}

/* XADDs an entry whose fields are given as one space-separated string. */
static void add_fields(const char *fields)
{
    const char *argv[32] = {"XADD", "wharf:{chaos}:stream", "*"};
    char copy[512];
    int argc = 3;

    snprintf(copy, sizeof(copy), "%s", fields);
    for (char *tok = strtok(copy, " "); tok && argc < 32;
         tok = strtok(NULL, " "))
        argv[argc++] = tok;
    redisReply *r = redisCommandArgv(rc, argc, argv, NULL);
    cr_assert(r && r->type == REDIS_REPLY_STRING, "XADD %s failed", fields);
    freeReplyObject(r);
}

/* Each malformed entry ends in the dead set with a reason naming the
 * problem, and the queue goes on. */
Test(worker, bad_entries_are_dead_lettered_and_queue_goes_on)
{
    static const struct {
        const char *id;
        const char *fields;
        const char *reason;
    } cases[] = {
        {"b-noattempt",
         "id b-noattempt type chaos payload ok enqueued_at 1 "
         "trace 00-0af7651916cd43dd8448eb211c80319c-"
         "b7ad6b7169203331-01",
         "missing field 'attempt'"},
        {"b-attempt",
         "id b-attempt type chaos payload ok attempt zero "
         "enqueued_at 1 trace 00-0af7651916cd43dd8448eb211c80319c"
         "-b7ad6b7169203331-01",
         "attempt 'zero' is not a number"},
        {"b-type",
         "id b-type type echo payload ok attempt 1 enqueued_at 1 "
         "trace 00-0af7651916cd43dd8448eb211c80319c-"
         "b7ad6b7169203331-01",
         "type field 'echo' does not match its stream 'chaos'"},
        {"b-trace",
         "id b-trace type chaos payload ok attempt 1 enqueued_at 1 "
         "trace nope",
         "trace 'nope' is not a W3C traceparent"},
        {"b-time",
         "id b-time type chaos payload ok attempt 1 enqueued_at "
         "yesterday trace 00-0af7651916cd43dd8448eb211c80319c-"
         "b7ad6b7169203331-01",
         "enqueued_at 'yesterday' is not a time"},
        {"b-big",
         "id b-big type chaos payload 0123456789abcdefX attempt 1 "
         "enqueued_at 1 trace 00-0af7651916cd43dd8448eb211c80319c-"
         "b7ad6b7169203331-01",
         "payload of 17 bytes is over max_payload 16"},
    };
    size_t n = sizeof(cases) / sizeof(cases[0]);

    start_host("[type.chaos]\nmax_payload = 16B\n");
    for (size_t i = 0; i < n; i++)
        add_fields(cases[i].fields);
    /* No id field at all: dead-lettered under its entry id. */
    freeReplyObject(test_redis_command(
        rc, "XADD wharf:{chaos}:stream * type chaos payload ok"));
    test_add_entry(rc, "chaos", "good-after", "ok");

    cr_assert_eq(wait_result("chaos", "good-after", TEST_EVENT_MS), 1,
                 "the queue stopped after bad entries");
    for (size_t i = 0; i < n; i++) {
        cr_assert(wait_dead("chaos", cases[i].id, TEST_EVENT_MS), "%s not dead",
                  cases[i].id);
        char *err = envelope_field("chaos", cases[i].id, "error");
        cr_assert(strstr(err, cases[i].reason), "%s: reason '%s' lacks '%s'",
                  cases[i].id, err, cases[i].reason);
        free(err);
    }
    cr_assert_eq(test_redis_int(rc, "ZCARD wharf:{chaos}:dead"),
                 (long long)n + 1);
    cr_assert_eq(test_host_runs(&host, "b-type", 0), 0, "a bad entry ran");
    cr_assert_eq(
        test_wait_int(rc, 0, TEST_EVENT_MS, "XLEN wharf:{chaos}:stream"), 0);
}

/* After a mixed run every key is a queue structure or carries a TTL. */
Test(worker, retention_every_key_is_bounded)
{
    start_host("[defaults]\nbackoff_base = 10ms\nmax_attempts = 2\n"
               "[plugin.echo]\npath = echo.so\n");
    static const char *const payloads[] = {"ok",     "fail:1",   "fatal",
                                           "fail:9", "sleep:10", "big:1000"};
    char id[32];
    for (int i = 0; i < 60; i++) {
        snprintf(id, sizeof(id), "mix-%d", i);
        test_add_entry(rc, "chaos", id, payloads[i % 6]);
    }
    test_add_entry(rc, "echo", "e-1", "hello");
    /* 40 end with a result, 20 dead. */
    cr_assert_eq(
        test_wait_int(rc, 20, TEST_EVENT_MS, "ZCARD wharf:{chaos}:dead"), 20);
    for (int i = 0; i < 60; i++) {
        snprintf(id, sizeof(id), "mix-%d", i);
        if (i % 6 != 2 && i % 6 != 3)
            cr_assert_eq(wait_result("chaos", id, TEST_EVENT_MS), 1, "%s", id);
    }
    cr_assert_eq(test_redis_int(rc, "XLEN wharf:{chaos}:stream"), 0);
    cr_assert_eq(test_redis_int(rc, "ZCARD wharf:{chaos}:delayed"), 0);

    redisReply *keys = test_redis_command(rc, "KEYS *");
    /* A type's queue structures, of any served type: the key after
     * "wharf:{T}:" is one of these words. */
    static const char *const structures[] = {"stream", "dead", "fence",
                                             "policy", "delayed"};
    for (size_t i = 0; i < keys->elements; i++) {
        const char *k = keys->element[i]->str;
        const char *close = strstr(k, "}:");
        bool structure = strcmp(k, "wharf:types") == 0;
        for (size_t s = 0; close && strncmp(k, "wharf:{", 7) == 0 &&
                           s < sizeof(structures) / sizeof(*structures);
             s++)
            structure = structure || strcmp(close + 2, structures[s]) == 0;
        if (structure)
            continue;
        cr_assert(test_redis_int(rc, "PTTL %s", k) > 0,
                  "key %s is neither a queue structure nor has a TTL", k);
    }
    freeReplyObject(keys);
}

Test(worker, dead_set_is_capped_at_dead_max)
{
    start_host("[type.chaos]\ndead_max = 5\n");
    char id[32];
    for (int i = 0; i < 12; i++) {
        snprintf(id, sizeof(id), "cap-%02d", i);
        test_add_entry(rc, "chaos", id, "fatal");
    }
    /* All twelve have died once the stream is empty; the trim (every
     * second) then brings the set down to dead_max. */
    cr_assert_eq(
        test_wait_int(rc, 0, TEST_EVENT_MS, "XLEN wharf:{chaos}:stream"), 0);
    cr_assert_eq(
        test_wait_int(rc, 5, TEST_EVENT_MS, "ZCARD wharf:{chaos}:dead"), 5);
    /* The trimmed ones' records go with them; the kept ones' stay. Which
     * five are kept is the death order, not the enqueue order: with more
     * than one worker a slow batch (a loaded machine under ASan) can die
     * after a later one, so no id is named. */
    for (int i = 0; i < 12; i++) {
        snprintf(id, sizeof(id), "cap-%02d", i);
        long long kept =
            test_redis_int(rc, "ZSCORE wharf:{chaos}:dead %s", id) > 0;
        cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{chaos}:dead:%s", id),
                     kept, "%s: %s", id,
                     kept ? "kept without its record" : "trimmed, record left");
    }
    cr_assert_eq(test_redis_int(rc, "ZCARD wharf:{chaos}:dead"), 5);
}

Test(worker, refuses_an_evicting_redis)
{
    freeReplyObject(
        test_redis_command(rc, "CONFIG SET maxmemory-policy allkeys-lru"));
    test_host_manifest(&host, &redis, NULL);
    test_host_start(&host);
    int status = test_host_wait_exit(&host, TEST_EVENT_MS);
    cr_assert_neq(status, -1, "wharfd kept running on an evicting Redis");
    cr_assert_eq(status, 78);
    cr_assert(
        test_host_log_has(&host, "maxmemory-policy is 'allkeys-lru'", NULL));
}

Test(worker, allow_eviction_starts_anyway)
{
    freeReplyObject(
        test_redis_command(rc, "CONFIG SET maxmemory-policy allkeys-lru"));
    start_host_redis("allow_eviction = yes\n", NULL);
    test_add_entry(rc, "chaos", "t-evict", "ok");
    cr_assert_eq(wait_result("chaos", "t-evict", TEST_EVENT_MS), 1);
}

Test(worker, sigterm_finishes_the_running_task_and_exits_0)
{
    char fifo[320], payload[340];

    start_host(NULL);
    /* Held by a fifo until the stop has begun, so the stop surely lands
     * while it runs (a sleep could end first on a loaded machine). */
    snprintf(fifo, sizeof(fifo), "%s/term.fifo", host.dir);
    test_fifo_make(fifo);
    snprintf(payload, sizeof(payload), "read:%s", fifo);
    test_add_entry(rc, "chaos", "t-term", payload);
    /* The plugin has started (its runs line is written): a lock alone
     * only says begun, and a stop between begin and run rightly sends
     * the task back unrun. */
    cr_assert_eq(wait_runs("t-term", 1, TEST_EVENT_MS), 1, "never started");
    cr_assert_eq(kill(host.pid, SIGTERM), 0);
    cr_assert(test_host_wait_log(&host, TEST_EVENT_MS,
                                 (const char *const[]){"stopping: running "
                                                       "tasks may finish",
                                                       NULL}),
              "the stop was not seen; see %s", host.log);
    cr_assert(test_fifo_feed(fifo, TEST_EVENT_MS), "the run was not reading");
    cr_assert_eq(test_host_wait_exit(&host, TEST_EVENT_MS), 0);
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{chaos}:result:t-term"), 1,
                 "the running task was not finished before exit");
}

static bool outage_seen(void *unused)
{
    (void)unused;
    return test_host_log_has(&host, "redis", "reconnect", NULL) ||
           test_host_log_has(&host, "unreachable", NULL);
}

static bool chaos_group_made(void *unused)
{
    redisReply *r = redisCommand(rc, "XINFO GROUPS wharf:{chaos}:stream");
    bool made = r && r->type == REDIS_REPLY_ARRAY && r->elements > 0;

    (void)unused;
    freeReplyObject(r);
    return made;
}

Test(worker, survives_a_redis_restart)
{
    start_host(NULL);
    test_add_entry(rc, "chaos", "before", "ok");
    cr_assert_eq(wait_result("chaos", "before", TEST_EVENT_MS), 1);
    redisFree(rc);
    rc = NULL;
    test_redis_stop(&redis);
    /* Down until wharfd has seen it so, however long that takes. */
    cr_assert(test_wait_until(outage_seen, NULL, TEST_EVENT_MS),
              "the outage was not seen; see %s", host.log);
    test_redis_restart(&redis);
    rc = test_redis_connect(&redis);
    /* The server came back empty: wharfd makes its groups again. */
    cr_assert(test_wait_until(chaos_group_made, NULL, TEST_EVENT_MS),
              "wharfd never made its groups again; see %s", host.log);
    test_add_entry(rc, "chaos", "after", "ok");
    cr_assert_eq(wait_result("chaos", "after", TEST_EVENT_MS), 1,
                 "no work done after Redis came back");
}

Test(worker, delayed_enqueue_does_not_run_before_it_is_due)
{
    wharf_client *client = NULL;
    wharf_enqueue_reply reply;
    char err[256];

    start_host(NULL);
    cr_assert_eq(
        wharf_client_open(&client, redis.url, NULL, NULL, err, sizeof(err)),
        WHARF_CLIENT_OK, "%s", err);
    wharf_enqueue_opts task = {.type = "chaos",
                               .payload = "ok",
                               .payload_len = 2,
                               .id = "later",
                               .delay_ms = 700};
    /* Polled, not slept: a check after a fixed sleep would fail whenever
     * a loaded machine delays this process past the due time. Being
     * late is the only thing load can cause; running early is the bug. */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cr_assert_eq(wharf_enqueue(client, &task, &reply), WHARF_CLIENT_OK);
    cr_assert(wait_runs("later", 1, TEST_EVENT_MS) >= 1, "never ran");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long elapsed = (long)(t1.tv_sec - t0.tv_sec) * 1000 +
                   (t1.tv_nsec - t0.tv_nsec) / 1000000;
    cr_assert_geq(elapsed, 690, "ran %ld ms after a 700 ms delay", elapsed);
    cr_assert_eq(wait_result("chaos", "later", TEST_EVENT_MS), 1,
                 "never finished");
    wharf_client_close(client);
}

Test(worker, replayed_dead_task_runs_again)
{
    char cmd[512];

    start_host("[type.chaos]\nmax_attempts = 1\n");
    test_add_entry(rc, "chaos", "phoenix", "fail:1");
    cr_assert(wait_dead("chaos", "phoenix", TEST_EVENT_MS), "not dead");
    cr_assert_eq(test_host_runs(&host, "phoenix", 0), 1);
    snprintf(cmd, sizeof(cmd),
             "%s/wharf --redis %s dead replay chaos phoenix >/dev/null",
             WHARF_BINARY_DIR, redis.url);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    /* It runs again from attempt 1 (and, failing once more, dies again). */
    wait_runs("phoenix", 2, TEST_EVENT_MS);
    cr_assert_eq(test_host_runs(&host, "phoenix", 1), 2, "replay did not run");
    cr_assert(wait_dead("chaos", "phoenix", TEST_EVENT_MS), "not dead again");
}
