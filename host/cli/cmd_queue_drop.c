/* wharf queue drop TYPE --yes: removes every waiting task of TYPE (ready
 * and delayed) with sdk/lua/queue_drop.lua, a page at a time, delayed
 * first (so a task promoted meanwhile is met in the stream after).
 * Running tasks are left to end as they would. Without --yes it says how
 * many it would drop and exits 64. */
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "cli.h"
#include "client_ids.h"
#include "lua_sources.h"
#include "script.h"

/* Tasks per script call. */
#define PAGE 500

static script drop_script = {.name = "queue_drop",
                             .source = wharf_lua_queue_drop};

/* Runs the script over one page: keys and args built by the caller
 * (argv[0 .. 2] are the common keys). Adds to *removed and *running. 0 or
 * an exit code. */
static int drop_page(cli *ctx, redisContext *redis, int numkeys, int argc,
                     const char **argv, long *removed, long *running)
{
    redisReply *r = script_run(redis, &drop_script, numkeys, argc, argv, NULL);
    int code = cli_reply_check(ctx, r, "queue drop");

    if (code == 0 && (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
                      r->element[0]->type != REDIS_REPLY_INTEGER ||
                      r->element[1]->type != REDIS_REPLY_INTEGER))
        code = cli_fail(ctx, EX_SOFTWARE,
                        "the drop script gave an unexpected reply");
    if (code == 0) {
        *removed += r->element[0]->integer;
        *running += r->element[1]->integer;
    }
    freeReplyObject(r);
    return code;
}

/* Space for one page's keys and arguments. */
typedef struct page_args {
    char common[3][KEY_MAX];
    char (*keys)[KEY_MAX]; /* 2 * PAGE */
    const char **argv;     /* 3 + 2 * PAGE keys, 2 + 2 * PAGE args */
} page_args;

/* The delayed set, PAGE ids at a time, until it is empty. */
static int drop_delayed(cli *ctx, redisContext *redis, const char *type,
                        page_args *a, long *removed)
{
    long running = 0, before;
    int code = 0;

    do {
        redisReply *ids = cli_run(ctx, &code, "queue drop", "ZRANGE %s 0 %d",
                                  a->common[1], PAGE - 1);
        size_t n;
        int k = 3, g;
        if (!ids)
            return code;
        n = ids->type == REDIS_REPLY_ARRAY ? ids->elements : 0;
        for (size_t i = 0; i < n; i++) {
            cli_task_key(ctx, a->keys[2 * i], type, "task",
                         ids->element[i]->str);
            cli_task_key(ctx, a->keys[2 * i + 1], type, "seen",
                         ids->element[i]->str);
            a->argv[k++] = a->keys[2 * i];
            a->argv[k++] = a->keys[2 * i + 1];
        }
        g = k;
        a->argv[k++] = "delayed";
        a->argv[k++] = WHARF_GROUP;
        for (size_t i = 0; i < n; i++)
            a->argv[k++] = ids->element[i]->str;
        before = *removed;
        if (n > 0)
            code = drop_page(ctx, redis, g, k, a->argv, removed, &running);
        freeReplyObject(ids);
        if (n < PAGE || *removed == before)
            break;
    } while (code == 0);
    return code;
}

/* The stream, PAGE entries at a time from the oldest, once through. */
static int drop_ready(cli *ctx, redisContext *redis, const char *type,
                      page_args *a, long *removed, long *running)
{
    char from[64] = "-";
    int code = 0;

    for (;;) {
        redisReply *page =
            cli_run(ctx, &code, "queue drop", "XRANGE %s %s + COUNT %d",
                    a->common[0], from, PAGE);
        size_t n, taken = 0;
        int k = 3, g;
        if (!page)
            return code;
        n = page->type == REDIS_REPLY_ARRAY ? page->elements : 0;
        for (size_t i = 0; i < n; i++) {
            const redisReply *e = page->element[i];
            const char *id = NULL;
            for (size_t f = 0; f + 1 < e->element[1]->elements; f += 2)
                if (strcmp(e->element[1]->element[f]->str, "id") == 0)
                    id = e->element[1]->element[f + 1]->str;
            if (!id || !client_valid_id(id))
                continue; /* a bad entry: the hosts dead-letter it */
            cli_task_key(ctx, a->keys[taken], type, "seen", id);
            a->argv[k++] = a->keys[taken++];
        }
        g = k;
        a->argv[k++] = "ready";
        a->argv[k++] = WHARF_GROUP;
        for (size_t i = 0; i < n; i++) {
            const redisReply *e = page->element[i];
            for (size_t f = 0; f + 1 < e->element[1]->elements; f += 2)
                if (strcmp(e->element[1]->element[f]->str, "id") == 0 &&
                    client_valid_id(e->element[1]->element[f + 1]->str)) {
                    a->argv[k++] = e->element[0]->str;
                    a->argv[k++] = e->element[1]->element[f + 1]->str;
                }
        }
        if (taken > 0)
            code = drop_page(ctx, redis, g, k, a->argv, removed, running);
        if (n > 0)
            snprintf(from, sizeof(from), "(%s",
                     page->element[n - 1]->element[0]->str);
        freeReplyObject(page);
        if (code != 0 || n < PAGE)
            return code;
    }
}

enum { OPT_YES };

static int run(cli *ctx, const cli_args *args)
{
    const char *type;
    long removed = 0, running = 0;
    page_args a;
    redisContext *redis;
    int code, yes = args->flag[OPT_YES] != NULL;

    if ((code = cli_type_arg(ctx, args, &type)) != 0)
        return code;
    if (!(redis = cli_redis(ctx, &code)))
        return code;
    cli_key(ctx, a.common[0], type, "stream");
    cli_key(ctx, a.common[1], type, "delayed");
    cli_key(ctx, a.common[2], type, "entries");
    if (!yes) {
        long long ready = 0, delayed = 0;
        redisReply *r =
            cli_run(ctx, &code, "queue drop", "XLEN %s", a.common[0]);
        if (!r)
            return code;
        ready = r->integer;
        freeReplyObject(r);
        if (!(r = cli_run(ctx, &code, "queue drop", "ZCARD %s", a.common[1])))
            return code;
        delayed = r->integer;
        freeReplyObject(r);
        return cli_usage(ctx,
                         "this removes every waiting task of '%s' (%lld in "
                         "the stream, %lld delayed): add --yes",
                         type, ready, delayed);
    }
    a.keys = calloc(2 * PAGE, sizeof(*a.keys));
    a.argv = calloc(5 + 4 * PAGE, sizeof(*a.argv));
    if (!a.keys || !a.argv) {
        free(a.keys);
        free(a.argv);
        return cli_fail(ctx, EX_OSERR, "out of memory");
    }
    for (int i = 0; i < 3; i++)
        a.argv[i] = a.common[i];
    script_init(&drop_script);
    code = drop_delayed(ctx, redis, type, &a, &removed);
    if (code == 0)
        code = drop_ready(ctx, redis, type, &a, &removed, &running);
    free(a.keys);
    free(a.argv);
    printf("dropped %ld", removed);
    if (running)
        printf("; %ld running left to end", running);
    putchar('\n');
    return code;
}

const cli_command cmd_queue_drop_entry = {
    .name = "queue drop",
    .usage = "TYPE --yes",
    .help = "Removes every waiting task of TYPE: the ready ones in its stream and the\n"
"delayed ones (scheduled or waiting for a retry), with their dedupe markers.\n"
"Running tasks end as they would. Prints how many went.\n"
"  --yes         do it (without it: says how many it would remove, exit 64)\n"
"Exit: 0; 64 without --yes; 69 Redis unavailable.\n",
    .flags = {[OPT_YES] = {"yes", false}},
    .operands = {"TYPE"},
    .lower = 1,
    .upper = 1,
    .run = run,
};
