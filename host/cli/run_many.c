/* wharf run --threads N --repeat M (run_many.h): N threads, each running
 * its M calls, and this thread watching their deadlines. */
#include "run_many.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "clock_ms.h"
#include "worker.h"

/* One thread and what it did. */
typedef struct run_thread {
    pthread_t id;
    const route *r;
    const wharf_task *task;
    uint64_t first_call;      /* the number of its first call */
    unsigned repeat;
    _Atomic int64_t started;  /* when the call under way began, 0 between */
    _Atomic uint64_t call;    /* the number of the call under way */
    _Atomic bool done;
    run_many_tally tally;     /* its own calls; read once joined */
} run_thread;

wharf_status run_outcome(context *c, wharf_status status, int64_t elapsed_ms,
                         int64_t timeout_ms)
{
    if (elapsed_ms > timeout_ms || context_cancelled(c)) {
        snprintf(c->error, sizeof(c->error), "timeout after %" PRId64 " ms",
                 timeout_ms);
        c->has_result = false;
        c->retry_in_ms = -1; /* the backoff decides, as in a worker */
        return WHARF_RETRY;
    }
    if (status != WHARF_OK && status != WHARF_RETRY && status != WHARF_FAIL) {
        snprintf(c->error, sizeof(c->error),
                 "plugin returned %d, not a wharf_status", (int)status);
        c->retry_in_ms = -1;
        return WHARF_RETRY;
    }
    return status;
}

/* Counts one call's outcome in t; the first error is kept with its id. */
static void run_count(run_many_tally *t, const context *c, wharf_status status,
                      const char *id, int64_t elapsed_ms, int64_t timeout_ms)
{
    if (status == WHARF_OK)
        t->ok++;
    else if (status == WHARF_FAIL)
        t->fail++;
    else
        t->retry++;
    if (status == WHARF_RETRY && elapsed_ms > timeout_ms)
        t->timeouts++;
    if (status != WHARF_OK && t->first_error[0] == '\0') {
        snprintf(t->first_error, sizeof(t->first_error), "%s",
                 c->error[0] ? c->error : "(no reason given)");
        snprintf(t->first_error_id, sizeof(t->first_error_id), "%s", id);
    }
    if (elapsed_ms > t->slowest_ms)
        t->slowest_ms = elapsed_ms;
}

static void *run_thread_main(void *arg)
{
    run_thread *th = arg;
    int64_t timeout_ms = th->r->policy->timeout_ms;
    char id[RUN_ID_SIZE];
    wharf_task task = *th->task;
    context c;

    context_init(&c, th->r->plugin, WORKER_MAX_RESULT);
    c.phase = WHARF_PHASE_RUN;
    task.id = id;
    for (unsigned i = 0; i < th->repeat; i++) {
        uint64_t call = th->first_call + i;
        int64_t started, elapsed;
        wharf_status status;

        snprintf(id, sizeof(id), "%s.%" PRIu64, th->task->id, call);
        context_begin(&c, &task);
        started = clock_ms();
        atomic_store(&th->call, call);
        atomic_store(&th->started, started);
        context_set_deadline(&c, started + timeout_ms, NULL, 0);
        status = th->r->plugin->desc->process_business(&c.base, &task);
        elapsed = clock_ms() - started;
        atomic_store(&th->started, 0);
        context_end(&c);
        status = run_outcome(&c, status, elapsed, timeout_ms);
        run_count(&th->tally, &c, status, id, elapsed, timeout_ms);
    }
    context_destroy(&c);
    atomic_store(&th->done, true);
    return NULL;
}

/* Ends the process if a call of th has run a grace past its deadline, as
 * a worker is SIGKILLed then: nothing else would stop it. */
static void run_watch(const run_thread *th, const char *base_id,
                      int64_t timeout_ms, int64_t now)
{
    int64_t started = atomic_load(&th->started);
    uint64_t call = atomic_load(&th->call);

    if (started == 0 || now - started <= timeout_ms + RUN_GRACE_MS ||
        atomic_load(&th->started) != started)
        return;
    fprintf(stderr,
            "wharf: run: task %s.%" PRIu64 ": timeout after %" PRId64
            " ms (killed after a %d ms grace); the host would retry it\n",
            base_id, call, timeout_ms, RUN_GRACE_MS);
    _exit(EX_TEMPFAIL);
}

/* Adds what thread th counted to t. */
static void run_merge(run_many_tally *t, const run_many_tally *th)
{
    t->ok += th->ok;
    t->retry += th->retry;
    t->fail += th->fail;
    t->timeouts += th->timeouts;
    if (t->first_error[0] == '\0' && th->first_error[0] != '\0') {
        memcpy(t->first_error, th->first_error, sizeof(t->first_error));
        memcpy(t->first_error_id, th->first_error_id,
               sizeof(t->first_error_id));
    }
    if (th->slowest_ms > t->slowest_ms)
        t->slowest_ms = th->slowest_ms;
}

int run_many(const route *r, const wharf_task *task, unsigned threads,
             unsigned repeat, run_many_tally *tally, char *err,
             size_t err_len)
{
    int64_t timeout_ms = r->policy->timeout_ms, started = clock_ms();
    struct timespec tick = {0, 10 * 1000000L};
    run_thread *th = calloc(threads, sizeof(*th));
    unsigned n = 0, done = 0;
    int rc = 0;

    memset(tally, 0, sizeof(*tally));
    if (th == NULL) {
        snprintf(err, err_len, "out of memory for %u threads", threads);
        return -1;
    }
    for (; n < threads; n++) {
        th[n].r = r;
        th[n].task = task;
        th[n].first_call = (uint64_t)n * repeat + 1;
        th[n].repeat = repeat;
        if ((rc = pthread_create(&th[n].id, NULL, run_thread_main, &th[n])) !=
            0) {
            snprintf(err, err_len, "cannot start thread %u of %u: %s", n + 1,
                     threads, strerror(rc));
            rc = -1;
            break;
        }
    }
    while (done < n) {
        int64_t now;

        nanosleep(&tick, NULL);
        now = clock_ms();
        done = 0;
        for (unsigned i = 0; i < n; i++) {
            run_watch(&th[i], task->id, timeout_ms, now);
            done += atomic_load(&th[i].done);
        }
    }
    for (unsigned i = 0; i < n; i++) {
        pthread_join(th[i].id, NULL);
        run_merge(tally, &th[i].tally);
    }
    tally->elapsed_ms = clock_ms() - started;
    free(th);
    return rc;
}
