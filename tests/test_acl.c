/* Least privilege: etc/wharf.acl, loaded by a real redis-server with
 * --aclfile. A host runs under wharf-host (tasks that succeed, retry, die
 * and wait), a producer under wharf-producer enqueues, reads status and
 * results, cancels and lists stats, and Redis denies neither anything;
 * the producer can neither read nor write a lock, nor run what neither
 * user needs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "host_process.h"
#include "redis_server.h"
#include "wharf_cli.h"

#define HOST_PASSWORD "h0st-Secret-9c1"
#define PRODUCER_PASSWORD "pr0ducer-Secret-7d2"

static test_redis redis;
static test_host host;
static redisContext *rc; /* the default user's, for the test itself */
static char dir[64];

static void suite_up(void)
{
    static const char *const args[] = {"--aclfile",
                                       WHARF_SOURCE_DIR "/etc/wharf.acl", NULL};

    snprintf(dir, sizeof(dir), "/tmp/wharf-test-acl-XXXXXX");
    cr_assert(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
    test_redis_start_with(&redis, NULL, args);
    rc = test_redis_connect(&redis);
    /* The file ships both users off and without a password. */
    freeReplyObject(
        test_redis_command(rc, "ACL SETUSER wharf-host on >%s", HOST_PASSWORD));
    freeReplyObject(test_redis_command(rc, "ACL SETUSER wharf-producer on >%s",
                                       PRODUCER_PASSWORD));
    freeReplyObject(test_redis_command(rc, "ACL LOG RESET"));
}

static void suite_down(void)
{
    test_host_stop(&host);
    if (rc)
        redisFree(rc);
    rc = NULL;
    test_redis_stop(&redis);
}

TestSuite(acl, .init = suite_up, .fini = suite_down, .timeout = 120);

static bool task_done(void *id)
{
    return test_host_done(&host, id) >= 1;
}

static bool task_dead(void *unused)
{
    (void)unused;
    return test_redis_int(rc, "ZCARD wharf:{chaos}:dead") >= 1;
}

/* Denials Redis logged for user (ACL LOG). */
static int denials_of(const char *user)
{
    redisReply *r = test_redis_command(rc, "ACL LOG 100");
    int n = 0;

    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements;
         i++) {
        const redisReply *e = r->element[i];
        const char *reason = "", *object = "", *name = "";

        for (size_t k = 0; k + 1 < e->elements; k += 2) {
            const char *field = e->element[k]->str;
            const char *value = e->element[k + 1]->str;
            if (!value)
                continue;
            if (strcmp(field, "username") == 0)
                name = value;
            else if (strcmp(field, "reason") == 0)
                reason = value;
            else if (strcmp(field, "object") == 0)
                object = value;
        }
        if (strcmp(name, user) == 0) {
            /* What was refused, for the failure's reader. */
            fprintf(stderr, "ACL LOG: %s refused %s: %s\n", user, reason,
                    object);
            n++;
        }
    }
    freeReplyObject(r);
    return n;
}

/* A connection as the producer. */
static redisContext *as_producer(void)
{
    redisContext *c = redisConnect("127.0.0.1", redis.port);
    redisReply *r;

    cr_assert(c && !c->err);
    r = redisCommand(c, "AUTH wharf-producer %s", PRODUCER_PASSWORD);
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "%s", r ? r->str : "");
    freeReplyObject(r);
    return c;
}

/* reply is an error NOPERM (the producer may not). */
static void assert_refused(redisReply *r, const char *what)
{
    cr_assert(
        r && r->type == REDIS_REPLY_ERROR && strstr(r->str, "NOPERM") != NULL,
        "%s was allowed: %s", what,
        r ? (r->type == REDIS_REPLY_ERROR ? r->str : "(a reply)") : "(none)");
    freeReplyObject(r);
}

static bool schedule_fired(void *arg)
{
    (void)arg;
    return test_redis_int(rc, "ZCARD wharf:{chaos}:schedules") == 1;
}

Test(acl, a_host_and_a_producer_run_under_their_users)
{
    char host_url[160], producer_url[160];
    test_host_opts o = {.redis_url = host_url,
                        .extra = "[defaults]\nbackoff_base = 100ms\n"
                                 "[schedule.beat]\ntype = chaos\n"
                                 "every = 1s\npayload = ok\n"};
    const test_cli_run *cli;
    redisContext *p;

    snprintf(host_url, sizeof(host_url),
             "redis://wharf-host:" HOST_PASSWORD "@127.0.0.1:%d/0", redis.port);
    snprintf(producer_url, sizeof(producer_url),
             "redis://wharf-producer:" PRODUCER_PASSWORD "@127.0.0.1:%d/0",
             redis.port);
    test_host_up(&host, &redis, &o, rc);

    /* Every path of a task: done, retried then done, dead, delayed. */
    static const char *const tasks[][2] = {
        {"ok-1", "ok"}, {"retry-1", "fail:1"}, {"dead-1", "fatal"}};
    for (size_t i = 0; i < 3; i++) {
        cli = test_cli(producer_url, dir,
                       (const char *const[]){"enqueue", "chaos", tasks[i][1],
                                             "--id", tasks[i][0], NULL});
        cr_assert_eq(cli->status, 0, "%s", cli->err);
    }
    cli = test_cli(producer_url, dir,
                   (const char *const[]){"enqueue", "chaos", "ok", "--id",
                                         "later-1", "--delay", "500ms", NULL});
    cr_assert_eq(cli->status, 0, "%s", cli->err);
    cli = test_cli(producer_url, dir,
                   (const char *const[]){"enqueue", "chaos", "ok", "--id",
                                         "cancel-1", "--delay", "1h", NULL});
    cr_assert_eq(cli->status, 0, "%s", cli->err);
    cr_assert(test_wait_until(task_done, "ok-1", TEST_EVENT_MS), "see %s",
              host.log);
    cr_assert(test_wait_until(task_done, "retry-1", TEST_EVENT_MS), "see %s",
              host.log);
    cr_assert(test_wait_until(task_done, "later-1", TEST_EVENT_MS), "see %s",
              host.log);
    cr_assert(test_wait_until(task_dead, NULL, TEST_EVENT_MS), "see %s",
              host.log);

    cli = test_cli(producer_url, dir,
                   (const char *const[]){"result", "chaos", "ok-1", NULL});
    cr_assert_eq(cli->status, 0, "%s", cli->err);
    /* Workflows: a child of a finished parent, a group with a callback,
     * the group listed, a held task's status and a group cancelled. */
    cli = test_cli(producer_url, dir,
                   (const char *const[]){"enqueue", "chaos", "ok", "--id",
                                         "child-1", "--after", "chaos:ok-1",
                                         NULL});
    cr_assert_eq(cli->status, 0, "%s", cli->err);
    {
        char members[300];
        FILE *f;

        snprintf(members, sizeof(members), "%s/members", dir);
        f = fopen(members, "w");
        cr_assert_not_null(f);
        fputs("ok\nok\n", f);
        fclose(f);
        cli = test_cli(producer_url, dir,
                       (const char *const[]){"enqueue", "chaos", "--file",
                                             members, "--group", "g1", "--then",
                                             "echo", "ok", NULL});
        cr_assert_eq(cli->status, 0, "%s", cli->err);
        cli = test_cli(producer_url, dir,
                       (const char *const[]){"enqueue", "chaos", "ok", "--id",
                                             "held-1", "--after",
                                             "chaos:cancel-1", NULL});
        cr_assert_eq(cli->status, 0, "%s", cli->err);
        cli =
            test_cli(producer_url, dir,
                     (const char *const[]){"status", "chaos", "held-1", NULL});
        cr_assert_eq(cli->status, 0, "%s", cli->err);
        cr_assert(strstr(cli->out, "held") != NULL, "%s", cli->out);
        /* The callback's payload is the group's JSON: echo.so keeps it. */
        cr_assert_eq(test_wait_int(rc, 1, TEST_EVENT_MS,
                                   "EXISTS wharf:{echo}:result:group:g1"),
                     1, "the callback did not run; see %s", host.log);
        cr_assert(test_wait_until(task_done, "child-1", TEST_EVENT_MS),
                  "the child did not run; see %s", host.log);
        cli = test_cli(producer_url, dir,
                       (const char *const[]){"group", "show", "g1", NULL});
        cr_assert_eq(cli->status, 0, "%s", cli->err);
        cli = test_cli(producer_url, dir,
                       (const char *const[]){"enqueue", "chaos", "--file",
                                             members, "--group", "g2", "--then",
                                             "chaos", "ok", NULL});
        cr_assert_eq(cli->status, 0, "%s", cli->err);
        cli = test_cli(producer_url, dir,
                       (const char *const[]){"group", "cancel", "g2", NULL});
        cr_assert_eq(cli->status, 0, "%s", cli->err);
    }
    cli = test_cli(producer_url, dir,
                   (const char *const[]){"status", "chaos", "dead-1", NULL});
    cr_assert_eq(cli->status, 0, "%s", cli->err);
    cr_assert(strstr(cli->out, "dead") != NULL, "%s", cli->out);
    cli = test_cli(producer_url, dir,
                   (const char *const[]){"cancel", "chaos", "cancel-1", NULL});
    cr_assert_eq(cli->status, 0, "%s", cli->err);
    cli = test_cli(producer_url, dir, (const char *const[]){"stats", NULL});
    cr_assert_eq(cli->status, 0, "%s", cli->err);
    cr_assert(strstr(cli->out, "chaos") != NULL, "%s", cli->out);
    cli = test_cli(producer_url, dir,
                   (const char *const[]){"stats", "--history", NULL});
    cr_assert_eq(cli->status, 0, "%s", cli->err);
    /* The host's schedule timer fires under the host's user; the
     * producer lists the schedules and fires one. */
    cr_assert(test_wait_until(schedule_fired, NULL, TEST_EVENT_MS), "see %s",
              host.log);
    cli = test_cli(
        producer_url, dir,
        (const char *const[]){"--config", host.manifest, "schedules", NULL});
    cr_assert_eq(cli->status, 0, "%s", cli->err);
    cr_assert(strstr(cli->out, "beat") != NULL, "%s", cli->out);
    cli = test_cli(producer_url, dir,
                   (const char *const[]){"--config", host.manifest, "schedule",
                                         "run", "beat", NULL});
    cr_assert_eq(cli->status, 0, "%s", cli->err);

    /* The operator's commands, under the host's user. */
    cli = test_cli(host_url, dir,
                   (const char *const[]){"locks", "list", "chaos", NULL});
    cr_assert_eq(cli->status, 0, "%s", cli->err);
    cli = test_cli(host_url, dir,
                   (const char *const[]){"dead", "list", "chaos", NULL});
    cr_assert_eq(cli->status, 0, "%s", cli->err);
    cr_assert(strstr(cli->out, "dead-1") != NULL, "%s", cli->out);
    cli = test_cli(
        host_url, dir,
        (const char *const[]){"dead", "replay", "chaos", "dead-1", NULL});
    cr_assert_eq(cli->status, 0, "%s", cli->err);

    cr_assert_eq(test_host_stop(&host), 0);
    cr_assert_eq(denials_of("wharf-host"), 0,
                 "Redis refused the host something (ACL LOG; see %s)",
                 host.log);
    cr_assert_eq(denials_of("wharf-producer"), 0,
                 "Redis refused the producer something (ACL LOG)");

    /* What the producer may not do. */
    p = as_producer();
    assert_refused(redisCommand(p, "GET wharf:{chaos}:lock:ok-1"),
                   "reading a lock");
    assert_refused(redisCommand(p, "SET wharf:{chaos}:lock:x 1"),
                   "writing a lock");
    assert_refused(redisCommand(p, "DEL wharf:{chaos}:lock:x"),
                   "deleting a lock");
    assert_refused(redisCommand(p, "GET wharf:{chaos}:fence"),
                   "reading the fence");
    assert_refused(redisCommand(p, "FLUSHALL"), "FLUSHALL");
    assert_refused(redisCommand(p, "KEYS *"), "KEYS");
    assert_refused(redisCommand(p, "CONFIG SET maxmemory 1"), "CONFIG SET");
    assert_refused(redisCommand(p, "XREADGROUP GROUP wharf x COUNT 1 STREAMS "
                                   "wharf:{chaos}:stream >"),
                   "claiming a task");
    assert_refused(redisCommand(p, "GET other:key"), "a key of another prefix");
    /* Results: read (wharf result above), never written or deleted. */
    assert_refused(redisCommand(p, "SET wharf:{chaos}:result:ok-1 forged"),
                   "writing a result");
    assert_refused(redisCommand(p, "DEL wharf:{chaos}:result:ok-1"),
                   "deleting a result");
    {
        redisReply *r = redisCommand(p, "GET wharf:{chaos}:result:ok-1");
        cr_assert(r && r->type == REDIS_REPLY_STRING, "reading a result: %s",
                  r && r->type == REDIS_REPLY_ERROR ? r->str : "no string");
        freeReplyObject(r);
    }
    redisFree(p);
}
