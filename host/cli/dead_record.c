/* Reading one dead task's record; see dead_record.h. */
#include "dead_record.h"

#include <string.h>
#include <sysexits.h>

/* True if the reply is a hash's HGETALL: strings, in pairs. */
static int is_hash(const redisReply *all)
{
    if (all->type != REDIS_REPLY_ARRAY || all->elements % 2 != 0)
        return 0;
    for (size_t i = 0; i < all->elements; i++)
        if (all->element[i]->type != REDIS_REPLY_STRING)
            return 0;
    return 1;
}

int dead_record_read(cli *ctx, const char *what, const char *type,
                     const char *id, dead_record *r)
{
    char dead[KEY_MAX], delayed[KEY_MAX];
    int code = 0;

    memset(r, 0, sizeof(*r));
    cli_key(ctx, dead, type, "dead");
    cli_key(ctx, delayed, type, "delayed");
    cli_task_key(ctx, r->key, type, "dead", id);
    if (!(r->score = cli_run(ctx, &code, what, "ZSCORE %s %s", dead, id)))
        return code;
    if (r->score->type != REDIS_REPLY_STRING)
        return cli_fail(ctx, CLI_NOT_FOUND, "no dead task '%s' of type '%s'",
                        id, type);
    if (!(r->all = cli_run(ctx, &code, what, "HGETALL %s", r->key)))
        return code;
    if (is_hash(r->all) && r->all->elements == 0) {
        if (!(r->delayed =
                  cli_run(ctx, &code, what, "ZSCORE %s %s", delayed, id)))
            return code;
        if (r->delayed->type != REDIS_REPLY_STRING) {
            freeReplyObject(r->all);
            cli_task_key(ctx, r->key, type, "task", id);
            if (!(r->all = cli_run(ctx, &code, what, "HGETALL %s", r->key)))
                return code;
        }
    }
    if (!is_hash(r->all))
        return cli_fail(ctx, EX_SOFTWARE, "%s is not a hash", r->key);
    return 0;
}

int dead_record_gone(cli *ctx, const char *type, const char *id,
                     const dead_record *r)
{
    return cli_fail(ctx, CLI_NOT_FOUND,
                    "dead task '%s' of type '%s' has no record (%s is gone)",
                    id, type, r->key);
}

const redisReply *dead_record_field(const dead_record *r, const char *name)
{
    for (size_t i = 0; i + 1 < r->all->elements; i += 2)
        if (strcmp(r->all->element[i]->str, name) == 0)
            return r->all->element[i + 1];
    return NULL;
}

void dead_record_free(dead_record *r)
{
    freeReplyObject(r->score);
    freeReplyObject(r->all);
    freeReplyObject(r->delayed);
}
