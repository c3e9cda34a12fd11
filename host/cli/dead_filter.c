/* Searching a dead set in bounded steps; see dead_filter.h. */
#include "dead_filter.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "lua_scripts.h"

/* The longest --grep and --id-prefix: an error is kept at most a few KiB,
 * an id at most 200 bytes. */
#define GREP_MAX 1024

int dead_filter_parse(cli *ctx, const cli_args *args, int first, dead_filter *f)
{
    const char *grep = args->flag[first], *since = args->flag[first + 1];
    const char *before = args->flag[first + 2];
    const char *attempts = args->flag[first + 3];
    const char *prefix = args->flag[first + 4];
    int code;

    memset(f, 0, sizeof(*f));
    f->grep = grep ? grep : "";
    f->id_prefix = prefix ? prefix : "";
    f->any = grep || since || before || attempts || prefix;
    if (grep && (grep[0] == '\0' || strlen(grep) > GREP_MAX))
        return cli_usage(ctx, "--grep needs a text of 1 to %d bytes", GREP_MAX);
    if (prefix &&
        (prefix[0] == '\0' || strlen(prefix) > 200 ||
         !cli_printable(prefix, strlen(prefix)) || strchr(prefix, ' ')))
        return cli_usage(ctx, "--id-prefix needs 1 to 200 printable bytes "
                              "without spaces, as an id has");
    if (since &&
        (code = cli_duration(ctx, "--since", since, &f->since_ago_ms)) != 0)
        return code;
    if (before &&
        (code = cli_duration(ctx, "--before", before, &f->before_ago_ms)) != 0)
        return code;
    if (since && before && f->before_ago_ms >= f->since_ago_ms)
        return cli_usage(ctx,
                         "--before %s is not after --since %s: no task "
                         "can have died in between",
                         before, since);
    if (attempts) {
        char *end;
        unsigned long n = strtoul(attempts, &end, 10);
        if (*attempts < '0' || *attempts > '9' || *end || n < 1 || n > 1000000)
            return cli_usage(ctx,
                             "--attempts '%s' is not a count from 1 to "
                             "1000000",
                             attempts);
        f->attempts = (unsigned)n;
    }
    return 0;
}

/* Redis's clock in ms (the dead set's scores are on it). 0 or an exit
 * code. */
static int redis_now(cli *ctx, const char *what, int64_t *now)
{
    int code = 0;
    redisReply *r = cli_run(ctx, &code, what, "TIME");

    if (!r)
        return code;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING ||
        r->element[1]->type != REDIS_REPLY_STRING)
        code = cli_fail(ctx, EX_SOFTWARE, "%s: TIME gave an unexpected reply",
                        what);
    else
        *now = strtoll(r->element[0]->str, NULL, 10) * 1000 +
               strtoll(r->element[1]->str, NULL, 10) / 1000;
    freeReplyObject(r);
    return code;
}

/* ZCOUNT of dead between min and max (Redis's forms: "-inf", "(5").
 * 0 or an exit code. */
static int count_between(cli *ctx, const char *what, const char *dead,
                         const char *min, const char *max, long long *n)
{
    int code = 0;
    redisReply *r =
        cli_run(ctx, &code, what, "ZCOUNT %s %s %s", dead, min, max);

    if (!r)
        return code;
    if (r->type != REDIS_REPLY_INTEGER)
        code = cli_fail(ctx, EX_SOFTWARE,
                        "%s: ZCOUNT gave an unexpected "
                        "reply",
                        what);
    else
        *n = r->integer;
    freeReplyObject(r);
    return code;
}

/* The matches of one page of ids: dead_find.lua's reply (caller frees),
 * or NULL with *code set. */
static redisReply *find_in_page(cli *ctx, const char *what, const char *type,
                                const dead_filter *f, const redisReply *page,
                                int *code)
{
    char key[KEY_MAX], attempts[16];
    redisContext *redis = cli_redis(ctx, code);
    redisReply *r = NULL;
    command cmd;
    int rc;

    if (!redis)
        return NULL;
    snprintf(attempts, sizeof(attempts), "%u", f->attempts);
    command_init(&cmd);
    rc = script_dead_find_keys(&cmd, ctx->prefix, type);
    for (const char *what_key = "dead"; rc == 0 && what_key;
         what_key = strcmp(what_key, "dead") == 0 ? "task" : NULL)
        for (size_t i = 0; i < page->elements; i++) {
            cli_task_key(ctx, key, type, what_key, page->element[i]->str);
            command_push_key_copy(&cmd, key, strlen(key));
        }
    script_dead_find_args(&cmd, f->grep, attempts, f->id_prefix);
    for (size_t i = 0; i < page->elements; i++)
        command_push(&cmd, page->element[i]->str, page->element[i]->len);
    if (rc == 0)
        r = script_run_command(redis, &script_dead_find, &cmd);
    command_free(&cmd);
    *code = cli_reply_check(ctx, r, what);
    if (*code == 0 && (r->type != REDIS_REPLY_ARRAY || r->elements % 4 != 0)) {
        *code = cli_fail(ctx, EX_SOFTWARE,
                         "%s: the search gave an unexpected "
                         "reply",
                         what);
    }
    for (size_t i = 0; *code == 0 && i < r->elements; i++)
        if (r->element[i]->type != REDIS_REPLY_STRING)
            *code = cli_fail(ctx, EX_SOFTWARE,
                             "%s: the search gave a non-string", what);
    if (*code != 0) {
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

int dead_each_match(cli *ctx, const char *what, const char *type,
                    const dead_filter *f, dead_walk *w)
{
    const bool oldest_first = w->oldest_first, removes = w->removed != NULL;
    const char *ids[DEAD_FILTER_PAGE];
    char dead[KEY_MAX], lo[32], hi[32], outside[40], err[512];
    long long base = 0, total = 0, visited = 0;
    redisContext *redis;
    dead_match m[DEAD_FILTER_PAGE];
    int64_t now = 0;
    long offset = 0;
    int code;

    if ((code = redis_now(ctx, what, &now)) != 0)
        return code;
    if (w->s && (redis = cli_redis(ctx, &code)) &&
        script_load(redis, w->s, err, sizeof(err)) != 0)
        code = cli_fail(ctx, EX_UNAVAILABLE, "%s", err);
    if (code != 0)
        return code;
    cli_key(ctx, dead, type, "dead");
    snprintf(lo, sizeof(lo), f->since_ago_ms ? "%" PRId64 : "-inf",
             now - f->since_ago_ms);
    /* A walk that takes records out stops at those that died before it
     * began: a replayed task that dies again is not replayed twice. */
    if (f->before_ago_ms || removes)
        snprintf(hi, sizeof(hi), "%" PRId64, now - f->before_ago_ms);
    else
        snprintf(hi, sizeof(hi), "+inf");
    /* Pages go by rank (O(log n) each), not by LIMIT's offset (O(offset),
     * which took 13 ms at 20,000): base is the rank of the range's first
     * record from the end the walk starts at, total how many it holds. */
    if (oldest_first && f->since_ago_ms) {
        snprintf(outside, sizeof(outside), "(%s", lo);
        code = count_between(ctx, what, dead, "-inf", outside, &base);
    } else if (!oldest_first && strcmp(hi, "+inf") != 0) {
        snprintf(outside, sizeof(outside), "(%s", hi);
        code = count_between(ctx, what, dead, outside, "+inf", &base);
    }
    if (code == 0)
        code = count_between(ctx, what, dead, lo, hi, &total);
    while (code == 0 && visited < total) {
        long long first = base + offset;
        long long last = first + DEAD_FILTER_PAGE - 1;
        redisReply *page;
        if (last >= base + offset + (total - visited))
            last = base + offset + (total - visited) - 1;
        page =
            cli_run(ctx, &code, what, "%s %s %lld %lld",
                    oldest_first ? "ZRANGE" : "ZREVRANGE", dead, first, last);
        redisReply *found;
        size_t n = 0, len;
        if (!page)
            break;
        len = page->type == REDIS_REPLY_ARRAY ? page->elements : 0;
        for (size_t i = 0; i < len; i++)
            if (page->element[i]->type != REDIS_REPLY_STRING)
                len = 0;
        if (len == 0) {
            freeReplyObject(page);
            break;
        }
        found = find_in_page(ctx, what, type, f, page, &code);
        if (found) {
            n = found->elements / 4;
            for (size_t i = 0; i < n; i++) {
                redisReply *const *e = found->element + 4 * i;
                m[i] = (dead_match){e[0]->str, (int64_t)strtod(e[1]->str, NULL),
                                    e[2]->str, e[3]->str, e[3]->len};
                ids[i] = e[0]->str;
            }
            w->matched += (long)n;
            if (n > 0 && (w->shown || w->removed)) {
                redis = cli_redis(ctx, &code);
                if (redis)
                    code = w->shown
                               ? w->shown(ctx, redis, type, m, n, w->arg)
                               : w->removed(ctx, redis, type, ids, n, w->arg);
            }
            freeReplyObject(found);
        }
        offset += (long)(removes ? len - n : len);
        visited += (long long)len;
        freeReplyObject(page);
    }
    return code;
}
