/* The supervisor's writes of the fleet's history; see history_write.h. */
#include "history_write.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "history.h"
#include "keys.h"
#include "log.h"
#include "xmalloc.h"

/* One type's figures of a closed minute, not yet written. */
typedef struct history_pending {
    char type[METRICS_TYPE_LEN];
    int64_t minute;
    history_figures f;
} history_pending;

struct history_writer {
    char field[400];
    bool open;             /* a minute is under way */
    int64_t minute;        /* which */
    history_figures *base; /* per type index: the counters at its start */
    history_pending *pending;
    size_t n_pending, cap_pending;
    uint64_t dropped; /* pending figures given up, for the log */
};

history_writer *history_writer_create(const char *name, const char *run)
{
    history_writer *w = xcalloc(1, sizeof(*w));

    snprintf(w->field, sizeof(w->field), "%s#%s", name, run);
    /* Zeros: whatever this process counted before its first minute
     * opened is its first minute's. */
    w->base = xcalloc(METRICS_MAX_TYPES, sizeof(*w->base));
    return w;
}

void history_writer_destroy(history_writer *w)
{
    if (!w)
        return;
    free(w->base);
    free(w->pending);
    free(w);
}

bool history_writer_due(const history_writer *w, int64_t now_wall_ms)
{
    return !w->open || now_wall_ms / HISTORY_MINUTE_MS != w->minute ||
           w->n_pending > 0;
}

static uint64_t load(const _Atomic uint64_t *v)
{
    return atomic_load_explicit(v, memory_order_relaxed);
}

/* The counters of type index t now, in the stored order. */
static void read_counters(const metrics *m, uint32_t t, history_figures *f)
{
    const type_metrics *tm = &m->types[t];

    f->v[HISTORY_OK] = load(&tm->outcomes[OUTCOME_OK]);
    f->v[HISTORY_RETRY] = load(&tm->outcomes[OUTCOME_RETRY]);
    f->v[HISTORY_DEAD] = load(&tm->outcomes[OUTCOME_DEAD]);
    f->v[HISTORY_CANCELLED] = load(&tm->outcomes[OUTCOME_CANCELLED]);
    f->v[HISTORY_WAIT_SUM_US] = load(&tm->wait.sum_us);
    f->v[HISTORY_RUN_SUM_US] = load(&tm->duration.sum_us);
    for (size_t b = 0; b < METRICS_BUCKETS; b++) {
        f->v[HISTORY_WAIT_BUCKETS + b] = load(&tm->wait.buckets[b]);
        f->v[HISTORY_RUN_BUCKETS + b] = load(&tm->duration.buckets[b]);
    }
}

/* Keeps one type's figures of a closed minute, dropping the oldest kept
 * past the bound. */
static void keep(history_writer *w, const char *type, int64_t minute,
                 const history_figures *f)
{
    size_t most = (size_t)HISTORY_PENDING_MINUTES * METRICS_MAX_TYPES;
    history_pending *p;

    if (w->n_pending == most) {
        memmove(w->pending, w->pending + 1,
                (w->n_pending - 1) * sizeof(*w->pending));
        w->n_pending--;
        w->dropped++;
    }
    if (w->n_pending == w->cap_pending) {
        w->cap_pending = w->cap_pending ? w->cap_pending * 2 : 16;
        w->pending = xrealloc(w->pending, w->cap_pending * sizeof(*w->pending));
    }
    p = &w->pending[w->n_pending++];
    snprintf(p->type, sizeof(p->type), "%s", type);
    p->minute = minute;
    p->f = *f;
}

/* Ends the minute under way: what each type counted since its start
 * joins what waits to be written. */
static void close_minute(history_writer *w, const metrics *m)
{
    uint32_t n = atomic_load_explicit(&m->n_types, memory_order_acquire);

    if (n > METRICS_MAX_TYPES)
        n = METRICS_MAX_TYPES;
    for (uint32_t t = 0; t < n; t++) {
        history_figures now, delta;
        read_counters(m, t, &now);
        for (size_t i = 0; i < HISTORY_VALUES; i++)
            delta.v[i] = now.v[i] - w->base[t].v[i];
        w->base[t] = now;
        if (!history_empty(&delta))
            keep(w, m->types[t].type, w->minute, &delta);
    }
}

/* Sends every kept figure: 0, or -1 when the pipeline failed (all kept). */
static int send_pending(history_writer *w, pipeline *p, const char *prefix,
                        int64_t keep_ms)
{
    char key[KEY_MAX], value[HISTORY_TEXT_MAX], at[24];
    size_t refused = 0;

    pipeline_reset(p);
    for (size_t i = 0; i < w->n_pending; i++) {
        const history_pending *e = &w->pending[i];
        int64_t expire_s =
            ((e->minute + 1) * HISTORY_MINUTE_MS + keep_ms) / 1000;
        if (history_key(key, sizeof(key), prefix, e->type, e->minute) < 0)
            continue; /* a type name too long for a key has no history */
        history_format(&e->f, value, sizeof(value));
        snprintf(at, sizeof(at), "%" PRId64, expire_s);
        if (pipeline_addf(p, key, "HSET %s %s %s", key, w->field, value) != 0 ||
            pipeline_addf(p, key, "EXPIREAT %s %s", key, at) != 0) {
            pipeline_reset(p);
            return -1;
        }
    }
    if (pipeline_run(p) != 0) {
        pipeline_reset(p);
        return -1;
    }
    for (size_t i = 0; i < p->n; i++) {
        const redisReply *r = pipeline_reply(p, i);
        if (!r || r->type == REDIS_REPLY_ERROR)
            refused++;
    }
    pipeline_reset(p);
    if (refused > 0)
        log_fields(WHARF_LOG_WARN,
                   "history: Redis refused some writes; those minutes "
                   "lack this host's figures",
                   (log_field[]){LOG_INT("refused", (int64_t)refused)}, 1);
    if (w->dropped > 0) {
        log_fields(WHARF_LOG_WARN,
                   "history: figures kept too long while Redis was away "
                   "were dropped",
                   (log_field[]){LOG_INT("dropped", (int64_t)w->dropped)}, 1);
        w->dropped = 0;
    }
    w->n_pending = 0;
    return 0;
}

int history_writer_write(history_writer *w, const metrics *m, pipeline *p,
                         const char *prefix, int64_t keep_ms,
                         int64_t now_wall_ms, bool final)
{
    int64_t minute = now_wall_ms / HISTORY_MINUTE_MS;

    if (!w->open) {
        w->open = true;
        w->minute = minute;
    }
    if (minute != w->minute || final) {
        close_minute(w, m);
        w->minute = minute;
    }
    if (keep_ms <= 0) {
        w->n_pending = 0;
        return 0;
    }
    if (w->n_pending == 0)
        return 0;
    return send_pending(w, p, prefix, keep_ms);
}
