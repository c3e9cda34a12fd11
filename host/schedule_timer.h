/* The schedule timer (docs/manifest.md, [schedule.NAME]): a thread of the
 * supervisor with Redis connections of its own, so neither the console,
 * the claims nor the supervisor's loop can hold a tick back. At each
 * tick of each schedule it enqueues the tick's task (schedule_tick.h)
 * through the client library with the tick's own id, so every host may
 * fire it and the first one wins, then records the tick as the
 * schedule's last (schedule_store.h). After a downtime, the ticks missed
 * are fired per catch_up. */
#ifndef WHARF_SCHEDULE_TIMER_H
#define WHARF_SCHEDULE_TIMER_H

#include "config.h"
#include "metrics.h"

/* A tick is missed, rather than late, once it is this far behind the
 * clock: catch_up decides about it. Under it a tick fires whatever
 * catch_up says (a Redis that was away for seconds loses no tick). */
#define SCHEDULE_MISSED_AFTER_S 60

typedef struct schedule_timer schedule_timer;

/* Starts the timer for cfg's schedules (copied: cfg may go after) on
 * Redis at url (the embedded one's, or cfg's), with its figures in m.
 * NULL when cfg has no schedule, or when the thread cannot start (said
 * in the log: the host serves on without its schedules). */
schedule_timer *schedule_timer_start(const config *cfg, const char *url,
                                     metrics *m);

/* Stops the thread and frees the timer. Accepts NULL. */
void schedule_timer_stop(schedule_timer *t);

#endif /* WHARF_SCHEDULE_TIMER_H */
