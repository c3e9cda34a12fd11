/* wharf dead purge TYPE: deletes the dead tasks of TYPE, each id's
 * record and its place in the dead set with one atomic script, in
 * pipelined chunks, through the dead set as it was at the start. Prints
 * how many were purged. */
#include <string.h>
#include <sysexits.h>

#include "cli.h"
#include "dead_pages.h"
#include "lua_scripts.h"

/* Dead ids per round trip. */
#define CHUNK 500

/* Purges the ids of one ZRANGE page with sdk/lua/dead_purge.lua. 0 or an
 * exit code. */
static int purge_page(cli *ctx, redisContext *redis, const char *type,
                      const redisReply *page, void *arg)
{
    long *purged = arg;
    command cmd;
    int code = 0, err, rc = 0;

    command_init(&cmd);
    for (size_t i = 0; i < page->elements && rc == 0; i++)
        rc = script_dead_purge_call(&cmd, ctx->prefix, type,
                                    page->element[i]->str) != 0 ||
             command_append(&cmd, redis) != 0;
    command_free(&cmd);
    if (rc != 0)
        return cli_reply_check(ctx, NULL, "dead purge");
    for (size_t i = 0; i < page->elements; i++) {
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

static int run(cli *ctx, const cli_args *args)
{
    const char *type;
    long purged = 0;
    int code;

    if ((code = cli_type_arg(ctx, args, &type)) != 0)
        return code;
    code = dead_each_page(ctx, "dead purge", type, &script_dead_purge, CHUNK,
                          purge_page, &purged);
    printf("purged %ld\n", purged);
    return code;
}

const cli_command cmd_dead_purge_entry = {
    .name = "dead purge",
    .usage = "TYPE",
    .help = "Deletes every dead task of TYPE with its record, and prints how many.\n"
"Exit: 0; 69 Redis unavailable.\n",
    .operands = {"TYPE"},
    .lower = 1,
    .upper = 1,
    .run = run,
};
