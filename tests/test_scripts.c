/* Each Lua script of sdk/lua on its own against a private redis-server:
 * called with hand-made keys and arguments, then the keys it wrote and its
 * reply are checked. The broker, client and CLI tests cover the callers;
 * these pin down what each script itself promises in its header. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "lua_scripts.h"
#include "redis_server.h"
#include "node_scripts.h"
#include "script.h"

#define TRACE "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
#define ARGS_MAX 64

static test_redis redis;
static redisContext *rc;

static void start(void)
{
    node_scripts_check();
    test_redis_start(&redis, 0);
    rc = test_redis_connect(&redis);
}

static void stop(void)
{
    if (rc)
        redisFree(rc);
    test_redis_stop(&redis);
}

TestSuite(scripts, .init = start, .fini = stop, .timeout = 60);

/* Runs s with numkeys keys and the arguments of ap (NULL-terminated):
 * the reply, error replies too. Never NULL: a connection error fails the
 * test. */
static redisReply *vrun(const script *s, int numkeys, va_list ap)
{
    const char *argv[ARGS_MAX];
    int argc = 0;
    redisReply *r;

    for (const char *a; (a = va_arg(ap, const char *)) != NULL;) {
        cr_assert(argc < ARGS_MAX);
        argv[argc++] = a;
    }
    r = script_run(rc, s, numkeys, argc, argv, NULL);
    cr_assert(r != NULL, "%s: %s", s->name, rc->errstr);
    return r;
}

/* Runs s with numkeys keys; the rest of the NULL-terminated strings are
 * its arguments. Never NULL: a connection error or an error reply fails
 * the test. */
static redisReply *run(const script *s, int numkeys, ...)
{
    redisReply *r;
    va_list ap;

    va_start(ap, numkeys);
    r = vrun(s, numkeys, ap);
    va_end(ap);
    cr_assert(r->type != REDIS_REPLY_ERROR, "%s: %s", s->name, r->str);
    return r;
}

/* Runs s as run does, expecting it to refuse: asserts the reply is an
 * error starting with "WRONGTYPE <key> holds a ", then frees it. */
static void run_refused(const char *key, const script *s, int numkeys, ...)
{
    char want[128];
    redisReply *r;
    va_list ap;

    va_start(ap, numkeys);
    r = vrun(s, numkeys, ap);
    va_end(ap);
    snprintf(want, sizeof(want), "WRONGTYPE %s holds a ", key);
    cr_assert_eq(r->type, REDIS_REPLY_ERROR, "%s: not refused", s->name);
    cr_assert(strncmp(r->str, want, strlen(want)) == 0, "%s: %s", s->name,
              r->str);
    freeReplyObject(r);
}

/* The number of keys in the database. */
static long long key_count(void)
{
    return test_redis_int(rc, "DBSIZE");
}

/* The string value of key, or "" (caller frees). */
static char *get(const char *key)
{
    redisReply *r = test_redis_command(rc, "GET %s", key);
    char *s = strdup(r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
    return s;
}

/* One field of a hash, or "" (caller frees). */
static char *hget(const char *key, const char *field)
{
    redisReply *r = test_redis_command(rc, "HGET %s %s", key, field);
    char *s = strdup(r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
    return s;
}

static void assert_str(const char *got_owned, const char *want)
{
    char *got = (char *)got_owned;
    cr_assert_str_eq(got, want);
    free(got);
}

/* Adds an entry of task id to stream t and reads it as consumer c: its
 * entry id (static). */
static const char *pending_entry(const char *id, const char *consumer)
{
    static char entry[64];
    redisReply *r;

    freeReplyObject(
        test_redis_command(rc, "XGROUP CREATE w:{t}:stream wharf 0 MKSTREAM"));
    r = test_redis_command(rc,
                           "XADD w:{t}:stream * id %s type t payload p "
                           "attempt 1 enqueued_at 1700000000000 trace %s",
                           id, TRACE);
    cr_assert_eq(r->type, REDIS_REPLY_STRING);
    snprintf(entry, sizeof(entry), "%s", r->str);
    freeReplyObject(r);
    freeReplyObject(test_redis_command(
        rc, "XREADGROUP GROUP wharf %s COUNT 100 STREAMS w:{t}:stream >",
        consumer));
    return entry;
}

Test(scripts, every_file_states_keys_argv_and_reply)
{
    for (size_t i = 0; node_scripts_all[i]; i++) {
        const char *src = node_scripts_all[i]->source;
        cr_assert(strncmp(src, "-- ", 3) == 0, "%s", node_scripts_all[i]->name);
        cr_assert(strstr(src, "-- KEYS:"), "%s", node_scripts_all[i]->name);
        cr_assert(strstr(src, "-- ARGV:"), "%s", node_scripts_all[i]->name);
        cr_assert(strstr(src, "-- Reply:"), "%s", node_scripts_all[i]->name);
    }
    /* The SHA1 computed here is the one the server computes. */
    char err[256];
    cr_assert_eq(script_load(rc, &script_finish, err, sizeof(err)), 0, "%s",
                 err);
    cr_assert_eq(script_load(rc, &script_enqueue, err, sizeof(err)), 0, "%s",
                 err);
}

Test(scripts, begin_answers_cached_locked_or_a_fresh_token)
{
    redisReply *r;

    freeReplyObject(test_redis_command(rc, "SET w:{t}:result:a done"));
    freeReplyObject(test_redis_command(rc, "SET w:{t}:lock:b 99"));
    freeReplyObject(test_redis_command(rc, "SET w:{t}:fence 41"));
    r = run(&script_begin, 13, "w:{t}:fence", "w:{t}:entries", "w:{t}:paused",
            "w:{t}:running", "w:{t}:result:a", "w:{t}:result:b",
            "w:{t}:result:c", "w:{t}:cancel:a", "w:{t}:cancel:b",
            "w:{t}:cancel:c", "w:{t}:lock:a", "w:{t}:lock:b", "w:{t}:lock:c",
            "60000", "00112233aabbccdd", "13", "0", "0", "0", "1", "0", "1-1", "1-2", "1-3", NULL);
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 3);
    cr_assert_eq(r->element[0]->type, REDIS_REPLY_INTEGER);
    cr_assert_eq(r->element[0]->integer, 0); /* cached */
    cr_assert_eq(r->element[1]->type, REDIS_REPLY_INTEGER);
    cr_assert_eq(r->element[1]->integer, -1); /* locked by another */
    cr_assert_eq(r->element[2]->type, REDIS_REPLY_STRING);
    cr_assert_str_eq(r->element[2]->str, "43-00112233aabbccdd");
    freeReplyObject(r);
    /* b and c each drew a token; only c's lock is ours. */
    assert_str(get("w:{t}:fence"), "43");
    assert_str(get("w:{t}:lock:b"), "99");
    assert_str(get("w:{t}:lock:c"), "43-00112233aabbccdd");
    cr_assert_eq(test_redis_int(rc, "EXISTS w:{t}:lock:a"), 0);
    long long ttl = test_redis_int(rc, "PTTL w:{t}:lock:c");
    cr_assert(ttl > 0 && ttl <= 60000, "%lld", ttl);
    /* c is marked begun in the index: "<entry> <ms>". */
    char *begun = hget("w:{t}:entries", "c");
    cr_assert(begun && strncmp(begun, "1-3 ", 4) == 0, "%s", begun);
    free(begun);
    cr_assert_eq(test_redis_int(rc, "HEXISTS w:{t}:entries b"), 0);
}

Test(scripts, begin_skips_a_cancelled_entry_only)
{
    redisReply *r;

    /* a's cancel names its entry; b's names an older entry of the id. */
    freeReplyObject(test_redis_command(rc, "SET w:{t}:cancel:a 1-1"));
    freeReplyObject(test_redis_command(rc, "SET w:{t}:cancel:b 0-9"));
    r = run(&script_begin, 10, "w:{t}:fence", "w:{t}:entries", "w:{t}:paused",
            "w:{t}:running", "w:{t}:result:a", "w:{t}:result:b",
            "w:{t}:cancel:a", "w:{t}:cancel:b", "w:{t}:lock:a", "w:{t}:lock:b",
            "60000", "00112233aabbccdd", "13", "0", "0", "0", "1", "0", "1-1", "1-2", NULL);
    cr_assert_eq(r->elements, 2);
    cr_assert_eq(r->element[0]->type, REDIS_REPLY_INTEGER);
    cr_assert_eq(r->element[0]->integer, -2);
    cr_assert_eq(r->element[1]->type, REDIS_REPLY_STRING);
    freeReplyObject(r);
    cr_assert_eq(test_redis_int(rc, "EXISTS w:{t}:lock:a"), 0);
    cr_assert_eq(test_redis_int(rc, "EXISTS w:{t}:lock:b"), 1);
}

/* While the type is paused begin answers -3 for every task and takes
 * nothing: no token drawn, no lock, nothing marked begun; once resumed
 * the same call begins them. */
Test(scripts, begin_takes_nothing_while_the_type_is_paused)
{
    redisReply *r;

    freeReplyObject(test_redis_command(rc, "SET w:{t}:fence 7"));
    freeReplyObject(test_redis_command(rc, "SET w:{t}:paused 1700000000000"));
    for (int resumed = 0; resumed < 2; resumed++) {
        r = run(&script_begin, 10, "w:{t}:fence", "w:{t}:entries",
                "w:{t}:paused", "w:{t}:running", "w:{t}:result:a",
                "w:{t}:result:b", "w:{t}:cancel:a", "w:{t}:cancel:b",
                "w:{t}:lock:a", "w:{t}:lock:b", "60000", "00112233aabbccdd",
                "13", "0", "0", "0", "1", "0", "1-1", "1-2", NULL);
        cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
        cr_assert_eq(r->elements, 2);
        for (size_t i = 0; i < 2; i++) {
            if (resumed) {
                cr_assert_eq(r->element[i]->type, REDIS_REPLY_STRING);
            } else {
                cr_assert_eq(r->element[i]->type, REDIS_REPLY_INTEGER);
                cr_assert_eq(r->element[i]->integer, -3);
            }
        }
        freeReplyObject(r);
        if (!resumed) {
            assert_str(get("w:{t}:fence"), "7");
            cr_assert_eq(test_redis_int(rc, "EXISTS w:{t}:lock:a w:{t}:lock:b"),
                         0);
            cr_assert_eq(test_redis_int(rc, "EXISTS w:{t}:entries"), 0);
            freeReplyObject(test_redis_command(rc, "DEL w:{t}:paused"));
        }
    }
    assert_str(get("w:{t}:fence"), "9");
}

/* pause.lua: a pause keeps its start when paused again, its end is
 * replaced, and a resume answers the start it ends. */
Test(scripts, pause_keeps_its_start_and_resume_ends_it)
{
    redisReply *r;
    long long since;

    r = run(&script_pause, 2, "w:{t}:paused", "w:{t}:policy", "pause", "60000",
            NULL);
    cr_assert_eq(r->elements, 4);
    cr_assert_str_eq(r->element[0]->str, "PAUSED");
    cr_assert_eq(r->element[3]->integer, 0, "no host served t");
    since = r->element[1]->integer;
    cr_assert_gt(since, 0);
    cr_assert_eq(r->element[2]->integer, 60000);
    freeReplyObject(r);
    r = run(&script_pause, 2, "w:{t}:paused", "w:{t}:policy", "pause", "0",
            NULL);
    cr_assert_str_eq(r->element[0]->str, "EXTENDED");
    cr_assert_eq(r->element[1]->integer, since);
    cr_assert_eq(r->element[2]->integer, -1);
    freeReplyObject(r);
    cr_assert_eq(test_redis_int(rc, "PTTL w:{t}:paused"), -1);
    r = run(&script_pause, 2, "w:{t}:paused", "w:{t}:policy", "resume", "0",
            NULL);
    cr_assert_str_eq(r->element[0]->str, "RESUMED");
    cr_assert_eq(r->element[1]->integer, since);
    freeReplyObject(r);
    r = run(&script_pause, 2, "w:{t}:paused", "w:{t}:policy", "resume", "0",
            NULL);
    cr_assert_str_eq(r->element[0]->str, "RUNNING");
    cr_assert_eq(r->element[1]->integer, 0);
    freeReplyObject(r);
    cr_assert_eq(test_redis_int(rc, "EXISTS w:{t}:paused"), 0);
}

Test(scripts, finish_writes_each_kind_and_nothing_of_a_stale_run)
{
    const char *e1, *e2, *e3, *e4;
    char entries[4][64];
    redisReply *r;

    e1 = pending_entry("ok1", "c1");
    snprintf(entries[0], 64, "%s", e1);
    e2 = pending_entry("re1", "c1");
    snprintf(entries[1], 64, "%s", e2);
    e3 = pending_entry("de1", "c1");
    snprintf(entries[2], 64, "%s", e3);
    e4 = pending_entry("st1", "c1");
    snprintf(entries[3], 64, "%s", e4);
    freeReplyObject(test_redis_command(rc, "SET w:{t}:lock:ok1 5"));
    freeReplyObject(test_redis_command(rc, "SET w:{t}:lock:re1 6"));
    freeReplyObject(test_redis_command(rc, "SET w:{t}:lock:de1 7"));
    /* st1's lock went to another run: its finish is stale. */
    freeReplyObject(test_redis_command(rc, "SET w:{t}:lock:st1 999"));
    freeReplyObject(test_redis_command(rc, "HSET w:{t}:entries ok1 %s re1 %s",
                                       entries[0], "0-1"));
    r = run(&script_finish, 22, "w:{t}:stream", "w:{t}:delayed", "w:{t}:dead",
            "w:{t}:entries", "w:{t}:running", "w:{t}:lock:ok1",
            "w:{t}:lock:re1", "w:{t}:lock:de1", "w:{t}:lock:st1",
            "w:{t}:result:ok1", "w:{t}:task:re1", "w:{t}:dead:de1",
            "w:{t}:result:st1", "w:{t}:cancel:ok1", "w:{t}:cancel:re1",
            "w:{t}:cancel:de1", "w:{t}:cancel:st1", "w:{t}:children:ok1",
            "w:{t}:children:re1", "w:{t}:children:de1",
            "w:{t}:children:st1", "w:{t}:outbox",
            /* ARGV */
            "wharf", "c1", "300000", "86400000", "t", "", "ordo", "13", "0",
            entries[0], entries[1], entries[2], entries[3], "5", "6", "7", "8",
            /* ok1 */ "the result",
            /* re1 */ "re1", "p", "2", "1700000000000", TRACE, "boom", "5000",
            /* de1 */ "de1", "p", "5", "1700000000000", TRACE, "gave up",
            /* st1 */ "late", NULL);
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
    cr_assert_str_eq(r->element[0]->str, "kkks");
    freeReplyObject(r);
    assert_str(get("w:{t}:result:ok1"), "the result");
    cr_assert_eq(test_redis_int(rc, "EXISTS w:{t}:result:st1"), 0);
    /* Retry: envelope with the next attempt, due in ~5 s. */
    assert_str(hget("w:{t}:task:re1", "attempt"), "2");
    assert_str(hget("w:{t}:task:re1", "error"), "boom");
    assert_str(hget("w:{t}:task:re1", "worker"), "c1");
    cr_assert(test_redis_int(rc, "ZSCORE w:{t}:delayed re1") > 1700000000000);
    /* Dead: its own record with a TTL, in the dead set. */
    assert_str(hget("w:{t}:dead:de1", "error"), "gave up");
    cr_assert(test_redis_int(rc, "PTTL w:{t}:dead:de1") > 0);
    cr_assert(test_redis_int(rc, "ZSCORE w:{t}:dead de1") > 0);
    /* Done entries are acked and deleted, their locks released; the stale
     * one stays pending and keeps the other run's lock. */
    cr_assert_eq(test_redis_int(rc, "XLEN w:{t}:stream"), 1);
    r = test_redis_command(rc, "XPENDING w:{t}:stream wharf");
    cr_assert_eq(r->element[0]->integer, 1);
    freeReplyObject(r);
    cr_assert_eq(test_redis_int(rc, "EXISTS w:{t}:lock:ok1 w:{t}:lock:re1 "
                                    "w:{t}:lock:de1"),
                 0);
    assert_str(get("w:{t}:lock:st1"), "999");
    /* ok1 left the index; re1's index names another entry: kept. */
    cr_assert_eq(test_redis_int(rc, "HEXISTS w:{t}:entries ok1"), 0);
    cr_assert_eq(test_redis_int(rc, "HEXISTS w:{t}:entries re1"), 1);
}

/* A score of the delayed set at or above this is a task waiting for a
 * concurrency slot (finish.lua's PARK_AT, 2^52 ms). */
#define PARK_AT 4503599627370496.0

static double score(const char *key, const char *member)
{
    redisReply *r = test_redis_command(rc, "ZSCORE %s %s", key, member);
    double v = r->type == REDIS_REPLY_STRING ? atof(r->str) : -1;
    freeReplyObject(r);
    return v;
}

/* With concurrency_limit 2, one slot held by a live run and one whose
 * end has passed: the stale slot is dropped, one task of three gets the
 * free slot, the others are answered -4 with no token drawn and no lock. */
Test(scripts, begin_takes_a_slot_per_run_up_to_the_limit)
{
    redisReply *r;

    freeReplyObject(test_redis_command(rc, "SET w:{t}:fence 10"));
    freeReplyObject(
        test_redis_command(rc, "ZADD w:{t}:running 99999999999999 %s 1 %s",
                           "x 9-live", "y 8-dead"));
    r = run(&script_begin, 13, "w:{t}:fence", "w:{t}:entries", "w:{t}:paused",
            "w:{t}:running", "w:{t}:result:a", "w:{t}:result:b",
            "w:{t}:result:c", "w:{t}:cancel:a", "w:{t}:cancel:b",
            "w:{t}:cancel:c", "w:{t}:lock:a", "w:{t}:lock:b", "w:{t}:lock:c",
            "60000", "00112233aabbccdd", "13", "2", "0", "0", "1", "0", "1-1", "1-2", "1-3", NULL);
    cr_assert_eq(r->elements, 3);
    cr_assert_eq(r->element[0]->type, REDIS_REPLY_STRING);
    cr_assert_str_eq(r->element[0]->str, "11-00112233aabbccdd");
    for (size_t i = 1; i < 3; i++) {
        cr_assert_eq(r->element[i]->type, REDIS_REPLY_INTEGER);
        cr_assert_eq(r->element[i]->integer, -4);
    }
    freeReplyObject(r);
    assert_str(get("w:{t}:fence"), "11");
    cr_assert_eq(test_redis_int(rc, "EXISTS w:{t}:lock:b w:{t}:lock:c"), 0);
    cr_assert_eq(test_redis_int(rc, "ZCARD w:{t}:running"), 2);
    cr_assert_lt(score("w:{t}:running", "y 8-dead"), 0, "stale slot kept");
    cr_assert_gt(score("w:{t}:running", "a 11-00112233aabbccdd"), 0,
                 "no slot for the run that began");
}

/* finish with a limit: the finished run's slot is given back and the
 * oldest waiting task becomes due now; a task that found no slot waits
 * (scored at PARK_AT + now) while every slot is held. */
Test(scripts, finish_gives_slots_back_and_wakes_the_oldest_waiting)
{
    char entries[2][64];
    redisReply *r;

    snprintf(entries[0], 64, "%s", pending_entry("ok1", "c1"));
    snprintf(entries[1], 64, "%s", pending_entry("wt1", "c1"));
    freeReplyObject(test_redis_command(rc, "SET w:{t}:lock:ok1 5-aa"));
    freeReplyObject(test_redis_command(
        rc, "ZADD w:{t}:running 99999999999999 %s 99999999999999 %s",
        "ok1 5-aa", "other 6-bb"));
    /* Two waiting already: old (first) and young. */
    freeReplyObject(test_redis_command(
        rc, "ZADD w:{t}:delayed 4503599627370497 old 4503599627370499 young"));
    /* wt1 found no slot at its begin (no lock): it waits. */
    r = run(&script_finish, 14, "w:{t}:stream", "w:{t}:delayed", "w:{t}:dead",
            "w:{t}:entries", "w:{t}:running", "w:{t}:lock:ok1",
            "w:{t}:lock:wt1", "w:{t}:result:ok1", "w:{t}:task:wt1",
            "w:{t}:cancel:ok1", "w:{t}:cancel:wt1", "w:{t}:children:ok1",
            "w:{t}:children:wt1", "w:{t}:outbox",
            /* ARGV */
            "wharf", "c1", "300000", "86400000", "t", "", "or", "13", "2",
            entries[0], entries[1], "5-aa", "",
            /* ok1 */ "the result",
            /* wt1 */ "wt1", "p", "1", "1700000000000", TRACE,
            "waiting for a free slot", "-1", NULL);
    cr_assert_str_eq(r->element[0]->str, "kk");
    freeReplyObject(r);
    cr_assert_lt(score("w:{t}:running", "ok1 5-aa"), 0, "slot not given back");
    cr_assert_eq(test_redis_int(rc, "ZCARD w:{t}:running"), 1);
    /* One slot free, two given back or parked: only one can start, the
     * oldest; the other two wait. */
    cr_assert_lt(score("w:{t}:delayed", "old"), PARK_AT, "old still waits");
    cr_assert_geq(score("w:{t}:delayed", "young"), PARK_AT);
    cr_assert_geq(score("w:{t}:delayed", "wt1"), PARK_AT, "wt1 not waiting");
    assert_str(hget("w:{t}:task:wt1", "attempt"), "1");
}

/* limit_wake: drops the slots whose end passed and wakes as many waiting
 * tasks as slots are free, oldest first. */
Test(scripts, limit_wake_frees_dead_runs_slots_and_wakes_waiting_tasks)
{
    redisReply *r;

    freeReplyObject(
        test_redis_command(rc, "ZADD w:{t}:running 1 %s 2 %s 99999999999999 %s",
                           "a 1-x", "b 2-x", "c 3-x"));
    freeReplyObject(test_redis_command(
        rc, "ZADD w:{t}:delayed 4503599627370501 w1 4503599627370502 w2 "
            "4503599627370503 w3 5 retry"));
    r = run(&script_limit_wake, 2, "w:{t}:running", "w:{t}:delayed", "3", NULL);
    cr_assert_eq(r->elements, 2);
    cr_assert_eq(r->element[0]->integer, 1); /* c's slot lives */
    cr_assert_eq(r->element[1]->integer, 2); /* two free: w1 and w2 */
    freeReplyObject(r);
    cr_assert_lt(score("w:{t}:delayed", "w1"), PARK_AT);
    cr_assert_lt(score("w:{t}:delayed", "w2"), PARK_AT);
    cr_assert_geq(score("w:{t}:delayed", "w3"), PARK_AT);
    cr_assert_eq(score("w:{t}:delayed", "retry"), 5, "a plain retry moved");
}

Test(scripts, finish_of_a_cancelled_entry_writes_nothing)
{
    char entries[2][64];
    redisReply *r;

    snprintf(entries[0], 64, "%s", pending_entry("ok1", "c1"));
    snprintf(entries[1], 64, "%s", pending_entry("re1", "c1"));
    freeReplyObject(test_redis_command(rc, "SET w:{t}:lock:ok1 5"));
    freeReplyObject(test_redis_command(rc, "SET w:{t}:lock:re1 6"));
    freeReplyObject(
        test_redis_command(rc, "SET w:{t}:cancel:ok1 %s", entries[0]));
    freeReplyObject(
        test_redis_command(rc, "SET w:{t}:cancel:re1 %s", entries[1]));
    r = run(&script_finish, 14, "w:{t}:stream", "w:{t}:delayed", "w:{t}:dead",
            "w:{t}:entries", "w:{t}:running", "w:{t}:lock:ok1",
            "w:{t}:lock:re1", "w:{t}:result:ok1", "w:{t}:task:re1",
            "w:{t}:cancel:ok1", "w:{t}:cancel:re1", "w:{t}:children:ok1",
            "w:{t}:children:re1", "w:{t}:outbox",
            /* ARGV */
            "wharf", "c1", "300000", "86400000", "t", "", "or", "13", "0",
            entries[0], entries[1], "5", "6",
            /* ok1 */ "the result",
            /* re1 */ "re1", "p", "2", "1700000000000", TRACE, "boom", "5000",
            NULL);
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
    cr_assert_str_eq(r->element[0]->str, "cc");
    freeReplyObject(r);
    cr_assert_eq(test_redis_int(rc, "EXISTS w:{t}:result:ok1 w:{t}:task:re1 "
                                    "w:{t}:delayed w:{t}:lock:ok1 "
                                    "w:{t}:lock:re1"),
                 0);
    cr_assert_eq(test_redis_int(rc, "XLEN w:{t}:stream"), 0);
}

Test(scripts, release_deletes_only_our_value)
{
    redisReply *r;

    freeReplyObject(test_redis_command(rc, "SET w:{t}:lock:a 12"));
    r = run(&script_release, 1, "w:{t}:lock:a", "13", NULL);
    cr_assert_eq(r->integer, 0);
    freeReplyObject(r);
    assert_str(get("w:{t}:lock:a"), "12");
    r = run(&script_release, 1, "w:{t}:lock:a", "12", NULL);
    cr_assert_eq(r->integer, 1);
    freeReplyObject(r);
    cr_assert_eq(test_redis_int(rc, "EXISTS w:{t}:lock:a"), 0);

    /* By owner: any fence, only that owner, never a bare suffix. */
    freeReplyObject(test_redis_command(rc, "SET w:{t}:lock:b 5-aaaa"));
    freeReplyObject(test_redis_command(rc, "SET w:{t}:lock:c 6-bbbb"));
    freeReplyObject(test_redis_command(rc, "SET w:{t}:lock:d -aaaa"));
    r = run(&script_release, 1, "w:{t}:lock:c", "aaaa", "owner", NULL);
    cr_assert_eq(r->integer, 0);
    freeReplyObject(r);
    r = run(&script_release, 1, "w:{t}:lock:d", "aaaa", "owner", NULL);
    cr_assert_eq(r->integer, 0);
    freeReplyObject(r);
    r = run(&script_release, 1, "w:{t}:lock:b", "aaaa", "owner", NULL);
    cr_assert_eq(r->integer, 1);
    freeReplyObject(r);
    cr_assert_eq(test_redis_int(rc, "EXISTS w:{t}:lock:b w:{t}:lock:c"), 1);
}

Test(scripts, renew_resets_idle_time_and_extends_our_locks)
{
    char entry[64];
    redisReply *r;

    snprintf(entry, sizeof(entry), "%s", pending_entry("a", "c1"));
    /* Locks of 30 s: no stall of a loaded machine lets one run out. */
    freeReplyObject(test_redis_command(rc, "SET w:{t}:lock:a 3 PX 30000"));
    freeReplyObject(test_redis_command(rc, "SET w:{t}:lock:b 4 PX 30000"));
    usleep(50 * 1000);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    r = run(&script_renew, 4, "w:{t}:stream", "w:{t}:running", "w:{t}:lock:a",
            "w:{t}:lock:b", "wharf", "c1", "60000", "0", entry, "0-1", "3", "5",
            NULL);
    /* Per task: idle before (-1: 0-1 is not pending), then the lock's
     * time left before (a: ours, at most 30000; b: another token, -2). */
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 4);
    cr_assert_geq(r->element[0]->integer, 40); /* slept 50 ms */
    cr_assert(r->element[1]->integer > 0 && r->element[1]->integer <= 30000);
    cr_assert_eq(r->element[2]->integer, -1);
    cr_assert_eq(r->element[3]->integer, -2);
    freeReplyObject(r);
    cr_assert(test_redis_int(rc, "PTTL w:{t}:lock:a") > 30000);
    /* b's lock holds another token: left alone. */
    cr_assert(test_redis_int(rc, "PTTL w:{t}:lock:b") <= 30000);
    r = test_redis_command(rc, "XPENDING w:{t}:stream wharf - + 1 c1");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    /* Reset by the renewal, so no older than the time since it was sent
     * (and 2 ms for Redis's clock): however slow the machine, unlike a
     * fixed bound. */
    long long since = (long long)(t1.tv_sec - t0.tv_sec) * 1000 +
                      (t1.tv_nsec - t0.tv_nsec) / 1000000;
    cr_assert_leq(r->element[0]->element[2]->integer, since + 2,
                  "idle %lld ms, %lld ms after the renewal was sent",
                  r->element[0]->element[2]->integer, since);
    freeReplyObject(r);
}

Test(scripts, heartbeat_takes_a_free_or_own_key_only)
{
    redisReply *r =
        run(&script_heartbeat, 1, "w:instance:h", "me", "5000", NULL);
    cr_assert_eq(r->integer, 1);
    freeReplyObject(r);
    r = run(&script_heartbeat, 1, "w:instance:h", "me", "9000", NULL);
    cr_assert_eq(r->integer, 1);
    freeReplyObject(r);
    cr_assert(test_redis_int(rc, "PTTL w:instance:h") > 5000);
    r = run(&script_heartbeat, 1, "w:instance:h", "you", "9000", NULL);
    cr_assert_eq(r->integer, 0);
    freeReplyObject(r);
    assert_str(get("w:instance:h"), "me");
}

Test(scripts, due_returns_the_ids_whose_time_has_come)
{
    redisReply *r;

    freeReplyObject(test_redis_command(
        rc, "ZADD w:{t}:delayed 1 a 2 b 99999999999999 later"));
    r = run(&script_due, 1, "w:{t}:delayed", "1", NULL);
    cr_assert_eq(r->elements, 1);
    cr_assert_str_eq(r->element[0]->str, "a");
    freeReplyObject(r);
    r = run(&script_due, 1, "w:{t}:delayed", "100", NULL);
    cr_assert_eq(r->elements, 2);
    freeReplyObject(r);
    cr_assert_eq(test_redis_int(rc, "ZCARD w:{t}:delayed"), 3);
}

Test(scripts, promote_moves_due_envelopes_into_the_stream)
{
    redisReply *r;

    freeReplyObject(test_redis_command(
        rc, "ZADD w:{t}:delayed 1 a 2 gone 99999999999999 later"));
    freeReplyObject(test_redis_command(
        rc,
        "HSET w:{t}:task:a id a type t payload p attempt 2 enqueued_at 5 "
        "trace %s error boom failed_at 6 worker c1 extra kept",
        TRACE));
    r = run(&script_promote, 6, "w:{t}:delayed", "w:{t}:stream",
            "w:{t}:entries", "w:{t}:task:a", "w:{t}:task:gone",
            "w:{t}:task:later", "a", "gone", "later", NULL);
    cr_assert_eq(r->integer, 1);
    freeReplyObject(r);
    /* gone had no envelope: dropped; later is not due: kept. */
    r = test_redis_command(rc, "ZRANGE w:{t}:delayed 0 -1");
    cr_assert_eq(r->elements, 1);
    cr_assert_str_eq(r->element[0]->str, "later");
    freeReplyObject(r);
    cr_assert_eq(test_redis_int(rc, "EXISTS w:{t}:task:a"), 0);
    r = test_redis_command(rc, "XRANGE w:{t}:stream - +");
    cr_assert_eq(r->elements, 1);
    const redisReply *f = r->element[0]->element[1];
    cr_assert_eq(f->elements, 14); /* 7 fields: no error/failed_at/worker */
    for (size_t i = 0; i < f->elements; i += 2) {
        cr_assert_str_neq(f->element[i]->str, "error");
        cr_assert_str_neq(f->element[i]->str, "worker");
        if (strcmp(f->element[i]->str, "attempt") == 0)
            cr_assert_str_eq(f->element[i + 1]->str, "2");
    }
    freeReplyObject(r);
}

Test(scripts, trim_dead_stops_at_dead_max)
{
    redisReply *r;

    freeReplyObject(test_redis_command(rc, "ZADD w:{t}:dead 1 a 2 b 3 c"));
    freeReplyObject(test_redis_command(rc, "HSET w:{t}:dead:a id a"));
    freeReplyObject(test_redis_command(rc, "HSET w:{t}:dead:b id b"));
    freeReplyObject(test_redis_command(rc, "HSET w:{t}:dead:c id c"));
    r = run(&script_trim_dead, 4, "w:{t}:dead", "w:{t}:dead:a", "w:{t}:dead:b",
            "w:{t}:dead:c", "2", "a", "b", "c", NULL);
    cr_assert_eq(r->integer, 1);
    freeReplyObject(r);
    cr_assert_eq(test_redis_int(rc, "ZCARD w:{t}:dead"), 2);
    cr_assert_eq(test_redis_int(rc, "EXISTS w:{t}:dead:a"), 0);
    cr_assert_eq(test_redis_int(rc, "EXISTS w:{t}:dead:b"), 1);
}

static redisReply *replay(const char *id)
{
    char record[64], task[64];

    snprintf(record, sizeof(record), "w:{t}:dead:%s", id);
    snprintf(task, sizeof(task), "w:{t}:task:%s", id);
    return run(&script_dead_replay, 6, "w:{t}:dead", record, "w:{t}:stream",
               task, "w:{t}:delayed", "w:{t}:entries", id, "t", NULL);
}

static redisReply *purge(const char *id)
{
    char record[64], task[64];

    snprintf(record, sizeof(record), "w:{t}:dead:%s", id);
    snprintf(task, sizeof(task), "w:{t}:task:%s", id);
    return run(&script_dead_purge, 4, "w:{t}:dead", record, task,
               "w:{t}:delayed", id, NULL);
}

Test(scripts, dead_purge_and_dead_replay)
{
    redisReply *r;

    freeReplyObject(test_redis_command(rc, "ZADD w:{t}:dead 1 a 2 b 3 old"));
    freeReplyObject(test_redis_command(
        rc,
        "HSET w:{t}:dead:a id a type t payload p attempt 5 enqueued_at 5 "
        "trace %s error boom failed_at 6 worker c1",
        TRACE));
    freeReplyObject(test_redis_command(rc, "HSET w:{t}:dead:b id b"));
    /* A new run of a waits for a retry: its envelope is not touched. */
    freeReplyObject(test_redis_command(rc, "ZADD w:{t}:delayed 9 a"));
    freeReplyObject(test_redis_command(rc, "HSET w:{t}:task:a attempt 2"));
    /* A record from before dead:<id> existed. */
    freeReplyObject(
        test_redis_command(rc, "HSET w:{t}:task:old id old payload q"));
    r = replay("a");
    cr_assert_str_eq(r->str, "OK");
    freeReplyObject(r);
    r = replay("a");
    cr_assert_str_eq(r->str, "NOT_FOUND");
    freeReplyObject(r);
    r = replay("old");
    cr_assert_str_eq(r->str, "OK");
    freeReplyObject(r);
    r = test_redis_command(rc, "XRANGE w:{t}:stream - +");
    cr_assert_eq(r->elements, 2);
    const redisReply *f = r->element[0]->element[1];
    for (size_t i = 0; i < f->elements; i += 2)
        if (strcmp(f->element[i]->str, "attempt") == 0)
            cr_assert_str_eq(f->element[i + 1]->str, "1");
    freeReplyObject(r);
    cr_assert_eq(test_redis_int(rc, "EXISTS w:{t}:dead:a w:{t}:task:old"), 0);
    assert_str(hget("w:{t}:task:a", "attempt"), "2");

    r = purge("b");
    cr_assert_eq(r->integer, 1);
    freeReplyObject(r);
    r = purge("b");
    cr_assert_eq(r->integer, 0);
    freeReplyObject(r);
    cr_assert_eq(test_redis_int(rc, "EXISTS w:{t}:dead:b w:{t}:dead"), 0);
    assert_str(hget("w:{t}:task:a", "attempt"), "2");
}

/* One ready task through the enqueue script: its reply words. */
static void enqueue_one(const char *id, const char *want)
{
    char seen[64], task[64];
    redisReply *r;

    snprintf(seen, sizeof(seen), "w:{t}:seen:%s", id);
    snprintf(task, sizeof(task), "w:{t}:task:%s", id);
    r = run(&script_enqueue, 9, "w:{t}:policy", "w:{t}:stream", "w:{t}:delayed",
            "w:{t}:pressure", "w:{t}:entries", seen, seen, task, task, "t",
            "11", "0", "1048576", "0", "payload", "300000", "1", "0", "",
            "the payload", TRACE, NULL);
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 4);
    cr_assert_eq(r->element[0]->integer, 2); /* no pressure; no policy */
    cr_assert_str_eq(r->element[1]->str, want);
    cr_assert_str_eq(r->element[2]->str, id);
    freeReplyObject(r);
}

Test(scripts, enqueue_adds_once_and_answers_duplicate_after)
{
    enqueue_one("x1", "OK");
    enqueue_one("x1", "DUPLICATE");
    cr_assert_eq(test_redis_int(rc, "XLEN w:{t}:stream"), 1);
    cr_assert(test_redis_int(rc, "PTTL w:{t}:seen:x1") > 0);
    /* The types set is not the script's: no key of another slot. */
    cr_assert_eq(test_redis_int(rc, "EXISTS w:types"), 0);
}

/* Once its seen marker expired, an id waiting for a retry is still a
 * duplicate: adding it again would reset its attempt to 1. */
Test(scripts, enqueue_of_a_retrying_id_keeps_its_attempt)
{
    freeReplyObject(test_redis_command(rc, "ZADD w:{t}:delayed 99 r1"));
    freeReplyObject(test_redis_command(
        rc, "HSET w:{t}:task:r1 id r1 type t payload p attempt 4"));
    enqueue_one("r1", "DUPLICATE");
    assert_str(hget("w:{t}:task:r1", "attempt"), "4");
    cr_assert_eq(test_redis_int(rc, "EXISTS w:{t}:stream"), 0);
}

/* A dead id runs anew; its dead record stays as it was. */
Test(scripts, enqueue_of_a_dead_id_leaves_its_record)
{
    freeReplyObject(test_redis_command(rc, "ZADD w:{t}:dead 5 d1"));
    freeReplyObject(test_redis_command(
        rc, "HSET w:{t}:dead:d1 id d1 type t payload p attempt 5 error x"));
    enqueue_one("d1", "OK");
    cr_assert_eq(test_redis_int(rc, "XLEN w:{t}:stream"), 1);
    assert_str(hget("w:{t}:dead:d1", "error"), "x");
    cr_assert_eq(test_redis_int(rc, "ZSCORE w:{t}:dead d1"), 5);
}

/* Options ride as fields of the entry (a delayed task's envelope too),
 * and a malformed list is refused before anything is written. */
Test(scripts, enqueue_writes_options_and_refuses_bad_ones)
{
    redisReply *r;

    r = run(&script_enqueue, 9, "w:{t}:policy", "w:{t}:stream", "w:{t}:delayed",
            "w:{t}:pressure", "w:{t}:entries", "w:{t}:seen:o1", "w:{t}:seen:o1",
            "w:{t}:task:o1", "w:{t}:task:o1", "t", "11", "1", "1048576", "0",
            "payload", "300000", "1", "0",
            "timeout_ms 500 max_attempts 2 expires_at 9", "the payload", TRACE,
            "60000", NULL);
    freeReplyObject(r);
    assert_str(hget("w:{t}:task:o1", "timeout_ms"), "500");
    assert_str(hget("w:{t}:task:o1", "max_attempts"), "2");
    assert_str(hget("w:{t}:task:o1", "expires_at"), "9");
    freeReplyObject(test_redis_command(rc, "FLUSHALL"));
    static const char *const bad[] = {"max_attempts", "max_attempts 0",
                                      "retries 2", "timeout_ms -1",
                                      "timeout_ms 1e3"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        r = script_run(rc, &script_enqueue, 9, 21,
                       (const char *[]){"w:{t}:policy",
                                        "w:{t}:stream",
                                        "w:{t}:delayed",
                                        "w:{t}:pressure",
                                        "w:{t}:entries",
                                        "w:{t}:seen:o2",
                                        "w:{t}:seen:o2",
                                        "w:{t}:task:o2",
                                        "w:{t}:task:o2",
                                        "t",
                                        "11",
                                        "0",
                                        "1048576",
                                        "0",
                                        "payload",
                                        "300000",
                                        "1",
                                        "0",
                                        bad[i],
                                        "p",
                                        TRACE},
                       NULL);
        cr_assert(r != NULL);
        cr_assert_eq(r->type, REDIS_REPLY_ERROR, "'%s' taken", bad[i]);
        cr_assert(strncmp(r->str, "BADOPTIONS", 10) == 0, "%s", r->str);
        freeReplyObject(r);
        cr_assert_eq(key_count(), 0, "'%s': a key was written", bad[i]);
    }
}

/* A key of the wrong kind makes a script fail in the middle, and Redis
 * does not roll back what it wrote before: each script that writes more
 * than one key checks them first, so a refused call leaves no trace (an
 * enqueue that left its seen marker would answer DUPLICATE next time for
 * a task that exists nowhere). */
Test(scripts, enqueue_into_a_key_of_the_wrong_kind_writes_nothing)
{
    static const char *const keys[] = {"w:{t}:stream", "w:{t}:entries",
                                       "w:{t}:delayed"};

    for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
        freeReplyObject(test_redis_command(rc, "FLUSHALL"));
        freeReplyObject(test_redis_command(rc, "SET %s wrong", keys[k]));
        run_refused(keys[k], &script_enqueue, 9, "w:{t}:policy", "w:{t}:stream",
                    "w:{t}:delayed", "w:{t}:pressure", "w:{t}:entries",
                    "w:{t}:seen:k1", "w:{t}:seen:k1", "w:{t}:task:k1",
                    "w:{t}:task:k1", "t", "11", "0", "1048576", "0", "payload",
                    "300000", "1", "0", "", "the payload", TRACE, NULL);
        cr_assert_eq(key_count(), 1, "%s: a key was written", keys[k]);
        /* Once the key is fixed, the same task goes in, not DUPLICATE. */
        freeReplyObject(test_redis_command(rc, "DEL %s", keys[k]));
        enqueue_one("k1", "OK");
    }
    /* A delayed call writes no stream: only the delayed set counts. */
    freeReplyObject(test_redis_command(rc, "FLUSHALL"));
    freeReplyObject(test_redis_command(rc, "SET w:{t}:delayed wrong"));
    run_refused("w:{t}:delayed", &script_enqueue, 9, "w:{t}:policy",
                "w:{t}:stream", "w:{t}:delayed", "w:{t}:pressure",
                "w:{t}:entries", "w:{t}:seen:k2", "w:{t}:seen:k2",
                "w:{t}:task:k2", "w:{t}:task:k2", "t", "11", "1", "1048576",
                "0", "payload", "300000", "1", "0", "", "the payload", TRACE,
                "60000", NULL);
    cr_assert_eq(key_count(), 1);
}

Test(scripts, dead_replay_into_a_key_of_the_wrong_kind_writes_nothing)
{
    static const char *const keys[] = {"w:{t}:stream", "w:{t}:entries"};

    for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
        redisReply *r;
        freeReplyObject(test_redis_command(rc, "FLUSHALL"));
        freeReplyObject(test_redis_command(rc, "ZADD w:{t}:dead 1 a"));
        freeReplyObject(test_redis_command(
            rc, "HSET w:{t}:dead:a id a type t payload p attempt 5"));
        freeReplyObject(test_redis_command(rc, "SET %s wrong", keys[k]));
        run_refused(keys[k], &script_dead_replay, 6, "w:{t}:dead",
                    "w:{t}:dead:a", "w:{t}:stream", "w:{t}:task:a",
                    "w:{t}:delayed", "w:{t}:entries", "a", "t", NULL);
        /* Still dead, record and all. */
        cr_assert_eq(test_redis_int(rc, "ZSCORE w:{t}:dead a"), 1);
        assert_str(hget("w:{t}:dead:a", "attempt"), "5");
        cr_assert_eq(key_count(), 3);
        freeReplyObject(test_redis_command(rc, "DEL %s", keys[k]));
        r = replay("a");
        cr_assert_str_eq(r->str, "OK");
        freeReplyObject(r);
    }
}

Test(scripts, dead_purge_with_a_delayed_key_of_the_wrong_kind_writes_nothing)
{
    const char *argv[] = {"w:{t}:dead", "w:{t}:dead:a", "w:{t}:task:a",
                          "w:{t}:delayed", "a"};
    redisReply *r;

    freeReplyObject(test_redis_command(rc, "ZADD w:{t}:dead 1 a"));
    freeReplyObject(test_redis_command(rc, "HSET w:{t}:dead:a id a"));
    freeReplyObject(test_redis_command(rc, "SET w:{t}:delayed wrong"));
    r = script_run(rc, &script_dead_purge, 4, 5, argv, NULL);
    cr_assert(r != NULL, "%s", rc->errstr);
    cr_assert_eq(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    cr_assert_eq(test_redis_int(rc, "ZSCORE w:{t}:dead a"), 1);
    cr_assert_eq(test_redis_int(rc, "EXISTS w:{t}:dead:a"), 1);
}

Test(scripts, queue_drop_with_a_key_of_the_wrong_kind_writes_nothing)
{
    char entry[64];
    redisReply *r;

    pending_entry("b", "c1"); /* b is running; a waits */
    r = test_redis_command(rc, "XADD w:{t}:stream * id a type t payload p");
    cr_assert_eq(r->type, REDIS_REPLY_STRING);
    snprintf(entry, sizeof(entry), "%s", r->str);
    freeReplyObject(r);
    freeReplyObject(test_redis_command(rc, "SET w:{t}:seen:a 1"));
    freeReplyObject(test_redis_command(rc, "SET w:{t}:entries wrong"));
    run_refused("w:{t}:entries", &script_queue_drop, 4, "w:{t}:stream",
                "w:{t}:delayed", "w:{t}:entries", "w:{t}:seen:a", "ready",
                "wharf", entry, "a", NULL);
    cr_assert_eq(test_redis_int(rc, "XLEN w:{t}:stream"), 2);
    cr_assert_eq(test_redis_int(rc, "EXISTS w:{t}:seen:a"), 1);
    /* Fixed, the same call drops a. */
    freeReplyObject(test_redis_command(rc, "DEL w:{t}:entries"));
    r = run(&script_queue_drop, 4, "w:{t}:stream", "w:{t}:delayed",
            "w:{t}:entries", "w:{t}:seen:a", "ready", "wharf", entry, "a",
            NULL);
    cr_assert_eq(r->element[0]->integer, 1);
    freeReplyObject(r);
    cr_assert_eq(test_redis_int(rc, "XLEN w:{t}:stream"), 1);
}

static redisReply *lock_release(const char *id, const char *force,
                                const char *most)
{
    char lock[64];

    snprintf(lock, sizeof(lock), "w:{t}:lock:%s", id);
    return run(&script_lock_release, 3, lock, "w:{t}:stream", "w:{t}:policy",
               id, "wharf", "300000", force, most, NULL);
}

Test(scripts, lock_release_refuses_a_live_run)
{
    redisReply *r;

    pending_entry("a", "c1");
    freeReplyObject(test_redis_command(rc, "SET w:{t}:lock:a 1-ab"));
    r = lock_release("a", "", "100");
    cr_assert_eq(r->elements, 3);
    cr_assert_str_eq(r->element[0]->str, "HELD");
    cr_assert_str_eq(r->element[1]->str, "c1");
    cr_assert(r->element[2]->integer < 300000);
    freeReplyObject(r);
    cr_assert_eq(test_redis_int(rc, "EXISTS w:{t}:lock:a"), 1);
    /* The published timeout wins over the default. */
    freeReplyObject(
        test_redis_command(rc, "HSET w:{t}:policy visibility_timeout 0"));
    r = lock_release("a", "", "100");
    cr_assert_str_eq(r->element[0]->str, "RELEASED");
    freeReplyObject(r);
    r = lock_release("a", "", "100");
    cr_assert_str_eq(r->element[0]->str, "NONE");
    freeReplyObject(r);
    freeReplyObject(test_redis_command(rc, "HDEL w:{t}:policy "
                                           "visibility_timeout"));
    freeReplyObject(test_redis_command(rc, "SET w:{t}:lock:a 2-ab"));
    r = lock_release("a", "force", "100");
    cr_assert_str_eq(r->element[0]->str, "RELEASED");
    freeReplyObject(r);
}

/* More entries pending than it may look at, none of them the id's: it
 * cannot tell, so it keeps the lock. */
Test(scripts, lock_release_is_bounded)
{
    redisReply *r;

    pending_entry("first", "c1");
    r = test_redis_command(rc, "EVAL %s 1 w:{t}:stream",
                           "for i = 1, 600 do redis.call('XADD', KEYS[1], "
                           "'*', 'id', 'x' .. i) end");
    cr_assert_neq(r->type, REDIS_REPLY_ERROR, "%s", r->str);
    freeReplyObject(r);
    freeReplyObject(test_redis_command(
        rc, "XREADGROUP GROUP wharf c1 COUNT 1000 STREAMS w:{t}:stream >"));
    freeReplyObject(test_redis_command(rc, "SET w:{t}:lock:zz 1-ab"));
    r = lock_release("zz", "", "500");
    cr_assert_str_eq(r->element[0]->str, "UNSURE");
    cr_assert_eq(r->element[1]->integer, 500);
    freeReplyObject(r);
    cr_assert_eq(test_redis_int(rc, "EXISTS w:{t}:lock:zz"), 1);
    /* Allowed to look at all of them, it finds none: released. */
    r = lock_release("zz", "", "10000");
    cr_assert_str_eq(r->element[0]->str, "RELEASED");
    freeReplyObject(r);
}
