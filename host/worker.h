/* The worker loop: claim a batch, begin it, run each task's plugin, decide
 * its fate (result, retry with backoff, dead), finish the batch. One worker
 * is one consumer; it runs until asked to stop. */
#ifndef WHARF_WORKER_H
#define WHARF_WORKER_H

#include <signal.h>
#include <stdint.h>

#include "outcome.h"
#include "config.h"
#include "loader.h"
#include "metrics.h"
#include "slots.h"

/* The largest result a plugin may set. Redis strings hold 512 MB; a result
 * this large is almost surely a bug, and it must fit in memory twice. */
#define WORKER_MAX_RESULT ((size_t)64 << 20)

typedef struct worker_options {
    const char *consumer; /* <hostname>:<instance>:<slot> */
    int block_ms;         /* longest XREADGROUP BLOCK (also the promote tick) */
    int maintenance;      /* 1: this worker also promotes and trims */
    slot *status;         /* where it tells the supervisor what it does
                             and reads its stop and cancel requests;
                             NULL when there is no supervisor */
    metrics *metrics;     /* shared counters; NULL for none */
} worker_options;

typedef struct worker_counts {
    uint64_t outcomes[OUTCOME_COUNT];
    uint64_t batches;
    uint64_t round_trips;
} worker_counts;

/* Serves the routes of ld (initialized) until *stop becomes non-zero, the
 * supervisor sets the slot's stop, or a SIGTERM / SIGINT is pending (a
 * worker keeps them blocked: see child_block_stops); the batch in hand is
 * finished first, and a finish Redis did not take yet is sent until
 * shutdown_timeout is nearly over. Redis outages are waited out with
 * capped backoff. Returns 0 on a requested stop, 78 (EX_CONFIG) when Redis
 * refuses what retrying cannot fix (an evicting maxmemory-policy), 70 on an
 * internal error. counts, if not NULL, receives the totals. */
int worker_run(const config *cfg, loader *ld, const worker_options *opts,
               volatile sig_atomic_t *stop, worker_counts *counts);

/* "<hostname>:<instance>:<slot>" into buf. */
void worker_consumer_name(char *buf, size_t len, const char *instance,
                          unsigned slot_index);

#endif /* WHARF_WORKER_H */
