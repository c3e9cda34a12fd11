/* GET /api/dead (a page of a type's dead set, newest first, with each
 * task's attempt and error) and GET /api/task (one task's status and
 * detail, read by sdk/lua/task_detail.lua): the console's reads
 * of task data, each in one pipelined round trip or two, within the
 * pass's budget (console_redis.c). Every byte of task data leaves as
 * JSON text with <, > and & escaped (json_out_text), for the page to
 * set as textContent. */
#include "console_tasks.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "config.h"
#include "console_redis.h"
#include "console_reply.h"
#include "json_out.h"
#include "keys.h"
#include "lua_scripts.h"
#include "xmalloc.h"

/* Bytes of a payload or result preview, and of an error in a list. */
#define PREVIEW_BYTES 2048
#define PREVIEW_TEXT "2048" /* PREVIEW_BYTES, for task_detail.lua */
#define LIST_TEXT_BYTES 300
/* Bytes of any other field of a task shown. */
#define FIELD_BYTES 4096

/* ---- GET /api/dead ---- */

/* The keys that may hold a dead task's envelope, in the order to read
 * them: dead:<id> first (where dead envelopes are kept), then task:<id>
 * (where they were kept before, and where a delayed task's is). */
static void dead_envelope_keys(const console *c, const char *type,
                               const char *id, char keys[2][KEY_MAX])
{
    key_of_task(keys[0], KEY_MAX, console_prefix(c), type, "dead", id);
    key_of_task(keys[1], KEY_MAX, console_prefix(c), type, "task", id);
}

void console_dead_page(console *c, http_reply *reply)
{
    const char *type = console_query_type(reply, true);
    long offset = console_query_number("offset", 0, 0, 1L << 40);
    long limit = console_query_number("limit", 50, 1, CONSOLE_PAGE_MAX);
    char key[KEY_MAX], keys[2][KEY_MAX];
    pipeline *redis;
    redisReply *head[2], **items = NULL, *ids;
    size_t n = 0;
    json_out b = {0};

    if (!*type)
        return;
    if (offset < 0 || limit < 0) {
        console_reply_error(reply, 400, "offset: 0 or more; limit: 1..%d",
                            CONSOLE_PAGE_MAX);
        return;
    }
    if (!(redis = console_redis_for(c, reply)))
        return;
    key_of_type(key, sizeof(key), console_prefix(c), type, "dead");
    /* A command fails to add only when the core ran out of memory (it
     * reports; the host aborts, xmalloc.h), here and below. */
    if (pipeline_addf(redis, key, "ZCARD %s", key) != 0 ||
        pipeline_addf(redis, key, "ZREVRANGE %s %ld %ld WITHSCORES", key,
                      offset, offset + limit - 1) != 0)
        xmalloc_oom();
    if (console_read_replies(c, head, 2) != 0) {
        console_unavailable(reply, "2",
                            "redis: the dead set could not be read");
        return;
    }
    ids = head[1];
    if (head[0]->type != REDIS_REPLY_INTEGER ||
        ids->type != REDIS_REPLY_ARRAY) {
        console_reply_error(reply, 502, "redis: unexpected reply to ZREVRANGE");
        goto out;
    }
    n = ids->elements / 2;
    for (size_t i = 0; i < n; i++) {
        dead_envelope_keys(c, type, ids->element[2 * i]->str, keys);
        for (size_t k = 0; k < 2; k++)
            if (pipeline_addf(redis, keys[k], "HMGET %s attempt error",
                              keys[k]) != 0)
                xmalloc_oom();
    }
    items = xcalloc(2 * n + 1, sizeof(*items));
    if (console_read_replies(c, items, 2 * n) != 0) {
        console_unavailable(reply, "2",
                            "redis: the dead set could not be read");
        goto out;
    }
    json_out_puts(&b, "{\"type\":");
    json_out_str(&b, type);
    json_out_printf(&b,
                    ",\"total\":%lld,\"offset\":%ld,\"limit\":%ld,\"items\":[",
                    head[0]->integer, offset, limit);
    for (size_t i = 0; i < n; i++) {
        const redisReply *id = ids->element[2 * i];
        /* dead:<id> first; task:<id> when it holds nothing */
        const redisReply *env = items[2 * i];
        if (!env || env->type != REDIS_REPLY_ARRAY || env->elements != 2 ||
            (env->element[0]->type != REDIS_REPLY_STRING &&
             env->element[1]->type != REDIS_REPLY_STRING))
            env = items[2 * i + 1];
        json_out_puts(&b, i ? ",{\"id\":" : "{\"id\":");
        json_out_text(&b, id->str, id->len, SIZE_MAX);
        json_out_printf(&b, ",\"died_at\":%lld",
                        (long long)strtod(ids->element[2 * i + 1]->str, NULL));
        if (env && env->type == REDIS_REPLY_ARRAY && env->elements == 2) {
            if (env->element[0]->type == REDIS_REPLY_STRING)
                json_out_printf(&b, ",\"attempt\":%ld",
                                strtol(env->element[0]->str, NULL, 10));
            if (env->element[1]->type == REDIS_REPLY_STRING) {
                json_out_puts(&b, ",\"error\":");
                json_out_text(&b, env->element[1]->str, env->element[1]->len,
                              LIST_TEXT_BYTES);
            }
        }
        json_out_puts(&b, "}");
    }
    json_out_puts(&b, "]}");
    console_reply_json(reply, 200, &b);
out:
    console_free_replies(head, 2);
    if (items)
        console_free_replies(items, 2 * n);
    free(items);
}

/* ---- GET /api/task ---- */

/* Adds the call of sdk/lua/task_detail.lua (the task's status and
 * detail, read at once) for id of type. Its keys fit KEY_MAX (the type
 * and the id are checked), so building or adding it fails only when the
 * core ran out of memory (it reports; the host aborts, xmalloc.h). */
static void add_task_detail(console *c, pipeline *redis, const char *type,
                            const char *id)
{
    if (script_task_detail_call(&redis->cmd, console_prefix(c), type, id,
                                PREVIEW_TEXT) != 0 ||
        pipeline_add_command(redis, -1, &redis->cmd, &script_task_detail) != 0)
        xmalloc_oom();
}

static bool task_reply_ok(const redisReply *r)
{
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 8 ||
        r->element[0]->type != REDIS_REPLY_STRING ||
        r->element[1]->type != REDIS_REPLY_ARRAY)
        return false;
    for (size_t i = 0; i < r->element[1]->elements; i++)
        if (r->element[1]->element[i]->type != REDIS_REPLY_STRING)
            return false;
    return true;
}

/* The trace id (32 hex digits) of a W3C traceparent, or "". */
static void trace_id_of(const char *tp, size_t len, char out[33])
{
    out[0] = '\0';
    if (len >= 55 && tp[2] == '-' && tp[35] == '-') {
        for (int i = 0; i < 32; i++) {
            char ch = tp[3 + i];
            if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')))
                return;
        }
        memcpy(out, tp + 3, 32);
        out[32] = '\0';
    }
}

/* Where the running task runs, if on this host: its slot's worker, and
 * its run there in *run. */
static const console_slot *slot_running(const console *c, const char *type,
                                        const char *id, const console_run **run)
{
    for (size_t i = 0; i < c->v.n_slots; i++)
        for (size_t r = 0; r < c->v.slots[i].n_runs; r++)
            if (strcmp(c->v.slots[i].runs[r].id, id) == 0 &&
                strcmp(c->v.slots[i].runs[r].type, type) == 0) {
                *run = &c->v.slots[i].runs[r];
                return &c->v.slots[i];
            }
    return NULL;
}

static void jb_task(json_out *b, console *c, const char *type, const char *id,
                    const redisReply *r)
{
    const redisReply *h = r->element[1];
    const console_slot *where;
    const console_run *run = NULL;
    char trace_id[33] = "";

    json_out_puts(b, "{\"type\":");
    json_out_str(b, type);
    json_out_puts(b, ",\"id\":");
    json_out_str(b, id);
    json_out_puts(b, ",\"status\":");
    json_out_text(b, r->element[0]->str, r->element[0]->len, 32);
    json_out_puts(b, ",\"fields\":[");
    for (size_t i = 0; i + 1 < h->elements; i += 2) {
        const redisReply *name = h->element[i], *value = h->element[i + 1];
        json_out_puts(b, i ? ",{\"name\":" : "{\"name\":");
        json_out_text(b, name->str, name->len, 200);
        json_out_puts(b, ",\"value\":");
        json_out_text(b, value->str, value->len,
                      strcmp(name->str, "payload") == 0 ? PREVIEW_BYTES
                                                        : FIELD_BYTES);
        if (value->len > FIELD_BYTES && strcmp(name->str, "payload") != 0)
            json_out_printf(b, ",\"cut_at\":%d", FIELD_BYTES);
        json_out_puts(b, "}");
        if (strcmp(name->str, "trace") == 0)
            trace_id_of(value->str, value->len, trace_id);
    }
    json_out_puts(b, "]");
    for (size_t i = 0; i + 1 < h->elements; i += 2) {
        const redisReply *value = h->element[i + 1];
        if (strcmp(h->element[i]->str, "payload") == 0) {
            json_out_printf(b, ",\"payload\":{\"bytes\":%lld,\"preview\":",
                            r->element[2]->integer);
            json_out_text(b, value->str, value->len, PREVIEW_BYTES);
            json_out_printf(b, ",\"cut\":%s}",
                            r->element[2]->integer > (long long)value->len
                                ? "true"
                                : "false");
        }
        if (strcmp(h->element[i]->str, "trace") == 0) {
            json_out_puts(b, ",\"trace\":");
            json_out_text(b, value->str, value->len, 200);
        }
    }
    if (trace_id[0])
        json_out_printf(b, ",\"trace_id\":\"%s\"", trace_id);
    if (r->element[3]->type == REDIS_REPLY_STRING && r->element[3]->len)
        json_out_printf(b, ",\"died_at\":%lld",
                        (long long)strtod(r->element[3]->str, NULL));
    if (r->element[4]->type == REDIS_REPLY_STRING && r->element[4]->len)
        json_out_printf(b, ",\"due_at\":%lld",
                        (long long)strtod(r->element[4]->str, NULL));
    if (r->element[5]->type == REDIS_REPLY_INTEGER &&
        r->element[5]->integer > 0)
        json_out_printf(b, ",\"lock_ms_left\":%lld", r->element[5]->integer);
    if (script_task_detail_word_of(r->element[0]->str) ==
            SCRIPT_TASK_DETAIL_DONE &&
        r->element[7]->type == REDIS_REPLY_STRING) {
        json_out_printf(b, ",\"result\":{\"bytes\":%lld,\"preview\":",
                        r->element[6]->integer);
        json_out_text(b, r->element[7]->str, r->element[7]->len, PREVIEW_BYTES);
        json_out_puts(b, "}");
    }
    where = slot_running(c, type, id, &run);
    if (where) {
        json_out_puts(b, ",\"worker\":");
        json_out_str(b, where->consumer);
        json_out_printf(b, ",\"running_ms\":%" PRId64, run->running_ms);
    }
    json_out_puts(b, "}");
}

/* GET /api/task?id=ID[&type=T]: without a type, every served type is
 * looked at (one pipelined round trip) and the first that knows the id
 * answers. */
void console_task_detail(console *c, http_reply *reply)
{
    const char *id = http_query("id");
    const char *type = console_query_type(reply, false);
    const char *types[METRICS_MAX_TYPES];
    size_t n_types = 0, found = SIZE_MAX;
    redisReply **r = NULL;
    pipeline *redis;
    json_out b = {0};

    if (type && !*type)
        return;
    if (!id || !config_valid_task_id(id, strlen(id))) {
        console_reply_error(reply, 400,
                            "id: expected 1-200 printable bytes without "
                            "spaces");
        return;
    }
    if (type) {
        types[n_types++] = type;
    } else {
        for (size_t i = 0; i < c->v.n_types && i < METRICS_MAX_TYPES; i++)
            types[n_types++] = c->v.types[i];
    }
    if (!(redis = console_redis_for(c, reply)))
        return;
    for (size_t i = 0; i < n_types; i++)
        add_task_detail(c, redis, types[i], id);
    r = xcalloc(n_types + 1, sizeof(*r));
    if (console_read_replies(c, r, n_types) != 0) {
        console_unavailable(reply, "2", "redis: the task could not be read");
        free(r);
        return;
    }
    for (size_t i = 0; i < n_types; i++) {
        if (!task_reply_ok(r[i])) {
            console_reply_error(reply, 502, "redis: unexpected reply: %s",
                                r[i]->type == REDIS_REPLY_ERROR ? r[i]->str
                                                                : "?");
            goto out;
        }
        if (found == SIZE_MAX &&
            script_task_detail_word_of(r[i]->element[0]->str) !=
                SCRIPT_TASK_DETAIL_UNKNOWN)
            found = i;
    }
    if (found == SIZE_MAX) {
        json_out_puts(&b, "{\"id\":");
        json_out_str(&b, id);
        if (type) {
            json_out_puts(&b, ",\"type\":");
            json_out_str(&b, type);
        }
        json_out_puts(&b, ",\"status\":\"unknown\"}");
        console_reply_json(reply, 404, &b);
        goto out;
    }
    jb_task(&b, c, types[found], id, r[found]);
    console_reply_json(reply, 200, &b);
out:
    console_free_replies(r, n_types);
    free(r);
}
