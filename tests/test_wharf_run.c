/* `wharf run PLUGIN.so TYPE PAYLOAD`: the real binary on the shipped
 * plugins (echo, chaos) and on test fixtures, without Redis: its output,
 * its exit codes (0 ok, 75 retry, 65 fail, 78 not loadable, 64 usage),
 * the manifest section it reads, and the type's deadline. (webhook.so is
 * run by tests/test_webhook.c, against its HTTP server.) */
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

#define WHARF WHARF_BINARY_DIR "/wharf"
#define ECHO WHARF_PLUGIN_DIR "/echo.so"
#define CHAOS WHARF_PLUGIN_DIR "/chaos.so"

static char dir[64];
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
    pid_t pid;

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
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int i = open(input ? in_path : "/dev/null", O_RDONLY);
        int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

        dup2(i, STDIN_FILENO);
        dup2(o, STDOUT_FILENO);
        dup2(e, STDERR_FILENO);
        /* No Redis anywhere: run must not need one. */
        setenv("WHARF_REDIS_URL", "redis://127.0.0.1:1", 1);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    waitpid(pid, &status, 0);
    slurp(out_path, out, sizeof(out));
    slurp(err_path, err, sizeof(err));
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
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
