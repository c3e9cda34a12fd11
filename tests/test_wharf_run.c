/* `wharf run PLUGIN.so TYPE PAYLOAD`: the real binary on the shipped
 * plugins (echo, chaos) and on test fixtures, without Redis: its output,
 * its exit codes (0 ok, 75 retry, 65 fail, 78 not loadable, 64 usage),
 * the manifest section it reads, the type's deadline, and --threads and
 * --repeat. (webhook.so is run by tests/test_webhook.c, against its HTTP
 * server.) Under make test-tsan, WHARF_TEST_BUILD names the
 * ThreadSanitizer build: its wharf and plugins run, so the threads of
 * --threads are checked for races. */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spawn.h"

#define WHARF built("wharf")
#define ECHO built("plugins/echo.so")
#define CHAOS built("plugins/chaos.so")
#define MEET built("tests/plugins/meet.so")

static char dir[64];

/* path in the build under test (see above); the last four stay valid. */
static const char *built(const char *path)
{
    static char paths[4][512];
    static unsigned next;
    const char *top = getenv("WHARF_TEST_BUILD");
    char *buf = paths[next++ % 4];

    snprintf(buf, sizeof(paths[0]), "%s/%s",
             top && *top ? top : WHARF_BINARY_DIR, path);
    return buf;
}
static char out[16384];
static char err[16384];

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/wharf-test-run-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    chmod(dir, 0755);
}

static void teardown(void)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        cr_log_warn("cannot remove %s", dir);
}

TestSuite(wharf_run, .init = setup, .fini = teardown, .timeout = 30);

static void slurp(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, len - 1, f) : 0;

    buf[n] = '\0';
    if (f)
        fclose(f);
}

/* Runs wharf with the arguments (NULL-terminated), stdin from `input`
 * (or /dev/null); returns the exit code, output in out and err. */
static int wharf(const char *input, ...)
{
    const char *argv[32];
    char out_path[128], err_path[128], in_path[128];
    va_list ap;
    int n = 0, status;

    argv[n++] = WHARF;
    va_start(ap, input);
    while (n < 31 && (argv[n] = va_arg(ap, const char *)) != NULL)
        n++;
    va_end(ap);
    argv[n] = NULL;
    snprintf(out_path, sizeof(out_path), "%s/stdout", dir);
    snprintf(err_path, sizeof(err_path), "%s/stderr", dir);
    snprintf(in_path, sizeof(in_path), "%s/stdin", dir);
    if (input) {
        FILE *f = fopen(in_path, "w");
        cr_assert_not_null(f);
        fputs(input, f);
        fclose(f);
    }
    /* No Redis anywhere: run must not need one. */
    status = test_spawn(argv, input ? in_path : NULL, out_path, err_path,
                        "WHARF_REDIS_URL", "redis://127.0.0.1:1");
    slurp(out_path, out, sizeof(out));
    slurp(err_path, err, sizeof(err));
    return status;
}

static const char *write_manifest(const char *fmt, ...)
{
    static char path[128];
    va_list ap;
    FILE *f;

    snprintf(path, sizeof(path), "%s/wharf.ini", dir);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fclose(f);
    return path;
}

Test(wharf_run, echo_prints_ok_and_the_result)
{
    cr_assert_eq(wharf(NULL, "run", ECHO, "echo", "hello world", NULL), 0,
                 "%s", err);
    cr_assert(strstr(out, "status: ok\nresult: hello world\n"), "%s", out);
    cr_assert(strstr(out, "duration_ms: "), "%s", out);
    /* The plugin's wharf_log line, through the host's logger. */
    cr_assert(strstr(err, "plugin=echo"), "%s", err);
}

Test(wharf_run, payload_from_stdin_and_raw_result)
{
    cr_assert_eq(wharf("line one\nline two\n", "run", "--result", ECHO, "echo",
                       "-", NULL),
                 0, "%s", err);
    cr_assert_str_eq(out, "line one\nline two\n");
}

Test(wharf_run, chaos_ok)
{
    cr_assert_eq(wharf(NULL, "run", CHAOS, "chaos", "ok", NULL), 0, "%s", err);
    cr_assert(strstr(out, "status: ok\nresult: ok attempt=1\n"), "%s", out);
}

Test(wharf_run, chaos_fatal_is_65)
{
    cr_assert_eq(wharf(NULL, "run", CHAOS, "chaos", "fatal", NULL), 65, "%s",
                 err);
    cr_assert(strstr(out, "status: fail\nerror: fatal"), "%s", out);
    cr_assert_null(strstr(out, "result:"), "%s", out);
}

Test(wharf_run, chaos_fail_then_ok_by_attempt)
{
    cr_assert_eq(wharf(NULL, "run", CHAOS, "chaos", "fail:1", NULL), 75, "%s",
                 err);
    cr_assert(strstr(out, "status: retry\nerror: "), "%s", out);
    cr_assert_eq(wharf(NULL, "run", "--attempt", "2", CHAOS, "chaos", "fail:1",
                       NULL),
                 0, "%s", err);
    cr_assert(strstr(out, "result: ok attempt=2\n"), "%s", out);
}

/* A plugin's wharf_retry_in is shown as the host would use it: capped by
 * the type's max_retry_delay, and not at all on the last attempt. */
Test(wharf_run, retry_in_is_shown_capped)
{
    const char *ini = write_manifest("[host]\nautoload = no\n"
                                     "[type.chaos]\nmax_retry_delay = 2s\n");

    cr_assert_eq(wharf(NULL, "run", CHAOS, "chaos", "later:1500", NULL), 75,
                 "%s", err);
    cr_assert(strstr(out, "status: retry\nerror: later:1500: asked to come "
                          "back in 1500 ms\nretry_in_ms: 1500\n"),
              "%s", out);
    cr_assert_eq(wharf(NULL, "run", CHAOS, "chaos", "later:9000", "--config",
                       ini, NULL),
                 75, "%s", err);
    cr_assert(strstr(out, "retry_in_ms: 2000\n"), "%s", out);
    ini = write_manifest("[host]\nautoload = no\n"
                         "[type.chaos]\nmax_attempts = 1\n");
    cr_assert_eq(wharf(NULL, "run", CHAOS, "chaos", "later:1500", "--config",
                       ini, NULL),
                 75, "%s", err);
    cr_assert(strstr(out, "the host would dead-letter it"), "%s", out);
    cr_assert_null(strstr(out, "retry_in_ms"), "%s", out);
    /* Without it, the backoff decides: nothing to show. */
    cr_assert_eq(wharf(NULL, "run", CHAOS, "chaos", "fail:1", NULL), 75);
    cr_assert_null(strstr(out, "retry_in_ms"), "%s", out);
}

Test(wharf_run, last_attempt_says_the_host_would_dead_letter)
{
    cr_assert_eq(wharf(NULL, "run", "--attempt", "5", CHAOS, "chaos",
                       "fail:9", NULL),
                 75, "%s", err);
    cr_assert(strstr(out, "attempt 5 of 5: the host would dead-letter it"),
              "%s", out);
}

Test(wharf_run, manifest_section_configures_the_plugin)
{
    char runs[160], line[256];
    const char *ini;

    snprintf(runs, sizeof(runs), "%s/runs", dir);
    ini = write_manifest("[host]\nplugins_dir = %s\nautoload = no\n"
                         "[plugin.chaos]\npath = chaos.so\ntypes = jobs\n"
                         "runs_file = %s\n"
                         "[type.jobs]\nmax_attempts = 2\n",
                         WHARF_PLUGIN_DIR, runs);
    cr_assert_eq(wharf(NULL, "run", CHAOS, "jobs", "ok", "--config", ini,
                       "--id", "t-1", "--attempt", "2", NULL),
                 0, "%s", err);
    slurp(runs, line, sizeof(line));
    cr_assert_str_eq(line, "t-1 2\n", "the section's own key reached it");
    /* The manifest's types: chaos serves jobs there, not chaos. */
    cr_assert_eq(wharf(NULL, "run", CHAOS, "chaos", "ok", "--config", ini,
                       NULL),
                 64, "%s", err);
    cr_assert(strstr(err, "serves jobs, not chaos"), "%s", err);
    /* The global --config works too. */
    cr_assert_eq(wharf(NULL, "--config", ini, "run", CHAOS, "jobs", "fatal",
                       NULL),
                 65, "%s", err);
}

/* Two sections load one file: the one that lists the type configures
 * the run, for that file and for a fresh build of it elsewhere. */
Test(wharf_run, of_two_sections_of_one_file_the_one_serving_the_type)
{
    char runs_a[160], runs_b[160], copy[160], cmd[512], line[256];
    const char *ini;

    snprintf(runs_a, sizeof(runs_a), "%s/runs-a", dir);
    snprintf(runs_b, sizeof(runs_b), "%s/runs-b", dir);
    ini = write_manifest("[host]\nplugins_dir = %s\nautoload = no\n"
                         "[plugin.chaos-a]\npath = chaos.so\ntypes = a\n"
                         "runs_file = %s\n"
                         "[plugin.chaos-b]\npath = chaos.so\ntypes = b\n"
                         "runs_file = %s\n",
                         WHARF_PLUGIN_DIR, runs_a, runs_b);
    cr_assert_eq(wharf(NULL, "run", CHAOS, "b", "ok", "--config", ini, "--id",
                       "t-1", NULL),
                 0, "%s", err);
    slurp(runs_b, line, sizeof(line));
    cr_assert_str_eq(line, "t-1 1\n");
    cr_assert_eq(access(runs_a, F_OK), -1, "chaos-a's runs_file was written");
    cr_assert(strstr(err, "plugin=chaos-b") || !strstr(err, "plugin="),
              "logged under another name: %s", err);

    snprintf(copy, sizeof(copy), "%s/chaos.so", dir);
    snprintf(cmd, sizeof(cmd), "cp %s %s && chmod 0644 %s", CHAOS, copy, copy);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(wharf(NULL, "run", copy, "a", "ok", "--config", ini, "--id",
                       "t-2", NULL),
                 0, "%s", err);
    slurp(runs_a, line, sizeof(line));
    cr_assert_str_eq(line, "t-2 1\n");
}

Test(wharf_run, deadline_is_the_types_timeout)
{
    const char *ini = write_manifest("[host]\nautoload = no\n"
                                     "[defaults]\ntimeout = 200ms\n");

    /* polite: works until wharf_cancelled, then returns OK, which the
     * host throws away as a timeout. */
    cr_assert_eq(wharf(NULL, "run", "--config", ini, CHAOS, "chaos",
                       "polite:60000", NULL),
                 75, "%s", err);
    cr_assert(strstr(out, "status: retry\nerror: timeout after 200 ms"), "%s",
              out);
    /* sleep: ignores the deadline; given up on after a grace. */
    cr_assert_eq(wharf(NULL, "run", "--config", ini, CHAOS, "chaos",
                       "sleep:60000", NULL),
                 75, "%s", err);
    cr_assert(strstr(err, "timeout after 200 ms"), "%s", err);
}

Test(wharf_run, plugin_that_does_not_load_is_78)
{
    cr_assert_eq(wharf(NULL, "run", WHARF_FIXTURE_DIR "/badabi.so", "x", "p",
                       NULL),
                 78, "%s", err);
    cr_assert(strstr(err, "ABI"), "%s", err);
    cr_assert_eq(wharf(NULL, "run", WHARF_FIXTURE_DIR "/initfail.so", "x", "p",
                       NULL),
                 78, "%s", err);
    cr_assert(strstr(err, "init returned"), "%s", err);
    cr_assert_eq(wharf(NULL, "run", "/nonexistent.so", "x", "p", NULL), 78);
}

Test(wharf_run, usage_errors_are_64)
{
    cr_assert_eq(wharf(NULL, "run", NULL), 64);
    cr_assert(strstr(err, "usage: wharf run PLUGIN.so TYPE"), "%s", err);
    cr_assert_eq(wharf(NULL, "run", ECHO, NULL), 64);
    cr_assert_eq(wharf(NULL, "run", ECHO, "echo", "a", "b", NULL), 64);
    cr_assert_eq(wharf(NULL, "run", "--attempt", "0", ECHO, "echo", "a", NULL),
                 64);
    cr_assert_eq(wharf(NULL, "run", "--help", NULL), 0);
    cr_assert(strstr(out, "usage: wharf run"), "%s", out);
}

/* ---- --threads and --repeat ---------------------------------------- */

/* Each call of meet:4 returns only once 4 are under way at once: all ok
 * means 4 threads ran calls side by side, round after round. */
Test(wharf_run, threads_run_their_calls_at_once)
{
    cr_assert_eq(wharf(NULL, "run", MEET, "meet", "meet:4", "--threads", "4",
                       "--repeat", "25", NULL),
                 0, "%s%s", out, err);
    cr_assert(strstr(out, "calls: 100 (4 threads x 25)\nok: 100\nretry: 0\n"
                          "fail: 0\n"),
              "%s", out);
    cr_assert(strstr(out, "slowest_ms: "), "%s", out);
    cr_assert(strstr(out, "duration_ms: "), "%s", out);
    cr_assert_null(strstr(out, "first_error"), "%s", out);
}

/* The converse, so the test above proves something: 2 threads never make
 * a meeting of 3, and each call retries at its deadline. */
Test(wharf_run, fewer_threads_than_a_meeting_never_meet)
{
    const char *ini = write_manifest("[host]\nautoload = no\n"
                                     "[type.meet]\ntimeout = 1s\n");

    cr_assert_eq(wharf(NULL, "run", MEET, "meet", "meet:3", "--threads", "2",
                       "--config", ini, NULL),
                 75, "%s%s", out, err);
    cr_assert(strstr(out, "calls: 2 (2 threads x 1)\nok: 0\nretry: 2\n"),
              "%s", out);
    cr_assert(strstr(out, "first_error: "), "%s", out);
    cr_assert(strstr(out, " of 3 calls at once") ||
                  strstr(out, "timeout after 1000 ms"),
              "%s", out);
}

Test(wharf_run, threads_are_refused_to_a_plugin_not_opted_in)
{
    cr_assert_eq(wharf(NULL, "run", built("tests/plugins/good.so"), "good",
                       "ok", "--threads", "2", NULL),
                 78, "%s", err);
    cr_assert(strstr(err, "has not opted in to threads (.thread_safe = 1"),
              "%s", err);
    cr_assert(strstr(err, "--threads 2 needs it"), "%s", err);
    cr_assert_str_eq(out, "");
    /* An ABI 2 plugin cannot have opted in. */
    cr_assert_eq(wharf(NULL, "run", built("tests/plugins/abi2.so"), "abi2",
                       "p", "--threads", "8", NULL),
                 78, "%s", err);
    cr_assert(strstr(err, "has not opted in to threads"), "%s", err);
}

/* --repeat alone runs any plugin, one call after another, each call its
 * own task: ID.1, ID.2, ... */
Test(wharf_run, repeat_runs_any_plugin_one_call_after_another)
{
    char runs[160], lines[512];
    const char *ini;

    snprintf(runs, sizeof(runs), "%s/runs", dir);
    ini = write_manifest("[host]\nplugins_dir = %s\nautoload = no\n"
                         "[plugin.chaos]\npath = chaos.so\ntypes = chaos\n"
                         "runs_file = %s\n",
                         WHARF_PLUGIN_DIR, runs);
    cr_assert_eq(wharf(NULL, "run", CHAOS, "chaos", "ok", "--config", ini,
                       "--id", "t", "--repeat", "3", NULL),
                 0, "%s", err);
    cr_assert(strstr(out, "calls: 3 (1 thread x 3)\nok: 3\n"), "%s", out);
    slurp(runs, lines, sizeof(lines));
    cr_assert_str_eq(lines, "t.1 1\nt.2 1\nt.3 1\n");
    /* Of many, the exit code says the worst: a retry is 75... */
    cr_assert_eq(wharf(NULL, "run", CHAOS, "chaos", "fail:1", "--id", "t",
                       "--repeat", "2", NULL),
                 75, "%s", err);
    cr_assert(strstr(out, "retry: 2\n"), "%s", out);
    cr_assert(strstr(out, "first_error: t.1: fail:1: attempt 1 fails\n"), "%s",
              out);
    /* ... and a failure 65. */
    cr_assert_eq(wharf(NULL, "run", CHAOS, "chaos", "fatal", "--repeat", "2",
                       NULL),
                 65, "%s", err);
    cr_assert(strstr(out, "fail: 2\n"), "%s", out);
}

/* A call deaf to its deadline ends the run a grace after it, exit 75, as
 * a worker is killed for it; the message names the call. */
Test(wharf_run, a_hung_call_ends_the_run_after_the_grace)
{
    const char *ini = write_manifest("[host]\nautoload = no\n"
                                     "[type.meet]\ntimeout = 1s\n");

    cr_assert_eq(wharf(NULL, "run", MEET, "meet", "hang", "--threads", "2",
                       "--id", "h", "--config", ini, NULL),
                 75, "%s%s", out, err);
    cr_assert(strstr(err, "wharf: run: task h."), "%s", err);
    cr_assert(strstr(err, ": timeout after 1000 ms (killed after a 1000 ms "
                          "grace); the host would retry it\n"),
              "%s", err);
}

Test(wharf_run, bad_threads_and_repeat_are_64)
{
    static const char *const bad[][2] = {
        {"--threads", "0"},    {"--threads", "1025"}, {"--threads", "x"},
        {"--threads", "-1"},   {"--threads", ""},     {"--repeat", "0"},
        {"--repeat", "2x"},    {"--repeat", "1000001"}};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_assert_eq(wharf(NULL, "run", ECHO, "echo", "a", bad[i][0],
                           bad[i][1], NULL),
                     64, "%s %s: %s", bad[i][0], bad[i][1], err);
        cr_assert(strstr(err, "is not a number from 1 to "), "%s", err);
        cr_assert_str_eq(out, "");
    }
    cr_assert_eq(wharf(NULL, "run", ECHO, "echo", "a", "--threads", "2",
                       "--result", NULL),
                 64, "%s", err);
    cr_assert(strstr(err, "--result prints the result of one call"), "%s",
              err);
}
