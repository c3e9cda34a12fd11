/* pipeline.h on one Redis, against real redis-servers: replies in the
 * order of the commands, an error reply kept as the command's answer, a
 * lost script loaded and the call sent again, a node that refuses for
 * now (a replica's READONLY) leaving its command unanswered, WAIT's
 * count, a dead server, and which replies must be settled. Redirections
 * across a cluster are test_nodes's. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "command.h"
#include "host_process.h"
#include "nodes.h"
#include "pipeline.h"
#include "redis_server.h"
#include "redis_url.h"
#include "script.h"

/* Which replies pipeline_run settles: whole words only. */
Test(pipeline, must_settle_redirections_and_refusals_only)
{
    static const struct {
        const char *text;
        bool settle;
    } errors[] = {
        {"MOVED 3999 127.0.0.1:6381", true},
        {"ASK 3999 127.0.0.1:6381", true},
        {"TRYAGAIN Multiple keys request during rehashing of slot", true},
        {"NOSCRIPT No matching script. Please use EVAL.", true},
        {"CLUSTERDOWN The cluster is down", true},
        {"READONLY You can't write against a read only replica.", true},
        {"MASTERDOWN Link with MASTER is down", true},
        {"LOADING Redis is loading the dataset in memory", true},
        {"LOADING", true},
        {"MOVEDX 1 h:1", false},
        {"ERR MOVED", false},
        {"WRONGTYPE Operation against a key holding the wrong kind of value",
         false},
        {"ERR unknown command", false},
    };
    char buf[200];

    for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++) {
        snprintf(buf, sizeof(buf), "%s", errors[i].text);
        redisReply r = {
            .type = REDIS_REPLY_ERROR, .str = buf, .len = strlen(buf)};
        cr_expect_eq(pipeline_must_settle(&r), errors[i].settle, "%s",
                     errors[i].text);
        r.type = REDIS_REPLY_STRING; /* the same words as data */
        cr_expect_not(pipeline_must_settle(&r), "string '%s'", errors[i].text);
    }
    cr_assert_not(pipeline_must_settle(NULL));
}

static test_redis redis, replica;
static nodes ns;
static pipeline p;
static redisContext *rc;

static void stop(void)
{
    pipeline_free(&p);
    nodes_free(&ns);
    if (rc)
        redisFree(rc);
    test_redis_stop(&replica);
    test_redis_stop(&redis);
}

TestSuite(pipeline_redis, .fini = stop, .timeout = 60);

/* Starts redis and a pipeline over nodes of url_text (redis's own when
 * NULL), connected. */
static void open_on(const char *url_text)
{
    redis_url url;
    char err[300];

    if (redis.pid <= 0)
        test_redis_start(&redis, 0);
    rc = rc ? rc : test_redis_connect(&redis);
    cr_assert_eq(redis_url_parse(url_text ? url_text : redis.url, &url, err,
                                 sizeof(err)),
                 0, "%s", err);
    nodes_init(&ns, &url, NULL, 5000);
    cr_assert_eq(nodes_connect(&ns), 0, "%s", ns.errstr);
    pipeline_init(&p, &ns);
}

Test(pipeline_redis, replies_in_order_and_error_replies_are_answers)
{
    open_on(NULL);
    cr_assert_eq(pipeline_addf(&p, "k", "SET k 1"), 0);
    cr_assert_eq(pipeline_addf(&p, "k", "INCR k"), 0);
    cr_assert_eq(pipeline_addf(&p, "k", "LPUSH k x"), 0);
    cr_assert_eq(pipeline_addf(&p, NULL, "PING"), 0);
    cr_assert_eq(pipeline_addf(&p, "k", "GET %s", "k"), 0);
    cr_assert_eq(p.n, 5);
    uint64_t trips = p.round_trips;
    cr_assert_eq(pipeline_run(&p), 0, "%s", p.errstr);
    cr_assert_eq(p.round_trips, trips + 1, "one run, one round trip");
    cr_assert_eq(pipeline_reply(&p, 0)->type, REDIS_REPLY_STATUS);
    cr_assert_eq(pipeline_reply(&p, 1)->integer, 2);
    cr_assert_eq(pipeline_reply(&p, 2)->type, REDIS_REPLY_ERROR,
                 "an error reply is the command's answer");
    cr_assert_eq(strncmp(pipeline_reply(&p, 2)->str, "WRONGTYPE", 9), 0);
    cr_assert_str_eq(pipeline_reply(&p, 3)->str, "PONG");
    cr_assert_str_eq(pipeline_reply(&p, 4)->str, "2");

    /* Taken: the caller's now, no longer the pipeline's. */
    redisReply *mine = pipeline_take(&p, 4);
    cr_assert_str_eq(mine->str, "2");
    cr_assert_null(pipeline_reply(&p, 4));
    freeReplyObject(mine);

    /* A reset forgets the commands and keeps the buffers. */
    size_t cap = p.bytes_cap;
    p.wait = true;
    pipeline_reset(&p);
    cr_assert_eq(p.n, 0);
    cr_assert_eq(p.bytes_cap, cap);
    cr_assert_not(p.wait, "reset clears wait");
    cr_assert_eq(p.fewest_acks, -1);

    /* One command in one call. */
    redisReply *r = pipeline_command(&p, "k", "GET k");
    cr_assert(r && r->type == REDIS_REPLY_STRING, "%s", p.errstr);
    cr_assert_str_eq(r->str, "2");
    freeReplyObject(r);
}

Test(pipeline_redis, a_built_command_is_added_whole_or_not_at_all)
{
    command cmd;
    script s = {.name = "echo", .source = "return ARGV[1]"};

    open_on(NULL);
    script_init(&s);
    command_init(&cmd);
    /* A key after a plain argument of a script call: the builder's sticky
     * error, which the pipeline reports rather than sends. */
    command_evalsha(&cmd, s.sha);
    command_push_str(&cmd, "plain");
    command_push_key(&cmd, "k", 1);
    cr_assert_eq(pipeline_add_command(&p, -1, &cmd, &s), -1);
    cr_assert_str_neq(p.errstr, "");
    cr_assert_eq(p.n, 0, "a half-built command was added");
    /* Built right, it routes by its first key and runs. */
    command_evalsha(&cmd, s.sha);
    command_push_key(&cmd, "k", 1);
    command_push_str(&cmd, "hello");
    cr_assert_eq(pipeline_add_command(&p, -1, &cmd, &s), 0, "%s", p.errstr);
    cr_assert_eq(p.e[0].slot, (long)command_key_slot("k", 1));
    /* The command was copied: its builder may be reused at once. */
    command_reset(&cmd);
    command_push_str(&cmd, "garbage");
    cr_assert_eq(pipeline_run(&p), 0, "%s", p.errstr);
    cr_assert_str_eq(pipeline_reply(&p, 0)->str, "hello");
    command_free(&cmd);
}

Test(pipeline_redis, a_lost_script_is_loaded_and_sent_again)
{
    static script s = {.name = "twice", .source = "return ARGV[1] .. ARGV[1]"};
    const char *argv[] = {"k", "ab"};

    open_on(NULL);
    script_init(&s);
    freeReplyObject(test_redis_command(rc, "SCRIPT FLUSH"));
    cr_assert_eq(pipeline_add_script(&p, &s, 1, 2, argv, NULL), 0);
    cr_assert_eq(pipeline_addf(&p, "k", "SET k v"), 0);
    cr_assert_eq(pipeline_add_script(&p, &s, 1, 2, argv, NULL), 0);
    cr_assert_eq(pipeline_run(&p), 0, "%s", p.errstr);
    cr_assert_str_eq(pipeline_reply(&p, 0)->str, "abab");
    cr_assert_eq(pipeline_reply(&p, 1)->type, REDIS_REPLY_STATUS);
    cr_assert_str_eq(pipeline_reply(&p, 2)->str, "abab");
    redisReply *r = test_redis_command(rc, "SCRIPT EXISTS %s", s.sha);
    cr_assert_eq(r->element[0]->integer, 1, "the script was not loaded");
    freeReplyObject(r);
}

static bool replica_linked(void *unused)
{
    redisContext *c = test_redis_connect(&replica);
    redisReply *r = test_redis_command(c, "INFO replication");
    bool up = r->type == REDIS_REPLY_STRING &&
              strstr(r->str, "master_link_status:up");

    (void)unused;
    freeReplyObject(r);
    redisFree(c);
    return up;
}

static void start_replica(void)
{
    static char port[16];
    static const char *args[] = {"--replicaof", "127.0.0.1", port, NULL};

    test_redis_start(&redis, 0);
    snprintf(port, sizeof(port), "%d", redis.port);
    test_redis_start_with(&replica, NULL, args);
    cr_assert(test_wait_until(replica_linked, NULL, TEST_EVENT_MS),
              "the replica never linked");
}

Test(pipeline_redis, wait_counts_the_replicas)
{
    start_replica();
    open_on(NULL);
    p.wait = true;
    p.min_replicas = 1;
    p.wait_timeout_ms = TEST_EVENT_MS;
    cr_assert_eq(pipeline_addf(&p, "k", "SET k v"), 0);
    cr_assert_eq(pipeline_run(&p), 0, "%s", p.errstr);
    cr_assert_eq(p.fewest_acks, 1);
    cr_assert_eq(pipeline_reply(&p, 0)->type, REDIS_REPLY_STATUS);
    /* WAIT's own reply is not one of the commands'. */
    cr_assert_eq(p.n, 1);
    pipeline_reset(&p);
    cr_assert_eq(p.fewest_acks, -1);
}

Test(pipeline_redis, without_replicas_wait_counts_zero_and_the_run_stands)
{
    open_on(NULL);
    p.wait = true;
    p.min_replicas = 1;
    p.wait_timeout_ms = 50; /* how long WAIT waits for none to come */
    cr_assert_eq(pipeline_addf(&p, "k", "SET k v"), 0);
    cr_assert_eq(pipeline_run(&p), 0, "%s", p.errstr);
    cr_assert_eq(p.fewest_acks, 0);
    cr_assert_eq(pipeline_reply(&p, 0)->type, REDIS_REPLY_STATUS,
                 "a short WAIT on a master that did not move keeps replies");
}

Test(pipeline_redis, a_replica_refusing_a_write_leaves_it_unanswered)
{
    char url[64];

    start_replica();
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", replica.port);
    open_on(url);
    cr_assert_eq(pipeline_addf(&p, "k", "GET k"), 0);
    cr_assert_eq(pipeline_addf(&p, "k", "SET k v"), 0);
    cr_assert_eq(pipeline_run(&p), -1);
    cr_assert(strstr(p.errstr, "READONLY"), "%s", p.errstr);
    cr_assert_not_null(pipeline_reply(&p, 0), "the read was answered");
    cr_assert_null(pipeline_reply(&p, 1), "a refused write has an answer");
}

Test(pipeline_redis, a_dead_server_leaves_every_command_unanswered)
{
    open_on(NULL);
    cr_assert_eq(pipeline_addf(&p, "k", "SET k v"), 0);
    cr_assert_eq(pipeline_run(&p), 0, "%s", p.errstr);
    pipeline_reset(&p);
    test_redis_stop(&redis);
    cr_assert_eq(pipeline_addf(&p, "k", "GET k"), 0);
    cr_assert_eq(pipeline_addf(&p, "j", "GET j"), 0);
    cr_assert_eq(pipeline_run(&p), -1);
    cr_assert_str_neq(p.errstr, "");
    cr_assert_null(pipeline_reply(&p, 0));
    cr_assert_null(pipeline_reply(&p, 1));
    cr_assert_null(pipeline_command(&p, "k", "GET k"));
}
