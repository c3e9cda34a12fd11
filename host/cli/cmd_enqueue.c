/* wharf enqueue TYPE [PAYLOAD|-] [--id ID] [--delay DUR] [--trace TP]
 *               [--wait DUR] [--timeout DUR] [--max-attempts N]
 *               [--expire-in DUR | --expires RFC3339] | TYPE --file FILE
 * Prints the task id alone on stdout; a duplicate prints the existing id
 * and says so on stderr. --wait retries while the type refuses tasks with
 * BACKPRESSURE. --file is cmd_enqueue_file.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "cli.h"
#include "cmd_enqueue_workflow.h"
#include "client_ids.h"
#include "clock_ms.h"
#include "enqueue_options.h"
#include "quote.h"

/* A bad --trace as quoted: a traceparent is 55 bytes, a longer text is
 * shown cut. */
#define TRACE_QUOTE_MAX 80

enum {
    OPT_ID,
    OPT_DELAY,
    OPT_TRACE,
    OPT_WAIT,
    OPT_FILE,
    OPT_STRICT,
    OPT_AFTER,
    OPT_ON_PARENT_DEAD,
    OPT_GROUP,
    OPT_THEN,
    OPT_TIMEOUT,
    OPT_MAX_ATTEMPTS,
    OPT_EXPIRE_IN,
    OPT_EXPIRES
};

/* The per-task options of args, as given. */
static enqueue_option_texts option_texts(const cli_args *args)
{
    return (enqueue_option_texts){
        args->flag[OPT_TIMEOUT], args->flag[OPT_MAX_ATTEMPTS],
        args->flag[OPT_EXPIRE_IN], args->flag[OPT_EXPIRES]};
}

/* The whole of stdin, binary-safe. 0 with *data malloc'd (caller frees),
 * or -1 with errno set. */
static int read_stdin(char **data, size_t *len)
{
    size_t used = 0, cap = 0;
    char *buf = NULL, *grown;

    errno = 0;
    for (;;) {
        size_t got;
        if (cap - used < 4096) {
            cap = cap ? cap * 2 : 65536;
            grown = realloc(buf, cap);
            if (!grown)
                goto fail;
            buf = grown;
        }
        got = fread(buf + used, 1, cap - used, stdin);
        used += got;
        if (got == 0)
            break;
    }
    if (ferror(stdin))
        goto fail;
    *data = buf;
    *len = used;
    return 0;
fail:
    if (errno == 0)
        errno = EIO;
    free(buf);
    return -1;
}

/* Enqueues t with options o, retrying on BACKPRESSURE or a full Redis
 * (FULL) until wait_ms has passed. */
static int enqueue_one(cli *ctx, const wharf_enqueue_opts *t,
                       const wharf_task_options *o, int64_t wait_ms)
{
    int64_t deadline = clock_ms() + wait_ms, step = 0;
    wharf_enqueue_reply reply;
    wharf_client_status status;

    for (;;) {
        status = wharf_enqueue_with(ctx->client, t, o, &reply);
        if ((status != WHARF_CLIENT_BACKPRESSURE &&
             status != WHARF_CLIENT_FULL) ||
            wait_ms <= 0 || cli_backoff(&step, deadline) != 0)
            break;
    }
    if (status == WHARF_CLIENT_OK || status == WHARF_CLIENT_DUPLICATE)
        printf("%s\n", reply.id);
    if (status == WHARF_CLIENT_OK && reply.unserved)
        cli_warn_unserved(ctx, t->type, "");

    if (status == WHARF_CLIENT_DUPLICATE)
        return cli_fail(ctx, EX_OK,
                        "duplicate: task '%s' is already "
                        "enqueued",
                        reply.id);
    if (status == WHARF_CLIENT_OK)
        return EX_OK;
    if (status == WHARF_CLIENT_FULL)
        return cli_fail(ctx, EX_TEMPFAIL, "%s; nothing was enqueued",
                        wharf_client_errstr(ctx->client));
    return cli_fail(ctx, cli_exit_status(status), "%s",
                    wharf_client_errstr(ctx->client));
}

/* --file stands for the PAYLOAD, and for many tasks. */
static int check(cli *ctx, const cli_args *args)
{
    const char *file = args->flag[OPT_FILE];
    enqueue_option_texts texts = option_texts(args);

    /* Workflow members and children have no way to carry them yet:
     * refused rather than dropped. */
    if (enqueue_options_given(&texts) &&
        (args->flag[OPT_AFTER] || args->flag[OPT_GROUP]))
        return cli_usage(ctx, "--timeout, --max-attempts, --expire-in and "
                              "--expires go with plain tasks, not --after "
                              "or --group");

    if (args->flag[OPT_GROUP] || args->flag[OPT_THEN]) {
        if (!file || !args->flag[OPT_GROUP] || !args->flag[OPT_THEN])
            return cli_usage(ctx, "a group takes --file, --group and --then "
                                  "together");
        if (args->flag[OPT_AFTER])
            return cli_usage(ctx, "--after and --group do not go together");
        return 0; /* PAYLOAD is the callback's */
    }
    if (args->flag[OPT_ON_PARENT_DEAD] && !args->flag[OPT_AFTER])
        return cli_usage(ctx, "--on-parent-dead goes with --after");
    if (file && args->flag[OPT_AFTER])
        return cli_usage(ctx, "--after enqueues one task, not --file");
    if (file && args->count > 1)
        return cli_usage(ctx, "give a PAYLOAD or --file, not both");
    if (file && args->flag[OPT_ID])
        return cli_usage(ctx, "--id names one task; --file enqueues many");
    return 0;
}

static int run(cli *ctx, const cli_args *args)
{
    wharf_enqueue_opts task;
    wharf_task_options options;
    enqueue_option_texts texts = option_texts(args);
    const char *file = args->flag[OPT_FILE];
    const char *wait_text = args->flag[OPT_WAIT];
    const char *delay_text = args->flag[OPT_DELAY];
    const char *payload = args->count > 1 ? args->operand[1] : NULL;
    char *input = NULL;
    int64_t wait_ms = 0;
    int code, strict = ctx->config && ctx->config->producer_strict;

    memset(&task, 0, sizeof(task));
    task.id = args->flag[OPT_ID];
    task.trace = args->flag[OPT_TRACE];
    if (args->flag[OPT_STRICT])
        strict = 1;
    task.type = args->operand[0];
    if ((delay_text && (code = cli_duration(ctx, "--delay", delay_text,
                                            &task.delay_ms)) != 0) ||
        (wait_text &&
         (code = cli_duration(ctx, "--wait", wait_text, &wait_ms)) != 0))
        return code;
    if ((code = enqueue_options_read(ctx, &texts, clock_wall_ms(), &options)) !=
        0)
        return code;
    if ((code = cli_check_type(ctx, task.type)) != 0 ||
        (task.id && (code = cli_check_id(ctx, task.id)) != 0))
        return code;
    if (task.trace && !client_valid_trace(task.trace)) {
        char quoted[TRACE_QUOTE_MAX];
        quote_text(task.trace, quoted, sizeof(quoted));
        return cli_fail(
            ctx, EX_DATAERR,
            "trace '%s' is not a W3C traceparent: " CLIENT_TRACE_RULE, quoted);
    }
    if (args->flag[OPT_GROUP])
        return cli_enqueue_group(ctx, file, task.type, args->flag[OPT_GROUP],
                                 args->flag[OPT_THEN], payload);
    if (file) {
        if ((code = cli_connect(ctx)) != 0)
            return code;
        wharf_client_set_strict(ctx->client, strict);
        return cli_enqueue_file(ctx, file, &task, &options, wait_ms);
    }
    if (payload && strcmp(payload, "-") != 0) {
        task.payload = payload;
        task.payload_len = strlen(payload);
    } else if (read_stdin(&input, &task.payload_len) != 0) {
        return cli_fail(ctx, EX_IOERR,
                        "cannot read the payload from stdin: "
                        "%s",
                        strerror(errno));
    } else {
        task.payload = input;
    }
    if (args->flag[OPT_AFTER]) {
        code = cli_enqueue_after(ctx, &task, args->flag[OPT_AFTER],
                                 args->flag[OPT_ON_PARENT_DEAD]);
        free(input);
        return code;
    }
    code = cli_connect(ctx);
    if (code == 0) {
        wharf_client_set_strict(ctx->client, strict);
        code = enqueue_one(ctx, &task, &options, wait_ms);
    }
    free(input);
    return code;
}

const cli_command cmd_enqueue_entry = {
    .name = "enqueue",
    .usage = "TYPE [PAYLOAD|-] [--id ID] [--delay DUR] [--trace TP] "
             "[--wait DUR] [--strict] [--timeout DUR] [--max-attempts N] "
             "[--expire-in DUR|--expires RFC3339] [--after TYPE:ID,...] "
             "[--on-parent-dead dead|run] | TYPE --file FILE [--strict] "
             "[--timeout DUR] [--max-attempts N] [--expire-in DUR] | "
             "TYPE --file FILE --group G --then TYPE2 [PAYLOAD]",
    .help = "Adds a task of TYPE with PAYLOAD (or stdin with -, or nothing: an empty\n"
"payload) and prints its id. The id is --id, else the SHA-256 of type and\n"
"payload (the type's idempotency = payload), else a random one.\n"
"  --id ID       the task's id (its idempotency key)\n"
"  --delay DUR   run it no sooner than DUR from now (500ms, 10s, 5m, 1h, 1d)\n"
"  --trace TP    a W3C traceparent to carry (one is made otherwise)\n"
"  --wait DUR    on backpressure, keep trying with backoff up to DUR\n"
"  --timeout DUR this task's timeout (1ms to 30d; a run gets the shorter of\n"
"                it and the type's)\n"
"  --max-attempts N  this task's attempts (1 to 1000) instead of the type's\n"
"  --expire-in DUR  if no attempt has begun DUR from now, none does: the\n"
"                task is dead with \"expired\" (a retry due later too)\n"
"  --expires T   the same at the RFC 3339 time T (2026-12-04T03:00:00Z)\n"
"  --file FILE   one payload a line (- for stdin); prints one id a line\n"
"  --strict      refuse a type no host has ever served (else: a warning)\n"
"                ([producer] strict = yes in the --config manifest too)\n"
"  --after LIST  hold it until each TYPE:ID of LIST has finished (each must\n"
"                be queued, running, delayed, held, done or dead now)\n"
"  --on-parent-dead dead|run  a dead parent makes it dead (the default,\n"
"                \"parent TYPE:ID is dead\") or it runs anyway\n"
"  --group G     with --file: the lines are group G's members (ids G:1,\n"
"                G:2, ...); --then TYPE2 [PAYLOAD] is its callback, enqueued\n"
"                once when the last member ends, with the counts and ids\n"
"Exit: 0 added, or a duplicate (said on stderr); 65 bad input, too large,\n"
"or a type no host serves with --strict; 69 Redis unavailable; 75\n"
"backpressure or Redis full; 76 the hosts speak another wharf protocol;\n"
"78 bad configuration or refused password.\n",
    .flags = {[OPT_ID] = {"id", true},
              [OPT_DELAY] = {"delay", true},
              [OPT_TRACE] = {"trace", true},
              [OPT_WAIT] = {"wait", true},
              [OPT_FILE] = {"file", true},
              [OPT_STRICT] = {"strict", false},
              [OPT_AFTER] = {"after", true},
              [OPT_ON_PARENT_DEAD] = {"on-parent-dead", true},
              [OPT_GROUP] = {"group", true},
              [OPT_THEN] = {"then", true},
              [OPT_TIMEOUT] = {"timeout", true},
              [OPT_MAX_ATTEMPTS] = {"max-attempts", true},
              [OPT_EXPIRE_IN] = {"expire-in", true},
              [OPT_EXPIRES] = {"expires", true}},
    .operands = {"TYPE", "PAYLOAD"},
    .lower = 1,
    .upper = 2,
    .check = check,
    .run = run,
};
