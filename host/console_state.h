/* The console's state, shared by its own files only (console.h says how
 * they are layered): the struct behind the console handle, and the
 * sizes of its ring of samples. Nothing here calls anything: every file
 * of the console may include it. Host presence is presence.c's, the JSON
 * writer json_out.c's. */
#ifndef WHARF_CONSOLE_STATE_H
#define WHARF_CONSOLE_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "console_view.h"
#include "metrics.h"
#include "nodes.h"
#include "pipeline.h"
#include "presence.h"

/* Per-second samples kept for the rate charts. */
#define CONSOLE_SAMPLES 301

/* Charts: CHART_POINTS steps of CHART_STEP_S seconds. */
#define CHART_POINTS 60
#define CHART_STEP_S 5

/* The outcomes charted (console_charted, console_sample.h). */
#define N_CHARTED 3

/* A histogram's buckets and sum at one moment (cumulative). */
typedef struct histogram_copy {
    uint64_t buckets[METRICS_BUCKETS];
    uint64_t sum_us;
} histogram_copy;

/* Histogram copies are kept every CHART_STEP_S seconds, this many: the
 * percentiles cover the last CHART_POINTS steps. */
#define HISTOGRAM_COPIES (CHART_POINTS + 1)

typedef struct type_ring {
    uint64_t counts[CONSOLE_SAMPLES][N_CHARTED]; /* cumulative */
    histogram_copy wait[HISTOGRAM_COPIES], run[HISTOGRAM_COPIES];
} type_ring;

typedef struct slot_history {
    unsigned restarts;
    restart_reason last_why;
    char last_how[64];
    int64_t last_at_ms; /* wall clock; 0 = never */
} slot_history;

struct console {
    char name[300];
    char redis_url[600];
    metrics *m;
    console_view_fn view_fn;
    void *view_arg;
    console_view v;
    nodes nodes;         /* its own connections (nodes.h); up or not */
    pipeline pipe;       /* every command it sends */
    bool nodes_ready;    /* nodes_init done */
    int64_t retry_at_ms; /* monotonic: no connect attempt before */
    int64_t spent_us;    /* Redis waits in this pass (console_redis.h) */
    int64_t last_sample_ms;
    int64_t started_wall_ms;
    /* the ring: sample i was taken at sample_wall[i] */
    type_ring *rings[METRICS_MAX_TYPES];
    int64_t sample_wall[CONSOLE_SAMPLES];
    size_t head; /* the latest sample */
    size_t samples;
    uint64_t ticks; /* samples ever taken */
    /* histogram copies: the latest at copy_head, taken at copy_wall[] */
    int64_t copy_wall[HISTOGRAM_COPIES];
    size_t copy_head, copies;
    slot_history *history;
    presence *presence; /* who else is there, from the last tick */
    bool said_down;
};

/* The key prefix of the manifest in effect. */
static inline const char *console_prefix(const console *c)
{
    return c->v.cfg->prefix;
}

#endif /* WHARF_CONSOLE_STATE_H */
