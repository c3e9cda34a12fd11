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
                     const char *const *ids, size_t n, long *purged)
{
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

/* Purges the ids of one ZRANGE page. */
static int purge_page(cli *ctx, redisContext *redis, const char *type,
                      const redisReply *page, void *arg)
{
    const char *ids[CHUNK];
    size_t n = page->elements < CHUNK ? page->elements : CHUNK;

    for (size_t i = 0; i < n; i++)
        ids[i] = page->element[i]->str;
    return purge_ids(ctx, redis, type, ids, n, arg);
}

typedef struct purge_counts {
    long purged, matched;
    bool counting; /* without --yes: only count the matches */
} purge_counts;

/* Purges (or, counting, counts) the matches of one page. */
static int purge_matches(cli *ctx, redisContext *redis, const char *type,
                         const dead_match *m, size_t n, void *arg)
{
    purge_counts *counts = arg;
    const char *ids[DEAD_FILTER_PAGE];

    counts->matched += (long)n;
    if (counts->counting)
        return 0;
    for (size_t i = 0; i < n; i++)
        ids[i] = m[i].id;
    return purge_ids(ctx, redis, type, ids, n, &counts->purged);
}

enum { OPT_YES, OPT_FILTERS };

static int run(cli *ctx, const cli_args *args)
{
    const char *type;
    bool yes = args->flag[OPT_YES] != NULL;
    purge_counts counts = {0, 0, !yes};
    dead_filter f;
    int code;

    if ((code = cli_type_arg(ctx, args, &type)) != 0 ||
        (code = dead_filter_parse(ctx, args, OPT_FILTERS, &f)) != 0)
        return code;
    if (yes && !f.any)
        return cli_usage(ctx, "--yes goes with the filters");
    if (!f.any) {
        code = dead_each_page(ctx, "dead purge", type, &script_dead_purge,
                              CHUNK, purge_page, &counts.purged);
        printf("purged %ld\n", counts.purged);
        return code;
    }
    code = dead_each_match(ctx, "dead purge", type, &f, true, yes,
                           &script_dead_purge, purge_matches, &counts);
    if (code != 0 || yes) {
        printf("purged %ld\n", counts.purged);
        return code;
    }
    return cli_usage(ctx,
                     "%ld dead tasks of '%s' match; add --yes to purge them",
                     counts.matched, type);
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
