/* pressure.h on its own, against a real redis-server (its decisions run
 * in Redis, in one script per type): the figures it reads (ready leaves
 * out the running, never below 0), the backlog it publishes, and the
 * pressure flag with its hysteresis between low_watermark and
 * high_watermark, each with its short TTL. */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "broker.h"
#include "broker_config.h"
#include "pressure.h"
#include "redis_server.h"

static test_redis redis;
static redisContext *rc;
static config *cfg;
static broker b;
static policy pol; /* low_watermark 2, high_watermark 5 */

static void start(void)
{
    static const char *const types[] = {"p"};
    const policy *policies[] = {&pol};

    test_broker_up(&redis, &rc, &cfg);
    pol = cfg->defaults;
    pol.low_watermark = 2;
    pol.high_watermark = 5;
    test_broker_open(&b, cfg, types, policies, 1, "tester");
}

static void stop(void)
{
    test_broker_down(&redis, &rc, &cfg, &b);
}

TestSuite(pressure, .init = start, .fini = stop, .timeout = 60);

static void add(int n)
{
    for (int i = 0; i < n; i++)
        freeReplyObject(test_redis_command(
            rc, "XADD wharf:{p}:stream * id x type p payload x"));
}

/* One refresh; its one figure. */
static queue_figures refresh(void)
{
    queue_figures f[1];

    memset(f, 0, sizeof(f));
    cr_assert_eq(pressure_refresh(&b, f), 0, "%s", b.errstr);
    return f[0];
}

static long long pressure_ttl(void)
{
    return test_redis_int(rc, "PTTL wharf:{p}:pressure");
}

Test(pressure, figures_and_the_published_backlog)
{
    add(3);
    freeReplyObject(test_redis_command(rc, "ZADD wharf:{p}:delayed 1 d1"));
    freeReplyObject(test_redis_command(rc, "ZADD wharf:{p}:dead 1 x 2 y"));
    queue_figures f = refresh();
    cr_assert_str_eq(f.type, "p");
    cr_assert_eq(f.ready, 3);
    cr_assert_eq(f.running, 0);
    cr_assert_eq(f.delayed, 1);
    cr_assert_eq(f.dead, 2);
    cr_assert_str_neq(f.node, "", "no node named");
    /* backlog = ready + delayed, with the short TTL */
    cr_assert_eq(test_redis_int(rc, "GET wharf:{p}:backlog"), 4);
    long long ttl = test_redis_int(rc, "PTTL wharf:{p}:backlog");
    cr_assert(ttl > 0 && ttl <= PRESSURE_TTL_MS, "backlog TTL %lld", ttl);

    /* Two claimed by a consumer: running, and out of ready. */
    freeReplyObject(test_redis_command(
        rc, "XREADGROUP GROUP wharf someone COUNT 2 STREAMS wharf:{p}:stream "
            ">"));
    f = refresh();
    cr_assert_eq(f.running, 2);
    cr_assert_eq(f.ready, 1);
    cr_assert_eq(test_redis_int(rc, "GET wharf:{p}:backlog"), 2);

    /* Entries gone from the stream while still pending: ready is 0, not
     * negative. */
    freeReplyObject(test_redis_command(rc, "XTRIM wharf:{p}:stream MAXLEN 0"));
    f = refresh();
    cr_assert_eq(f.ready, 0);
    cr_assert_eq(f.running, 2);
    cr_assert_eq(test_redis_int(rc, "GET wharf:{p}:backlog"), 1);
}

Test(pressure, flag_has_hysteresis_between_the_watermarks)
{
    /* 3: between low (2) and high (5), never raised: stays clear. */
    add(3);
    cr_assert_eq(refresh().pressure, 0);
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{p}:pressure"), 0);
    /* 5 is not above high. */
    add(2);
    cr_assert_eq(refresh().pressure, 0);
    /* 6 is: raised, with the short TTL. */
    add(1);
    cr_assert_eq(refresh().pressure, 1);
    long long ttl = pressure_ttl();
    cr_assert(ttl > 0 && ttl <= PRESSURE_TTL_MS, "pressure TTL %lld", ttl);
    /* Down to 2 (not below low): still raised, its TTL refreshed. */
    freeReplyObject(test_redis_command(rc, "XTRIM wharf:{p}:stream MAXLEN 2"));
    freeReplyObject(
        test_redis_command(rc, "PEXPIRE wharf:{p}:pressure 100000"));
    cr_assert_eq(refresh().pressure, 1);
    ttl = pressure_ttl();
    cr_assert(ttl > 0 && ttl <= PRESSURE_TTL_MS, "TTL not refreshed: %lld",
              ttl);
    /* Delayed tasks count in the backlog: 2 + 4 is above high again. */
    freeReplyObject(
        test_redis_command(rc, "ZADD wharf:{p}:delayed 1 a 2 b 3 c 4 d"));
    cr_assert_eq(refresh().pressure, 1);
    /* 1: below low, cleared. */
    freeReplyObject(test_redis_command(rc, "DEL wharf:{p}:delayed"));
    freeReplyObject(test_redis_command(rc, "XTRIM wharf:{p}:stream MAXLEN 1"));
    cr_assert_eq(refresh().pressure, 0);
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{p}:pressure"), 0);
    /* 3 again: between, and clear stays clear. */
    add(2);
    cr_assert_eq(refresh().pressure, 0);
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{p}:pressure"), 0);
}

/* A flag that expired (every host that refreshed it died) reads as clear
 * in between the watermarks: it does not come back by itself. */
Test(pressure, an_expired_flag_stays_clear_between_the_watermarks)
{
    add(6);
    cr_assert_eq(refresh().pressure, 1);
    freeReplyObject(test_redis_command(rc, "DEL wharf:{p}:pressure"));
    freeReplyObject(test_redis_command(rc, "XTRIM wharf:{p}:stream MAXLEN 4"));
    cr_assert_eq(refresh().pressure, 0);
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{p}:pressure"), 0);
}

/* A stream without its group (deleted under the host) counts nothing as
 * running, rather than failing the refresh. */
Test(pressure, a_missing_group_counts_nothing_running)
{
    add(3);
    freeReplyObject(test_redis_command(
        rc, "XREADGROUP GROUP wharf someone COUNT 2 STREAMS wharf:{p}:stream "
            ">"));
    freeReplyObject(
        test_redis_command(rc, "XGROUP DESTROY wharf:{p}:stream wharf"));
    queue_figures f = refresh();
    cr_assert_eq(f.running, 0);
    cr_assert_eq(f.ready, 3);
}

Test(pressure, no_connection_writes_nothing)
{
    queue_figures f[1];

    memset(f, 0x5a, sizeof(f));
    broker_disconnect(&b);
    cr_assert_eq(pressure_refresh(&b, f), -1);
    unsigned char *bytes = (unsigned char *)f;
    for (size_t i = 0; i < sizeof(f); i++)
        cr_assert_eq(bytes[i], 0x5a, "out was written at byte %zu", i);
    /* Redis gone while connected: -1 too. */
    cr_assert_eq(broker_connect(&b), 0, "%s", b.errstr);
    test_redis_stop(&redis);
    cr_assert_eq(pressure_refresh(&b, f), -1);
    cr_assert_eq(bytes[0], 0x5a);
}
