/* What runs when (plugin.h, "What runs when"): init and fini in the check
 * process (phase CHECK) at --check and at start, in each worker (phase
 * WORKER), again at each reload (a check, then each worker replaced), and
 * in `wharf run` (phase RUN); fini gets a ctx it can log with; the host
 * names a plugin by its manifest section; a plugin built against a newer
 * header never calls past an older host's table. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "context.h"
#include "host_process.h"
#include "redis_server.h"

static test_redis redis;
static test_host host;
static redisContext *rc;
static char plugins[64];
static char phases_file[128];

static void setup(void)
{
    char cmd[512];

    snprintf(plugins, sizeof(plugins), "/tmp/wharf-test-phases-XXXXXX");
    cr_assert(mkdtemp(plugins) != NULL);
    chmod(plugins, 0755);
    /* chaos.so is a shipped plugin, phases.so a fixture */
    snprintf(cmd, sizeof(cmd),
             "cp %s/chaos.so %s/ && cp %s/phases.so %s/ && "
             "chmod 0644 %s/chaos.so %s/phases.so",
             WHARF_PLUGIN_DIR, plugins, WHARF_FIXTURE_DIR, plugins, plugins,
             plugins);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    snprintf(phases_file, sizeof(phases_file), "%s/phases.txt", plugins);
}

static void teardown(void)
{
    char cmd[128];

    test_suite_down(&redis, &rc, (test_host *const[]){&host, NULL});
    snprintf(cmd, sizeof(cmd), "rm -rf %s", plugins);
    if (system(cmd) != 0)
        cr_log_warn("cannot remove %s", plugins);
}

TestSuite(phases, .init = setup, .fini = teardown, .timeout = 60);

/* Lines of path that are exactly `line`. */
static int count(const char *path, const char *line)
{
    FILE *f = fopen(path, "r");
    char buf[256];
    int n = 0;

    while (f && fgets(buf, sizeof(buf), f)) {
        buf[strcspn(buf, "\n")] = '\0';
        n += strcmp(buf, line) == 0;
    }
    if (f)
        fclose(f);
    return n;
}

/* Writes a manifest with two sections loading phases.so for two types. */
static void write_manifest(const char *path, const char *redis_url)
{
    FILE *f = fopen(path, "w");

    cr_assert(f != NULL);
    fprintf(f,
            "[host]\nplugins_dir = %s\nautoload = no\nworkers = 2\n"
            "[redis]\nurl = %s\n[metrics]\nlisten = off\n"
            "[log]\nlevel = debug\n"
            "[plugin.phases-a]\npath = phases.so\ntypes = pa\nfile = %s\n"
            "[plugin.phases-b]\npath = phases.so\ntypes = pb\nfile = %s\n",
            plugins, redis_url, phases_file, phases_file);
    fclose(f);
}

Test(phases, check_runs_init_and_fini_in_the_check_phase)
{
    char manifest[128], cmd[512], log[128];

    snprintf(manifest, sizeof(manifest), "%s/wharf.ini", plugins);
    snprintf(log, sizeof(log), "%s/check.log", plugins);
    write_manifest(manifest, "redis://127.0.0.1:1");
    snprintf(cmd, sizeof(cmd), "%s --config %s --check >/dev/null 2>%s",
             WHARFD_PATH, manifest, log);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    /* Two sections: each inits and finis once, in the check phase. */
    cr_assert_eq(count(phases_file, "init 1"), 2);
    cr_assert_eq(count(phases_file, "fini 1"), 2);
    cr_assert_eq(count(phases_file, "task 1"), 0);
}

/* Polls until path has `want` lines that are exactly `line`, up to
 * timeout_ms; returns the last count. */
static int wait_count(const char *path, const char *line, int want,
                      int timeout_ms)
{
    int64_t deadline = test_now_ms() + timeout_ms;
    int n;

    while ((n = count(path, line)) != want && test_now_ms() < deadline)
        test_sleep_ms(10);
    return n;
}

/* Starts wharfd on a test redis-server with write_manifest's two sections
 * of phases.so (host_process writes its own manifest; these tests need
 * two sections of one .so and no chaos, so it points the host at its
 * own), and waits for both workers to init both. */
static void start_two_sections(void)
{
    char manifest[300];

    test_suite_up(&redis, 0, &rc);
    test_host_manifest_opts(&host, &redis,
                            &(test_host_opts){.plugins_dir = plugins});
    snprintf(manifest, sizeof(manifest), "%s", host.manifest);
    write_manifest(manifest, redis.url);
    /* Serving, then every worker's init of both sections: these serve
     * no chaos, so no group is waited for. */
    test_host_launch(&host, NULL);
    cr_assert_eq(wait_count(phases_file, "init 0", 4, TEST_EVENT_MS), 4,
                 "the workers did not init; see %s", host.log);
}

Test(phases, workers_run_init_in_the_worker_phase_and_log_by_section)
{
    char id[16];

    start_two_sections();
    /* At start: the check process (both sections), then each of the two
     * workers (both sections). */
    cr_assert_eq(count(phases_file, "init 1"), 2);
    cr_assert_eq(count(phases_file, "fini 1"), 2);
    cr_assert_eq(count(phases_file, "init 0"), 4);
    snprintf(id, sizeof(id), "p1");
    test_add_entry(rc, "pa", id, "x");
    cr_assert_eq(
        test_wait_int(rc, 1, TEST_EVENT_MS, "EXISTS wharf:{pa}:result:p1"), 1);
    cr_assert_eq(count(phases_file, "task 0"), 1);
    cr_assert_eq(test_host_stop(&host), 0);
    /* A graceful stop runs fini in every worker, and it can log. */
    cr_assert_eq(count(phases_file, "fini 0"), 4);
    cr_assert(test_host_log_has(&host, "\"plugin\":\"phases-a\"",
                                "phases: fini in phase 0", NULL),
              "fini did not log under its section name; see %s", host.log);
    cr_assert(test_host_log_has(&host, "\"plugin\":\"phases-b\"",
                                "phases: fini in phase 0", NULL));
}

Test(phases, a_reload_checks_in_the_check_phase_then_replaces_each_worker)
{
    start_two_sections();
    cr_assert_eq(kill(host.pid, SIGHUP), 0);
    /* The reload's check: init then fini of both sections, in the check
     * phase, in a child of its own. */
    cr_assert_eq(wait_count(phases_file, "fini 1", 4, TEST_EVENT_MS), 4,
                 "no check at the reload; see %s", host.log);
    cr_assert_eq(count(phases_file, "init 1"), 4);
    /* Then each worker stops gracefully (fini) and a new one inits. */
    cr_assert_eq(wait_count(phases_file, "init 0", 8, TEST_EVENT_MS), 8,
                 "the workers were not replaced; see %s", host.log);
    cr_assert_eq(wait_count(phases_file, "fini 0", 4, TEST_EVENT_MS), 4);
    cr_assert_eq(test_host_stop(&host), 0);
    cr_assert_eq(count(phases_file, "fini 0"), 8);
}

Test(phases, wharf_run_is_the_run_phase)
{
    char cmd[512];

    snprintf(cmd, sizeof(cmd),
             "cd %s && printf '[plugin.phases]\\npath = phases.so\\n"
             "types = t\\nfile = %s\\n' > run.ini && %s/wharf run ./phases.so "
             "t hello "
             "--config run.ini >/dev/null 2>&1",
             plugins, phases_file, WHARF_BINARY_DIR);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    cr_assert_eq(count(phases_file, "init 2"), 1);
    cr_assert_eq(count(phases_file, "task 2"), 1);
    cr_assert_eq(count(phases_file, "fini 2"), 1);
}

/* An older host's table ends before the newer services: the wrappers
 * answer their documented defaults instead of calling past it. */
Test(phases, wrappers_never_call_past_an_older_table)
{
    context c;
    wharf_services old;
    wharf_task task = {.id = "x", .type = "t", .trace = ""};

    context_init(&c, NULL, 16);
    context_begin(&c, &task);
    context_set_deadline(&c, 1, NULL, 0);
    cr_assert_eq(wharf_deadline_ms(&c.base), 0, "the deadline has passed");
    cr_assert_eq(wharf_cancelled(&c.base), 1);
    cr_assert_eq(wharf_phase(&c.base), WHARF_PHASE_WORKER);
    memcpy(&old, c.base.services, sizeof(old));
    old.size = offsetof(wharf_services, deadline_ms); /* a first host */
    old.deadline_ms = NULL;
    old.cancelled = NULL;
    old.phase = NULL;
    c.base.services = &old;
    cr_assert(!WHARF_HAS_SERVICE(&c.base, deadline_ms));
    cr_assert(WHARF_HAS_SERVICE(&c.base, state));
    cr_assert_eq(wharf_deadline_ms(&c.base), -1);
    cr_assert_eq(wharf_cancelled(&c.base), 0);
    cr_assert_eq(wharf_phase(&c.base), -1);
    context_end(&c);
    context_destroy(&c);
}
