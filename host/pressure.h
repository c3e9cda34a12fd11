/* Backpressure and queue figures: per served type, in one script call,
 * read ready, running, delayed and dead in O(1), publish the backlog
 * (ready + delayed) and set or clear the pressure flag with hysteresis
 * between low_watermark and high_watermark. The flag carries a short TTL
 * that every live host refreshes, so it clears itself if all hosts die. */
#ifndef WHARF_PRESSURE_H
#define WHARF_PRESSURE_H

#include "broker.h"
#include "metrics.h"

/* How long pressure and backlog live unless refreshed. */
#define PRESSURE_TTL_MS 5000

/* Refreshes every queue of b in one pipelined round trip; out gets
 * b->n_queues figures (their type names point into b). 0, or -1 on a
 * connection error (out is then untouched). */
int pressure_refresh(broker *b, queue_figures *out);

#endif /* WHARF_PRESSURE_H */
