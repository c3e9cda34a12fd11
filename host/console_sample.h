/* The console's ring of per-second samples of the shared counters and
 * its copies of the histograms (console_state.h holds them), and what is
 * read back from them. */
#ifndef WHARF_CONSOLE_SAMPLE_H
#define WHARF_CONSOLE_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "console_state.h"
#include "metrics.h"
#include "outcome.h"

/* The outcomes charted, in the order of the API. */
extern const task_outcome console_charted[N_CHARTED];

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

#endif /* WHARF_CONSOLE_SAMPLE_H */
