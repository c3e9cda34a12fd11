/* wharf dead run TYPE ID [PLUGIN.so]: a dead task run again in this
 * process, as wharf run runs one (cli_run_replay), so its author sees the
 * failure under a debugger or a sanitizer. The task is the dead record's
 * (payload, attempt, fence, trace, enqueued_at as they were), read with
 * ZSCORE and HGETALL only: it never writes to Redis, and the task stays
 * dead. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "cli.h"
#include "dead_record.h"
#include "entry.h"

enum { OPT_CONFIG, OPT_RESULT };

/* The task of the record, checked by the host's own reading of a stream
 * entry (entry_parse) so it is the task a worker would have run; its
 * fence the record's if it has one, else 1. The task points into r. 0, or
 * 65 after saying why. */
static int record_task(cli *ctx, const char *type, const dead_record *r,
                       entry *e)
{
    /* entry_parse reads [entry-id, [field, value, ...]]: the record's
     * fields under its key's name. max_payload is not checked: the task
     * ran with the payload it has. */
    redisReply name = {.type = REDIS_REPLY_STRING,
                       .str = (char *)r->key,
                       .len = strlen(r->key)};
    redisReply *parts[2] = {&name, r->all};
    redisReply wrapped = {
        .type = REDIS_REPLY_ARRAY, .elements = 2, .element = parts};
    const redisReply *fence = dead_record_field(r, "fence");
    policy pol;
    char *end;

    memset(&pol, 0, sizeof(pol));
    pol.max_attempts = 1;
    pol.max_payload = UINT64_MAX;
    entry_parse(e, &wrapped, type, &pol);
    if (e->bad[0])
        return cli_fail(ctx, EX_DATAERR,
                        "%s cannot run: %s (the host dead-letters such a task "
                        "without running it)",
                        r->key, e->bad);
    e->task.fence = 1;
    if (fence) {
        errno = 0;
        e->task.fence = strtoull(fence->str, &end, 10);
        if (errno || *end || fence->len == 0 || fence->str[0] < '0' ||
            fence->str[0] > '9' || e->task.fence == 0)
            return cli_fail(ctx, EX_DATAERR, "%s: fence is not a number from 1",
                            r->key);
    }
    return 0;
}

static int run(cli *ctx, const cli_args *args)
{
    const char *type, *id, *plugin = args->count > 2 ? args->operand[2] : NULL;
    const redisReply *error;
    dead_record r;
    cli_replay replay;
    entry e;
    int code;

    memset(&r, 0, sizeof(r));
    if ((code = cli_type_and_id(ctx, args, &type, &id)) != 0)
        return code;
    if (!plugin && !args->flag[OPT_CONFIG] && !ctx->config)
        return cli_fail(ctx, EX_USAGE,
                        "no manifest says which plugin serves '%s': give "
                        "--config FILE or PLUGIN.so",
                        type);
    if ((code = dead_record_read(ctx, "dead run", type, id, &r)) == 0 &&
        (code = r.all->elements == 0 ? dead_record_gone(ctx, type, id, &r)
                                     : record_task(ctx, type, &r, &e)) == 0) {
        /* Nothing more is read: a plugin stopped in a debugger holds no
         * idle connection open. */
        cli_disconnect(ctx);
        error = dead_record_field(&r, "error");
        memset(&replay, 0, sizeof(replay));
        replay.plugin_path = plugin;
        replay.config_path = args->flag[OPT_CONFIG];
        replay.task = &e.task;
        replay.result_only = args->flag[OPT_RESULT] != NULL;
        replay.died_with =
            error && error->len ? error->str : "(no error recorded)";
        code = cli_run_replay(ctx, &replay);
    }
    dead_record_free(&r);
    return code;
}

const cli_command cmd_dead_run_entry = {
    .name = "dead run",
    .usage = "TYPE ID [PLUGIN.so] [--config FILE] [--result]",
    .help =
        "Runs dead task ID of TYPE again in this process, as `wharf run`\n"
        "runs one: its payload, attempt, fence, trace and enqueued_at as\n"
        "recorded, the type's timeout and the plugin's section of the\n"
        "manifest. PLUGIN.so defaults to the plugin the manifest routes\n"
        "TYPE to. It only reads Redis: the task stays dead. Prints what\n"
        "wharf run prints, then the error it died with.\n"
        "  --config FILE  the manifest of the plugin (else the global one)\n"
        "  --result       print only the result bytes on stdout\n"
        "Exit: 0 ok; 75 retry; 65 fail, or a bad type, id or record; 1 not\n"
        "dead; 78 not loadable, init failed, or no plugin routed; 69 Redis\n"
        "unavailable; 64 usage (no manifest and no PLUGIN.so).\n",
    .flags =
        {[OPT_CONFIG] = {"config", true}, [OPT_RESULT] = {"result", false}},
    .operands = {"TYPE", "ID", "PLUGIN.so"},
    .lower = 2,
    .upper = 3,
    .run = run,
};
