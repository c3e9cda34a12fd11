/* The console's ring of per-second samples of the shared counters (for
 * the rate charts and the last minute's figures) and its copies of the
 * histograms every CHART_STEP_S seconds (for the percentiles of the
 * window), and what is read back from them. It calls nothing of the
 * console's. */
#include "console_sample.h"

#include <string.h>

#include "clock_ms.h"
#include "xmalloc.h"

const task_outcome console_charted[N_CHARTED] = {OUTCOME_OK, OUTCOME_RETRY,
                                                 OUTCOME_DEAD};

void console_copy_histogram(histogram_copy *out, const histogram *h)
{
    for (size_t b = 0; b < METRICS_BUCKETS; b++)
        out->buckets[b] = atomic_load(&h->buckets[b]);
    out->sum_us = atomic_load(&h->sum_us);
}

void console_sample(console *c)
{
    uint32_t n = atomic_load(&c->m->n_types);
    size_t at = c->samples == 0 ? 0 : (c->head + 1) % CONSOLE_SAMPLES;
    bool copy = c->ticks++ % CHART_STEP_S == 0;
    size_t copy_at = c->copies == 0 ? 0 : (c->copy_head + 1) % HISTOGRAM_COPIES;

    for (uint32_t ti = 0; ti < n && ti < METRICS_MAX_TYPES; ti++) {
        type_ring *ring = c->rings[ti];
        uint64_t now[N_CHARTED];
        for (size_t k = 0; k < N_CHARTED; k++)
            now[k] = atomic_load(&c->m->types[ti].outcomes[console_charted[k]]);
        if (!ring) {
            /* New type: its past is flat, not a jump from zero. */
            ring = c->rings[ti] = xcalloc(1, sizeof(*ring));
            for (size_t i = 0; i < CONSOLE_SAMPLES; i++)
                memcpy(ring->counts[i], now, sizeof(now));
            for (size_t i = 0; i < HISTOGRAM_COPIES; i++) {
                console_copy_histogram(&ring->wait[i], &c->m->types[ti].wait);
                console_copy_histogram(&ring->run[i],
                                       &c->m->types[ti].duration);
            }
        }
        memcpy(ring->counts[at], now, sizeof(now));
        if (copy) {
            console_copy_histogram(&ring->wait[copy_at], &c->m->types[ti].wait);
            console_copy_histogram(&ring->run[copy_at],
                                   &c->m->types[ti].duration);
        }
    }
    if (copy) {
        c->copy_wall[copy_at] = clock_wall_ms();
        c->copy_head = copy_at;
        if (c->copies < HISTOGRAM_COPIES)
            c->copies++;
    }
    c->sample_wall[at] = clock_wall_ms();
    c->head = at;
    if (c->samples < CONSOLE_SAMPLES)
        c->samples++;
}

uint64_t console_sample_at(const console *c, size_t ti, size_t ago, size_t k)
{
    if (ago >= c->samples)
        ago = c->samples - 1;
    return c->rings[ti]
        ->counts[(c->head + CONSOLE_SAMPLES - ago) % CONSOLE_SAMPLES][k];
}

size_t console_oldest_copy(const console *c)
{
    return (c->copy_head + HISTOGRAM_COPIES - (c->copies - 1)) %
           HISTOGRAM_COPIES;
}

double console_percentile_ms(const uint64_t *counts, double q)
{
    uint64_t total = 0, seen = 0;
    double want;

    for (size_t b = 0; b < METRICS_BUCKETS; b++)
        total += counts[b];
    if (total == 0)
        return -1;
    want = q * (double)total;
    for (size_t b = 0; b < METRICS_BUCKETS; b++) {
        double lo = b ? (double)metrics_bucket_bound_us(b - 1) : 0;
        double hi = (double)metrics_bucket_bound_us(b);
        if (counts[b] == 0 || (double)(seen + counts[b]) < want) {
            seen += counts[b];
            continue;
        }
        if (hi < 0) /* +Inf: the lower bound is all we know */
            return lo / 1000.0;
        return (lo + (hi - lo) * ((want - (double)seen) / (double)counts[b])) /
               1000.0;
    }
    return -1;
}
