/* The worker loop; see worker.h. It connects (waiting out an outage
 * with capped backoff), claims a batch, has worker_batch.c begin and run
 * it, and finishes it; a batch the connection cut off is held and
 * resolved after the reconnect. All per-batch memory (jobs, contexts
 * and their result buffers) is allocated once and reused, so the hot
 * path allocates nothing of its own beyond what hiredis does.
 * worker_internal.h names the other files. */
#include "worker.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "backoff.h"
#include "clock_ms.h"
#include "log.h"
#include "node_scripts.h"
#include "worker_internal.h"
#include "xmalloc.h"

/* Reconnect backoff: from 100 ms, doubling, up to 5 s, with jitter. */
#define RECONNECT_MIN_MS 100
#define RECONNECT_MAX_MS 5000
/* How often the dead sets are trimmed to dead_max. */
#define TRIM_EVERY_MS 1000
/* How long a pause a begin found holds a type out of this worker's
 * claims before the supervisor's figures (read every second) show it. */
#define PAUSE_SEEN_MS 3000
/* While every served type is paused: how often the worker looks again. */
#define PAUSED_NAP_MS 200

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
int worker_connect(worker *w)
{
    int64_t delay = RECONNECT_MIN_MS;
    int logged = 0;

    while (worker_keep_trying(w)) {
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
        worker_sleep_ms(w, (int64_t)(delay * (0.5 + backoff_random_unit())));
        delay = delay * 2 > RECONNECT_MAX_MS ? RECONNECT_MAX_MS : delay * 2;
    }
    return -1;
}

static int worker_setup(worker *w)
{
    const loader *ld = w->ld;
    size_t want;
    const char **types = xcalloc(ld->n_routes + 1, sizeof(*types));
    const policy **policies = xcalloc(ld->n_routes + 1, sizeof(*policies));
    int rc = -1;

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
    /* With several threads, the worker holds up to `threads` runs and,
     * behind them, up to prefetch entries of each type waiting for a
     * thread (worker_threads.c); with one, a batch of prefetch entries
     * of each type. */
    w->threads = loader_threads(ld);
    w->threaded = w->threads > 1;
    want = (size_t)w->count * (ld->n_routes ? ld->n_routes : 1);
    if (w->threaded)
        want += w->threads;
    /* The slot holds every entry this worker may claim, so each one's
     * lease is renewed and its failure recorded if the worker dies. The
     * supervisor sized it from the same manifest; should the plugins have
     * changed in between, claim fewer rather than hold an unseen task. */
    if (w->opts->status && want > w->opts->status->capacity) {
        size_t routes = ld->n_routes ? ld->n_routes : 1;
        size_t room = w->opts->status->capacity;
        if (room < routes + (w->threaded ? 1 : 0)) {
            log_fields(WHARF_LOG_ERROR,
                       "worker: its slot holds fewer tasks than it "
                       "serves types; the plugins changed since the "
                       "check (a reload follows)",
                       (log_field[]){LOG_INT("slot_capacity", (int64_t)room),
                                     LOG_INT("types", (int64_t)routes)},
                       2);
            goto out;
        }
        if (w->threaded) {
            /* Fewer threads first, then less prefetch. */
            if (room - (size_t)w->count * routes >= 2)
                w->threads = (unsigned)(room - (size_t)w->count * routes);
            else {
                w->threads = 1;
                w->threaded = false;
                w->count = (unsigned)(room / routes);
            }
        } else {
            w->count = (unsigned)(room / routes);
        }
        want = (size_t)w->count * routes + (w->threaded ? w->threads : 0);
    }
    if (broker_init(&w->b, w->cfg, types, policies, ld->n_routes,
                    w->opts->consumer) != 0) {
        log_msg(WHARF_LOG_ERROR, "%s", w->b.errstr);
        goto out;
    }
    w->capacity = want;
    w->jobs = xcalloc(w->capacity, sizeof(*w->jobs));
    w->ctxs = xcalloc(w->capacity, sizeof(*w->ctxs));
    w->parents_read = xcalloc(w->capacity, sizeof(*w->parents_read));
    for (size_t i = 0; i < w->capacity; i++)
        context_init(&w->ctxs[i], NULL, WORKER_MAX_RESULT);
    w->pause_seen_ms = xcalloc(w->b.n_queues, sizeof(*w->pause_seen_ms));
    w->metric_index = xcalloc(w->b.n_queues, sizeof(*w->metric_index));
    for (size_t i = 0; i < w->b.n_queues; i++)
        w->metric_index[i] =
            metrics_type_find(w->opts->metrics, w->b.queues[i].type);
    rc = 0;
out:
    free(types);
    free(policies);
    return rc;
}

static void worker_teardown(worker *w)
{
    freeReplyObject(w->held_claim);
    for (size_t i = 0; w->ctxs && i < w->capacity; i++)
        context_destroy(&w->ctxs[i]);
    for (size_t i = 0; w->parents_read && i < w->capacity; i++)
        freeReplyObject(w->parents_read[i]);
    free(w->parents_read);
    free(w->ctxs);
    free(w->jobs);
    free(w->metric_index);
    free(w->pause_seen_ms);
    broker_destroy(&w->b);
}

void worker_saw_pause(worker *w, const broker_queue *q)
{
    w->pause_seen_ms[q - w->b.queues] = clock_ms();
}

/* Marks the queues a claim leaves out: those the supervisor's figures
 * show paused, and those a begin found paused a moment ago. */
void worker_note_pauses(worker *w)
{
    const metrics *m = w->opts->metrics;
    int64_t now = 0;

    for (size_t i = 0; i < w->b.n_queues; i++) {
        bool shared = m && w->metric_index[i] >= 0 &&
                      atomic_load_explicit(&m->types[w->metric_index[i]].paused,
                                           memory_order_relaxed);
        bool seen = false;
        if (w->pause_seen_ms[i] != 0) {
            if (!now)
                now = clock_ms();
            if (shared || now - w->pause_seen_ms[i] > PAUSE_SEEN_MS)
                w->pause_seen_ms[i] = 0; /* the figures know, or it ended */
            else
                seen = true;
        }
        w->b.queues[i].paused = shared || seen;
    }
}

/* Adds the round trips and Redis errors since the last call to the
 * shared counters. */
void worker_count_redis(worker *w)
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
            worker_report(w, w->held_n);
    }
    if (rc == 0)
        drop_held(w);
    return rc;
}

/* Promotes due tasks every block_ms and trims dead sets every second. */
int worker_maintain(worker *w)
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
    node_scripts_check();
    if (worker_setup(&w) != 0)
        goto out;
    worker_crash_setup(opts->status);
    worker_crash_thread_start(); /* one thread: plugin calls run here */
    worker_slot_publish(&w, 0); /* loaded: the supervisor sees it up */
    log_fields(WHARF_LOG_INFO, "worker serving",
               (log_field[]){LOG_STR("worker", opts->consumer),
                             LOG_INT("types", (int64_t)ld->n_routes),
                             LOG_INT("threads", (int64_t)w.threads)},
               3);
    if (w.threaded) {
        status = worker_threads_run(&w, w.threads);
        if (status == EX_OK)
            log_fields(WHARF_LOG_INFO, "worker stopped",
                       (log_field[]){LOG_STR("worker", opts->consumer),
                                     LOG_INT("round_trips",
                                             (int64_t)(broker_round_trips(&w.b) +
                                                       w.other_round_trips))},
                       2);
        goto out;
    }
    while (true) {
        redisReply *claim;
        size_t n;
        int ran, maintained;

        worker_read_signals(&w);
        if (worker_stopping(&w) && !(w.held && worker_keep_trying(&w)))
            break;

        worker_count_redis(&w);
        if (!broker_connected(&w.b)) {
            int rc = worker_connect(&w);
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
        if (worker_stopping(&w))
            break; /* nothing held is left to send */
        maintained = worker_maintain(&w);
        worker_note_pauses(&w);
        if (maintained == 0 && broker_claimable(&w.b) == 0) {
            /* Every type paused: nothing to claim, and no claim sent
             * until one runs again. */
            worker_sleep_ms(&w, opts->block_ms < PAUSED_NAP_MS ? opts->block_ms
                                                               : PAUSED_NAP_MS);
            continue;
        }
        if (maintained != 0 ||
            !(claim = broker_claim(&w.b, w.count, opts->block_ms))) {
            log_fields(WHARF_LOG_WARN, "redis connection lost; reconnecting",
                       (log_field[]){LOG_STR("error", w.b.errstr),
                                     LOG_STR("worker", opts->consumer)},
                       2);
            broker_disconnect(&w.b);
            continue;
        }
        n = broker_jobs(&w.b, claim, w.jobs, w.capacity);
        ran = n > 0 ? worker_begin_and_run(&w, n) : 0;
        if (ran == -1) {
            hold(&w, HELD_RELEASE, claim, n);
        } else if (ran == -2 ||
                   (n > 0 && broker_finish(&w.b, w.jobs, n) != 0)) {
            hold(&w, HELD_FINISH, claim, n);
        } else {
            if (n > 0)
                worker_report(&w, n);
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
    worker_crash_thread_end();
    worker_count_redis(&w);
    w.counts.round_trips = broker_round_trips(&w.b) + w.other_round_trips;
    if (counts)
        *counts = w.counts;
    worker_teardown(&w);
    return status;
}
