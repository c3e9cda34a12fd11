/* One batch of a worker (worker_internal.h): its begin, each task's
 * plugin call under its deadline, the fate of each (result, retry with
 * backoff, dead, cancelled), a return too large for the slot finished at
 * once, and the counting and logging of what finished. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "backoff.h"
#include "clock_ms.h"
#include "log.h"
#include "worker_internal.h"
#include "workflow.h"

/* Microseconds from enqueued_at (wall clock, ms) to now; 0 for a time in
 * the future, and never an overflow whatever the entry says. */
static int64_t wait_since(int64_t enqueued_at_ms)
{
    int64_t now = clock_wall_ms();

    if (enqueued_at_ms <= 0 || enqueued_at_ms >= now)
        return 0;
    if (now - enqueued_at_ms > INT64_MAX / 1000)
        return INT64_MAX;
    return (now - enqueued_at_ms) * 1000;
}

/* Runs the plugin of j's type (job index i of the batch) and decides how
 * j finishes. The run owns its deadline: whatever the plugin returns after
 * it, or after the supervisor asked it to end, is thrown away and the
 * attempt fails with "timeout after N ms", the same outcome as when the
 * worker is killed for it. A run the supervisor asked to end because it
 * was cancelled (wharf cancel) ends as cancelled instead. */
void worker_run_job(worker *w, uint32_t i, uint32_t run)
{
    broker_job *j = &w->jobs[i];
    context *ctx = &w->ctxs[i];
    const slot *sl = w->opts->status;
    const route *r = loader_route(w->ld, j->queue->type);
    int64_t timeout_ms = j->e.timeout_ms; /* the task's or the type's */
    int64_t started, ended;
    wharf_status status;

    if (!r) { /* cannot happen: we only read the streams we route */
        j->finish = FINISH_NONE;
        return;
    }
    ctx->plugin = r->plugin;
    ctx->state = r->plugin->state;
    context_begin(ctx, &j->e.task);
    /* A child of a workflow: its parents' results, one HGETALL, read
     * now by a worker without threads (its connection is idle while it
     * runs), else by the main thread after the begin. */
    if (j->e.parents) {
        redisReply *results = w->parents_read[i];

        w->parents_read[i] = NULL;
        if (!w->threaded)
            results = workflow_parent_results(&w->b, j->queue->type,
                                              j->e.task.id);
        context_set_parents(ctx, j->e.parents, results);
    }
    started = clock_ms();
    context_set_deadline(ctx, started + timeout_ms,
                         sl ? &slot_asks_const(sl)[i] : NULL, run);
    status = r->plugin->desc->process_business(&ctx->base, &j->e.task);
    ended = clock_ms();
    if (sl && slot_run_cancelled(sl, i, run)) {
        /* wharf cancel: whatever it returned is dropped, nothing retried
         * (the finish script writes nothing for a cancelled entry). */
        context_end(ctx);
        j->finish = FINISH_CANCEL;
        j->reason = "cancelled";
        return;
    }
    if (sl && slot_run_lease_lost(sl, i, run)) {
        /* The lease keeper could not keep its lock: another host may run
         * it now, so what it returned is not kept (if the lock is in
         * fact gone, the finish is stale and writes nothing). */
        context_end(ctx);
        backoff_fail(j, "lease lost: its lock could not be renewed in time");
        return;
    }
    if (ended - started > timeout_ms || context_cancelled(ctx)) {
        context_end(ctx);
        snprintf(ctx->error, sizeof(ctx->error), "timeout after %" PRId64 " ms",
                 timeout_ms);
        backoff_fail(j, ctx->error);
        return;
    }
    context_end(ctx);
    switch (status) {
    case WHARF_OK:
        j->finish = FINISH_OK;
        j->result = ctx->has_result ? ctx->result : NULL;
        j->result_len = ctx->has_result ? ctx->result_len : 0;
        break;
    case WHARF_FAIL:
        j->finish = FINISH_DEAD;
        j->next_attempt = j->e.task.attempt;
        j->reason = ctx->error[0] ? ctx->error : "plugin returned WHARF_FAIL";
        break;
    case WHARF_RETRY:
        backoff_fail(j, ctx->error[0] ? ctx->error
                                      : "plugin returned WHARF_RETRY");
        if (ctx->retry_in_ms >= 0 && j->finish == FINISH_RETRY)
            j->delay_ms = backoff_retry_in(j->queue->pol, ctx->retry_in_ms);
        break;
    default:
        snprintf(ctx->error, sizeof(ctx->error),
                 "plugin returned %d, not a wharf_status", (int)status);
        backoff_fail(j, ctx->error);
        break;
    }
}

/* The trace id (second part of a traceparent) for logs. */
static void trace_id(const char *traceparent, char *buf, size_t len)
{
    if (strlen(traceparent) == 55)
        snprintf(buf, len, "%.32s", traceparent + 3);
    else
        snprintf(buf, len, "%s", traceparent);
}

static void log_started(const worker *w, const broker_job *j)
{
    char trace[64];

    if (!log_enabled(WHARF_LOG_INFO))
        return;
    trace_id(j->e.task.trace, trace, sizeof(trace));
    log_fields(WHARF_LOG_INFO, "task started",
               (log_field[]){LOG_STR("task", j->e.task.id),
                             LOG_STR("type", j->queue->type),
                             LOG_INT("attempt", j->e.task.attempt),
                             LOG_STR("trace_id", trace),
                             LOG_STR("worker", w->opts->consumer)},
               5);
}

static void log_job(const worker *w, const broker_job *j, int64_t duration)
{
    char trace[64];
    int level = WHARF_LOG_INFO;
    log_field f[11];
    size_t n = 0;

    if (j->outcome == OUTCOME_DEAD || j->outcome == OUTCOME_STALE)
        level = WHARF_LOG_WARN;
    if (!log_enabled(level))
        return;
    trace_id(j->e.task.trace, trace, sizeof(trace));
    f[n++] = LOG_STR("task", j->e.task.id);
    f[n++] = LOG_STR("type", j->queue->type);
    f[n++] = LOG_INT("attempt", j->e.task.attempt);
    f[n++] = LOG_STR("outcome", task_outcome_name(j->outcome));
    f[n++] = LOG_STR("lock", j->begin == BEGIN_RUN      ? j->token
                             : j->begin == BEGIN_LOCKED ? "held"
                                                        : "none");
    f[n++] = LOG_STR("cache", j->begin == BEGIN_CACHED ? "hit" : "miss");
    f[n++] = LOG_INT("duration_ms", duration);
    f[n++] = LOG_STR("trace_id", trace);
    f[n++] = LOG_STR("worker", w->opts->consumer);
    if (j->reason && j->outcome != OUTCOME_OK)
        f[n++] = LOG_STR("error", j->reason);
    log_fields(level, "task finished", f, n);
}

/* The metrics index of a job's type. */
static int metric_of(const worker *w, const broker_job *j)
{
    return w->metric_index[j->queue - w->b.queues];
}

/* Counts and logs finished jobs[0..n). */
void worker_report_some(worker *w, const broker_job *jobs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const broker_job *j = &jobs[i];
        if (j->finish == FINISH_NONE || j->e.deleted)
            continue;
        w->counts.outcomes[j->outcome]++;
        metrics_outcome(w->opts->metrics, metric_of(w, j), j->outcome);
        /* rates: a wait for a rate turn, counted apart from a slot's. */
        if (j->outcome == OUTCOME_LIMITED && j->wait_ms > 0)
            metrics_rate_wait(w->opts->metrics, metric_of(w, j));
        /* A task's own expiry, counted apart from the other deaths. */
        if (j->expired && j->outcome == OUTCOME_DEAD)
            metrics_expired(w->opts->metrics, metric_of(w, j));
        log_job(w, j, j->duration_ms);
    }
}

/* Counts and logs finished jobs [from, to) of the batch. */
static void report_jobs(worker *w, size_t from, size_t to)
{
    worker_report_some(w, w->jobs + from, to - from);
}

/* Counts and logs a finished batch. */
void worker_report(worker *w, size_t n)
{
    worker_slot_publish(w, 0);
    report_jobs(w, 0, n);
    w->counts.batches++;
}

/* Runs job i, which its begin let run: marks it running in the slot,
 * calls its plugin, times and counts the call, and keeps its return in
 * the slot. False when that return does not fit the slot (the caller
 * finishes it at once). With several threads, each entry runs on the
 * thread that took it, and the slot is written under the worker's lock. */
bool worker_run_entry(worker *w, uint32_t i)
{
    broker_job *j = &w->jobs[i];
    int64_t wait_us, started, took;
    uint32_t run;
    bool fits;

    log_started(w, j);
    worker_lock(w);
    run = worker_slot_running(w, i);
    worker_unlock(w);
    wait_us = wait_since(j->e.task.enqueued_at_ms);
    started = clock_us();
    worker_crash_enter(i);
    worker_run_job(w, i, run);
    worker_crash_leave();
    took = clock_us() - started;
    j->duration_ms = took / 1000;
    metrics_run(w->opts->metrics, metric_of(w, j), took, wait_us);
    worker_lock(w);
    fits = worker_slot_returned(w, i);
    worker_unlock(w);
    return fits;
}

/* Finishes jobs [from, to) of the batch at once: a return too large for
 * the slot's arena is sent now rather than kept where a crash would lose
 * it. Those jobs are then left out of the batch's own finish (FINISH_NONE,
 * counted here). 0, or -1 on a connection error. */
static int finish_now(worker *w, size_t from, size_t to)
{
    if (broker_finish(&w->b, w->jobs + from, to - from) != 0)
        return -1;
    worker_slot_finished(w, from, to);
    report_jobs(w, from, to);
    for (size_t i = from; i < to; i++)
        w->jobs[i].finish = FINISH_NONE;
    return 0;
}

/* After a connection error mid-batch: the jobs from i on that have not
 * run go back unrun, their locks released, no attempt spent, with the
 * batch's finish once Redis is back. */
static void reschedule_rest(worker *w, size_t i, size_t n)
{
    for (; i < n; i++) {
        broker_job *j = &w->jobs[i];
        if (j->begin != BEGIN_RUN)
            continue;
        j->finish = FINISH_RESCHEDULE;
        j->next_attempt = j->e.task.attempt;
        j->delay_ms = 0;
        j->reason = "redis connection lost mid-batch";
    }
}

/* Begins one claimed batch and runs the plugin of each task it may run.
 * -1 if the connection broke before every begin was answered; -2 if it
 * broke while a return too large for the slot was being finished (the
 * batch is then held for its finish; what had not started goes back
 * unrun). */
void worker_unrunnable_fate(broker_job *j)
{
    if (j->e.deleted) {
        j->finish = FINISH_ACK;
    } else if (j->e.bad[0]) {
        j->finish = FINISH_DEAD;
        j->next_attempt = j->e.task.attempt;
        j->reason = j->e.bad;
    }
}

bool worker_begun_fate(worker *w, broker_job *j)
{
    if (j->begin == BEGIN_RUN && worker_stopping(w)) {
        /* Stopping: what has not started goes back for any host, its
         * lock released, no attempt spent. */
        j->finish = FINISH_RESCHEDULE;
        j->next_attempt = j->e.task.attempt;
        j->delay_ms = 0;
        j->reason = "host stopping";
        return false;
    }
    switch (j->begin) {
    case BEGIN_CACHED:
        j->finish = FINISH_ACK;
        break;
    case BEGIN_CANCELLED:
        j->finish = FINISH_CANCEL;
        j->reason = "cancelled";
        break;
    case BEGIN_PAUSED:
        /* Claimed before this worker knew of the pause: back to wait
         * in the stream, no attempt spent, and the type left out of
         * this worker's claims from now on (worker.c). */
        j->finish = FINISH_RESCHEDULE;
        j->next_attempt = j->e.task.attempt;
        j->delay_ms = 0;
        j->reason = "type paused";
        worker_saw_pause(w, j->queue);
        break;
    case BEGIN_NO_SLOT:
        /* Every slot of the type's concurrency_limit is taken (on
         * any host): it waits for one, no attempt spent, and costs
         * nothing while it waits (finish.lua wakes it). */
        j->finish = FINISH_RESCHEDULE;
        j->next_attempt = j->e.task.attempt;
        j->delay_ms = BROKER_WAIT_FOR_SLOT;
        j->reason = "waiting for a free slot (concurrency_limit)";
        if (j->wait_ms > 0) {
            /* rates: its turn of the rate_limit is reserved; it waits
             * in the delayed set until then, uncharged. */
            j->delay_ms = j->wait_ms;
            j->reason = "waiting for its rate turn (rate_limit)";
        } else if (j->wait_ms == BROKER_WAIT_FOR_KEY_SLOT) {
            j->delay_ms = j->wait_ms;
            j->reason = "waiting for a free slot of its limit_key";
        }
        break;
    case BEGIN_LOCKED:
        if (w->opts->metrics)
            metrics_add(w->opts->metrics, &w->opts->metrics->lock_contended,
                        1);
        j->finish = FINISH_RESCHEDULE;
        j->next_attempt = j->e.task.attempt;
        j->delay_ms = j->queue->pol->lock_retry_ms;
        j->reason = "locked by another run";
        break;
    case BEGIN_RUN:
        if (j->e.expires_at_ms > 0 && clock_wall_ms() > j->e.expires_at_ms) {
            /* Enqueued with an expiry that has passed: no attempt begins
             * (its lock, just taken, goes with the dead record). */
            j->finish = FINISH_DEAD;
            j->next_attempt = j->e.task.attempt;
            j->reason = "expired";
            j->expired = true;
            return false;
        }
        return true;
    case BEGIN_NONE:
        break;
    }
    return false;
}

int worker_begin_and_run(worker *w, size_t n)
{
    size_t unfinished = 0; /* jobs before this one are finished already */

    for (size_t i = 0; i < n; i++)
        worker_unrunnable_fate(&w->jobs[i]);
    w->begin_ms = clock_ms(); /* before the locks can exist */
    worker_slot_publish(w, n);
    if (broker_begin(&w->b, w->jobs, n) != 0)
        return -1;
    worker_slot_publish(w, n);
    for (size_t i = 0; i < n; i++) {
        if (!worker_begun_fate(w, &w->jobs[i]))
            continue;
        if (!worker_run_entry(w, (uint32_t)i)) {
            if (finish_now(w, unfinished, i + 1) != 0) {
                reschedule_rest(w, i + 1, n);
                return -2;
            }
            unfinished = i + 1;
        }
    }
    worker_slot_finishing(w, NULL, 0);
    return 0;
}
