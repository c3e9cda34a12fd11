/* What the supervisor shows the console: the console's handle, one
 * worker slot, and the view it fills on demand (console.h's
 * console_view_fn). Apart from console.h so that the console's own files
 * can read the view without the console's public API above them. */
#ifndef WHARF_CONSOLE_VIEW_H
#define WHARF_CONSOLE_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "metrics.h"
#include "slots.h"

typedef struct console console;

/* One worker slot as the supervisor sees it. */
/* A task running in a worker. */
typedef struct console_run {
    char type[SLOT_TYPE_MAX];
    char id[SLOT_ID_MAX];
    int64_t running_ms; /* how long it has run */
} console_run;

typedef struct console_slot {
    const char *consumer;
    pid_t pid;  /* 0 when not running */
    int state;  /* slot_state, or -1 when down */
    console_run *runs; /* the tasks running, longest first: n_runs of
                          them, in runs_room the view grows as needed */
    size_t n_runs, runs_room;
    int64_t up_ms; /* how long this process has lived */
    uint32_t batch_n; /* entries it holds (begun or waiting) */
    int64_t restart_in_ms; /* waiting to be started again, or 0 */
} console_slot;

/* What the supervisor knows right now, filled on demand by its
 * console_view_fn into memory the console owns. */
typedef struct console_view {
    const config *cfg;        /* the manifest in effect */
    const char *const *types; /* served, n_types of them */
    size_t n_types;
    const queue_figures *figures; /* one per type, in the same order, from
                                     the last refresh (type NULL before
                                     the first) */
    bool figures_ok;              /* the last refresh worked */
    bool redis_up;                /* the supervisor's own connection */
    worker_figures workers;
    console_slot *slots; /* n_slots (fixed at console_create) */
    size_t n_slots;
} console_view;

typedef void (*console_view_fn)(void *arg, console_view *view);

#endif /* WHARF_CONSOLE_VIEW_H */
