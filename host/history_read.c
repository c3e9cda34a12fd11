/* Reading the fleet's history; see history_read.h. */
#include "history_read.h"

#include <stdio.h>
#include <string.h>

#include "error_set.h"
#include "keys.h"

int history_read_add(pipeline *p, const char *prefix, const char *type,
                     int64_t from, size_t n)
{
    char key[KEY_MAX];

    for (size_t i = 0; i < n; i++) {
        if (history_key(key, sizeof(key), prefix, type, from + (int64_t)i) <
            0) {
            snprintf(p->errstr, sizeof(p->errstr),
                     "a history key of '%s' is too long", type);
            return -1;
        }
        if (pipeline_addf(p, key, "HGETALL %s", key) != 0)
            return -1;
    }
    return 0;
}

/* Adds the host of field (its part before '#') to hosts if new. */
static void note_host(history_hosts *hosts, const char *field, size_t len)
{
    if (!hosts || len >= HISTORY_HOST_MAX)
        return;
    for (size_t i = 0; i < hosts->n; i++)
        if (strlen(hosts->name[i]) == len &&
            memcmp(hosts->name[i], field, len) == 0)
            return;
    if (hosts->n == HISTORY_HOSTS_MAX)
        return;
    memcpy(hosts->name[hosts->n], field, len);
    hosts->name[hosts->n++][len] = '\0';
}

int history_read_take(const pipeline *p, size_t first, size_t n,
                      const char *host, history_figures *out,
                      history_hosts *hosts, char *why, size_t why_len)
{
    for (size_t i = 0; i < n; i++) {
        const redisReply *r = pipeline_reply(p, first + i);
        memset(&out[i], 0, sizeof(out[i]));
        if (!r || r->type != REDIS_REPLY_ARRAY) {
            error_set(why, why_len, "%s",
                      r && r->type == REDIS_REPLY_ERROR
                          ? r->str
                          : "a history key is not a hash");
            return -1;
        }
        for (size_t k = 0; k + 1 < r->elements; k += 2) {
            const redisReply *field = r->element[k], *value = r->element[k + 1];
            history_figures f;
            size_t len;
            if (field->type != REDIS_REPLY_STRING ||
                value->type != REDIS_REPLY_STRING ||
                history_parse(value->str, value->len, &f) != 0)
                continue;
            len = history_host_len(field->str, field->len);
            note_host(hosts, field->str, len);
            if (host && (strlen(host) != len || memcmp(host, field->str, len)))
                continue;
            history_add(&out[i], &f);
        }
    }
    return 0;
}

int64_t history_minute_of(int64_t now_wall_ms)
{
    return now_wall_ms / HISTORY_MINUTE_MS;
}

size_t history_minutes_in(int64_t last_ms)
{
    int64_t n = (last_ms + HISTORY_MINUTE_MS - 1) / HISTORY_MINUTE_MS;

    return n < 1 ? 1 : (size_t)n;
}
