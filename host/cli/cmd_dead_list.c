/* wharf dead list TYPE: one line per dead task, newest first: its id, when
 * it died (ISO 8601, UTC), its attempts and its last error (escaped). */
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "cli.h"

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

static int run(cli *ctx, const cli_args *args)
{
    char dead[KEY_MAX];
    const char *type;
    int code = 0;

    if ((code = cli_type_arg(ctx, args, &type)) != 0)
        return code;
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
    .usage = "TYPE",
    .help = "The dead tasks of TYPE, newest first: id, died at, attempts, last error.\n"
"Exit: 0; 69 Redis unavailable.\n",
    .operands = {"TYPE"},
    .lower = 1,
    .upper = 1,
    .run = run,
};
