/* The wharf CLI (host/cli/), run as a program against a private
 * redis-server: what each command prints on stdout, its one-line errors on
 * stderr, and its exit codes (0, 1, 64, 65, 69, 75, 78). Dead sets, locks
 * and queues are built by hand in Redis as the data contract lays them
 * out. */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <regex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "redis_server.h"

#define WHARF WHARF_BINARY_DIR "/wharf"
#define MAX_ARGS 32

static test_redis server;
static redisContext *redis;
static char dir[200]; /* the test's folder, symlink-free */

static void setup(void)
{
    char tmpl[] = "/tmp/wharf-test-cli-XXXXXX";
    char *real;

    test_redis_start(&server, 0);
    redis = test_redis_connect(&server);
    cr_assert_not_null(mkdtemp(tmpl), "mkdtemp: %s", strerror(errno));
    real = realpath(tmpl, NULL);

    cr_assert_not_null(real, "realpath: %s", strerror(errno));
    cr_assert(strlen(real) < sizeof(dir));
    strcpy(dir, real);
    free(real);
}

static void teardown(void)
{
    char cmd[128];

    if (redis)
        redisFree(redis);
    redis = NULL;
    test_redis_stop(&server);
    snprintf(cmd, sizeof(cmd), "rm -rf '%.100s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

TestSuite(cli, .init = setup, .fini = teardown, .timeout = 300);

/* What one run of wharf did. */
typedef struct run {
    int status; /* exit code; 128 + signal if killed */
    char out[4 << 20];
    size_t out_len;
    char err[1 << 16];
    size_t err_len;
    long long ms; /* how long it took */
} run;

static run result; /* large: static, one per test process */

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static size_t slurp(FILE *f, char *buf, size_t cap)
{
    size_t n;

    rewind(f);
    n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
    return n;
}

/* Runs wharf with args (NULL-terminated list), input on stdin (NULL: an
 * empty stdin), and "NAME=value" strings of env set in its environment
 * (WHARF_REDIS_URL and WHARF_REDIS_PASSWORD are cleared first). */
static run *run_argv(const char *input, size_t input_len,
                     const char *const *env, const char **args)
{
    FILE *in = tmpfile(), *out = tmpfile(), *err = tmpfile();
    const char *argv[MAX_ARGS + 2];
    int n = 0, status;
    pid_t pid;

    cr_assert(in && out && err);
    if (input && input_len > 0)
        cr_assert_eq(fwrite(input, 1, input_len, in), input_len);
    fflush(in);
    rewind(in);
    argv[n++] = WHARF;
    for (; args[n - 1] && n <= MAX_ARGS; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    result.ms = now_ms();
    pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        dup2(fileno(in), STDIN_FILENO);
        dup2(fileno(out), STDOUT_FILENO);
        dup2(fileno(err), STDERR_FILENO);
        unsetenv("WHARF_REDIS_URL");
        unsetenv("WHARF_REDIS_PASSWORD");
        for (size_t i = 0; env && env[i]; i++)
            putenv((char *)env[i]);
        execv(WHARF, (char *const *)argv);
        _exit(127);
    }
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    result.ms = now_ms() - result.ms;
    result.status =
        WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    fclose(in);
    result.out_len = slurp(out, result.out, sizeof(result.out));
    result.err_len = slurp(err, result.err, sizeof(result.err));
    return &result;
}

static run *run_with(const char *input, size_t input_len,
                     const char *const *env, ...)
{
    const char *args[MAX_ARGS + 1];
    va_list ap;
    int n = 0;

    va_start(ap, env);
    while (n < MAX_ARGS && (args[n] = va_arg(ap, const char *)) != NULL)
        n++;
    va_end(ap);
    args[n] = NULL;
    return run_argv(input, input_len, env, args);
}

/* wharf --redis <the test server> args... */
#define wharf(...)                                                             \
    run_with(NULL, 0, NULL, "--redis", server.url, __VA_ARGS__, NULL)
/* the same, with stdin */
#define wharf_in(data, len, ...)                                               \
    run_with((data), (len), NULL, "--redis", server.url, __VA_ARGS__, NULL)

static int lines(const char *text)
{
    int n = 0;
    for (; *text; text++)
        n += *text == '\n';
    return n;
}

static int matches(const char *pattern, const char *text)
{
    regex_t re;
    int ok;

    cr_assert_eq(regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB), 0,
                 "bad pattern %s", pattern);
    ok = regexec(&re, text, 0, NULL, 0) == 0;
    regfree(&re);
    return ok;
}

/* An error: the exit code and exactly one line on stderr that says it. */
static void assert_error(const run *r, int status, const char *prefix)
{
    cr_assert_eq(r->status, status, "exit %d, want %d; stderr: %s", r->status,
                 status, r->err);
    cr_assert_eq(lines(r->err), 1, "one line on stderr: %s", r->err);
    cr_assert_eq(strncmp(r->err, prefix, strlen(prefix)), 0,
                 "stderr '%s' should start with '%s'", r->err, prefix);
}

/* A usage error: exit 64, the reason, then the short usage. */
static void assert_usage(const run *r, const char *reason)
{
    cr_assert_eq(r->status, 64, "exit %d; stderr: %s", r->status, r->err);
    cr_assert(strstr(r->err, reason), "stderr '%s' lacks '%s'", r->err, reason);
    cr_assert(strstr(r->err, "usage:"), "no usage in '%s'", r->err);
    cr_assert_eq(r->out_len, 0);
}

static void command(const char *fmt, ...)
{
    va_list ap;
    redisReply *reply;

    va_start(ap, fmt);
    reply = redisvCommand(redis, fmt, ap);
    va_end(ap);
    cr_assert_not_null(reply, "redis: %s", redis->errstr);
    cr_assert_neq(reply->type, REDIS_REPLY_ERROR, "redis: %s", reply->str);
    freeReplyObject(reply);
}

static void write_file(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");

    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    cr_assert_eq(fwrite(text, 1, len, f), len);
    fclose(f);
}

/* A key's field of the only stream entry; caller frees *reply. */
static const redisReply *stream_field(redisReply **reply, const char *stream,
                                      const char *name)
{
    redisReply *r = test_redis_command(redis, "XRANGE %s - +", stream);
    const redisReply *f;

    *reply = r;
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 1, "%zu entries", r->elements);
    f = r->element[0]->element[1];
    for (size_t i = 0; i + 1 < f->elements; i += 2)
        if (strcmp(f->element[i]->str, name) == 0)
            return f->element[i + 1];
    return NULL;
}

/* Sets key to value after ms, from a child process. */
static pid_t later(int ms, const char *cmd, const char *key, const char *value)
{
    pid_t pid = fork();

    cr_assert(pid >= 0);
    if (pid == 0) {
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        redisContext *c;
        nanosleep(&ts, NULL);
        c = redisConnect("127.0.0.1", server.port);
        if (c && !c->err)
            freeReplyObject(value ? redisCommand(c, "%s %s %s", cmd, key, value)
                                  : redisCommand(c, "%s %s", cmd, key));
        _exit(0);
    }
    return pid;
}

/* Calls of EVALSHA the server has run: each enqueue attempt is one. */
static long long evalsha_calls(redisContext *c)
{
    redisReply *r = test_redis_command(c, "INFO commandstats");
    const char *at;
    long long calls = 0;

    cr_assert_eq(r->type, REDIS_REPLY_STRING);
    at = strstr(r->str, "cmdstat_evalsha:calls=");
    if (at)
        calls = strtoll(at + strlen("cmdstat_evalsha:calls="), NULL, 10);
    freeReplyObject(r);
    return calls;
}

/* Runs "cmd key" from a child process once the server has run more than
 * `calls` EVALSHA, i.e. once a wharf started after reading `calls` has
 * made its first enqueue attempt; so an attempt is refused before room
 * is made, whatever the machine's load (a fixed delay is a window). */
static pid_t after_attempt(long long calls, const char *cmd, const char *key)
{
    pid_t pid = fork();

    cr_assert(pid >= 0);
    if (pid == 0) {
        redisContext *c = redisConnect("127.0.0.1", server.port);
        struct timespec ts = {0, 5 * 1000000L};
        if (!c || c->err)
            _exit(1);
        for (int i = 0; i < 24000; i++) { /* at least two minutes */
            redisReply *r = redisCommand(c, "INFO commandstats");
            const char *at = r && r->type == REDIS_REPLY_STRING
                                 ? strstr(r->str, "cmdstat_evalsha:calls=")
                                 : NULL;
            long long now =
                at ? strtoll(at + strlen("cmdstat_evalsha:calls="), NULL, 10)
                   : 0;
            freeReplyObject(r);
            if (now > calls)
                break;
            nanosleep(&ts, NULL);
        }
        freeReplyObject(redisCommand(c, "%s %s", cmd, key));
        redisFree(c);
        _exit(0);
    }
    return pid;
}

#define HEX64 "[0-9a-f]{64}"

/* ---- enqueue ---- */

/* A host serves type: its policy is published. */
static void served(const char *type)
{
    freeReplyObject(test_redis_command(
        redis, "HSET wharf:{%s}:policy idempotency payload protocol 1", type));
    freeReplyObject(test_redis_command(redis, "SADD wharf:types %s", type));
}

Test(cli, enqueue_prints_the_id_alone)
{
    run *r;
    char id[80];
    redisReply *x;

    served("echo");
    r = wharf("enqueue", "echo", "{\"a\":1}");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert(matches("^" HEX64 "\n$", r->out), "stdout: %s", r->out);
    cr_assert_eq(r->err_len, 0, "stderr: %s", r->err);
    memcpy(id, r->out, 64);
    id[64] = '\0';
    cr_assert_str_eq(stream_field(&x, "wharf:{echo}:stream", "id")->str, id);
    freeReplyObject(x);
    cr_assert_str_eq(stream_field(&x, "wharf:{echo}:stream", "payload")->str,
                     "{\"a\":1}");
    freeReplyObject(x);

    r = wharf("enqueue", "echo", "{\"a\":1}");
    cr_assert_eq(r->status, 0);
    cr_assert_eq(strncmp(r->out, id, 64), 0, "same id: %s", r->out);
    cr_assert_eq(r->out_len, 65);
    cr_assert_eq(lines(r->err), 1);
    cr_assert(strstr(r->err, "duplicate"), "stderr: %s", r->err);
    cr_assert_eq(test_redis_int(redis, "XLEN wharf:{echo}:stream"), 1);
}

Test(cli, enqueue_reads_stdin_binary_safe)
{
    const char payload[] = {'x', '\0', 'y', '\n', (char)0x80};
    redisReply *x;
    const redisReply *p;
    run *r = wharf_in(payload, sizeof(payload), "enqueue", "bin", "-");

    cr_assert_eq(r->status, 0, "%s", r->err);
    p = stream_field(&x, "wharf:{bin}:stream", "payload");
    cr_assert_eq(p->len, sizeof(payload));
    cr_assert_eq(memcmp(p->str, payload, sizeof(payload)), 0);
    freeReplyObject(x);
    /* No PAYLOAD reads stdin too; same bytes: a duplicate. */
    r = wharf_in(payload, sizeof(payload), "enqueue", "bin");
    cr_assert_eq(r->status, 0);
    cr_assert(strstr(r->err, "duplicate"));
}

Test(cli, enqueue_options)
{
    const char *tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    redisReply *x;
    long long due;
    run *r = wharf("enqueue", "opt", "p", "--id", "job-7", "--trace", tp);

    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_str_eq(r->out, "job-7\n");
    cr_assert_str_eq(stream_field(&x, "wharf:{opt}:stream", "trace")->str, tp);
    freeReplyObject(x);
    r = wharf("enqueue", "--delay", "5s", "opt", "q", "--id", "job-8");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_str_eq(r->out, "job-8\n");
    due = test_redis_int(redis, "ZSCORE wharf:{opt}:delayed job-8");
    cr_assert(due > 0);
    cr_assert_eq(test_redis_int(redis, "HEXISTS wharf:{opt}:task:job-8 id"), 1);
    r = wharf("enqueue", "opt", "--", "-5");
    cr_assert_eq(r->status, 0, "a payload that looks like an option: %s",
                 r->err);
}

Test(cli, enqueue_bad_input_is_65)
{
    char long_id[210];

    memset(long_id, 'a', 201);
    long_id[201] = '\0';
    assert_error(wharf("enqueue", "a b", "x"), 65,
                 "wharf: enqueue: type 'a b' is not valid: use 1-100 of "
                 "A-Z a-z 0-9 . _ -\n");
    assert_error(wharf("enqueue", "t", "x", "--id", "has space"), 65,
                 "wharf: enqueue: task id 'has space' is not valid");
    assert_error(wharf("enqueue", "t", "x", "--id", long_id), 65,
                 "wharf: enqueue: task id ");
    assert_error(wharf("enqueue", "t", "x", "--trace", "00-abc"), 65,
                 "wharf: enqueue: trace '00-abc' is not a W3C traceparent");
    command("HSET wharf:{small}:policy max_payload 3");
    assert_error(wharf("enqueue", "small", "four"), 65,
                 "wharf: enqueue: payload of 4 bytes is over max_payload 3 "
                 "of type 'small'\n");
    cr_assert_eq(test_redis_int(redis, "DBSIZE"), 1, "nothing written");
}

Test(cli, usage_errors_are_64)
{
    assert_usage(wharf("enqueue"), "wharf: enqueue: missing TYPE");
    assert_usage(wharf("enqueue", "t", "x", "--bogus"),
                 "wharf: enqueue: unknown option '--bogus'");
    assert_usage(wharf("enqueue", "t", "x", "--delay"),
                 "option '--delay' needs a value");
    assert_usage(wharf("enqueue", "t", "x", "--delay", "soon"),
                 "--delay 'soon' is not a duration");
    assert_usage(wharf("enqueue", "t", "x", "y"), "unexpected argument 'y'");
    assert_usage(wharf("enqueue", "t", "x", "--file", "f"),
                 "a PAYLOAD or --file");
    assert_usage(wharf("frob"), "wharf: unknown command 'frob'");
    assert_usage(wharf("dead"), "wharf: dead: missing a command");
    assert_usage(wharf("dead", "frob"), "wharf: dead: unknown command 'frob'");
    assert_usage(wharf("result", "t"), "wharf: result: missing ID");
    assert_usage(wharf("stats", "extra"), "unexpected argument 'extra'");
    assert_usage(wharf("dead", "replay", "t"), "missing ID, --all or a filter");
    assert_usage(wharf("locks", "release", "t"), "missing ID");
    assert_usage(run_with(NULL, 0, NULL, "--bogus", "stats", NULL),
                 "wharf: unknown option '--bogus'");
    assert_usage(run_with(NULL, 0, NULL, NULL), "wharf: missing a command");
}

/* A bad address is configuration wherever it came from: --redis, the
 * manifest or WHARF_REDIS_URL all exit 78 (README, "Exit codes"). */
Test(cli, a_bad_redis_url_is_78_from_the_command_line_too)
{
    static const char *const envs[] = {"WHARF_REDIS_URL=http://x", NULL};

    assert_error(run_with(NULL, 0, NULL, "--redis", "bogus", "stats", NULL), 78,
                 "wharf: --redis: bad Redis URL 'bogus'");
    assert_error(run_with(NULL, 0, NULL, "--redis", "http://x", "stats", NULL),
                 78, "wharf: --redis: bad Redis URL 'http://x'");
    assert_error(run_with(NULL, 0, envs, "stats", NULL), 78,
                 "wharf: WHARF_REDIS_URL: bad Redis URL 'http://x'");
}

/* True if text holds a byte a terminal would act on (below 0x20 but the
 * newline that ends a line, or 0x7f and up). */
static int has_control(const char *text)
{
    for (const unsigned char *c = (const unsigned char *)text; *c; c++)
        if ((*c < 0x20 && *c != '\n') || *c >= 0x7f)
            return 1;
    return 0;
}

/* Whatever the user typed is echoed as the type and id rule shows it
 * (quote_text: '?' for every byte outside 0x20..0x7e), so an escape
 * sequence in an operand, option, path or URL cannot reach the terminal.
 * The cases are the ones a terminal would act on. */
Test(cli, control_characters_never_reach_the_terminal)
{
    static const char esc[] = "fr\033[2Job";
    static char env[64];
    const char *envs[] = {env, NULL};
    char path[300];
    run *r;

    r = wharf(esc);
    assert_usage(r, "wharf: unknown command 'fr?[2Job'");
    cr_assert(!has_control(r->err), "%s", r->err);
    r = wharf("dead", esc);
    assert_usage(r, "wharf: dead: unknown command 'fr?[2Job'");
    r = run_with(NULL, 0, NULL, "--x\033[2J", "stats", NULL);
    assert_usage(r, "wharf: unknown option '--x?[2J'");
    cr_assert(!has_control(r->err), "%s", r->err);
    r = wharf("stats", "--x\033[2J");
    assert_usage(r, "wharf: stats: unknown option '--x?[2J'");
    r = wharf("stats", esc);
    assert_usage(r, "unexpected argument 'fr?[2Job'");
    cr_assert(!has_control(r->err), "%s", r->err);
    r = wharf("enqueue", "t", "--delay", esc);
    assert_usage(r, "--delay 'fr?[2Job' is not a duration");
    r = wharf("enqueue", "t", "--file", esc);
    assert_error(r, 66, "wharf: enqueue: cannot open 'fr?[2Job'");
    r = run_with(NULL, 0, NULL, "--redis", "redis://h\033[2J", "stats", NULL);
    assert_error(r, 78, "wharf: --redis: bad Redis URL 'redis://h?[2J'");
    snprintf(env, sizeof(env), "WHARF_REDIS_URL=%s", "x\033[2J");
    r = run_with(NULL, 0, envs, "stats", NULL);
    assert_error(r, 78, "wharf: WHARF_REDIS_URL: bad Redis URL 'x?[2J'");
    snprintf(path, sizeof(path), "%s/m\033[2J.ini", dir);
    r = run_with(NULL, 0, NULL, "--config", path, "stats", NULL);
    assert_error(r, 78, "wharf: ");
    cr_assert(strstr(r->err, "/m?[2J.ini: cannot open"), "%s", r->err);
    cr_assert(!has_control(r->err), "%s", r->err);
}

/* A path that is no manifest (/dev/zero would be read without end) is
 * refused at once, in one line. */
Test(cli, a_manifest_that_is_not_a_regular_file_is_78)
{
    run *r = run_with(NULL, 0, NULL, "--config", "/dev/zero", "stats", NULL);

    assert_error(r, 78, "wharf: /dev/zero: not a regular file");
    r = run_with(NULL, 0, NULL, "--config", dir, "stats", NULL);
    assert_error(r, 78, "wharf: ");
    cr_assert(strstr(r->err, "not a regular file (a directory)"), "%s", r->err);
}

/* A stream key of the wrong kind: the enqueue is refused in one line that
 * does not say "enqueue" twice, nothing is written (no seen marker that
 * would make the next try a "duplicate" of a task that exists nowhere),
 * and once the key is fixed the same enqueue goes in. */
Test(cli, an_enqueue_into_a_key_of_the_wrong_kind_writes_nothing)
{
    run *r;

    command("SET wharf:{wt}:stream oops");
    r = wharf("enqueue", "wt", "same payload");
    assert_error(r, 70,
                 "wharf: enqueue: redis answered: WRONGTYPE wharf:{wt}:stream "
                 "holds a string, not a stream: nothing was enqueued");
    cr_assert_eq(test_redis_int(redis, "DBSIZE"), 1, "a key was written");
    command("DEL wharf:{wt}:stream");
    r = wharf("enqueue", "wt", "same payload");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_null(strstr(r->err, "duplicate"), "%s", r->err);
    cr_assert_eq(test_redis_int(redis, "XLEN wharf:{wt}:stream"), 1);
}

Test(cli, help_goes_to_stdout)
{
    run *r = run_with(NULL, 0, NULL, "--help", NULL);

    cr_assert_eq(r->status, 0);
    cr_assert(strstr(r->out, "wharf dead replay TYPE (ID | --all | "), "%s",
              r->out);
    r = wharf("enqueue", "--help");
    cr_assert_eq(r->status, 0);
    cr_assert(strstr(r->out, "usage: wharf enqueue TYPE"), "%s", r->out);
}

/* Every command's --help says what it does, its options and its exit
 * codes, not only a usage line. */
Test(cli, every_command_has_a_real_help)
{
    static const char *const commands[][2] = {
        {"enqueue", NULL},  {"result", NULL}, {"stats", NULL},
        {"dead", "list"},   {"dead", "show"}, {"dead", "replay"},
        {"dead", "purge"},  {"locks", "list"}, {"locks", "release"},
        {"run", NULL},      {"top", NULL}};

    for (size_t i = 0; i < sizeof(commands) / sizeof(*commands); i++) {
        run *r = commands[i][1]
                     ? wharf(commands[i][0], commands[i][1], "--help")
                     : wharf(commands[i][0], "--help");
        cr_assert_eq(r->status, 0, "%s %s", commands[i][0],
                     commands[i][1] ? commands[i][1] : "");
        cr_assert(strstr(r->out, "usage: wharf "), "%s", r->out);
        cr_assert(strstr(r->out, "\nExit: 0"), "%s %s: no exit codes in\n%s",
                  commands[i][0], commands[i][1] ? commands[i][1] : "",
                  r->out);
        cr_assert_gt(strlen(r->out), 120, "%s", r->out);
    }
}

Test(cli, unreachable_redis_is_69)
{
    int port = server.port;
    char url[64];

    test_redis_stop(&server);
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d/0", port);
    assert_error(
        run_with(NULL, 0, NULL, "--redis", url, "enqueue", "t", "x", NULL), 69,
        "wharf: enqueue: redis://127.0.0.1:");
    cr_assert(strstr(result.err, "Connection refused"), "%s", result.err);
    assert_error(run_with(NULL, 0, NULL, "--redis", url, "stats", NULL), 69,
                 "wharf: stats: ");
    assert_error(
        run_with(NULL, 0, NULL, "--redis", url, "result", "t", "i", NULL), 69,
        "wharf: result: ");
    /* Bad input is still refused first. */
    assert_error(
        run_with(NULL, 0, NULL, "--redis", url, "enqueue", "a b", "x", NULL),
        65, "wharf: enqueue: type");
}

Test(cli, backpressure_is_75_and_wait_retries)
{
    pid_t child;

    command("HSET wharf:{bp}:policy max_backlog 1");
    cr_assert_eq(wharf("enqueue", "bp", "one")->status, 0);
    assert_error(wharf("enqueue", "bp", "two"), 75,
                 "wharf: enqueue: type 'bp' is at its backlog limit "
                 "(max_backlog 1): try later\n");
    cr_assert_eq(result.out_len, 0);
    assert_error(wharf("enqueue", "bp", "two", "--wait", "300ms"), 75,
                 "wharf: enqueue: type 'bp'");
    cr_assert(result.ms >= 290, "waited %lld ms", result.ms);
    /* Room appears after the first refused attempt: --wait gets the
     * task in (the deadline is only how long a loaded machine may take). */
    {
        long long calls = evalsha_calls(redis);
        child = after_attempt(calls, "DEL", "wharf:{bp}:stream");
        run *r = wharf("enqueue", "bp", "two", "--wait", "120s");
        cr_assert_eq(r->status, 0, "%s", r->err);
        cr_assert(matches("^" HEX64 "\n$", r->out));
        cr_assert(evalsha_calls(redis) >= calls + 2,
                  "refused first, then accepted: two attempts at least");
    }
    waitpid(child, NULL, 0);
}

/* ---- enqueue --file ---- */

Test(cli, enqueue_file_prints_ids_in_order)
{
    char path[300], text[4096] = "";
    run *r;
    int n = 0;

    snprintf(path, sizeof(path), "%s/tasks.jsonl", dir);
    for (int i = 0; i < 100; i++)
        n += snprintf(text + n, sizeof(text) - (size_t)n, "{\"n\":%d}\n", i);
    n += snprintf(text + n, sizeof(text) - (size_t)n, "\n{\"crlf\":1}\r\n");
    write_file(path, text, (size_t)n);
    served("jobs");
    r = wharf("enqueue", "jobs", "--file", path);
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_eq(lines(r->out), 101, "one id a line (blank line skipped)");
    cr_assert(matches("^(" HEX64 "\n){101}$", r->out));
    cr_assert_eq(lines(r->err), 1, "no progress bar off a TTY: %s", r->err);
    cr_assert(strstr(r->err, "101 enqueued, 0 duplicate"), "%s", r->err);
    cr_assert_eq(test_redis_int(redis, "XLEN wharf:{jobs}:stream"), 101);
    {
        redisReply *x =
            test_redis_command(redis, "XRANGE wharf:{jobs}:stream - + COUNT 1");
        cr_assert_eq(
            strncmp(x->element[0]->element[1]->element[1]->str, r->out, 64), 0,
            "first id first");
        freeReplyObject(x);
        x = test_redis_command(redis, "XREVRANGE wharf:{jobs}:stream + - "
                                      "COUNT 1");
        cr_assert_str_eq(x->element[0]->element[1]->element[5]->str,
                         "{\"crlf\":1}", "CR LF is not payload");
        freeReplyObject(x);
    }
    /* Again: every line a duplicate, the same ids. */
    {
        static char first[sizeof(result.out)];
        memcpy(first, r->out, r->out_len + 1);
        r = wharf("enqueue", "jobs", "--file", path);
        cr_assert_eq(r->status, 0);
        cr_assert_str_eq(r->out, first);
        cr_assert(strstr(r->err, "0 enqueued, 101 duplicate"), "%s", r->err);
    }
    /* "-" reads stdin. */
    r = wharf_in("a\nb\n", 4, "enqueue", "stdin", "--file", "-");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_eq(lines(r->out), 2);
    cr_assert(strstr(r->err, "stdin: 2 enqueued"), "%s", r->err);
}

Test(cli, enqueue_file_reports_refused_lines)
{
    char path[300];
    run *r;

    snprintf(path, sizeof(path), "%s/f.jsonl", dir);
    write_file(path, "ok\ntoolong\nok2\n", 15);
    command("HSET wharf:{f}:policy max_payload 5");
    r = wharf("enqueue", "f", "--file", path);
    cr_assert_eq(r->status, 65, "%s", r->err);
    cr_assert_eq(lines(r->out), 2);
    cr_assert_eq(lines(r->err), 2, "the line, then the summary: %s", r->err);
    cr_assert(strstr(r->err, "f.jsonl:2: payload of 7 bytes is over "
                             "max_payload 5 of type 'f'\n"),
              "%s", r->err);
    cr_assert(strstr(r->err, "2 enqueued, 0 duplicate, 1 refused"), "%s",
              r->err);
    r = wharf("enqueue", "f", "--file", "/nonexistent/x");
    assert_error(r, 66, "wharf: enqueue: cannot open '/nonexistent/x'");
}

Test(cli, enqueue_file_backpressure)
{
    char path[300];
    pid_t child;
    run *r;

    snprintf(path, sizeof(path), "%s/b.jsonl", dir);
    write_file(path, "1\n2\n3\n", 6);
    command("HSET wharf:{fb}:policy max_backlog 2");
    r = wharf("enqueue", "fb", "--file", path);
    cr_assert_eq(r->status, 75, "%s", r->err);
    cr_assert_eq(lines(r->out), 2);
    cr_assert(strstr(r->err, "b.jsonl:3: type 'fb' is at its backlog limit"),
              "%s", r->err);
    /* With --wait, room made after the first refusal lets the rest in. */
    child = after_attempt(evalsha_calls(redis), "DEL", "wharf:{fb}:stream");
    r = wharf("enqueue", "fb", "--file", path, "--wait", "120s");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_eq(lines(r->out), 3);
    cr_assert(strstr(r->err, "1 enqueued, 2 duplicate"), "%s", r->err);
    waitpid(child, NULL, 0);
}

Test(cli, enqueue_file_slows_down_under_pressure)
{
    char path[300];
    FILE *f;
    run *r;

    snprintf(path, sizeof(path), "%s/many.jsonl", dir);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    for (int i = 0; i < 30000; i++)
        fprintf(f, "%d\n", i);
    fclose(f);
    /* Three batches: pauses of 20 and 40 ms before the second and third. */
    command("SET wharf:{pr}:pressure 1");
    r = wharf("enqueue", "pr", "--file", path);
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_eq(lines(r->out), 30000);
    cr_assert(r->ms >= 60, "took %lld ms", r->ms);
}

Test(cli, enqueue_file_progress_on_a_tty)
{
    char path[300], buf[8192];
    int master, slave, status;
    size_t got = 0;
    ssize_t n;
    pid_t pid;

    snprintf(path, sizeof(path), "%s/p.jsonl", dir);
    write_file(path, "a\nb\nc\n", 6);
    cr_assert_eq(openpty(&master, &slave, NULL, NULL, NULL), 0);
    pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDWR);
        dup2(devnull, STDIN_FILENO);
        dup2(devnull, STDOUT_FILENO);
        dup2(slave, STDERR_FILENO);
        execl(WHARF, WHARF, "--redis", server.url, "enqueue", "tty", "--file",
              path, (char *)NULL);
        _exit(127);
    }
    close(slave);
    while ((n = read(master, buf + got, sizeof(buf) - 1 - got)) > 0)
        got += (size_t)n;
    buf[got] = '\0';
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    close(master);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", buf);
    cr_assert(strstr(buf, "\r"), "a bar redrawn in place: %s", buf);
    cr_assert(strstr(buf, "tasks"), "%s", buf);
    cr_assert(strstr(buf, "3 enqueued, 0 duplicate"), "%s", buf);
}

/* ---- result ---- */

Test(cli, result_prints_exact_bytes)
{
    const char value[] = {'o', 'k', '\0', '\n', 'z'};
    run *r;

    command("SET wharf:{res}:result:t1 %b", value, sizeof(value));
    r = wharf("result", "res", "t1");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_eq(r->out_len, sizeof(value));
    cr_assert_eq(memcmp(r->out, value, sizeof(value)), 0);
    cr_assert_eq(r->err_len, 0);
    command("SET wharf:{res}:result:empty %s", "");
    r = wharf("result", "res", "empty");
    cr_assert_eq(r->status, 0);
    cr_assert_eq(r->out_len, 0);
}

Test(cli, result_missing_is_1_and_wait_works)
{
    pid_t child;
    run *r;

    assert_error(wharf("result", "res", "nope"), 1,
                 "wharf: result: no result for task 'nope' of type 'res'\n");
    assert_error(wharf("result", "res", "nope", "--wait", "200ms"), 1,
                 "wharf: result: no result for task 'nope'");
    cr_assert(result.ms >= 190, "waited %lld ms", result.ms);
    /* A result that comes while wharf waits (or, on a loaded machine,
     * before it starts: either way it is found; the deadline is only how
     * long the machine may take). */
    child = later(100, "SET", "wharf:{res}:result:late", "done");
    r = wharf("result", "res", "late", "--wait", "120s");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_str_eq(r->out, "done");
    waitpid(child, NULL, 0);
    assert_error(wharf("result", "a b", "x"), 65, "wharf: result: type");
    assert_error(wharf("result", "t", "x y"), 65, "wharf: result: task id");
}

/* ---- stats ---- */

Test(cli, stats_json_exact)
{
    char node[64], want[1024];
    run *r = wharf("stats", "--json");

    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_str_eq(r->out, "{\"types\": {}}\n");
    for (int i = 0; i < 3; i++)
        command("XADD wharf:{a}:stream * id a%d", i);
    command("XGROUP CREATE wharf:{a}:stream wharf 0");
    freeReplyObject(test_redis_command(
        redis, "XREADGROUP GROUP wharf c1 COUNT 1 STREAMS wharf:{a}:stream >"));
    command("ZADD wharf:{a}:delayed 1 x 2 y");
    command("ZADD wharf:{a}:dead 1 z");
    command("SET wharf:{a}:pressure 1");
    command("XADD wharf:{b}:stream * id b0");
    command("ZADD wharf:{b}:hosts 1 web-1:default");
    command("SET wharf:{b}:paused 1 PX 600000");
    command("SET wharf:{c}:paused 1");
    command("ZADD wharf:{a}:running 1 x 2 y");
    command("SADD wharf:types b a c");
    r = wharf("stats", "--json");
    cr_assert_eq(r->status, 0, "%s", r->err);
    snprintf(node, sizeof(node), "127.0.0.1:%d", server.port);
    snprintf(
        want, sizeof(want),
        "{\"types\": {"
        "\"a\": {\"ready\": 2, \"running\": 1, \"delayed\": 2, \"dead\": 1, "
        "\"pressure\": true, \"paused\": false, \"slots\": 2, "
        "\"served\": false, \"node\": \"%s\"}, "
        "\"b\": {\"ready\": 1, \"running\": 0, \"delayed\": 0, \"dead\": 0, "
        "\"pressure\": false, \"paused\": true, \"paused_left_ms\": LEFT, "
        "\"slots\": 0, \"served\": true, \"node\": \"%s\"}, "
        "\"c\": {\"ready\": 0, \"running\": 0, \"delayed\": 0, \"dead\": 0, "
        "\"pressure\": false, \"paused\": true, \"slots\": 0, "
        "\"served\": false, \"node\": \"%s\"}}}\n",
        node, node, node);
    /* b's pause has some 600000 ms left: the one figure that moves. */
    {
        char *left = strstr(r->out, "\"paused_left_ms\": ");
        long long ms;
        cr_assert(left, "%s", r->out);
        left += strlen("\"paused_left_ms\": ");
        ms = strtoll(left, NULL, 10);
        cr_assert(ms > 0 && ms <= 600000, "%lld", ms);
        memmove(left + 4, left + strspn(left, "0123456789"),
                strlen(left + strspn(left, "0123456789")) + 1);
        memcpy(left, "LEFT", 4);
    }
    cr_assert_str_eq(r->out, want);
    r = wharf("stats");
    cr_assert_eq(r->status, 0);
    cr_assert(matches("^TYPE +READY +RUNNING +DELAYED +DEAD +PRESSURE +PAUSED "
                      "+NODE +SERVED\n"
                      "a +2 +1 +2 +1 +yes +no +127\\.0\\.0\\.1:[0-9]+ +NO "
                      "\\(no live host\\)\n"
                      "b +1 +0 +0 +0 +no +yes, (600|5[0-9][0-9])s "
                      "+127\\.0\\.0\\.1:[0-9]+ +yes\n"
                      "c +0 +0 +0 +0 +no +yes +127\\.0\\.0\\.1:[0-9]+ +NO "
                      "\\(no live host\\)\n$",
                      r->out),
              "%s", r->out);
}

/* ---- dead ---- */

#define TRACE "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

/* A dead task of type d as a host leaves it. */
static void make_dead(const char *id, long long died, const char *payload,
                      size_t len, const char *error, const char *attempt)
{
    command("HSET wharf:{d}:task:%s id %s type d payload %b attempt %s "
            "enqueued_at 1700000000000 trace %s error %s failed_at %lld "
            "worker host:default:0 custom keep",
            id, id, payload, len, attempt, TRACE, error, died);
    command("ZADD wharf:{d}:dead %lld %s", died, id);
}

static void make_dead_set(void)
{
    make_dead("t1", 1700000005000LL, "p1", 2, "boom", "3");
    make_dead("t2", 1700000006000LL, "p\0\n2", 4, "bad\nthing", "5");
    make_dead("t3", 1700000004000LL, "p3", 2, "late", "1");
}

Test(cli, dead_list_newest_first)
{
    run *r;

    make_dead_set();
    r = wharf("dead", "list", "d");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_str_eq(r->out, "t2  2023-11-14T22:13:26.000Z  5  bad\\nthing\n"
                             "t1  2023-11-14T22:13:25.000Z  3  boom\n"
                             "t3  2023-11-14T22:13:24.000Z  1  late\n");
    r = wharf("dead", "list", "empty");
    cr_assert_eq(r->status, 0);
    cr_assert_eq(r->out_len, 0);
    assert_error(wharf("dead", "list", "a b"), 65, "wharf: dead list: type");
}

Test(cli, dead_show_every_field)
{
    run *r;

    make_dead_set();
    r = wharf("dead", "show", "d", "t2");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_str_eq(r->out,
                     "died_at: 1700000006000 (2023-11-14T22:13:26.000Z)\n"
                     "id: t2\n"
                     "type: d\n"
                     "attempt: 5\n"
                     "error: bad\\nthing\n"
                     "failed_at: 1700000006000 (2023-11-14T22:13:26.000Z)\n"
                     "worker: host:default:0\n"
                     "enqueued_at: 1700000000000 (2023-11-14T22:13:20.000Z)\n"
                     "trace: " TRACE "\n"
                     "payload: (4 bytes, escaped) p\\x00\\n2\n"
                     "custom: keep\n");
    assert_error(wharf("dead", "show", "d", "nope"), 1,
                 "wharf: dead show: no dead task 'nope' of type 'd'\n");
}

Test(cli, dead_replay_one)
{
    redisReply *x;
    const redisReply *f;
    run *r;

    make_dead_set();
    r = wharf("dead", "replay", "d", "t1");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_str_eq(r->out, "replayed 1\n");
    f = stream_field(&x, "wharf:{d}:stream", "attempt");
    cr_assert_str_eq(f->str, "1");
    f = x->element[0]->element[1];
    cr_assert_eq(f->elements, 14,
                 "id type payload attempt enqueued_at trace "
                 "custom, no error/failed_at/worker");
    cr_assert_str_eq(f->element[1]->str, "t1");
    cr_assert_str_eq(f->element[3]->str, "d");
    cr_assert_str_eq(f->element[5]->str, "p1");
    cr_assert_str_eq(f->element[9]->str, "1700000000000");
    cr_assert_str_eq(f->element[11]->str, TRACE);
    cr_assert_str_eq(f->element[12]->str, "custom");
    freeReplyObject(x);
    cr_assert_eq(test_redis_int(redis, "EXISTS wharf:{d}:task:t1"), 0);
    cr_assert_eq(test_redis_int(redis, "ZSCORE wharf:{d}:dead t1"), 0);
    cr_assert_eq(test_redis_int(redis, "ZCARD wharf:{d}:dead"), 2);
    assert_error(wharf("dead", "replay", "d", "t1"), 1,
                 "wharf: dead replay: no dead task 't1' of type 'd'\n");
}

Test(cli, dead_replay_all)
{
    run *r;

    make_dead_set();
    /* An id in the dead set whose envelope is gone is dropped. */
    command("ZADD wharf:{d}:dead 1 ghost");
    r = wharf("dead", "replay", "d", "--all");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_str_eq(r->out, "replayed 3\n");
    cr_assert(strstr(r->err, "1 dead ids had no envelope"), "%s", r->err);
    cr_assert_eq(test_redis_int(redis, "XLEN wharf:{d}:stream"), 3);
    cr_assert_eq(test_redis_int(redis, "EXISTS wharf:{d}:dead"), 0);
    r = wharf("dead", "replay", "d", "--all");
    cr_assert_eq(r->status, 0);
    cr_assert_str_eq(r->out, "replayed 0\n");
}

Test(cli, dead_purge)
{
    run *r;

    make_dead_set();
    command("HSET wharf:{other}:task:t1 id t1");
    command("ZADD wharf:{other}:dead 1 t1");
    r = wharf("dead", "purge", "d");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_str_eq(r->out, "purged 3\n");
    cr_assert_eq(test_redis_int(redis, "EXISTS wharf:{d}:dead"), 0);
    cr_assert_eq(test_redis_int(redis, "EXISTS wharf:{d}:task:t1 "
                                       "wharf:{d}:task:t2 wharf:{d}:task:t3"),
                 0);
    cr_assert_eq(test_redis_int(redis, "ZCARD wharf:{other}:dead"), 1);
    r = wharf("dead", "purge", "d");
    cr_assert_eq(r->status, 0);
    cr_assert_str_eq(r->out, "purged 0\n");
}

/* ---- locks ---- */

Test(cli, locks_list_and_release)
{
    run *r;

    command("SET wharf:{l}:lock:job-2 17 PX 60000");
    command("SET wharf:{l}:lock:job-1 42 PX 30000");
    command("SET wharf:{m}:lock:other 1 PX 30000");
    r = wharf("locks", "list", "l");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert(matches("^job-1  42  [0-9]+\njob-2  17  [0-9]+\n$", r->out), "%s",
              r->out);
    {
        long long ttl = strtoll(strrchr(strtok(r->out, "\n"), ' '), NULL, 10);
        cr_assert(ttl > 20000 && ttl <= 30000, "ttl %lld", ttl);
    }
    r = wharf("locks", "release", "l", "job-1");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_str_eq(r->out, "released job-1\n");
    cr_assert_eq(test_redis_int(redis, "EXISTS wharf:{l}:lock:job-1"), 0);
    assert_error(wharf("locks", "release", "l", "job-1"), 1,
                 "wharf: locks release: no lock on task 'job-1' of type "
                 "'l'\n");
    r = wharf("locks", "list", "none");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_eq(r->out_len, 0);
}

/* ---- where Redis is ---- */

Test(cli, config_manifest_gives_address_and_prefix)
{
    char path[300], text[512];
    int n;
    run *r;

    snprintf(path, sizeof(path), "%s/wharf.ini", dir);
    n = snprintf(text, sizeof(text), "[redis]\nurl = %s\nprefix = custom\n",
                 server.url);
    write_file(path, text, (size_t)n);
    r = run_with(NULL, 0, NULL, "--config", path, "enqueue", "t", "x", NULL);
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_eq(test_redis_int(redis, "XLEN custom:{t}:stream"), 1);
    cr_assert_eq(test_redis_int(redis, "SISMEMBER custom:types t"), 1);
}

Test(cli, bad_manifest_is_78)
{
    char path[300];
    run *r;

    snprintf(path, sizeof(path), "%s/bad.ini", dir);
    write_file(path, "[redis]\nbogus = 1\n", strlen("[redis]\nbogus = 1\n"));
    r = run_with(NULL, 0, NULL, "--config", path, "stats", NULL);
    assert_error(r, 78, "wharf: ");
    cr_assert(strstr(r->err, "bad.ini:2:"), "file:line: %s", r->err);
    r = run_with(NULL, 0, NULL, "--config", "/nonexistent.ini", "stats", NULL);
    assert_error(r, 78, "wharf: /nonexistent.ini");
}

Test(cli, embedded_means_the_socket_under_data_dir)
{
    char path[300], want[400];
    run *r;

    snprintf(path, sizeof(path), "%s/e.ini", dir);
    write_file(path, "[redis]\nurl = embedded\ndata_dir = data\n",
               strlen("[redis]\nurl = embedded\ndata_dir = data\n"));
    r = run_with(NULL, 0, NULL, "--config", path, "stats", NULL);
    snprintf(want, sizeof(want), "wharf: stats: unix://%s/data/redis.sock",
             dir);
    assert_error(r, 69, want);
}

Test(cli, environment_address)
{
    static char env[128];
    const char *envs[] = {env, NULL};
    run *r;

    snprintf(env, sizeof(env), "WHARF_REDIS_URL=%s", server.url);
    command("SADD wharf:types x");
    r = run_with(NULL, 0, envs, "stats", "--json", NULL);
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert(strstr(r->out, "\"x\""), "%s", r->out);
    snprintf(env, sizeof(env), "WHARF_REDIS_URL=bogus://");
    assert_error(run_with(NULL, 0, envs, "stats", NULL), 78,
                 "wharf: WHARF_REDIS_URL: bad Redis URL");
    /* --redis wins over the environment. */
    r = run_with(NULL, 0, envs, "--redis", server.url, "stats", NULL);
    cr_assert_eq(r->status, 0, "%s", r->err);
}

Test(cli, password_from_the_environment)
{
    const char *envs[] = {"WHARF_REDIS_PASSWORD=s3cret", NULL};
    run *r;

    command("CONFIG SET requirepass s3cret");
    r = run_with(NULL, 0, NULL, "--redis", server.url, "stats", NULL);
    assert_error(r, 78, "wharf: stats: ");
    r = run_with(NULL, 0, envs, "--redis", server.url, "stats", NULL);
    cr_assert_eq(r->status, 0, "%s", r->err);
}

/* ---- a Redis that wants a password, one that is full ---- */

Test(cli, missing_or_wrong_password_is_78_with_one_clear_line)
{
    static const char *const args[] = {NULL};
    const char *wrong_env[] = {"WHARF_REDIS_PASSWORD=nope", NULL};
    test_redis locked;
    char expected[300], url[300];
    run *r;

    test_redis_start_with(&locked, "p@ss:word", args);
    snprintf(expected, sizeof(expected),
             "wharf: enqueue: %s: authentication required: set a password "
             "in the URL (redis://:PASSWORD@host) or WHARF_REDIS_PASSWORD\n",
             locked.url);
    r = run_with(NULL, 0, NULL, "--redis", locked.url, "enqueue", "t", "x",
                 NULL);
    assert_error(r, 78, expected);
    cr_assert_eq(r->out_len, 0);
    assert_error(run_with(NULL, 0, NULL, "--redis", locked.url, "stats",
                          NULL),
                 78, "wharf: stats: ");
    cr_assert(strstr(result.err, "authentication required"), "%s",
              result.err);
    assert_error(run_with(NULL, 0, NULL, "--redis", locked.url, "result",
                          "t", "i", NULL),
                 78, "wharf: result: ");
    /* A long command before AUTH used to come back as "Protocol error:
     * unauthenticated multibulk length". */
    snprintf(url, sizeof(url), "%s/f.jsonl", dir);
    write_file(url, "1\n2\n3\n", 6);
    r = run_with(NULL, 0, NULL, "--redis", locked.url, "enqueue", "t",
                 "--file", url, NULL);
    cr_assert_eq(r->status, 78, "%s", r->err);
    cr_assert(strstr(r->err, "authentication required"), "%s", r->err);
    cr_assert_null(strstr(r->err, "Protocol error"), "%s", r->err);

    snprintf(url, sizeof(url), "redis://:wrong@127.0.0.1:%d/0", locked.port);
    snprintf(expected, sizeof(expected),
             "wharf: enqueue: %s: authentication failed: wrong user or "
             "password (WRONGPASS); fix it in the URL or "
             "WHARF_REDIS_PASSWORD\n",
             locked.url);
    assert_error(run_with(NULL, 0, NULL, "--redis", url, "enqueue", "t", "x",
                          NULL),
                 78, expected);
    assert_error(run_with(NULL, 0, wrong_env, "--redis", locked.url,
                          "enqueue", "t", "x", NULL),
                 78, expected);
    /* Percent-encoded, the right one works. */
    snprintf(url, sizeof(url), "redis://:p%%40ss%%3Aword@127.0.0.1:%d/0",
             locked.port);
    r = run_with(NULL, 0, NULL, "--redis", url, "enqueue", "t", "x", NULL);
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert(matches("^" HEX64 "\n$", r->out), "%s", r->out);
    test_redis_stop(&locked);
}

/* A server started at maxmemory 1mb with noeviction, and a connection. */
static const char *const full_args[] = {"--maxmemory", "1mb",
                                        "--maxmemory-policy", "noeviction",
                                        NULL};

/* Writes 64 KiB values until Redis refuses one for want of memory. */
static void fill(redisContext *c)
{
    static char value[64 * 1024];
    int refused = 0;

    memset(value, 'v', sizeof(value));
    for (int i = 0; i < 1000 && !refused; i++) {
        redisReply *reply = redisCommand(c, "SET fill:%d %b", i, value,
                                         sizeof(value));
        cr_assert_not_null(reply, "redis: %s", c->errstr);
        refused = reply->type == REDIS_REPLY_ERROR &&
                  strncmp(reply->str, "OOM", 3) == 0;
        freeReplyObject(reply);
    }
    cr_assert(refused, "Redis never ran out of memory");
}

Test(cli, full_redis_is_75_and_says_nothing_was_enqueued)
{
    test_redis full;
    redisContext *c;
    char expected[200];
    run *r;

    test_redis_start_with(&full, NULL, full_args);
    c = test_redis_connect(&full);
    fill(c);
    snprintf(expected, sizeof(expected),
             "wharf: enqueue: %s: Redis is out of memory (maxmemory "
             "reached); nothing was enqueued\n",
             full.url);
    r = run_with(NULL, 0, NULL, "--redis", full.url, "enqueue", "t", "x",
                 "--id", "refused", NULL);
    assert_error(r, 75, expected);
    cr_assert_eq(r->out_len, 0);
    cr_assert_eq(test_redis_int(c, "EXISTS wharf:{t}:seen:refused"), 0);
    cr_assert_eq(test_redis_int(c, "XLEN wharf:{t}:stream"), 0);
    /* --wait keeps trying, as for backpressure, then says the same. */
    r = run_with(NULL, 0, NULL, "--redis", full.url, "enqueue", "t", "x",
                 "--wait", "200ms", NULL);
    assert_error(r, 75, expected);
    /* Room made: the same command goes in. */
    freeReplyObject(test_redis_command(c, "CONFIG SET maxmemory 64mb"));
    r = run_with(NULL, 0, NULL, "--redis", full.url, "enqueue", "t", "x",
                 NULL);
    cr_assert_eq(r->status, 0, "%s", r->err);
    redisFree(c);
    test_redis_stop(&full);
}

Test(cli, enqueue_file_on_a_full_redis_names_the_line_and_what_went_in)
{
    static char line[100 * 1024];
    test_redis full;
    redisContext *c;
    char path[300], expected[300], *text;
    const char *at;
    long no = 0;
    size_t before = 0;
    FILE *f;
    run *r;

    test_redis_start_with(&full, NULL, full_args);
    c = test_redis_connect(&full);
    /* 20 lines of 100 KB: 2 MB cannot fit in 1 MB, so Redis refuses one
     * of them, whichever it is. */
    snprintf(path, sizeof(path), "%s/big.jsonl", dir);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    for (int i = 0; i < 20; i++) {
        memset(line, 'a' + i, sizeof(line));
        cr_assert_eq(fwrite(line, 1, sizeof(line), f), sizeof(line));
        fputc('\n', f);
    }
    fclose(f);
    r = run_with(NULL, 0, NULL, "--redis", full.url, "enqueue", "t",
                 "--file", path, NULL);
    cr_assert_eq(r->status, 75, "exit %d: %s", r->status, r->err);
    /* One line for the refusal, then the summary. */
    cr_assert_eq(lines(r->err), 2, "%s", r->err);
    text = r->err;
    at = strstr(text, "big.jsonl:");
    cr_assert_not_null(at, "%s", r->err);
    cr_assert_eq(sscanf(at, "big.jsonl:%ld:", &no), 1, "%s", r->err);
    cr_assert(no >= 1 && no <= 20, "line %ld", no);
    snprintf(expected, sizeof(expected),
             "big.jsonl:%ld: %s: Redis is out of memory (maxmemory "
             "reached); %ld lines enqueued before it\n",
             no, full.url, no - 1);
    cr_assert(strstr(r->err, expected), "want '%s' in '%s'", expected,
              r->err);
    /* What it says went in did, and nothing else. */
    before = (size_t)(no - 1);
    cr_assert_eq(lines(r->out), (int)before, "%s", r->out);
    cr_assert_eq(test_redis_int(c, "XLEN wharf:{t}:stream"),
                 (long long)before);
    snprintf(expected, sizeof(expected), "%zu enqueued, 0 duplicate",
             before);
    cr_assert(strstr(r->err, expected), "%s", r->err);
    redisFree(c);
    test_redis_stop(&full);
}

/* ---- no silent queue for a type nobody serves ---- */

Test(cli, enqueue_to_an_unserved_type_warns_and_strict_refuses)
{
    char path[300], text[512];
    int n;
    run *r;

    served("webhook");
    served("echo");
    r = wharf("enqueue", "webhok", "x");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_str_eq(r->err, "wharf: enqueue: no host serves 'webhok'; "
                             "served types: echo, webhook\n");
    cr_assert_eq(test_redis_int(redis, "XLEN wharf:{webhok}:stream"), 1);
    assert_error(wharf("enqueue", "webhok", "y", "--strict"), 65,
                 "wharf: enqueue: no host serves 'webhok'; served types: "
                 "echo, webhook; refused (strict)\n");
    cr_assert_eq(test_redis_int(redis, "XLEN wharf:{webhok}:stream"), 1);
    /* A served type: no word on stderr, strict or not. */
    r = wharf("enqueue", "echo", "z", "--strict");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_eq(r->err_len, 0, "%s", r->err);
    /* The manifest's [producer] strict, for producers that share it. */
    snprintf(path, sizeof(path), "%s/producer.ini", dir);
    n = snprintf(text, sizeof(text),
                 "[redis]\nurl = %s\n[producer]\nstrict = yes\n", server.url);
    write_file(path, text, (size_t)n);
    r = run_with(NULL, 0, NULL, "--config", path, "enqueue", "webhok", "w",
                 NULL);
    assert_error(r, 65, "wharf: enqueue: no host serves 'webhok'");
    /* --file says it once, and adds nothing. */
    snprintf(path, sizeof(path), "%s/lines.txt", dir);
    write_file(path, "a\nb\nc\n", 6);
    r = wharf("enqueue", "webhok", "--file", path, "--strict");
    cr_assert_eq(r->status, 65, "%s", r->err);
    cr_assert(strstr(r->err, "refused (strict)"), "%s", r->err);
    cr_assert_eq(test_redis_int(redis, "XLEN wharf:{webhok}:stream"), 1);
}

/* A host that speaks another protocol: every producer command refuses
 * with 76 and says which. */
Test(cli, another_host_protocol_is_76)
{
    command("HSET wharf:{p}:policy idempotency payload protocol 99");
    assert_error(wharf("enqueue", "p", "x"), 76,
                 "wharf: enqueue: the hosts serving 'p' speak wharf "
                 "protocol 99; this client speaks 1");
    cr_assert_eq(test_redis_int(redis, "EXISTS wharf:{p}:stream"), 0);
    assert_error(wharf("status", "p", "x"), 76, "wharf: status: the hosts");
    assert_error(wharf("result", "p", "x"), 76, "wharf: result: the hosts");
    assert_error(wharf("cancel", "p", "x"), 76, "wharf: cancel: the hosts");
}

/* ---- status, cancel, queue drop (no host: the tasks only wait) ---- */

Test(cli, status_and_cancel_of_waiting_tasks)
{
    char id[80];
    run *r;

    served("s");
    r = wharf("enqueue", "s", "one", "--id", "q1");
    cr_assert_eq(r->status, 0, "%s", r->err);
    r = wharf("enqueue", "s", "two", "--id", "d1", "--delay", "1h");
    cr_assert_eq(r->status, 0, "%s", r->err);
    r = wharf("status", "s", "q1");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert(matches("^state: queued\nentry: [0-9]+-[0-9]+\nattempt: 1\n"
                      "enqueued_at: ",
                      r->out),
              "%s", r->out);
    r = wharf("status", "s", "d1", "--json");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert(matches("^\\{\"state\": \"delayed\", \"now_ms\": [0-9]+, "
                      "\"attempt\": 1, \"enqueued_at_ms\": [0-9]+, "
                      "\"due_at_ms\": [0-9]+, \"error\": \"\"\\}\n$",
                      r->out),
              "%s", r->out);
    /* An error a plugin wrote is any bytes: the JSON stays valid (a byte
     * that is not UTF-8 is the text \xff, as dead show prints it; it was
     * once written raw, which no JSON reader takes). */
    command("HSET wharf:{s}:task:d1 error %b", "bad\xff\n<b>\xc3\xa9",
            (size_t)10);
    r = wharf("status", "s", "d1", "--json");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert(strstr(r->out, "\"error\": "
                             "\"bad\\\\xff\\n\\u003cb\\u003e\xc3\xa9\"}\n"),
              "%s", r->out);
    r = wharf("status", "s", "nope");
    cr_assert_eq(r->status, 1);
    cr_assert_str_eq(r->out, "state: unknown\n");

    r = wharf("cancel", "s", "q1");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_str_eq(r->out, "removed: s q1 was queued; it will not run\n");
    r = wharf("cancel", "s", "d1");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_str_eq(r->out, "removed: s d1 was delayed; it will not run\n");
    cr_assert_eq(test_redis_int(redis, "XLEN wharf:{s}:stream"), 0);
    cr_assert_eq(test_redis_int(redis, "ZCARD wharf:{s}:delayed"), 0);
    cr_assert_eq(test_redis_int(redis, "EXISTS wharf:{s}:task:d1"), 0);
    r = wharf("status", "s", "q1");
    cr_assert(matches("^state: cancelled\n", r->out), "%s", r->out);
    r = wharf("cancel", "s", "q1");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_str_eq(r->out, "already cancelled: s q1\n");
    assert_error(wharf("result", "s", "q1", "--wait", "60s"), 3,
                 "wharf: result: task 'q1' of type 's' was cancelled\n");
    /* A cancelled id may be enqueued again at once: a new task. */
    r = wharf("enqueue", "s", "one", "--id", "q1");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_eq(r->err_len, 0, "not a duplicate: %s", r->err);
    r = wharf("status", "s", "q1");
    cr_assert(matches("^state: queued\n", r->out), "%s", r->out);

    /* Finished tasks say so. */
    command("SET wharf:{s}:result:done1 yes");
    assert_error(wharf("cancel", "s", "done1"), 1,
                 "wharf: cancel: task 'done1' of type 's' has finished "
                 "(done)");
    command("ZADD wharf:{s}:dead 5 dead1");
    command("HSET wharf:{s}:dead:dead1 id dead1 attempt 3 error boom");
    assert_error(wharf("cancel", "s", "dead1"), 1,
                 "wharf: cancel: task 'dead1' of type 's' has finished "
                 "(dead)");
    assert_error(wharf("cancel", "s", "ghost"), 1,
                 "wharf: cancel: no task 'ghost' of type 's' to cancel\n");
    /* result --wait on a dead task ends at once, with its error. */
    assert_error(wharf("result", "s", "dead1", "--wait", "60s"), 2,
                 "wharf: result: task 'dead1' of type 's' is dead after 3 "
                 "attempts: boom\n");
    cr_assert(result.ms < 30000, "at once, not after the wait");
    r = wharf("status", "s", "dead1");
    cr_assert(matches("^state: dead\nattempts: 3\ndied_at: .*\nerror: boom\n$",
                      r->out),
              "%s", r->out);
    snprintf(id, sizeof(id), "%s", "a b");
    assert_error(wharf("cancel", "s", id), 65, "wharf: cancel: task id");
    assert_usage(wharf("status", "s"), "missing ID");
}

Test(cli, queue_drop_needs_yes_and_removes_the_waiting_tasks)
{
    char path[300];
    run *r;

    served("dq");
    snprintf(path, sizeof(path), "%s/many.txt", dir);
    {
        char text[8192];
        int n = 0;
        for (int i = 0; i < 700; i++)
            n += snprintf(text + n, sizeof(text) - (size_t)n, "%d\n", i);
        write_file(path, text, (size_t)n);
    }
    r = wharf("enqueue", "dq", "--file", path);
    cr_assert_eq(r->status, 0, "%s", r->err);
    r = wharf("enqueue", "dq", "later", "--delay", "1h");
    cr_assert_eq(r->status, 0, "%s", r->err);
    /* One is claimed by a worker: it is left to end. */
    command("XGROUP CREATE wharf:{dq}:stream wharf 0");
    freeReplyObject(test_redis_command(
        redis,
        "XREADGROUP GROUP wharf w1 COUNT 1 STREAMS wharf:{dq}:stream >"));
    r = wharf("queue", "drop", "dq");
    cr_assert_eq(r->status, 64, "%s", r->err);
    cr_assert(strstr(r->err, "700 in the stream, 1 delayed): add --yes"), "%s",
              r->err);
    cr_assert_eq(test_redis_int(redis, "XLEN wharf:{dq}:stream"), 700);
    r = wharf("queue", "drop", "dq", "--yes");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_str_eq(r->out, "dropped 700; 1 running left to end\n");
    cr_assert_eq(test_redis_int(redis, "XLEN wharf:{dq}:stream"), 1);
    cr_assert_eq(test_redis_int(redis, "ZCARD wharf:{dq}:delayed"), 0);
    cr_assert_eq(test_redis_int(redis, "HLEN wharf:{dq}:entries"), 1);
    /* Dedupe markers went too: the same payload is a new task. */
    r = wharf("enqueue", "dq", "5");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_eq(r->err_len, 0, "%s", r->err);
}

/* A Redis that accepts the connection but does not answer (paused with
 * SIGSTOP) is said to be so, after the 5 s timeout, naming the address
 * without its password; not hiredis' "Resource temporarily
 * unavailable". */
Test(cli, a_paused_redis_is_said_to_not_answer)
{
    char url[128];
    run *r;

    snprintf(url, sizeof(url), "redis://:sekrit@127.0.0.1:%d/0", server.port);
    cr_assert_eq(kill(server.pid, SIGSTOP), 0);
    r = run_with(NULL, 0, NULL, "--redis", url, "stats", NULL);
    cr_assert_eq(kill(server.pid, SIGCONT), 0);
    assert_error(r, 69, "wharf: stats: redis://127.0.0.1:");
    cr_assert(strstr(r->err, ": AUTH: Redis did not answer in 5 s"), "%s",
              r->err);
    cr_assert_null(strstr(r->err, "sekrit"), "%s", r->err);
}
