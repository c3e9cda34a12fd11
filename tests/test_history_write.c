/* The history's writer and reader against a real redis-server, on a clock
 * the test sets (history_writer_write takes the time): a minute is written
 * when it ends and not before, an idle type writes nothing, a stop writes
 * the minute under way, a write that failed is sent again with the same
 * figures, two runs of one host keep a field each, the reader sums hosts
 * or takes one, and the stored form reads back or is refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "clock_ms.h"
#include "conn.h"
#include "history.h"
#include "history_read.h"
#include "history_write.h"
#include "host_process.h"
#include "keys.h"
#include "redis_server.h"

static test_redis redis;
static redisContext *rc;
static conn *cn;
static metrics *m;

static void start(void)
{
    error_kind kind;
    char err[256];

    test_suite_up(&redis, 0, &rc);
    cn = conn_open(redis.url, NULL, 5000, &kind, err, sizeof(err));
    cr_assert_not_null(cn, "%s", err);
    cr_assert_eq(conn_connect(cn), 0, "%s", cn->errstr);
    m = metrics_create();
    cr_assert_not_null(m);
    cr_assert_eq(metrics_type_add(m, "alpha"), 0);
    cr_assert_eq(metrics_type_add(m, "beta"), 1);
}

static void stop(void)
{
    metrics_destroy(m);
    conn_close(cn);
    test_suite_down(&redis, &rc, (test_host *const[]){NULL});
}

TestSuite(history_write, .init = start, .fini = stop, .timeout = 60);

#define DAY_MS (24LL * 3600 * 1000)

/* The start of the minute now, on the wall clock: keys expire a day
 * after their minute, so the test's minutes must be today's. */
static int64_t this_minute_ms(void)
{
    return clock_wall_ms() / HISTORY_MINUTE_MS * HISTORY_MINUTE_MS;
}

static long long keys_of(const char *type)
{
    redisReply *r = test_redis_command(rc, "KEYS wharf:{%s}:history:*", type);
    long long n = (long long)r->elements;

    freeReplyObject(r);
    return n;
}

/* The figures of type's minute (the ms it starts at), summed over hosts
 * or of host. */
static history_figures read_minute(const char *type, int64_t at_ms,
                                   const char *host, history_hosts *hosts)
{
    history_figures f;
    char why[256];

    pipeline_reset(&cn->pipe);
    cr_assert_eq(history_read_add(&cn->pipe, "wharf", type,
                                  at_ms / HISTORY_MINUTE_MS, 1),
                 0);
    cr_assert_eq(pipeline_run(&cn->pipe), 0, "%s", cn->pipe.errstr);
    cr_assert_eq(
        history_read_take(&cn->pipe, 0, 1, host, &f, hosts, why, sizeof(why)),
        0, "%s", why);
    pipeline_reset(&cn->pipe);
    return f;
}

Test(history_write, a_minute_is_written_when_it_ends)
{
    history_writer *w = history_writer_create("box:a", "1-x");
    int64_t t = this_minute_ms();
    history_figures f;
    redisReply *ttl;
    char key[KEY_MAX];

    cr_assert_eq(
        history_writer_write(w, m, &cn->pipe, "wharf", DAY_MS, t + 10, false),
        0);
    for (int i = 0; i < 3; i++) {
        metrics_outcome(m, 0, OUTCOME_OK);
        metrics_run(m, 0, 2000, 40000);
    }
    metrics_outcome(m, 0, OUTCOME_DEAD);
    metrics_outcome(m, 0, OUTCOME_LOCKED); /* not one of the history's */
    cr_assert_not(history_writer_due(w, t + 30000));
    cr_assert_eq(history_writer_write(w, m, &cn->pipe, "wharf", DAY_MS,
                                      t + 30000, false),
                 0);
    cr_expect_eq(keys_of("alpha"), 0, "written before the minute ended");
    cr_assert(history_writer_due(w, t + HISTORY_MINUTE_MS));
    cr_assert_eq(history_writer_write(w, m, &cn->pipe, "wharf", DAY_MS,
                                      t + HISTORY_MINUTE_MS + 5, false),
                 0);
    cr_expect_eq(keys_of("alpha"), 1);
    cr_expect_eq(keys_of("beta"), 0, "an idle type wrote");
    f = read_minute("alpha", t, NULL, NULL);
    cr_expect_eq(f.v[HISTORY_OK], 3);
    cr_expect_eq(f.v[HISTORY_DEAD], 1);
    cr_expect_eq(f.v[HISTORY_RETRY], 0);
    cr_expect_eq(f.v[HISTORY_RUN_SUM_US], 6000);
    cr_expect_eq(f.v[HISTORY_RUN_BUCKETS + 1], 3, "2 ms is under 2.5 ms");
    cr_expect_eq(f.v[HISTORY_WAIT_BUCKETS + 5], 3, "40 ms is under 50 ms");
    cr_expect_eq(history_quantile_us(&f, 0, 0.95), 2500);
    cr_expect_eq(history_quantile_us(&f, 1, 0.5), 50000);
    history_key(key, sizeof(key), "wharf", "alpha", t / HISTORY_MINUTE_MS);
    ttl = test_redis_command(rc, "TTL %s", key);
    cr_expect(ttl->integer > 24 * 3600 - 120 && ttl->integer <= 24 * 3600 + 60,
              "TTL %lld", ttl->integer);
    freeReplyObject(ttl);

    /* a stop writes the minute under way: only what came since */
    metrics_outcome(m, 0, OUTCOME_RETRY);
    metrics_outcome(m, 1, OUTCOME_CANCELLED);
    cr_assert_eq(history_writer_write(w, m, &cn->pipe, "wharf", DAY_MS,
                                      t + HISTORY_MINUTE_MS + 20, true),
                 0);
    f = read_minute("alpha", t + HISTORY_MINUTE_MS, NULL, NULL);
    cr_expect_eq(f.v[HISTORY_RETRY], 1);
    cr_expect_eq(f.v[HISTORY_OK], 0);
    f = read_minute("beta", t + HISTORY_MINUTE_MS, NULL, NULL);
    cr_expect_eq(f.v[HISTORY_CANCELLED], 1);
    history_writer_destroy(w);
}

Test(history_write, a_failed_write_is_sent_again_once)
{
    history_writer *w = history_writer_create("box:a", "1-x");
    int64_t t = this_minute_ms();
    char url[64];
    error_kind kind;
    char err[256];
    conn *away;
    history_figures f;

    snprintf(url, sizeof(url), "redis://127.0.0.1:%d/0", test_free_port());
    away = conn_open(url, NULL, 1000, &kind, err, sizeof(err));
    cr_assert_not_null(away, "%s", err);
    history_writer_write(w, m, &cn->pipe, "wharf", DAY_MS, t, false);
    metrics_outcome(m, 0, OUTCOME_OK);
    metrics_outcome(m, 0, OUTCOME_OK);
    /* Redis away at the minute's end: kept */
    cr_expect_eq(history_writer_write(w, m, &away->pipe, "wharf", DAY_MS,
                                      t + HISTORY_MINUTE_MS, false),
                 -1);
    cr_expect(history_writer_due(w, t + HISTORY_MINUTE_MS + 1));
    cr_expect_eq(keys_of("alpha"), 0);
    metrics_outcome(m, 0, OUTCOME_OK); /* the next minute's */
    cr_expect_eq(history_writer_write(w, m, &cn->pipe, "wharf", DAY_MS,
                                      t + HISTORY_MINUTE_MS + 2, false),
                 0);
    cr_expect_not(history_writer_due(w, t + HISTORY_MINUTE_MS + 3));
    f = read_minute("alpha", t, NULL, NULL);
    cr_expect_eq(f.v[HISTORY_OK], 2, "the kept minute, as it was");
    /* sent again (as after a lost reply): still 2, a value not a sum */
    history_writer_destroy(w);
    w = history_writer_create("box:a", "1-x");
    metrics_destroy(m);
    m = metrics_create();
    metrics_type_add(m, "alpha");
    for (int i = 0; i < 2; i++)
        metrics_outcome(m, 0, OUTCOME_OK);
    history_writer_write(w, m, &cn->pipe, "wharf", DAY_MS, t, false);
    history_writer_write(w, m, &cn->pipe, "wharf", DAY_MS,
                         t + HISTORY_MINUTE_MS, false);
    f = read_minute("alpha", t, NULL, NULL);
    cr_expect_eq(f.v[HISTORY_OK], 2, "a write sent twice counted twice");
    conn_close(away);
    history_writer_destroy(w);
}

Test(history_write, runs_and_hosts_keep_fields_of_their_own)
{
    history_writer *first = history_writer_create("box:a", "1-x");
    history_writer *again = history_writer_create("box:a", "2-y");
    history_writer *other = history_writer_create("pad:b", "3-z");
    int64_t t = this_minute_ms();
    history_hosts hosts = {0};
    history_figures f;

    history_writer_write(first, m, &cn->pipe, "wharf", DAY_MS, t, false);
    metrics_outcome(m, 0, OUTCOME_OK);
    history_writer_write(first, m, &cn->pipe, "wharf", DAY_MS, t + 1, true);
    /* a new process: its counters from 0 (here: a fresh region) */
    metrics_destroy(m);
    m = metrics_create();
    metrics_type_add(m, "alpha");
    history_writer_write(again, m, &cn->pipe, "wharf", DAY_MS, t + 2, false);
    metrics_outcome(m, 0, OUTCOME_OK);
    metrics_outcome(m, 0, OUTCOME_OK);
    history_writer_write(again, m, &cn->pipe, "wharf", DAY_MS, t + 3, true);
    metrics_destroy(m);
    m = metrics_create();
    metrics_type_add(m, "alpha");
    history_writer_write(other, m, &cn->pipe, "wharf", DAY_MS, t + 4, false);
    metrics_outcome(m, 0, OUTCOME_DEAD);
    history_writer_write(other, m, &cn->pipe, "wharf", DAY_MS, t + 5, true);

    f = read_minute("alpha", t, NULL, &hosts);
    cr_expect_eq(f.v[HISTORY_OK], 3, "the restart overwrote the first run");
    cr_expect_eq(f.v[HISTORY_DEAD], 1);
    cr_expect_eq(hosts.n, 2);
    f = read_minute("alpha", t, "box:a", NULL);
    cr_expect_eq(f.v[HISTORY_OK], 3);
    cr_expect_eq(f.v[HISTORY_DEAD], 0);
    f = read_minute("alpha", t, "pad:b", NULL);
    cr_expect_eq(f.v[HISTORY_OK], 0);
    cr_expect_eq(f.v[HISTORY_DEAD], 1);
    history_writer_destroy(first);
    history_writer_destroy(again);
    history_writer_destroy(other);
}

Test(history_write, history_0_writes_and_keeps_nothing)
{
    history_writer *w = history_writer_create("box:a", "1-x");
    int64_t t = this_minute_ms();

    history_writer_write(w, m, &cn->pipe, "wharf", 0, t, false);
    metrics_outcome(m, 0, OUTCOME_OK);
    cr_expect_eq(history_writer_write(w, m, &cn->pipe, "wharf", 0,
                                      t + HISTORY_MINUTE_MS, false),
                 0);
    cr_expect_not(history_writer_due(w, t + HISTORY_MINUTE_MS + 1));
    cr_expect_eq(keys_of("alpha"), 0);
    history_writer_destroy(w);
}

Test(history_write, the_stored_form_reads_back_or_is_refused)
{
    history_figures f, g;
    char text[HISTORY_TEXT_MAX];

    for (size_t i = 0; i < HISTORY_VALUES; i++)
        f.v[i] = i * 1000003u + (i == 5 ? 18446744073709551615u : 0);
    history_format(&f, text, sizeof(text));
    cr_assert_eq(history_parse(text, strlen(text), &g), 0, "%s", text);
    cr_expect_eq(memcmp(&f, &g, sizeof(f)), 0);
    cr_expect_eq(history_parse("v2 1 2", 6, &g), -1);
    cr_expect_eq(history_parse("v1 1 2", 6, &g), -1, "too few");
    cr_expect_eq(history_parse("v1", 2, &g), -1);
    memset(&f, 0, sizeof(f));
    cr_expect(history_empty(&f));
    cr_expect_eq(history_quantile_us(&f, 0, 0.5), -2, "nothing ran");
    f.v[HISTORY_RUN_BUCKETS + METRICS_BUCKETS - 1] = 1;
    cr_expect_eq(history_quantile_us(&f, 0, 0.5), -1, "past 10 s");
    cr_expect_eq(history_host_len("box:a#1-x", 9), 5);
    cr_expect_eq(history_host_len("box:a", 5), 5);
}
