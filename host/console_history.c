/* GET /api/history?minutes=N[&type=T][&host=H]: every minute's figures
 * of the fleet's history (history_read.h), read in one pipelined round
 * trip within the pass's budget (console_redis.c): one HGETALL per type
 * and minute, after an SMEMBERS of the fleet's types when no type is
 * named. The reply is series the page draws (docs/console.md):
 * counts per minute, the wait and run p95 per minute (the bound of the
 * bucket it falls in: -1 past the last, null when nothing ran), the
 * totals, and the hosts that wrote any of it, so the page can offer
 * them one at a time. */
#include "console_history.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "clock_ms.h"
#include "config.h"
#include "console_redis.h"
#include "console_reply.h"
#include "history_read.h"
#include "json_out.h"
#include "keys.h"
#include "xmalloc.h"

static const char *const count_names[] = {"ok", "retry", "dead", "cancelled"};

/* A quantile in ms: null when nothing ran, -1 past the last bound. */
static void put_quantile(json_out *b, const history_figures *f, int wait,
                         double q)
{
    int64_t us = history_quantile_us(f, wait, q);

    if (us == -2)
        json_out_puts(b, "null");
    else if (us == -1)
        json_out_puts(b, "-1");
    else
        json_out_printf(b, "%g", (double)us / 1000.0);
}

static void put_series(json_out *b, const history_figures *minutes, size_t n)
{
    json_out_puts(b, ",\"series\":{");
    for (size_t k = 0; k < 4; k++) {
        json_out_printf(b, "%s\"%s\":[", k ? "," : "", count_names[k]);
        for (size_t i = 0; i < n; i++)
            json_out_printf(b, "%s%" PRIu64, i ? "," : "", minutes[i].v[k]);
        json_out_puts(b, "]");
    }
    for (int wait = 1; wait >= 0; wait--) {
        json_out_printf(b, ",\"%s_p95_ms\":[", wait ? "wait" : "run");
        for (size_t i = 0; i < n; i++) {
            if (i)
                json_out_puts(b, ",");
            put_quantile(b, &minutes[i], wait, 0.95);
        }
        json_out_puts(b, "]");
    }
    json_out_puts(b, "}");
}

static void put_total(json_out *b, const history_figures *total)
{
    json_out_puts(b, ",\"total\":{");
    for (size_t k = 0; k < 4; k++)
        json_out_printf(b, "%s\"%s\":%" PRIu64, k ? "," : "", count_names[k],
                        total->v[k]);
    json_out_puts(b, ",\"wait_p50_ms\":");
    put_quantile(b, total, 1, 0.5);
    json_out_puts(b, ",\"wait_p95_ms\":");
    put_quantile(b, total, 1, 0.95);
    json_out_puts(b, ",\"run_p50_ms\":");
    put_quantile(b, total, 0, 0.5);
    json_out_puts(b, ",\"run_p95_ms\":");
    put_quantile(b, total, 0, 0.95);
    json_out_puts(b, "}");
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Every type of the fleet: the members of <prefix>:types (every type a
 * host served or a producer enqueued), sorted, pointing into the reply
 * returned (caller frees it and *types); NULL after answering. */
static redisReply *fleet_types(console *c, pipeline *redis, http_reply *reply,
                               const char ***types, size_t *n)
{
    char key[KEY_MAX];
    redisReply *set;

    key_global(key, sizeof(key), console_prefix(c), "types");
    if (pipeline_addf(redis, key, "SMEMBERS %s", key) != 0)
        xmalloc_oom();
    if (console_read_replies(c, &set, 1) != 0) {
        console_unavailable(reply, "2", "redis: the types could not be read");
        return NULL;
    }
    if (set->type != REDIS_REPLY_ARRAY) {
        console_reply_error(reply, 502, "redis: %s is not a set", key);
        freeReplyObject(set);
        return NULL;
    }
    *types = xcalloc(set->elements + 1, sizeof(**types));
    *n = 0;
    for (size_t i = 0; i < set->elements && *n < CONSOLE_HISTORY_TYPES_MAX; i++)
        if (set->element[i]->type == REDIS_REPLY_STRING &&
            config_valid_type_name(set->element[i]->str))
            (*types)[(*n)++] = set->element[i]->str;
    if (*n > 0)
        qsort(*types, *n, sizeof(**types), by_name);
    return set;
}

void console_history(console *c, http_reply *reply)
{
    const char *type = console_query_type(reply, false);
    const char *host = http_query("host");
    long minutes =
        console_query_number("minutes", 60, 1, CONSOLE_HISTORY_MINUTES_MAX);
    const char **types = NULL;
    size_t n_types = 0, n;
    redisReply *set = NULL;
    history_figures *sum = NULL, *one = NULL, total = {{0}};
    history_hosts *hosts = NULL;
    int64_t from;
    char why[256];
    pipeline *redis;
    json_out b = {0};

    if (type && !*type)
        return;
    if (minutes < 0) {
        console_reply_error(reply, 400, "minutes: 1..%d",
                            CONSOLE_HISTORY_MINUTES_MAX);
        return;
    }
    if (host && (!*host || strlen(host) >= HISTORY_HOST_MAX)) {
        console_reply_error(reply, 400, "host: a host's name, as listed");
        return;
    }
    if (c->v.cfg->metrics_history_ms == 0) {
        console_reply_error(reply, 404,
                            "this host writes no history ([metrics] "
                            "history = 0)");
        return;
    }
    if (!(redis = console_redis_for(c, reply)))
        return;
    if (type) {
        types = xcalloc(1, sizeof(*types));
        types[n_types++] = type;
    } else if (!(set = fleet_types(c, redis, reply, &types, &n_types))) {
        return;
    }
    n = (size_t)minutes;
    if (n_types * n > CONSOLE_HISTORY_READS_MAX) {
        console_reply_error(reply, 413,
                            "%zu types over %zu minutes is more than the "
                            "console reads at once (%d minute keys): choose "
                            "a type or a shorter range",
                            n_types, n, CONSOLE_HISTORY_READS_MAX);
        goto out;
    }
    from = history_minute_of(clock_wall_ms()) - (int64_t)n + 1;
    for (size_t t = 0; t < n_types; t++)
        if (history_read_add(redis, console_prefix(c), types[t], from, n) != 0)
            xmalloc_oom(); /* a type name always fits a key */
    if (console_run_pipe(c) != 0) {
        console_unavailable(reply, "2", "redis: the history could not be read");
        goto out;
    }
    sum = xcalloc(n, sizeof(*sum));
    one = xcalloc(n, sizeof(*one));
    hosts = xcalloc(1, sizeof(*hosts));
    for (size_t t = 0; t < n_types; t++) {
        if (history_read_take(redis, t * n, n, host, one, hosts, why,
                              sizeof(why)) != 0) {
            console_reply_error(reply, 502, "redis: %s", why);
            goto out;
        }
        for (size_t i = 0; i < n; i++)
            history_add(&sum[i], &one[i]);
    }
    for (size_t i = 0; i < n; i++)
        history_add(&total, &sum[i]);
    json_out_printf(&b,
                    "{\"minute_ms\":%d,\"from_ms\":%" PRId64
                    ",\"minutes\":%zu,\"type\":",
                    HISTORY_MINUTE_MS, from * HISTORY_MINUTE_MS, n);
    if (type)
        json_out_str(&b, type);
    else
        json_out_puts(&b, "null");
    json_out_puts(&b, ",\"host\":");
    if (host)
        json_out_str(&b, host);
    else
        json_out_puts(&b, "null");
    json_out_puts(&b, ",\"hosts\":[");
    for (size_t h = 0; h < hosts->n; h++) {
        if (h)
            json_out_puts(&b, ",");
        json_out_str(&b, hosts->name[h]);
    }
    json_out_puts(&b, "]");
    if (!type) {
        json_out_puts(&b, ",\"types\":[");
        for (size_t t = 0; t < n_types; t++) {
            if (t)
                json_out_puts(&b, ",");
            json_out_str(&b, types[t]);
        }
        json_out_puts(&b, "]");
    }
    put_series(&b, sum, n);
    put_total(&b, &total);
    json_out_puts(&b, "}");
    console_reply_json(reply, 200, &b);
out:
    pipeline_reset(redis);
    freeReplyObject(set);
    free(types);
    free(sum);
    free(one);
    free(hosts);
}
