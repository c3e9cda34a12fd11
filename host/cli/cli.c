/* What the wharf commands share: one-line messages and exit codes, the
 * argument parser that reads each command's declared flags and operands,
 * checks of names and durations, the Redis connection, and printing; see
 * cli.h. */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>

#include "client_ids.h"
#include "clock_ms.h"
#include "conn.h"
#include "json_out.h"
#include "quote.h"
#include "redis_url.h"
#include "served.h"
#include "tls.h"

/* Prints "wharf: NAME: message". A message that names the command itself
 * (the client library's "enqueue: redis answered: ...", which a program
 * printing it alone needs) loses that word here, so the line does not say
 * "enqueue: enqueue:". */
/* A message line that needs no malloc (a longer one gets one), and a
 * bad duration as quoted (a duration is short). */
#define CLI_LINE_MAX 1024
#define DURATION_QUOTE_MAX 60

static void vsay(cli *ctx, const char *fmt, va_list ap)
{
    const char *name = ctx->command->name, *text;
    size_t n = strlen(name);
    char small[CLI_LINE_MAX], *line = small;
    va_list again;
    int len;

    va_copy(again, ap);
    len = vsnprintf(small, sizeof(small), fmt, ap);
    if (len >= (int)sizeof(small) && (line = malloc((size_t)len + 1)) != NULL)
        vsnprintf(line, (size_t)len + 1, fmt, again);
    va_end(again);
    if (len < 0)
        small[0] = '\0';
    if (!line)
        line = small; /* cut, rather than nothing */
    text = line;
    if (strncmp(text, name, n) == 0 && strncmp(text + n, ": ", 2) == 0)
        text += n + 2;
    fprintf(stderr, "wharf: %s: %s\n", name, text);
    if (line != small)
        free(line);
}

int cli_fail(cli *ctx, int code, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsay(ctx, fmt, ap);
    va_end(ap);
    return code;
}

int cli_usage(cli *ctx, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsay(ctx, fmt, ap);
    va_end(ap);
    fprintf(stderr, "usage: wharf %s %s\n", ctx->command->name,
            ctx->command->usage);
    return EX_USAGE;
}

/* cli_usage saying arg (an operand too many, shown as quote_text
 * shows it) was not expected: 64. */
static int unexpected(cli *ctx, const char *arg)
{
    char quoted[CLI_QUOTE_MAX];

    quote_text(arg, quoted, sizeof(quoted));
    return cli_usage(ctx, "unexpected argument '%s'", quoted);
}

/* getopt_long's val for the flag at place i of a command's flags: above
 * any character, so none is taken for '?', ':' or 'h'. */
#define FLAG_VAL 256

/* The getopt_long table of a command's flags, then --help and the zero
 * row, in opts of CLI_FLAGS_MAX + 2 rows. */
static void option_table(const cli_command *entry, struct option *opts)
{
    size_t n = 0;

    for (; n < CLI_FLAGS_MAX && entry->flags[n].name; n++) {
        opts[n].name = entry->flags[n].name;
        opts[n].has_arg =
            entry->flags[n].value ? required_argument : no_argument;
        opts[n].flag = NULL;
        opts[n].val = FLAG_VAL + (int)n;
    }
    opts[n++] = (struct option){"help", no_argument, NULL, 'h'};
    opts[n] = (struct option){NULL, 0, NULL, 0};
}

/* Reads the flags of argv into args; false with the exit code in *code
 * after --help or a usage error. Leaves optind at the first operand. */
static bool read_flags(cli *ctx, int argc, char **argv, cli_args *args,
                       int *code)
{
    const cli_command *entry = ctx->command;
    struct option opts[CLI_FLAGS_MAX + 2];
    char quoted[CLI_QUOTE_MAX];
    int opt;

    option_table(entry, opts);
    optind = 0; /* afresh: main's getopt_long read the global options */
    opterr = 0; /* our own messages: one line, then the usage */
    while ((opt = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
        const cli_flag *flag;
        switch (opt) {
        case 'h':
            printf("usage: wharf %s %s\n", entry->name, entry->usage);
            if (entry->help)
                printf("\n%s", entry->help);
            *code = EX_OK;
            return false;
        case ':':
            quote_text(argv[optind - 1], quoted, sizeof(quoted));
            *code = cli_usage(ctx, "option '%s' needs a value", quoted);
            return false;
        case '?':
            quote_text(argv[optind - 1], quoted, sizeof(quoted));
            *code = cli_usage(ctx, "unknown option '%s'", quoted);
            return false;
        default:
            flag = &entry->flags[opt - FLAG_VAL];
            if (flag->check && (*code = flag->check(ctx, optarg)) != 0)
                return false;
            args->flag[opt - FLAG_VAL] = optarg ? optarg : "";
        }
    }
    return true;
}

bool cli_parse(cli *ctx, int argc, char **argv, cli_args *args, int *code)
{
    const cli_command *entry = ctx->command;

    memset(args, 0, sizeof(*args));
    if (!read_flags(ctx, argc, argv, args, code))
        return false;
    args->operand = argv + optind;
    args->count = argc - optind;
    if (args->count < entry->lower) {
        *code = cli_usage(ctx, "missing %s", entry->operands[args->count]);
        return false;
    }
    if (entry->check && (*code = entry->check(ctx, args)) != 0)
        return false;
    if (args->count > entry->upper) {
        *code = unexpected(ctx, args->operand[entry->upper]);
        return false;
    }
    return true;
}

int cli_exit_status(wharf_client_status status)
{
    switch (status) {
    case WHARF_CLIENT_OK:
    case WHARF_CLIENT_DUPLICATE:
        return EX_OK;
    case WHARF_CLIENT_NOT_FOUND:
    case WHARF_CLIENT_TIMEOUT:
        return CLI_NOT_FOUND;
    case WHARF_CLIENT_DEAD:
        return CLI_DEAD;
    case WHARF_CLIENT_CANCELLED:
        return CLI_CANCELLED;
    case WHARF_CLIENT_BAD_INPUT:
    case WHARF_CLIENT_TOO_LARGE:
    case WHARF_CLIENT_UNSERVED:
        return EX_DATAERR;
    case WHARF_CLIENT_PROTOCOL:
        return EX_PROTOCOL;
    case WHARF_CLIENT_BACKPRESSURE:
    case WHARF_CLIENT_FULL:
        return EX_TEMPFAIL;
    case WHARF_CLIENT_UNAVAILABLE:
        return EX_UNAVAILABLE;
    case WHARF_CLIENT_AUTH:
        /* The password is configuration, as wharfd says with its 78. */
        return EX_CONFIG;
    case WHARF_CLIENT_ERROR:
        break;
    }
    return EX_SOFTWARE;
}

int cli_check_type(cli *ctx, const char *type)
{
    char quoted[CLI_QUOTE_MAX];

    if (config_valid_type_name(type))
        return 0;
    quote_text(type, quoted, sizeof(quoted));
    return cli_fail(ctx, EX_DATAERR,
                    "type '%s' is not valid: " CLIENT_TYPE_RULE, quoted);
}

int cli_check_id(cli *ctx, const char *id)
{
    char quoted[CLI_QUOTE_MAX];

    if (config_valid_task_id(id, strlen(id)))
        return 0;
    quote_text(id, quoted, sizeof(quoted));
    return cli_fail(ctx, EX_DATAERR,
                    "task id '%s' is not valid: " CLIENT_ID_RULE, quoted);
}

int cli_type_arg(cli *ctx, const cli_args *args, const char **type)
{
    int code;

    if ((code = cli_check_type(ctx, args->operand[0])) != 0)
        return code;
    *type = args->operand[0];
    ctx->type = *type;
    return 0;
}

int cli_type_and_id(cli *ctx, const cli_args *args, const char **type,
                    const char **id)
{
    int code;

    if ((code = cli_check_type(ctx, args->operand[0])) != 0 ||
        (code = cli_check_id(ctx, args->operand[1])) != 0)
        return code;
    *type = args->operand[0];
    *id = args->operand[1];
    ctx->type = *type;
    return 0;
}

int cli_duration(cli *ctx, const char *name, const char *text, int64_t *ms)
{
    char quoted[DURATION_QUOTE_MAX];

    if (config_parse_duration(text, ms) == 0)
        return 0;
    quote_text(text, quoted, sizeof(quoted));
    return cli_usage(ctx,
                     "%s '%s' is not a duration: use a whole number and "
                     "ms, s, m, h or d (e.g. 30s)",
                     name, quoted);
}

int cli_connect(cli *ctx)
{
    char err[CLI_ERR_MAX];
    wharf_client_status status;
    int code;

    if (ctx->client)
        return 0;
    status = wharf_client_open(&ctx->client, ctx->url, ctx->password,
                               ctx->prefix, err, sizeof(err));
    if (status == WHARF_CLIENT_OK) {
        /* The manifest's durability holds for what the CLI enqueues. */
        if (ctx->config && ctx->config->min_replicas_ack > 0)
            wharf_client_require_replicas(
                ctx->client, (int)ctx->config->min_replicas_ack,
                ctx->config->min_replicas_timeout_ms);
        return 0;
    }
    /* The address was checked before: a bad one came from the manifest. */
    code =
        status == WHARF_CLIENT_BAD_INPUT ? EX_CONFIG : cli_exit_status(status);
    return cli_fail(ctx, code, "%s", err);
}

void cli_disconnect(cli *ctx)
{
    wharf_client_close(ctx->client);
    ctx->client = NULL;
    conn_close(ctx->conn);
    ctx->conn = NULL;
}

/* Opens ctx->conn, the operator commands' connection, if it is not
 * open (it connects at its first use): 0, or the exit code after saying
 * why (78 for a bad address, which address_resolve has checked). */
static int open_conn(cli *ctx)
{
    char err[CLI_ERR_MAX];
    error_kind kind;

    if (ctx->conn)
        return 0;
    ctx->conn = conn_open(ctx->url, ctx->password, CONN_TIMEOUT_MS, &kind, err,
                          sizeof(err));
    if (ctx->conn)
        return 0;
    return cli_fail(ctx, kind == ERROR_KIND_SETUP ? EX_CONFIG : EX_SOFTWARE,
                    "%s", err);
}

redisContext *cli_redis(cli *ctx, int *code)
{
    redisContext *redis;

    char key[KEY_MAX];

    *code = open_conn(ctx);
    if (*code != 0)
        return NULL;
    if (ctx->type)
        cli_key(ctx, key, ctx->type, "stream");
    else
        key_global(key, sizeof(key), ctx->prefix, "types");
    redis = conn_redis_of(ctx->conn, key);
    if (!redis) {
        /* Credentials and a deployment that is not what the address says
         * are configuration, as for wharfd; the rest may pass. */
        error_kind kind = ctx->conn->err;
        *code = cli_fail(ctx,
                         kind == ERROR_KIND_AUTH || kind == ERROR_KIND_SETUP ||
                                 kind == ERROR_KIND_TLS
                             ? EX_CONFIG
                             : EX_UNAVAILABLE,
                         "%s", ctx->conn->errstr);
    }
    ctx->redis = redis;
    return redis;
}

/* Puts why a command on redis got no reply (saved_errno: errno right
 * after it) where cli_reply_check finds it: "Redis did not answer in 5 s"
 * for a Redis that is paused or stuck, rather than hiredis' "Resource
 * temporarily unavailable". */
static void say_no_reply(cli *ctx, const redisContext *redis, int saved_errno)
{
    conn_no_reply(ctx->conn, redis, saved_errno);
}

int cli_reply_check(cli *ctx, const redisReply *reply, const char *what)
{
    int code;

    switch (conn_reply_error(ctx->conn, reply, what)) {
    case ERROR_KIND_NONE:
        return 0;
    case ERROR_KIND_UNAVAILABLE:
        code = EX_UNAVAILABLE;
        break;
    case ERROR_KIND_FULL:
        code = EX_TEMPFAIL;
        break;
    case ERROR_KIND_AUTH:
        code = EX_CONFIG; /* as cli_exit_status says of AUTH */
        break;
    default:
        code = EX_SOFTWARE;
        break;
    }
    return cli_fail(ctx, code, "%s", ctx->conn->errstr);
}

redisReply *cli_run(cli *ctx, int *code, const char *what, const char *fmt, ...)
{
    redisContext *redis = cli_redis(ctx, code);
    redisReply *reply;
    va_list ap;

    if (!redis)
        return NULL;
    va_start(ap, fmt);
    reply = tls_vcommand(redis, fmt, ap);
    va_end(ap);
    if (!reply)
        say_no_reply(ctx, redis, errno);
    *code = cli_reply_check(ctx, reply, what);
    if (*code == 0)
        return reply;
    freeReplyObject(reply);
    return NULL;
}

redisReply *cli_read(cli *ctx, int *code, const char *what)
{
    redisReply *reply = NULL;

    *code = 0;
    if (ctx->redis && tls_get_reply(ctx->redis, (void **)&reply) == REDIS_OK)
        return reply;
    if (ctx->redis)
        say_no_reply(ctx, ctx->redis, errno);
    *code = cli_reply_check(ctx, NULL, what);
    conn_drop(ctx->conn);
    ctx->redis = NULL;
    return NULL;
}

void cli_key(const cli *ctx, char *buf, const char *type, const char *what)
{
    /* Names are checked and bounded, so the key always fits KEY_MAX. */
    key_of_type(buf, KEY_MAX, ctx->prefix, type, what);
}

void cli_task_key(const cli *ctx, char *buf, const char *type, const char *what,
                  const char *id)
{
    key_of_task(buf, KEY_MAX, ctx->prefix, type, what, id);
}

void cli_print_escaped(FILE *out, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '\\')
            fputs("\\\\", out);
        else if (ch == '\n')
            fputs("\\n", out);
        else if (ch == '\r')
            fputs("\\r", out);
        else if (ch == '\t')
            fputs("\\t", out);
        else if (!quote_shown(ch))
            fprintf(out, "\\x%02x", ch);
        else
            fputc(ch, out);
    }
}

void cli_print_json_string(FILE *out, const char *s)
{
    json_out b = {0};

    json_out_str(&b, s);
    fwrite(b.s, 1, b.len, out);
    json_out_free(&b);
}

int cli_printable(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (!quote_shown((unsigned char)s[i]))
            return 0;
    return 1;
}

void cli_iso_time(int64_t ms, char *buf, size_t len)
{
    time_t seconds = (time_t)(ms / 1000);
    struct tm tm;
    char date[40];

    if (ms < 0 || !gmtime_r(&seconds, &tm) ||
        strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
        snprintf(buf, len, "%lld", (long long)ms);
        return;
    }
    snprintf(buf, len, "%s.%03dZ", date, (int)(ms % 1000));
}

int cli_backoff(int64_t *step, int64_t deadline)
{
    int64_t left = deadline - clock_ms();

    if (left <= 0)
        return -1;
    *step = *step <= 0 ? 10 : *step * 2;
    if (*step > 1000)
        *step = 1000;
    clock_sleep_ms(*step < left ? *step : left);
    return 0;
}

void cli_warn_unserved(cli *ctx, const char *type, const char *then)
{
    char message[1200];

    /* The types are read on the operator connection: the client library
     * says nothing of them but through a refusal (strict). */
    if (cli_connect(ctx) != 0 || open_conn(ctx) != 0)
        return;
    served_message(&ctx->conn->pipe, conn_connect(ctx->conn) == 0,
                   ctx->prefix, type, message, sizeof(message));
    cli_fail(ctx, 0, "%s%s", message, then);
}
