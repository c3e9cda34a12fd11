/* wharf dead purge TYPE [filters --yes]: deletes the dead tasks of TYPE
 * (or those the filters match, dead_filter.h), each id's record and its
 * place in the dead set with one atomic script, in pipelined chunks,
 * through the dead set as it was at the start. Prints how many were
 * purged. */
#include <stdbool.h>
#include <string.h>
#include <sysexits.h>

#include "cli.h"
#include "dead_filter.h"
#include "dead_pages.h"
#include "lua_scripts.h"

/* Dead ids per round trip. */
#define CHUNK 500

/* Purges n ids with sdk/lua/dead_purge.lua, pipelined. 0 or an exit
 * code. */
static int purge_ids(cli *ctx, redisContext *redis, const char *type,
                     const char *const *ids, size_t n, void *arg)
{
    long *purged = arg;
    command cmd;
    int code = 0, err, rc = 0;

    command_init(&cmd);
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = script_dead_purge_call(&cmd, ctx->prefix, type, ids[i]) != 0 ||
             command_append(&cmd, redis) != 0;
    command_free(&cmd);
    if (rc != 0)
        return cli_reply_check(ctx, NULL, "dead purge");
    for (size_t i = 0; i < n; i++) {
        redisReply *r = cli_read(ctx, &err, "dead purge");
        if (!r)
            return err;
        if (code == 0)
            code = cli_reply_check(ctx, r, "dead purge");
        if (code == 0 && r->type == REDIS_REPLY_INTEGER && r->integer == 1)
            (*purged)++;
        freeReplyObject(r);
    }
    return code;
}

enum { OPT_YES, OPT_FILTERS };

static int run(cli *ctx, const cli_args *args)
{
    const char *type;
    bool yes = args->flag[OPT_YES] != NULL;
    long purged = 0;
    dead_walk w = {.oldest_first = true,
                   .removed = yes ? purge_ids : NULL,
                   .s = &script_dead_purge,
                   .arg = &purged};
    dead_filter f;
    int code;

    if ((code = cli_type_arg(ctx, args, &type)) != 0 ||
        (code = dead_filter_parse(ctx, args, OPT_FILTERS, &f)) != 0)
        return code;
    if (yes && !f.any)
        return cli_usage(ctx, "--yes goes with the filters");
    code = f.any ? dead_each_match(ctx, "dead purge", type, &f, &w)
                 : dead_each_page(ctx, "dead purge", type, &script_dead_purge,
                                  CHUNK, purge_ids, &purged);
    if (code != 0 || yes || !f.any) {
        printf("purged %ld\n", purged);
        return code;
    }
    return cli_usage(ctx,
                     "%ld dead tasks of '%s' match; add --yes to purge them",
                     w.matched, type);
}

const cli_command cmd_dead_purge_entry = {
    .name = "dead purge",
    .usage = "TYPE [[--grep TEXT] [--since DUR] [--before DUR] [--attempts N] "
             "[--id-prefix P] --yes]",
    .help = "Deletes every dead task of TYPE (or those the filters match, as wharf\n"
"dead list reads them) with its record, and prints how many. Without\n"
"--yes the filters only count what they match.\n"
"  --yes         purge what the filters match\n"
"Exit: 0; 64 bad usage, or filters without --yes; 69 Redis unavailable.\n",
    .flags = {[OPT_YES] = {"yes", false, NULL}, DEAD_FILTER_FLAG_TABLE},
    .operands = {"TYPE"},
    .lower = 1,
    .upper = 1,
    .run = run,
};
