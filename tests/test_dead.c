/* The dead commands of the wharf CLI on dead records as hosts write them
 * (dead:<id>, by a real finish), with a new run of the same id waiting for
 * its retry in task:<id>: list, show, replay and purge read and change
 * the dead record only. */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "broker.h"
#include "broker_config.h"
#include "redis_server.h"
#include "wharf_cli.h"

#define TRACE "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

#define wharf(...)                                                             \
    test_cli(redis.url, redis.dir, (const char *const[]){__VA_ARGS__, NULL})

static test_redis redis;
static redisContext *rc;
static config *cfg;
static broker b;

static void start(void)
{
    static const char *const types[] = {"d"};

    test_broker_up(&redis, &rc, &cfg);
    test_broker_open(&b, cfg, types, NULL, 1, "host:test:0");
}

static void stop(void)
{
    test_broker_down(&redis, &rc, &cfg, &b);
}

TestSuite(dead, .init = start, .fini = stop, .timeout = 60);

/* Runs task id of type d once, to the given end. */
static void run_to(const char *id, finish_kind kind, const char *reason)
{
    broker_job jobs[4];
    redisReply *claim = NULL;
    size_t n = 0;

    freeReplyObject(test_redis_command(
        rc,
        "XADD wharf:{d}:stream * id %s type d payload p-%s attempt 1 "
        "enqueued_at 1700000000000 trace %s",
        id, id, TRACE));
    for (int i = 0; i < 2 && n == 0; i++) {
        freeReplyObject(claim);
        claim = broker_claim(&b, 4, 0);
        cr_assert(claim != NULL, "%s", b.errstr);
        n = broker_jobs(&b, claim, jobs, 4);
    }
    cr_assert_eq(n, 1);
    cr_assert_eq(broker_begin(&b, jobs, n), 0, "%s", b.errstr);
    jobs[0].finish = kind;
    jobs[0].next_attempt = 2;
    jobs[0].delay_ms = 600000;
    jobs[0].reason = reason;
    cr_assert_eq(broker_finish(&b, jobs, n), 0, "%s", b.errstr);
    freeReplyObject(claim);
}

/* t1 died ("gave up"); then a new run of t1 failed and waits for its
 * retry ("again") in task:t1. */
static void dead_and_retrying(void)
{
    run_to("t1", FINISH_DEAD, "gave up");
    run_to("t1", FINISH_RETRY, "again");
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{d}:dead:t1"), 1);
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{d}:task:t1"), 1);
}

Test(dead, list_and_show_read_the_dead_record)
{
    const test_cli_run *r;

    dead_and_retrying();
    r = wharf("dead", "list", "d");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert(strncmp(r->out, "t1  ", 4) == 0, "%s", r->out);
    cr_assert(strstr(r->out, "  2  gave up\n"), "%s", r->out);
    r = wharf("dead", "show", "d", "t1");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert(strstr(r->out, "error: gave up\n"), "%s", r->out);
    cr_assert(strstr(r->out, "attempt: 2\n"), "%s", r->out);
    cr_assert(strstr(r->out, "worker: host:test:0\n"), "%s", r->out);
    cr_assert(!strstr(r->out, "again"), "%s", r->out);
}

Test(dead, replay_and_purge_leave_a_new_runs_envelope)
{
    const test_cli_run *r;
    redisReply *x;

    dead_and_retrying();
    run_to("t2", FINISH_DEAD, "bye");
    r = wharf("dead", "replay", "d", "t1");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_str_eq(r->out, "replayed 1\n");
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{d}:dead:t1"), 0);
    x = test_redis_command(rc, "HGET wharf:{d}:task:t1 error");
    cr_assert_str_eq(x->str, "again");
    freeReplyObject(x);
    cr_assert_eq(test_redis_int(rc, "XLEN wharf:{d}:stream"), 1);

    freeReplyObject(test_redis_command(rc, "ZADD wharf:{d}:delayed 1 t2"));
    freeReplyObject(test_redis_command(rc, "HSET wharf:{d}:task:t2 id t2"));
    r = wharf("dead", "purge", "d");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_str_eq(r->out, "purged 1\n");
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{d}:dead:t2 wharf:{d}:dead"),
                 0);
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{d}:task:t2"), 1);
}
