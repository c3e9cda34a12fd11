/* wharf run PLUGIN.so TYPE [PAYLOAD|-] [--config FILE] [--attempt N] ...
 * A plugin author's inner loop, without Redis: loads the plugin as a
 * worker does (the loader's owner, mode, ABI and descriptor checks, the
 * plugin's [plugin.NAME] section of the manifest), runs init, one
 * process_business and fini in this process, and prints the outcome.
 * With --threads N --repeat M it runs N threads of M calls each instead
 * (run_many.c) and prints what they returned, counted.
 * wharf dead run runs a dead task through the same steps (cli_run_replay):
 * the task as it was recorded, and the plugin the manifest routes its
 * type to unless one is named.
 * The exit code says what the host would do with the task:
 *   0 ok, 75 retry (EX_TEMPFAIL), 65 fail (EX_DATAERR, dead at once),
 *   78 the plugin does not load or its init fails (as wharfd --check),
 *   or it has not opted in to --threads; 64 usage. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <sysexits.h>
#include <unistd.h>

#include "backoff.h"
#include "cli.h"
#include "client_ids.h"
#include "clock_ms.h"
#include "context.h"
#include "loader.h"
#include "log.h"
#include "quote.h"
#include "run_many.h"
#include "slots.h"
#include "worker.h"

enum {
    OPT_CONFIG,
    OPT_ATTEMPT,
    OPT_ID,
    OPT_TRACE,
    OPT_RESULT,
    OPT_THREADS,
    OPT_REPEAT
};

/* What the SIGALRM handler writes: prepared before the call, as a handler
 * may only write(2) and _exit. */
static char run_timeout_message[160];

static void run_on_alarm(int sig)
{
    ssize_t ignored;

    (void)sig;
    ignored =
        write(STDERR_FILENO, run_timeout_message, strlen(run_timeout_message));
    (void)ignored;
    _exit(EX_TEMPFAIL);
}

/* Arms a one-shot SIGALRM after ms; 0 disarms. */
static void run_alarm(int64_t ms)
{
    struct itimerval timer;

    memset(&timer, 0, sizeof(timer));
    timer.it_value.tv_sec = (time_t)(ms / 1000);
    timer.it_value.tv_usec = (suseconds_t)(ms % 1000) * 1000;
    setitimer(ITIMER_REAL, &timer, NULL);
}

/* The whole of stdin. 0 with *data malloc'd (caller frees), or -1. */
static int run_read_stdin(char **data, size_t *len)
{
    size_t used = 0, cap = 0, got;
    char *buf = NULL, *grown;

    do {
        if (cap - used < 4096) {
            cap = cap ? cap * 2 : 65536;
            if ((grown = realloc(buf, cap)) == NULL) {
                free(buf);
                errno = ENOMEM;
                return -1;
            }
            buf = grown;
        }
        got = fread(buf + used, 1, cap - used, stdin);
        used += got;
    } while (got > 0);
    if (ferror(stdin)) {
        free(buf);
        errno = EIO;
        return -1;
    }
    *data = buf;
    *len = used;
    return 0;
}

/* True if the section lists `type` in its types (a section without
 * types serves the descriptor's, unknown before the load). */
static bool run_section_lists(const plugin_section *section, const char *type)
{
    for (char **t = section->types; t && *t; t++)
        if (strcmp(*t, type) == 0)
            return true;
    return false;
}

/* The file name of a path ("webhook.so" for .../webhook.so). */
static const char *run_base_name(const char *path)
{
    const char *slash = strrchr(path, '/');

    return slash ? slash + 1 : path;
}

/* How well `section` fits the plugin at `real` (a realpath) run for
 * `type`, best first: 1 its path is that file and it lists the type (two
 * sections may load one file); 2 its path is that file; 3 its path has
 * the same file name and it lists the type, then 4 it is named like the
 * file ("webhook" for .../webhook.so), so a freshly built .so runs with
 * the section of the installed one; 0 it is another plugin's. */
static int run_section_rank(const plugin_section *section, const char *real,
                            const char *stem, const char *type)
{
    char other[PATH_MAX];
    bool lists = run_section_lists(section, type);

    if (realpath(section->path, other) && strcmp(other, real) == 0)
        return lists ? 1 : 2;
    if (lists && strcmp(run_base_name(section->path), run_base_name(real)) == 0)
        return 3;
    return strcmp(section->name, stem) == 0 ? 4 : 0;
}

/* The section that configures the plugin: the best by run_section_rank
 * (the first of equals), or NULL if none fits. */
static const plugin_section *run_find_section(const config *cfg,
                                              const char *real,
                                              const char *stem,
                                              const char *type)
{
    const plugin_section *best = NULL;
    int best_rank = 0;

    for (size_t i = 0; i < cfg->n_plugins; i++) {
        int rank = run_section_rank(&cfg->plugins[i], real, stem, type);

        if (rank > 0 && (best_rank == 0 || rank < best_rank)) {
            best = &cfg->plugins[i];
            best_rank = rank;
        }
    }
    return best;
}

static const char *run_status_name(wharf_status status)
{
    switch (status) {
    case WHARF_OK:
        return "ok";
    case WHARF_RETRY:
        return "retry";
    case WHARF_FAIL:
        return "fail";
    }
    return "retry";
}

/* One run, from the command line to the report; run_cleanup frees what
 * it owns. */
typedef struct run_state {
    /* what the command line asks for */
    const char *so, *type, *config_path, *id, *trace;
    unsigned attempt;
    unsigned threads, repeat; /* 1 and 1: the one call of run_call */
    bool result_only;
    const char *payload;
    size_t payload_len;
    char *input; /* the payload read from stdin, or NULL; owned */
    /* a dead task run again (cli_run_replay): its fence and enqueued_at
     * as recorded, and the error it died with, shown after the outcome */
    bool replayed;
    uint64_t fence;
    int64_t enqueued_at_ms;
    const char *died_with;
    char so_buf[PATH_MAX]; /* so when the manifest chose the plugin */
    /* the manifest and the plugin */
    config *own_config;     /* one loaded here, or NULL; owned */
    const config *manifest; /* own_config or the global one */
    char real[PATH_MAX];    /* the plugin's realpath */
    char stem[PATH_MAX];    /* its file name without ".so" */
    plugin_section section; /* the one plugin run_config loads */
    char *section_types[2];
    config run_config;
    loader *ld; /* owned; closing it runs fini */
    const route *route;
    /* the task */
    char id_buf[CLIENT_HASH_ID_SIZE], trace_buf[CLIENT_TRACE_SIZE];
    EVP_MD_CTX *md_ctx; /* owned */
    wharf_task task;
    /* the call */
    context c;
    bool context_ready; /* c is to be destroyed */
    wharf_status status;
    int64_t elapsed;
    run_many_tally tally; /* of the calls of --threads and --repeat */
} run_state;

/* Parses a count: 0 with *out, or -1 when text is not a number from 1
 * to max. */
static int run_parse_count(const char *text, unsigned long max, unsigned *out)
{
    unsigned long n;
    char *end;

    errno = 0;
    n = strtoul(text, &end, 10);
    if (errno || *end || text[0] < '0' || text[0] > '9' || n == 0 || n > max)
        return -1;
    *out = (unsigned)n;
    return 0;
}

/* The flag table's check of a count flag, where it stands. */
static int run_check_count(cli *ctx, const char *flag, const char *value,
                           unsigned long max)
{
    char quoted[CLI_PATH_QUOTE_MAX];
    unsigned n;

    if (run_parse_count(value, max, &n) == 0)
        return 0;
    quote_text(value, quoted, sizeof(quoted));
    return cli_usage(ctx, "--%s '%s' is not a number from 1 to %lu", flag,
                     quoted, max);
}

static int run_check_attempt(cli *ctx, const char *value)
{
    return run_check_count(ctx, "attempt", value, UINT_MAX);
}

static int run_check_threads(cli *ctx, const char *value)
{
    return run_check_count(ctx, "threads", value, RUN_THREADS_MAX);
}

static int run_check_repeat(cli *ctx, const char *value)
{
    return run_check_count(ctx, "repeat", value, RUN_REPEAT_MAX);
}

/* Takes the flags and operands into s and checks them, reading the
 * payload from stdin for "-": 0 or the exit code after saying why. */
static int run_take_args(cli *ctx, const cli_args *args, run_state *s)
{
    int code;

    s->config_path = args->flag[OPT_CONFIG];
    s->id = args->flag[OPT_ID];
    s->trace = args->flag[OPT_TRACE];
    s->result_only = args->flag[OPT_RESULT] != NULL;
    s->attempt = s->threads = s->repeat = 1;
    if (args->flag[OPT_ATTEMPT])
        run_parse_count(args->flag[OPT_ATTEMPT], UINT_MAX, &s->attempt);
    if (args->flag[OPT_THREADS])
        run_parse_count(args->flag[OPT_THREADS], RUN_THREADS_MAX, &s->threads);
    if (args->flag[OPT_REPEAT])
        run_parse_count(args->flag[OPT_REPEAT], RUN_REPEAT_MAX, &s->repeat);
    if (s->result_only && (s->threads > 1 || s->repeat > 1))
        return cli_usage(ctx, "--result prints the result of one call: not "
                              "with --threads or --repeat above 1");
    s->so = args->operand[0];
    s->type = args->operand[1];
    s->payload = "";
    if ((code = cli_check_type(ctx, s->type)) != 0 ||
        (s->id && (code = cli_check_id(ctx, s->id)) != 0))
        return code;
    if (s->id && (s->threads > 1 || s->repeat > 1) &&
        strlen(s->id) > RUN_ID_SIZE - 12)
        return cli_fail(ctx, EX_DATAERR,
                        "--id is too long for --threads and --repeat, which "
                        "add .N to it for each call: at most %d characters",
                        RUN_ID_SIZE - 12);
    if (s->trace && !client_valid_trace(s->trace))
        return cli_fail(ctx, EX_DATAERR,
                        "--trace is not a W3C traceparent: " CLIENT_TRACE_RULE);
    if (args->count == 3 && strcmp(args->operand[2], "-") != 0) {
        s->payload = args->operand[2];
        s->payload_len = strlen(s->payload);
    } else if (args->count == 3) {
        if (run_read_stdin(&s->input, &s->payload_len) != 0)
            return cli_fail(ctx, EX_IOERR,
                            "cannot read the payload from stdin: %s",
                            strerror(errno));
        s->payload = s->input;
    }
    return 0;
}

/* The manifest: the command's --config, else the global one, else none
 * (every key at its default, no plugin section); then the log as it
 * says. 0 or the exit code after saying why. */
static int run_load_manifest(cli *ctx, run_state *s)
{
    char err[CONFIG_ERR_LEN];

    if (s->config_path) {
        if (config_load_producer(s->config_path, &s->own_config, err,
                                 sizeof(err)) != 0)
            return cli_fail(ctx, EX_CONFIG, "%s", err);
        s->manifest = s->own_config;
    } else if (ctx->config) {
        s->manifest = ctx->config;
    } else {
        if (config_load_defaults(&s->own_config, err, sizeof(err)) != 0)
            return cli_fail(ctx, EX_SOFTWARE, "default settings: %s", err);
        /* own_config->file is NULL: messages name the plugin alone. */
        /* One call's debug lines help; those of many drown the tally. */
        s->own_config->log_level = s->threads == 1 && s->repeat == 1
                                       ? WHARF_LOG_DEBUG
                                       : WHARF_LOG_INFO;
        s->own_config->log_format = LOG_FORMAT_TEXT;
        s->manifest = s->own_config;
    }
    log_setup(s->manifest->log_level, s->manifest->log_format);
    return 0;
}

/* Without a PLUGIN.so (wharf dead run): the plugin the manifest routes
 * the type to. A section whose types list it names it without loading
 * anything; else the loader decides as a host would (a section without
 * types serves its descriptor's, autoload adds plugins_dir's files),
 * running no plugin code but constructors, and is closed again. 0 with
 * s->so set, or the exit code after saying why. */
static int run_routed_plugin(cli *ctx, run_state *s)
{
    const config *cfg = s->manifest;
    char err[CONFIG_ERR_LEN];
    const route *r;
    loader *ld;

    if (s->so)
        return 0;
    for (size_t i = 0; i < cfg->n_plugins && !s->so; i++)
        if (run_section_lists(&cfg->plugins[i], s->type)) {
            snprintf(s->so_buf, sizeof(s->so_buf), "%s", cfg->plugins[i].path);
            s->so = s->so_buf;
        }
    if (s->so)
        return 0;
    if (loader_open(cfg, &ld, err, sizeof(err)) != 0)
        return cli_fail(ctx, EX_CONFIG, "%s", err);
    if ((r = loader_route(ld, s->type)) != NULL) {
        snprintf(s->so_buf, sizeof(s->so_buf), "%s", r->plugin->path);
        s->so = s->so_buf;
    }
    loader_close(ld);
    if (!s->so)
        return cli_fail(ctx, EX_CONFIG,
                        "%s routes no plugin to type '%s': name its "
                        "PLUGIN.so after the id",
                        cfg->file ? cfg->file : "the manifest", s->type);
    return 0;
}

/* The plugin's realpath and its stem ("webhook" for .../webhook.so). 0 or
 * the exit code after saying why. */
static int run_find_plugin(cli *ctx, run_state *s)
{
    char quoted[CLI_PATH_QUOTE_MAX];
    const char *slash;
    size_t n;

    if (realpath(s->so, s->real) == NULL) {
        quote_text(s->so, quoted, sizeof(quoted));
        return cli_fail(ctx, EX_CONFIG, "%s: %s", quoted, strerror(errno));
    }
    slash = strrchr(s->real, '/');
    snprintf(s->stem, sizeof(s->stem), "%s", slash ? slash + 1 : s->real);
    n = strlen(s->stem);
    if (n > 3 && strcmp(s->stem + n - 3, ".so") == 0)
        s->stem[n - 3] = '\0';
    return 0;
}

/* Loads the one plugin given, with its manifest section if it has one
 * (its own keys and its types), else as if the manifest said
 * [plugin.STEM] types = TYPE; runs its init and finds the route of the
 * type. 0 or the exit code after saying why. */
static int run_open_plugin(cli *ctx, run_state *s)
{
    const plugin_section *found =
        run_find_section(s->manifest, s->real, s->stem, s->type);
    char err[CONFIG_ERR_LEN];
    loader *ld;

    if (found) {
        s->section = *found;
        s->section.path_line = found->line;
    } else {
        memset(&s->section, 0, sizeof(s->section));
        s->section.name = s->stem;
        s->section_types[0] = (char *)s->type;
        s->section.types = s->section_types;
    }
    s->section.path = s->real;
    s->run_config = *s->manifest;
    s->run_config.plugins = &s->section;
    s->run_config.n_plugins = 1;
    s->run_config.autoload = false;
    if (loader_open(&s->run_config, &s->ld, err, sizeof(err)) == 0)
        s->ld->phase = WHARF_PHASE_RUN;
    if (!s->ld || loader_init(s->ld, err, sizeof(err)) != 0)
        return cli_fail(ctx, EX_CONFIG, "%s", err);
    ld = s->ld;
    s->route = loader_route(ld, s->type);
    if (s->route == NULL)
        return cli_fail(ctx, EX_USAGE, "%s serves %s%s, not %s", s->so,
                        ld->n_routes ? ld->routes[0].type : "no type",
                        ld->n_routes > 1 ? " and more" : "", s->type);
    return 0;
}

/* The task the plugin gets: the id given, else the payload's hash (as
 * enqueue makes it); the trace given, else a new one. 0 or the exit code
 * after saying why. */
static int run_make_task(cli *ctx, run_state *s)
{
    unsigned char random_bytes[CLIENT_TRACE_BYTES];
    wharf_task *task = &s->task;

    if (!s->id) {
        s->md_ctx = EVP_MD_CTX_new();
        if (!s->md_ctx ||
            client_hash_id(s->md_ctx, EVP_sha256(), s->type, s->payload,
                           s->payload_len, s->id_buf) != 0)
            return cli_fail(ctx, EX_SOFTWARE, "cannot hash the payload");
        s->id = s->id_buf;
    }
    if (!s->trace) {
        if (client_random_bytes(random_bytes, sizeof(random_bytes)) != 0)
            return cli_fail(ctx, EX_SOFTWARE, "no randomness for a trace");
        client_new_trace(random_bytes, s->trace_buf);
        s->trace = s->trace_buf;
    }
    memset(task, 0, sizeof(*task));
    task->id = s->id;
    task->type = s->type;
    task->trace = s->trace;
    task->payload = (const unsigned char *)s->payload;
    task->payload_len = s->payload_len;
    task->attempt = s->attempt;
    task->max_attempts = s->route->policy->max_attempts;
    /* A run of its own is a first lock's (1), enqueued now; a dead task
     * runs again as it ran. */
    task->fence = s->replayed ? s->fence : 1;
    task->enqueued_at_ms = s->replayed ? s->enqueued_at_ms : clock_wall_ms();
    return 0;
}

/* Runs process_business once, under the type's timeout as a worker runs
 * it: wharf_deadline_ms counts it down, and a plugin still running a
 * grace after it is given up on, the outcome a worker's SIGKILL has.
 * Sets s->status (a timeout or a status that is none is a retry, with
 * why in the context's error) and s->elapsed. */
static void run_call(const cli *ctx, run_state *s)
{
    const policy *pol = s->route->policy;
    context *c = &s->c;
    struct sigaction on_alarm;
    int64_t started;

    snprintf(run_timeout_message, sizeof(run_timeout_message),
             "wharf: %s: timeout after %" PRId64 " ms (killed after a "
             "%d ms grace); the host would retry it\n",
             ctx->command->name, pol->timeout_ms, RUN_GRACE_MS);
    memset(&on_alarm, 0, sizeof(on_alarm));
    on_alarm.sa_handler = run_on_alarm;
    sigemptyset(&on_alarm.sa_mask);
    sigaction(SIGALRM, &on_alarm, NULL);

    context_init(c, s->route->plugin, WORKER_MAX_RESULT);
    c->phase = WHARF_PHASE_RUN;
    s->context_ready = true;
    context_begin(c, &s->task);
    started = clock_ms();
    context_set_deadline(c, started + pol->timeout_ms, NULL, 0);
    run_alarm(pol->timeout_ms + RUN_GRACE_MS);
    s->status = s->route->plugin->desc->process_business(&c->base, &s->task);
    run_alarm(0);
    s->elapsed = clock_ms() - started;
    context_end(c);
    s->status = run_outcome(c, s->status, s->elapsed, pol->timeout_ms);
}

/* The calls of --threads and --repeat: refused above one thread for a
 * plugin that has not promised it may run on many; else run and counted
 * (run_many.c). 0 or the exit code after saying why. */
static int run_calls(cli *ctx, run_state *s)
{
    char err[256];

    if (s->threads > 1 && !s->route->plugin->thread_safe)
        return cli_fail(ctx, EX_CONFIG,
                        "%s has not opted in to threads (.thread_safe = 1 in "
                        "its WHARF_PLUGIN descriptor, docs/sdk.md): "
                        "--threads %u needs it; run it with --threads 1",
                        s->so, s->threads);
    if (run_many(s->route, &s->task, s->threads, s->repeat, &s->tally, err,
                 sizeof(err)) != 0)
        return cli_fail(ctx, EX_OSERR, "%s", err);
    return 0;
}

/* Prints the outcome: the result bytes alone with --result, else one
 * "name: value" a line. Returns the exit code: what the host would do. */
static int run_report(cli *ctx, const run_state *s)
{
    const context *c = &s->c;
    wharf_status status = s->status;
    int code = status == WHARF_OK     ? EX_OK
               : status == WHARF_FAIL ? EX_DATAERR
                                      : EX_TEMPFAIL;

    if (s->result_only) {
        if (status == WHARF_OK && c->has_result && c->result_len > 0 &&
            fwrite(c->result, 1, c->result_len, stdout) != c->result_len)
            code = EX_IOERR;
        if (status != WHARF_OK)
            cli_fail(ctx, code, "%s: %s", run_status_name(status),
                     c->error[0] ? c->error : "(no reason given)");
        /* stdout holds the result alone: the old error goes to stderr. */
        if (s->died_with) {
            fprintf(stderr, "wharf: %s: died with: ", ctx->command->name);
            cli_print_escaped(stderr, s->died_with, strlen(s->died_with));
            fputc('\n', stderr);
        }
        return code;
    }
    printf("status: %s\n", run_status_name(status));
    if (status == WHARF_RETRY && s->task.attempt >= s->task.max_attempts)
        printf("note: attempt %u of %u: the host would dead-letter it\n",
               s->task.attempt, s->task.max_attempts);
    if (c->error[0] && status != WHARF_OK) {
        printf("error: ");
        cli_print_escaped(stdout, c->error, strlen(c->error));
        putchar('\n');
    }
    if (status == WHARF_RETRY && c->retry_in_ms >= 0 &&
        s->task.attempt < s->task.max_attempts)
        printf("retry_in_ms: %" PRId64 "\n",
               backoff_retry_in(s->route->policy, c->retry_in_ms));
    if (status == WHARF_OK && c->has_result) {
        printf("result: ");
        cli_print_escaped(stdout, (const char *)c->result, c->result_len);
        putchar('\n');
    }
    printf("duration_ms: %" PRId64 "\n", s->elapsed);
    if (s->died_with) {
        printf("died with: ");
        cli_print_escaped(stdout, s->died_with, strlen(s->died_with));
        putchar('\n');
    }
    return code;
}

/* Prints what the calls of --threads and --repeat returned, one "name:
 * value" a line. Returns the exit code: 65 if any failed, else 75 if any
 * would be retried, else 0. */
static int run_report_calls(const run_state *s)
{
    const run_many_tally *t = &s->tally;

    printf("calls: %" PRIu64 " (%u thread%s x %u)\n",
           t->ok + t->retry + t->fail, s->threads, s->threads == 1 ? "" : "s",
           s->repeat);
    printf("ok: %" PRIu64 "\nretry: %" PRIu64 "\nfail: %" PRIu64 "\n", t->ok,
           t->retry, t->fail);
    if (t->timeouts)
        printf("timeouts: %" PRIu64 "\n", t->timeouts);
    if (t->first_error[0]) {
        printf("first_error: %s: ", t->first_error_id);
        cli_print_escaped(stdout, t->first_error, strlen(t->first_error));
        putchar('\n');
    }
    printf("slowest_ms: %" PRId64 "\nduration_ms: %" PRId64 "\n",
           t->slowest_ms, t->elapsed_ms);
    return t->fail ? EX_DATAERR : t->retry ? EX_TEMPFAIL : EX_OK;
}

/* Frees what s owns; closing the loader runs the plugin's fini. */
static void run_cleanup(run_state *s)
{
    if (s->context_ready)
        context_destroy(&s->c);
    loader_close(s->ld);
    EVP_MD_CTX_free(s->md_ctx);
    config_free(s->own_config);
    free(s->input);
}

/* From the manifest to the report, for s as run_take_args or
 * cli_run_replay filled it; frees what s owns. Returns the exit code. */
static int run_state_run(cli *ctx, run_state *s)
{
    int code;

    if ((code = run_load_manifest(ctx, s)) == 0 &&
        (code = run_routed_plugin(ctx, s)) == 0 &&
        (code = run_find_plugin(ctx, s)) == 0 &&
        (code = run_open_plugin(ctx, s)) == 0 &&
        (code = run_make_task(ctx, s)) == 0) {
        if (s->threads == 1 && s->repeat == 1) {
            run_call(ctx, s);
            code = run_report(ctx, s);
        } else if ((code = run_calls(ctx, s)) == 0) {
            code = run_report_calls(s);
        }
    }
    run_cleanup(s);
    return code;
}

int cli_run_replay(cli *ctx, const cli_replay *replay)
{
    const wharf_task *task = replay->task;
    run_state s;

    memset(&s, 0, sizeof(s));
    s.so = replay->plugin_path;
    s.type = task->type;
    s.config_path = replay->config_path;
    s.id = task->id;
    s.trace = task->trace;
    s.attempt = task->attempt;
    s.threads = s.repeat = 1;
    s.result_only = replay->result_only;
    s.payload = (const char *)task->payload;
    s.payload_len = task->payload_len;
    s.replayed = true;
    s.fence = task->fence;
    s.enqueued_at_ms = task->enqueued_at_ms;
    s.died_with = replay->died_with;
    return run_state_run(ctx, &s);
}

static int run(cli *ctx, const cli_args *args)
{
    run_state s;
    int code;

    memset(&s, 0, sizeof(s));
    if ((code = run_take_args(ctx, args, &s)) != 0) {
        run_cleanup(&s);
        return code;
    }
    return run_state_run(ctx, &s);
}

const cli_command cmd_run_entry = {
    .name = "run",
    .usage = "PLUGIN.so TYPE [PAYLOAD|-] [--config FILE] [--attempt N] "
             "[--id ID] [--trace TP] [--result] [--threads N] [--repeat M]",
    .help =
        "Runs one task through a plugin in this process, without Redis: a\n"
        "plugin author's inner loop. The plugin is loaded as a worker\n"
        "loads it (same checks, its [plugin.NAME] section), then init,\n"
        "process_business and fini run; the status, result, error and\n"
        "log lines are printed.\n"
        "  --config FILE  the manifest whose section configures it\n"
        "  --attempt N    the attempt the plugin sees (1)\n"
        "  --id ID        the task id (else the SHA-256 of type and payload,\n"
        "                 as enqueue makes it); --trace TP its traceparent\n"
        "  --result       print only the result bytes on stdout\n"
        "  --threads N    run on N threads at once (1-1024), each call with\n"
        "                 its own context and task id ID.k; only a plugin\n"
        "                 with .thread_safe = 1 runs on more than one\n"
        "  --repeat M     M calls on each thread (1); the outcomes are\n"
        "                 counted, the first error shown\n"
        "Exit: 0 ok; 75 retry; 65 fail (of many: any failed, else any\n"
        "retried); 78 not loadable, init failed or not thread-safe;\n"
        "64 usage.\n",
    .flags = {[OPT_CONFIG] = {"config", true},
              [OPT_ATTEMPT] = {"attempt", true, run_check_attempt},
              [OPT_ID] = {"id", true},
              [OPT_TRACE] = {"trace", true},
              [OPT_RESULT] = {"result", false},
              [OPT_THREADS] = {"threads", true, run_check_threads},
              [OPT_REPEAT] = {"repeat", true, run_check_repeat}},
    .operands = {"PLUGIN.so", "TYPE", "PAYLOAD"},
    .lower = 2,
    .upper = 3,
    .run = run,
};
