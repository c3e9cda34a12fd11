/* wharf dead replay TYPE (ID|--all): moves dead tasks back into the
 * stream, each with one atomic script: attempt 1, no error. --all works
 * through the dead set as it was at the start, so tasks that die again
 * meanwhile are not replayed in a loop. Prints how many were replayed. */
#include <string.h>
#include <sysexits.h>

#include "cli.h"
#include "dead_pages.h"
#include "lua_sources.h"
#include "script.h"

/* Dead ids per round trip with --all. */
#define CHUNK 200

/* sdk/lua/dead_replay.lua */
static script replay_script = {.name = "dead_replay",
                               .source = wharf_lua_dead_replay};

/* The script's keys and arguments. */
#define REPLAY_KEYS 6
#define REPLAY_ARGS (REPLAY_KEYS + 2)

/* Fills the arguments of the script for id. */
static void call_args(cli *ctx, const char *type, const char *id,
                      char keys[REPLAY_KEYS][KEY_MAX],
                      const char *argv[REPLAY_ARGS])
{
    cli_key(ctx, keys[0], type, "dead");
    cli_task_key(ctx, keys[1], type, "dead", id);
    cli_key(ctx, keys[2], type, "stream");
    cli_task_key(ctx, keys[3], type, "task", id);
    cli_key(ctx, keys[4], type, "delayed");
    cli_key(ctx, keys[5], type, "entries");
    for (int i = 0; i < REPLAY_KEYS; i++)
        argv[i] = keys[i];
    argv[REPLAY_KEYS] = id;
    argv[REPLAY_KEYS + 1] = type;
}

/* The script's answer word, or NULL after saying why there is none. */
static const char *answer(cli *ctx, const redisReply *r, int *code)
{
    *code = cli_reply_check(ctx, r, "dead replay");
    if (*code != 0)
        return NULL;
    if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS) {
        *code = cli_fail(ctx, EX_SOFTWARE,
                         "the replay script gave an "
                         "unexpected reply");
        return NULL;
    }
    return r->str;
}

static int replay_one(cli *ctx, const char *type, const char *id)
{
    char keys[REPLAY_KEYS][KEY_MAX];
    const char *argv[REPLAY_ARGS], *word;
    redisContext *redis;
    redisReply *r;
    int code;

    if (!(redis = cli_redis(ctx, &code)))
        return code;
    call_args(ctx, type, id, keys, argv);
    r = script_run(redis, &replay_script, REPLAY_KEYS, REPLAY_ARGS, argv, NULL);
    word = answer(ctx, r, &code);
    if (word && strcmp(word, "OK") == 0)
        printf("replayed 1\n");
    else if (word && strcmp(word, "NOT_FOUND") == 0)
        code = cli_fail(ctx, CLI_NOT_FOUND, "no dead task '%s' of type '%s'",
                        id, type);
    else if (word)
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
    char keys[REPLAY_KEYS][KEY_MAX];
    const char *argv[REPLAY_ARGS];
    int code = 0, err;

    for (size_t i = 0; i < page->elements; i++) {
        call_args(ctx, type, page->element[i]->str, keys, argv);
        if (script_append(redis, &replay_script, REPLAY_KEYS, REPLAY_ARGS, argv,
                          NULL) != 0)
            return cli_reply_check(ctx, NULL, "dead replay");
    }
    for (size_t i = 0; i < page->elements; i++) {
        redisReply *r = cli_read(ctx, &err, "dead replay");
        const char *word;
        if (!r)
            return err;
        word = code == 0 ? answer(ctx, r, &code) : NULL;
        if (word && strcmp(word, "OK") == 0)
            counts->replayed++;
        else if (word && strcmp(word, "MISSING") == 0)
            counts->missing++;
        freeReplyObject(r);
    }
    return code;
}

static int replay_all(cli *ctx, const char *type)
{
    replay_counts counts = {0, 0};
    int code = dead_each_page(ctx, "dead replay", type, &replay_script, CHUNK,
                              replay_page, &counts);

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
    script_init(&replay_script);
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
