/* Real Redis Cluster and Sentinel deployments for a test; see
 * redis_cluster.h. */
#include "redis_cluster.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "host_process.h"

static const char *const cluster_args[] = {
    "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
    /* Not 1 s: on a loaded machine a node busy for a second (a big
     * pipeline, a starved CPU) would be failed by the others, and a run
     * that expects no failover would see one. 3 s makes a killed
     * primary's failover take about 2 s longer; no test bounds it. */
    "--cluster-node-timeout", "3000",
    /* A replica takes over however long it was cut off. */
    "--cluster-replica-validity-factor", "0",
    /* Replicas sync at once, not after the default 5 s wait for more. */
    "--repl-diskless-sync-delay", "0", NULL};

/* Runs argv (NULL-terminated) with its output into log; its exit code. */
static int run_tool(const char *const *argv, const char *log)
{
    int status;
    pid_t pid = fork();

    cr_assert(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
        }
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

redisContext *test_cluster_connect(const test_cluster *c, int i)
{
    return test_redis_connect(&c->node[i]);
}

/* A reply of a command to node i, or NULL if it does not answer. */
static redisReply *ask(const test_redis *r, const char *fmt, ...)
{
    redisContext *c = redisConnect("127.0.0.1", r->port);
    redisReply *reply = NULL;
    va_list ap;

    if (c && !c->err) {
        va_start(ap, fmt);
        reply = redisvCommand(c, fmt, ap);
        va_end(ap);
    }
    redisFree(c);
    return reply;
}

/* Waits up to 30 s until replica r's link to its primary is up; true
 * when it is. */
static bool wait_link_up(const test_redis *r)
{
    for (int tries = 0; tries < 3000; tries++) {
        redisReply *reply = ask(r, "INFO replication");
        bool up = reply && reply->type == REDIS_REPLY_STRING &&
                  strstr(reply->str, "master_link_status:up");
        freeReplyObject(reply);
        if (up)
            return true;
        test_sleep_ms(10);
    }
    return false;
}

static bool cluster_ok(const test_redis *r)
{
    redisReply *reply = ask(r, "CLUSTER INFO");
    bool ok = reply && reply->type == REDIS_REPLY_STRING &&
              strstr(reply->str, "cluster_state:ok") != NULL;

    freeReplyObject(reply);
    return ok;
}

/* Waits until every live node says cluster_state:ok. */
static void wait_cluster_ok(const test_cluster *c)
{
    for (int tries = 0; tries < 3000; tries++) {
        bool all = true;
        for (int i = 0; i < c->n && all; i++)
            if (c->node[i].pid > 0)
                all = cluster_ok(&c->node[i]);
        if (all)
            return;
        test_sleep_ms(10);
    }
    cr_assert_fail("the cluster did not come up (see %s)", c->node[0].dir);
}

void test_cluster_start(test_cluster *c, int primaries, int replicas)
{
    char addrs[TEST_CLUSTER_MAX][32], log[300];
    const char *argv[TEST_CLUSTER_MAX + 8];
    int n = 0;
    size_t used = 0;

    memset(c, 0, sizeof(*c));
    c->primaries = primaries;
    c->n = primaries * (replicas ? 2 : 1);
    cr_assert(c->n <= TEST_CLUSTER_MAX);
    for (int i = 0; i < c->n; i++)
        test_redis_start_with(&c->node[i], NULL, cluster_args);
    argv[n++] = "redis-cli";
    argv[n++] = "--cluster";
    argv[n++] = "create";
    for (int i = 0; i < c->n; i++) {
        snprintf(addrs[i], sizeof(addrs[i]), "127.0.0.1:%d", c->node[i].port);
        argv[n++] = addrs[i];
    }
    argv[n++] = "--cluster-replicas";
    argv[n++] = replicas ? "1" : "0";
    argv[n++] = "--cluster-yes";
    argv[n] = NULL;
    snprintf(log, sizeof(log), "%s/cluster-create.log", c->node[0].dir);
    cr_assert_eq(run_tool(argv, log), 0,
                 "redis-cli --cluster create failed "
                 "(see %s)",
                 log);
    wait_cluster_ok(c);
    /* redis-cli makes the first ones primaries; replicas follow. */
    used = (size_t)snprintf(c->url, sizeof(c->url), "redis+cluster://");
    for (int i = 0; i < primaries; i++)
        used +=
            (size_t)snprintf(c->url + used, sizeof(c->url) - used,
                             "%s127.0.0.1:%d", i ? "," : "", c->node[i].port);
    /* Replicas in sync before any test kills a primary. */
    for (int i = primaries; i < c->n; i++)
        cr_assert(wait_link_up(&c->node[i]), "replica %d never synced", i);
}

void test_cluster_stop(test_cluster *c)
{
    for (int i = 0; i < c->n; i++)
        test_redis_stop(&c->node[i]);
}

static int index_of_port(const test_cluster *c, long long port)
{
    for (int i = 0; i < c->n; i++)
        if (c->node[i].port == port)
            return i;
    return -1;
}

int test_cluster_owner(const test_cluster *c, unsigned slot)
{
    for (int i = 0; i < c->n; i++) {
        redisReply *r;
        int owner = -1;
        if (c->node[i].pid <= 0 || !(r = ask(&c->node[i], "CLUSTER SLOTS")))
            continue;
        for (size_t k = 0; r->type == REDIS_REPLY_ARRAY && k < r->elements;
             k++) {
            redisReply *e = r->element[k];
            if (e->element[0]->integer <= (long long)slot &&
                (long long)slot <= e->element[1]->integer)
                owner = index_of_port(c, e->element[2]->element[1]->integer);
        }
        freeReplyObject(r);
        return owner;
    }
    return -1;
}

unsigned test_cluster_slot(const test_cluster *c, const char *key)
{
    redisReply *r = ask(&c->node[0], "CLUSTER KEYSLOT %s", key);
    unsigned slot;

    cr_assert(r && r->type == REDIS_REPLY_INTEGER);
    slot = (unsigned)r->integer;
    freeReplyObject(r);
    return slot;
}

static void node_id(const test_redis *r, char *id, size_t len)
{
    redisReply *reply = ask(r, "CLUSTER MYID");

    cr_assert(reply && reply->type == REDIS_REPLY_STRING);
    snprintf(id, len, "%s", reply->str);
    freeReplyObject(reply);
}

static void expect_ok(redisReply *r, const char *what)
{
    cr_assert(r && r->type != REDIS_REPLY_ERROR, "%s: %s", what,
              r ? r->str : "no reply");
    freeReplyObject(r);
}

void test_cluster_move_slot(test_cluster *c, unsigned slot, int to,
                            int pause_ms)
{
    int from = test_cluster_owner(c, slot);
    char from_id[64], to_id[64];

    cr_assert(from >= 0 && from != to, "slot %u: owner %d, to %d", slot, from,
              to);
    node_id(&c->node[from], from_id, sizeof(from_id));
    node_id(&c->node[to], to_id, sizeof(to_id));
    expect_ok(
        ask(&c->node[to], "CLUSTER SETSLOT %u IMPORTING %s", slot, from_id),
        "IMPORTING");
    expect_ok(
        ask(&c->node[from], "CLUSTER SETSLOT %u MIGRATING %s", slot, to_id),
        "MIGRATING");
    test_sleep_ms(pause_ms);
    while (true) {
        redisReply *keys =
            ask(&c->node[from], "CLUSTER GETKEYSINSLOT %u 100", slot);
        const char *argv[110];
        char port[16];
        int argc = 0;
        cr_assert(keys && keys->type == REDIS_REPLY_ARRAY);
        if (keys->elements == 0) {
            freeReplyObject(keys);
            break;
        }
        snprintf(port, sizeof(port), "%d", c->node[to].port);
        argv[argc++] = "MIGRATE";
        argv[argc++] = "127.0.0.1";
        argv[argc++] = port;
        argv[argc++] = "";
        argv[argc++] = "0";
        argv[argc++] = "5000";
        argv[argc++] = "KEYS";
        for (size_t k = 0; k < keys->elements; k++)
            argv[argc++] = keys->element[k]->str;
        redisContext *rc = test_redis_connect(&c->node[from]);
        expect_ok(redisCommandArgv(rc, argc, argv, NULL), "MIGRATE");
        redisFree(rc);
        freeReplyObject(keys);
    }
    /* The new owner first, as redis-cli does, then everyone else. */
    expect_ok(ask(&c->node[to], "CLUSTER SETSLOT %u NODE %s", slot, to_id),
              "SETSLOT NODE");
    for (int i = 0; i < c->n; i++)
        if (i != to && c->node[i].pid > 0)
            freeReplyObject(
                ask(&c->node[i], "CLUSTER SETSLOT %u NODE %s", slot, to_id));
    wait_cluster_ok(c);
}

void test_cluster_kill_primary(test_cluster *c, int i)
{
    bool owned[16384];
    redisReply *r = ask(&c->node[i], "CLUSTER SLOTS");

    memset(owned, 0, sizeof(owned));
    cr_assert(r && r->type == REDIS_REPLY_ARRAY);
    for (size_t k = 0; k < r->elements; k++) {
        redisReply *e = r->element[k];
        if (e->element[2]->element[1]->integer == c->node[i].port)
            for (long long s = e->element[0]->integer;
                 s <= e->element[1]->integer; s++)
                owned[s] = true;
    }
    freeReplyObject(r);
    kill(c->node[i].pid, SIGKILL);
    waitpid(c->node[i].pid, NULL, 0);
    c->node[i].pid = 0;
    for (int tries = 0; tries < 3000; tries++) {
        bool moved = true;
        for (unsigned s = 0; s < 16384 && moved; s++)
            if (owned[s]) {
                int owner = test_cluster_owner(c, s);
                moved = owner >= 0 && owner != i;
                break; /* one slot tells: a failover moves them all */
            }
        if (moved) {
            wait_cluster_ok(c);
            return;
        }
        test_sleep_ms(10);
    }
    cr_assert_fail("no replica took over from node %d", i);
}

void test_cluster_revive(test_cluster *c, int i)
{
    test_redis_restart(&c->node[i]);
    cr_assert(wait_link_up(&c->node[i]), "node %d did not rejoin as a replica",
              i);
    wait_cluster_ok(c);
}

/* ---- Sentinel ---- */

/* Starts a redis-sentinel on a free port watching port as "wharf". */
static void start_sentinel(test_redis *s, int primary_port)
{
    char conf[300];
    FILE *f;

    memset(s, 0, sizeof(*s));
    snprintf(s->dir, sizeof(s->dir), "/tmp/wharf-test-sentinel-XXXXXX");
    cr_assert(mkdtemp(s->dir) != NULL, "mkdtemp: %s", strerror(errno));
    s->port = test_free_port();
    snprintf(conf, sizeof(conf), "%s/sentinel.conf", s->dir);
    f = fopen(conf, "w");
    cr_assert(f != NULL);
    fprintf(f,
            "port %d\nbind 127.0.0.1\ndaemonize no\ndir %s\n"
            "logfile %s/sentinel.log\n"
            "sentinel monitor wharf 127.0.0.1 %d 2\n"
            /* Not 1 s: on a loaded machine a new master that misses a
             * second of PINGs would be failed over again, to the old
             * one just restarted empty. A long failover-timeout keeps
             * the sentinels from starting another for a while. */
            "sentinel down-after-milliseconds wharf 2000\n"
            "sentinel failover-timeout wharf 60000\n"
            "sentinel parallel-syncs wharf 1\n",
            s->port, s->dir, s->dir, primary_port);
    fclose(f);
    s->pid = fork();
    cr_assert(s->pid >= 0);
    if (s->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        execlp("redis-sentinel", "redis-sentinel", conf, (char *)NULL);
        execlp("redis-server", "redis-server", conf, "--sentinel",
               (char *)NULL);
        _exit(127);
    }
    snprintf(s->url, sizeof(s->url), "redis://127.0.0.1:%d", s->port);
}

/* A field of SENTINEL MASTER wharf on sentinel s, as a number; -1. */
static long long master_field(const test_redis *s, const char *name)
{
    redisReply *r = ask(s, "SENTINEL MASTER wharf");
    long long v = -1;

    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements;
         i += 2)
        if (strcmp(r->element[i]->str, name) == 0)
            v = strtoll(r->element[i + 1]->str, NULL, 10);
    freeReplyObject(r);
    return v;
}

void test_sentinels_start(test_sentinels *s)
{
    static char port_text[16];
    static const char *const primary_args[] = {"--repl-diskless-sync-delay",
                                               "0", NULL};
    static const char *const replica_args[] = {
        "--replicaof", "127.0.0.1", port_text, "--repl-diskless-sync-delay",
        "0",           NULL};
    size_t used;

    memset(s, 0, sizeof(*s));
    test_redis_start_with(&s->primary, NULL, primary_args);
    snprintf(port_text, sizeof(port_text), "%d", s->primary.port);
    test_redis_start_with(&s->replica, NULL, replica_args);
    cr_assert(wait_link_up(&s->replica), "the replica never synced");
    for (int i = 0; i < 3; i++)
        start_sentinel(&s->sentinel[i], s->primary.port);
    for (int i = 0; i < 3; i++) {
        int tries;
        for (tries = 0; tries < 3000; tries++) {
            if (master_field(&s->sentinel[i], "num-slaves") >= 1 &&
                master_field(&s->sentinel[i], "num-other-sentinels") == 2)
                break;
            test_sleep_ms(10);
        }
        cr_assert(tries < 3000, "sentinel %d never saw the set (see %s)", i,
                  s->sentinel[i].dir);
    }
    used = (size_t)snprintf(s->url, sizeof(s->url), "redis+sentinel://");
    for (int i = 0; i < 3; i++)
        used += (size_t)snprintf(s->url + used, sizeof(s->url) - used,
                                 "%s127.0.0.1:%d", i ? "," : "",
                                 s->sentinel[i].port);
    snprintf(s->url + used, sizeof(s->url) - used, "/wharf");
}

void test_sentinels_stop(test_sentinels *s)
{
    for (int i = 0; i < 3; i++)
        test_redis_stop(&s->sentinel[i]);
    test_redis_stop(&s->replica);
    test_redis_stop(&s->primary);
}

/* The port sentinel i names as the master, or -1. */
static int master_port_of(const test_sentinels *s, int i)
{
    redisReply *r =
        ask(&s->sentinel[i], "SENTINEL get-master-addr-by-name wharf");
    int port = -1;

    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2)
        port = atoi(r->element[1]->str);
    freeReplyObject(r);
    return port;
}

int test_sentinels_master_port(const test_sentinels *s)
{
    for (int i = 0; i < 3; i++) {
        int port = master_port_of(s, i);
        if (port > 0)
            return port;
    }
    return -1;
}

/* True if r says ROLE master. */
static bool says_master(const test_redis *r)
{
    redisReply *reply = ask(r, "ROLE");
    bool master = reply && reply->type == REDIS_REPLY_ARRAY &&
                  reply->elements > 0 &&
                  reply->element[0]->type == REDIS_REPLY_STRING &&
                  strcmp(reply->element[0]->str, "master") == 0;

    freeReplyObject(reply);
    return master;
}

/* True once all three sentinels name the replica, and it says ROLE master:
 * then none fails over again when the old one comes back. */
static bool failed_over(const test_sentinels *s)
{
    for (int i = 0; i < 3; i++)
        if (master_port_of(s, i) != s->replica.port)
            return false;
    return says_master(&s->replica);
}

void test_sentinels_kill_primary(test_sentinels *s)
{
    int old = s->primary.port;
    int64_t start, nudged;
    int next = 0;

    kill(s->primary.pid, SIGKILL);
    waitpid(s->primary.pid, NULL, 0);
    s->primary.pid = 0;
    start = nudged = test_now_ms();
    while (!failed_over(s)) {
        int64_t now = test_now_ms();

        cr_assert(now - start < 90000, "no failover from port %d", old);
        /* The sentinels elect a leader to fail over; on a loaded machine
         * the vote can split, and a failed election waits twice the
         * failover-timeout before the next. What is under test is how
         * wharf follows a failover, not the election: after a quiet
         * while, one sentinel is told to fail over on its own
         * (SENTINEL FAILOVER needs no votes), unless the replica is
         * already promoted and only the word is still going round. One
         * already failing over answers INPROG; the next is asked next
         * time. */
        if (now - nudged >= 8000 && !says_master(&s->replica)) {
            redisReply *r =
                ask(&s->sentinel[next], "SENTINEL FAILOVER wharf");
            freeReplyObject(r);
            next = (next + 1) % 3;
            nudged = now;
        }
        test_sleep_ms(10);
    }
}

void test_sentinels_revive(test_sentinels *s)
{
    int64_t deadline;

    test_redis_restart(&s->primary);
    /* A sentinel turns the old primary into a replica a few of its
     * INFO periods after it comes back: seconds, more when loaded. */
    deadline = test_now_ms() + 90000;
    while (test_now_ms() < deadline) {
        redisReply *r = ask(&s->replica, "INFO replication");
        bool up = r && r->type == REDIS_REPLY_STRING &&
                  strstr(r->str, "connected_slaves:1") != NULL;
        freeReplyObject(r);
        if (up)
            return;
        test_sleep_ms(10);
    }
    cr_assert_fail("the old primary did not come back as a replica");
}

void test_sentinels_switchover(test_sentinels *s)
{
    int64_t deadline = test_now_ms() + 60000;
    test_redis old = s->primary;
    bool asked = false;

    while (!asked && test_now_ms() < deadline) {
        redisReply *r = ask(&s->sentinel[0], "SENTINEL FAILOVER wharf");
        asked = r && r->type == REDIS_REPLY_STATUS;
        if (!asked)
            test_sleep_ms(50); /* NOGOODSLAVE: not yet seen in sync */
        freeReplyObject(r);
    }
    cr_assert(asked, "the sentinels refused SENTINEL FAILOVER (see %s)",
              s->sentinel[0].dir);
    while (!says_master(&s->replica) && test_now_ms() < deadline)
        test_sleep_ms(5);
    cr_assert(says_master(&s->replica), "the replica was never promoted");
    s->primary = s->replica;
    s->replica = old;
}

void test_sentinels_settle(test_sentinels *s)
{
    int64_t deadline = test_now_ms() + 90000;

    while (test_now_ms() < deadline) {
        redisReply *r = ask(&s->primary, "INFO replication");
        bool up = r && r->type == REDIS_REPLY_STRING &&
                  strstr(r->str, "connected_slaves:1") != NULL;
        freeReplyObject(r);
        if (up && !says_master(&s->replica) &&
            master_port_of(s, 0) == s->primary.port &&
            master_port_of(s, 1) == s->primary.port &&
            master_port_of(s, 2) == s->primary.port)
            return;
        test_sleep_ms(20);
    }
    cr_assert_fail("the old master was not demoted to a replica of port %d",
                   s->primary.port);
}
