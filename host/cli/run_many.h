/* wharf run --threads N --repeat M: one plugin's process_business on N
 * threads of this process, each running M calls one after another, each
 * call with its own context and its own task, as a worker's threads run
 * a thread-safe plugin. What came back is counted, not kept. */
#ifndef WHARF_RUN_MANY_H
#define WHARF_RUN_MANY_H

#include <stddef.h>
#include <stdint.h>

#include <wharf/plugin.h>

#include "context.h"
#include "loader.h"

/* How long past the deadline a plugin that ignores it may run before
 * wharf run gives up on it (a worker is SIGKILLed then). */
#define RUN_GRACE_MS 1000
/* A task id and its NUL, with room for the ".k" a call's id adds. */
#define RUN_ID_SIZE 212

/* The most threads wharf run starts. */
#define RUN_THREADS_MAX 1024
/* The most calls of each thread. */
#define RUN_REPEAT_MAX 1000000u

typedef struct run_many_tally {
    uint64_t ok, retry, fail;
    uint64_t timeouts;    /* of the retries: past the type's timeout */
    char first_error[CONTEXT_ERROR_LEN]; /* the first error of a call that
                                          did not return ok, "" if none */
    char first_error_id[RUN_ID_SIZE]; /* the task id of that call */
    int64_t slowest_ms;   /* the longest call */
    int64_t elapsed_ms;   /* from the first call's start to the last end */
} run_many_tally;

/* What the host makes of a call of `timeout_ms` that returned `status`
 * after `elapsed_ms` in context c: past the timeout (or cancelled by its
 * deadline) it is a retry whatever it returned, its result dropped, and
 * a status that is none is a retry; why is in c->error. Only a retry the
 * plugin returned keeps its wharf_retry_in. */
wharf_status run_outcome(context *c, wharf_status status, int64_t elapsed_ms,
                         int64_t timeout_ms);

/* Runs the route's plugin on `threads` threads, `repeat` calls each. Call
 * k (from 1) gets `task` with its id as "ID.k", so no two calls share a
 * task; every call gets the type's timeout as its deadline. A call still
 * running RUN_GRACE_MS past its deadline ends the process, as a worker's
 * SIGKILL would: a line naming it goes to stderr and the exit code is
 * EX_TEMPFAIL. 0 with *tally filled, or -1 with why in err when a
 * thread could not be started (the calls already started are waited
 * for). */
int run_many(const route *r, const wharf_task *task, unsigned threads,
             unsigned repeat, run_many_tally *tally, char *err,
             size_t err_len);

#endif /* WHARF_RUN_MANY_H */
