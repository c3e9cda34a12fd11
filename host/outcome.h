/* How a task's run ended: the words the log's "outcome" field and the
 * metrics' outcome label use. Its own header so that the modules that
 * only count outcomes (metrics, the worker's tallies) need not see the
 * broker. */
#ifndef WHARF_OUTCOME_H
#define WHARF_OUTCOME_H

/* The numbers index metrics arrays. */
typedef enum task_outcome {
    OUTCOME_OK = 0,
    OUTCOME_RETRY,
    OUTCOME_DEAD,
    OUTCOME_CACHED,
    OUTCOME_LOCKED,
    OUTCOME_STALE,
    OUTCOME_CANCELLED,   /* wharf cancel: nothing written, not retried */
    OUTCOME_RESCHEDULED, /* back unrun, no attempt spent: its host was
                            stopping, or its lease could not be kept */
    OUTCOME_PAUSED,      /* back unrun, no attempt spent: its type was
                            paused between its claim and its begin */
    OUTCOME_LIMITED,     /* back unrun, no attempt spent, to wait for a
                            slot of its type's concurrency_limit */
    OUTCOME_COUNT
} task_outcome;

/* "ok", "retry", ...; "unknown" for a number out of range. */
const char *task_outcome_name(task_outcome outcome);

#endif
