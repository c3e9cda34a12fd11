/* wharf dead purge TYPE: deletes the dead tasks of TYPE, each id's
 * record and its place in the dead set with one atomic script, in
 * pipelined chunks, through the dead set as it was at the start. Prints
 * how many were purged. */
#include <string.h>
#include <sysexits.h>

#include "cli.h"
#include "dead_pages.h"
#include "lua_sources.h"
#include "script.h"

/* Dead ids per round trip. */
#define CHUNK 500

/* sdk/lua/dead_purge.lua */
static script purge_script = {.name = "dead_purge",
                              .source = wharf_lua_dead_purge};

/* Purges the ids of one ZRANGE page. 0 or an exit code. */
static int purge_page(cli *ctx, redisContext *redis, const char *type,
                      const redisReply *page, void *arg)
{
    long *purged = arg;
    char dead[KEY_MAX], record[KEY_MAX], task[KEY_MAX], delayed[KEY_MAX];
    const char *argv[5];
    int code = 0, err;

    cli_key(ctx, dead, type, "dead");
    cli_key(ctx, delayed, type, "delayed");
    for (size_t i = 0; i < page->elements; i++) {
        cli_task_key(ctx, record, type, "dead", page->element[i]->str);
        cli_task_key(ctx, task, type, "task", page->element[i]->str);
        argv[0] = dead;
        argv[1] = record;
        argv[2] = task;
        argv[3] = delayed;
        argv[4] = page->element[i]->str;
        if (script_append(redis, &purge_script, 4, 5, argv, NULL) != 0)
            return cli_reply_check(ctx, NULL, "dead purge");
    }
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
    script_init(&purge_script);
    code = dead_each_page(ctx, "dead purge", type, &purge_script, CHUNK,
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
