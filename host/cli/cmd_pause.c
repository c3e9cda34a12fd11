/* wharf pause TYPE [--for DUR] and wharf resume TYPE, through
 * sdk/lua/pause.lua: while a type is paused no host starts a task of it;
 * running tasks finish and enqueues still succeed. One file for the two
 * commands, as they are one switch. */
#include <inttypes.h>
#include <stdio.h>
#include <sysexits.h>

#include "cli.h"
#include "clock_ms.h"
#include "lua_scripts.h"

/* What pause.lua answered: its word, since when, the time left, and
 * whether a host ever served the type. */
typedef struct pause_answer {
    script_pause_word word;
    int64_t since_ms, left_ms;
    bool served;
} pause_answer;

/* Runs pause.lua for type in mode ("pause" or "resume"); 0 with *out
 * set, or the exit code after saying why. */
static int call_pause(cli *ctx, const char *type, const char *mode,
                      int64_t for_ms, pause_answer *out)
{
    char for_text[24];
    redisContext *redis;
    redisReply *r = NULL;
    command cmd;
    int code;

    if (!(redis = cli_redis(ctx, &code)))
        return code;
    snprintf(for_text, sizeof(for_text), "%" PRId64, for_ms);
    command_init(&cmd);
    if (script_pause_call(&cmd, ctx->prefix, type, mode, for_text) == 0)
        r = script_run_command(redis, &script_pause, &cmd);
    command_free(&cmd);
    if ((code = cli_reply_check(ctx, r, ctx->command->name)) == 0) {
        if (r->type == REDIS_REPLY_ARRAY && r->elements == 4 &&
            r->element[0]->type == REDIS_REPLY_STRING &&
            r->element[1]->type == REDIS_REPLY_INTEGER &&
            r->element[2]->type == REDIS_REPLY_INTEGER &&
            r->element[3]->type == REDIS_REPLY_INTEGER &&
            script_pause_word_of(r->element[0]->str) != SCRIPT_PAUSE_NO_WORD) {
            out->word = script_pause_word_of(r->element[0]->str);
            out->since_ms = r->element[1]->integer;
            out->left_ms = r->element[2]->integer;
            out->served = r->element[3]->integer != 0;
        } else {
            code = cli_fail(ctx, EX_SOFTWARE,
                            "the pause script gave an unexpected reply");
        }
    }
    freeReplyObject(r);
    return code;
}

enum { OPT_FOR };

static int check_for(cli *ctx, const char *value)
{
    int64_t ms;
    int code = cli_duration(ctx, "--for", value, &ms);

    if (code != 0)
        return code;
    if (ms <= 0 || ms > CONFIG_PAUSE_FOR_MAX_MS)
        return cli_usage(ctx,
                         "--for '%s' is out of range: from 1ms to 30d "
                         "(leave it out to pause until resumed)",
                         value);
    return 0;
}

static int run_pause(cli *ctx, const cli_args *args)
{
    const char *type;
    char since[CLI_TIME_MAX], until[CLI_TIME_MAX];
    pause_answer a;
    int64_t for_ms = 0;
    int code;

    if ((code = cli_type_arg(ctx, args, &type)) != 0)
        return code;
    if (args->flag[OPT_FOR] &&
        (code = cli_duration(ctx, "--for", args->flag[OPT_FOR], &for_ms)) != 0)
        return code;
    if ((code = call_pause(ctx, type, "pause", for_ms, &a)) != 0)
        return code;
    cli_iso_time(a.since_ms, since, sizeof(since));
    if (a.word == SCRIPT_PAUSE_PAUSED)
        printf("paused %s (since %s)", type, since);
    else
        printf("%s was paused already (since %s); now paused", type, since);
    if (a.left_ms > 0) {
        /* This machine's clock: close enough to say when, to the second. */
        cli_iso_time(clock_wall_ms() + a.left_ms, until, sizeof(until));
        printf(" until %s (%s)\n", until, args->flag[OPT_FOR]);
    } else {
        printf(" until resumed\n");
    }
    if (!a.served) /* a typo, or a type no host runs yet */
        cli_warn_unserved(ctx, type, "; paused all the same");
    return EX_OK;
}

static int run_resume(cli *ctx, const cli_args *args)
{
    const char *type;
    char since[CLI_TIME_MAX];
    pause_answer a;
    int code;

    if ((code = cli_type_arg(ctx, args, &type)) != 0 ||
        (code = call_pause(ctx, type, "resume", 0, &a)) != 0)
        return code;
    if (a.word == SCRIPT_PAUSE_RUNNING) {
        printf("%s was not paused\n", type);
        return EX_OK;
    }
    cli_iso_time(a.since_ms, since, sizeof(since));
    printf("resumed %s (paused since %s)\n", type, since);
    return EX_OK;
}

const cli_command cmd_pause_entry = {
    .name = "pause",
    .usage = "TYPE [--for DUR]",
    .help = "Pauses TYPE on every host: no task of it starts until it is resumed\n"
"(or, with --for, until DUR has passed). Running tasks finish; enqueues\n"
"still succeed, and the tasks wait. A task claimed before its host saw\n"
"the pause goes back to wait unrun, no attempt spent. Pausing a paused\n"
"type keeps its start and sets its end anew.\n"
"  --for DUR     end the pause by itself after DUR (1ms to 30d)\n"
"Exit: 0 paused; 64 bad usage; 65 bad type; 69 Redis unavailable.\n",
    .flags = {[OPT_FOR] = {"for", true, check_for}},
    .operands = {"TYPE"},
    .lower = 1,
    .upper = 1,
    .run = run_pause,
};

const cli_command cmd_resume_entry = {
    .name = "resume",
    .usage = "TYPE",
    .help = "Resumes TYPE after wharf pause: its hosts start its tasks again within\n"
"about a second. A type that was not paused is left as it is.\n"
"Exit: 0 resumed or not paused; 65 bad type; 69 Redis unavailable.\n",
    .operands = {"TYPE"},
    .lower = 1,
    .upper = 1,
    .run = run_resume,
};
