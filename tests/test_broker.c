/* The broker's batched scripts against a private redis-server: one begin
 * and one finish call carry many tasks, of mixed kinds, queues and
 * consumers, and each task still comes out exactly as if it were alone
 * (cached, locked, fresh token, stale, envelope). Also: a server that lost
 * its scripts mid-pipeline, and batches larger than one call. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <wharf/client.h>

#include "broker.h"
#include "broker_config.h"
#include "redis_server.h"
#include "node_scripts.h"

#define TRACE "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

static test_redis redis;
static redisContext *rc;
static config *cfg;
static broker b, other;
static broker_job jobs[256];

static void start(void)
{
    test_broker_up(&redis, &rc, &cfg);
}

static void stop(void)
{
    broker_destroy(&other);
    test_broker_down(&redis, &rc, &cfg, &b);
}

TestSuite(broker, .init = start, .fini = stop, .timeout = 60);

/* A broker for the types alpha and beta, connected. */
static void open_broker(broker *br, const char *consumer)
{
    static const char *const types[] = {"alpha", "beta"};

    test_broker_open(br, cfg, types, NULL, 2, consumer);
}

static void add_task(const char *type, const char *id)
{
    freeReplyObject(test_redis_command(
        rc,
        "XADD wharf:{%s}:stream * id %s type %s payload p-%s attempt 1 "
        "enqueued_at 1700000000000 trace %s",
        type, id, type, id, TRACE));
}

/* Claims up to count entries per queue for br: the number of jobs. The
 * reply stays alive in *claim (the jobs point into it). */
static size_t claim(broker *br, unsigned count, redisReply **claim_reply)
{
    size_t n = 0;

    /* The first claim reads the consumer's own (no) pending entries. */
    for (int i = 0; i < 2 && n == 0; i++) {
        freeReplyObject(*claim_reply);
        *claim_reply = broker_claim(br, count, 0);
        cr_assert(*claim_reply != NULL, "%s", br->errstr);
        n = broker_jobs(br, *claim_reply, jobs, 256);
    }
    return n;
}

static broker_job *job_of(size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(jobs[i].e.task.id, id) == 0)
            return &jobs[i];
    cr_assert_fail("no job %s", id);
    return NULL;
}

/* j took its lock with fence: its token is "<fence>-<owner>", a lock
 * value of 16 hex digits of owner. */
static void assert_token(const broker_job *j, unsigned long long fence)
{
    char want[64];

    cr_assert_eq(strlen(j->owner), 16, "owner '%s'", j->owner);
    cr_assert_eq(strspn(j->owner, "0123456789abcdef"), 16);
    snprintf(want, sizeof(want), "%llu-%s", fence, j->owner);
    cr_assert_str_eq(j->token, want);
    cr_assert_eq(j->e.task.fence, fence);
}

static char *get(const char *fmt, const char *a, const char *c)
{
    redisReply *r = test_redis_command(rc, fmt, a, c);
    char *s = strdup(r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
    return s;
}

Test(broker, one_batch_of_every_kind_ends_as_each_would_alone)
{
    redisReply *reply = NULL;
    size_t n;
    char *s;

    open_broker(&b, "host:test:0");
    for (int i = 1; i <= 6; i++) {
        char id[8];
        snprintf(id, sizeof(id), "a%d", i);
        add_task("alpha", id);
    }
    freeReplyObject(test_redis_command(rc, "SET wharf:{alpha}:result:a2 x"));
    freeReplyObject(
        test_redis_command(rc, "SET wharf:{alpha}:lock:a3 999 PX 60000"));
    n = claim(&b, 16, &reply);
    cr_assert_eq(n, 6);
    cr_assert_eq(broker_begin(&b, jobs, n), 0, "%s", b.errstr);

    /* Tokens are drawn in order by every task not cached: a1 1, a3 2
     * (lost to the holder), a4 3, a5 4, a6 5. */
    cr_assert_eq(job_of(n, "a1")->begin, BEGIN_RUN);
    assert_token(job_of(n, "a1"), 1);
    cr_assert_eq(job_of(n, "a2")->begin, BEGIN_CACHED);
    cr_assert_eq(job_of(n, "a3")->begin, BEGIN_LOCKED);
    assert_token(job_of(n, "a4"), 3);
    assert_token(job_of(n, "a5"), 4);
    assert_token(job_of(n, "a6"), 5);
    /* One begin call, one owner. */
    cr_assert_str_eq(job_of(n, "a1")->owner, job_of(n, "a6")->owner);
    cr_assert_eq(test_redis_int(rc, "GET wharf:{alpha}:fence"), 5);
    s = get("GET wharf:{alpha}:lock:%s%s", "a", "4");
    cr_assert_str_eq(s, job_of(n, "a4")->token);
    free(s);

    job_of(n, "a1")->finish = FINISH_OK;
    job_of(n, "a1")->result = (const unsigned char *)"r1";
    job_of(n, "a1")->result_len = 2;
    job_of(n, "a2")->finish = FINISH_ACK;
    job_of(n, "a3")->finish = FINISH_RESCHEDULE;
    job_of(n, "a3")->next_attempt = 1;
    job_of(n, "a3")->delay_ms = 500;
    job_of(n, "a3")->reason = "locked by another run";
    job_of(n, "a4")->finish = FINISH_RETRY;
    job_of(n, "a4")->next_attempt = 2;
    job_of(n, "a4")->delay_ms = 1000;
    job_of(n, "a4")->reason = "boom";
    job_of(n, "a5")->finish = FINISH_DEAD;
    job_of(n, "a5")->next_attempt = 1;
    job_of(n, "a5")->reason = "fatal";
    job_of(n, "a6")->finish = FINISH_OK;
    /* a6's lock was taken over: its run is stale and writes nothing. */
    freeReplyObject(
        test_redis_command(rc, "SET wharf:{alpha}:lock:a6 other PX 60000"));
    cr_assert_eq(broker_finish(&b, jobs, n), 0, "%s", b.errstr);

    cr_assert_eq(job_of(n, "a1")->outcome, OUTCOME_OK);
    cr_assert_eq(job_of(n, "a2")->outcome, OUTCOME_CACHED);
    cr_assert_eq(job_of(n, "a3")->outcome, OUTCOME_LOCKED);
    cr_assert_eq(job_of(n, "a4")->outcome, OUTCOME_RETRY);
    cr_assert_eq(job_of(n, "a5")->outcome, OUTCOME_DEAD);
    cr_assert_eq(job_of(n, "a6")->outcome, OUTCOME_STALE);

    s = get("GET wharf:{alpha}:result:%s%s", "a", "1");
    cr_assert_str_eq(s, "r1");
    free(s);
    cr_assert_gt(test_redis_int(rc, "PTTL wharf:{alpha}:result:a1"), 0);
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{alpha}:lock:a1"), 0);
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{alpha}:lock:a4"), 0);
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{alpha}:lock:a5"), 0);
    /* Another holder's lock is left alone. */
    s = get("GET wharf:{alpha}:lock:%s%s", "a", "3");
    cr_assert_str_eq(s, "999");
    free(s);
    s = get("GET wharf:{alpha}:lock:%s%s", "a", "6");
    cr_assert_str_eq(s, "other");
    free(s);
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{alpha}:result:a6"), 0);

    s = get("HGET wharf:{alpha}:task:%s %s", "a3", "attempt");
    cr_assert_str_eq(s, "1");
    free(s);
    s = get("HGET wharf:{alpha}:task:%s %s", "a4", "attempt");
    cr_assert_str_eq(s, "2");
    free(s);
    s = get("HGET wharf:{alpha}:task:%s %s", "a4", "error");
    cr_assert_str_eq(s, "boom");
    free(s);
    s = get("HGET wharf:{alpha}:task:%s %s", "a4", "worker");
    cr_assert_str_eq(s, "host:test:0");
    free(s);
    /* A dead task's record is its own key, dead:<id>. */
    s = get("HGET wharf:{alpha}:dead:%s %s", "a5", "payload");
    cr_assert_str_eq(s, "p-a5");
    free(s);
    cr_assert_gt(test_redis_int(rc, "PTTL wharf:{alpha}:dead:a5"), 0);
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{alpha}:task:a5"), 0);
    cr_assert_eq(test_redis_int(rc, "ZCARD wharf:{alpha}:delayed"), 2);
    cr_assert_eq(test_redis_int(rc, "ZCARD wharf:{alpha}:dead"), 1);
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{alpha}:task:a6"), 0);
    /* Only the stale run's entry is left, still pending. */
    cr_assert_eq(test_redis_int(rc, "XLEN wharf:{alpha}:stream"), 1);
    freeReplyObject(reply);
}

Test(broker, a_server_that_lost_its_scripts_mid_pipeline)
{
    redisReply *reply = NULL;
    size_t n;

    open_broker(&b, "host:test:0");
    add_task("alpha", "x1");
    add_task("beta", "y1");
    add_task("alpha", "x2");
    n = claim(&b, 16, &reply);
    cr_assert_eq(n, 3);
    /* Two queues: two begin calls in one round trip, both NOSCRIPT. */
    freeReplyObject(test_redis_command(rc, "SCRIPT FLUSH"));
    cr_assert_eq(broker_begin(&b, jobs, n), 0, "%s", b.errstr);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(jobs[i].begin, BEGIN_RUN, "%s", jobs[i].e.task.id);
        jobs[i].finish = FINISH_OK;
    }
    freeReplyObject(test_redis_command(rc, "SCRIPT FLUSH"));
    cr_assert_eq(broker_finish(&b, jobs, n), 0, "%s", b.errstr);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(jobs[i].outcome, OUTCOME_OK, "%s", jobs[i].e.task.id);
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{alpha}:result:x1 "
                                    "wharf:{alpha}:result:x2 "
                                    "wharf:{beta}:result:y1"),
                 3);
    cr_assert_eq(test_redis_int(rc, "XLEN wharf:{alpha}:stream"), 0);
    cr_assert_eq(test_redis_int(rc, "XLEN wharf:{beta}:stream"), 0);
    freeReplyObject(reply);
}

Test(broker, a_batch_larger_than_one_call)
{
    redisReply *reply = NULL, *pending;
    size_t n;

    open_broker(&b, "host:test:0");
    for (int i = 0; i < 150; i++) {
        char id[16];
        snprintf(id, sizeof(id), "big%d", i);
        add_task("alpha", id);
    }
    n = claim(&b, 200, &reply);
    cr_assert_eq(n, 150);
    cr_assert_eq(broker_begin(&b, jobs, n), 0, "%s", b.errstr);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(jobs[i].begin, BEGIN_RUN);
        assert_token(&jobs[i], i + 1);
        jobs[i].finish = i % 10 == 0 ? FINISH_RETRY : FINISH_OK;
        jobs[i].next_attempt = 2;
        jobs[i].delay_ms = 60000;
    }
    cr_assert_eq(broker_finish(&b, jobs, n), 0, "%s", b.errstr);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(jobs[i].outcome, i % 10 == 0 ? OUTCOME_RETRY : OUTCOME_OK);
    cr_assert_eq(test_redis_int(rc, "XLEN wharf:{alpha}:stream"), 0);
    cr_assert_eq(test_redis_int(rc, "ZCARD wharf:{alpha}:delayed"), 15);
    pending = test_redis_command(rc, "XPENDING wharf:{alpha}:stream wharf");
    cr_assert_eq(pending->element[0]->integer, 0);
    freeReplyObject(pending);
    freeReplyObject(reply);
}

Test(broker, each_job_is_judged_by_its_own_consumer)
{
    redisReply *mine = NULL, *theirs = NULL;
    broker_job batch[4];
    size_t n;

    open_broker(&b, "host:test:0");
    open_broker(&other, "host:test:1");
    add_task("alpha", "m1");
    add_task("alpha", "m2");
    n = claim(&b, 2, &mine);
    cr_assert_eq(n, 2);
    batch[0] = jobs[0];
    batch[1] = jobs[1];
    add_task("alpha", "t1");
    add_task("alpha", "t2");
    n = claim(&other, 2, &theirs);
    cr_assert_eq(n, 2);
    batch[2] = jobs[0];
    batch[3] = jobs[1];
    /* The supervisor's way: finish the other consumer's entries by name,
     * in the same call as its own; one job names the wrong consumer. */
    for (int i = 0; i < 4; i++)
        batch[i].finish = FINISH_ACK;
    batch[1].consumer = "host:test:1"; /* m2 is not pending there */
    batch[2].consumer = "host:test:1";
    batch[3].consumer = "host:test:1";
    cr_assert_eq(broker_finish(&b, batch, 4), 0, "%s", b.errstr);
    cr_assert_eq(batch[0].outcome, OUTCOME_CACHED);
    cr_assert_eq(batch[1].outcome, OUTCOME_STALE);
    cr_assert_eq(batch[2].outcome, OUTCOME_CACHED);
    cr_assert_eq(batch[3].outcome, OUTCOME_CACHED);
    cr_assert_eq(test_redis_int(rc, "XLEN wharf:{alpha}:stream"), 1);
    freeReplyObject(mine);
    freeReplyObject(theirs);
}

Test(broker, entries_behind_older_pending_ones_are_still_owned)
{
    redisReply *reply = NULL;
    size_t n;

    open_broker(&b, "host:test:0");
    for (int i = 1; i <= 4; i++) {
        char id[8];
        snprintf(id, sizeof(id), "o%d", i);
        add_task("alpha", id);
    }
    n = claim(&b, 16, &reply);
    cr_assert_eq(n, 4);
    cr_assert_eq(broker_begin(&b, jobs, n), 0, "%s", b.errstr);
    /* Finish the newest two only: the consumer's two oldest pending
     * entries fill the XPENDING page the script reads first. */
    jobs[2].finish = FINISH_OK;
    jobs[3].finish = FINISH_OK;
    cr_assert_eq(broker_finish(&b, jobs + 2, 2), 0, "%s", b.errstr);
    cr_assert_eq(jobs[2].outcome, OUTCOME_OK);
    cr_assert_eq(jobs[3].outcome, OUTCOME_OK);
    cr_assert_eq(test_redis_int(rc, "XLEN wharf:{alpha}:stream"), 2);
    cr_assert_eq(broker_release(&b, jobs, 2), 0, "%s", b.errstr);
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{alpha}:lock:o1"), 0);
    cr_assert_eq(jobs[0].begin, BEGIN_NONE);
    freeReplyObject(reply);
}

/* Renew takes 3n + 4 arguments: a worker holding 200 tasks of a type used
 * to go over the old 256-argument limit and renew nothing, silently. */
Test(broker, renew_of_two_hundred_tasks_in_one_call)
{
    static const char *entry_ids[200], *task_ids[200], *tokens[200];
    static int64_t idle[200], ttl[200];
    redisReply *reply = NULL;
    size_t n;

    open_broker(&b, "host:test:0");
    for (int i = 0; i < 200; i++) {
        char id[16];
        snprintf(id, sizeof(id), "lease%d", i);
        add_task("alpha", id);
    }
    n = claim(&b, 256, &reply);
    cr_assert_eq(n, 200);
    cr_assert_eq(broker_begin(&b, jobs, n), 0, "%s", b.errstr);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(jobs[i].begin, BEGIN_RUN);
        entry_ids[i] = jobs[i].e.entry_id;
        task_ids[i] = jobs[i].e.task.id;
        tokens[i] = jobs[i].token;
        freeReplyObject(test_redis_command(
            rc, "PEXPIRE wharf:{alpha}:lock:%s 1000", task_ids[i]));
    }
    cr_assert_eq(broker_renew(&b, &b.queues[0], b.consumer, entry_ids, task_ids,
                              tokens, n, idle, ttl),
                 200, "%s", b.errstr);
    /* Every lock got lock_ttl again (60 s by default), and the reply says
     * how much each had left before: at most the 1 s set above. */
    for (size_t i = 0; i < n; i++) {
        cr_assert_gt(
            test_redis_int(rc, "PTTL wharf:{alpha}:lock:%s", task_ids[i]), 1000,
            "%s", task_ids[i]);
        cr_assert(ttl[i] >= 0 && ttl[i] <= 1000, "%s: %lld", task_ids[i],
                  (long long)ttl[i]);
        cr_assert_geq(idle[i], 0, "%s", task_ids[i]);
    }
    /* A lock that no longer holds the token is reported lost (-2). */
    freeReplyObject(test_redis_command(rc, "DEL wharf:{alpha}:lock:%s",
                                       task_ids[0]));
    cr_assert_eq(broker_renew(&b, &b.queues[0], b.consumer, entry_ids, task_ids,
                              tokens, 1, idle, ttl),
                 1, "%s", b.errstr);
    cr_assert_eq(ttl[0], -2);
    freeReplyObject(reply);
}

/* Enqueues id of type alpha through the client library: its status. */
static wharf_client_status enqueue_id(const char *id)
{
    wharf_client *client = NULL;
    wharf_enqueue_opts opts = {
        .type = "alpha", .payload = "again", .payload_len = 5, .id = id};
    wharf_enqueue_reply reply;
    wharf_client_status status;
    char err[256];

    cr_assert_eq(
        wharf_client_open(&client, redis.url, NULL, NULL, err, sizeof(err)),
        WHARF_CLIENT_OK, "%s", err);
    status = wharf_enqueue(client, &opts, &reply);
    wharf_client_close(client);
    return status;
}

/* Runs the one alpha task there is to its finish kind. */
static broker_job *run_one(finish_kind kind, redisReply **reply)
{
    size_t n = claim(&b, 16, reply);

    cr_assert_eq(n, 1);
    cr_assert_eq(broker_begin(&b, jobs, n), 0, "%s", b.errstr);
    cr_assert_eq(jobs[0].begin, BEGIN_RUN);
    jobs[0].finish = kind;
    jobs[0].next_attempt = jobs[0].e.task.attempt + 1;
    jobs[0].delay_ms = 60000;
    jobs[0].reason = "boom";
    cr_assert_eq(broker_finish(&b, jobs, n), 0, "%s", b.errstr);
    return &jobs[0];
}

/* Its seen marker expired, but an id waiting for its retry is a
 * duplicate: enqueueing it again must not reset its attempt to 1. */
Test(broker, enqueue_of_a_retrying_id_keeps_its_attempt)
{
    redisReply *reply = NULL;

    open_broker(&b, "host:test:0");
    add_task("alpha", "r1");
    cr_assert_eq(run_one(FINISH_RETRY, &reply)->outcome, OUTCOME_RETRY);
    freeReplyObject(test_redis_command(rc, "DEL wharf:{alpha}:seen:r1"));
    cr_assert_eq(enqueue_id("r1"), WHARF_CLIENT_DUPLICATE);
    char *s = get("HGET wharf:{alpha}:task:%s %s", "r1", "attempt");
    cr_assert_str_eq(s, "2");
    free(s);
    cr_assert_eq(test_redis_int(rc, "XLEN wharf:{alpha}:stream"), 0);
    freeReplyObject(reply);
}

/* A dead id enqueued again runs anew; the dead record stays as it was,
 * through the new run's own retry and success. */
Test(broker, enqueue_of_a_dead_id_leaves_its_record)
{
    redisReply *reply = NULL;
    char *s;

    open_broker(&b, "host:test:0");
    add_task("alpha", "d1");
    cr_assert_eq(run_one(FINISH_DEAD, &reply)->outcome, OUTCOME_DEAD);
    long long died = test_redis_int(rc, "ZSCORE wharf:{alpha}:dead d1");
    cr_assert_eq(enqueue_id("d1"), WHARF_CLIENT_OK);
    cr_assert_eq(run_one(FINISH_RETRY, &reply)->outcome, OUTCOME_RETRY);
    /* Promote it now rather than in a minute. */
    freeReplyObject(test_redis_command(rc, "ZADD wharf:{alpha}:delayed 1 d1"));
    cr_assert_eq(broker_promote(&b), 1, "%s", b.errstr);
    broker_job *j = run_one(FINISH_OK, &reply);
    cr_assert_eq(j->outcome, OUTCOME_OK);
    cr_assert_eq(j->e.task.attempt, 2);
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{alpha}:result:d1"), 1);
    /* The dead record: untouched by the new run. */
    s = get("HGET wharf:{alpha}:dead:%s %s", "d1", "payload");
    cr_assert_str_eq(s, "p-d1");
    free(s);
    s = get("HGET wharf:{alpha}:dead:%s %s", "d1", "attempt");
    cr_assert_str_eq(s, "2");
    free(s);
    cr_assert_eq(test_redis_int(rc, "ZSCORE wharf:{alpha}:dead d1"), died);
    cr_assert_gt(test_redis_int(rc, "PTTL wharf:{alpha}:dead:d1"), 0);
    freeReplyObject(reply);
}

/* A begin that Redis ran but whose reply was never read (the connection
 * broke): the jobs know the call's owner, not their fences, and
 * broker_release still frees their locks, and only theirs. */
Test(broker, locks_of_a_begin_whose_reply_was_lost_are_released)
{
    redisReply *reply = NULL, *r;
    const char *argv[20];
    char keys[10][KEY_MAX];
    size_t n;

    open_broker(&b, "host:test:0");
    add_task("alpha", "l1");
    add_task("alpha", "l2");
    n = claim(&b, 16, &reply);
    cr_assert_eq(n, 2);
    /* Another run holds l2's lock, with a value of the same form. */
    freeReplyObject(test_redis_command(
        rc, "SET wharf:{alpha}:lock:l2 7-fedcba9876543210 PX 60000"));
    /* What broker_begin does before sending: */
    for (size_t i = 0; i < n; i++)
        snprintf(jobs[i].owner, sizeof(jobs[i].owner), "0123456789abcdef");
    snprintf(keys[0], KEY_MAX, "wharf:{alpha}:fence");
    snprintf(keys[1], KEY_MAX, "wharf:{alpha}:entries");
    snprintf(keys[2], KEY_MAX, "wharf:{alpha}:paused");
    snprintf(keys[3], KEY_MAX, "wharf:{alpha}:running");
    snprintf(keys[4], KEY_MAX, "wharf:{alpha}:result:l1");
    snprintf(keys[5], KEY_MAX, "wharf:{alpha}:result:l2");
    snprintf(keys[6], KEY_MAX, "wharf:{alpha}:cancel:l1");
    snprintf(keys[7], KEY_MAX, "wharf:{alpha}:cancel:l2");
    snprintf(keys[8], KEY_MAX, "wharf:{alpha}:lock:l1");
    snprintf(keys[9], KEY_MAX, "wharf:{alpha}:lock:l2");
    for (int i = 0; i < 10; i++)
        argv[i] = keys[i];
    argv[10] = "60000";
    argv[11] = jobs[0].owner;
    argv[12] = "22"; /* strlen("wharf:{alpha}:result:") */
    argv[13] = "0";  /* no concurrency_limit */
    argv[14] = "0";  /* no rate_limit: its period and burst unused */
    argv[15] = "0";
    argv[16] = "1";
    argv[17] = "0"; /* no limit_key */
    argv[18] = jobs[0].e.entry_id;
    argv[19] = jobs[1].e.entry_id;
    /* The call runs in Redis; its reply is dropped unread. */
    r = script_run(rc, &script_begin, 10, 20, argv, NULL);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY);
    freeReplyObject(r);
    cr_assert_eq(jobs[0].begin, BEGIN_NONE);
    char *s = get("GET wharf:{alpha}:lock:%s%s", "l", "1");
    cr_assert_str_eq(s, "1-0123456789abcdef");
    free(s);

    cr_assert_eq(broker_release(&b, jobs, n), 0, "%s", b.errstr);
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{alpha}:lock:l1"), 0);
    s = get("GET wharf:{alpha}:lock:%s%s", "l", "2");
    cr_assert_str_eq(s, "7-fedcba9876543210");
    free(s);
    cr_assert_str_eq(jobs[0].owner, "");
    /* Begun again after the reconnect, the task runs with a fresh lock
     * (the lost call drew fences 1 and 2). */
    cr_assert_eq(broker_begin(&b, jobs, 1), 0, "%s", b.errstr);
    cr_assert_eq(jobs[0].begin, BEGIN_RUN);
    assert_token(&jobs[0], 3);
    freeReplyObject(reply);
}

/* The same finish sent twice (the first reply was lost with the
 * connection): the second send finds its work done. broker_finish calls
 * it stale; broker_finish_resend counts it as done, by kind; a task really
 * taken over by another consumer stays stale. */
Test(broker, a_resent_finish_that_had_landed_counts_as_done)
{
    static const finish_kind kinds[] = {FINISH_OK, FINISH_RETRY, FINISH_DEAD,
                                        FINISH_ACK};
    static const task_outcome want[] = {OUTCOME_OK, OUTCOME_RETRY, OUTCOME_DEAD,
                                        OUTCOME_CACHED};
    redisReply *reply = NULL, *theirs = NULL;
    broker_job first[4], again[4];
    size_t n;

    open_broker(&b, "host:test:0");
    for (int i = 0; i < 4; i++) {
        char id[8];
        snprintf(id, sizeof(id), "f%d", i);
        add_task("alpha", id);
    }
    n = claim(&b, 16, &reply);
    cr_assert_eq(n, 4);
    cr_assert_eq(broker_begin(&b, jobs, n), 0, "%s", b.errstr);
    for (size_t i = 0; i < n; i++) {
        jobs[i].finish = kinds[i];
        jobs[i].next_attempt = 2;
        jobs[i].delay_ms = 60000;
        jobs[i].reason = "boom";
        first[i] = jobs[i];
    }
    cr_assert_eq(broker_finish(&b, first, n), 0, "%s", b.errstr);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(first[i].outcome, want[i]);

    memcpy(again, jobs, sizeof(again));
    cr_assert_eq(broker_finish(&b, again, n), 0, "%s", b.errstr);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(again[i].outcome, OUTCOME_STALE, "%zu", i);
    memcpy(again, jobs, sizeof(again));
    cr_assert_eq(broker_finish_resend(&b, again, n), 0, "%s", b.errstr);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(again[i].outcome, want[i], "%zu", i);
    /* Nothing was written twice. */
    cr_assert_eq(test_redis_int(rc, "ZCARD wharf:{alpha}:delayed"), 1);
    cr_assert_eq(test_redis_int(rc, "ZCARD wharf:{alpha}:dead"), 1);

    /* Taken over by another consumer (its entry still exists): a resend
     * of this run is stale. */
    open_broker(&other, "host:test:1");
    add_task("alpha", "f9");
    n = claim(&b, 16, &reply);
    cr_assert_eq(n, 1);
    cr_assert_eq(broker_begin(&b, jobs, n), 0, "%s", b.errstr);
    freeReplyObject(test_redis_command(rc, "DEL wharf:{alpha}:lock:f9"));
    theirs = broker_autoclaim(&other, &other.queues[0], 0, 10);
    cr_assert(theirs != NULL, "%s", other.errstr);
    freeReplyObject(test_redis_command(rc, "SET wharf:{alpha}:result:f9 x"));
    jobs[0].finish = FINISH_OK;
    cr_assert_eq(broker_finish_resend(&b, jobs, 1), 0, "%s", b.errstr);
    cr_assert_eq(jobs[0].outcome, OUTCOME_STALE);
    freeReplyObject(theirs);
    freeReplyObject(reply);
}
