/* Workflows with real hosts on one Redis (docs/protocol.md,
 * "Workflows"): a chain of 100 tasks of two types runs in order, each
 * once; a group's callback comes once with its counts and member ids,
 * also when a host is killed -9 between a member's finish and the group's
 * count, or between the count and the callback's enqueue; a dead parent
 * makes its child dead (and that one's child) or lets it run; a held
 * task's status names what it waits for; a group is cancelled; the CLI
 * refuses what would never end. No step waits for a time: each waits on
 * its event (a runs file line, a key), with the suite's timeout. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "host_process.h"
#include "http_get.h"
#include "redis_server.h"
#include "spawn.h"
#include "wharf_cli.h"

#define wharf(...)                                                             \
    test_cli(redis.url, redis.dir, (const char *const[]){__VA_ARGS__, NULL})

/* chaos serves two types, so a chain alternates between two slots. */
#define TWO_TYPES "types = chaos, chaos_b\n"
#define CHAIN 100
/* The tasks a host killed -9 held go to the next host once their lease
 * is out, and run once their lock has expired: soon, so the kill tests
 * end soon (3 s locks renewed every second, as test_supervisor's). */
#define SHORT_LEASE                                                            \
    "[defaults]\nvisibility_timeout = 4s\nlock_ttl = 3s\n"                     \
    "backoff_base = 10ms\n"

static test_redis redis;
static test_host host_a, host_b;
static redisContext *rc;

static void start_redis(void)
{
    test_suite_up(&redis, 0, &rc);
}

static void stop_all(void)
{
    test_suite_down(&redis, &rc, (test_host *const[]){&host_a, &host_b, NULL});
}

TestSuite(workflow, .init = start_redis, .fini = stop_all, .timeout = 240);

/* The port of host_a's /metrics, when start_host_metrics made one. */
static int metrics_port;

static void start_host_on(test_host *h, const char *instance,
                          const char *listen)
{
    char keys[64];

    snprintf(keys, sizeof(keys), "workers = 2\ninstance = %s\n", instance);
    test_host_up(h, &redis,
                 &(test_host_opts){.host_keys = keys,
                                   .log_level = "info",
                                   .chaos_keys = TWO_TYPES,
                                   .extra = SHORT_LEASE,
                                   .metrics_listen = listen},
                 rc);
}

static void start_host(test_host *h, const char *instance)
{
    start_host_on(h, instance, NULL);
}

/* True once /metrics shows the sample named arg ("name{labels} value"). */
static bool metrics_show(void *arg)
{
    static char body[1 << 17];
    return test_http_get(metrics_port, "/metrics", body, sizeof(body)) == 200 &&
           strstr(body, arg) != NULL;
}

/* Runs of id (any attempt) on both hosts. */
static int runs_of(const char *id)
{
    return test_host_runs(&host_a, id, 0) +
           (host_b.pid || host_b.runs[0] ? test_host_runs(&host_b, id, 0) : 0);
}

typedef struct run_wait {
    const char *id;
    int want;
} run_wait;

static bool ran(void *arg)
{
    const run_wait *w = arg;
    return runs_of(w->id) >= w->want;
}

static void wait_runs(const char *id, int want)
{
    run_wait w = {id, want};
    cr_assert(test_wait_until(ran, &w, TEST_EVENT_MS),
              "%s ran %d times, not %d; see %s", id, runs_of(id), want,
              host_a.log);
}

/* The field of a hash, as a string the caller frees ("" when missing). */
static char *hget(const char *key, const char *field)
{
    redisReply *r = test_redis_command(rc, "HGET %s %s", key, field);
    char *s = strdup(r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
    return s;
}

static bool file_exists(void *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static bool key_exists(void *key)
{
    return test_redis_int(rc, "EXISTS %s", (const char *)key) == 1;
}

/* Writes lines (NULL-terminated) to path, one a line. */
static void write_lines(const char *path, const char *const *lines)
{
    FILE *f = fopen(path, "w");
    cr_assert(f != NULL);
    for (size_t i = 0; lines[i]; i++)
        fprintf(f, "%s\n", lines[i]);
    cr_assert_eq(fclose(f), 0);
}

Test(workflow, a_chain_of_100_alternating_types_runs_in_order_once)
{
    char id[16], after[32], line[64];
    FILE *f;
    int n = 0;

    start_host(&host_a, "a");
    cr_assert_eq(wharf("enqueue", "chaos", "ok", "--id", "c1")->status, 0);
    for (int i = 2; i <= CHAIN; i++) {
        const test_cli_run *r;
        snprintf(id, sizeof(id), "c%d", i);
        snprintf(after, sizeof(after), "%s:c%d",
                 (i - 1) % 2 ? "chaos" : "chaos_b", i - 1);
        r = wharf("enqueue", i % 2 ? "chaos" : "chaos_b", "ok", "--id", id,
                  "--after", after);
        cr_assert_eq(r->status, 0, "%s: %s", id, r->err);
    }
    snprintf(id, sizeof(id), "c%d", CHAIN);
    wait_runs(id, 1);
    /* The runs file has each task once, in the chain's order: a child is
     * released only by its parent's finish. */
    f = fopen(host_a.runs, "r");
    cr_assert(f != NULL);
    while (fgets(line, sizeof(line), f)) {
        char want[32];
        snprintf(want, sizeof(want), "c%d 1\n", ++n);
        cr_assert_str_eq(line, want, "line %d", n);
    }
    fclose(f);
    cr_assert_eq(n, CHAIN);
    /* Nothing is left held, nor in an outbox. */
    cr_assert_eq(test_redis_int(rc, "ZCARD wharf:{chaos}:held") +
                     test_redis_int(rc, "ZCARD wharf:{chaos_b}:held"),
                 0);
    cr_assert_eq(test_redis_int(rc, "XLEN wharf:{chaos}:outbox") +
                     test_redis_int(rc, "XLEN wharf:{chaos_b}:outbox"),
                 0);
}

/* The callback group:<g>'s payload, from its dead record (chaos refuses
 * a JSON payload: it dies at once, after its one run). */
static char *callback_payload(const char *group)
{
    char key[128];

    snprintf(key, sizeof(key), "wharf:{chaos_b}:dead:group:%s", group);
    cr_assert(test_wait_until(key_exists, key, TEST_EVENT_MS),
              "no callback of %s; see %s and %s", group, host_a.log,
              host_b.log);
    return hget(key, "payload");
}

/* A group of five, two of them dead, with its callback of another type. */
static void enqueue_group(const char *group, const char *file)
{
    const test_cli_run *r;

    write_lines(
        file, (const char *const[]){"ok", "fatal", "ok", "fatal", "ok", NULL});
    r = wharf("enqueue", "chaos", "--file", file, "--group", group, "--then",
              "chaos_b", "after all");
    cr_assert_eq(r->status, 0, "%s", r->err);
}

static void assert_callback(const char *group)
{
    char *payload = callback_payload(group), want[64], cb[64];

    snprintf(cb, sizeof(cb), "group:%s", group);
    cr_assert(strstr(payload, "\"ok\":3"), "%s", payload);
    cr_assert(strstr(payload, "\"dead\":2"), "%s", payload);
    cr_assert(strstr(payload, "\"payload\":\"after all\""), "%s", payload);
    for (int i = 1; i <= 5; i++) {
        snprintf(want, sizeof(want), "\"chaos:%s:%d\":\"%s\"", group, i,
                 i % 2 ? "ok" : "dead");
        cr_assert(strstr(payload, want), "%s not in %s", want, payload);
    }
    free(payload);
    cr_assert_eq(runs_of(cb), 1, "the callback ran %d times", runs_of(cb));
    {
        char key[128];
        snprintf(key, sizeof(key), "wharf:{%s}:group_done", group);
        cr_assert_eq(test_redis_int(rc, "HLEN %s", key), 5);
        snprintf(key, sizeof(key), "wharf:{%s}:group", group);
        char *enq = hget(key, "enqueued");
        cr_assert_str_eq(enq, "1");
        free(enq);
    }
}

Test(workflow, a_group_calls_back_once_with_its_counts_and_member_ids)
{
    char file[300];
    const test_cli_run *r;

    char listen[64], body[4096];

    metrics_port = test_free_port();
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", metrics_port);
    start_host_on(&host_a, "a", listen);
    snprintf(file, sizeof(file), "%s/members", host_a.dir);
    enqueue_group("g1", file);
    assert_callback("g1");
    /* The console's group page and its API. */
    cr_assert_eq(
        test_http_get(metrics_port, "/api/group?group=g1", body, sizeof(body)),
        200, "%s", body);
    cr_assert(strstr(body, "\"n\":5,\"ok\":3,\"dead\":2,\"pending\":0"), "%s",
              body);
    cr_assert(strstr(body, "\"callback\":\"enqueued\""), "%s", body);
    cr_assert_eq(test_http_get(metrics_port, "/api/group?group=nosuch", body,
                               sizeof(body)),
                 404, "%s", body);
    cr_assert_eq(
        test_http_get(metrics_port, "/console/groups.js", body, sizeof(body)),
        200);
    r = wharf("group", "show", "g1");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert(strstr(r->out, "ok: 3\ndead: 2\npending: 0\n"), "%s", r->out);
    cr_assert(strstr(r->out, "(enqueued)"), "%s", r->out);
    cr_assert(strstr(r->out, "chaos:g1:2 dead"), "%s", r->out);
    /* Made again (a producer's retry after a crash): nothing new runs. */
    r = wharf("enqueue", "chaos", "--file", file, "--group", "g1", "--then",
              "chaos_b", "after all");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert(strstr(r->err, "5 already enqueued"), "%s", r->err);
}

/* Kills the first host at the fault point env, starts a second one and
 * checks that the callback still comes once, every member counted once. */
static void kill_at(const char *env, const char *group)
{
    char file[300], mark[300];

    snprintf(mark, sizeof(mark), "%s/fault-%s", redis.dir, group);
    cr_assert_eq(setenv(env, mark, 1), 0);
    start_host(&host_a, "a");
    cr_assert_eq(unsetenv(env), 0);
    snprintf(file, sizeof(file), "%s/members", host_a.dir);
    enqueue_group(group, file);
    cr_assert(test_wait_until(file_exists, mark, TEST_EVENT_MS),
              "the fault point %s was never reached; see %s", env, host_a.log);
    /* The process at the fault point died there; now the whole host. */
    kill(host_a.pid, SIGKILL);
    cr_assert_neq(test_host_wait_exit(&host_a, TEST_EVENT_MS), -1);
    host_a.pid = 0;
    start_host(&host_b, "b");
    assert_callback(group);
}

Test(workflow, killed_between_a_finish_and_the_count_calls_back_once)
{
    kill_at("WHARF_TEST_DIE_BEFORE_COUNT", "g2");
}

Test(workflow, killed_between_the_count_and_the_callback_calls_back_once)
{
    kill_at("WHARF_TEST_DIE_BEFORE_CALLBACK", "g3");
}

Test(workflow, a_dead_parent_kills_its_children_or_lets_them_run)
{
    char gate[300], wait_cmd[320];
    const test_cli_run *r;
    char *error;

    char listen[64];

    metrics_port = test_free_port();
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", metrics_port);
    start_host_on(&host_a, "a", listen);
    snprintf(gate, sizeof(gate), "%s/gate", host_a.dir);
    snprintf(wait_cmd, sizeof(wait_cmd), "wait:%s", gate);
    /* p1 waits at the gate, then its child p2 (fatal) dies. */
    cr_assert_eq(wharf("enqueue", "chaos", wait_cmd, "--id", "p1")->status, 0);
    r = wharf("enqueue", "chaos", "fatal", "--id", "p2", "--after", "chaos:p1");
    cr_assert_eq(r->status, 0, "%s", r->err);
    r = wharf("enqueue", "chaos_b", "ok", "--id", "k1", "--after", "chaos:p2");
    cr_assert_eq(r->status, 0, "%s", r->err);
    r = wharf("enqueue", "chaos_b", "ok", "--id", "k2", "--after",
              "chaos:p2,chaos:p1", "--on-parent-dead", "run");
    cr_assert_eq(r->status, 0, "%s", r->err);
    r = wharf("enqueue", "chaos", "ok", "--id", "k3", "--after", "chaos_b:k1");
    cr_assert_eq(r->status, 0, "%s", r->err);
    /* Held, and saying for what. */
    r = wharf("status", "chaos_b", "k2");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert(strstr(r->out, "state: held\n"), "%s", r->out);
    cr_assert(strstr(r->out, "waits_for: chaos:p2,chaos:p1\n"), "%s", r->out);
    /* k1 and k2 held (chaos_b), p2 and k3 (chaos): the gauge says so. */
    cr_assert(test_wait_until(metrics_show,
                              "\nwharf_queue_held{type=\"chaos_b\"} 2\n",
                              TEST_EVENT_MS),
              "no held gauge; see %s", host_a.log);
    cr_assert(metrics_show("\nwharf_queue_held{type=\"chaos\"} 2\n"));
    write_lines(gate, (const char *const[]){NULL});
    wait_runs("k2", 1);
    /* k1's parent died: k1 is dead without a run, and so is its child. */
    cr_assert(
        test_wait_until(key_exists, "wharf:{chaos}:dead:k3", TEST_EVENT_MS),
        "k3 is not dead; see %s", host_a.log);
    error = hget("wharf:{chaos_b}:dead:k1", "error");
    cr_assert_str_eq(error, "parent chaos:p2 is dead");
    free(error);
    error = hget("wharf:{chaos}:dead:k3", "error");
    cr_assert_str_eq(error, "parent chaos_b:k1 is dead");
    free(error);
    cr_assert_eq(runs_of("k1") + runs_of("k3"), 0);
    /* A parent already dead when its child comes: the same. */
    r = wharf("enqueue", "chaos_b", "ok", "--id", "k4", "--after", "chaos:p2");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert(
        test_wait_until(key_exists, "wharf:{chaos_b}:dead:k4", TEST_EVENT_MS));
}

/* A child's plugin reads its parents' results (tests/plugins/parents.c):
 * copies in the child's slot, not the parents' cached results; in a
 * worker of one thread (host_keys "") or of several. */
static void child_reads_parents(const char *host_keys, const char *suffix)
{
    char keys[128], kid[32], lone[32], r1[32], r2[32], after[80], want[128];
    const test_cli_run *r;

    snprintf(keys, sizeof(keys), "workers = 1\ninstance = a\n%s", host_keys);
    snprintf(kid, sizeof(kid), "kid%s", suffix);
    snprintf(lone, sizeof(lone), "lone%s", suffix);
    snprintf(r1, sizeof(r1), "r1%s", suffix);
    snprintf(r2, sizeof(r2), "r2%s", suffix);
    snprintf(after, sizeof(after), "chaos:%s,chaos:%s", r1, r2);
    snprintf(want, sizeof(want), "chaos:%s=ok:ok attempt=1;chaos:%s=dead;", r1,
             r2);
    test_host_up(
        &host_a, &redis,
        &(test_host_opts){.host_keys = keys,
                          .log_level = "info",
                          .chaos_keys = TWO_TYPES,
                          .extra = "[type.chaos]\nresult_ttl = 1s\n"
                                   "[plugin.parents]\npath = " WHARF_FIXTURE_DIR
                                   "/parents.so\n"},
        rc);
    cr_assert_eq(wharf("enqueue", "chaos", "ok", "--id", r1)->status, 0);
    cr_assert_eq(wharf("enqueue", "chaos", "fatal", "--id", r2)->status, 0);
    r = wharf("enqueue", "parents", "", "--id", kid, "--after", after,
              "--on-parent-dead", "run");
    cr_assert_eq(r->status, 0, "%s", r->err);
    r = wharf("result", "parents", kid, "--wait", "60s");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_str_eq(r->out, want);
    /* A task without parents has none. */
    cr_assert_eq(wharf("enqueue", "parents", "", "--id", lone)->status, 0);
    r = wharf("result", "parents", lone, "--wait", "60s");
    cr_assert_str_eq(r->out, "none");
    cr_assert_eq(test_host_stop(&host_a), 0);
}

Test(workflow, a_child_reads_its_parents_results)
{
    child_reads_parents("", "");
    child_reads_parents("threads = 4\n", "-t");
}

Test(workflow, a_cancelled_group_cancels_its_members_and_callback)
{
    char file[300];
    const test_cli_run *r;

    /* No host: the members wait in their stream. */
    snprintf(file, sizeof(file), "%s/members", redis.dir);
    write_lines(file, (const char *const[]){"ok", "ok", "ok", NULL});
    r = wharf("enqueue", "chaos", "--file", file, "--group", "g4", "--then",
              "chaos_b");
    cr_assert_eq(r->status, 0, "%s", r->err);
    r = wharf("group", "cancel", "g4");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert(strstr(r->out, "3 members"), "%s", r->out);
    for (int i = 1; i <= 3; i++) {
        char id[16];
        snprintf(id, sizeof(id), "g4:%d", i);
        r = wharf("status", "chaos", id);
        cr_assert(strstr(r->out, "state: cancelled"), "%s: %s", id, r->out);
    }
    r = wharf("group", "show", "g4");
    cr_assert(strstr(r->out, "(cancelled)"), "%s", r->out);
    /* wharf cancel --group says the same; a held task is removed too. */
    r = wharf("cancel", "--group", "g4");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_eq(wharf("enqueue", "chaos", "ok", "--id", "hp")->status, 0);
    r = wharf("enqueue", "chaos", "ok", "--id", "hk", "--after", "chaos:hp");
    cr_assert_eq(r->status, 0, "%s", r->err);
    r = wharf("cancel", "chaos", "hk");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert(strstr(r->out, "was held"), "%s", r->out);
    r = wharf("status", "chaos", "hk");
    cr_assert(strstr(r->out, "state: cancelled"), "%s", r->out);
    cr_assert_eq(test_redis_int(rc, "ZCARD wharf:{chaos}:held"), 0);
    r = wharf("cancel", "--group", "g4", "chaos", "x");
    cr_assert_eq(r->status, 64, "%s", r->err);
}

/* The Python client's workflows against a real host: a group and its
 * callback, a child held after a member and released by it. */
Test(workflow, the_python_client_makes_groups_and_children)
{
    char script[300], out[300], err[300], program[2048];
    FILE *f;
    int code;
    char *payload;

    start_host(&host_a, "a");
    snprintf(script, sizeof(script), "%s/client.py", host_a.dir);
    snprintf(out, sizeof(out), "%s/client.out", host_a.dir);
    snprintf(err, sizeof(err), "%s/client.err", host_a.dir);
    snprintf(program, sizeof(program),
             "from wharf.client import Client\n"
             "c = Client('%s')\n"
             "ids = c.enqueue_group('py', 'chaos', [b'ok', b'fatal'],\n"
             "                      then='chaos_b', then_payload='p')\n"
             "assert ids == ['py:1', 'py:2'], ids\n"
             "r = c.enqueue_after('chaos', 'ok', after=['chaos:py:1'],\n"
             "                    id='pykid')\n"
             "assert r.id == 'pykid' and not r.duplicate, r\n"
             "try:\n"
             "    c.enqueue_after('chaos', 'ok', after=['chaos:none'])\n"
             "    raise SystemExit('an unknown parent was taken')\n"
             "except Exception as e:\n"
             "    assert 'is unknown' in str(e), e\n"
             "print(c.group('py')['n'])\n",
             redis.url);
    f = fopen(script, "w");
    cr_assert(f != NULL);
    fputs(program, f);
    cr_assert_eq(fclose(f), 0);
    cr_assert_eq(setenv("WHARF_LUA_DIR", WHARF_SOURCE_DIR "/sdk/lua", 1), 0);
    code = test_spawn((const char *const[]){"/usr/bin/python3", script, NULL},
                      NULL, out, err, "PYTHONPATH",
                      WHARF_SOURCE_DIR "/clients/python");
    cr_assert_eq(code, 0, "python failed; see %s", err);
    wait_runs("pykid", 1);
    payload = callback_payload("py");
    cr_assert(strstr(payload, "\"ok\":1") && strstr(payload, "\"dead\":1"),
              "%s", payload);
    cr_assert(strstr(payload, "\"chaos:py:2\":\"dead\""), "%s", payload);
    free(payload);
}

/* The Node client's workflows against a real host, as the Python one's. */
Test(workflow, the_node_client_makes_groups_and_children)
{
    char script[300], out[300], err[300], program[2048];
    FILE *f;
    int code;
    char *payload;

    start_host(&host_a, "a");
    snprintf(script, sizeof(script), "%s/client.js", host_a.dir);
    snprintf(out, sizeof(out), "%s/client.out", host_a.dir);
    snprintf(err, sizeof(err), "%s/client.err", host_a.dir);
    snprintf(program, sizeof(program),
             "const { Client } = require('%s/clients/node/index.js');\n"
             "const assert = require('assert');\n"
             "(async () => {\n"
             "  const c = new Client('%s');\n"
             "  const ids = await c.enqueueGroup('nd', 'chaos', ['ok', "
             "'fatal'], { then: 'chaos_b', thenPayload: 'p' });\n"
             "  assert.deepStrictEqual(ids, ['nd:1', 'nd:2']);\n"
             "  const r = await c.enqueueAfter('chaos', 'ok', { after: "
             "['chaos:nd:1'], id: 'ndkid' });\n"
             "  assert.strictEqual(r.id, 'ndkid');\n"
             "  await assert.rejects(c.enqueueAfter('chaos', 'ok', { after: "
             "['chaos:none'] }), /is unknown/);\n"
             "  await c.close();\n"
             "})().catch((e) => { console.error(e); process.exit(1); });\n",
             WHARF_SOURCE_DIR, redis.url);
    f = fopen(script, "w");
    cr_assert(f != NULL);
    fputs(program, f);
    cr_assert_eq(fclose(f), 0);
    code =
        test_spawn((const char *const[]){"/usr/bin/node", script, NULL}, NULL,
                   out, err, "WHARF_LUA_DIR", WHARF_SOURCE_DIR "/sdk/lua");
    cr_assert_eq(code, 0, "node failed; see %s", err);
    wait_runs("ndkid", 1);
    payload = callback_payload("nd");
    cr_assert(strstr(payload, "\"ok\":1") && strstr(payload, "\"dead\":1"),
              "%s", payload);
    free(payload);
}

/* A parent cancelled before it ran counts as dead for its child: the
 * notice waits in the outbox for a host's sweep. */
Test(workflow, a_cancelled_parent_is_dead_for_its_child)
{
    const test_cli_run *r;
    char *error;

    cr_assert_eq(wharf("enqueue", "chaos", "ok", "--id", "cp")->status, 0);
    r = wharf("enqueue", "chaos_b", "ok", "--id", "cc", "--after", "chaos:cp");
    cr_assert_eq(r->status, 0, "%s", r->err);
    r = wharf("cancel", "chaos", "cp");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_eq(test_redis_int(rc, "XLEN wharf:{chaos}:outbox"), 1);
    start_host(&host_a, "a");
    cr_assert(
        test_wait_until(key_exists, "wharf:{chaos_b}:dead:cc", TEST_EVENT_MS),
        "cc is not dead; see %s", host_a.log);
    error = hget("wharf:{chaos_b}:dead:cc", "error");
    cr_assert_str_eq(error, "parent chaos:cp is dead");
    free(error);
    cr_assert_eq(runs_of("cp") + runs_of("cc"), 0);
}

Test(workflow, the_cli_refuses_what_would_never_end)
{
    char file[300];
    const test_cli_run *r;

    r = wharf("enqueue", "chaos", "ok", "--after", "chaos:nobody");
    cr_assert_eq(r->status, 65);
    cr_assert(strstr(r->err, "parent chaos:nobody is unknown"), "%s", r->err);
    r = wharf("enqueue", "chaos", "ok", "--id", "self", "--after",
              "chaos:self");
    cr_assert_eq(r->status, 65);
    cr_assert(strstr(r->err, "its own parent"), "%s", r->err);
    r = wharf("enqueue", "chaos", "ok", "--after", "nocolon");
    cr_assert_eq(r->status, 65, "%s", r->err);
    r = wharf("enqueue", "chaos", "ok", "--after", "chaos:x",
              "--on-parent-dead", "maybe");
    cr_assert_eq(r->status, 64, "%s", r->err);
    snprintf(file, sizeof(file), "%s/empty", redis.dir);
    write_lines(file, (const char *const[]){NULL});
    r = wharf("enqueue", "chaos", "--file", file, "--group", "g5", "--then",
              "chaos_b");
    cr_assert_eq(r->status, 65);
    cr_assert(strstr(r->err, "no members"), "%s", r->err);
    r = wharf("enqueue", "chaos", "--file", file, "--group", "g5");
    cr_assert_eq(r->status, 64, "%s", r->err);
    r = wharf("group", "show", "nosuch");
    cr_assert_eq(r->status, 1, "%s", r->err);
    /* Nothing was written by the refusals. */
    cr_assert_eq(test_redis_keys(rc, "wharf:{chaos}:*"), 0);
}
