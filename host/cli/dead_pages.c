/* Walking a dead set a page at a time; see dead_pages.h. */
#include "dead_pages.h"

#include <stdlib.h>
#include <sysexits.h>

#include "keys.h"

int dead_each_page(cli *ctx, const char *what, const char *type,
                   const script *s, long chunk, dead_page_fn fn, void *arg)
{
    char dead[KEY_MAX], err[512];
    redisContext *redis = NULL;
    redisReply *r;
    long long remaining;
    int code = 0;

    cli_key(ctx, dead, type, "dead");
    if (!(r = cli_run(ctx, &code, what, "ZCARD %s", dead)))
        return code;
    remaining = r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
    freeReplyObject(r);
    if (remaining > 0 && (redis = cli_redis(ctx, &code)) &&
        script_load(redis, s, err, sizeof(err)) != 0)
        code = cli_fail(ctx, EX_UNAVAILABLE, "%s", err);
    while (code == 0 && remaining > 0) {
        long take = remaining < chunk ? (long)remaining : chunk;
        r = cli_run(ctx, &code, what, "ZRANGE %s 0 %ld", dead, take - 1);
        if (!r)
            break;
        if (r->type != REDIS_REPLY_ARRAY || r->elements == 0) {
            freeReplyObject(r);
            break;
        }
        for (size_t i = 0; code == 0 && i < r->elements; i++)
            if (r->element[i]->type != REDIS_REPLY_STRING)
                code = cli_fail(ctx, EX_SOFTWARE, "ZRANGE gave a non-string");
        /* cli_run may have made a new connection: take it afresh. */
        if (code == 0 && (redis = cli_redis(ctx, &code))) {
            const char **ids = calloc(r->elements, sizeof(*ids));
            if (!ids) {
                code = cli_fail(ctx, EX_OSERR, "%s: out of memory", what);
            } else {
                for (size_t i = 0; i < r->elements; i++)
                    ids[i] = r->element[i]->str;
                code = fn(ctx, redis, type, ids, r->elements, arg);
                free(ids);
            }
        }
        remaining -= (long long)r->elements;
        freeReplyObject(r);
    }
    return code;
}
