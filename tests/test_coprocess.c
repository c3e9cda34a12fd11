/* plugins/coprocess.so: handlers in other languages. Suite coprocess_run
 * runs it with `wharf run` (no Redis) on the Python and Node handler
 * libraries (tests/handlers/pychaos.py, nodechaos.js, pygate.py) and on
 * programs that break the protocol (tests/handlers/hostile.py): outcomes,
 * binary payloads, each way a program can die or misbehave with its
 * reason, 200 tasks in flight through one program answered out of order,
 * and wharfd --check of its keys. Suite coprocess_host runs one real
 * wharfd and redis-server: the same task set through chaos.so, the Python
 * and the Node handler must end the same way (outcomes, results, dead
 * records, attempts, metrics), and a program that dies loses nothing.
 * Suite coprocess_threads runs one wharfd worker whose threads share each
 * section's one program (tests/handlers/pygate.py, pyhold.py,
 * nodegate.js): 200 in flight in one Python program and 64 in one Node
 * program, answered out of order and counted once; a program killed with
 * 50 in flight; one deadline among many; SIGTERM and a reload with many
 * in flight; more threads than inflight; big frames with many in flight. */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <wharf/client.h>
#include <wharf/client_workflow.h>

#include "coprocess_frame.h"
#include "host_process.h"
#include "http_get.h"
#include "redis_server.h"
#include "spawn.h"
#include "tools.h"

/* The build under test: this one, or under make test-tsan the
 * ThreadSanitizer build that WHARF_TEST_BUILD names, whose wharf, wharfd
 * and plugins then run (manifests name the plugin `coprocess.so` in its
 * plugins_dir), so the threads sharing a program are checked for races. */
#define WHARF built("wharf")
#define WHARFD built("wharfd")
#define COPROCESS built("plugins/coprocess.so")
#define PLUGINS built("plugins")

/* path in the build under test; the last eight stay valid. */
static const char *built(const char *path)
{
    static char paths[8][512];
    static unsigned next;
    const char *top = getenv("WHARF_TEST_BUILD");
    char *buf = paths[next++ % 8];

    snprintf(buf, sizeof paths[0], "%s/%s",
             top && *top ? top : WHARF_BINARY_DIR, path);
    return buf;
}
/* The handler programs, run from the source tree: cwd is its top. */
#define PY_ENV "env = PYTHONPATH=clients/python:tests/handlers\n"
#define PY_CMD "command = /usr/bin/python3 -m wharf.handler "
#define NODE_CMD                                                               \
    "command = node clients/node/handler.js tests/handlers/nodechaos.js\n"
#define HOSTILE_CMD "command = /usr/bin/python3 tests/handlers/hostile.py "

/* The sections every manifest of these tests holds: the handlers (sync
 * and async Python, Node), the hostile programs, and the gate. */
#define SECTIONS                                                               \
    "[plugin.py]\npath = coprocess.so\ntypes = pychaos\n"                      \
    "cwd = " WHARF_SOURCE_DIR "\n" PY_CMD "pychaos\n" PY_ENV                   \
    "[plugin.pyasync]\npath = coprocess.so\ntypes = pychaos_async\n"           \
    "cwd = " WHARF_SOURCE_DIR "\n" PY_CMD "pychaos\n" PY_ENV "inflight = 8\n"  \
    "[plugin.node]\npath = coprocess.so\ntypes = nodechaos\n"                  \
    "cwd = " WHARF_SOURCE_DIR "\n" NODE_CMD

static char dir[64];
static char out_path[128], err_path[128];
/* What the last run wrote: a result of a MiB fits. */
static char *out, *err;
static size_t out_len;

static void run_setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/wharf-test-coprocess-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    chmod(dir, 0755);
    snprintf(out_path, sizeof out_path, "%s/stdout", dir);
    snprintf(err_path, sizeof err_path, "%s/stderr", dir);
    test_need_tools((const char *const[]){"node", NULL});
}

static void run_teardown(void)
{
    char cmd[128];

    free(out);
    free(err);
    out = err = NULL;
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        cr_log_warn("cannot remove %s", dir);
}

TestSuite(coprocess_run, .init = run_setup, .fini = run_teardown,
          .timeout = 120);

/* The whole file at path, NUL-terminated; its length in *len. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;

    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    n = ftell(f);
    rewind(f);
    buf = malloc((size_t)n + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)n;
    return buf;
}

/* Runs argv (NULL-terminated) with stdin from input_path (or /dev/null);
 * the exit code (128 + a signal), its output in out and err. */
static int run_argv(const char *input_path, const char *const *argv)
{
    int status = test_spawn(argv, input_path, out_path, err_path,
                            "WHARF_REDIS_URL", "redis://127.0.0.1:1");

    free(out);
    free(err);
    out = slurp(out_path, &out_len);
    err = slurp(err_path, NULL);
    return status;
}

static const char *manifest_path(void)
{
    static char path[128];

    snprintf(path, sizeof path, "%s/wharf.ini", dir);
    return path;
}

/* Writes the manifest: [host] autoload = no, SECTIONS, then extra. */
static void manifest(const char *extra)
{
    FILE *f = fopen(manifest_path(), "w");

    cr_assert_not_null(f);
    fprintf(
        f,
        "[host]\nautoload = no\nplugins_dir = %s\n[log]\nformat = json\n%s%s",
        PLUGINS, SECTIONS, extra ? extra : "");
    cr_assert_eq(fclose(f), 0);
}

/* wharf run coprocess.so TYPE PAYLOAD --config the manifest. */
static int run_task(const char *type, const char *payload)
{
    return run_argv(NULL, (const char *const[]){WHARF, "run", COPROCESS, type,
                                                payload, "--config",
                                                manifest_path(), NULL});
}

static const char *const handler_types[] = {"pychaos", "pychaos_async",
                                            "nodechaos"};

Test(coprocess_run, outcomes_in_each_language)
{
    manifest(NULL);
    for (size_t i = 0; i < 3; i++) {
        const char *t = handler_types[i];

        cr_assert_eq(run_task(t, "ok"), 0, "%s: %s", t, err);
        cr_assert(strstr(out, "status: ok\nresult: ok attempt=1\n"), "%s: %s",
                  t, out);
        cr_assert_eq(run_task(t, "fail:1"), 75, "%s: %s", t, err);
        cr_assert(strstr(out, "error: fail:1: attempt 1 fails\n"), "%s: %s", t,
                  out);
        cr_assert_eq(run_task(t, "fatal"), 65, "%s: %s", t, err);
        cr_assert(strstr(out, "error: fatal: asked to fail for good\n"),
                  "%s: %s", t, out);
        /* wharf.Retry(delay=...) / new Retry(..., {delay}): wharf_retry_in */
        cr_assert_eq(run_task(t, "later:1500"), 75, "%s: %s", t, err);
        cr_assert(strstr(out, "retry_in_ms: 1500\n"), "%s: %s", t, out);
        /* Any other exception: a retry with its text. */
        cr_assert_eq(run_task(t, "raise"), 75, "%s: %s", t, err);
        cr_assert(strstr(out, "Error: raised on purpose\n"), "%s: %s", t, out);
        /* What a handler prints is a stderr line, not a broken frame. */
        cr_assert_eq(run_task(t, "print"), 0, "%s: %s", t, err);
        cr_assert(strstr(err, "handler stderr: printed to stdout"), "%s: %s", t,
                  err);
        /* ctx.log: a host log line naming the plugin and the task. */
        cr_assert_eq(run_task(t, "log"), 0, "%s: %s", t, err);
        cr_assert(strstr(err, "a line from the handler"), "%s: %s", t, err);
        cr_assert(strstr(err, "\"task\":"), "%s: %s", t, err);
    }
}

/* A MiB of every byte value in, the same MiB out, in each language. */
Test(coprocess_run, binary_payload_round_trip)
{
    char in_path[160];
    size_t len = 1 << 20;
    unsigned char *payload = malloc(len);
    FILE *f;

    cr_assert_not_null(payload);
    memcpy(payload, "echo:", 5);
    for (size_t i = 5; i < len; i++)
        payload[i] = (unsigned char)(i * 7 + i / 256);
    snprintf(in_path, sizeof in_path, "%s/payload", dir);
    f = fopen(in_path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(payload, 1, len, f), len);
    cr_assert_eq(fclose(f), 0);
    manifest(NULL);
    for (size_t i = 0; i < 3; i++) {
        cr_assert_eq(
            run_argv(in_path,
                     (const char *const[]){WHARF, "run", "--result", COPROCESS,
                                           handler_types[i], "-", "--config",
                                           manifest_path(), NULL}),
            0, "%s: %s", handler_types[i], err);
        cr_assert_eq(out_len, len, "%s: %zu bytes back", handler_types[i],
                     out_len);
        cr_assert(memcmp(out, payload, len) == 0, "%s: bytes changed",
                  handler_types[i]);
    }
    free(payload);
}

/* Each way a program dies or breaks the protocol fails the attempt with
 * a reason that says so. */
Test(coprocess_run, a_broken_program_fails_the_attempt_with_why)
{
    static const struct {
        const char *type, *payload, *error, *log;
    } cases[] = {
        {"pychaos", "exit:3", "error: handler exited with status 3\n", NULL},
        {"nodechaos", "exit:3", "error: handler exited with status 3\n", NULL},
        {"pychaos", "crash", "error: handler killed by SIGSEGV\n", NULL},
        {"nodechaos", "crash", "error: handler killed by SIGSEGV\n", NULL},
        {"garbage", "x", "error: malformed frame: length 1751477356, not 5 to",
         "the stream starts \\\"hello fr\\\""},
        {"stranger", "x",
         "error: malformed frame: an answer for request 1001, which is not "
         "in flight\n",
         NULL},
        /* Never answers, not even the cancel: killed after the grace. */
        {"silent", "x", "error: timeout after 1000 ms\n",
         "was cancelled and not answered within 500 ms"},
        /* A sync handler that sees ctx.cancelled and returns. */
        {"pychaos", "polite:60000", "error: timeout after 1000 ms\n", NULL},
    };

    manifest("[plugin.garbage]\npath = coprocess.so\ntypes = garbage\n"
             "cwd = " WHARF_SOURCE_DIR "\n" HOSTILE_CMD "garbage\n"
             "[plugin.stranger]\npath = coprocess.so\ntypes = stranger\n"
             "cwd = " WHARF_SOURCE_DIR "\n" HOSTILE_CMD "stranger\n"
             "[plugin.silent]\npath = coprocess.so\ntypes = silent\n"
             "cwd = " WHARF_SOURCE_DIR "\n" HOSTILE_CMD "silent\n"
             "[type.silent]\ntimeout = 1s\n"
             "[type.pychaos]\ntimeout = 1s\n");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_assert_eq(run_task(cases[i].type, cases[i].payload), 75, "%s %s: %s",
                     cases[i].type, cases[i].payload, err);
        cr_assert(strstr(out, cases[i].error), "%s %s: %s", cases[i].type,
                  cases[i].payload, out);
        if (cases[i].log)
            cr_assert(strstr(err, cases[i].log), "%s %s: %s", cases[i].type,
                      cases[i].payload, err);
    }
    /* A Python program's stderr (its traceback) reaches the log. */
    cr_assert_eq(run_task("pychaos", "raise"), 75);
    cr_assert(strstr(err, "ValueError: raised on purpose"), "%s", err);
}

/* A program that cannot get ready fails init (78), saying why. */
Test(coprocess_run, a_program_that_never_gets_ready_fails_init)
{
    manifest("[plugin.old]\npath = coprocess.so\ntypes = old\n"
             "cwd = " WHARF_SOURCE_DIR "\n" HOSTILE_CMD "oldproto\n"
             "[plugin.mute]\npath = coprocess.so\ntypes = mute\n"
             "cwd = " WHARF_SOURCE_DIR "\n" HOSTILE_CMD "noready\n"
             "[plugin.broken]\npath = coprocess.so\ntypes = broken\n"
             "cwd = " WHARF_SOURCE_DIR "\n" PY_CMD "no_such_module\n" PY_ENV);
    cr_assert_eq(run_task("old", "x"), 78, "%s", err);
    cr_assert(strstr(err, "speaks protocol version 99, not 1"), "%s", err);
    cr_assert_eq(run_task("mute", "x"), 78, "%s", err);
    cr_assert(strstr(err, "handler exited with status 4"), "%s", err);
    cr_assert_eq(run_task("broken", "x"), 78, "%s", err);
    cr_assert(strstr(err, "handler exited with status 1"), "%s", err);
    cr_assert(strstr(err, "No module named 'no_such_module'"), "%s", err);
}

/* 200 calls at once through one async Python program, which holds every
 * task until all 200 are in, then answers them last first: each call
 * gets its own answer, once. */
Test(coprocess_run, two_hundred_in_flight_answered_out_of_order)
{
    char gate[160], line[240], ins[200][240];
    size_t n_in = 0, n_out = 0;
    FILE *f;
    char extra[1024];

    snprintf(gate, sizeof gate, "%s/gate", dir);
    snprintf(extra, sizeof extra,
             "[plugin.gate]\npath = coprocess.so\ntypes = pygate\n"
             "cwd = " WHARF_SOURCE_DIR "\n" PY_CMD "pygate\n"
             "env = PYTHONPATH=clients/python:tests/handlers GATE_FILE=%s\n"
             "inflight = 200\n",
             gate);
    manifest(extra);
    cr_assert_eq(
        run_argv(NULL,
                 (const char *const[]){WHARF, "run", COPROCESS, "pygate", "x",
                                       "--threads", "200", "--config",
                                       manifest_path(), NULL}),
        0, "%s", err);
    cr_assert(strstr(out, "calls: 200 (200 threads x 1)\nok: 200\nretry: 0\n"
                          "fail: 0\n"),
              "%s", out);
    f = fopen(gate, "r");
    cr_assert_not_null(f);
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "in ", 3) == 0) {
            cr_assert_lt(n_in, 200);
            for (size_t k = 0; k < n_in; k++)
                cr_assert_str_neq(ins[k], line + 3, "%s came twice", line);
            snprintf(ins[n_in++], sizeof ins[0], "%s", line + 3);
        } else {
            cr_assert(strncmp(line, "out ", 4) == 0, "%s", line);
            cr_assert_eq(n_in, 200, "an answer before all 200 were in");
            /* Last in, first out. */
            cr_assert_str_eq(line + 4, ins[199 - n_out], "answer %zu", n_out);
            n_out++;
        }
    }
    fclose(f);
    cr_assert_eq(n_out, 200);
}

/* tests/handlers/handler.sh, a handler in sh written from
 * docs/handlers.md alone: ok (binary-safe), fail, retry with a delay,
 * and a log line tied to the task. */
Test(coprocess_run, a_shell_handler_from_the_docs_alone)
{
    static const char bin[] = "ab\0cd\377ef";
    char in_path[160];
    FILE *f;

    manifest("[plugin.sh]\npath = coprocess.so\ntypes = shout\n"
             "command = /bin/sh " WHARF_SOURCE_DIR
             "/tests/handlers/handler.sh\n");
    cr_assert_eq(run_task("shout", "hello world"), 0, "%s", err);
    cr_assert(strstr(out, "status: ok\nresult: HELLO WORLD\n"), "%s", out);
    cr_assert(strstr(err, "upper-casing 11 bytes"), "%s", err);
    cr_assert(strstr(err, "\"task\":"), "%s", err);
    cr_assert_eq(run_task("shout", "fail"), 65, "%s", err);
    cr_assert(strstr(out, "status: fail\nerror: asked to fail\n"), "%s", out);
    cr_assert_eq(run_task("shout", "retry"), 75, "%s", err);
    cr_assert(strstr(out, "error: asked to retry\nretry_in_ms: 250\n"), "%s",
              out);
    snprintf(in_path, sizeof in_path, "%s/bin", dir);
    f = fopen(in_path, "wb");
    cr_assert_not_null(f);
    fwrite(bin, 1, sizeof bin - 1, f);
    fclose(f);
    cr_assert_eq(run_argv(in_path,
                          (const char *const[]){
                              WHARF, "run", "--result", COPROCESS, "shout", "-",
                              "--config", manifest_path(), NULL}),
                 0, "%s", err);
    cr_assert_eq(out_len, sizeof bin - 1);
    cr_assert(memcmp(out, "AB\0CD\377EF", out_len) == 0);
}

/* The frames of docs/handlers.md's example, byte for byte, and the
 * handler's frames the host refuses. */
Test(coprocess_run, frames_as_the_docs_show_them)
{
    static const unsigned char hello[] = {0, 0, 0, 13, 'H', 0, 0, 0, 0,
                                          0, 0, 0, 2,  0,   0, 0, 16};
    static const char trace[] =
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    static const unsigned char task_head[] = {
        0,    0,    0,    118,  'T',  0,    0,   0,   1, 0, 0, 0, 1,
        0,    0,    0,    5,    0,    0,    0,   0,   0, 0, 0, 7, 0,
        0,    0x01, 0x8b, 0xcf, 0xe5, 0x68, 0,   0,   0, 0, 0, 0, 0,
        0x75, 0x30, 0,    0,    0,    2,    't', '1', 0, 0, 0, 6, 'r',
        'e',  's',  'i',  'z',  'e',  0,    0,   0,   55};
    frame_task t = {.version = 1,
                    .attempt = 1,
                    .max_attempts = 5,
                    .fence = 7,
                    .enqueued_at_ms = 1700000000000LL,
                    .deadline_in_ms = 30000,
                    .id = "t1",
                    .type = "resize",
                    .trace = trace,
                    .payload = (const unsigned char *)"hi",
                    .payload_len = 2};
    static const unsigned char ok[] = {'O', 0, 0, 0, 1, 0, 0, 0, 2, 'H', 'I'};
    static const unsigned char log[] = {'L', 0, 0, 0,   1,   1,   0,
                                        0,   0, 4, 'w', 'o', 'r', 'k'};
    static const struct {
        const char *bytes;
        size_t len;
        const char *why;
    } bad[] = {
        {"X\0\0\0\1", 5, "unknown kind 'X'"},
        {"O\0\0\0\1\0\0\0\5ab", 11, "ok frame cut short"},
        {"F\0\0\0\1\0\0\0\1abc", 12, "fail frame with 2 bytes left over"},
        {"L\0\0\0\1\7\0\0\0\0", 10, "log level 7, not 0 to 3"},
        {"R\0\0\0", 4, "a frame of 4 bytes, shorter than its header"},
    };
    frame_out built = {0};
    frame_in in;
    char why[256];

    cr_assert_eq(frame_hello(&built, 16), 0);
    cr_assert_eq(built.len, sizeof hello);
    cr_assert(memcmp(built.data, hello, sizeof hello) == 0);
    cr_assert_eq(frame_task_build(&built, 1, &t), 0);
    cr_assert_eq(built.len, 4 + 118);
    cr_assert(memcmp(built.data, task_head, sizeof task_head) == 0);
    cr_assert(memcmp(built.data + sizeof task_head, trace, 55) == 0);
    cr_assert(memcmp(built.data + sizeof task_head + 55, "\0\0\0\2hi", 6) == 0);
    /* Version 2: the same, then the parents (one here: resize:p1, ok,
     * result "R"); 0 parents is 4 bytes of count. */
    {
        static const unsigned char parents_tail[] = {
            0,   0,   0,   1,   0,   0, 0, 9, 'r', 'e', 's', 'i',
            'z', 'e', ':', 'p', '1', 0, 0, 0, 0,   1,   'R'};
        frame_parent p = {.name = "resize:p1", .result = "R", .result_len = 1};

        t.version = 2;
        t.parents = &p;
        t.n_parents = 1;
        cr_assert_eq(frame_task_build(&built, 1, &t), 0);
        cr_assert_eq(built.len, 4 + 118 + sizeof parents_tail);
        cr_assert_eq(built.data[3], 118 + sizeof parents_tail);
        cr_assert(memcmp(built.data + 4 + 118, parents_tail,
                         sizeof parents_tail) == 0);
        t.n_parents = 0;
        cr_assert_eq(frame_task_build(&built, 1, &t), 0);
        cr_assert_eq(built.len, 4 + 118 + 4);
    }
    frame_out_free(&built);

    cr_assert_eq(frame_parse(ok, sizeof ok, &in, why, sizeof why), 0, "%s",
                 why);
    cr_assert_eq(in.kind, FRAME_OK);
    cr_assert_eq(in.request, 1);
    cr_assert_eq(in.text_len, 2);
    cr_assert(memcmp(in.text, "HI", 2) == 0);
    cr_assert_eq(frame_parse(log, sizeof log, &in, why, sizeof why), 0, "%s",
                 why);
    cr_assert_eq(in.level, 1);
    cr_assert_eq(in.text_len, 4);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(frame_parse((const unsigned char *)bad[i].bytes,
                                 bad[i].len, &in, why, sizeof why),
                     -1, "%s", bad[i].why);
        cr_assert_str_eq(why, bad[i].why);
    }
}

/* wharfd --check reads the keys and looks for the program, starting
 * nothing. */
Test(coprocess_run, check_refuses_bad_keys)
{
    static const struct {
        const char *keys, *error;
    } cases[] = {
        {"command = no-such-program-here --flag\n",
         "coprocess: command: no-such-program-here: not found on PATH"},
        {"command = /usr/bin/python3 'unterminated\n",
         "coprocess: command: unterminated ' quote"},
        {"command = /usr/bin/python3\ninflight = 0\n",
         "coprocess: inflight '0': a whole number from 1 to 4096"},
        {"command = /usr/bin/python3\nenv = NOEQUALS\n",
         "coprocess: env: 'NOEQUALS' is not NAME=VALUE"},
        {"command = /usr/bin/python3\ncwd = /no/such/folder\n",
         "coprocess: cwd /no/such/folder: No such file or directory"},
        {"cwd = /tmp\n", "coprocess: no command"},
    };
    char ini[1024];

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        FILE *f = fopen(manifest_path(), "w");

        cr_assert_not_null(f);
        snprintf(ini, sizeof ini,
                 "[host]\nautoload = no\nplugins_dir = %s\n[plugin.bad]\n"
                 "path = coprocess.so\ntypes = bad\n%s",
                 PLUGINS, cases[i].keys);
        fputs(ini, f);
        fclose(f);
        cr_assert_eq(run_argv(NULL, (const char *const[]){WHARFD, "--config",
                                                          manifest_path(),
                                                          "--check", NULL}),
                     78, "%s\n%s", ini, err);
        cr_assert(strstr(err, cases[i].error), "%s\n%s", ini, err);
    }
    /* A good section passes, and the check starts no program: the
     * command would fail if it ran. */
    manifest("[plugin.never]\npath = coprocess.so\ntypes = never\n"
             "command = /bin/false\n");
    cr_assert_eq(
        run_argv(NULL, (const char *const[]){WHARFD, "--config",
                                             manifest_path(), "--check", NULL}),
        0, "%s", err);
    cr_assert(strstr(out, "never coprocess 1.0.0 "), "%s", out);
}

/* --check says when a section's threads and inflight differ (the
 * worker's calls at once against what the program is told it may hold),
 * either way, and says nothing when they agree. */
Test(coprocess_run, check_says_when_threads_and_inflight_differ)
{
    static const struct {
        const char *keys, *said;
    } cases[] = {
        {"inflight = 32\n", "coprocess: threads = 1 but inflight = 32: the "
                            "program is never sent more than threads at once"},
        {"threads = 8\ninflight = 4\n",
         "coprocess: threads = 8 but inflight = 4: calls beyond inflight "
         "wait for a free place"},
        {"threads = 16\ninflight = 16\n", NULL},
    };
    char text[512];

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(text, sizeof text,
                 "[plugin.mismatch]\npath = coprocess.so\ntypes = mismatch\n"
                 "command = /bin/false\n%s",
                 cases[i].keys);
        manifest(text);
        cr_assert_eq(run_argv(NULL, (const char *const[]){WHARFD, "--config",
                                                          manifest_path(),
                                                          "--check", NULL}),
                     0, "%s\n%s", text, err);
        if (cases[i].said)
            cr_assert(strstr(err, cases[i].said), "%s\n%s", text, err);
        else
            cr_assert(!strstr(err, "\"plugin\":\"mismatch\""), "%s\n%s", text,
                      err);
    }
}

/* --- one real host ----------------------------------------------------- */

static test_redis redis;
static test_host host;
static redisContext *rc;
static wharf_client *client;
static int metrics_port;

static void host_down(void)
{
    wharf_client_close(client);
    client = NULL;
    test_suite_down(&redis, &rc, (test_host *const[]){&host, NULL});
}

/* The three types under one policy: three attempts, short backoffs, a
 * 2 s timeout (a restarted program's start is part of an attempt). */
#define POLICY(type)                                                           \
    "[type." type "]\nmax_attempts = 3\nbackoff_base = 10ms\n"                 \
    "backoff_max = 50ms\njitter = 0%\ntimeout = 2s\n"

static void host_up(void)
{
    char listen[64], e[256];
    test_host_opts o = {
        .host_keys = "workers = 2\n",
        .extra = SECTIONS POLICY("chaos") POLICY("pychaos") POLICY("nodechaos"),
        .metrics_listen = listen,
        .log_level = "info",
        .plugins_dir = PLUGINS,
    };

    test_need_tools((const char *const[]){"node", NULL});
    test_suite_up(&redis, 0, &rc);
    metrics_port = test_free_port();
    snprintf(listen, sizeof listen, "127.0.0.1:%d", metrics_port);
    test_host_up(&host, &redis, &o, rc);
    cr_assert_eq(wharf_client_open(&client, redis.url, NULL, NULL, e, sizeof e),
                 WHARF_CLIENT_OK, "%s", e);
}

TestSuite(coprocess_host, .init = host_up, .fini = host_down, .timeout = 120);

/* The task set: each kind of outcome once. */
static const char *const words[] = {
    "ok", "fail:1", "fatal", "later:50", "sleep:5000", "crash", "big:300000"};
#define N_WORDS (sizeof words / sizeof words[0])
/* Plus a payload of 600 bytes with NULs: not a chaos command. */
#define BINARY_LEN 600

typedef struct ending {
    wharf_task_info info;
    char *result; /* done: the result; dead: NULL */
    size_t result_len;
} ending;

typedef struct waiting {
    const char *type, *id;
    wharf_task_info info;
} waiting;

static bool finished(void *arg)
{
    waiting *w = arg;

    cr_assert_eq(wharf_task_status(client, w->type, w->id, &w->info),
                 WHARF_CLIENT_OK, "%s", wharf_client_errstr(client));
    return w->info.state == WHARF_TASK_DONE || w->info.state == WHARF_TASK_DEAD;
}

/* Enqueues payload as type; waits until it is done or dead. */
static void enqueue(const char *type, const void *payload, size_t len, char *id)
{
    wharf_enqueue_opts t = {
        .type = type, .payload = payload, .payload_len = len};
    wharf_enqueue_reply reply;

    cr_assert_eq(wharf_enqueue(client, &t, &reply), WHARF_CLIENT_OK, "%s",
                 wharf_client_errstr(client));
    snprintf(id, WHARF_ID_MAX + 1, "%s", reply.id);
    /* The same task again: a duplicate, whatever runs it. */
    cr_assert_eq(wharf_enqueue(client, &t, &reply), WHARF_CLIENT_DUPLICATE);
    cr_assert_str_eq(reply.id, id);
}

static void wait_end(const char *type, const char *id, ending *e)
{
    waiting w = {.type = type, .id = id};

    cr_assert(test_wait_until(finished, &w, TEST_EVENT_MS), "%s %s: still %s",
              type, id, wharf_task_state_name(w.info.state));
    e->info = w.info;
    e->result = NULL;
    if (w.info.state == WHARF_TASK_DONE) {
        void *data;

        cr_assert_eq(wharf_result_get(client, type, id, &data, &e->result_len),
                     WHARF_CLIENT_OK);
        e->result = data;
    }
}

/* The value of wharf_tasks_total{type,outcome}, 0 when absent. */
static long long tasks_total(const char *metrics, const char *type,
                             const char *outcome)
{
    char key[160];
    const char *at;

    snprintf(key, sizeof key, "wharf_tasks_total{type=\"%s\",outcome=\"%s\"} ",
             type, outcome);
    at = strstr(metrics, key);
    return at ? atoll(at + strlen(key)) : 0;
}

Test(coprocess_host, the_same_tasks_end_the_same_in_c_python_and_node)
{
    static const char *const types[] = {"chaos", "pychaos", "nodechaos"};
    static const char *const outcomes[] = {"ok", "retry", "dead", "cached"};
    unsigned char binary[BINARY_LEN];
    char ids[3][N_WORDS + 1][WHARF_ID_MAX + 1];
    ending ends[3][N_WORDS + 1];
    static char metrics[1 << 16];

    for (size_t i = 0; i < BINARY_LEN; i++)
        binary[i] = (unsigned char)(i % 3 ? i : 0);
    for (size_t t = 0; t < 3; t++) {
        for (size_t k = 0; k < N_WORDS; k++)
            enqueue(types[t], words[k], strlen(words[k]), ids[t][k]);
        enqueue(types[t], binary, sizeof binary, ids[t][N_WORDS]);
    }
    for (size_t t = 0; t < 3; t++)
        for (size_t k = 0; k <= N_WORDS; k++)
            wait_end(types[t], ids[t][k], &ends[t][k]);

    for (size_t k = 0; k <= N_WORDS; k++) {
        const char *what = k < N_WORDS ? words[k] : "binary";
        const ending *c = &ends[0][k];

        for (size_t t = 1; t < 3; t++) {
            const ending *e = &ends[t][k];

            cr_assert_eq(e->info.state, c->info.state, "%s %s: %s, chaos %s",
                         types[t], what, wharf_task_state_name(e->info.state),
                         wharf_task_state_name(c->info.state));
            if (c->info.state == WHARF_TASK_DONE) {
                cr_assert_eq(e->result_len, c->result_len, "%s %s", types[t],
                             what);
                cr_assert(memcmp(e->result, c->result, c->result_len) == 0,
                          "%s %s: %.40s, chaos %.40s", types[t], what,
                          e->result, c->result);
                continue;
            }
            cr_assert_eq(e->info.attempt, c->info.attempt,
                         "%s %s: dead after %u attempts, chaos %u", types[t],
                         what, e->info.attempt, c->info.attempt);
            /* A crash is a worker's death in C and a program's here: the
             * words differ, the signal does not. */
            if (strcmp(what, "crash") == 0) {
                cr_assert(strstr(c->info.error, "SIGSEGV"), "%s",
                          c->info.error);
                cr_assert(strstr(e->info.error, "handler killed by SIGSEGV"),
                          "%s %s: %s", types[t], what, e->info.error);
            } else {
                cr_assert_str_eq(e->info.error, c->info.error, "%s %s",
                                 types[t], what);
            }
        }
    }
    /* What the results and errors are, in all three. */
    cr_assert_str_eq(ends[0][0].result, "ok attempt=1");
    cr_assert_str_eq(ends[0][1].result, "ok attempt=2");
    cr_assert_str_eq(ends[0][3].result, "ok attempt=2");
    cr_assert_eq(ends[0][6].result_len, 300000);
    cr_assert_eq(ends[0][2].info.state, WHARF_TASK_DEAD);
    cr_assert_eq(ends[0][2].info.attempt, 1);
    cr_assert_str_eq(ends[0][4].info.error, "timeout after 2000 ms");
    cr_assert_eq(ends[0][4].info.attempt, 3);
    cr_assert_eq(ends[0][5].info.attempt, 3);
    cr_assert_str_eq(ends[0][N_WORDS].info.error,
                     "payload is not a chaos command");

    /* The host counted each the same. */
    cr_assert_eq(
        test_http_get(metrics_port, "/metrics", metrics, sizeof metrics), 200);
    for (size_t o = 0; o < sizeof outcomes / sizeof outcomes[0]; o++)
        for (size_t t = 1; t < 3; t++)
            cr_assert_eq(tasks_total(metrics, types[t], outcomes[o]),
                         tasks_total(metrics, "chaos", outcomes[o]),
                         "%s %s: %lld, chaos %lld", types[t], outcomes[o],
                         tasks_total(metrics, types[t], outcomes[o]),
                         tasks_total(metrics, "chaos", outcomes[o]));
    cr_assert_eq(tasks_total(metrics, "pychaos", "ok"), 4);
    for (size_t t = 0; t < 3; t++)
        for (size_t k = 0; k <= N_WORDS; k++)
            free(ends[t][k].result);
}

/* A program that dies mid-task is started again, and the host goes on
 * serving: the tasks after it all succeed, and each ran once. */
/* A workflow's child handled in Python and in Node reads what its parents
 * ended with (protocol version 2), as a C plugin does through
 * wharf_parent_result: one parent ok with its result, one dead. The sh
 * handler, which answers version 1, keeps working beside them (the frames
 * test above). */
Test(coprocess_host, a_child_reads_its_parents_in_python_and_node)
{
    static const char *const types[] = {"pychaos", "nodechaos"};
    char ok_id[WHARF_ID_MAX + 1], dead_id[WHARF_ID_MAX + 1], want[600];
    wharf_enqueue_reply reply;
    ending e;

    enqueue("chaos", "ok", 2, ok_id);
    enqueue("chaos", "fatal", 5, dead_id);
    wait_end("chaos", ok_id, &e);
    free(e.result);
    wait_end("chaos", dead_id, &e);
    free(e.result);
    snprintf(want, sizeof want, "chaos:%s=ok:ok attempt=1;chaos:%s=dead;",
             ok_id, dead_id);
    for (size_t i = 0; i < 2; i++) {
        wharf_parent parents[2] = {{.type = "chaos", .id = ok_id},
                                   {.type = "chaos", .id = dead_id}};
        wharf_after_opts o = {.type = types[i],
                              .payload = "parents",
                              .payload_len = 7,
                              .parents = parents,
                              .n_parents = 2,
                              .run_if_parent_dead = 1};

        cr_assert_eq(wharf_enqueue_after(client, &o, &reply), WHARF_CLIENT_OK,
                     "%s", wharf_client_errstr(client));
        wait_end(types[i], reply.id, &e);
        cr_assert_eq(e.info.state, WHARF_TASK_DONE, "%s: %s", types[i],
                     e.info.error);
        cr_assert_eq(e.result_len, strlen(want), "%s: %.*s", types[i],
                     (int)e.result_len, e.result);
        cr_assert(memcmp(e.result, want, e.result_len) == 0, "%s: %.*s",
                  types[i], (int)e.result_len, e.result);
        free(e.result);
    }
}

Test(coprocess_host, a_dying_program_loses_nothing)
{
    char ids[40][WHARF_ID_MAX + 1], payload[32];
    char crash_id[WHARF_ID_MAX + 1];
    ending e;
    static const char *const restarted[] = {"handler program ended: handler "
                                            "exited with status 3",
                                            "\"plugin\":\"py\"", NULL};

    enqueue("pychaos", "exit:3", 6, crash_id);
    for (int i = 0; i < 40; i++) {
        snprintf(payload, sizeof payload, "%s", i % 2 ? "ok" : "fail:1");
        /* Distinct ids: the same payload would be a duplicate. */
        wharf_enqueue_opts t = {.type = "pychaos",
                                .payload = payload,
                                .payload_len = strlen(payload)};
        wharf_enqueue_reply reply;
        char id[64];

        snprintf(id, sizeof id, "after-%d", i);
        t.id = id;
        cr_assert_eq(wharf_enqueue(client, &t, &reply), WHARF_CLIENT_OK);
        snprintf(ids[i], sizeof ids[i], "%s", id);
    }
    wait_end("pychaos", crash_id, &e);
    cr_assert_eq(e.info.state, WHARF_TASK_DEAD);
    cr_assert_eq(e.info.attempt, 3);
    cr_assert_str_eq(e.info.error, "handler exited with status 3");
    cr_assert(test_host_wait_log(&host, TEST_EVENT_MS, restarted));
    for (int i = 0; i < 40; i++) {
        wait_end("pychaos", ids[i], &e);
        cr_assert_eq(e.info.state, WHARF_TASK_DONE, "%s: %s", ids[i],
                     e.info.error);
        cr_assert_str_eq(e.result, i % 2 ? "ok attempt=1" : "ok attempt=2");
        free(e.result);
    }
}

/* SIGTERM: the task in hand finishes, then each program is stopped
 * through its stdin and exits by itself. */
Test(coprocess_host, sigterm_lets_the_task_in_hand_finish)
{
    static const char *const stopped[] = {
        "handler program stopped: handler exited with status 0",
        "\"plugin\":\"py\"", NULL};
    char id[WHARF_ID_MAX + 1];
    ending e;

    enqueue("pychaos", "sleep:1500", 10, id);
    /* In the handler, not only claimed or begun: a stop reschedules a
     * task whose plugin call has not started. */
    cr_assert(
        test_host_wait_log(&host, TEST_EVENT_MS,
                           (const char *const[]){"task started", id, NULL}),
        "never started; see %s", host.log);
    cr_assert_eq(kill(host.pid, SIGTERM), 0);
    cr_assert_eq(test_host_wait_exit(&host, TEST_EVENT_MS), 0);
    host.pid = 0;
    wait_end("pychaos", id, &e);
    cr_assert_eq(e.info.state, WHARF_TASK_DONE, "%s", e.info.error);
    cr_assert_str_eq(e.result, "ok attempt=1");
    free(e.result);
    cr_assert_geq(test_host_log_count(&host, stopped), 2, "see %s", host.log);
}

static int program_starts(void)
{
    static const char *const started[] = {"handler program started",
                                          "\"plugin\":\"py\"", NULL};

    return test_host_log_count(&host, started);
}

static bool started(void *arg)
{
    return program_starts() >= *(const int *)arg;
}

/* A reload replaces the workers, and with them their programs; the new
 * ones serve. */
Test(coprocess_host, a_reload_restarts_the_programs)
{
    static const char *const stopped[] = {
        "handler program stopped: handler exited with status 0",
        "\"plugin\":\"py\"", NULL};
    char id[WHARF_ID_MAX + 1];
    ending e;

    int two = 2, four = 4;

    /* One program per worker. */
    cr_assert(test_wait_until(started, &two, TEST_EVENT_MS), "see %s",
              host.log);
    cr_assert_eq(kill(host.pid, SIGHUP), 0);
    cr_assert(test_wait_until(started, &four, TEST_EVENT_MS),
              "no new programs; see %s", host.log);
    cr_assert_geq(test_host_log_count(&host, stopped), 2, "see %s", host.log);
    enqueue("pychaos", "ok", 2, id);
    wait_end("pychaos", id, &e);
    cr_assert_eq(e.info.state, WHARF_TASK_DONE, "%s", e.info.error);
    free(e.result);
}

/* --- one worker, many threads, one program ----------------------------- */

/* One worker whose threads share each section's one program: the gate
 * (200 in flight, Python), the hold (50, Python) and the Node gate (64).
 * `threads` and `inflight` agree in each section. */
static char threaded_dir[64];

static void threaded_path(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", threaded_dir, name);
}

static void threaded_up(void)
{
    char listen[64], e[256], gate[128], hold[128], nodegate[128], narrow[128];
    static char extra[4096];
    test_host_opts o = {
        .host_keys = "workers = 1\n",
        .extra = extra,
        .metrics_listen = listen,
        .log_level = "info",
        .plugins_dir = PLUGINS,
    };

    test_need_tools((const char *const[]){"node", NULL});
    snprintf(threaded_dir, sizeof threaded_dir,
             "/tmp/wharf-test-coprocess-XXXXXX");
    cr_assert_not_null(mkdtemp(threaded_dir));
    chmod(threaded_dir, 0755);
    threaded_path(gate, sizeof gate, "gate");
    threaded_path(hold, sizeof hold, "hold");
    threaded_path(nodegate, sizeof nodegate, "nodegate");
    threaded_path(narrow, sizeof narrow, "narrow");
    snprintf(
        extra, sizeof extra,
        "[plugin.gate]\npath = coprocess.so\ntypes = pygate\n"
        "cwd = " WHARF_SOURCE_DIR "\n" PY_CMD "pygate\n"
        "env = PYTHONPATH=clients/python:tests/handlers GATE_FILE=%s\n"
        "threads = 200\ninflight = 200\n"
        "[plugin.hold]\npath = coprocess.so\ntypes = pyhold, pyhold_short\n"
        "cwd = " WHARF_SOURCE_DIR "\n" PY_CMD "pyhold\n"
        "env = PYTHONPATH=clients/python:tests/handlers HOLD_FILE=%s\n"
        "threads = 50\ninflight = 50\n"
        "[plugin.nodegate]\npath = coprocess.so\ntypes = nodegate\n"
        "cwd = " WHARF_SOURCE_DIR "\n"
        "command = node clients/node/handler.js tests/handlers/nodegate.js\n"
        "env = GATE_FILE=%s GATE_CALLS=64\n"
        "threads = 64\ninflight = 64\n"
        "[plugin.narrow]\npath = coprocess.so\ntypes = pynarrow\n"
        "cwd = " WHARF_SOURCE_DIR "\n" PY_CMD "pyhold\n"
        "env = PYTHONPATH=clients/python:tests/handlers HOLD_FILE=%s\n"
        "threads = 4\ninflight = 2\n"
        "[plugin.echo]\npath = coprocess.so\ntypes = pychaos_async\n"
        "cwd = " WHARF_SOURCE_DIR "\n" PY_CMD "pychaos\n" PY_ENV
        "threads = 16\ninflight = 16\n"
        "[type.pychaos_async]\ntimeout = 120s\n"
        "[type.pygate]\ntimeout = 120s\n"
        "[type.nodegate]\ntimeout = 120s\n"
        "[type.pyhold]\nmax_attempts = 1\ntimeout = 120s\n"
        "[type.pyhold_short]\nmax_attempts = 1\ntimeout = 1s\n",
        gate, hold, nodegate, narrow);
    test_suite_up(&redis, 0, &rc);
    metrics_port = test_free_port();
    snprintf(listen, sizeof listen, "127.0.0.1:%d", metrics_port);
    test_host_up(&host, &redis, &o, rc);
    cr_assert_eq(wharf_client_open(&client, redis.url, NULL, NULL, e, sizeof e),
                 WHARF_CLIENT_OK, "%s", e);
}

static void threaded_down(void)
{
    char cmd[128];

    host_down();
    snprintf(cmd, sizeof cmd, "rm -rf %s", threaded_dir);
    if (system(cmd) != 0)
        cr_log_warn("cannot remove %s", threaded_dir);
}

TestSuite(coprocess_threads, .init = threaded_up, .fini = threaded_down,
          .timeout = 240);

/* Enqueues n tasks of type with ids PREFIX-0.. and payload; their ids
 * into ids. */
static void enqueue_many(const char *type, const char *prefix,
                         const char *payload, int n,
                         char (*ids)[WHARF_ID_MAX + 1])
{
    for (int i = 0; i < n; i++) {
        wharf_enqueue_opts t = {
            .type = type, .payload = payload, .payload_len = strlen(payload)};
        wharf_enqueue_reply reply;

        snprintf(ids[i], WHARF_ID_MAX + 1, "%s-%d", prefix, i);
        t.id = ids[i];
        cr_assert_eq(wharf_enqueue(client, &t, &reply), WHARF_CLIENT_OK, "%s",
                     wharf_client_errstr(client));
    }
}

/* Lines of the file at path that start with prefix. */
static int lines_with(const char *path, const char *prefix)
{
    FILE *f = fopen(path, "r");
    char line[256];
    int n = 0;

    if (f == NULL)
        return 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, prefix, strlen(prefix)) == 0)
            n++;
    fclose(f);
    return n;
}

typedef struct lines_wait {
    const char *path, *prefix;
    int want;
} lines_wait;

static bool enough_lines(void *arg)
{
    const lines_wait *w = arg;

    return lines_with(w->path, w->prefix) >= w->want;
}

/* The gate file's order: n distinct tasks in, none out before all were
 * in, then out last in first out. */
static void check_gate(const char *path, int n)
{
    char line[240], (*ins)[240] = calloc((size_t)n, sizeof *ins);
    int n_in = 0, n_out = 0;
    FILE *f = fopen(path, "r");

    cr_assert_not_null(ins);
    cr_assert_not_null(f, "%s", path);
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "in ", 3) == 0) {
            cr_assert_lt(n_in, n, "more than %d in", n);
            for (int k = 0; k < n_in; k++)
                cr_assert_str_neq(ins[k], line + 3, "%s came twice", line);
            snprintf(ins[n_in++], sizeof ins[0], "%s", line + 3);
        } else {
            cr_assert(strncmp(line, "out ", 4) == 0, "%s", line);
            cr_assert_eq(n_in, n, "an answer before all %d were in", n);
            cr_assert_str_eq(line + 4, ins[n - 1 - n_out], "answer %d", n_out);
            n_out++;
        }
    }
    fclose(f);
    free(ins);
    cr_assert_eq(n_out, n);
}

/* Programs of plugin (its section's name) started so far. */
static int starts_of(const char *plugin)
{
    char named[64];

    snprintf(named, sizeof named, "\"plugin\":\"%s\"", plugin);
    return test_host_log_count(
        &host, (const char *const[]){"handler program started", named, NULL});
}

static bool started_hold(void *arg)
{
    return starts_of("hold") >= *(const int *)arg;
}

/* 200 tasks in flight at once in one worker, through one async Python
 * program: the gate answers none until all 200 are in, then in reverse;
 * each is done once, at its first attempt. */
Test(coprocess_threads, two_hundred_in_flight_through_one_program)
{
    static char ids[200][WHARF_ID_MAX + 1];
    static char metrics[1 << 16];
    char gate[128];
    bool seen[200] = {false};
    ending e;

    threaded_path(gate, sizeof gate, "gate");
    enqueue_many("pygate", "g", "x", 200, ids);
    for (int i = 0; i < 200; i++) {
        int index;

        wait_end("pygate", ids[i], &e);
        cr_assert_eq(e.info.state, WHARF_TASK_DONE, "%s: %s", ids[i],
                     e.info.error);
        cr_assert_eq(sscanf(e.result, "gate %d", &index), 1, "%s", e.result);
        cr_assert(index >= 0 && index < 200 && !seen[index], "%s", e.result);
        seen[index] = true;
        free(e.result);
    }
    check_gate(gate, 200);
    cr_assert_eq(starts_of("gate"), 1, "see %s", host.log);
    cr_assert_eq(
        test_http_get(metrics_port, "/metrics", metrics, sizeof metrics), 200);
    cr_assert_eq(tasks_total(metrics, "pygate", "ok"), 200);
    cr_assert_eq(tasks_total(metrics, "pygate", "retry"), 0);
}

/* The held tasks' program's pid, from the hold file's "in ID PID" lines
 * (all the same pid). */
static long held_pid(const char *path, int want)
{
    FILE *f = fopen(path, "r");
    char line[256], id[128];
    long pid = 0, p;
    int n = 0;

    cr_assert_not_null(f);
    while (fgets(line, sizeof line, f)) {
        cr_assert_eq(sscanf(line, "in %127s %ld", id, &p), 2, "%s", line);
        cr_assert(pid == 0 || p == pid, "two programs held tasks");
        pid = p;
        n++;
    }
    fclose(f);
    cr_assert_eq(n, want);
    return pid;
}

/* Opens the gate of the tasks held at path (its ".go" file). */
static void open_gate(const char *path)
{
    char go[140];
    FILE *f;

    snprintf(go, sizeof go, "%s.go", path);
    f = fopen(go, "w");
    cr_assert_not_null(f);
    cr_assert_eq(fclose(f), 0);
}

/* Waits for each of the n held tasks of type in ids: done, with "ok PID",
 * PID the one program's that held them. */
static void assert_held_done(const char *type, char (*ids)[WHARF_ID_MAX + 1],
                             int n, long pid)
{
    char ok[64];
    ending e;

    snprintf(ok, sizeof ok, "ok %ld", pid);
    for (int i = 0; i < n; i++) {
        wait_end(type, ids[i], &e);
        cr_assert_eq(e.info.state, WHARF_TASK_DONE, "%s: %s", ids[i],
                     e.info.error);
        cr_assert_str_eq(e.result, ok, "%s", ids[i]);
        free(e.result);
    }
}

/* A program killed with 50 tasks in flight: exactly those 50 are charged,
 * with the reason; the program is started again once, and the rest of
 * the queue is served by the new one, none of it charged. */
Test(coprocess_threads, a_program_killed_with_fifty_in_flight)
{
    static char held[50][WHARF_ID_MAX + 1], rest[100][WHARF_ID_MAX + 1];
    static char metrics[1 << 16];
    char path[128], killed[64];
    lines_wait w = {.path = path, .prefix = "in ", .want = 50};
    long pid;
    ending e;

    threaded_path(path, sizeof path, "hold");
    enqueue_many("pyhold", "held", "hold", 50, held);
    enqueue_many("pyhold", "rest", "ok", 100, rest);
    cr_assert(test_wait_until(enough_lines, &w, TEST_EVENT_MS),
              "%d of 50 in flight; see %s", lines_with(path, "in "), host.log);
    pid = held_pid(path, 50);
    cr_assert_eq(kill((pid_t)pid, SIGKILL), 0);
    for (int i = 0; i < 50; i++) {
        wait_end("pyhold", held[i], &e);
        cr_assert_eq(e.info.state, WHARF_TASK_DEAD, "%s", held[i]);
        cr_assert_eq(e.info.attempt, 1);
        cr_assert_str_eq(e.info.error, "handler killed by SIGKILL");
    }
    snprintf(killed, sizeof killed, "ok %ld", pid);
    for (int i = 0; i < 100; i++) {
        wait_end("pyhold", rest[i], &e);
        cr_assert_eq(e.info.state, WHARF_TASK_DONE, "%s: %s", rest[i],
                     e.info.error);
        cr_assert_str_neq(e.result, killed, "%s ran in the killed program",
                          rest[i]);
        free(e.result);
    }
    /* Started again once, not once per thread that held a task. */
    cr_assert_eq(starts_of("hold"), 2, "see %s", host.log);
    cr_assert_eq(
        test_http_get(metrics_port, "/metrics", metrics, sizeof metrics), 200);
    cr_assert_eq(tasks_total(metrics, "pyhold", "dead"), 50);
    cr_assert_eq(tasks_total(metrics, "pyhold", "ok"), 100);
}

/* Among many in flight, one task's deadline passes: it alone is
 * cancelled through the protocol and times out; the program answers the
 * cancel, so it is not killed, and the others finish in it. */
Test(coprocess_threads, a_deadline_cancels_one_of_many)
{
    static char parked[20][WHARF_ID_MAX + 1], late[1][WHARF_ID_MAX + 1];
    char path[128];
    lines_wait w = {.path = path, .prefix = "in parked", .want = 20};
    long pid;
    int n;
    ending e;

    threaded_path(path, sizeof path, "hold");
    enqueue_many("pyhold", "parked", "wait", 20, parked);
    enqueue_many("pyhold_short", "late", "hold", 1, late);
    cr_assert(test_wait_until(enough_lines, &w, TEST_EVENT_MS),
              "%d of 20 in flight; see %s", lines_with(path, "in parked"),
              host.log);
    /* The 20 stay in flight until the file below: the late task's whole
     * run is among them. */
    wait_end("pyhold_short", late[0], &e);
    cr_assert_eq(e.info.state, WHARF_TASK_DEAD);
    cr_assert_str_eq(e.info.error, "timeout after 1000 ms");
    /* Its cancel may have come before its handler started writing. */
    n = lines_with(path, "in ");
    cr_assert(n == 20 || n == 21, "%d", n);
    pid = held_pid(path, n);
    open_gate(path);
    assert_held_done("pyhold", parked, 20, pid);
    cr_assert_eq(starts_of("hold"), 1, "see %s", host.log);
}

/* SIGTERM with 30 tasks in flight in one program: the worker lets every
 * one of them finish, then the program exits by itself. */
Test(coprocess_threads, sigterm_drains_many_in_flight)
{
    static char parked[30][WHARF_ID_MAX + 1];
    static const char *const stopping[] = {"stopping: running tasks may "
                                           "finish",
                                           NULL};
    static const char *const stopped[] = {
        "handler program stopped: handler exited with status 0",
        "\"plugin\":\"hold\"", NULL};
    char path[128];
    long pid;
    lines_wait w = {.path = path, .prefix = "in ", .want = 30};

    threaded_path(path, sizeof path, "hold");
    enqueue_many("pyhold", "drain", "wait", 30, parked);
    cr_assert(test_wait_until(enough_lines, &w, TEST_EVENT_MS),
              "%d of 30 in flight; see %s", lines_with(path, "in "), host.log);
    pid = held_pid(path, 30);
    cr_assert_eq(kill(host.pid, SIGTERM), 0);
    cr_assert(test_host_wait_log(&host, TEST_EVENT_MS, stopping), "see %s",
              host.log);
    open_gate(path);
    cr_assert_eq(test_host_wait_exit(&host, TEST_EVENT_MS), 0);
    host.pid = 0;
    assert_held_done("pyhold", parked, 30, pid);
    /* Each ran once: no second arrival at a program. */
    cr_assert_eq(lines_with(path, "in "), 30);
    /* Then the worker's fini stops the program. Not under make test-tsan:
     * there a worker with threads ends in TSan's "dup thread" exit (66,
     * the Makefile's DUP_THREAD note) before its fini. */
    if (getenv("WHARF_TEST_BUILD") == NULL)
        cr_assert_eq(test_host_log_count(&host, stopped), 1, "see %s",
                     host.log);
}

/* A Node handler with 64 in flight in one program: none answered until
 * all 64 are in, then in reverse; each done once. */
Test(coprocess_threads, a_node_handler_with_many_in_flight)
{
    static char ids[64][WHARF_ID_MAX + 1];
    static char metrics[1 << 16];
    char gate[128];
    ending e;

    threaded_path(gate, sizeof gate, "nodegate");
    enqueue_many("nodegate", "n", "x", 64, ids);
    for (int i = 0; i < 64; i++) {
        wait_end("nodegate", ids[i], &e);
        cr_assert_eq(e.info.state, WHARF_TASK_DONE, "%s: %s", ids[i],
                     e.info.error);
        free(e.result);
    }
    check_gate(gate, 64);
    cr_assert_eq(starts_of("nodegate"), 1, "see %s", host.log);
    cr_assert_eq(
        test_http_get(metrics_port, "/metrics", metrics, sizeof metrics), 200);
    cr_assert_eq(tasks_total(metrics, "nodegate", "ok"), 64);
    cr_assert_eq(tasks_total(metrics, "nodegate", "retry"), 0);
}

/* A reload with 30 tasks in flight in one program: they finish in it,
 * then the new worker's program serves what comes next. */
Test(coprocess_threads, a_reload_with_many_in_flight)
{
    static char parked[30][WHARF_ID_MAX + 1], after[1][WHARF_ID_MAX + 1];
    static const char *const replacing[] = {
        "reload checked; replacing the workers", NULL};
    char path[128], ok[64];
    long pid;
    lines_wait w = {.path = path, .prefix = "in ", .want = 30};
    int two = 2;
    ending e;

    threaded_path(path, sizeof path, "hold");
    enqueue_many("pyhold", "reload", "wait", 30, parked);
    cr_assert(test_wait_until(enough_lines, &w, TEST_EVENT_MS),
              "%d of 30 in flight; see %s", lines_with(path, "in "), host.log);
    pid = held_pid(path, 30);
    snprintf(ok, sizeof ok, "ok %ld", pid);
    cr_assert_eq(kill(host.pid, SIGHUP), 0);
    cr_assert(test_host_wait_log(&host, TEST_EVENT_MS, replacing), "see %s",
              host.log);
    open_gate(path);
    assert_held_done("pyhold", parked, 30, pid);
    cr_assert_eq(lines_with(path, "in "), 30);
    cr_assert(test_wait_until(started_hold, &two, TEST_EVENT_MS), "see %s",
              host.log);
    enqueue_many("pyhold", "after", "ok", 1, after);
    wait_end("pyhold", after[0], &e);
    cr_assert_eq(e.info.state, WHARF_TASK_DONE, "%s", e.info.error);
    cr_assert_str_neq(e.result, ok, "served by the old program");
    free(e.result);
}

/* More threads than places (threads = 4, inflight = 2): two tasks are in
 * the program, the other two calls wait for a place, the worker says so
 * once, and all four finish in the one program. */
Test(coprocess_threads, more_threads_than_places_wait_and_say_so)
{
    static char parked[4][WHARF_ID_MAX + 1];
    static const char *const said[] = {
        "coprocess: more calls at once than inflight = 2",
        "\"plugin\":\"narrow\"", NULL};
    char path[128];
    long pid;
    lines_wait w = {.path = path, .prefix = "in ", .want = 2};

    threaded_path(path, sizeof path, "narrow");
    enqueue_many("pynarrow", "narrow", "wait", 4, parked);
    cr_assert(test_wait_until(enough_lines, &w, TEST_EVENT_MS),
              "%d of 2 in flight; see %s", lines_with(path, "in "), host.log);
    cr_assert(test_host_wait_log(&host, TEST_EVENT_MS, said), "see %s",
              host.log);
    /* Two places: the others are not in the program yet. */
    cr_assert_eq(lines_with(path, "in "), 2);
    pid = held_pid(path, 2);
    open_gate(path);
    assert_held_done("pynarrow", parked, 4, pid);
    cr_assert_eq(lines_with(path, "in "), 4);
    cr_assert_eq(test_host_log_count(&host, said), 1, "see %s", host.log);
}

/* 48 payloads of 256 KiB through one program with 16 in flight: frames
 * far larger than a pipe holds, written by many calls while others read
 * the answers; each comes back whole. */
Test(coprocess_threads, big_frames_with_many_in_flight)
{
    enum { N = 48, LEN = 256 * 1024 };
    static char ids[N][WHARF_ID_MAX + 1];
    unsigned char *payload = malloc(LEN);
    ending e;

    cr_assert_not_null(payload);
    for (int i = 0; i < N; i++) {
        wharf_enqueue_opts t = {
            .type = "pychaos_async", .payload = payload, .payload_len = LEN};
        wharf_enqueue_reply reply;

        memcpy(payload, "echo:", 5);
        for (size_t k = 5; k < LEN; k++)
            payload[k] = (unsigned char)(k * 7 + (size_t)i);
        snprintf(ids[i], sizeof ids[i], "big-%d", i);
        t.id = ids[i];
        cr_assert_eq(wharf_enqueue(client, &t, &reply), WHARF_CLIENT_OK, "%s",
                     wharf_client_errstr(client));
    }
    for (int i = 0; i < N; i++) {
        wait_end("pychaos_async", ids[i], &e);
        cr_assert_eq(e.info.state, WHARF_TASK_DONE, "%s: %s", ids[i],
                     e.info.error);
        cr_assert_eq(e.result_len, (size_t)LEN, "%s", ids[i]);
        for (size_t k = 5; k < LEN; k++)
            if ((unsigned char)e.result[k] !=
                (unsigned char)(k * 7 + (size_t)i))
                cr_assert_fail("%s: byte %zu differs", ids[i], k);
        free(e.result);
    }
    free(payload);
    cr_assert_eq(starts_of("echo"), 1, "see %s", host.log);
}
