/* The process model end to end: real wharfd processes against a private
 * redis-server, their workers killed, hung, stopped and reloaded, and
 * every task counted through the chaos plugin's runs and done files. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "host_process.h"
#include "http_get.h"
#include "redis_server.h"
#include "wharf_cli.h"

static test_redis redis;
static test_host host;
static test_host other;
static redisContext *rc;

static void start_redis(void)
{
    test_suite_up(&redis, 1, &rc);
}

static void stop_all(void)
{
    test_suite_down(&redis, &rc, (test_host *const[]){&host, &other, NULL});
}

TestSuite(supervisor, .init = start_redis, .fini = stop_all, .timeout = 120);

/* Starts h and waits until its workers serve and have made the chaos
 * group. */
static void start(test_host *h, const test_host_opts *o)
{
    test_host_up(h, &redis, o, rc);
}

static long long wait_result(const char *id, int ms)
{
    return test_wait_int(rc, 1, ms, "EXISTS wharf:{chaos}:result:%s", id);
}

/* A field of a task's record: its dead record dead:<id> if it died, else
 * its envelope task:<id> (waiting for a retry). */
static char *envelope_field(const char *id, const char *f)
{
    const char *record = test_redis_int(rc, "EXISTS wharf:{chaos}:dead:%s", id)
                             ? "dead"
                             : "task";
    redisReply *r =
        test_redis_command(rc, "HGET wharf:{chaos}:%s:%s %s", record, id, f);
    char *s = strdup(r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
    return s;
}

/* The pid of the worker that runs task id: the consumer its "task
 * started" line names (waited for, as long as a loaded machine needs),
 * then that consumer's "worker started" line. Read from the log, not
 * XPENDING, so a run that has already ended (a short timeout) is found. */
static pid_t worker_running(const test_host *h, const char *id)
{
    char consumer[300] = "", task[300];
    snprintf(task, sizeof(task), "\"task\":\"%s\"", id);
    cr_assert(test_host_wait_log(h, TEST_EVENT_MS,
                                 (const char *const[]){"\"msg\":\"task "
                                                       "started\"",
                                                       task, NULL}),
              "task %s was never started; see %s", id, h->log);
    FILE *f = fopen(h->log, "r");
    char line[8192], want[400];
    pid_t pid = 0;
    while (f && !consumer[0] && fgets(line, sizeof(line), f)) {
        char *w = strstr(line, "\"worker\":\"");
        if (strstr(line, "\"msg\":\"task started\"") && strstr(line, task) && w)
            sscanf(w + 10, "%299[^\"]", consumer);
    }
    cr_assert(consumer[0], "no worker named for %s", id);
    if (f)
        fclose(f);
    /* The supervisor logs it after the fork, so on a loaded machine the
     * worker may have started a task first: waited for too. */
    snprintf(want, sizeof(want), "\"worker\":\"%s\"", consumer);
    cr_assert(test_host_wait_log(h, TEST_EVENT_MS,
                                 (const char *const[]){"\"msg\":\"worker "
                                                       "started\"",
                                                       want, NULL}),
              "no worker started line for %s; see %s", consumer, h->log);
    f = fopen(h->log, "r");
    while (f && fgets(line, sizeof(line), f)) {
        char *p = strstr(line, "\"pid\":");
        if (strstr(line, "\"msg\":\"worker started\"") && strstr(line, want) &&
            p)
            pid = (pid_t)atoi(p + 6);
    }
    if (f)
        fclose(f);
    cr_assert(pid > 0, "no worker pid for %s", consumer);
    return pid;
}

/* True when the chaos stream and delayed set hold nothing (read at one
 * instant): no task is left to run. */
static bool queue_empty(void *unused)
{
    (void)unused;
    return test_redis_int(rc,
                          "EVAL %s 2 wharf:{chaos}:stream "
                          "wharf:{chaos}:delayed",
                          "return redis.call('XLEN', KEYS[1]) + "
                          "redis.call('ZCARD', KEYS[2])") == 0;
}

static void wait_running(const test_host *h, const char *id)
{
    cr_assert(test_host_wait_runs(h, id, 1, TEST_EVENT_MS) > 0,
              "%s never started", id);
}

Test(supervisor, killed_worker_task_finishes_exactly_once)
{
    test_host_opts o = {.extra = "[defaults]\nbackoff_base = 50ms\n"};
    char fifo[320], payload[340];
    start(&host, &o);
    /* Held by a fifo, not a sleep: the kill lands in the run however slow
     * the machine, and the second attempt ends when fed. */
    snprintf(fifo, sizeof(fifo), "%s/k9.fifo", host.dir);
    test_fifo_make(fifo);
    snprintf(payload, sizeof(payload), "read:%s", fifo);
    test_add_entry(rc, "chaos", "k9", payload);
    wait_running(&host, "k9");
    pid_t pid = worker_running(&host, "k9");
    cr_assert_eq(kill(pid, SIGKILL), 0);
    /* Fed once the killed reader is gone (reaped), so the byte is the
     * second attempt's. */
    cr_assert(test_host_wait_log(&host, TEST_EVENT_MS,
                                 (const char *const[]){"\"task\":\"k9\"",
                                                       "worker crashed: "
                                                       "SIGKILL",
                                                       NULL}),
              "the kill was not seen; see %s", host.log);
    cr_assert(test_fifo_feed(fifo, TEST_EVENT_MS),
              "no second attempt opened %s; see %s", fifo, host.log);
    cr_assert_eq(wait_result("k9", TEST_EVENT_MS), 1,
                 "the task never finished");
    /* A third run would need an entry to run from: once neither the
     * stream nor the delayed set holds one, none can come, however slow
     * the machine, and the counts below are final. */
    cr_assert(test_wait_until(queue_empty, NULL, TEST_EVENT_MS),
              "k9 is still queued after its result; see %s", host.log);
    cr_assert_eq(test_host_done(&host, "k9"), 1, "completed %d times",
                 test_host_done(&host, "k9"));
    cr_assert_eq(test_host_runs(&host, "k9", 2), 1, "no second attempt");
    cr_assert(test_host_log_has(&host, "\"task\":\"k9\"",
                                "worker crashed: SIGKILL", NULL));
    cr_assert(test_host_log_has(&host, "worker died; restarting", NULL));
}

Test(supervisor, crash_is_dead_after_max_attempts_and_others_finish)
{
    test_host_opts o = {
        .extra = "[type.chaos]\nmax_attempts = 3\nbackoff_base = 20ms\n"
                 "prefetch = 1\n"};
    char id[32];
    start(&host, &o);
    test_add_entry(rc, "chaos", "boom", "crash");
    for (int i = 0; i < 30; i++) {
        snprintf(id, sizeof(id), "fine-%d", i);
        test_add_entry(rc, "chaos", id, "ok");
    }
    cr_assert_eq(
        test_wait_int(rc, 1, TEST_EVENT_MS, "ZCARD wharf:{chaos}:dead"), 1,
        "the crashing task is not dead");
    char *err = envelope_field("boom", "error");
    cr_assert_str_eq(err, "worker crashed: SIGSEGV");
    free(err);
    char *attempt = envelope_field("boom", "attempt");
    cr_assert_str_eq(attempt, "3");
    free(attempt);
    cr_assert_eq(test_host_runs(&host, "boom", 0), 3, "not a bounded loop");
    for (int i = 0; i < 30; i++) {
        snprintf(id, sizeof(id), "fine-%d", i);
        cr_assert_eq(wait_result(id, TEST_EVENT_MS), 1, "%s never finished",
                     id);
        cr_assert_eq(test_host_done(&host, id), 1, "%s done %d times", id,
                     test_host_done(&host, id));
    }
}

Test(supervisor, timeout_stops_the_task_and_replaces_the_worker)
{
    test_host_opts o = {
        .extra = "[type.chaos]\ntimeout = 300ms\nmax_attempts = 1\n"};
    start(&host, &o);
    /* Runs until killed, however late the timeout comes. */
    test_add_entry(rc, "chaos", "slow", "sleep:60000");
    wait_running(&host, "slow");
    pid_t pid = worker_running(&host, "slow");
    cr_assert_eq(
        test_wait_int(rc, 1, TEST_EVENT_MS, "ZCARD wharf:{chaos}:dead"), 1);
    char *err = envelope_field("slow", "error");
    cr_assert_str_eq(err, "timeout after 300 ms");
    free(err);
    cr_assert(kill(pid, 0) != 0, "the hung worker still runs");
    /* Its slot serves again. */
    test_add_entry(rc, "chaos", "after", "ok");
    cr_assert_eq(wait_result("after", TEST_EVENT_MS), 1);
}

Test(supervisor, sigterm_exits_0_and_restart_runs_the_rest_once)
{
    /* One worker, 4 tasks at a time, the first held by a fifo until the
     * stop has begun: what it holds then finishes, the other 8 wait,
     * however slow the machine. */
    test_host_opts o = {.host_keys = "workers = 1\n",
                        .extra = "[type.chaos]\nprefetch = 4\n"};
    char id[32], fifo[320], payload[340];
    start(&host, &o);
    snprintf(fifo, sizeof(fifo), "%s/term.fifo", host.dir);
    test_fifo_make(fifo);
    snprintf(payload, sizeof(payload), "read:%s", fifo);
    for (int i = 0; i < 12; i++) {
        snprintf(id, sizeof(id), "term-%d", i);
        test_add_entry(rc, "chaos", id, i == 0 ? payload : "sleep:200");
    }
    wait_running(&host, "term-0");
    cr_assert_eq(kill(host.pid, SIGTERM), 0);
    cr_assert(test_host_wait_log(&host, TEST_EVENT_MS,
                                 (const char *const[]){"stopping: running "
                                                       "tasks may finish",
                                                       NULL}),
              "the stop was not seen; see %s", host.log);
    cr_assert(test_fifo_feed(fifo, TEST_EVENT_MS), "term-0 was not reading");
    cr_assert_eq(test_host_wait_exit(&host, TEST_EVENT_MS), 0,
                 "wharfd did not exit 0");
    cr_assert(test_host_log_has(&host, "\"msg\":\"wharfd stopped\"", NULL));
    /* What ran finished; the rest waits, none lost. */
    long long finished = 0;
    for (int i = 0; i < 12; i++) {
        snprintf(id, sizeof(id), "term-%d", i);
        finished += test_redis_int(rc, "EXISTS wharf:{chaos}:result:%s", id);
    }
    cr_assert(finished < 12, "everything finished before the stop");
    cr_assert_eq(test_redis_keys(rc, "wharf:instance:*"), 0,
                 "the instance key outlived a clean stop");

    test_host restarted = host;
    host.pid = 0;
    test_host_start(&restarted);
    host = restarted;
    for (int i = 0; i < 12; i++) {
        snprintf(id, sizeof(id), "term-%d", i);
        cr_assert_eq(wait_result(id, TEST_EVENT_MS), 1, "%s lost", id);
        cr_assert_eq(test_host_done(&host, id), 1, "%s ran %d times", id,
                     test_host_done(&host, id));
    }
}

/* Host a is killed with its tasks in hand; b takes them over once their
 * leases run out. The leases are 3 s (renewed every second, so a loaded
 * machine has 2 s for each of b's own renewals, where the 1 s floor
 * would leave it 0.67 s and b could lose its own tasks); the take-over
 * then comes about 4 s after the kill. */
Test(supervisor, silent_host_tasks_are_taken_over)
{
    test_host_opts a = {.host_keys = "instance = a\n",
                        .extra = "[defaults]\nvisibility_timeout = 4s\n"
                                 "lock_ttl = 3s\nbackoff_base = 10ms\n"};
    test_host_opts b = {.host_keys = "instance = b\n",
                        .extra = "[defaults]\nvisibility_timeout = 4s\n"
                                 "lock_ttl = 3s\nbackoff_base = 10ms\n"};
    char id[32], fifo[320], payload[340];
    start(&host, &a);
    /* two-0 is held by a fifo, not a sleep: a still runs it when it is
     * killed, however long b takes to start, so b must take it over. */
    snprintf(fifo, sizeof(fifo), "%s/two.fifo", host.dir);
    test_fifo_make(fifo);
    snprintf(payload, sizeof(payload), "read:%s", fifo);
    for (int i = 0; i < 20; i++) {
        snprintf(id, sizeof(id), "two-%d", i);
        test_add_entry(rc, "chaos", id, i == 0 ? payload : "sleep:300");
    }
    wait_running(&host, "two-0");
    start(&other, &b);
    /* kill -9 the whole of host a: its workers die with it. */
    cr_assert_eq(kill(host.pid, SIGKILL), 0);
    waitpid(host.pid, NULL, 0);
    host.pid = 0;
    /* Fed once b has taken two-0 over (a's reader is long gone by then),
     * so the byte is b's attempt's. */
    cr_assert(
        test_host_wait_log(&other, TEST_EVENT_MS,
                           (const char *const[]){"task taken over",
                                                 "\"task\":\"two-0\"", NULL}),
        "two-0 was not taken over; see %s", other.log);
    cr_assert(test_fifo_feed(fifo, TEST_EVENT_MS),
              "b's attempt of two-0 never opened %s; see %s", fifo, other.log);
    for (int i = 0; i < 20; i++) {
        snprintf(id, sizeof(id), "two-%d", i);
        cr_assert_eq(wait_result(id, TEST_EVENT_MS), 1, "%s lost", id);
    }
    cr_assert(test_host_log_has(&other, "taken over", NULL),
              "nothing was taken over");
}

Test(supervisor, same_instance_name_is_refused)
{
    start(&host, &(test_host_opts){0});
    test_host_manifest_opts(&other, &redis, &(test_host_opts){0});
    test_host_start(&other);
    int status = test_host_wait_exit(&other, TEST_EVENT_MS);
    cr_assert_eq(status, 78, "second host with the same instance: %d", status);
    cr_assert(test_host_log_has(&other, "held by another", NULL));
    /* The first one still serves. */
    test_add_entry(rc, "chaos", "still", "ok");
    cr_assert_eq(wait_result("still", TEST_EVENT_MS), 1);
}

/* For redis_restart_loses_nothing_and_runs_nothing_twice, of 10,000
 * tasks. */
#define RESTART_TASKS 10000

static bool quarter_done(void *unused)
{
    (void)unused;
    return test_redis_int(rc, "XLEN wharf:{chaos}:stream") <
           RESTART_TASKS * 3 / 4;
}

/* A worker saw its connection go, or could not connect again. */
static bool outage_seen(void *unused)
{
    (void)unused;
    return test_host_log_has(&host, "redis connection lost", NULL) ||
           test_host_log_has(&host, "redis unreachable", NULL);
}

static long long results_now(void)
{
    return test_redis_keys(rc, "wharf:{chaos}:result:*");
}

static bool all_results(void *unused)
{
    (void)unused;
    return results_now() == RESTART_TASKS;
}

Test(supervisor, redis_restart_loses_nothing_and_runs_nothing_twice)
{
    /* The outage (until the host has seen it, and a restart that reloads
     * the append-only file) must end well within lock_ttl, or the locks
     * of the tasks in hand run out and those run again: 10 s leaves a
     * loaded machine plenty. */
    test_host_opts o = {.extra = "[defaults]\nlock_ttl = 10s\n"};
    enum { N = RESTART_TASKS };
    start(&host, &o);
    /* Pipelined: 10,000 tasks in one go. */
    for (int i = 0; i < N; i++)
        redisAppendCommand(rc,
                           "XADD wharf:{chaos}:stream * id r-%d type chaos "
                           "payload ok attempt 1 enqueued_at 1 trace "
                           "00-0af7651916cd43dd8448eb211c80319c-"
                           "b7ad6b7169203331-01",
                           i);
    for (int i = 0; i < N; i++) {
        redisReply *r;
        cr_assert_eq(redisGetReply(rc, (void **)&r), REDIS_OK);
        freeReplyObject(r);
    }
    /* Stop Redis part way through the run (a quarter done), then bring it
     * back once the host has seen it gone. */
    cr_assert(test_wait_until(quarter_done, NULL, TEST_EVENT_MS),
              "no progress before the outage; see %s", host.log);
    redisFree(rc);
    rc = NULL;
    test_redis_stop(&redis);
    cr_assert(test_wait_until(outage_seen, NULL, TEST_EVENT_MS),
              "the outage was not seen; see %s", host.log);
    test_redis_restart(&redis);
    rc = test_redis_connect(&redis);
    cr_assert(test_wait_until(all_results, NULL, TEST_EVENT_MS),
              "only %lld of %d results", results_now(), N);
    /* Each task completed exactly once. */
    FILE *f = fopen(host.done, "r");
    cr_assert(f != NULL);
    static unsigned char seen[N];
    char line[64];
    int lines = 0, twice = 0;
    while (fgets(line, sizeof(line), f)) {
        int k = atoi(line + 2);
        lines++;
        if (k >= 0 && k < N && seen[k]++)
            twice++;
    }
    fclose(f);
    cr_assert_eq(twice, 0, "%d tasks ran twice", twice);
    cr_assert_eq(lines, N);
    cr_assert(test_host_log_has(&host, "unreachable", NULL) ||
                  test_host_log_has(&host, "connection lost", NULL),
              "no outage was seen");
}

Test(supervisor, sighup_with_broken_manifest_keeps_serving)
{
    start(&host, &(test_host_opts){0});
    test_add_entry(rc, "chaos", "h1", "ok");
    cr_assert_eq(wait_result("h1", TEST_EVENT_MS), 1);
    FILE *f = fopen(host.manifest, "a");
    fprintf(f, "[host]\nbroken line\n");
    fclose(f);
    kill(host.pid, SIGHUP);
    cr_assert(test_host_wait_log(
                  &host, TEST_EVENT_MS,
                  (const char *const[]){"reload refused", "wharf.ini:", NULL}),
              "the broken manifest was not refused; see %s", host.log);
    test_add_entry(rc, "chaos", "h2", "ok");
    cr_assert_eq(wait_result("h2", TEST_EVENT_MS), 1, "stopped serving");
    cr_assert_eq(kill(host.pid, 0), 0);
}

/* Copies a fixture plugin to dir/name through a temporary file renamed
 * into place, as plugins should be replaced. */
static void install_plugin(const char *dir, const char *fixture)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "cp %s/%s.so %s/.versioned.tmp && chmod 0644 %s/.versioned.tmp "
             "&& mv %s/.versioned.tmp %s/versioned.so",
             WHARF_FIXTURE_DIR, fixture, dir, dir, dir, dir);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
}

static void plugin_dir(char *dir, size_t len)
{
    char cmd[600];
    snprintf(dir, len, "/tmp/wharf-test-plugins-XXXXXX");
    cr_assert(mkdtemp(dir) != NULL);
    chmod(dir, 0755);
    snprintf(cmd, sizeof(cmd), "cp %s/chaos.so %s/ && chmod 0644 %s/chaos.so",
             WHARF_PLUGIN_DIR, dir, dir);
    cr_assert_eq(system(cmd), 0);
}

static char *versioned_result(const char *id)
{
    test_wait_int(rc, 1, TEST_EVENT_MS, "EXISTS wharf:{versioned}:result:%s",
                  id);
    redisReply *r =
        test_redis_command(rc, "GET wharf:{versioned}:result:%s", id);
    char *s = strdup(r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
    return s;
}

/* Lines of path that contain what. */
static int count_lines(const char *path, const char *what)
{
    FILE *f = fopen(path, "r");
    char line[8192];
    int n = 0;
    while (f && fgets(line, sizeof(line), f))
        n += strstr(line, what) != NULL;
    if (f)
        fclose(f);
    return n;
}

static void reload_test(bool watch)
{
    char dir[64], id[32];
    plugin_dir(dir, sizeof(dir));
    install_plugin(dir, "versioned_v1");
    test_host_opts o = {.plugins_dir = dir,
                        .host_keys = watch ? "watch = yes\n" : NULL};
    start(&host, &o);
    test_add_entry(rc, "versioned", "before", "x");
    char *res = versioned_result("before");
    cr_assert_str_eq(res, "v1");
    free(res);

    install_plugin(dir, "versioned_v2");
    if (!watch)
        kill(host.pid, SIGHUP);
    /* Tasks keep flowing during the reload, four in flight at a time,
     * until every worker has been replaced (each replacement logs its
     * start again) and at least 40 were added: so they span the reload
     * however long it takes, and "after" can then count on v2. None is
     * dropped or repeated. */
    int during = 0;
    for (int64_t end = test_now_ms() + TEST_EVENT_MS;
         during < 40 || count_lines(host.log, "\"msg\":\"worker started\"") < 4;
         during++) {
        cr_assert_lt(test_now_ms(), end,
                     "the workers were not replaced; see %s", host.log);
        snprintf(id, sizeof(id), "during-%d", during);
        test_add_entry(rc, "versioned", id, "x");
        if (during >= 4)
            cr_assert_eq(test_wait_int(rc, 1, TEST_EVENT_MS,
                                       "EXISTS wharf:{versioned}:result:"
                                       "during-%d",
                                       during - 4),
                         1, "during-%d was dropped; see %s", during - 4,
                         host.log);
    }
    for (int i = 0; i < during; i++) {
        snprintf(id, sizeof(id), "during-%d", i);
        res = versioned_result(id);
        cr_assert(strcmp(res, "v1") == 0 || strcmp(res, "v2") == 0, "%s: '%s'",
                  id, res);
        free(res);
    }
    test_add_entry(rc, "versioned", "after", "x");
    res = versioned_result("after");
    cr_assert_str_eq(res, "v2", "the new version was not loaded");
    free(res);
    cr_assert_eq(test_redis_int(rc, "ZCARD wharf:{versioned}:dead"), 0);
}

Test(supervisor, sighup_loads_a_new_plugin_version)
{
    reload_test(false);
}

Test(supervisor, watch_reloads_when_a_plugin_is_renamed_in)
{
    reload_test(true);
}

/* The embedded redis-server's socket, and a connection to it once the
 * host has made its chaos stream there. */
typedef struct embedded_socket {
    const char *path;
    redisContext *c;
} embedded_socket;

static bool embedded_serves(void *arg)
{
    embedded_socket *e = arg;
    redisContext *c = redisConnectUnix(e->path);

    if (c && !c->err && test_redis_int(c, "EXISTS wharf:{chaos}:stream")) {
        e->c = c;
        return true;
    }
    redisFree(c);
    return false;
}

Test(supervisor, embedded_redis_is_started_and_stopped)
{
    char dir[64], url[200];
    snprintf(dir, sizeof(dir), "/tmp/wharf-test-emb-XXXXXX");
    cr_assert(mkdtemp(dir) != NULL);
    char redis_keys[200];
    snprintf(redis_keys, sizeof(redis_keys), "data_dir = %s/data\n", dir);
    test_host_opts o = {.redis_url = "embedded", .redis_keys = redis_keys};
    test_host_manifest_opts(&host, &redis, &o);
    test_host_start(&host);
    snprintf(url, sizeof(url), "%s/data/redis.sock", dir);
    embedded_socket e = {url, NULL};
    cr_assert(test_wait_until(embedded_serves, &e, TEST_EVENT_MS),
              "no embedded redis at %s", url);
    redisContext *c = e.c;
    test_add_entry(c, "chaos", "emb", "ok");
    cr_assert_eq(
        test_wait_int(c, 1, TEST_EVENT_MS, "EXISTS wharf:{chaos}:result:emb"),
        1);
    redisFree(c);
    cr_assert_eq(test_host_stop(&host), 0);
    c = redisConnectUnix(url);
    cr_assert(c == NULL || c->err, "the embedded redis outlived wharfd");
    redisFree(c);
    struct stat st;
    snprintf(url, sizeof(url), "%s/data/appendonlydir", dir);
    cr_assert_eq(stat(url, &st), 0, "no append-only file");
}

/* Asserts that the worker holds at most one chaos task; true once the
 * last of them (one-4) has its result. */
static bool holds_one_until_done(void *unused)
{
    redisReply *p =
        test_redis_command(rc, "XPENDING wharf:{chaos}:stream wharf");
    long long held = p->element[0]->integer;

    (void)unused;
    freeReplyObject(p);
    cr_assert(held <= 1, "a worker holds %lld chaos tasks", held);
    return test_redis_int(rc, "EXISTS wharf:{chaos}:result:one-4") == 1;
}

Test(supervisor, smallest_prefetch_bounds_what_a_worker_holds)
{
    /* echo keeps prefetch 16; chaos (slow tasks) asks for 1. */
    test_host_opts o = {.host_keys = "workers = 1\n",
                        .extra = "[plugin.echo]\npath = echo.so\n"
                                 "[type.chaos]\nprefetch = 1\n"};
    char id[32];
    start(&host, &o);
    for (int i = 0; i < 5; i++) {
        snprintf(id, sizeof(id), "one-%d", i);
        test_add_entry(rc, "chaos", id, "sleep:200");
    }
    /* Looked at all through the run, until the last one is done. */
    cr_assert(test_wait_until(holds_one_until_done, NULL, TEST_EVENT_MS),
              "one-4 never finished; see %s", host.log);
}

/* Redis stops answering (SIGSTOP: connections hang instead of failing)
 * while a task hangs past its timeout. The supervisor's loop, which
 * enforces timeouts and answers /healthz, waits on Redis at most
 * RUN_SUPERVISOR_REDIS_TIMEOUT_MS a command, so the task is still stopped
 * at its timeout and the host still answers, long before Redis is back;
 * and the failure is recorded once Redis is, not lost with the worker. */
Test(supervisor, a_silent_redis_holds_neither_timeouts_nor_health)
{
    char listen[64], body[256];
    int port = test_free_port();
    int64_t stopped_at, asked_at = 0;

    snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
    start(&host, &(test_host_opts){.host_keys = "workers = 1\n",
                                   .metrics_listen = listen,
                                   .extra = "[type.chaos]\ntimeout = 1s\n"
                                            "max_attempts = 1\n"});
    test_add_entry(rc, "chaos", "hang", "snooze:60");
    wait_running(&host, "hang");
    cr_assert_eq(kill(redis.pid, SIGSTOP), 0);
    stopped_at = test_now_ms();
    /* Redis stays silent until the host has acted, or 60 s. */
    if (test_host_wait_log(
            &host, TEST_EVENT_MS,
            (const char *const[]){"task ran past its timeout", NULL}))
        asked_at = test_now_ms();
    cr_assert(asked_at, "no timeout in 60 s of a silent Redis; see %s",
              host.log);
    cr_assert(test_host_wait_log(&host, TEST_EVENT_MS,
                                 (const char *const[]){"ignored its cancel "
                                                       "request; killing",
                                                       NULL}),
              "the hung task was not killed; see %s", host.log);
    cr_assert_eq(test_http_get_within(port, "/healthz", body, sizeof(body), 10),
                 200, "/healthz did not answer while Redis was silent");
    kill(redis.pid, SIGCONT);
    /* A loop held by each Redis command for the old 10 s timeout would
     * have asked no sooner than that; 2 s a command leaves room to spare
     * on a loaded machine. */
    cr_assert_lt(asked_at - stopped_at, 9000,
                 "the timeout waited %lld ms for a silent Redis",
                 (long long)(asked_at - stopped_at));
    cr_assert_eq(
        test_wait_int(rc, 1, TEST_EVENT_MS, "ZCARD wharf:{chaos}:dead"), 1,
        "the task never died; see %s", host.log);
    cr_assert(test_host_log_has(&host, "\"task\":\"hang\"",
                                "timeout after 1000 ms", NULL));
    cr_assert_eq(test_host_runs(&host, "hang", 0), 1, "it ran again");
}

/* A running task whose plugin ignores a wharf cancel: its worker is
 * killed after the grace, and the supervisor ends that run as cancelled,
 * as the worker ends one whose plugin returns: nothing retried, nothing
 * dead. It says so in the finish itself, so this holds even when the
 * finish finds no cancel:<id> (deleted here once the supervisor acted on
 * it). */
Test(supervisor, a_cancel_the_plugin_ignores_ends_as_cancelled)
{
    const test_cli_run *r;

    start(&host,
          &(test_host_opts){.host_keys = "workers = 1\n",
                            .extra = "[type.chaos]\nmax_attempts = 1\n"});
    test_add_entry(rc, "chaos", "deaf", "snooze:60");
    wait_running(&host, "deaf");
    r = test_cli(redis.url, host.dir,
                 (const char *const[]){"cancel", "chaos", "deaf", NULL});
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert(strstr(r->out, "cancelling"), "%s", r->out);
    cr_assert(
        test_host_wait_log(&host, TEST_EVENT_MS,
                           (const char *const[]){"task cancelled; asking "
                                                 "it to end",
                                                 "\"task\":\"deaf\"", NULL}),
        "the supervisor did not ask the run to end; see %s", host.log);
    freeReplyObject(test_redis_command(rc, "DEL wharf:{chaos}:cancel:deaf"));
    cr_assert(
        test_host_wait_log(&host, TEST_EVENT_MS,
                           (const char *const[]){"task failed with its "
                                                 "worker",
                                                 "\"task\":\"deaf\"", NULL}),
        "the killed worker's task was not recorded; see %s", host.log);
    cr_assert(
        test_host_log_has(&host, "ignored its cancel request; killing", NULL),
        "see %s", host.log);
    cr_assert(test_host_log_has(&host, "task failed with its worker",
                                "\"task\":\"deaf\"",
                                "\"outcome\":\"cancelled\"", NULL),
              "see %s", host.log);
    cr_assert_eq(test_redis_int(rc, "ZCARD wharf:{chaos}:dead"), 0,
                 "the cancelled task went to the dead set");
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{chaos}:result:deaf "
                                    "wharf:{chaos}:task:deaf"),
                 0);
    cr_assert_eq(test_redis_int(rc, "XLEN wharf:{chaos}:stream"), 0,
                 "its entry is still in the stream");
    cr_assert_eq(test_host_runs(&host, "deaf", 0), 1, "it ran again");
}

/* Only /metrics shows the figures of types no host here serves: without
 * [metrics] listen (the harness's default) the supervisor never reads
 * them, so a host with many unserved types in Redis costs its loop
 * nothing for them. */
Test(supervisor, no_listener_reads_no_unserved_types)
{
    redisReply *r;

    freeReplyObject(test_redis_command(rc, "SADD wharf:types ghost"));
    freeReplyObject(test_redis_command(rc, "CONFIG RESETSTAT"));
    start(&host, &(test_host_opts){.host_keys = "workers = 1\n"});
    /* Two refreshes of the served figures (each writes the backlog): the
     * first one's unserved types would have been read before the second
     * began. */
    cr_assert_eq(
        test_wait_int(rc, 1, TEST_EVENT_MS, "EXISTS wharf:{chaos}:backlog"), 1,
        "the figures were never refreshed; see %s", host.log);
    freeReplyObject(test_redis_command(rc, "DEL wharf:{chaos}:backlog"));
    cr_assert_eq(
        test_wait_int(rc, 1, TEST_EVENT_MS, "EXISTS wharf:{chaos}:backlog"), 1,
        "the figures were refreshed only once; see %s", host.log);
    r = test_redis_command(rc, "INFO commandstats");
    cr_assert(r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS);
    cr_assert_null(strstr(r->str, "cmdstat_smembers:"),
                   "the host read the types set with nothing to show it on");
    freeReplyObject(r);
}

/* Host presence is the supervisor's own: with no [metrics] listen (the
 * harness's default) there is no console, and still the host's presence
 * says what it serves, `wharf stats` sees the type served, and a stop
 * withdraws it at once. */
Test(supervisor, presence_needs_no_console)
{
    const test_cli_run *r;
    redisReply *names, *field;
    char name[300], out[TEST_CLI_OUTPUT], *chaos, *end;

    start(&host, &(test_host_opts){.host_keys = "workers = 2\n"});
    cr_assert_eq(
        test_wait_int(rc, 1, TEST_EVENT_MS, "ZCARD wharf:{chaos}:hosts"), 1,
        "no presence without the console; see %s", host.log);
    cr_expect_gt(test_redis_int(rc, "PTTL wharf:{chaos}:hosts"), 0);
    names = test_redis_command(rc, "ZRANGE wharf:hosts 0 -1");
    cr_assert_eq(names->type, REDIS_REPLY_ARRAY);
    cr_assert_eq(names->elements, 1);
    snprintf(name, sizeof(name), "%s", names->element[0]->str);
    freeReplyObject(names);
    cr_expect_gt(test_redis_int(rc, "PTTL wharf:host:%s", name), 0);
    field = test_redis_command(rc, "HGET wharf:host:%s workers", name);
    cr_assert_eq(field->type, REDIS_REPLY_STRING);
    cr_expect_str_eq(field->str, "2");
    freeReplyObject(field);
    field = test_redis_command(rc, "HGET wharf:host:%s types", name);
    cr_assert_eq(field->type, REDIS_REPLY_STRING);
    cr_expect(strstr(field->str, "chaos"), "%s", field->str);
    freeReplyObject(field);

    r = test_cli(redis.url, host.dir,
                 (const char *const[]){"stats", "--json", NULL});
    cr_assert_eq(r->status, 0, "%s", r->err);
    snprintf(out, sizeof(out), "%s", r->out);
    chaos = strstr(out, "\"chaos\": {");
    cr_assert(chaos, "%s", out);
    end = strchr(chaos, '}');
    cr_assert(end, "%s", out);
    *end = '\0'; /* chaos's figures only */
    cr_expect(strstr(chaos, "\"served\": true"), "%s", chaos);

    cr_assert_eq(test_host_stop(&host), 0);
    cr_expect_eq(test_redis_int(rc, "ZCARD wharf:{chaos}:hosts"), 0);
    cr_expect_eq(test_redis_int(rc, "EXISTS wharf:host:%s", name), 0);
}
