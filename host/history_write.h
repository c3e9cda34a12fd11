/* The host's side of the fleet's history (history.h): once a minute the
 * supervisor closes the minute just ended, takes from the shared
 * counters what this process counted in it per type, and writes each
 * type's figures into that minute's hash, one HSET and one EXPIREAT per
 * type that did anything (an idle type writes nothing). At a stop it
 * closes the minute under way the same way, so a clean stop loses
 * nothing; a crash loses the minute under way (at most one minute's
 * figures of that host). A write that fails is kept and sent again with
 * the same values: a write that landed twice counts once. */
#ifndef WHARF_HISTORY_WRITE_H
#define WHARF_HISTORY_WRITE_H

#include <stdbool.h>
#include <stdint.h>

#include "metrics.h"
#include "pipeline.h"

typedef struct history_writer history_writer;

/* Closed minutes kept for a Redis that is away, per type: past this the
 * oldest are dropped (and counted in the log). */
#define HISTORY_PENDING_MINUTES 15

/* A writer for this process, whose field is "<name>#<run>" (name the
 * host's "<hostname>:<instance>", run what tells this process from the
 * one before it). Out of memory aborts (xmalloc.h). */
history_writer *history_writer_create(const char *name, const char *run);

/* Frees. Accepts NULL. */
void history_writer_destroy(history_writer *w);

/* Whether a call of history_writer_write has work at now_wall_ms: a
 * minute has ended, or something waits to be sent again. */
bool history_writer_due(const history_writer *w, int64_t now_wall_ms);

/* Closes the minute if it has ended (or, final, the minute under way)
 * and sends what waits, through p (reset first, reset after), each key
 * kept for keep_ms after its minute. keep_ms 0 ([metrics] history = 0)
 * writes nothing and forgets what waits. 0, or -1 when the pipeline
 * failed (what was not answered is kept for the next call). */
int history_writer_write(history_writer *w, const metrics *m, pipeline *p,
                         const char *prefix, int64_t keep_ms,
                         int64_t now_wall_ms, bool final);

#endif /* WHARF_HISTORY_WRITE_H */
