/* wharf dead list TYPE [filters] [--count]: one line per dead task,
 * newest first: its id, when it died (ISO 8601, UTC), its attempts and its
 * last error (escaped); with filters only the matching ones, searched in
 * Redis a page at a time (dead_filter.h); with --count only how many. */
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "cli.h"
#include "dead_filter.h"

/* Dead ids read per round trip. */
#define PAGE 500

static void print_field(const redisReply *r)
{
    if (r && r->type == REDIS_REPLY_STRING && r->len > 0)
        cli_print_escaped(stdout, r->str, r->len);
    else
        fputc('-', stdout);
}

/* True if an HMGET reply found any field. */
static int found(const redisReply *r)
{
    if (r->type != REDIS_REPLY_ARRAY)
        return 0;
    for (size_t i = 0; i < r->elements; i++)
        if (r->element[i]->type == REDIS_REPLY_STRING)
            return 1;
    return 0;
}

/* Prints one page: ids and scores in page, HMGET replies read now: each
 * id's dead record dead:<id>, and task:<id> for a record written before
 * dead tasks had their own key. 0 or an exit code. */
static int print_page(cli *ctx, const char *type, const redisReply *page)
{
    char key[KEY_MAX], legacy[KEY_MAX], when[CLI_TIME_MAX];
    redisContext *redis;
    size_t n = page->elements / 2;
    int code = 0, err;

    if (!(redis = cli_redis(ctx, &code)))
        return code;
    for (size_t i = 0; i < n; i++) {
        cli_task_key(ctx, key, type, "dead", page->element[2 * i]->str);
        cli_task_key(ctx, legacy, type, "task", page->element[2 * i]->str);
        if (redisAppendCommand(redis, "HMGET %s attempt error", key) !=
                REDIS_OK ||
            redisAppendCommand(redis, "HMGET %s attempt error", legacy) !=
                REDIS_OK)
            return cli_reply_check(ctx, NULL, "dead list");
    }
    for (size_t i = 0; i < n; i++) {
        const redisReply *id = page->element[2 * i];
        redisReply *record = cli_read(ctx, &err, "dead list");
        redisReply *old = record ? cli_read(ctx, &err, "dead list") : NULL;
        redisReply *r;
        if (!old) {
            freeReplyObject(record);
            return err;
        }
        if (code == 0)
            code = cli_reply_check(ctx, record, "dead list");
        if (code == 0)
            code = cli_reply_check(ctx, old, "dead list");
        r = code == 0 && !found(record) && found(old) ? old : record;
        if (code == 0) {
            int whole = r->type == REDIS_REPLY_ARRAY && r->elements == 2;
            cli_iso_time((int64_t)strtod(page->element[2 * i + 1]->str, NULL),
                         when, sizeof(when));
            cli_print_escaped(stdout, id->str, id->len);
            printf("  %s  ", when);
            print_field(whole ? r->element[0] : NULL);
            fputs("  ", stdout);
            print_field(whole ? r->element[1] : NULL);
            fputc('\n', stdout);
        }
        freeReplyObject(record);
        freeReplyObject(old);
    }
    return code;
}

/* Prints the matches of one page. */
static int print_matches(cli *ctx, redisContext *redis, const char *type,
                         const dead_match *m, size_t n, void *arg)
{
    char when[CLI_TIME_MAX];

    (void)ctx;
    (void)redis;
    (void)type;
    (void)arg;
    for (size_t i = 0; i < n; i++) {
        cli_iso_time(m[i].died_at_ms, when, sizeof(when));
        cli_print_escaped(stdout, m[i].id, strlen(m[i].id));
        printf("  %s  %s  ", when, m[i].attempt[0] ? m[i].attempt : "-");
        if (m[i].error_len > 0)
            cli_print_escaped(stdout, m[i].error, m[i].error_len);
        else
            fputc('-', stdout);
        fputc('\n', stdout);
    }
    return 0;
}

enum { OPT_FILTERS, OPT_COUNT = OPT_FILTERS + DEAD_FILTER_FLAGS };

static int run(cli *ctx, const cli_args *args)
{
    char dead[KEY_MAX];
    const char *type;
    dead_filter f;
    bool counting = args->flag[OPT_COUNT] != NULL;
    int code = 0;

    if ((code = cli_type_arg(ctx, args, &type)) != 0 ||
        (code = dead_filter_parse(ctx, args, OPT_FILTERS, &f)) != 0)
        return code;
    if (f.any || counting) {
        dead_walk w = {.shown = counting ? NULL : print_matches};
        code = dead_each_match(ctx, "dead list", type, &f, &w);
        if (code == 0 && counting)
            printf("%ld\n", w.matched);
        return code;
    }
    cli_key(ctx, dead, type, "dead");
    for (long start = 0; code == 0; start += PAGE) {
        redisReply *page =
            cli_run(ctx, &code, "dead list", "ZREVRANGE %s %ld %ld WITHSCORES",
                    dead, start, start + PAGE - 1);
        size_t n;
        if (!page)
            break;
        n = page->type == REDIS_REPLY_ARRAY ? page->elements / 2 : 0;
        for (size_t i = 0; i < 2 * n; i++)
            if (page->element[i]->type != REDIS_REPLY_STRING)
                n = 0;
        if (n > 0)
            code = print_page(ctx, type, page);
        freeReplyObject(page);
        if (n < PAGE)
            break;
    }
    return code;
}

const cli_command cmd_dead_list_entry = {
    .name = "dead list",
    .usage = "TYPE [--grep TEXT] [--since DUR] [--before DUR] [--attempts N] "
             "[--id-prefix P] [--count]",
    .help = "The dead tasks of TYPE, newest first: id, died at, attempts, last error.\n"
"The filters keep the tasks that match all of them, searched in Redis a\n"
"page at a time (a large dead set never holds Redis up):\n"
"  --grep TEXT      the error holds TEXT (bytes, case-sensitive)\n"
"  --since DUR      died within the last DUR\n"
"  --before DUR     died at least DUR ago\n"
"  --attempts N     after at least N attempts\n"
"  --id-prefix P    the id starts with P\n"
"  --count          print only how many match\n"
"Exit: 0; 64 bad usage; 69 Redis unavailable.\n",
    .flags = {DEAD_FILTER_FLAG_TABLE, {"count", false, NULL}},
    .operands = {"TYPE"},
    .lower = 1,
    .upper = 1,
    .run = run,
};
