/* wharf locks list TYPE: the processing locks of TYPE, one line each: task
 * id, fencing token, milliseconds left, and the owner (the random id of
 * the begin call that took it; a lock value is "<fence>-<owner>", and a
 * lock taken by an older host has no owner: the column is left out). An
 * operator command: it SCANs. */
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "cli.h"

/* Writes pattern text into buf with glob characters escaped, so a prefix
 * is matched literally. */
static void glob_escape(const char *text, char *buf, size_t len)
{
    size_t n = 0;

    for (; *text && n + 2 < len; text++) {
        if (strchr("*?[]\\", *text))
            buf[n++] = '\\';
        buf[n++] = *text;
    }
    buf[n] = '\0';
}

static int by_key(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends copies of the keys of one SCAN reply to *keys. 0 or -1. */
static int keep_keys(const redisReply *batch, char ***keys, size_t *n,
                     size_t *cap)
{
    for (size_t i = 0; i < batch->elements; i++) {
        if (batch->element[i]->type != REDIS_REPLY_STRING)
            continue;
        if (*n == *cap) {
            size_t grown_cap = *cap ? *cap * 2 : 64;
            char **grown = realloc(*keys, grown_cap * sizeof(**keys));
            if (!grown)
                return -1;
            *keys = grown;
            *cap = grown_cap;
        }
        if (!((*keys)[*n] = strdup(batch->element[i]->str)))
            return -1;
        (*n)++;
    }
    return 0;
}

/* SCANs for the lock keys; 0 with *keys (caller frees) or an exit code. */
static int scan_locks(cli *ctx, const char *type, char ***keys, size_t *n)
{
    char base[KEY_MAX], pattern[2 * KEY_MAX + 2], cursor[32] = "0";
    size_t cap = 0;
    int code = 0;

    cli_key(ctx, base, type, "lock:");
    glob_escape(base, pattern, sizeof(pattern) - 1);
    strcat(pattern, "*");
    do {
        redisReply *r = cli_run(ctx, &code, "locks list",
                                "SCAN %s MATCH %s COUNT 1000", cursor, pattern);
        if (!r)
            return code;
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
            r->element[0]->type != REDIS_REPLY_STRING ||
            r->element[1]->type != REDIS_REPLY_ARRAY) {
            freeReplyObject(r);
            return cli_fail(ctx, EX_SOFTWARE,
                            "SCAN gave an unexpected "
                            "reply");
        }
        snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
        if (keep_keys(r->element[1], keys, n, &cap) != 0)
            code = cli_fail(ctx, EX_OSERR, "out of memory");
        freeReplyObject(r);
    } while (code == 0 && strcmp(cursor, "0") != 0);
    return code;
}

/* GET and PTTL of every key, pipelined; prints the live ones. */
static int print_locks(cli *ctx, char **keys, size_t n, size_t skip)
{
    redisContext *redis;
    int code = 0, err;

    if (!(redis = cli_redis(ctx, &code)))
        return code;
    for (size_t i = 0; i < n; i++)
        if (redisAppendCommand(redis, "GET %s", keys[i]) != REDIS_OK ||
            redisAppendCommand(redis, "PTTL %s", keys[i]) != REDIS_OK)
            return cli_reply_check(ctx, NULL, "locks list");
    for (size_t i = 0; i < n; i++) {
        redisReply *token = cli_read(ctx, &err, "locks list");
        redisReply *ttl = token ? cli_read(ctx, &err, "locks list") : NULL;
        if (!ttl) {
            freeReplyObject(token);
            return err;
        }
        if (code == 0)
            code = cli_reply_check(ctx, token, "locks list");
        if (code == 0)
            code = cli_reply_check(ctx, ttl, "locks list");
        /* A lock released since the SCAN is no longer one. */
        if (code == 0 && token->type == REDIS_REPLY_STRING &&
            ttl->type == REDIS_REPLY_INTEGER) {
            const char *dash = memchr(token->str, '-', token->len);
            size_t fence_len = dash ? (size_t)(dash - token->str) : token->len;
            cli_print_escaped(stdout, keys[i] + skip, strlen(keys[i] + skip));
            fputs("  ", stdout);
            cli_print_escaped(stdout, token->str, fence_len);
            printf("  %lld", ttl->integer);
            if (dash) {
                fputs("  ", stdout);
                cli_print_escaped(stdout, dash + 1, token->len - fence_len - 1);
            }
            fputc('\n', stdout);
        }
        freeReplyObject(token);
        freeReplyObject(ttl);
    }
    return code;
}

static int run(cli *ctx, const cli_args *args)
{
    char base[KEY_MAX];
    char **keys = NULL;
    const char *type;
    size_t n = 0;
    int code;

    if ((code = cli_type_arg(ctx, args, &type)) != 0)
        return code;
    code = scan_locks(ctx, type, &keys, &n);
    if (code == 0 && n > 0) {
        size_t kept = 0;
        /* SCAN may return a key twice. */
        qsort(keys, n, sizeof(*keys), by_key);
        for (size_t i = 0; i < n; i++) {
            if (kept > 0 && strcmp(keys[kept - 1], keys[i]) == 0)
                free(keys[i]);
            else
                keys[kept++] = keys[i];
        }
        n = kept;
        cli_key(ctx, base, type, "lock:");
        code = print_locks(ctx, keys, n, strlen(base));
    }
    for (size_t i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
    return code;
}

const cli_command cmd_locks_list_entry = {
    .name = "locks list",
    .usage = "TYPE",
    .help = "The processing locks of TYPE: id, fencing token, ms left, owner nonce.\n"
"Exit: 0; 69 Redis unavailable.\n",
    .operands = {"TYPE"},
    .lower = 1,
    .upper = 1,
    .run = run,
};
