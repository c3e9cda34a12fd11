/* The rate parts of begin.lua, finish.lua and limit_wake.lua on their
 * own against a private redis-server, called with hand-made keys and
 * arguments as their headers state: a turn reserved once and honoured
 * without a second check, a value's slots counted by live holders, a
 * keyed waiter parked apart and woken by limit_wake only once it has
 * waited. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "lua_scripts.h"
#include "redis_server.h"
#include "script.h"

#define TRACE "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
#define ARGS_MAX 64
#define PARK_AT 4503599627370496LL
#define PARK_KEYED (PARK_AT + 2251799813685248LL)

static test_redis redis;
static redisContext *rc;

static void start(void)
{
    test_redis_start(&redis, 0);
    rc = test_redis_connect(&redis);
}

static void stop(void)
{
    if (rc)
        redisFree(rc);
    test_redis_stop(&redis);
}

TestSuite(rate_scripts, .init = start, .fini = stop, .timeout = 60);

/* Runs s with numkeys keys and the rest of the NULL-terminated strings as
 * its arguments; an error reply fails the test. */
static redisReply *run(const script *s, int numkeys, ...)
{
    const char *argv[ARGS_MAX];
    int argc = 0;
    redisReply *r;
    va_list ap;

    va_start(ap, numkeys);
    for (const char *a; (a = va_arg(ap, const char *)) != NULL;) {
        cr_assert(argc < ARGS_MAX);
        argv[argc++] = a;
    }
    va_end(ap);
    r = script_run(rc, s, numkeys, argc, argv, NULL);
    cr_assert(r != NULL, "%s: %s", s->name, rc->errstr);
    cr_assert(r->type != REDIS_REPLY_ERROR, "%s: %s", s->name, r->str);
    return r;
}

static long long now_ms(void)
{
    redisReply *r = test_redis_command(rc, "TIME");
    long long ms =
        atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;

    freeReplyObject(r);
    return ms;
}

static long long score(const char *key, const char *member)
{
    redisReply *r = test_redis_command(rc, "ZSCORE %s %s", key, member);
    long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;

    freeReplyObject(r);
    return v;
}

/* One start a minute, a burst of 2: a and b start, c is given the turn a
 * minute on (nothing drawn for it), and c's next begin starts it on its
 * reservation without a second check; d then waits two minutes (a wait
 * is rounded up to the ms: one more than the turn less a whole ms). */
Test(rate_scripts, begin_reserves_a_turn_once_and_honours_it)
{
    redisReply *r;
    long long now, after, turn;

    freeReplyObject(test_redis_command(rc, "FLUSHALL"));
    now = now_ms();
    r = run(&script_begin, 16, "w:{t}:fence", "w:{t}:entries", "w:{t}:paused",
            "w:{t}:running", "w:{t}:result:a", "w:{t}:result:b",
            "w:{t}:result:c", "w:{t}:cancel:a", "w:{t}:cancel:b",
            "w:{t}:cancel:c", "w:{t}:lock:a", "w:{t}:lock:b", "w:{t}:lock:c",
            "w:{t}:rate", "w:{t}:rate", "w:{t}:rate", "60000",
            "00112233aabbccdd", "13", "0", "1", "60000", "2", "0", "1-1", "1-2",
            "1-3", NULL);
    cr_assert_eq(r->elements, 3);
    cr_expect_str_eq(r->element[0]->str, "1-00112233aabbccdd");
    cr_expect_str_eq(r->element[1]->str, "2-00112233aabbccdd");
    cr_assert_eq(r->element[2]->type, REDIS_REPLY_ARRAY);
    cr_expect(r->element[2]->element[0]->integer > 0 &&
                  r->element[2]->element[0]->integer <= 60001,
              "c waits %lld ms", r->element[2]->element[0]->integer);
    freeReplyObject(r);
    after = now_ms();
    turn = test_redis_int(rc, "HGET w:{t}:rate c");
    /* The script's clock was between now and after. */
    cr_expect(turn >= now + 60000 - 1 && turn <= after + 60000 + 1,
              "turn at now%+lld", turn - now);
    cr_expect_eq(test_redis_int(rc, "EXISTS w:{t}:lock:c"), 0);
    cr_expect_eq(test_redis_int(rc, "GET w:{t}:fence"), 2);

    r = run(&script_begin, 8, "w:{t}:fence", "w:{t}:entries", "w:{t}:paused",
            "w:{t}:running", "w:{t}:result:c", "w:{t}:cancel:c", "w:{t}:lock:c",
            "w:{t}:rate", "60000", "00112233aabbccdd", "13", "0", "1", "60000",
            "2", "0", "1-4", NULL);
    cr_assert_eq(r->element[0]->type, REDIS_REPLY_STRING,
                 "c was turned away twice");
    cr_expect_str_eq(r->element[0]->str, "3-00112233aabbccdd");
    freeReplyObject(r);
    cr_expect_eq(test_redis_int(rc, "HEXISTS w:{t}:rate c"), 0);

    r = run(&script_begin, 8, "w:{t}:fence", "w:{t}:entries", "w:{t}:paused",
            "w:{t}:running", "w:{t}:result:d", "w:{t}:cancel:d", "w:{t}:lock:d",
            "w:{t}:rate", "60000", "00112233aabbccdd", "13", "0", "1", "60000",
            "2", "0", "1-5", NULL);
    cr_assert_eq(r->element[0]->type, REDIS_REPLY_ARRAY);
    cr_expect(r->element[0]->element[0]->integer > 60000 &&
                  r->element[0]->element[0]->integer <= 120001,
              "d waits %lld ms", r->element[0]->element[0]->integer);
    freeReplyObject(r);
    cr_expect_gt(test_redis_int(rc, "PTTL w:{t}:rate"), 120000);
}

/* One slot per value: x and z (values A and B) start, y (A) is answered
 * -4; once x's task leaves entries (its finish) y starts, and x is no
 * longer a holder. */
Test(rate_scripts, begin_counts_a_value_slots_by_live_holders)
{
    redisReply *r;

    freeReplyObject(test_redis_command(rc, "FLUSHALL"));
    r = run(&script_begin, 16, "w:{t}:fence", "w:{t}:entries", "w:{t}:paused",
            "w:{t}:running", "w:{t}:result:x", "w:{t}:result:y",
            "w:{t}:result:z", "w:{t}:cancel:x", "w:{t}:cancel:y",
            "w:{t}:cancel:z", "w:{t}:lock:x", "w:{t}:lock:y", "w:{t}:lock:z",
            "w:{t}:slots:A", "w:{t}:slots:A", "w:{t}:slots:B", "60000",
            "00112233aabbccdd", "13", "1", "0", "0", "1", "90000", "1-1", "1-2",
            "1-3", NULL);
    cr_assert_eq(r->elements, 3);
    cr_expect_eq(r->element[0]->type, REDIS_REPLY_STRING);
    cr_expect_eq(r->element[1]->type, REDIS_REPLY_INTEGER);
    cr_expect_eq(r->element[1]->integer, -4);
    cr_expect_eq(r->element[2]->type, REDIS_REPLY_STRING);
    freeReplyObject(r);
    cr_expect_eq(test_redis_int(rc, "HLEN w:{t}:slots:A"), 1);
    cr_expect_eq(test_redis_int(rc, "HEXISTS w:{t}:slots:A x"), 1);
    cr_expect_gt(test_redis_int(rc, "PTTL w:{t}:slots:A"), 60000);
    cr_expect_eq(test_redis_int(rc, "ZCARD w:{t}:running"), 0,
                 "a keyed slot went into the type's running set");

    /* x is still running: y is turned away again. */
    r = run(&script_begin, 8, "w:{t}:fence", "w:{t}:entries", "w:{t}:paused",
            "w:{t}:running", "w:{t}:result:y", "w:{t}:cancel:y", "w:{t}:lock:y",
            "w:{t}:slots:A", "60000", "00112233aabbccdd", "13", "1", "0", "0",
            "1", "90000", "1-2", NULL);
    cr_expect_eq(r->element[0]->integer, -4);
    freeReplyObject(r);
    /* x's finish takes it out of entries: its slot is free. */
    freeReplyObject(test_redis_command(rc, "HDEL w:{t}:entries x"));
    r = run(&script_begin, 8, "w:{t}:fence", "w:{t}:entries", "w:{t}:paused",
            "w:{t}:running", "w:{t}:result:y", "w:{t}:cancel:y", "w:{t}:lock:y",
            "w:{t}:slots:A", "60000", "00112233aabbccdd", "13", "1", "0", "0",
            "1", "90000", "1-2", NULL);
    cr_expect_eq(r->element[0]->type, REDIS_REPLY_STRING);
    freeReplyObject(r);
    cr_expect_eq(test_redis_int(rc, "HEXISTS w:{t}:slots:A x"), 0);
    cr_expect_eq(test_redis_int(rc, "HEXISTS w:{t}:slots:A y"), 1);
}

/* A task parked for a keyed slot (-2) waits 2^51 further on and its park
 * wakes nobody; one parked for a type's slot (-1) wakes the oldest. */
Test(rate_scripts, finish_parks_a_keyed_waiter_apart_and_wakes_none)
{
    redisReply *r;
    char entry[64];
    long long now = now_ms();

    freeReplyObject(test_redis_command(rc, "FLUSHALL"));
    freeReplyObject(
        test_redis_command(rc, "XGROUP CREATE w:{t}:stream wharf 0 MKSTREAM"));
    r = test_redis_command(rc,
                           "XADD w:{t}:stream * id k1 type t payload p "
                           "attempt 1 enqueued_at 1700000000000 trace %s",
                           TRACE);
    snprintf(entry, sizeof(entry), "%s", r->str);
    freeReplyObject(r);
    freeReplyObject(test_redis_command(
        rc, "XREADGROUP GROUP wharf c1 COUNT 10 STREAMS w:{t}:stream >"));
    freeReplyObject(test_redis_command(rc, "ZADD w:{t}:delayed %lld old",
                                       PARK_KEYED + now - 5000));
    r = run(&script_finish, 10, "w:{t}:stream", "w:{t}:delayed", "w:{t}:dead",
            "w:{t}:entries", "w:{t}:running", "w:{t}:lock:k1", "w:{t}:task:k1",
            "w:{t}:cancel:k1", "w:{t}:children:k1", "w:{t}:outbox", "wharf",
            "c1", "300000", "86400000", "t", "", "r", "13", "1", entry, "",
            "k1", "p", "1", "1700000000000", TRACE,
            "waiting for a free slot of its limit_key", "-2", NULL);
    cr_assert_str_eq(r->element[0]->str, "k");
    freeReplyObject(r);
    cr_expect_geq(score("w:{t}:delayed", "k1"), PARK_KEYED + now);
    cr_expect_eq(score("w:{t}:delayed", "old"), PARK_KEYED + now - 5000,
                 "a keyed park woke a waiter");

    /* limit_wake: the one that waited over a second is woken, k1 not. */
    r = run(&script_limit_wake, 2, "w:{t}:running", "w:{t}:delayed", "1", NULL);
    cr_assert_eq(r->elements, 2);
    cr_expect_eq(r->element[1]->integer, 1);
    freeReplyObject(r);
    cr_expect_lt(score("w:{t}:delayed", "old"), PARK_AT, "old not woken");
    cr_expect_geq(score("w:{t}:delayed", "k1"), PARK_KEYED + now);
}

/* limit_wake wakes unkeyed waiters only by the free slots of running. */
Test(rate_scripts, limit_wake_counts_only_a_type_slots_for_its_waiters)
{
    redisReply *r;
    long long now = now_ms();

    freeReplyObject(test_redis_command(rc, "FLUSHALL"));
    freeReplyObject(
        test_redis_command(rc, "ZADD w:{t}:running %lld s1", now + 60000));
    freeReplyObject(test_redis_command(rc, "ZADD w:{t}:delayed %lld w1",
                                       PARK_AT + now - 5000));
    r = run(&script_limit_wake, 2, "w:{t}:running", "w:{t}:delayed", "1", NULL);
    cr_expect_eq(r->element[0]->integer, 1);
    cr_expect_eq(r->element[1]->integer, 0, "woke a task with no slot free");
    freeReplyObject(r);
    r = run(&script_limit_wake, 2, "w:{t}:running", "w:{t}:delayed", "2", NULL);
    cr_expect_eq(r->element[1]->integer, 1);
    freeReplyObject(r);
    cr_expect_lt(score("w:{t}:delayed", "w1"), PARK_AT);
}
