/* known_types.h on its own: how each reply becomes a figure (and a reply
 * of another shape does not), settling ready against running, the five
 * commands in their order, and the refresh over the types set (served,
 * invalid and too many types left out) against a real redis-server. */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "broker.h"
#include "broker_config.h"
#include "known_types.h"
#include "pipeline.h"
#include "redis_server.h"

/* Replies made by hand, as hiredis makes them. */
static redisReply integer(long long v)
{
    return (redisReply){.type = REDIS_REPLY_INTEGER, .integer = v};
}

Test(known_types, take_stores_each_figure_from_its_reply)
{
    queue_figures f = {0};
    redisReply n = integer(7);

    cr_assert_eq(known_types_take(KNOWN_XLEN, &n, &f), 0);
    cr_assert_eq(f.ready, 7);
    n = integer(3);
    cr_assert_eq(known_types_take(KNOWN_DELAYED, &n, &f), 0);
    cr_assert_eq(f.delayed, 3);
    n = integer(2);
    cr_assert_eq(known_types_take(KNOWN_DEAD, &n, &f), 0);
    cr_assert_eq(f.dead, 2);
    n = integer(1);
    cr_assert_eq(known_types_take(KNOWN_PRESSURE, &n, &f), 0);
    cr_assert_eq(f.pressure, 1);
    n = integer(0);
    cr_assert_eq(known_types_take(KNOWN_PRESSURE, &n, &f), 0);
    cr_assert_eq(f.pressure, 0);

    /* XPENDING's summary: [count, first id, last id, consumers]. */
    redisReply count = integer(4), nil = {.type = REDIS_REPLY_NIL};
    redisReply *parts[] = {&count, &nil, &nil, &nil};
    redisReply summary = {
        .type = REDIS_REPLY_ARRAY, .elements = 4, .element = parts};
    cr_assert_eq(known_types_take(KNOWN_PENDING, &summary, &f), 0);
    cr_assert_eq(f.running, 4);
    cr_assert_eq(f.ready, 7, "another figure was touched");
}

Test(known_types, take_refuses_a_reply_of_another_shape)
{
    queue_figures f = {
        .ready = 1, .running = 2, .delayed = 3, .dead = 4, .pressure = 1};
    queue_figures before = f;
    char nogroup[] = "NOGROUP No such key or consumer group";
    redisReply error = {
        .type = REDIS_REPLY_ERROR, .str = nogroup, .len = strlen(nogroup)};
    redisReply text = {.type = REDIS_REPLY_STRING, .str = nogroup, .len = 3};
    redisReply empty = {.type = REDIS_REPLY_ARRAY, .elements = 0};
    redisReply *words[] = {&text};
    redisReply not_a_count = {
        .type = REDIS_REPLY_ARRAY, .elements = 1, .element = words};
    redisReply n = integer(9);

    for (int q = 0; q < KNOWN_COMMANDS; q++) {
        cr_expect_eq(known_types_take(q, &error, &f), -1, "query %d", q);
        cr_expect_eq(known_types_take(q, &text, &f), -1, "query %d", q);
    }
    cr_expect_eq(known_types_take(KNOWN_PENDING, &n, &f), -1);
    cr_expect_eq(known_types_take(KNOWN_PENDING, &empty, &f), -1);
    cr_expect_eq(known_types_take(KNOWN_PENDING, &not_a_count, &f), -1);
    cr_expect_eq(known_types_take(KNOWN_XLEN, &empty, &f), -1);
    cr_assert_eq(memcmp(&f, &before, sizeof(f)), 0, "a refused reply wrote");
}

Test(known_types, settle_leaves_out_the_running_never_below_zero)
{
    queue_figures f = {.ready = 5, .running = 2};

    known_types_settle(&f);
    cr_assert_eq(f.ready, 3);
    cr_assert_eq(f.running, 2);
    f = (queue_figures){.ready = 2, .running = 5};
    known_types_settle(&f);
    cr_assert_eq(f.ready, 0);
    f = (queue_figures){.ready = 4, .running = 4};
    known_types_settle(&f);
    cr_assert_eq(f.ready, 0);
}

/* Against a real redis-server. */

static test_redis redis;
static redisContext *rc;
static config *cfg;
static broker b;

static void start(void)
{
    static const char *const types[] = {"served"};

    test_broker_up(&redis, &rc, &cfg);
    test_broker_open(&b, cfg, types, NULL, 1, "tester");
}

static void stop(void)
{
    test_broker_down(&redis, &rc, &cfg, &b);
}

TestSuite(known_types_redis, .init = start, .fini = stop, .timeout = 60);

/* Gives type t: 3 entries, 1 claimed, 2 delayed, 1 dead, the flag. */
static void fill(const char *t)
{
    for (int i = 0; i < 3; i++)
        freeReplyObject(test_redis_command(
            rc, "XADD wharf:{%s}:stream * id x type %s", t, t));
    freeReplyObject(
        test_redis_command(rc, "XGROUP CREATE wharf:{%s}:stream wharf 0", t));
    freeReplyObject(test_redis_command(
        rc, "XREADGROUP GROUP wharf c COUNT 1 STREAMS wharf:{%s}:stream >", t));
    freeReplyObject(
        test_redis_command(rc, "ZADD wharf:{%s}:delayed 1 a 2 b", t));
    freeReplyObject(test_redis_command(rc, "ZADD wharf:{%s}:dead 1 a", t));
    freeReplyObject(test_redis_command(rc, "SET wharf:{%s}:pressure 1", t));
}

Test(known_types_redis, queries_read_the_five_figures_in_order)
{
    fill("ghost");
    pipeline_reset(&b.pipe);
    cr_assert_eq(known_types_add_queries(&b.pipe, "wharf", "ghost"), 0);
    cr_assert_eq(b.pipe.n, KNOWN_COMMANDS);
    cr_assert_eq(pipeline_run(&b.pipe), 0, "%s", b.pipe.errstr);
    queue_figures f = {.type = "ghost"};
    for (int q = 0; q < KNOWN_COMMANDS; q++)
        cr_assert_eq(
            known_types_take(q, pipeline_reply(&b.pipe, (size_t)q), &f), 0,
            "query %d", q);
    known_types_settle(&f);
    cr_assert_eq(f.ready, 2);
    cr_assert_eq(f.running, 1);
    cr_assert_eq(f.delayed, 2);
    cr_assert_eq(f.dead, 1);
    cr_assert_eq(f.pressure, 1);
    pipeline_reset(&b.pipe);
}

/* The index of name among k's, or -1. */
static int index_of(const known_types *k, const char *name)
{
    for (size_t i = 0; i < k->n; i++)
        if (strcmp(k->names[i], name) == 0)
            return (int)i;
    return -1;
}

Test(known_types_redis, refresh_reads_the_unserved_types_only)
{
    known_types k = {NULL, 0};
    static queue_figures out[KNOWN_TYPES_MAX];

    fill("ghost");
    /* served is this host's; "bad type" and "{x}" are not type names;
     * lost has no stream at all (its XPENDING is an error: 0). */
    freeReplyObject(test_redis_command(
        rc, "SADD wharf:types served ghost lost %s %s", "bad type", "{x}"));
    cr_assert_eq(known_types_refresh(&b, &k, out), 0, "%s", b.errstr);
    cr_assert_eq(k.n, 2, "%zu types", k.n);
    int g = index_of(&k, "ghost"), l = index_of(&k, "lost");
    cr_assert(g >= 0 && l >= 0, "ghost %d, lost %d", g, l);
    cr_assert_eq(out[g].type, k.names[g], "the figure names point into k");
    cr_assert_eq(out[g].ready, 2);
    cr_assert_eq(out[g].running, 1);
    cr_assert_eq(out[g].delayed, 2);
    cr_assert_eq(out[g].dead, 1);
    cr_assert_eq(out[g].pressure, 1);
    cr_assert_str_neq(out[g].node, "");
    cr_assert_eq(out[l].ready + out[l].running + out[l].delayed + out[l].dead +
                     out[l].pressure,
                 0);

    /* The next refresh replaces what k held. */
    freeReplyObject(test_redis_command(rc, "SREM wharf:types lost"));
    cr_assert_eq(known_types_refresh(&b, &k, out), 0, "%s", b.errstr);
    cr_assert_eq(k.n, 1);
    cr_assert_str_eq(k.names[0], "ghost");
    known_types_free(&k);
    cr_assert_null(k.names);
    cr_assert_eq(k.n, 0);
    known_types_free(&k); /* twice is fine */
}

Test(known_types_redis, refresh_reads_at_most_known_types_max)
{
    known_types k = {NULL, 0};
    static queue_figures out[KNOWN_TYPES_MAX];

    freeReplyObject(
        test_redis_command(rc, "EVAL %s 1 wharf:types %d",
                           "for i = 1, tonumber(ARGV[1]) do "
                           "redis.call('SADD', KEYS[1], 't' .. i) end",
                           KNOWN_TYPES_MAX + 50));
    cr_assert_eq(known_types_refresh(&b, &k, out), 0, "%s", b.errstr);
    cr_assert_eq(k.n, KNOWN_TYPES_MAX);
    known_types_free(&k);
}

Test(known_types_redis, no_connection_keeps_what_k_held)
{
    known_types k = {NULL, 0};
    static queue_figures out[KNOWN_TYPES_MAX];

    freeReplyObject(test_redis_command(rc, "SADD wharf:types ghost"));
    cr_assert_eq(known_types_refresh(&b, &k, out), 0, "%s", b.errstr);
    cr_assert_eq(k.n, 1);
    test_redis_stop(&redis);
    cr_assert_eq(known_types_refresh(&b, &k, out), -1);
    cr_assert(strstr(b.errstr, "SMEMBERS wharf:types"), "%s", b.errstr);
    cr_assert_eq(k.n, 1, "k changed on an error");
    cr_assert_str_eq(k.names[0], "ghost");
    known_types_free(&k);
    broker_disconnect(&b);
    cr_assert_eq(known_types_refresh(&b, &k, out), -1);
}
