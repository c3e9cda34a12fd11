/* wharf dead run TYPE ID [PLUGIN.so]: the real binary on dead records a
 * real finish wrote (broker_finish, as a worker kills a task), run
 * through the shipped plugins (chaos, echo) and the taskinfo fixture,
 * which answers with the task it was given: the same failure again, the
 * payload byte for byte, attempt, fence, trace and enqueued_at as
 * recorded, the manifest's plugin keys, the plugin the manifest routes
 * the type to; nothing written to Redis (the keyspace compared before
 * and after, and a run as a user Redis lets only read); every error's
 * one line and exit code. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "broker.h"
#include "broker_config.h"
#include "redis_server.h"
#include "spawn.h"

#define WHARF WHARF_BINARY_DIR "/wharf"
#define CHAOS WHARF_PLUGIN_DIR "/chaos.so"
#define ECHO WHARF_PLUGIN_DIR "/echo.so"
#define TASKINFO WHARF_FIXTURE_DIR "/taskinfo.so"
#define TRACE "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
#define ENQUEUED_AT "1700000000123"

static test_redis redis;
static redisContext *rc;
static config *cfg;
static broker b;

static void start(void)
{
    static const char *const types[] = {"chaos", "echo", "taskinfo"};

    test_broker_up(&redis, &rc, &cfg);
    test_broker_open(&b, cfg, types, NULL, 3, "host:test:0");
}

static void stop(void)
{
    test_broker_down(&redis, &rc, &cfg, &b);
}

TestSuite(dead_run, .init = start, .fini = stop, .timeout = 60);

/* Enqueues task id of type (payload of len bytes) at `attempt` and has
 * it die as a worker kills it on its last attempt: the finish writes
 * dead:<id> with the attempt that died and `reason`. */
static void die(const char *type, const char *id, const char *payload,
                size_t len, unsigned attempt, const char *reason)
{
    broker_job jobs[4];
    redisReply *claim = NULL;
    size_t n = 0;
    char stream[64];

    snprintf(stream, sizeof(stream), "wharf:{%s}:stream", type);
    freeReplyObject(test_redis_command(
        rc,
        "XADD %s * id %s type %s payload %b attempt %u enqueued_at " ENQUEUED_AT
        " trace " TRACE,
        stream, id, type, payload, len, attempt));
    for (int i = 0; i < 10 && n == 0; i++) {
        freeReplyObject(claim);
        claim = broker_claim(&b, 4, 0);
        cr_assert(claim != NULL, "%s", b.errstr);
        n = broker_jobs(&b, claim, jobs, 4);
    }
    cr_assert_eq(n, 1);
    cr_assert_eq(broker_begin(&b, jobs, n), 0, "%s", b.errstr);
    jobs[0].finish = FINISH_DEAD;
    jobs[0].next_attempt = attempt;
    jobs[0].reason = reason;
    cr_assert_eq(broker_finish(&b, jobs, n), 0, "%s", b.errstr);
    freeReplyObject(claim);
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{%s}:dead:%s", type, id), 1);
}

/* What a run left: its exit code, stdout (len bytes) and stderr. */
static int status;
static char out[16384], err[16384];
static size_t out_len;

static size_t slurp(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(buf, 1, len - 1, f) : 0;

    buf[n] = '\0';
    if (f)
        fclose(f);
    return n;
}

/* Runs wharf with the arguments (NULL-terminated). Returns the exit
 * code. */
static int wharf(const char *first, ...)
{
    const char *argv[24];
    char out_path[512], err_path[512];
    va_list ap;
    int n = 0;

    argv[n++] = WHARF;
    argv[n++] = first;
    va_start(ap, first);
    while (n < 23 && (argv[n] = va_arg(ap, const char *)) != NULL)
        n++;
    va_end(ap);
    argv[n] = NULL;
    snprintf(out_path, sizeof(out_path), "%s/stdout", redis.dir);
    snprintf(err_path, sizeof(err_path), "%s/stderr", redis.dir);
    /* WHARF_REDIS_URL wins over a manifest's url (as for wharfd): make
     * it this test's Redis, whatever the caller's environment says. */
    status = test_spawn(argv, NULL, out_path, err_path, "WHARF_REDIS_URL",
                        redis.url);
    out_len = slurp(out_path, out, sizeof(out));
    slurp(err_path, err, sizeof(err));
    return status;
}

/* Writes a manifest naming this test's Redis and the shipped plugins,
 * with more sections after; returns its path. */
static const char *manifest(const char *more)
{
    static char path[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s/dead-run.ini", redis.dir);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "[redis]\nurl = %s\n[metrics]\nlisten = off\n[host]\n"
            "plugins_dir = %s\nautoload = no\n%s",
            redis.url, WHARF_PLUGIN_DIR, more);
    fclose(f);
    return path;
}

/* Lines that can only be from one line of stderr: one error, no more. */
static void assert_one_line(void)
{
    char *nl = strchr(err, '\n');

    cr_assert(nl && nl[1] == '\0', "not one line: %s", err);
    cr_assert(strncmp(err, "wharf: dead run: ", 17) == 0, "%s", err);
}

Test(dead_run, a_fatal_task_fails_again_the_same_way)
{
    die("chaos", "t1", "fatal", 5, 1, "fatal: asked to fail for good");
    cr_assert_eq(
        wharf("--redis", redis.url, "dead", "run", "chaos", "t1", CHAOS, NULL),
        65, "%s%s", out, err);
    cr_assert(strstr(out, "status: fail\nerror: fatal: asked to fail for "
                          "good\nduration_ms: "),
              "%s", out);
    cr_assert(strstr(out, "\ndied with: fatal: asked to fail for good\n"), "%s",
              out);
    cr_assert_null(strstr(out, "result:"), "%s", out);
}

Test(dead_run, a_binary_payload_reaches_the_plugin_byte_for_byte)
{
    static const char payload[] = "a\0b\0\xff\xfe\n\r\x01z";
    const size_t len = sizeof(payload) - 1;

    die("echo", "bin", payload, len, 2, "it broke");
    cr_assert_eq(wharf("--redis", redis.url, "dead", "run", "echo", "bin", ECHO,
                       "--result", NULL),
                 0, "%s", err);
    cr_assert_eq(out_len, len, "%zu bytes back", out_len);
    cr_assert_eq(memcmp(out, payload, len), 0);
    /* stdout holds the result alone; the old error is on stderr. */
    cr_assert(strstr(err, "wharf: dead run: died with: it broke\n"), "%s", err);
    /* Without --result, escaped as wharf run shows it. */
    cr_assert_eq(
        wharf("--redis", redis.url, "dead", "run", "echo", "bin", ECHO, NULL),
        0, "%s", err);
    cr_assert(strstr(out, "status: ok\nresult: a\\x00b\\x00\\xff\\xfe\\n\\r"
                          "\\x01z\n"),
              "%s", out);
    cr_assert(strstr(out, "died with: it broke\n"), "%s", out);
}

/* The task as it was: id, the attempt that died, trace, enqueued_at, the
 * fence 1 a record without one gets, or the one it holds; and the keys
 * of its plugin's section. */
Test(dead_run, attempt_trace_fence_and_the_sections_keys_as_recorded)
{
    const char *ini = manifest("[plugin.taskinfo]\npath = " TASKINFO "\n"
                               "types = taskinfo\nnote = from-the-manifest\n");

    die("taskinfo", "t7", "x", 1, 4, "ran out");
    cr_assert_eq(wharf("--redis", redis.url, "dead", "run", "taskinfo", "t7",
                       TASKINFO, "--config", ini, NULL),
                 0, "%s%s", out, err);
    cr_assert(strstr(out,
                     "result: id=t7 attempt=4 fence=1 enqueued_at=" ENQUEUED_AT
                     " trace=" TRACE " payload_len=1 note=from-the-manifest\n"),
              "%s", out);
    cr_assert(strstr(out, "died with: ran out\n"), "%s", out);
    freeReplyObject(
        test_redis_command(rc, "HSET wharf:{taskinfo}:dead:t7 fence 42"));
    cr_assert_eq(wharf("--redis", redis.url, "dead", "run", "taskinfo", "t7",
                       TASKINFO, "--config", ini, NULL),
                 0, "%s%s", out, err);
    cr_assert(strstr(out, " fence=42 "), "%s", out);
}

/* The shipped chaos plugin sees its section's runs_file and the attempt;
 * a task that died retrying on its last attempt is a retry again, which
 * the host would dead-letter. */
Test(dead_run, a_task_that_died_retrying_retries_on_its_last_attempt)
{
    char more[1024], runs[512], line[256];

    snprintf(runs, sizeof(runs), "%s/runs", redis.dir);
    snprintf(more, sizeof(more),
             "[plugin.chaos]\npath = chaos.so\ntypes = chaos\n"
             "runs_file = %s\n[type.chaos]\nmax_attempts = 5\n",
             runs);
    die("chaos", "t5", "fail:9", 6, 5, "fail:9: attempt 5 fails");
    cr_assert_eq(
        wharf("--config", manifest(more), "dead", "run", "chaos", "t5", NULL),
        75, "%s%s", out, err);
    cr_assert(strstr(out, "status: retry\nnote: attempt 5 of 5: the host "
                          "would dead-letter it\n"),
              "%s", out);
    cr_assert(strstr(out, "died with: fail:9: attempt 5 fails\n"), "%s", out);
    slurp(runs, line, sizeof(line));
    cr_assert_str_eq(line, "t5 5\n");
}

/* Without PLUGIN.so: the plugin the manifest routes the type to, named by
 * a section's types or found by loading the manifest's plugins. */
Test(dead_run, the_manifest_chooses_the_plugin)
{
    const char *ini = manifest("[plugin.echo]\npath = echo.so\n"
                               "[plugin.taskinfo]\npath = " TASKINFO "\n"
                               "types = taskinfo\n");

    die("taskinfo", "t1", "x", 1, 1, "no");
    die("echo", "e1", "hello", 5, 1, "no");
    cr_assert_eq(wharf("--config", ini, "dead", "run", "taskinfo", "t1", NULL),
                 0, "%s%s", out, err);
    cr_assert(strstr(out, "result: id=t1 attempt=1 "), "%s", out);
    /* [plugin.echo] has no types: its descriptor's say it serves echo. */
    cr_assert_eq(wharf("--redis", redis.url, "dead", "run", "echo", "e1",
                       "--config", ini, NULL),
                 0, "%s%s", out, err);
    cr_assert(strstr(out, "result: hello\n"), "%s", out);
}

/* Every key and every field as it was: same DBSIZE, same record, same
 * dead set, after a run that failed and one that succeeded. */
Test(dead_run, it_never_writes_to_redis)
{
    redisReply *before, *after, *set_before, *set_after;
    long long keys;

    die("chaos", "t1", "fatal", 5, 1, "fatal: asked to fail for good");
    die("echo", "e1", "hello", 5, 3, "no");
    keys = test_redis_int(rc, "DBSIZE");
    before = test_redis_command(rc, "HGETALL wharf:{chaos}:dead:t1");
    set_before = test_redis_command(rc, "ZRANGE wharf:{chaos}:dead 0 -1 "
                                        "WITHSCORES");
    cr_assert_eq(
        wharf("--redis", redis.url, "dead", "run", "chaos", "t1", CHAOS, NULL),
        65, "%s", err);
    cr_assert_eq(
        wharf("--redis", redis.url, "dead", "run", "echo", "e1", ECHO, NULL), 0,
        "%s", err);
    cr_assert_eq(test_redis_int(rc, "DBSIZE"), keys);
    after = test_redis_command(rc, "HGETALL wharf:{chaos}:dead:t1");
    set_after = test_redis_command(rc, "ZRANGE wharf:{chaos}:dead 0 -1 "
                                       "WITHSCORES");
    cr_assert_eq(after->elements, before->elements);
    for (size_t i = 0; i < before->elements; i++) {
        cr_assert_eq(after->element[i]->len, before->element[i]->len);
        cr_assert_eq(memcmp(after->element[i]->str, before->element[i]->str,
                            before->element[i]->len),
                     0);
    }
    cr_assert_eq(set_after->elements, 2);
    cr_assert_str_eq(set_after->element[0]->str, set_before->element[0]->str);
    cr_assert_str_eq(set_after->element[1]->str, set_before->element[1]->str);
    cr_assert_eq(test_redis_int(rc, "TTL wharf:{chaos}:dead:t1") > 0, 1);
    freeReplyObject(before);
    freeReplyObject(after);
    freeReplyObject(set_before);
    freeReplyObject(set_after);
}

/* A user Redis lets read and nothing more runs it as well: no command of
 * it writes. */
Test(dead_run, a_read_only_user_is_enough)
{
    char url[128];

    die("chaos", "t1", "fatal", 5, 1, "fatal: asked to fail for good");
    freeReplyObject(test_redis_command(
        rc, "ACL SETUSER reader on >readpass ~* &* -@all +@read "
            "+@connection"));
    snprintf(url, sizeof(url), "redis://reader:readpass@127.0.0.1:%d/0",
             redis.port);
    cr_assert_eq(
        wharf("--redis", url, "dead", "run", "chaos", "t1", CHAOS, NULL), 65,
        "%s%s", out, err);
    cr_assert(strstr(out, "died with: fatal: asked to fail for good\n"), "%s",
              out);
    /* The same user is refused a write, so the run above proves it. */
    cr_assert_eq(wharf("--redis", url, "dead", "purge", "chaos", NULL), 69,
                 "%s%s", out, err);
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{chaos}:dead:t1"), 1);
}

Test(dead_run, an_older_hosts_record_in_task_is_read)
{
    freeReplyObject(
        test_redis_command(rc, "ZADD wharf:{echo}:dead 1700000000999 old"));
    freeReplyObject(test_redis_command(
        rc,
        "HSET wharf:{echo}:task:old id old type echo payload legacy attempt "
        "2 enqueued_at " ENQUEUED_AT " trace " TRACE " error %s",
        "older host"));
    cr_assert_eq(
        wharf("--redis", redis.url, "dead", "run", "echo", "old", ECHO, NULL),
        0, "%s%s", out, err);
    cr_assert(strstr(out, "result: legacy\n"), "%s", out);
    cr_assert(strstr(out, "died with: older host\n"), "%s", out);
    /* Waiting in delayed, task:<id> is a new run's: not the dead one. */
    freeReplyObject(test_redis_command(rc, "ZADD wharf:{echo}:delayed 1 old"));
    cr_assert_eq(
        wharf("--redis", redis.url, "dead", "run", "echo", "old", ECHO, NULL),
        1, "%s%s", out, err);
    assert_one_line();
    cr_assert(strstr(err, "has no record"), "%s", err);
}

Test(dead_run, errors_are_one_line_with_their_exit_codes)
{
    const char *ini = manifest("");

    die("chaos", "t1", "fatal", 5, 1, "fatal: asked to fail for good");
    /* Not dead: 1, as dead show says. */
    cr_assert_eq(wharf("--redis", redis.url, "dead", "run", "chaos", "nope",
                       CHAOS, NULL),
                 1);
    assert_one_line();
    cr_assert(strstr(err, "no dead task 'nope' of type 'chaos'"), "%s", err);
    /* A bad type or id: 65. */
    cr_assert_eq(wharf("--redis", redis.url, "dead", "run", "bad type", "t1",
                       CHAOS, NULL),
                 65);
    assert_one_line();
    cr_assert_eq(
        wharf("--redis", redis.url, "dead", "run", "chaos", "a b", CHAOS, NULL),
        65);
    assert_one_line();
    /* Redis down: 69. */
    cr_assert_eq(wharf("--redis", "redis://127.0.0.1:1", "dead", "run", "chaos",
                       "t1", CHAOS, NULL),
                 69);
    assert_one_line();
    /* No manifest and no PLUGIN.so: 64, before Redis is asked. */
    cr_assert_eq(wharf("--redis", "redis://127.0.0.1:1", "dead", "run", "chaos",
                       "t1", NULL),
                 64);
    assert_one_line();
    cr_assert(strstr(err, "give --config FILE or PLUGIN.so"), "%s", err);
    /* A manifest that routes no plugin to the type: 78. */
    cr_assert_eq(wharf("--config", ini, "dead", "run", "chaos", "t1", NULL),
                 78);
    assert_one_line();
    cr_assert(strstr(err, "routes no plugin to type 'chaos'"), "%s", err);
    /* A plugin that does not load: 78, as wharf run. */
    cr_assert_eq(wharf("--redis", redis.url, "dead", "run", "chaos", "t1",
                       "/nonexistent.so", NULL),
                 78);
    assert_one_line();
    /* A record the host would not have run (a bad task): 65. */
    freeReplyObject(
        test_redis_command(rc, "HSET wharf:{chaos}:dead:t1 attempt x"));
    cr_assert_eq(
        wharf("--redis", redis.url, "dead", "run", "chaos", "t1", CHAOS, NULL),
        65);
    assert_one_line();
    cr_assert(strstr(err, "bad task: attempt 'x'"), "%s", err);
    /* Usage: 64. */
    cr_assert_eq(wharf("--redis", redis.url, "dead", "run", "chaos", NULL), 64);
    cr_assert(strstr(err, "usage: wharf dead run TYPE ID [PLUGIN.so]"), "%s",
              err);
}
