/* The worker loop; see worker.h. All per-batch memory (jobs, contexts and
 * their result buffers) is allocated once and reused, so the hot path
 * allocates nothing of its own beyond what hiredis does. */
#include "worker.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "backoff.h"
#include "clock_ms.h"
#include "log.h"
#include "run.h"
#include "scripts.h"

/* Reconnect backoff: from 100 ms, doubling, up to 5 s, with jitter. */
#define RECONNECT_MIN_MS 100
#define RECONNECT_MAX_MS 5000
/* How often the dead sets are trimmed to dead_max. */
#define TRIM_EVERY_MS 1000

/* A batch kept across a broken connection: its begun locks to release, or
 * its finish to send again, once Redis is back. */
typedef enum held_kind { HELD_NONE = 0, HELD_RELEASE, HELD_FINISH } held_kind;

typedef struct worker {
    const config *cfg;
    loader *ld;
    const worker_options *opts;
    volatile sig_atomic_t *stop;
    broker b;
    broker_job *jobs;
    context *ctxs;
    size_t capacity;
    unsigned count;
    worker_counts counts;
    int64_t last_promote_ms;
    int64_t last_trim_ms;
    held_kind held;
    redisReply *held_claim; /* the jobs point into it */
    size_t held_n;
    int64_t stop_seen_ms; /* when a stop request was first seen, or 0 */
    int64_t begin_ms;     /* when the batch's begin was sent */
    bool signalled;       /* a SIGTERM / SIGINT is pending */
    int *metric_index;    /* per broker queue: its metrics type index */
    uint64_t counted_round_trips, counted_errors; /* already in metrics */
} worker;

/* Reads a SIGTERM or SIGINT sent to this process: the worker keeps them
 * blocked (see child_block_stops), so they wait, pending, to be read here
 * between tasks rather than interrupting a plugin's system call. Once per
 * claim and per sleep step: a system call, kept off the per-task path. */
static void read_pending_signals(worker *w)
{
    sigset_t pending;

    if (!w->signalled && sigpending(&pending) == 0 &&
        (sigismember(&pending, SIGTERM) == 1 ||
         sigismember(&pending, SIGINT) == 1))
        w->signalled = true;
}

/* True once a stop was asked for: by the caller's flag, by the supervisor
 * through the slot, or by a pending SIGTERM / SIGINT. */
static bool stopping(worker *w)
{
    bool stop = *w->stop != 0 || w->signalled;

    if (!stop && w->opts->status)
        stop = atomic_load_explicit(&w->opts->status->stop,
                                    memory_order_relaxed) != 0;
    if (stop && w->stop_seen_ms == 0)
        w->stop_seen_ms = clock_ms() | 1; /* never 0 */
    return stop;
}

/* While stopping, a batch whose finish the connection cut off is still
 * worth sending: until shutdown_timeout is nearly over (the supervisor
 * kills a worker at its end), the worker keeps trying. */
static bool keep_trying(worker *w)
{
    if (!stopping(w))
        return true;
    return w->held != HELD_NONE &&
           clock_ms() - w->stop_seen_ms <
               w->cfg->shutdown_timeout_ms - w->cfg->shutdown_timeout_ms / 10;
}

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

static void sleep_ms(worker *w, int64_t ms)
{
    /* In short steps, so a stop request is seen quickly. */
    while (ms > 0) {
        read_pending_signals(w);
        if (!keep_trying(w))
            break;
        int64_t step = ms > 50 ? 50 : ms;
        struct timespec ts = {0, (long)step * 1000000L};
        nanosleep(&ts, NULL);
        ms -= step;
    }
}

void worker_consumer_name(char *buf, size_t len, const char *instance,
                          unsigned slot_index)
{
    char host[256];

    if (gethostname(host, sizeof(host)) != 0)
        snprintf(host, sizeof(host), "localhost");
    host[sizeof(host) - 1] = '\0';
    snprintf(buf, len, "%s:%s:%u", host, instance, slot_index);
}

/* Connects, retrying with capped exponential backoff and jitter; logs the
 * state change once, not every try. 0 when connected, -1 when stopped,
 * -2 when Redis refuses what retrying cannot fix. */
static int connect_with_backoff(worker *w)
{
    int64_t delay = RECONNECT_MIN_MS;
    int logged = 0;

    while (keep_trying(w)) {
        int rc = broker_connect(&w->b);
        if (rc == 0) {
            if (logged)
                log_msg(WHARF_LOG_INFO, "redis reachable again");
            return 0;
        }
        if (rc == -2) {
            log_msg(WHARF_LOG_ERROR, "%s", w->b.errstr);
            return -2;
        }
        if (!logged) {
            log_fields(WHARF_LOG_WARN, "redis unreachable; retrying",
                       (log_field[]){LOG_STR("error", w->b.errstr),
                                     LOG_STR("worker", w->opts->consumer)},
                       2);
            logged = 1;
        }
        sleep_ms(w, (int64_t)(delay * (0.5 + backoff_random_unit())));
        delay = delay * 2 > RECONNECT_MAX_MS ? RECONNECT_MAX_MS : delay * 2;
    }
    return -1;
}

static int worker_setup(worker *w)
{
    const loader *ld = w->ld;
    const char **types = calloc(ld->n_routes + 1, sizeof(*types));
    const policy **policies = calloc(ld->n_routes + 1, sizeof(*policies));
    int rc = -1;

    if (!types || !policies)
        goto out;
    /* XREADGROUP takes one COUNT for every stream, so the smallest
     * prefetch of the served types is the one that holds for all of them:
     * a type set to prefetch = 1 (slow tasks) never has more than one of
     * its tasks held by this worker. */
    w->count = 0;
    for (size_t i = 0; i < ld->n_routes; i++) {
        types[i] = ld->routes[i].type;
        policies[i] = ld->routes[i].policy;
        if (w->count == 0 || policies[i]->prefetch < w->count)
            w->count = policies[i]->prefetch;
    }
    if (w->count == 0)
        w->count = 1;
    /* The slot holds every entry this worker may claim, so each one's
     * lease is renewed and its failure recorded if the worker dies. The
     * supervisor sized it from the same manifest; should the plugins have
     * changed in between, claim fewer rather than hold an unseen task. */
    if (w->opts->status) {
        size_t routes = ld->n_routes ? ld->n_routes : 1;
        size_t room = w->opts->status->capacity;
        if ((size_t)w->count * routes > room) {
            if (room < routes) {
                log_fields(
                    WHARF_LOG_ERROR,
                    "worker: its slot holds fewer tasks than it "
                    "serves types; the plugins changed since the "
                    "check (a reload follows)",
                    (log_field[]){LOG_INT("slot_capacity", (int64_t)room),
                                  LOG_INT("types", (int64_t)routes)},
                    2);
                goto out;
            }
            w->count = (unsigned)(room / routes);
        }
    }
    if (broker_init(&w->b, w->cfg, types, policies, ld->n_routes,
                    w->opts->consumer) != 0) {
        log_msg(WHARF_LOG_ERROR, "%s", w->b.errstr);
        goto out;
    }
    /* XREADGROUP's COUNT is per stream. */
    w->capacity = (size_t)w->count * (ld->n_routes ? ld->n_routes : 1);
    w->jobs = calloc(w->capacity, sizeof(*w->jobs));
    w->ctxs = calloc(w->capacity, sizeof(*w->ctxs));
    if (!w->jobs || !w->ctxs)
        goto out;
    for (size_t i = 0; i < w->capacity; i++)
        context_init(&w->ctxs[i], NULL, WORKER_MAX_RESULT);
    w->metric_index =
        calloc(w->b.n_queues ? w->b.n_queues : 1, sizeof(*w->metric_index));
    if (!w->metric_index)
        goto out;
    for (size_t i = 0; i < w->b.n_queues; i++)
        w->metric_index[i] =
            metrics_type_find(w->opts->metrics, w->b.queues[i].type);
    rc = 0;
out:
    if (rc != 0 &&
        (!types || !policies ||
         (w->capacity && (!w->jobs || !w->ctxs || !w->metric_index))))
        log_msg(WHARF_LOG_ERROR, "worker: out of memory");
    free(types);
    free(policies);
    return rc;
}

static void worker_teardown(worker *w)
{
    freeReplyObject(w->held_claim);
    for (size_t i = 0; w->ctxs && i < w->capacity; i++)
        context_destroy(&w->ctxs[i]);
    free(w->ctxs);
    free(w->jobs);
    free(w->metric_index);
    broker_destroy(&w->b);
}

/* Runs the plugin of j's type (job index i of the batch) and decides how
 * j finishes. The run owns its deadline: whatever the plugin returns after
 * it, or after the supervisor asked it to end, is thrown away and the
 * attempt fails with "timeout after N ms", the same outcome as when the
 * worker is killed for it. A run the supervisor asked to end because it
 * was cancelled (wharf cancel) ends as cancelled instead. */
static void run_job(worker *w, broker_job *j, context *ctx, uint32_t run)
{
    const route *r = loader_route(w->ld, j->queue->type);
    int64_t timeout_ms = j->queue->pol->timeout_ms;
    int64_t started, ended;
    wharf_status status;

    if (!r) { /* cannot happen: we only read the streams we route */
        j->finish = FINISH_NONE;
        return;
    }
    ctx->plugin = r->plugin;
    ctx->state = r->plugin->state;
    context_begin(ctx, &j->e.task);
    started = clock_ms();
    context_set_deadline(ctx, started + timeout_ms, w->opts->status, run);
    status = r->plugin->desc->process_business(&ctx->base, &j->e.task);
    ended = clock_ms();
    if (w->opts->status && slot_run_cancelled(w->opts->status, run)) {
        /* wharf cancel: whatever it returned is dropped, nothing retried
         * (the finish script writes nothing for a cancelled entry). */
        context_end(ctx);
        j->finish = FINISH_CANCEL;
        j->reason = "cancelled";
        return;
    }
    if (w->opts->status && slot_run_lease_lost(w->opts->status, run)) {
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

/* Adds the round trips and Redis errors since the last call to the
 * shared counters. */
static void count_redis(worker *w)
{
    metrics *m = w->opts->metrics;

    if (!m)
        return;
    metrics_add(m, &m->round_trips,
                broker_round_trips(&w->b) - w->counted_round_trips);
    metrics_add(m, &m->redis_errors, w->b.redis_errors - w->counted_errors);
    w->counted_round_trips = broker_round_trips(&w->b);
    w->counted_errors = w->b.redis_errors;
}

/* A test hook: with WHARF_TEST_DIE_IN_SLOT_WRITE=PATH, the first worker
 * that creates PATH kills itself in the middle of its first slot write,
 * as a crash there would, so the tests can show that its replacement's
 * slot works. */
static void die_in_slot_write_if_asked(void)
{
    static int asked = -1;
    const char *path;
    int fd;

    if (asked == 0)
        return;
    path = getenv("WHARF_TEST_DIE_IN_SLOT_WRITE");
    asked = 0;
    if (!path)
        return;
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0)
        raise(SIGKILL);
}

/* Tells the supervisor, through the slot, which entries this worker holds
 * (and, once begun, with which lock tokens), so it can renew their leases
 * and release them if this process dies. worker_setup made sure the slot
 * holds the whole batch. */
static void slot_publish_batch(worker *w, size_t n)
{
    slot *sl = w->opts->status;

    if (!sl)
        return;
    if (n > sl->capacity)
        n = sl->capacity; /* cannot happen: see worker_setup */
    slot_write_begin(sl);
    die_in_slot_write_if_asked();
    for (size_t i = 0; i < n; i++) {
        const broker_job *j = &w->jobs[i];
        slot_task *t = &sl->batch[i];
        snprintf(t->type, sizeof(t->type), "%s", j->queue->type);
        snprintf(t->id, sizeof(t->id), "%s", j->e.task.id);
        snprintf(t->entry_id, sizeof(t->entry_id), "%s", j->e.entry_id);
        snprintf(t->token, sizeof(t->token), "%s",
                 j->begin == BEGIN_RUN ? j->token : "");
        t->locked_ms = w->begin_ms;
        memset(&t->ret, 0, sizeof(t->ret)); /* nothing has returned yet */
    }
    sl->batch_n = (uint32_t)n;
    sl->arena_used = 0;
    sl->finishing = 0;
    sl->running = SLOT_NONE;
    sl->state = stopping(w) ? SLOT_STOPPING : SLOT_IDLE;
    slot_write_end(sl);
}

/* Keeps what job i's plugin returned in the slot, where the supervisor
 * finds it if this process dies before the batch's finish is sent, and
 * marks nothing running. False when its result and reason do not fit
 * the arena: the caller finishes it at once instead. */
static bool slot_returned(worker *w, uint32_t i)
{
    slot *sl = w->opts->status;
    const broker_job *j = &w->jobs[i];
    size_t reason_len = j->reason ? strlen(j->reason) : 0;
    size_t result_len = j->finish == FINISH_OK && j->result ? j->result_len : 0;
    bool fits;

    if (!sl)
        return true;
    fits = i < sl->capacity &&
           reason_len + result_len <= SLOT_ARENA_BYTES - sl->arena_used;
    slot_write_begin(sl);
    if (fits) {
        slot_return *r = &sl->batch[i].ret;
        unsigned char *arena = slot_arena(sl);
        r->next_attempt = j->next_attempt;
        r->delay_ms = j->delay_ms;
        r->reason_off = sl->arena_used;
        r->reason_len = (uint32_t)reason_len;
        memcpy(arena + sl->arena_used, j->reason ? j->reason : "", reason_len);
        sl->arena_used += (uint32_t)reason_len;
        r->has_result = j->finish == FINISH_OK && j->result != NULL;
        r->result_off = sl->arena_used;
        r->result_len = (uint32_t)result_len;
        if (result_len)
            memcpy(arena + sl->arena_used, j->result, result_len);
        sl->arena_used += (uint32_t)result_len;
        r->finish = (int)j->finish;
    }
    sl->running = SLOT_NONE;
    sl->state = stopping(w) ? SLOT_STOPPING : SLOT_IDLE;
    slot_write_end(sl);
    return fits;
}

/* Marks jobs [from, to) of the slot as finished already (finish_now). */
static void slot_finished(worker *w, size_t from, size_t to)
{
    slot *sl = w->opts->status;

    if (!sl)
        return;
    slot_write_begin(sl);
    for (size_t i = from; i < to && i < sl->capacity; i++)
        sl->batch[i].ret.finished = 1;
    sl->arena_used = 0; /* every return kept there is finished */
    slot_write_end(sl);
}

/* The batch's finish is about to be sent: from here its locks go away
 * with it, which the lease keeper must not take for a lost lease. */
static void slot_finishing(worker *w)
{
    slot *sl = w->opts->status;

    if (!sl)
        return;
    slot_write_begin(sl);
    sl->finishing = 1;
    slot_write_end(sl);
}

/* Marks job i as running (slot_returned ends that). Returns the run
 * number that names this plugin call (0 without a slot). */
static uint32_t slot_running(worker *w, uint32_t i)
{
    slot *sl = w->opts->status;
    uint32_t run;

    if (!sl)
        return 0;
    slot_write_begin(sl);
    sl->running = i < sl->capacity ? i : SLOT_NONE;
    sl->run = sl->run + 1 ? sl->run + 1 : 1;
    sl->started_ms = clock_ms();
    sl->timeout_ms = w->jobs[i].queue->pol->timeout_ms;
    sl->state = SLOT_RUNNING;
    run = sl->run;
    slot_write_end(sl);
    return run;
}

/* Counts and logs finished jobs [from, to). */
static void report_jobs(worker *w, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        const broker_job *j = &w->jobs[i];
        if (j->finish == FINISH_NONE || j->e.deleted)
            continue;
        w->counts.outcomes[j->outcome]++;
        metrics_outcome(w->opts->metrics, metric_of(w, j), j->outcome);
        log_job(w, j, j->duration_ms);
    }
}

/* Counts and logs a finished batch. */
static void report(worker *w, size_t n)
{
    slot_publish_batch(w, 0);
    report_jobs(w, 0, n);
    w->counts.batches++;
}

/* Finishes jobs [from, to) of the batch at once: a return too large for
 * the slot's arena is sent now rather than kept where a crash would lose
 * it. Those jobs are then left out of the batch's own finish (FINISH_NONE,
 * counted here). 0, or -1 on a connection error. */
static int finish_now(worker *w, size_t from, size_t to)
{
    if (broker_finish(&w->b, w->jobs + from, to - from) != 0)
        return -1;
    slot_finished(w, from, to);
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
static int begin_and_run(worker *w, size_t n)
{
    size_t unfinished = 0; /* jobs before this one are finished already */

    for (size_t i = 0; i < n; i++) {
        broker_job *j = &w->jobs[i];
        if (j->e.deleted) {
            j->finish = FINISH_ACK;
        } else if (j->e.bad[0]) {
            j->finish = FINISH_DEAD;
            j->next_attempt = j->e.task.attempt;
            j->reason = j->e.bad;
        }
    }
    w->begin_ms = clock_ms(); /* before the locks can exist */
    slot_publish_batch(w, n);
    if (broker_begin(&w->b, w->jobs, n) != 0)
        return -1;
    slot_publish_batch(w, n);
    for (size_t i = 0; i < n; i++) {
        broker_job *j = &w->jobs[i];
        if (j->begin == BEGIN_RUN && stopping(w)) {
            /* Stopping: what has not started goes back for any host, its
             * lock released, no attempt spent. */
            j->finish = FINISH_RESCHEDULE;
            j->next_attempt = j->e.task.attempt;
            j->delay_ms = 0;
            j->reason = "host stopping";
            continue;
        }
        switch (j->begin) {
        case BEGIN_CACHED:
            j->finish = FINISH_ACK;
            break;
        case BEGIN_CANCELLED:
            j->finish = FINISH_CANCEL;
            j->reason = "cancelled";
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
            log_started(w, j);
            {
                uint32_t run = slot_running(w, (uint32_t)i);
                int64_t wait_us = wait_since(j->e.task.enqueued_at_ms);
                int64_t started = clock_us();
                run_job(w, j, &w->ctxs[i], run);
                int64_t took = clock_us() - started;
                j->duration_ms = took / 1000;
                metrics_run(w->opts->metrics, metric_of(w, j), took, wait_us);
            }
            if (!slot_returned(w, (uint32_t)i)) {
                if (finish_now(w, unfinished, i + 1) != 0) {
                    reschedule_rest(w, i + 1, n);
                    return -2;
                }
                unfinished = i + 1;
            }
            break;
        case BEGIN_NONE:
            break;
        }
    }
    slot_finishing(w);
    return 0;
}

/* Keeps a batch whose begin or finish the connection broke. */
static void hold(worker *w, held_kind kind, redisReply *claim, size_t n)
{
    w->held = kind;
    w->held_claim = claim;
    w->held_n = n;
}

static void drop_held(worker *w)
{
    freeReplyObject(w->held_claim);
    w->held_claim = NULL;
    w->held = HELD_NONE;
    w->held_n = 0;
}

/* After a reconnect: releases the locks of a batch whose begin broke
 * (those it took with answered tokens, and those of calls whose reply was
 * lost, by the call's owner nonce), or sends again the finish that broke
 * (a finish that did reach Redis then counts as done and changes
 * nothing), so no work is lost or run again for nothing. -1 if the
 * connection broke again. */
static int resolve_held(worker *w)
{
    int rc = 0;

    if (w->held == HELD_RELEASE) {
        rc = broker_release(&w->b, w->jobs, w->held_n);
    } else if (w->held == HELD_FINISH) {
        /* An earlier send may have landed before the connection broke:
         * resent, such a task counts as done, not stale. */
        rc = broker_finish_resend(&w->b, w->jobs, w->held_n);
        if (rc == 0)
            report(w, w->held_n);
    }
    if (rc == 0)
        drop_held(w);
    return rc;
}

/* Promotes due tasks every block_ms and trims dead sets every second. */
static int maintain(worker *w)
{
    int64_t now = clock_ms();

    if (!w->opts->maintenance)
        return 0;
    if (now - w->last_promote_ms >= w->opts->block_ms) {
        w->last_promote_ms = now;
        if (broker_promote(&w->b) < 0)
            return -1;
    }
    if (now - w->last_trim_ms >= TRIM_EVERY_MS) {
        w->last_trim_ms = now;
        if (broker_trim_dead(&w->b) < 0)
            return -1;
    }
    return 0;
}

int worker_run(const config *cfg, loader *ld, const worker_options *opts,
               volatile sig_atomic_t *stop, worker_counts *counts)
{
    worker w;
    int status = EX_SOFTWARE;

    memset(&w, 0, sizeof(w));
    w.cfg = cfg;
    w.ld = ld;
    w.opts = opts;
    w.stop = stop;
    scripts_init();
    if (worker_setup(&w) != 0)
        goto out;
    slot_publish_batch(&w, 0); /* loaded: the supervisor sees it up */
    log_fields(WHARF_LOG_INFO, "worker serving",
               (log_field[]){LOG_STR("worker", opts->consumer),
                             LOG_INT("types", (int64_t)ld->n_routes)},
               2);
    while (true) {
        redisReply *claim;
        size_t n;
        int ran;

        read_pending_signals(&w);
        if (stopping(&w) && !(w.held && keep_trying(&w)))
            break;

        count_redis(&w);
        if (!broker_connected(&w.b)) {
            int rc = connect_with_backoff(&w);
            if (rc == -2) {
                status = EX_CONFIG;
                goto out;
            }
            if (rc != 0)
                break;
            if (w.held && resolve_held(&w) != 0) {
                broker_disconnect(&w.b);
                continue;
            }
        }
        if (stopping(&w))
            break; /* nothing held is left to send */
        if (maintain(&w) != 0 ||
            !(claim = broker_claim(&w.b, w.count, opts->block_ms))) {
            log_fields(WHARF_LOG_WARN, "redis connection lost; reconnecting",
                       (log_field[]){LOG_STR("error", w.b.errstr),
                                     LOG_STR("worker", opts->consumer)},
                       2);
            broker_disconnect(&w.b);
            continue;
        }
        n = broker_jobs(&w.b, claim, w.jobs, w.capacity);
        ran = n > 0 ? begin_and_run(&w, n) : 0;
        if (ran == -1) {
            hold(&w, HELD_RELEASE, claim, n);
        } else if (ran == -2 ||
                   (n > 0 && broker_finish(&w.b, w.jobs, n) != 0)) {
            hold(&w, HELD_FINISH, claim, n);
        } else {
            if (n > 0)
                report(&w, n);
            freeReplyObject(claim);
            continue;
        }
        log_fields(WHARF_LOG_WARN,
                   "redis connection lost mid-batch; the batch is kept and "
                   "resolved after the reconnect",
                   (log_field[]){LOG_STR("error", w.b.errstr),
                                 LOG_STR("worker", opts->consumer)},
                   2);
        broker_disconnect(&w.b);
    }
    if (w.held == HELD_FINISH)
        log_fields(WHARF_LOG_ERROR,
                   "stopping with a finished batch Redis never received; "
                   "its tasks stay pending and run again",
                   (log_field[]){LOG_INT("tasks", (int64_t)w.held_n),
                                 LOG_STR("worker", opts->consumer)},
                   2);
    status = EX_OK;
    log_fields(WHARF_LOG_INFO, "worker stopped",
               (log_field[]){
                   LOG_STR("worker", opts->consumer),
                   LOG_INT("round_trips", (int64_t)broker_round_trips(&w.b))},
               2);
out:
    count_redis(&w);
    w.counts.round_trips = broker_round_trips(&w.b);
    if (counts)
        *counts = w.counts;
    worker_teardown(&w);
    return status;
}
