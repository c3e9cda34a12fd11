/* rate_limit and limit_key on a real Redis Cluster (three primaries on
 * loopback): a type's buckets and per-value slots live in its own hash
 * slot, so its begin calls run on the node that owns its stream (a key
 * elsewhere would be refused as CROSSSLOT), and the rate and the cap per
 * value hold there as on one Redis. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "host_process.h"
#include "redis_cluster.h"

#define PER_CUSTOMER 10
#define RATE 50 /* per second per customer */
#define BURST 2

/* Redis's clock on c, in ms. */
static long long now_ms(redisContext *c)
{
    redisReply *r = test_redis_command(c, "TIME");
    long long ms;

    cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2);
    ms = atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;
    freeReplyObject(r);
    return ms;
}

static redisContext *owner;

static bool all_done(void *want)
{
    return test_redis_int(owner,
                          "EXISTS wharf:{stamp}:result:a%d "
                          "wharf:{stamp}:result:b%d",
                          PER_CUSTOMER - 1, PER_CUSTOMER - 1) == 2 &&
           test_redis_int(owner, "ZCARD wharf:{stamp}:delayed") == 0 &&
           test_redis_int(owner, "XLEN wharf:{stamp}:stream") == 0 &&
           *(int *)want;
}

static int by_value(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;

    return (x > y) - (x < y);
}

/* Two customers, one at a time each and 50/s each, burst 2: every task
 * runs once, a customer's runs never overlap, each customer's k-th start
 * keeps to its own bucket's schedule from t0, and the buckets and slots
 * are on the stream's node. */
Test(rate_cluster, a_keyed_rate_and_cap_hold_in_the_type_slot, .timeout = 200)
{
    test_cluster c;
    test_host h;
    char extra[512];
    const char *who[2] = {"a", "b"};
    long long t0, start[2][PER_CUSTOMER], end[2][PER_CUSTOMER];
    int yes = 1;

    test_cluster_start(&c, 3, 0);
    owner = test_cluster_connect(
        &c,
        test_cluster_owner(&c, test_cluster_slot(&c, "wharf:{stamp}:stream")));
    snprintf(extra, sizeof(extra),
             "[plugin.stamp]\npath = %s/stamp.so\n[type.stamp]\n"
             "rate_limit = %d/s\nrate_burst = %d\nconcurrency_limit = 1\n"
             "limit_key = /customer\n",
             WHARF_FIXTURE_DIR, RATE, BURST);
    test_host_manifest_opts(&h, NULL,
                            &(test_host_opts){.redis_url = c.url,
                                              .extra = extra,
                                              .log_level = "info",
                                              .host_keys = "workers = 2\n"});
    test_host_launch(&h, NULL);
    t0 = now_ms(owner);
    for (int k = 0; k < PER_CUSTOMER; k++)
        for (int i = 0; i < 2; i++) {
            char id[16], payload[64];
            snprintf(id, sizeof(id), "%s%d", who[i], k);
            snprintf(payload, sizeof(payload),
                     "{\"customer\": \"%s\", \"ms\": 20}", who[i]);
            test_add_entry(owner, "stamp", id, payload);
        }
    cr_assert(test_wait_until(all_done, &yes, TEST_EVENT_MS * 2),
              "not all done; see %s", h.log);
    for (int i = 0; i < 2; i++) {
        long long starts[PER_CUSTOMER];
        for (int k = 0; k < PER_CUSTOMER; k++) {
            redisReply *r = test_redis_command(
                owner, "GET wharf:{stamp}:result:%s%d", who[i], k);
            cr_assert(r && r->type == REDIS_REPLY_STRING);
            cr_assert_eq(sscanf(r->str, "%lld %lld", &start[i][k], &end[i][k]),
                         2);
            freeReplyObject(r);
            starts[k] = start[i][k];
        }
        qsort(starts, PER_CUSTOMER, sizeof(starts[0]), by_value);
        for (int k = 1; k <= PER_CUSTOMER; k++)
            cr_expect_geq(starts[k - 1],
                          t0 + (long long)((k - BURST) * 1000.0 / RATE) - 1,
                          "%s: start %d at t0%+lld", who[i], k,
                          starts[k - 1] - t0);
        for (int k = 0; k < PER_CUSTOMER; k++)
            for (int m = 0; m < PER_CUSTOMER; m++)
                cr_expect(m == k || start[i][m] >= end[i][k] ||
                              start[i][k] >= end[i][m],
                          "%s%d and %s%d ran at once", who[i], k, who[i], m);
    }
    cr_expect_eq(test_redis_int(owner, "GET wharf:{stamp}:fence"),
                 2 * PER_CUSTOMER, "a task began more than once");
    cr_expect_eq(test_redis_int(owner, "ZCARD wharf:{stamp}:dead"), 0);
    cr_expect_eq(test_redis_int(owner,
                                "EXISTS wharf:{stamp}:rate:a "
                                "wharf:{stamp}:rate:b wharf:{stamp}:slots:a "
                                "wharf:{stamp}:slots:b"),
                 4, "the buckets and slots are not on the stream's node");
    redisFree(owner);
    cr_assert_eq(test_host_stop(&h), 0);
    test_cluster_stop(&c);
}
