/* Searching a dead set in bounded steps; see dead_filter.h. */
#include "dead_filter.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "conn.h"

#define GREP_MAX DEAD_SEARCH_GREP_MAX

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

/* The exit code for a walk's error rc (dead_search.h), after saying
 * why. */
static int walk_failed(cli *ctx, const char *what, int rc, const char *why)
{
    int code;

    if (rc == DEAD_SEARCH_UNAVAILABLE) {
        code = cli_reply_check(ctx, NULL, what);
        conn_drop(ctx->conn);
        return code;
    }
    return cli_fail(ctx, EX_SOFTWARE, "%s: %s", what, why);
}

/* The CLI runs its pipeline as it is, without a budget. */
static int run_pipe(void *arg, pipeline *p)
{
    (void)arg;
    return pipeline_run(p);
}

int dead_each_match(cli *ctx, const char *what, const char *type,
                    const dead_filter *f, dead_walk *w)
{
    dead_search_filter sf = {f->grep, f->since_ago_ms, f->before_ago_ms,
                             f->attempts, f->id_prefix};
    dead_search_walk walk = {.oldest_first = w->oldest_first,
                             .removes = w->removed != NULL};
    dead_search_page page;
    dead_search_io io = {NULL, run_pipe, NULL};
    char err[512];
    redisContext *redis;
    int code = 0, rc;

    if (!(redis = cli_redis(ctx, &code)))
        return code;
    io.p = &ctx->conn->pipe;
    if (w->s && script_load(redis, w->s, err, sizeof(err)) != 0)
        return cli_fail(ctx, EX_UNAVAILABLE, "%s", err);
    rc = dead_search_begin(&io, ctx->prefix, type, &sf, &walk,
                           err, sizeof(err));
    if (rc != 0)
        return walk_failed(ctx, what, rc, err);
    while (code == 0 &&
           (rc = dead_search_next(&io, ctx->prefix, type, &sf,
                                  &walk, &page, err, sizeof(err))) == 1) {
        w->matched += (long)page.n;
        if (page.n > 0 && (w->shown || w->removed)) {
            redis = cli_redis(ctx, &code);
            if (redis)
                code = w->shown ? w->shown(ctx, redis, type, page.m, page.n,
                                           w->arg)
                                : w->removed(ctx, redis, type, page.ids,
                                             page.n, w->arg);
        }
        dead_search_page_done(&walk, &page);
    }
    if (code == 0 && rc < 0)
        code = walk_failed(ctx, what, rc, err);
    return code;
}
