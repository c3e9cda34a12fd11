/* wharf dead replay TYPE (ID|--all): moves dead tasks back into the
 * stream, each with one atomic script: attempt 1, no error. --all works
 * through the dead set as it was at the start, so tasks that die again
 * meanwhile are not replayed in a loop. Prints how many were replayed. */
#include <string.h>
#include <sysexits.h>

#include "cli.h"
#include "dead_pages.h"
#include "lua_scripts.h"

/* Dead ids per round trip with --all. */
#define CHUNK 200

/* The script's answer word (sdk/lua/dead_replay.lua), or NO_WORD after
 * saying why there is none. */
static script_dead_replay_word answer(cli *ctx, const redisReply *r,
                                      int *code)
{
    *code = cli_reply_check(ctx, r, "dead replay");
    if (*code != 0)
        return SCRIPT_DEAD_REPLAY_NO_WORD;
    if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS) {
        *code = cli_fail(ctx, EX_SOFTWARE,
                         "the replay script gave an "
                         "unexpected reply");
        return SCRIPT_DEAD_REPLAY_NO_WORD;
    }
    return script_dead_replay_word_of(r->str);
}

static int replay_one(cli *ctx, const char *type, const char *id)
{
    script_dead_replay_word word;
    redisContext *redis;
    redisReply *r = NULL;
    command cmd;
    int code;

    if (!(redis = cli_redis(ctx, &code)))
        return code;
    command_init(&cmd);
    if (script_dead_replay_call(&cmd, ctx->prefix, type, id) == 0)
        r = script_run_command(redis, &script_dead_replay, &cmd);
    command_free(&cmd);
    word = answer(ctx, r, &code);
    if (word == SCRIPT_DEAD_REPLAY_OK)
        printf("replayed 1\n");
    else if (word == SCRIPT_DEAD_REPLAY_NOT_FOUND)
        code = cli_fail(ctx, CLI_NOT_FOUND, "no dead task '%s' of type '%s'",
                        id, type);
    else if (code == 0)
        code = cli_fail(ctx, CLI_NOT_FOUND,
                        "dead task '%s' of type '%s' had "
                        "no envelope: dropped it from "
                        "the dead set",
                        id, type);
    freeReplyObject(r);
    return code;
}

/* Replays the ids of one ZRANGE page, pipelined. 0 or an exit code. */
typedef struct replay_counts {
    long replayed, missing;
} replay_counts;

static int replay_page(cli *ctx, redisContext *redis, const char *type,
                       const redisReply *page, void *arg)
{
    replay_counts *counts = arg;
    command cmd;
    int code = 0, err, rc = 0;

    command_init(&cmd);
    for (size_t i = 0; i < page->elements && rc == 0; i++)
        rc = script_dead_replay_call(&cmd, ctx->prefix, type,
                                     page->element[i]->str) != 0 ||
             command_append(&cmd, redis) != 0;
    command_free(&cmd);
    if (rc != 0)
        return cli_reply_check(ctx, NULL, "dead replay");
    for (size_t i = 0; i < page->elements; i++) {
        redisReply *r = cli_read(ctx, &err, "dead replay");
        script_dead_replay_word word;
        if (!r)
            return err;
        word = code == 0 ? answer(ctx, r, &code) : SCRIPT_DEAD_REPLAY_NO_WORD;
        if (word == SCRIPT_DEAD_REPLAY_OK)
            counts->replayed++;
        else if (word == SCRIPT_DEAD_REPLAY_MISSING)
            counts->missing++;
        freeReplyObject(r);
    }
    return code;
}

static int replay_all(cli *ctx, const char *type)
{
    replay_counts counts = {0, 0};
    int code = dead_each_page(ctx, "dead replay", type, &script_dead_replay,
                              CHUNK, replay_page, &counts);

    printf("replayed %ld\n", counts.replayed);
    if (counts.missing > 0)
        cli_fail(ctx, 0,
                 "%ld dead ids had no envelope: dropped them from "
                 "the dead set",
                 counts.missing);
    return code;
}

enum { OPT_ALL };

/* --all stands for the ID. */
static int check(cli *ctx, const cli_args *args)
{
    int all = args->flag[OPT_ALL] != NULL;

    if (!all && args->count < 2)
        return cli_usage(ctx, "missing ID or --all");
    if (all && args->count > 1)
        return cli_usage(ctx, "give an ID or --all, not both");
    return 0;
}

static int run(cli *ctx, const cli_args *args)
{
    char *const *operand = args->operand;
    int all = args->flag[OPT_ALL] != NULL, code;

    if ((code = cli_check_type(ctx, operand[0])) != 0 ||
        (!all && (code = cli_check_id(ctx, operand[1])) != 0))
        return code;
    return all ? replay_all(ctx, operand[0])
               : replay_one(ctx, operand[0], operand[1]);
}

const cli_command cmd_dead_replay_entry = {
    .name = "dead replay",
    .usage = "TYPE (ID|--all)",
    .help = "Moves dead task ID (or every dead task, --all) of TYPE back to the queue\n"
"at attempt 1, and prints how many.\n"
"Exit: 0; 1 not dead; 69 Redis unavailable.\n",
    .flags = {[OPT_ALL] = {"all", false}},
    .operands = {"TYPE", "ID"},
    .lower = 1,
    .upper = 2,
    .check = check,
    .run = run,
};
