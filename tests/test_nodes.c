/* The routing layer on its own (nodes.c, pipeline.c, sentinel.c and the
 * URL forms they read), against real Redis Clusters and a real Sentinel
 * set on loopback: the slot map, commands sent to the node owning their
 * slot, MOVED, ASK and TRYAGAIN followed, and the refusals. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "command.h"
#include "host_process.h"
#include "nodes.h"
#include "pipeline.h"
#include "redis_cluster.h"
#include "redis_url.h"

static void open_nodes(nodes *ns, const char *url_text)
{
    redis_url url;
    char err[300];

    cr_assert_eq(redis_url_parse(url_text, &url, err, sizeof(err)), 0, "%s",
                 err);
    nodes_init(ns, &url, NULL, 2000);
}

Test(nodes, cluster_and_sentinel_urls)
{
    redis_url u;
    char err[300], text[600];

    cr_assert_eq(redis_url_parse("redis+cluster://a:7001,b,[::1]:7003", &u, err,
                                 sizeof(err)),
                 0, "%s", err);
    cr_assert_eq(u.kind, REDIS_URL_CLUSTER);
    cr_assert_eq(u.n_seeds, 3);
    cr_assert_str_eq(u.seeds[1].host, "b");
    cr_assert_eq(u.seeds[1].port, 6379);
    cr_assert_str_eq(u.seeds[2].host, "::1");
    redis_url_describe(&u, text, sizeof(text));
    cr_assert_str_eq(text, "redis+cluster://a:7001,b:6379,[::1]:7003");

    cr_assert_eq(redis_url_parse("redis+sentinel://:pw@s1,s2:5000/mymaster/2",
                                 &u, err, sizeof(err)),
                 0, "%s", err);
    cr_assert_eq(u.kind, REDIS_URL_SENTINEL);
    cr_assert_eq(u.seeds[0].port, 26379);
    cr_assert_str_eq(u.master, "mymaster");
    cr_assert_eq(u.db, 2);
    cr_assert_str_eq(u.password, "pw");
    redis_url_describe(&u, text, sizeof(text));
    cr_assert_str_eq(text, "redis+sentinel://s1:26379,s2:5000/mymaster/2");

    static const struct {
        const char *url, *why;
    } bad[] = {
        {"redis+cluster://", "expected host:port"},
        {"redis+cluster://a:1,,b:2", "empty address"},
        {"redis+cluster://a:1/3", "database 0 only"},
        {"redis+cluster://a:99999", "bad port"},
        {"redis+cluster://a b:1", "host name"},
        {"redis+sentinel://s1:1", "master's name"},
        {"redis+sentinel://s1:1/", "master's name"},
        {"redis+sentinel://s1:1/my master", "bad master name"},
        {"redis+sentinel://s1:1/m/x", "bad database"},
        {"redis+clusters://a:1", "expected redis://"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_assert_eq(redis_url_parse(bad[i].url, &u, err, sizeof(err)), -1,
                     "%s was taken", bad[i].url);
        cr_assert(strstr(err, bad[i].why), "%s: %s", bad[i].url, err);
    }
}

Test(nodes, a_node_not_in_cluster_mode_is_refused)
{
    test_redis r;
    nodes ns;
    char url[128];

    test_redis_start(&r, 0);
    snprintf(url, sizeof(url), "redis+cluster://127.0.0.1:%d", r.port);
    open_nodes(&ns, url);
    cr_assert_eq(nodes_connect(&ns), -2);
    cr_assert(strstr(ns.errstr, "is not in cluster mode"), "%s", ns.errstr);
    nodes_free(&ns);
    /* Nothing listens: try again later, not a configuration error. */
    snprintf(url, sizeof(url), "redis+cluster://127.0.0.1:%d",
             test_free_port());
    open_nodes(&ns, url);
    cr_assert_eq(nodes_connect(&ns), -1);
    nodes_free(&ns);
    test_redis_stop(&r);
}

Test(nodes, the_map_sends_each_key_to_its_owner, .timeout = 120)
{
    test_cluster c;
    nodes ns;
    pipeline p;
    char key[64];

    test_cluster_start(&c, 3, 0);
    open_nodes(&ns, c.url);
    cr_assert_eq(nodes_connect(&ns), 0, "%s", ns.errstr);
    cr_assert_eq(ns.n, 3);
    for (unsigned s = 0; s < NODES_SLOTS; s++)
        cr_assert_neq(nodes_of_slot(&ns, s), -1, "slot %u unmapped", s);
    /* One pipeline over every node: 300 keys of 300 tags. */
    pipeline_init(&p, &ns);
    for (int i = 0; i < 300; i++) {
        snprintf(key, sizeof(key), "wharf:{t%d}:stream", i);
        cr_assert_eq(pipeline_addf(&p, key, "SET %s %d", key, i), 0);
    }
    cr_assert_eq(pipeline_run(&p), 0, "%s", p.errstr);
    for (int i = 0; i < 300; i++) {
        redisReply *r = pipeline_reply(&p, (size_t)i);
        int owner;
        cr_assert(r && r->type == REDIS_REPLY_STATUS, "%d: %s", i,
                  r ? r->str : "none");
        snprintf(key, sizeof(key), "wharf:{t%d}:stream", i);
        owner = test_cluster_owner(&c, test_cluster_slot(&c, key));
        cr_assert_eq(ns.list[p.e[i].node].port, c.node[owner].port,
                     "%s went to the wrong node", key);
        cr_assert_eq(command_key_slot(key, strlen(key)),
                     test_cluster_slot(&c, key));
    }
    pipeline_free(&p);
    nodes_free(&ns);
    test_cluster_stop(&c);
}

/* Sets up slot of key half moved from its owner to node `to`. */
static void mark_moving(test_cluster *c, unsigned slot, int from, int to)
{
    redisContext *a = test_cluster_connect(c, from);
    redisContext *b = test_cluster_connect(c, to);
    redisReply *ida = test_redis_command(a, "CLUSTER MYID");
    redisReply *idb = test_redis_command(b, "CLUSTER MYID");

    freeReplyObject(test_redis_command(b, "CLUSTER SETSLOT %u IMPORTING %s",
                                       slot, ida->str));
    freeReplyObject(test_redis_command(a, "CLUSTER SETSLOT %u MIGRATING %s",
                                       slot, idb->str));
    freeReplyObject(ida);
    freeReplyObject(idb);
    redisFree(a);
    redisFree(b);
}

Test(nodes, moved_ask_and_tryagain_are_followed, .timeout = 120)
{
    test_cluster c;
    nodes ns;
    pipeline p;
    redisReply *r;
    const char *key = "wharf:{moving}:a";
    unsigned slot;
    int from, to;
    pid_t child;

    test_cluster_start(&c, 3, 0);
    open_nodes(&ns, c.url);
    cr_assert_eq(nodes_connect(&ns), 0, "%s", ns.errstr);
    pipeline_init(&p, &ns);
    slot = test_cluster_slot(&c, key);
    from = test_cluster_owner(&c, slot);
    to = (from + 1) % 3;
    r = pipeline_command(&p, key, "SET %s here", key);
    cr_assert(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);

    /* Half moved: a missing key is asked of the importing node (ASK), an
     * existing one is still served where it is. */
    mark_moving(&c, slot, from, to);
    r = pipeline_command(&p, key, "GET wharf:{moving}:missing");
    cr_assert(r && r->type == REDIS_REPLY_NIL, "%d %s", r ? r->type : -1,
              r && r->type == REDIS_REPLY_ERROR ? r->str : "");
    cr_assert_eq(ns.list[p.e[0].node].port, c.node[to].port, "not ASKed");
    freeReplyObject(r);
    /* ASK does not move the slot in the map. */
    cr_assert_eq(ns.list[nodes_of_slot(&ns, slot)].port, c.node[from].port);
    r = pipeline_command(&p, key, "GET %s", key);
    cr_assert(r && r->type == REDIS_REPLY_STRING);
    freeReplyObject(r);

    /* A command of an existing and a missing key: TRYAGAIN until the
     * migration ends, which a child finishes meanwhile. */
    child = fork();
    cr_assert(child >= 0);
    if (child == 0) {
        test_sleep_ms(300);
        test_cluster_move_slot(&c, slot, to, 0);
        _exit(0);
    }
    r = pipeline_command(&p, key, "MSET %s again wharf:{moving}:b new", key);
    waitpid(child, NULL, 0);
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "%s", r ? r->str : p.errstr);
    freeReplyObject(r);
    /* The slot is the other node's now: MOVED patches the map. */
    cr_assert_eq(test_cluster_owner(&c, slot), to);
    r = pipeline_command(&p, key, "GET wharf:{moving}:b");
    cr_assert(r && r->type == REDIS_REPLY_STRING, "%s", r ? r->str : p.errstr);
    cr_assert_str_eq(r->str, "new");
    freeReplyObject(r);
    cr_assert_eq(ns.list[nodes_of_slot(&ns, slot)].port, c.node[to].port);
    pipeline_free(&p);
    nodes_free(&ns);
    test_cluster_stop(&c);
}

Test(nodes, sentinel_names_the_master_and_follows_a_failover, .timeout = 120)
{
    test_sentinels s;
    nodes ns;
    pipeline p;
    redisReply *r;
    char url[600];

    test_sentinels_start(&s);
    open_nodes(&ns, s.url);
    cr_assert_eq(nodes_connect(&ns), 0, "%s", ns.errstr);
    cr_assert_eq(ns.list[0].port, s.primary.port);
    pipeline_init(&p, &ns);
    r = pipeline_command(&p, "k", "SET k v");
    cr_assert(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    /* WAIT in the same round trip: the replica has it. */
    pipeline_reset(&p);
    p.wait = true;
    p.min_replicas = 1;
    p.wait_timeout_ms = 5000;
    pipeline_addf(&p, "k", "SET k w");
    cr_assert_eq(pipeline_run(&p), 0, "%s", p.errstr);
    cr_assert_eq(p.fewest_acks, 1, "acks %d", p.fewest_acks);

    test_sentinels_kill_primary(&s);
    r = pipeline_command(&p, "k", "GET k");
    cr_assert_null(r, "the old master answered");
    nodes_disconnect(&ns);
    cr_assert_eq(nodes_connect(&ns), 0, "%s", ns.errstr);
    cr_assert_eq(ns.list[0].port, s.replica.port);
    r = pipeline_command(&p, "k", "GET k");
    cr_assert(r && r->type == REDIS_REPLY_STRING);
    cr_assert_str_eq(r->str, "w");
    freeReplyObject(r);
    pipeline_free(&p);
    nodes_free(&ns);

    /* A master the sentinels do not watch is a configuration error. */
    snprintf(url, sizeof(url), "%.*snobody", (int)(strlen(s.url) - 5), s.url);
    open_nodes(&ns, url);
    cr_assert_eq(nodes_connect(&ns), -2);
    cr_assert(strstr(ns.errstr, "knows a master named 'nobody'"), "%s",
              ns.errstr);
    nodes_free(&ns);
    test_sentinels_stop(&s);
}
