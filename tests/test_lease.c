/* The lease keeper and what a fault costs: leases kept while the
 * supervisor's loop is held, a lease lost while Redis is away ending its
 * run, a dead worker's returned tasks finished rather than run again, and
 * crashing tasks that do not slow the host. Real wharfd processes against
 * a private redis-server; every run counted through the chaos plugin's
 * runs and done files. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "host_process.h"
#include "http_get.h"
#include "redis_server.h"

/* Every wait for an event is the suite's shared deadline: a loaded
 * 2-core machine running the sanitized suite must not miss it. */
#define EVENT_MS TEST_EVENT_MS

static test_redis redis;
static test_host host;
static redisContext *rc;

static void start_redis(void)
{
    test_suite_up(&redis, 1, &rc);
}

static void stop_all(void)
{
    test_suite_down(&redis, &rc, (test_host *const[]){&host, NULL});
}

TestSuite(lease, .init = start_redis, .fini = stop_all, .timeout = 240);

static void start(const test_host_opts *o)
{
    test_host_up(&host, &redis, o, NULL);
}

static long long wait_result(const char *id)
{
    return test_wait_int(rc, 1, EVENT_MS, "EXISTS wharf:{chaos}:result:%s",
                         id);
}

/* The supervisor's loop held for 5 s a pass (the test hook), three times
 * a lock_ttl of 3 s: a run of 10 s keeps its lock throughout, because the
 * lease keeper renews on a thread and connection of its own (every 1 s,
 * so a renewal may come 2 s late before anything expires: the margin this
 * test keeps on a loaded machine). Before the keeper, each pass of a
 * loop held that long let the lock expire and the task ran twice. */
Test(lease, leases_hold_while_the_supervisor_loop_is_held)
{
    char stall[] = "/tmp/wharf-test-stall-XXXXXX";
    int fd = mkstemp(stall);

    cr_assert(fd >= 0);
    close(fd); /* it exists: every pass of the loop is held */
    setenv("WHARF_TEST_STALL_FILE", stall, 1);
    start(&(test_host_opts){.host_keys = "workers = 1\n",
                            .extra = "[type.chaos]\nlock_ttl = 3s\n"
                                     "visibility_timeout = 3s\n"});
    unsetenv("WHARF_TEST_STALL_FILE");
    test_add_entry(rc, "chaos", "long", "sleep:10000");
    cr_assert_eq(wait_result("long"), 1, "no result; see %s", host.log);
    unlink(stall);
    cr_assert_eq(test_host_runs(&host, "long", 0), 1,
                 "it ran more than once: its lease was lost; see %s",
                 host.log);
    cr_assert(!test_host_log_has(&host, "\"msg\":\"lease lost\"", NULL),
              "see %s", host.log);
    cr_assert(!test_host_log_has(&host, "\"outcome\":\"stale\"", NULL),
              "a finish came back stale; see %s", host.log);
}

/* Redis silent (SIGSTOP) for longer than lock_ttl while a task runs: the
 * keeper, which could renew nothing, asks the run to end once a whole TTL
 * passed unrenewed, says so once ("lease lost", with the task and the
 * margin), and counts it; the worker is replaced, and the task runs again
 * only after the first run ended, never beside it. */
Test(lease, a_lease_lost_while_redis_is_away_ends_its_run)
{
    int port = test_free_port();
    char listen[64], body[65536];

    snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
    start(&(test_host_opts){.host_keys = "workers = 1\n",
                            .metrics_listen = listen,
                            .extra = "[type.chaos]\nlock_ttl = 2s\n"
                                     "timeout = 5m\n"});
    test_add_entry(rc, "chaos", "away", "polite:8000");
    cr_assert(test_host_wait_log(&host, EVENT_MS,
                                 (const char *const[]){"task started",
                                                       "\"task\":\"away\"",
                                                       NULL}),
              "see %s", host.log);
    cr_assert_eq(kill(redis.pid, SIGSTOP), 0);
    cr_assert(test_host_wait_log(&host, EVENT_MS,
                                 (const char *const[]){"lease lost",
                                                       "\"task\":\"away\"",
                                                       "margin_ms", NULL}),
              "no lease lost while Redis was away; see %s", host.log);
    cr_assert(test_host_wait_log(&host, EVENT_MS,
                                 (const char *const[]){"polite: cancelled",
                                                       NULL}),
              "the run was not asked to end; see %s", host.log);
    kill(redis.pid, SIGCONT);
    cr_assert_eq(wait_result("away"), 1, "no result; see %s", host.log);
    cr_assert_eq(test_host_log_count(&host,
                                     (const char *const[]){
                                         "\"msg\":\"lease lost\"", NULL}),
                 1, "see %s", host.log);
    /* Its first run, asked to end, kept nothing of what it returned: its
     * finish is stale (the lock expired) or a retry (it had not yet). */
    cr_assert(test_host_log_has(&host, "task finished", "\"task\":\"away\"",
                                "lease lost: its lock could not be renewed",
                                NULL),
              "see %s", host.log);
    cr_assert_eq(test_http_get_within(port, "/metrics", body, sizeof(body),
                                      30),
                 200);
    cr_assert(strstr(body, "wharf_leases_lost_total{type=\"chaos\"} 1\n"),
              "%s", body);
    cr_assert(strstr(body, "wharf_lease_renewals_total{result=\"ok\"}"), "%s",
              body);
    cr_assert(strstr(body, "wharf_lease_ttl_seconds{type=\"chaos\"} 2.000\n"),
              "%s", body);
}

/* A batch of ten whose last task kills its worker: the nine that had
 * returned are finished from what the slot kept, not run again; only the
 * task in hand is charged (max_attempts 1: dead). */
Test(lease, a_crash_reruns_only_the_task_in_hand)
{
    char id[32];

    for (int i = 0; i < 9; i++) {
        snprintf(id, sizeof(id), "mate-%d", i);
        test_add_entry(rc, "chaos", id, "ok");
    }
    test_add_entry(rc, "chaos", "poison", "crash");
    start(&(test_host_opts){.host_keys = "workers = 1\n",
                            .extra = "[type.chaos]\nprefetch = 10\n"
                                     "max_attempts = 1\n"});
    cr_assert_eq(test_wait_int(rc, 1, EVENT_MS, "ZCARD wharf:{chaos}:dead"), 1,
                 "the crashing task did not die; see %s", host.log);
    for (int i = 0; i < 9; i++) {
        snprintf(id, sizeof(id), "mate-%d", i);
        cr_assert_eq(wait_result(id), 1, "%s: no result; see %s", id,
                     host.log);
        cr_assert_eq(test_host_runs(&host, id, 0), 1,
                     "%s ran again after its batch-mate crashed; see %s", id,
                     host.log);
    }
    cr_assert(test_host_log_has(&host, "finished what a dead worker's "
                                       "plugins had returned",
                                "\"tasks\":9", NULL),
              "see %s", host.log);
    cr_assert_eq(test_host_runs(&host, "poison", 0), 1);
}

/* A result too large for the slot's arena (1 MiB) is finished at once,
 * so a crash later in its batch does not run it again either. */
Test(lease, a_large_result_is_finished_before_a_crash_can_lose_it)
{
    test_add_entry(rc, "chaos", "large", "big:3000000");
    test_add_entry(rc, "chaos", "small", "ok");
    test_add_entry(rc, "chaos", "poison", "crash");
    start(&(test_host_opts){.host_keys = "workers = 1\n",
                            .extra = "[type.chaos]\nprefetch = 3\n"
                                     "max_attempts = 1\n"});
    cr_assert_eq(test_wait_int(rc, 1, EVENT_MS, "ZCARD wharf:{chaos}:dead"), 1,
                 "see %s", host.log);
    cr_assert_eq(wait_result("large"), 1, "see %s", host.log);
    cr_assert_eq(wait_result("small"), 1, "see %s", host.log);
    cr_assert_eq(test_host_runs(&host, "large", 0), 1, "see %s", host.log);
    cr_assert_eq(test_host_runs(&host, "small", 0), 1, "see %s", host.log);
    cr_assert_eq(test_redis_int(rc, "STRLEN wharf:{chaos}:result:large"),
                 3000000);
}

/* Crashing tasks are charged to themselves and do not slow the host: a
 * worker that died in a plugin call starts again at once, however many
 * died before it. */
Test(lease, crashing_tasks_restart_their_worker_at_once)
{
    char id[32];

    start(&(test_host_opts){.host_keys = "workers = 1\n",
                            .extra = "[type.chaos]\nmax_attempts = 1\n"
                                     "prefetch = 1\n"});
    for (int i = 0; i < 6; i++) {
        snprintf(id, sizeof(id), "poison-%d", i);
        test_add_entry(rc, "chaos", id, "crash");
    }
    test_add_entry(rc, "chaos", "after", "ok");
    cr_assert_eq(wait_result("after"), 1, "see %s", host.log);
    cr_assert_eq(test_redis_int(rc, "ZCARD wharf:{chaos}:dead"), 6);
    cr_assert_eq(test_host_log_count(&host,
                                     (const char *const[]){
                                         "worker died; restarting",
                                         "\"restart_in_ms\":0", NULL}),
                 6, "a crash in a task delayed the restart; see %s", host.log);
}

/* A stop sends the unstarted rest of a batch back as `rescheduled`, not
 * `locked`: no lock was contended. */
Test(lease, a_stop_reschedules_the_unstarted_rest)
{
    test_add_entry(rc, "chaos", "first", "sleep:1000");
    test_add_entry(rc, "chaos", "second", "ok");
    start(&(test_host_opts){.host_keys = "workers = 1\n",
                            .extra = "[type.chaos]\nprefetch = 2\n"});
    cr_assert(test_host_wait_log(&host, EVENT_MS,
                                 (const char *const[]){"task started",
                                                       "\"task\":\"first\"",
                                                       NULL}),
              "see %s", host.log);
    cr_assert_eq(test_host_stop(&host), 0, "see %s", host.log);
    cr_assert(test_host_log_has(&host, "task finished", "\"task\":\"second\"",
                                "\"outcome\":\"rescheduled\"", NULL),
              "see %s", host.log);
    cr_assert(!test_host_log_has(&host, "\"outcome\":\"locked\"", NULL),
              "see %s", host.log);
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{chaos}:result:first"), 1);
}
