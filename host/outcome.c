/* The names of task outcomes (outcome.h). */
#include "outcome.h"

static const char *const outcome_names[OUTCOME_COUNT] = {
    "ok",    "retry",     "dead",        "cached", "locked",
    "stale", "cancelled", "rescheduled", "paused", "limited"};

const char *task_outcome_name(task_outcome outcome)
{
    return outcome < OUTCOME_COUNT ? outcome_names[outcome] : "unknown";
}
