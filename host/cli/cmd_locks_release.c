/* wharf locks release TYPE ID [--force]: deletes the processing lock of a
 * task whose holder is known to be dead; exit 1 if there is none. While a
 * live run holds it (its entry is pending, idle for less than the type's
 * visibility_timeout) it refuses with exit 75: deleting it would throw that
 * run's result away as stale and run the task twice. --force deletes it
 * anyway. The fencing token still protects downstream systems from the
 * old holder. */
#include <string.h>
#include <sysexits.h>

#include "cli.h"
#include "lua_scripts.h"

/* Pending entries of the type looked at before giving up (each page of
 * XPENDING is cheap; a host holds at most workers x prefetch). */
#define SCAN_MOST "10000"
/* The manifest's default visibility_timeout (5m), when no host published one and no
 * manifest names one. */
#define DEFAULT_VISIBILITY_MS 300000

/* The reply's word (sdk/lua/lock_release.lua), or NULL after saying why
 * there is none. */
static const char *answer(cli *ctx, const redisReply *r, int *code)
{
    *code = cli_reply_check(ctx, r, "locks release");
    if (*code != 0)
        return NULL;
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
        r->element[0]->type != REDIS_REPLY_STRING) {
        *code = cli_fail(ctx, EX_SOFTWARE,
                         "the release script gave an unexpected reply");
        return NULL;
    }
    return r->element[0]->str;
}

static int release(cli *ctx, const char *type, const char *id, bool force)
{
    char fallback[24];
    const char *word;
    redisContext *redis;
    redisReply *r = NULL;
    command cmd;
    int code;

    snprintf(
        fallback, sizeof(fallback), "%lld",
        ctx->config
            ? (long long)config_policy(ctx->config, type)->visibility_timeout_ms
            : (long long)DEFAULT_VISIBILITY_MS);
    if (!(redis = cli_redis(ctx, &code)))
        return code;
    command_init(&cmd);
    if (script_lock_release_call(&cmd, ctx->prefix, type, id, WHARF_GROUP,
                                 fallback, force ? "force" : "",
                                 SCAN_MOST) == 0)
        r = script_run_command(redis, &script_lock_release, &cmd);
    command_free(&cmd);
    word = answer(ctx, r, &code);
    if (!word) {
        /* code says why */
    } else if (script_lock_release_word_of(word) ==
               SCRIPT_LOCK_RELEASE_RELEASED) {
        printf("released %s\n", id);
    } else if (script_lock_release_word_of(word) == SCRIPT_LOCK_RELEASE_NONE) {
        code = cli_fail(ctx, CLI_NOT_FOUND, "no lock on task '%s' of type '%s'",
                        id, type);
    } else if (script_lock_release_word_of(word) == SCRIPT_LOCK_RELEASE_HELD &&
               r->elements == 3 &&
               r->element[1]->type == REDIS_REPLY_STRING &&
               r->element[2]->type == REDIS_REPLY_INTEGER) {
        code = cli_fail(ctx, EX_TEMPFAIL,
                        "lock of %s/%s is held by a live run on %s (idle "
                        "%lld ms); it is released when that run ends",
                        type, id, r->element[1]->str, r->element[2]->integer);
    } else if (script_lock_release_word_of(word) ==
               SCRIPT_LOCK_RELEASE_UNSURE) {
        code = cli_fail(ctx, EX_TEMPFAIL,
                        "cannot tell whether a live run holds the lock of "
                        "%s/%s: more than " SCAN_MOST
                        " entries are pending; --force releases it anyway",
                        type, id);
    } else {
        code = cli_fail(ctx, EX_SOFTWARE, "the release script answered '%.40s'",
                        word);
    }
    freeReplyObject(r);
    return code;
}

enum { OPT_FORCE };

static int run(cli *ctx, const cli_args *args)
{
    const char *type, *id;
    bool force = args->flag[OPT_FORCE] != NULL;
    int code;

    if ((code = cli_type_and_id(ctx, args, &type, &id)) != 0)
        return code;
    return release(ctx, type, id, force);
}

const cli_command cmd_locks_release_entry = {
    .name = "locks release",
    .usage = "TYPE ID [--force]",
    .help = "Deletes the lock of task ID of TYPE whose run is gone (a host stopped\n"
"while Redis was away). Refuses while a live run holds the task: deleting\n"
"its lock would throw its result away and run it again.\n"
"  --force       delete it anyway\n"
"Exit: 0 released; 1 no lock; 75 a live run holds it; 69 Redis\n"
"unavailable.\n",
    .flags = {[OPT_FORCE] = {"force", false}},
    .operands = {"TYPE", "ID"},
    .lower = 2,
    .upper = 2,
    .run = run,
};
