/* Shared by the console's own files only: its state, and what more than
 * one of them uses. console.c is the public API and the routing of
 * requests; console_redis.c its connection and the pass's Redis budget;
 * console_sample.c the ring of per-second samples; console_overview.c
 * GET /api/overview; console_tasks.c GET /api/dead and /api/task;
 * console_actions.c the POST actions. Host presence is presence.c's,
 * the JSON writer json_out.c's. */
#ifndef WHARF_CONSOLE_INTERNAL_H
#define WHARF_CONSOLE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "command.h"
#include "console.h"
#include "http.h"
#include "json_out.h"
#include "metrics.h"
#include "nodes.h"
#include "pipeline.h"
#include "presence.h"
#include "script.h"

/* Charts: CHART_POINTS steps of CHART_STEP_S seconds. */
#define CHART_POINTS 60
#define CHART_STEP_S 5

/* The outcomes charted (console_charted, in the order of the API). */
#define N_CHARTED 3
extern const task_outcome console_charted[N_CHARTED];

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
    int64_t spent_us;    /* Redis waits in this pass (console.h) */
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

/* ---- console.c: common ground ---- */

/* The key prefix of the manifest in effect. */
const char *console_prefix(const console *c);

/* Answers b (a newline is added; reply takes b's text). */
void console_reply_json(http_reply *reply, unsigned status, json_out *b);

/* Answers {"error": why}. */
void console_reply_error(http_reply *reply, unsigned status, const char *fmt,
                         ...) __attribute__((format(printf, 3, 4)));

/* A number query argument in lo..hi, or def when absent; -1 when bad. */
long console_query_number(const char *name, long def, long lo, long hi);

/* A type argument: type itself when valid, NULL when absent and not
 * required, or "" after answering 400. */
const char *console_type_arg(http_reply *reply, const char *type,
                             bool required);

/* The type argument of the query (as console_type_arg). */
const char *console_query_type(http_reply *reply, bool required);

/* ---- console_redis.c: the connection and the pass's budget ---- */

/* The console's pipeline, reset, with its nodes found if due and if the
 * budget allows: NULL while Redis is away. */
pipeline *console_connection(console *c);

/* Runs the pipeline within what is left of the budget: 0, or -1 after
 * dropping the connections. */
int console_run_pipe(console *c);

/* Runs the pipeline and takes its n replies into r (NULL-filled on
 * failure): 0, or -1 after dropping the connections. */
int console_read_replies(console *c, redisReply **r, size_t n);

void console_free_replies(redisReply **r, size_t n);

/* Runs the call of s built in cmd (lua_scripts.h) with EVALSHA within
 * the budget: the reply (caller frees), or NULL after dropping the
 * connections. */
redisReply *console_run_script(console *c, const script *s, command *cmd);

/* Answers 503 with Retry-After: retry_s. */
void console_unavailable(http_reply *reply, const char *retry_s,
                         const char *why);

/* The connection for one request, or NULL after answering 503. */
pipeline *console_redis_for(console *c, http_reply *reply);

/* ---- console_sample.c: the ring ---- */

/* Takes one sample of every type's counters (and, every CHART_STEP_S
 * samples, a copy of its histograms). */
void console_sample(console *c);

/* Counter k of type ti, `ago` samples before the latest (clamped to the
 * oldest kept). */
uint64_t console_sample_at(const console *c, size_t ti, size_t ago, size_t k);

/* Index of the oldest histogram copy kept: the window's start. */
size_t console_oldest_copy(const console *c);

void console_copy_histogram(histogram_copy *out, const histogram *h);

/* The q-quantile (0..1) of bucket counts in milliseconds, interpolated
 * within its bucket (as Prometheus' histogram_quantile); -1 when empty. */
double console_percentile_ms(const uint64_t *counts, double q);

/* ---- the answers ---- */

void console_overview(console *c, http_reply *reply);  /* console_overview.c */
void console_dead_page(console *c, http_reply *reply); /* console_tasks.c */
void console_task_detail(console *c, http_reply *reply); /* console_tasks.c */
/* what: "replay", "purge" or "cancel" (console_actions.c) */
void console_action(console *c, const char *what, http_reply *reply);

#endif /* WHARF_CONSOLE_INTERNAL_H */
