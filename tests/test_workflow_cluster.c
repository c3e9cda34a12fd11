/* A group on a 3-primary Redis Cluster: its members' type, the group's
 * own keys and the callback's type each on another shard, so every step
 * of docs/protocol.md's "Workflows" crosses slots. The callback comes
 * once, with every one of 10,000 members counted once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "host_process.h"
#include "redis_cluster.h"
#include "spawn.h"
#include "wharf_cli.h"

#define MEMBERS 10000

TestSuite(workflow_cluster, .timeout = 280);

/* The first name of the form "<stem><n>" whose slot is served by shard,
 * into buf. */
static void name_on(const test_cluster *c, int shard, const char *stem,
                    char *buf, size_t len)
{
    for (int n = 0; n < 1000; n++) {
        char key[64];
        snprintf(buf, len, "%s%d", stem, n);
        snprintf(key, sizeof(key), "{%s}", buf);
        if (test_cluster_owner(c, test_cluster_slot(c, key)) == shard)
            return;
    }
    cr_assert_fail("no %s name on shard %d", stem, shard);
}

typedef struct key_wait {
    redisContext *node;
    const char *key;
} key_wait;

static bool key_there(void *arg)
{
    const key_wait *w = arg;
    redisReply *r = redisCommand(w->node, "EXISTS %s", w->key);
    bool there = r && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    freeReplyObject(r);
    return there;
}

/* The field of a hash on node, as a string the caller frees. */
static char *hget(redisContext *node, const char *key, const char *field)
{
    redisReply *r = redisCommand(node, "HGET %s %s", key, field);
    char *s = strdup(r && r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
    return s;
}

Test(workflow_cluster, a_group_calls_back_once_across_three_shards)
{
    char member[32], callback[32], group[32], extra[256], key[128];
    char file[300], want[64], *payload, *enqueued;
    test_cluster c;
    test_host h;
    redisContext *cb_node, *group_node;
    char ids[300], err[300];
    int code;
    redisReply *n;
    FILE *f;

    test_cluster_start(&c, 3, 0);
    name_on(&c, 0, "m", member, sizeof(member));
    name_on(&c, 1, "g", group, sizeof(group));
    name_on(&c, 2, "cb", callback, sizeof(callback));
    snprintf(extra, sizeof(extra), "types = %s, %s\n", member, callback);
    test_host_manifest_opts(&h, NULL,
                            &(test_host_opts){.redis_url = c.url,
                                              .chaos_keys = extra,
                                              .log_level = "warn",
                                              .host_keys = "workers = 2\n"});
    test_host_start(&h);
    snprintf(file, sizeof(file), "%s/members", h.dir);
    f = fopen(file, "w");
    cr_assert(f != NULL);
    for (int i = 0; i < MEMBERS; i++)
        fputs(i % 10 == 9 ? "fatal\n" : "ok\n", f);
    cr_assert_eq(fclose(f), 0);
    /* The ids (one a line) go to a file: more than a pipe holds. */
    snprintf(ids, sizeof(ids), "%s/ids", h.dir);
    snprintf(err, sizeof(err), "%s/enqueue.err", h.dir);
    code = test_spawn((const char *const[]){WHARF_BINARY_DIR "/wharf",
                                            "--redis", c.url, "enqueue", member,
                                            "--file", file, "--group", group,
                                            "--then", callback, "night", NULL},
                      NULL, ids, err, NULL, NULL);
    cr_assert_eq(code, 0, "wharf enqueue failed; see %s", err);

    cb_node = test_cluster_connect(&c, 2);
    group_node = test_cluster_connect(&c, 1);
    /* chaos refuses a JSON payload: the callback dies after its one run,
     * and its dead record keeps the payload. */
    snprintf(key, sizeof(key), "wharf:{%s}:dead:group:%s", callback, group);
    cr_assert(test_wait_until(key_there, &(key_wait){cb_node, key},
                              TEST_EVENT_MS * 3),
              "no callback; see %s", h.log);
    payload = hget(cb_node, key, "payload");
    snprintf(want, sizeof(want), "\"ok\":%d", MEMBERS - MEMBERS / 10);
    cr_assert(strstr(payload, want), "%s", payload);
    snprintf(want, sizeof(want), "\"dead\":%d", MEMBERS / 10);
    cr_assert(strstr(payload, want), "%.300s", payload);
    free(payload);
    snprintf(key, sizeof(key), "wharf:{%s}:group_done", group);
    n = redisCommand(group_node, "HLEN %s", key);
    cr_assert_eq(n->integer, MEMBERS);
    freeReplyObject(n);
    snprintf(key, sizeof(key), "wharf:{%s}:group", group);
    enqueued = hget(group_node, key, "enqueued");
    cr_assert_str_eq(enqueued, "1");
    free(enqueued);
    snprintf(want, sizeof(want), "group:%s", group);
    cr_assert_eq(test_host_runs(&h, want, 0), 1, "the callback ran %d times",
                 test_host_runs(&h, want, 0));
    /* A child on the third shard held for a parent on the first: the
     * parent's finish reaches it through the outbox across shards. */
    {
        char gate[300], cmd[320], after[64];
        const test_cli_run *r;
        snprintf(gate, sizeof(gate), "%s/gate", h.dir);
        snprintf(cmd, sizeof(cmd), "wait:%s", gate);
        r = test_cli(
            c.url, h.dir,
            (const char *const[]){"enqueue", member, cmd, "--id", "xp", NULL});
        cr_assert_eq(r->status, 0, "%s", r->err);
        snprintf(after, sizeof(after), "%s:xp", member);
        r = test_cli(c.url, h.dir,
                     (const char *const[]){"enqueue", callback, "ok", "--id",
                                           "xc", "--after", after, NULL});
        cr_assert_eq(r->status, 0, "%s", r->err);
        r = test_cli(c.url, h.dir,
                     (const char *const[]){"status", callback, "xc", NULL});
        cr_assert(strstr(r->out, "state: held"), "%s", r->out);
        f = fopen(gate, "w");
        cr_assert(f != NULL);
        cr_assert_eq(fclose(f), 0);
        snprintf(key, sizeof(key), "wharf:{%s}:result:xc", callback);
        cr_assert(test_wait_until(key_there, &(key_wait){cb_node, key},
                                  TEST_EVENT_MS),
                  "xc never ran; see %s", h.log);
    }
    redisFree(cb_node);
    redisFree(group_node);
    cr_assert_eq(test_host_stop(&h), 0);
    test_cluster_stop(&c);
}
