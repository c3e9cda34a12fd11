/* wharf enqueue TYPE [PAYLOAD|-] [--id ID] [--delay DUR] [--trace TP]
 *               [--wait DUR] | TYPE --file FILE
 * Prints the task id alone on stdout; a duplicate prints the existing id
 * and says so on stderr. --wait retries while the type refuses tasks with
 * BACKPRESSURE. --file is cmd_enqueue_file.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "cli.h"
#include "client_ids.h"
#include "monotonic.h"

enum {
    OPT_ID = 'i',
    OPT_DELAY = 'd',
    OPT_TRACE = 't',
    OPT_WAIT = 'w',
    OPT_FILE = 'f',
    OPT_STRICT = 's'
};

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

/* Enqueues t, retrying on BACKPRESSURE or a full Redis (FULL) until
 * wait_ms has passed. */
static int enqueue_one(cli *ctx, const wharf_enqueue_opts *t, int64_t wait_ms)
{
    int64_t deadline = monotonic_ms() + wait_ms, step = 0;
    wharf_enqueue_reply reply;
    wharf_client_status status;

    for (;;) {
        status = wharf_enqueue(ctx->client, t, &reply);
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

static int run(cli *ctx, int argc, char **argv)
{
    static const struct option options[] = {
        {"id", required_argument, NULL, OPT_ID},
        {"delay", required_argument, NULL, OPT_DELAY},
        {"trace", required_argument, NULL, OPT_TRACE},
        {"wait", required_argument, NULL, OPT_WAIT},
        {"file", required_argument, NULL, OPT_FILE},
        {"strict", no_argument, NULL, OPT_STRICT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    wharf_enqueue_opts task;
    const char *file = NULL, *wait_text = NULL, *delay_text = NULL;
    char *input = NULL;
    int64_t wait_ms = 0;
    int opt, code, strict = ctx->config && ctx->config->producer_strict;

    memset(&task, 0, sizeof(task));
    while ((opt = cli_option(ctx, argc, argv, options)) > 0) {
        if (opt == OPT_ID)
            task.id = optarg;
        else if (opt == OPT_DELAY)
            delay_text = optarg;
        else if (opt == OPT_TRACE)
            task.trace = optarg;
        else if (opt == OPT_WAIT)
            wait_text = optarg;
        else if (opt == OPT_STRICT)
            strict = 1;
        else
            file = optarg;
    }
    if (opt < 0)
        return cli_option_exit(opt);
    if (optind >= argc)
        return cli_usage(ctx, "missing TYPE");
    task.type = argv[optind++];
    if (optind < argc && file)
        return cli_usage(ctx, "give a PAYLOAD or --file, not both");
    if (file && task.id)
        return cli_usage(ctx, "--id names one task; --file enqueues many");
    if (optind + 1 < argc)
        return cli_unexpected(ctx, argv[optind + 1]);
    if ((delay_text && (code = cli_duration(ctx, "--delay", delay_text,
                                            &task.delay_ms)) != 0) ||
        (wait_text &&
         (code = cli_duration(ctx, "--wait", wait_text, &wait_ms)) != 0))
        return code;
    if ((code = cli_check_type(ctx, task.type)) != 0 ||
        (task.id && (code = cli_check_id(ctx, task.id)) != 0))
        return code;
    if (task.trace && !client_valid_trace(task.trace)) {
        char quoted[80];
        client_quote(task.trace, quoted, sizeof(quoted));
        return cli_fail(
            ctx, EX_DATAERR,
            "trace '%s' is not a W3C traceparent: " CLIENT_TRACE_RULE, quoted);
    }
    if (file) {
        if ((code = cli_connect(ctx)) != 0)
            return code;
        wharf_client_set_strict(ctx->client, strict);
        return cli_enqueue_file(ctx, file, &task, wait_ms);
    }
    if (optind < argc && strcmp(argv[optind], "-") != 0) {
        task.payload = argv[optind];
        task.payload_len = strlen(argv[optind]);
    } else if (read_stdin(&input, &task.payload_len) != 0) {
        return cli_fail(ctx, EX_IOERR,
                        "cannot read the payload from stdin: "
                        "%s",
                        strerror(errno));
    } else {
        task.payload = input;
    }
    code = cli_connect(ctx);
    if (code == 0) {
        wharf_client_set_strict(ctx->client, strict);
        code = enqueue_one(ctx, &task, wait_ms);
    }
    free(input);
    return code;
}

const cli_command cmd_enqueue_entry = {
    .name = "enqueue",
    .usage = "TYPE [PAYLOAD|-] [--id ID] [--delay DUR] [--trace TP] "
             "[--wait DUR] [--strict] | TYPE --file FILE [--strict]",
    .help = "Adds a task of TYPE with PAYLOAD (or stdin with -, or nothing: an empty\n"
"payload) and prints its id. The id is --id, else the SHA-256 of type and\n"
"payload (the type's idempotency = payload), else a random one.\n"
"  --id ID       the task's id (its idempotency key)\n"
"  --delay DUR   run it no sooner than DUR from now (500ms, 10s, 5m, 1h, 1d)\n"
"  --trace TP    a W3C traceparent to carry (one is made otherwise)\n"
"  --wait DUR    on backpressure, keep trying with backoff up to DUR\n"
"  --file FILE   one payload a line (- for stdin); prints one id a line\n"
"  --strict      refuse a type no host has ever served (else: a warning)\n"
"                ([producer] strict = yes in the --config manifest too)\n"
"Exit: 0 added, or a duplicate (said on stderr); 65 bad input, too large,\n"
"or a type no host serves with --strict; 69 Redis unavailable; 75\n"
"backpressure or Redis full; 76 the hosts speak another wharf protocol;\n"
"78 bad configuration or refused password.\n",
    .run = run,
};
