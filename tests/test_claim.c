/* claim.h on its own, against real Redis: on one server one XREADGROUP
 * over every stream (COUNT per stream; a consumer's own pending entries
 * read again first after a reconnect, without blocking; a BLOCK that an
 * entry ends), an error reply as a failed claim; and on a Redis Cluster
 * a wait on every type at once, whose other waiters are released the
 * moment one type's entry comes. Each wait is for an event (a client
 * seen blocked), never a sleep. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "broker.h"
#include "broker_config.h"
#include "claim.h"
#include "host_process.h"
#include "redis_cluster.h"
#include "redis_server.h"
#include "node_scripts.h"

static test_redis redis;
static test_cluster cluster;
static redisContext *rc;
static config *cfg;
static broker b;
static broker_job jobs[64];
static pid_t adder;

static void stop(void)
{
    if (adder > 0) {
        kill(adder, SIGKILL);
        waitpid(adder, NULL, 0);
    }
    broker_destroy(&b);
    config_free(cfg);
    if (rc)
        redisFree(rc);
    test_redis_stop(&redis);
    test_cluster_stop(&cluster);
}

TestSuite(claim, .fini = stop, .timeout = 120);

/* A broker for types, connected to url. */
static void open_broker(const char *url, const char *dir,
                        const char *const *types, size_t n)
{
    static const policy *policies[8];

    node_scripts_check();
    cfg = test_config_for(url, dir);
    for (size_t i = 0; i < n; i++)
        policies[i] = &cfg->defaults;
    cr_assert_eq(broker_init(&b, cfg, types, policies, n, "me"), 0, "%s",
                 b.errstr);
    cr_assert_eq(broker_connect(&b), 0, "%s", b.errstr);
}

static void open_single(void)
{
    static const char *const types[] = {"alpha", "beta"};

    test_redis_start(&redis, 0);
    rc = test_redis_connect(&redis);
    open_broker(redis.url, redis.dir, types, 2);
}

static void add(redisContext *c, const char *type, const char *id)
{
    test_add_entry(c, type, id, "x");
}

/* Claims as the worker does: claim_next, then broker_jobs (which marks
 * a queue's history read once it came back empty). The jobs; the reply
 * in *reply (caller frees). */
static size_t claim(unsigned count, int block_ms, redisReply **reply)
{
    *reply = claim_next(&b, count, block_ms);
    cr_assert(*reply != NULL, "%s", b.errstr);
    return broker_jobs(&b, *reply, jobs, 64);
}

/* The entries of stream in a claim reply. */
static size_t entries_of(const redisReply *r, const char *stream)
{
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        const redisReply *s = r->element[i];
        if (s->type == REDIS_REPLY_ARRAY && s->elements == 2 &&
            strcmp(s->element[0]->str, stream) == 0)
            return s->element[1]->elements;
    }
    return 0;
}

Test(claim, one_read_over_every_stream_with_count_per_stream)
{
    redisReply *r;

    open_single();
    claim(16, 0, &r); /* the history: nothing of ours yet */
    freeReplyObject(r);
    add(rc, "alpha", "a1");
    add(rc, "alpha", "a2");
    add(rc, "beta", "b1");
    freeReplyObject(test_redis_command(rc, "CONFIG RESETSTAT"));
    cr_assert_eq(claim(1, 0, &r), 2, "COUNT 1 is per stream");
    cr_assert_eq(entries_of(r, "wharf:{alpha}:stream"), 1);
    cr_assert_eq(entries_of(r, "wharf:{beta}:stream"), 1);
    freeReplyObject(r);
    r = test_redis_command(rc, "INFO commandstats");
    cr_assert(strstr(r->str, "cmdstat_xreadgroup:calls=1,"),
              "not one XREADGROUP: %s", r->str);
    freeReplyObject(r);
    cr_assert_eq(claim(16, 0, &r), 1);
    cr_assert_eq(entries_of(r, "wharf:{alpha}:stream"), 1);
    freeReplyObject(r);
}

Test(claim, own_pending_entries_come_first_after_a_reconnect)
{
    redisReply *r;

    open_single();
    add(rc, "alpha", "a1");
    add(rc, "alpha", "a2");
    claim(16, 0, &r); /* history: empty, now read */
    freeReplyObject(r);
    cr_assert_eq(claim(16, 0, &r), 2);
    freeReplyObject(r);
    add(rc, "alpha", "a3");
    /* Reconnected: what is ours already comes back, not a3, and at once
     * although a long BLOCK is asked for (history is never waited on). */
    cr_assert_eq(broker_connect(&b), 0, "%s", b.errstr);
    cr_assert_eq(claim(16, 2 * TEST_EVENT_MS, &r), 2);
    cr_assert_str_eq(jobs[0].e.task.id, "a1");
    cr_assert_str_eq(jobs[1].e.task.id, "a2");
    freeReplyObject(r);
    /* History read through (an empty answer), then the new one. */
    cr_assert_eq(claim(16, 0, &r), 0);
    freeReplyObject(r);
    cr_assert_eq(claim(16, 0, &r), 1);
    cr_assert_str_eq(jobs[0].e.task.id, "a3");
    freeReplyObject(r);
}

/* Clients blocked on c now. */
static long long blocked_on(redisContext *c)
{
    redisReply *r = test_redis_command(c, "INFO clients");
    const char *at = r->type == REDIS_REPLY_STRING
                         ? strstr(r->str, "blocked_clients:")
                         : NULL;
    long long n = at ? atoll(at + strlen("blocked_clients:")) : 0;

    freeReplyObject(r);
    return n;
}

/* At least want clients blocked over these connections. */
typedef struct blocked {
    redisContext **conns;
    int n;
    long long want;
} blocked;

static bool all_blocked(void *arg)
{
    const blocked *w = arg;
    long long sum = 0;

    for (int i = 0; i < w->n; i++)
        sum += blocked_on(w->conns[i]);
    return sum >= w->want;
}

/* Forks a process that, with connections of its own to the n servers,
 * waits until want clients are blocked over them, adds an entry "late"
 * for type through server `to` and exits. */
static void add_when_blocked(test_redis *servers, int n, long long want, int to,
                             const char *type)
{
    fflush(NULL);
    adder = fork();
    cr_assert(adder >= 0);
    if (adder == 0) {
        redisContext *own[TEST_CLUSTER_MAX];
        for (int i = 0; i < n; i++)
            own[i] = test_redis_connect(&servers[i]);
        blocked w = {own, n, want};
        if (!test_wait_until(all_blocked, &w, TEST_EVENT_MS))
            _exit(1);
        add(own[to], type, "late");
        _exit(0);
    }
}

/* Waits for the adder; true if it added its entry. */
static bool adder_added(void)
{
    int status;
    pid_t pid = waitpid(adder, &status, 0);

    adder = 0;
    return pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

Test(claim, a_block_ends_when_an_entry_comes)
{
    redisReply *r;

    open_single();
    claim(16, 0, &r);
    freeReplyObject(r);
    /* Empty: a short BLOCK runs out with nothing, which is no error. */
    cr_assert_eq(claim(16, 50, &r), 0);
    cr_assert_eq(r->type, REDIS_REPLY_NIL);
    freeReplyObject(r);
    /* An entry added while it blocks ends the BLOCK: the claim has it,
     * long before the BLOCK would have run out. */
    add_when_blocked(&redis, 1, 1, 0, "beta");
    cr_assert_eq(claim(16, 10 * TEST_EVENT_MS, &r), 1);
    cr_assert_str_eq(jobs[0].e.task.id, "late");
    cr_assert_eq(entries_of(r, "wharf:{beta}:stream"), 1);
    freeReplyObject(r);
    cr_assert(adder_added());
}

Test(claim, an_error_reply_fails_the_claim)
{
    redisReply *r;

    open_single();
    claim(16, 0, &r);
    freeReplyObject(r);
    freeReplyObject(test_redis_command(rc, "DEL wharf:{alpha}:stream"));
    cr_assert_null(claim_next(&b, 16, 0));
    cr_assert(strstr(b.errstr, "NOGROUP"), "%s", b.errstr);
}

/* On a cluster: one waiter per type; the first answer releases the rest
 * (CLIENT UNBLOCK), so when the claim returns no waiter is still blocked
 * anywhere, however long its BLOCK was. */
Test(claim, cluster_wait_releases_the_other_waiters)
{
    static const char *const candidates[] = {"alpha", "beta",  "gamma",
                                             "delta", "omega", "kappa"};
    const char *types[2] = {NULL, NULL};
    int owners[2] = {-1, -1};
    char key[64], dir[] = "/tmp/wharf-test-claim-XXXXXX";
    redisContext *conns[3];
    redisReply *r;

    test_cluster_start(&cluster, 3, 0);
    /* Two types served by two different nodes. */
    for (size_t i = 0; i < 6 && !types[1]; i++) {
        snprintf(key, sizeof(key), "wharf:{%s}:stream", candidates[i]);
        int owner =
            test_cluster_owner(&cluster, test_cluster_slot(&cluster, key));
        int k = types[0] ? 1 : 0;
        if (k == 1 && owner == owners[0])
            continue;
        types[k] = candidates[i];
        owners[k] = owner;
    }
    cr_assert(types[1], "no two types on two nodes");
    cr_assert(mkdtemp(dir) != NULL);
    open_broker(cluster.url, dir, types, 2);
    cr_assert_eq(claim(16, 0, &r), 0); /* the history */
    freeReplyObject(r);

    add_when_blocked(cluster.node, 3, 2, owners[1], types[1]);
    cr_assert_eq(claim(16, 10 * TEST_EVENT_MS, &r), 1);
    cr_assert_str_eq(jobs[0].e.task.id, "late");
    cr_assert_str_eq(jobs[0].e.task.type, types[1]);
    cr_assert_eq(r->elements, 1, "a released waiter's nil was gathered");
    freeReplyObject(r);
    cr_assert(adder_added());
    for (int i = 0; i < 3; i++)
        conns[i] = test_cluster_connect(&cluster, i);
    blocked none = {conns, 3, 1};
    cr_assert_not(all_blocked(&none), "a waiter is still blocked");
    for (int i = 0; i < 3; i++)
        redisFree(conns[i]);
}
