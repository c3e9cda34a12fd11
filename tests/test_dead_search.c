/* Searching a dead set and acting on what matches: wharf dead list, replay
 * and purge with --grep, --since, --before, --attempts and --id-prefix,
 * over 20,000 dead records written as finish writes them. The search runs
 * in Redis a page at a time: Redis's slowlog (logging every command) shows
 * no call that reads more than a page of records, and a bulk replay
 * replays exactly what matches, each once. How long a search takes is
 * make bench's to measure: a loaded machine stretches any one command. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <criterion/criterion.h>

#include "redis_server.h"
#include "wharf_cli.h"

#define wharf(...)                                                             \
    test_cli(redis.url, redis.dir, (const char *const[]){__VA_ARGS__, NULL})

#define RECORDS 20000

static test_redis redis;
static redisContext *rc;

/* RECORDS dead records of type d: even i is "r-<i>", dead of
 * "connection refused" after (i % 5) + 1 attempts; odd i is "t-<i>",
 * dead of "timeout after 30000 ms". Record i died i minutes and a half
 * ago, so no bound of a whole number of minutes falls on one. */
static void seed(void)
{
    static const char script[] =
        "local t = redis.call('TIME')\n"
        "local now = tonumber(t[1]) * 1000\n"
        "for i = 0, tonumber(ARGV[1]) - 1 do\n"
        "  local id = (i % 2 == 0 and 'r-' or 't-') .. i\n"
        "  local err = i % 2 == 0 and 'dial: connection refused' or\n"
        "              'timeout after 30000 ms'\n"
        "  local died = now - i * 60000 - 30000\n"
        "  redis.call('HSET', 'wharf:{d}:dead:' .. id, 'id', id, 'type', 'd',\n"
        "             'payload', 'p' .. i, 'attempt', (i % 5) + 1,\n"
        "             'enqueued_at', died - 1000, 'trace',\n"
        "             "
        "'00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',\n"
        "             'error', err, 'worker', 'h:default:0', 'failed_at', "
        "died)\n"
        "  redis.call('ZADD', 'wharf:{d}:dead', died, id)\n"
        "end\n";

    freeReplyObject(test_redis_command(rc, "EVAL %s 0 %d", script, RECORDS));
    cr_assert_eq(test_redis_int(rc, "ZCARD wharf:{d}:dead"), RECORDS);
    freeReplyObject(
        test_redis_command(rc, "CONFIG SET slowlog-log-slower-than 0"));
    freeReplyObject(
        test_redis_command(rc, "CONFIG SET slowlog-max-len 100000"));
    freeReplyObject(test_redis_command(rc, "SLOWLOG RESET"));
}

static void start(void)
{
    test_redis_up(&redis, 0, &rc);
    seed();
}

static void stop(void)
{
    test_redis_down(&redis, &rc);
}

TestSuite(dead_search, .init = start, .fini = stop, .timeout = 120);

/* The most records one command read: every command is in the slowlog;
 * a script call names one or two keys per record (numkeys, its third
 * argument), a range read returns at most its page (its rank bounds). */
static long long most_read(void)
{
    redisReply *r = test_redis_command(rc, "SLOWLOG GET -1");
    long long most = 0;

    cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i], *args;
        long long n = 0;
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 4)
            continue;
        args = e->element[3];
        if (args->elements >= 3 &&
            strcasecmp(args->element[0]->str, "EVALSHA") == 0)
            n = (atoll(args->element[2]->str) - 1) / 2;
        else if (args->elements >= 4 &&
                 (strcasecmp(args->element[0]->str, "ZRANGE") == 0 ||
                  strcasecmp(args->element[0]->str, "ZREVRANGE") == 0))
            n = atoll(args->element[3]->str) - atoll(args->element[2]->str) + 1;
        if (n > most)
            most = n;
    }
    freeReplyObject(r);
    return most;
}

static long count_of(const test_cli_run *run)
{
    cr_assert_eq(run->status, 0, "%s", run->err);
    return strtol(run->out, NULL, 10);
}

/* Ids in the stream's index that start with prefix. */
static long long indexed(const char *prefix)
{
    return test_redis_int(
        rc, "EVAL %s 1 wharf:{d}:entries %s",
        "local n = 0\n"
        "for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do\n"
        "  if string.sub(f, 1, #ARGV[1]) == ARGV[1] then\n"
        "    n = n + 1 end end\n"
        "return n",
        prefix);
}

Test(dead_search, filters_count_what_they_match)
{
    const test_cli_run *run;

    cr_expect_eq(count_of(wharf("dead", "list", "d", "--count")), RECORDS);
    cr_expect_eq(
        count_of(wharf("dead", "list", "d", "--grep", "refused", "--count")),
        RECORDS / 2);
    /* Even i with i % 5 == 4: attempt 5, one in five of the refused. */
    cr_expect_eq(count_of(wharf("dead", "list", "d", "--grep", "refused",
                                "--attempts", "5", "--count")),
                 RECORDS / 10);
    /* Even i whose digits start with 1: 10..18, 100..198, 1000..1998,
     * 10000..19998. */
    cr_expect_eq(
        count_of(wharf("dead", "list", "d", "--id-prefix", "r-1", "--count")),
        5 + 50 + 500 + 5000);
    /* Died within the last 30 minutes: i = 0..29; at least 10 minutes
     * ago: i >= 10. */
    cr_expect_eq(
        count_of(wharf("dead", "list", "d", "--since", "30m", "--count")), 30);
    cr_expect_eq(count_of(wharf("dead", "list", "d", "--since", "30m",
                                "--before", "10m", "--count")),
                 20);
    /* The listing: newest first, the line as dead list prints one. */
    run = wharf("dead", "list", "d", "--grep", "timeout", "--since", "4m");
    cr_assert_eq(run->status, 0, "%s", run->err);
    cr_expect(strncmp(run->out, "t-1  ", 5) == 0, "%s", run->out);
    cr_expect(strstr(run->out, "\nt-3  ") &&
                  strstr(run->out, "  4  timeout after 30000 ms\n"),
              "%s", run->out);
    cr_expect_leq(most_read(), 200, "a command read %lld records", most_read());
}

/* Without --yes a bulk replay only counts; with it, exactly the refused
 * tasks go back to the stream, each once, at attempt 1, and the timeouts
 * stay dead; Redis never held a command over 10 ms. */
Test(dead_search, bulk_replay_replays_exactly_what_matches)
{
    const test_cli_run *run;

    run = wharf("dead", "replay", "d", "--grep", "refused");
    cr_assert_eq(run->status, 64, "%s", run->err);
    cr_expect(strstr(run->err, "10000 dead tasks of 'd' match; add --yes"),
              "%s", run->err);
    cr_assert_eq(test_redis_int(rc, "ZCARD wharf:{d}:dead"), RECORDS,
                 "a count replayed");

    run = wharf("dead", "replay", "d", "--grep", "refused", "--yes");
    cr_assert_eq(run->status, 0, "%s", run->err);
    cr_expect_str_eq(run->out, "replayed 10000\n");
    cr_expect_eq(test_redis_int(rc, "XLEN wharf:{d}:stream"), RECORDS / 2);
    cr_expect_eq(indexed("r-"), RECORDS / 2, "not each refused task once");
    cr_expect_eq(indexed("t-"), 0, "a timeout was replayed");
    cr_expect_eq(test_redis_int(rc, "ZCARD wharf:{d}:dead"), RECORDS / 2);
    cr_expect_eq(test_redis_int(rc, "EXISTS wharf:{d}:dead:r-2"), 0);
    cr_expect_eq(
        count_of(wharf("dead", "list", "d", "--grep", "refused", "--count")),
        0);
    /* Run again (as after an interruption): nothing is left to do. */
    run = wharf("dead", "replay", "d", "--grep", "refused", "--yes");
    cr_expect_str_eq(run->out, "replayed 0\n");
    cr_expect_eq(test_redis_int(rc, "XLEN wharf:{d}:stream"), RECORDS / 2);
    cr_expect_leq(most_read(), 200, "a command read %lld records", most_read());
}

/* A filtered purge deletes what matches, records and all. */
Test(dead_search, bulk_purge_purges_what_matches)
{
    const test_cli_run *run;

    run = wharf("dead", "purge", "d", "--grep", "timeout", "--attempts", "4",
                "--yes");
    cr_assert_eq(run->status, 0, "%s", run->err);
    /* Odd i with i % 5 in {3, 4}: 2 in 5 of the timeouts. */
    cr_expect_str_eq(run->out, "purged 4000\n");
    cr_expect_eq(test_redis_int(rc, "ZCARD wharf:{d}:dead"), RECORDS - 4000);
    cr_expect_eq(test_redis_int(rc, "EXISTS wharf:{d}:dead:t-3"), 0);
    cr_expect_eq(test_redis_int(rc, "EXISTS wharf:{d}:dead:t-1"), 1);
    cr_expect_eq(
        count_of(wharf("dead", "list", "d", "--grep", "timeout", "--count")),
        RECORDS / 2 - 4000);
}

Test(dead_search, bad_filters_are_refused_with_the_reason)
{
    static const struct {
        const char *args[8];
        const char *why;
    } cases[] = {
        {{"dead", "list", "d", "--grep", "", NULL}, "--grep needs a text"},
        {{"dead", "list", "d", "--attempts", "0", NULL},
         "--attempts '0' is not a count"},
        {{"dead", "list", "d", "--since", "soon", NULL},
         "--since 'soon' is not a duration"},
        {{"dead", "list", "d", "--since", "1h", "--before", "2h", NULL},
         "--before 2h is not after --since 1h"},
        {{"dead", "list", "d", "--id-prefix", "a b", NULL},
         "--id-prefix needs 1 to 200 printable bytes"},
        {{"dead", "replay", "d", "r-2", "--grep", "x", NULL},
         "give an ID, --all or filters"},
        {{"dead", "replay", "d", "--all", "--grep", "x", NULL},
         "--all replays every dead task"},
        {{"dead", "replay", "d", "r-2", "--yes", NULL},
         "--yes goes with the filters"},
        {{"dead", "purge", "d", "--yes", NULL}, "--yes goes with the filters"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const test_cli_run *run = test_cli(redis.url, redis.dir, cases[i].args);
        cr_expect_eq(run->status, 64, "%s: %s", cases[i].why, run->err);
        cr_expect(strstr(run->err, cases[i].why), "want '%s', got %s",
                  cases[i].why, run->err);
    }
    cr_expect_eq(test_redis_int(rc, "ZCARD wharf:{d}:dead"), RECORDS,
                 "a refused command changed the dead set");
}
