/* wharf dead replay TYPE (ID|--all|filters --yes): moves dead tasks back
 * into the stream, each with one atomic script: attempt 1, no error.
 * --all and the filters (dead_filter.h) work through the dead set as it
 * was at the start, so tasks that die again meanwhile are not replayed in
 * a loop, a page at a time; an interrupted run is resumed by running it
 * again (what it replayed is no longer dead). Prints how many were
 * replayed, and on a terminal how it goes. */
#include <stdio.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "cli.h"
#include "dead_filter.h"
#include "dead_pages.h"
#include "lua_scripts.h"

/* Dead ids per round trip with --all. */
#define CHUNK 200

/* The script's answer word (sdk/lua/dead_replay.lua), or NO_WORD after
 * saying why there is none. */
static script_dead_replay_word answer(cli *ctx, const redisReply *r, int *code)
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

typedef struct replay_counts {
    long replayed, missing;
} replay_counts;

/* Replays n ids, pipelined. 0 or an exit code. */
static int replay_ids(cli *ctx, redisContext *redis, const char *type,
                      const char *const *ids, size_t n, void *arg)
{
    replay_counts *counts = arg;
    command cmd;
    int code = 0, err, rc = 0;

    command_init(&cmd);
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = script_dead_replay_call(&cmd, ctx->prefix, type, ids[i]) != 0 ||
             command_append(&cmd, redis) != 0;
    command_free(&cmd);
    if (rc != 0)
        return cli_reply_check(ctx, NULL, "dead replay");
    for (size_t i = 0; i < n; i++) {
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
    if (isatty(STDERR_FILENO))
        fprintf(stderr, "\rreplayed %ld", counts->replayed);
    return code;
}

/* The end of a run over many: the count, a line for ids that had no
 * envelope, and the terminal's progress line closed. */
static int replayed(cli *ctx, const replay_counts *counts, int code)
{
    if (isatty(STDERR_FILENO) && counts->replayed > 0)
        fputc('\n', stderr);
    printf("replayed %ld\n", counts->replayed);
    if (counts->missing > 0)
        cli_fail(ctx, 0,
                 "%ld dead ids had no envelope: dropped them from "
                 "the dead set",
                 counts->missing);
    return code;
}

/* The dead tasks of type that f matches: counted and left as they are
 * without --yes (exit 64), else replayed. */
static int replay_matching(cli *ctx, const char *type, const dead_filter *f,
                           bool yes)
{
    replay_counts counts = {0, 0};
    dead_walk w = {.oldest_first = true,
                   .removed = yes ? replay_ids : NULL,
                   .s = &script_dead_replay,
                   .arg = &counts};
    int code = dead_each_match(ctx, "dead replay", type, f, &w);

    if (code != 0 || yes)
        return replayed(ctx, &counts, code);
    return cli_usage(ctx,
                     "%ld dead tasks of '%s' match; add --yes to replay "
                     "them",
                     w.matched, type);
}

static int replay_all(cli *ctx, const char *type)
{
    replay_counts counts = {0, 0};
    int code = dead_each_page(ctx, "dead replay", type, &script_dead_replay,
                              CHUNK, replay_ids, &counts);

    return replayed(ctx, &counts, code);
}

enum { OPT_ALL, OPT_YES, OPT_FILTERS };

static bool filtered(const cli_args *args)
{
    for (int i = OPT_FILTERS; i < OPT_FILTERS + DEAD_FILTER_FLAGS; i++)
        if (args->flag[i])
            return true;
    return false;
}

/* --all or a filter stands for the ID. */
static int check(cli *ctx, const cli_args *args)
{
    bool all = args->flag[OPT_ALL] != NULL, some = filtered(args);

    if (!all && !some && args->count < 2)
        return cli_usage(ctx, "missing ID, --all or a filter");
    if ((all || some) && args->count > 1)
        return cli_usage(ctx, "give an ID, --all or filters, not two of them");
    if (all && some)
        return cli_usage(ctx, "--all replays every dead task: leave it out "
                              "to replay those the filters match");
    if (args->flag[OPT_YES] && !some)
        return cli_usage(ctx, "--yes goes with the filters");
    return 0;
}

static int run(cli *ctx, const cli_args *args)
{
    char *const *operand = args->operand;
    int all = args->flag[OPT_ALL] != NULL, code;
    dead_filter f;

    if ((code = cli_check_type(ctx, operand[0])) != 0 ||
        (code = dead_filter_parse(ctx, args, OPT_FILTERS, &f)) != 0)
        return code;
    if (f.any)
        return replay_matching(ctx, operand[0], &f,
                               args->flag[OPT_YES] != NULL);
    if (!all && (code = cli_check_id(ctx, operand[1])) != 0)
        return code;
    return all ? replay_all(ctx, operand[0])
               : replay_one(ctx, operand[0], operand[1]);
}

const cli_command cmd_dead_replay_entry = {
    .name = "dead replay",
    .usage = "TYPE (ID | --all | [--grep TEXT] [--since DUR] [--before DUR] "
             "[--attempts N] [--id-prefix P] --yes)",
    .help = "Moves dead task ID (or every dead task, --all, or those the filters\n"
"match, as wharf dead list reads them) of TYPE back to the queue at\n"
"attempt 1, and prints how many. Without --yes the filters only count\n"
"what they match. Many are replayed a page at a time, the dead set as it\n"
"was at the start; run it again to finish an interrupted run.\n"
"  --yes         replay what the filters match\n"
"Exit: 0; 1 not dead; 64 bad usage, or filters without --yes; 69 Redis\n"
"unavailable.\n",
    .flags = {[OPT_ALL] = {"all", false, NULL},
              [OPT_YES] = {"yes", false, NULL},
              DEAD_FILTER_FLAG_TABLE},
    .operands = {"TYPE", "ID"},
    .lower = 1,
    .upper = 2,
    .check = check,
    .run = run,
};
