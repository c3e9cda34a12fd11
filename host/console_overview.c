/* GET /api/overview (docs/console.md): per served type its queue
 * figures, who serves it, its totals, the last minute, the chart series
 * and the wait and run percentiles; the worker slots; the restarts; the
 * live hosts. All of it from what the supervisor holds, the ring and the
 * last presence round: no Redis here. */
#include "console_overview.h"

#include <inttypes.h>
#include <string.h>

#include "clock_ms.h"
#include "console_reply.h"
#include "console_sample.h"
#include "json_out.h"
#include "presence.h"

/* The runs of the window: now (h) less the oldest copy kept (from). */
static void jb_histogram(json_out *b, const console *c, const char *name,
                         const histogram *h, const histogram_copy *from)
{
    histogram_copy now;
    uint64_t count = 0;
    int64_t window_ms = clock_wall_ms() - c->copy_wall[console_oldest_copy(c)];

    console_copy_histogram(&now, h);
    for (size_t k = 0; k < METRICS_BUCKETS; k++) {
        now.buckets[k] -= from->buckets[k];
        count += now.buckets[k];
    }
    now.sum_us -= from->sum_us;
    /* top_ms: the last finite bound; a percentile there means "more". */
    json_out_printf(b,
                    "\"%s\":{\"window_s\":%" PRId64 ",\"count\":%" PRIu64
                    ",\"top_ms\":%.0f",
                    name, (window_ms + 500) / 1000, count,
                    (double)metrics_bucket_bound_us(METRICS_BUCKETS - 2) /
                        1000.0);
    if (count) {
        json_out_printf(b,
                        ",\"avg\":%.3f,\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f",
                        (double)now.sum_us / (double)count / 1000.0,
                        console_percentile_ms(now.buckets, 0.5),
                        console_percentile_ms(now.buckets, 0.9),
                        console_percentile_ms(now.buckets, 0.99));
    }
    json_out_puts(b, "}");
}

/* rates: a type with a rate_limit or a limit_key (by the manifest in
 * effect) gets ,"rate_limit":"50/s","rate_burst":5,"limit_key":"/c"
 * (null for one not set) and "rate_waits": the tasks this host's workers
 * made wait for their rate turn; any other type nothing. */
static void jb_rate(json_out *b, const console *c, const char *type, int ti)
{
    const policy *pol = config_policy(c->v.cfg, type);
    char rate[32];

    if (pol->rate_limit.count == 0 && !pol->limit_key[0])
        return;
    json_out_puts(b, ",\"rate_limit\":");
    if (pol->rate_limit.count) {
        config_format_rate(&pol->rate_limit, rate, sizeof(rate));
        json_out_str(b, rate);
        json_out_printf(b, ",\"rate_burst\":%" PRIu64, pol->rate_burst);
    } else {
        json_out_puts(b, "null,\"rate_burst\":null");
    }
    json_out_puts(b, ",\"limit_key\":");
    if (pol->limit_key[0])
        json_out_str(b, pol->limit_key);
    else
        json_out_puts(b, "null");
    json_out_printf(b, ",\"rate_waits\":%" PRIu64,
                    ti < 0 ? 0 : atomic_load(&c->m->types[ti].rate_waits));
}

static void jb_type(json_out *b, const console *c, const queue_figures *f)
{
    int ti = metrics_type_find(c->m, f->type);
    const char *served = presence_served_json(c->presence, f->type);

    json_out_puts(b, "{\"type\":");
    json_out_str(b, f->type);
    json_out_printf(b,
                    ",\"ready\":%lld,\"running\":%lld,\"delayed\":%lld,"
                    "\"dead\":%lld,\"pressure\":%s,\"paused\":%s,"
                    "\"hosts\":%s",
                    f->ready, f->running, f->delayed, f->dead,
                    f->pressure ? "true" : "false",
                    f->paused ? "true" : "false", served);
    if (f->paused && f->paused_left_ms >= 0)
        json_out_printf(b, ",\"paused_left_ms\":%lld", f->paused_left_ms);
    json_out_printf(b, ",\"slots\":%lld", f->slots);
    jb_rate(b, c, f->type, ti);
    if (ti < 0 || !c->rings[ti] || c->samples == 0) {
        json_out_puts(b, "}");
        return;
    }
    json_out_puts(b, ",\"totals\":{");
    for (int o = 0; o < OUTCOME_COUNT; o++)
        json_out_printf(b, "%s\"%s\":%" PRIu64, o ? "," : "",
                        task_outcome_name((task_outcome)o),
                        atomic_load(&c->m->types[ti].outcomes[o]));
    /* Tasks finished in the last minute (or since start, if sooner). */
    json_out_puts(b, "},\"last_minute\":{");
    {
        size_t span = c->samples > 60 ? 60 : c->samples - 1;
        for (size_t k = 0; k < N_CHARTED; k++)
            json_out_printf(b, "%s\"%s\":%" PRIu64, k ? "," : "",
                            task_outcome_name(console_charted[k]),
                            console_sample_at(c, (size_t)ti, 0, k) -
                                console_sample_at(c, (size_t)ti, span, k));
    }
    json_out_printf(b, "},\"series\":{\"step_s\":%d", CHART_STEP_S);
    for (size_t k = 0; k < N_CHARTED; k++) {
        json_out_printf(b, ",\"%s\":[", task_outcome_name(console_charted[k]));
        for (size_t p = 0; p < CHART_POINTS; p++) {
            size_t newer = (CHART_POINTS - 1 - p) * CHART_STEP_S;
            uint64_t d =
                console_sample_at(c, (size_t)ti, newer, k) -
                console_sample_at(c, (size_t)ti, newer + CHART_STEP_S, k);
            json_out_printf(b, "%s%" PRIu64, p ? "," : "", d);
        }
        json_out_puts(b, "]");
    }
    json_out_puts(b, "},");
    {
        /* the oldest histogram copy kept: the window's start */
        size_t oldest = console_oldest_copy(c);
        jb_histogram(b, c, "wait_ms", &c->m->types[ti].wait,
                     &c->rings[ti]->wait[oldest]);
        json_out_puts(b, ",");
        jb_histogram(b, c, "run_ms", &c->m->types[ti].duration,
                     &c->rings[ti]->run[oldest]);
    }
    json_out_puts(b, "}");
}

static const char *state_name(int state)
{
    switch (state) {
    case SLOT_EMPTY:
        return "starting";
    case SLOT_IDLE:
        return "idle";
    case SLOT_RUNNING:
        return "running";
    case SLOT_STOPPING:
        return "stopping";
    default:
        return "down";
    }
}

static void jb_slots(json_out *b, const console *c)
{
    json_out_puts(b, "\"slots\":[");
    for (size_t i = 0; i < c->v.n_slots; i++) {
        const console_slot *s = &c->v.slots[i];
        const slot_history *h = &c->history[i];
        json_out_printf(b, "%s{\"slot\":%zu,\"worker\":", i ? "," : "", i);
        json_out_str(b, s->consumer ? s->consumer : "");
        json_out_printf(b,
                        ",\"pid\":%ld,\"state\":\"%s\",\"up_ms\":%" PRId64
                        ",\"batch\":%" PRIu32,
                        (long)s->pid, state_name(s->state), s->up_ms,
                        s->batch_n);
        if (s->n_runs > 0) {
            /* The longest-running task first, as before threads, then
             * every one. */
            json_out_puts(b, ",\"type\":");
            json_out_str(b, s->runs[0].type);
            json_out_puts(b, ",\"task\":");
            json_out_str(b, s->runs[0].id);
            json_out_printf(b, ",\"running_ms\":%" PRId64,
                            s->runs[0].running_ms);
        }
        json_out_printf(b, ",\"in_flight\":%zu,\"running\":[", s->n_runs);
        for (size_t r = 0; r < s->n_runs; r++) {
            json_out_puts(b, r ? ",{\"type\":" : "{\"type\":");
            json_out_str(b, s->runs[r].type);
            json_out_puts(b, ",\"task\":");
            json_out_str(b, s->runs[r].id);
            json_out_printf(b, ",\"running_ms\":%" PRId64 "}",
                            s->runs[r].running_ms);
        }
        json_out_puts(b, "]");
        if (s->restart_in_ms)
            json_out_printf(b, ",\"restart_in_ms\":%" PRId64, s->restart_in_ms);
        json_out_printf(b, ",\"restarts\":%u", h->restarts);
        if (h->restarts) {
            json_out_printf(b, ",\"last_restart\":{\"reason\":\"%s\",\"how\":",
                            metrics_restart_name(h->last_why));
            json_out_str(b, h->last_how);
            json_out_printf(b, ",\"at_ms\":%" PRId64 "}", h->last_at_ms);
        }
        json_out_puts(b, "}");
    }
    json_out_puts(b, "]");
}

void console_overview(console *c, http_reply *reply)
{
    const console_view *v = &c->v;
    const char *hosts = presence_hosts_json(c->presence);
    json_out b = {0};

    json_out_puts(&b, "{\"api\":1,\"host\":");
    json_out_str(&b, c->name);
    json_out_printf(
        &b,
        ",\"version\":\"%s\",\"time_ms\":%" PRId64 ",\"started_ms\":%" PRId64
        ",\"redis_up\":%s,\"figures_ok\":%s,\"actions\":%s",
        WHARF_VERSION, clock_wall_ms(), c->started_wall_ms,
        v->redis_up ? "true" : "false", v->figures_ok ? "true" : "false",
        v->cfg->console_actions ? "true" : "false");
    json_out_puts(&b, ",\"types\":[");
    for (size_t i = 0; i < v->n_types; i++) {
        if (i)
            json_out_puts(&b, ",");
        queue_figures f = {.type = v->types[i]};
        /* Zeros until the supervisor's first refresh. */
        if (v->figures[i].type && strcmp(v->figures[i].type, f.type) == 0)
            f = v->figures[i];
        jb_type(&b, c, &f);
    }
    json_out_printf(&b,
                    "],\"workers\":{\"idle\":%u,\"running\":%u,"
                    "\"stopping\":%u,\"down\":%u},",
                    v->workers.idle, v->workers.running, v->workers.stopping,
                    v->workers.down);
    jb_slots(&b, c);
    json_out_puts(&b, ",\"restarts\":{");
    for (int r = 0; r < RESTART_REASON_COUNT; r++)
        json_out_printf(&b, "%s\"%s\":%" PRIu64, r ? "," : "",
                        metrics_restart_name((restart_reason)r),
                        atomic_load(&c->m->restarts[r]));
    json_out_printf(&b, "},\"hosts\":%s}", hosts ? hosts : "[]");
    console_reply_json(reply, 200, &b);
}
