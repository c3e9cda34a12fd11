/* A worker with several threads (worker_internal.h; run.h, "Threads").
 * The main thread claims and begins; each pool thread runs one entry's
 * plugin call at a time; the finisher thread sends the finish of what is
 * done, on a connection of its own, so a claim that blocks never holds
 * up a finished task and a slow finish never holds up a claim. Claims
 * follow free entries: a worker holds at most `threads` runs and, behind
 * them, `prefetch` entries a type that waits for a thread.
 *
 * The entries are w->jobs and w->ctxs, `capacity` of them, shown one by
 * one in the slot. Each is FREE, BEGINNING (claimed, its begin under
 * way), WAITING (begun, for a thread), RUNNING, DONE (its fate known,
 * for the finisher) or FINISHING (in the finish under way). Every change
 * of state, and every write of the slot, is made under the pool's lock;
 * a job's fields are written by whoever holds it in its state: the main
 * thread up to WAITING, its pool thread while RUNNING, the finisher from
 * FINISHING. With one thread none of this runs (worker.c). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>

#include "backoff.h"
#include "clock_ms.h"
#include "log.h"
#include "workflow.h"
#include "worker_internal.h"
#include "xmalloc.h"

/* How long the main thread waits for a free entry before it looks at its
 * stop requests again. */
#define MAIN_NAP_MS 50
/* Calls that carry one task each cost Redis as much per task as a batch
 * costs whole, so while runs are under way the finisher waits up to
 * GATHER_US after the first done entry for a gather of them (a quarter
 * of the threads, GATHER_MAX at most) before it sends their finish, and
 * the main thread likewise for as many free entries before it claims:
 * tasks that wait on I/O end one by one, and this keeps them in batches
 * for a small share of their time (make bench's I/O row, 50 ms tasks:
 * 6.2 Redis commands a task without it, 3.1 with 2 ms, 2.8 with 4 ms, at
 * 0.96 to 0.97 of the rate the threads allow). The waiting entries
 * (prefetch) keep the threads busy meanwhile. */
#define GATHER_MAX 64
#define GATHER_US 4000
/* The finisher's reconnect backoff: from 100 ms, doubling, up to 5 s. */
#define FINISH_RETRY_MIN_MS 100
#define FINISH_RETRY_MAX_MS 5000

typedef enum entry_state {
    ENTRY_FREE = 0,
    ENTRY_BEGINNING,
    ENTRY_WAITING,
    ENTRY_RUNNING,
    ENTRY_DONE,
    ENTRY_FINISHING
} entry_state;

/* A claim's reply, which its jobs point into, until the last is free. */
typedef struct claim_hold {
    redisReply *reply;
    size_t left;
} claim_hold;

typedef struct worker_pool {
    pthread_mutex_t lock;
    pthread_cond_t work;  /* for the threads: an entry waits, or quit */
    pthread_cond_t done;  /* for the finisher: an entry is done, or quit */
    pthread_cond_t freed; /* for the main thread: an entry is free */
    pthread_t *threads;
    size_t n_threads, n_started;
    pthread_t finisher;
    bool finisher_started;
    bool quit;     /* nothing is left: the threads end */
    bool stopping; /* what the slot shows */
    bool give_up;  /* the stop's grace is over: drop an unsent finish */

    unsigned char *state; /* entry_state, per entry */
    claim_hold **hold;    /* per entry */
    uint32_t *waiting;    /* entries WAITING, oldest first */
    size_t n_waiting, n_free, n_running, n_done; /* n_done: DONE and
                                                    FINISHING */
    size_t gather;        /* entries worth one call (GATHER_US) */
    size_t n_ready;       /* DONE, not yet taken by the finisher */
    int64_t ready_since;  /* clock_us() when the first of them was */
    int64_t free_since;   /* clock_us() when the main thread first saw
                             free entries it did not claim, or 0 */
    uint32_t *free_list;
    unsigned *held_of, *running_of, *cap_of;   /* per broker queue */
    size_t *plugin_of;                         /* per broker queue */
    unsigned *plugin_running, *plugin_threads; /* per loaded plugin */

    /* The main thread's own: a claim being begun. */
    broker_job *claimed;
    uint32_t *claimed_at;
    size_t n_claimed;
    size_t claim_room; /* free entries when the claim was sized */
    bool begin_broke;  /* its begin's answer was lost: release it */

    /* The finisher's own. */
    broker fb;
    broker_job *fjobs;
    uint32_t *fat;
    size_t fn;
    bool resend; /* fjobs' finish may have landed unseen */
    uint64_t counted_round_trips, counted_errors;
} worker_pool;

void worker_lock(worker *w)
{
    if (w->pool)
        pthread_mutex_lock(&w->pool->lock);
}

void worker_unlock(worker *w)
{
    if (w->pool)
        pthread_mutex_unlock(&w->pool->lock);
}

bool worker_pool_stopping(const worker *w)
{
    return w->pool && w->pool->stopping;
}

/* Copies job src into dst: the fields that point into the job itself
 * point into dst's own. */
static void job_copy(broker_job *dst, const broker_job *src)
{
    *dst = *src;
    if (src->e.task.id == src->e.fallback_id)
        dst->e.task.id = dst->e.fallback_id;
    if (src->reason == src->e.bad)
        dst->reason = dst->e.bad;
}

static size_t queue_index(const worker *w, const broker_job *j)
{
    return (size_t)(j->queue - w->b.queues);
}

/* Waits on cond for up to us microseconds, with the lock held. */
static void timed_wait_us(pthread_cond_t *cond, pthread_mutex_t *lock,
                          int64_t us)
{
    struct timespec ts = clock_monotonic_after_us(us);

    (void)pthread_cond_timedwait(cond, lock, &ts);
}

static void timed_wait(pthread_cond_t *cond, pthread_mutex_t *lock, int64_t ms)
{
    timed_wait_us(cond, lock, ms * 1000);
}

static void cond_init_monotonic(pthread_cond_t *c)
{
    pthread_condattr_t a;

    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(c, &a);
    pthread_condattr_destroy(&a);
}

/* ---- the pool's threads ---- */

/* The oldest waiting entry whose type and plugin have a thread to spare
 * (removed from the queue), or false; with [host] order = strict, the
 * oldest of the highest priority among those. Lock held. */
static bool take_waiting(worker *w, uint32_t *out)
{
    worker_pool *p = w->pool;
    bool strict = w->b.cfg->order == ORDER_STRICT;
    size_t best = SIZE_MAX;

    for (size_t k = 0; k < p->n_waiting; k++) {
        uint32_t i = p->waiting[k];
        size_t q = queue_index(w, &w->jobs[i]);
        size_t pl = p->plugin_of[q];
        if (p->running_of[q] >= p->cap_of[q] ||
            p->plugin_running[pl] >= p->plugin_threads[pl])
            continue;
        if (best == SIZE_MAX || w->jobs[i].queue->priority >
                                    w->jobs[p->waiting[best]].queue->priority)
            best = k;
        if (!strict)
            break;
    }
    if (best == SIZE_MAX)
        return false;
    *out = p->waiting[best];
    memmove(p->waiting + best, p->waiting + best + 1,
            (p->n_waiting - best - 1) * sizeof(*p->waiting));
    p->n_waiting--;
    return true;
}

/* Entry i's fate is known: it is the finisher's. Lock held. */
static void to_done(worker_pool *p, uint32_t i)
{
    p->state[i] = ENTRY_DONE;
    p->n_done++;
    if (p->n_ready++ == 0)
        p->ready_since = clock_us();
    /* The finisher waits out the gather on its own clock: woken for the
     * first, and once there are enough, not for each. */
    if (p->n_ready == 1 || p->n_ready >= p->gather || p->stopping)
        pthread_cond_signal(&p->done);
}

static void *thread_main(void *arg)
{
    worker *w = arg;
    worker_pool *p = w->pool;

    worker_crash_thread_start();
    pthread_mutex_lock(&p->lock);
    for (;;) {
        uint32_t i;
        size_t q, pl;
        if (!take_waiting(w, &i)) {
            if (p->quit)
                break;
            pthread_cond_wait(&p->work, &p->lock);
            continue;
        }
        q = queue_index(w, &w->jobs[i]);
        pl = p->plugin_of[q];
        p->state[i] = ENTRY_RUNNING;
        p->n_running++;
        p->running_of[q]++;
        p->plugin_running[pl]++;
        pthread_mutex_unlock(&p->lock);

        (void)worker_run_entry(w, i); /* the finisher sends it soon */

        pthread_mutex_lock(&p->lock);
        p->n_running--;
        p->running_of[q]--;
        p->plugin_running[pl]--;
        to_done(p, i);
        /* A thread of its type is free: another may wait for it. */
        if (p->n_waiting > 0)
            pthread_cond_signal(&p->work);
        pthread_cond_signal(&p->freed);
    }
    pthread_mutex_unlock(&p->lock);
    worker_crash_thread_end();
    return NULL;
}

/* ---- the finisher ---- */

/* Entry i is free again; its claim's reply goes once its last entry is
 * free. Lock held. */
static void to_free(worker *w, uint32_t i)
{
    worker_pool *p = w->pool;
    claim_hold *h = p->hold[i];

    p->held_of[queue_index(w, &w->jobs[i])]--;
    p->state[i] = ENTRY_FREE;
    p->hold[i] = NULL;
    p->free_list[p->n_free++] = i;
    if (h && --h->left == 0) {
        freeReplyObject(h->reply);
        free(h);
    }
}

/* Adds the finisher's round trips and errors to the shared counters. */
static void finisher_count_redis(worker *w)
{
    worker_pool *p = w->pool;
    metrics *m = w->opts->metrics;

    if (!m)
        return;
    metrics_add(m, &m->round_trips,
                broker_round_trips(&p->fb) - p->counted_round_trips);
    metrics_add(m, &m->redis_errors, p->fb.redis_errors - p->counted_errors);
    p->counted_round_trips = broker_round_trips(&p->fb);
    p->counted_errors = p->fb.redis_errors;
}

/* Sends the finish of fjobs[0..fn), reconnecting with backoff until it
 * is received or the stop's grace is over. 0 once sent, -1 if given up. */
static int finisher_send(worker *w)
{
    worker_pool *p = w->pool;
    int64_t delay = FINISH_RETRY_MIN_MS;
    bool logged = false;

    for (;;) {
        int rc = broker_connected(&p->fb) ? 0 : broker_connect(&p->fb);
        if (rc == 0)
            rc = p->resend ? broker_finish_resend(&p->fb, p->fjobs, p->fn)
                           : broker_finish(&p->fb, p->fjobs, p->fn);
        finisher_count_redis(w);
        if (rc == 0) {
            if (logged)
                log_msg(WHARF_LOG_INFO, "redis reachable again");
            return 0;
        }
        /* An earlier send may have landed: resent, such a task counts
         * as done, not stale. */
        p->resend = true;
        broker_disconnect(&p->fb);
        if (!logged) {
            log_fields(WHARF_LOG_WARN,
                       "redis connection lost while finishing; the finished "
                       "tasks are kept and sent after the reconnect",
                       (log_field[]){LOG_STR("error", p->fb.errstr),
                                     LOG_INT("tasks", (int64_t)p->fn),
                                     LOG_STR("worker", w->opts->consumer)},
                       3);
            logged = true;
        }
        pthread_mutex_lock(&p->lock);
        if (!p->give_up)
            timed_wait(&p->done, &p->lock,
                       (int64_t)(delay * (0.5 + backoff_random_unit())));
        rc = p->give_up ? -1 : 0;
        pthread_mutex_unlock(&p->lock);
        if (rc != 0)
            return -1;
        delay =
            delay * 2 > FINISH_RETRY_MAX_MS ? FINISH_RETRY_MAX_MS : delay * 2;
    }
}

static void *finisher_main(void *arg)
{
    worker *w = arg;
    worker_pool *p = w->pool;

    pthread_mutex_lock(&p->lock);
    for (;;) {
        int64_t left;
        if (p->n_ready > 0 && p->n_ready < p->gather && p->n_running > 0 &&
            !p->stopping &&
            (left = p->ready_since + GATHER_US - clock_us()) > 0) {
            timed_wait_us(&p->done, &p->lock, left);
            continue; /* more may be done now */
        }
        p->fn = 0;
        p->n_ready = 0;
        for (uint32_t i = 0; i < w->capacity; i++) {
            broker_job *j;
            if (p->state[i] != ENTRY_DONE)
                continue;
            p->state[i] = ENTRY_FINISHING;
            j = &p->fjobs[p->fn];
            job_copy(j, &w->jobs[i]);
            j->queue = &p->fb.queues[queue_index(w, &w->jobs[i])];
            p->fat[p->fn++] = i;
        }
        if (p->fn == 0) {
            /* Once the threads have quit nothing more can be done. */
            if (p->quit && p->n_running == 0 && p->n_waiting == 0)
                break;
            pthread_cond_wait(&p->done, &p->lock);
            continue;
        }
        worker_slot_finishing(w, p->fat, p->fn);
        pthread_mutex_unlock(&p->lock);

        p->resend = false;
        if (finisher_send(w) != 0) {
            log_fields(WHARF_LOG_ERROR,
                       "stopping with finished tasks Redis never received; "
                       "they stay pending and run again",
                       (log_field[]){LOG_INT("tasks", (int64_t)p->fn),
                                     LOG_STR("worker", w->opts->consumer)},
                       2);
            /* The slot keeps what they returned: the supervisor finishes
             * them once this process is gone (supervisor_recovery.c). */
            pthread_mutex_lock(&p->lock);
            for (size_t k = 0; k < p->fn; k++)
                to_free(w, p->fat[k]);
            p->n_done -= p->fn;
            pthread_cond_signal(&p->freed);
            continue;
        }
        for (size_t k = 0; k < p->fn; k++)
            p->fjobs[k].queue = w->jobs[p->fat[k]].queue;
        worker_report_some(w, p->fjobs, p->fn);
        w->counts.batches++;

        pthread_mutex_lock(&p->lock);
        for (size_t k = 0; k < p->fn; k++)
            to_free(w, p->fat[k]);
        p->n_done -= p->fn;
        worker_slot_clear(w, p->fat, p->fn);
        pthread_cond_signal(&p->freed);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* ---- the main thread ---- */

/* The per-stream count of the next claim: as many as the free entries
 * allow, shared among the queues it reads, none past a queue's own
 * bound (its threads, then prefetch waiting behind them). Queues at
 * that bound are left out of the claim as paused ones are. 0: no claim
 * now. Lock held. */
static unsigned claim_count(worker *w)
{
    worker_pool *p = w->pool;
    size_t readable = 0;
    size_t per = SIZE_MAX;

    for (size_t q = 0; q < w->b.n_queues; q++) {
        broker_queue *bq = &w->b.queues[q];
        size_t bound = (size_t)p->cap_of[q] + w->count;
        if (bq->paused)
            continue;
        if (p->held_of[q] >= bound) {
            bq->paused = true; /* full: left out of this claim */
            continue;
        }
        readable++;
        if (bound - p->held_of[q] < per)
            per = bound - p->held_of[q];
    }
    if (readable == 0)
        return 0;
    if (p->n_free / readable < per)
        per = p->n_free / readable;
    return per > UINT32_MAX ? UINT32_MAX : (unsigned)per;
}

/* True if a run under way is past its deadline: no more claims until it
 * ends, so as few neighbours as possible share its worker's fate. Lock
 * held. */
static bool overrun(const worker *w)
{
    const slot *sl = w->opts->status;
    int64_t now;

    if (!sl || w->pool->n_running == 0)
        return false;
    now = clock_ms();
    for (uint32_t i = 0; i < sl->capacity; i++)
        if (sl->batch[i].run != 0 &&
            now - sl->batch[i].started_ms > sl->batch[i].timeout_ms)
            return true;
    return false;
}

/* Stopping: entries that wait for a thread go back for any host, their
 * locks released, no attempt spent. Lock held. */
static void give_back_waiting(worker *w)
{
    worker_pool *p = w->pool;

    for (size_t k = 0; k < p->n_waiting; k++) {
        broker_job *j = &w->jobs[p->waiting[k]];
        j->finish = FINISH_RESCHEDULE;
        j->next_attempt = j->e.task.attempt;
        j->delay_ms = 0;
        j->reason = "host stopping";
        to_done(p, p->waiting[k]);
    }
    p->n_waiting = 0;
}

/* The claim's entries into free entries of the table, shown in the slot
 * before their begin is sent, so their locks are released should this
 * process die. */
static void place_claim(worker *w, redisReply *claim)
{
    worker_pool *p = w->pool;
    claim_hold *h = xcalloc(1, sizeof(*h));

    h->reply = claim;
    h->left = p->n_claimed;
    pthread_mutex_lock(&p->lock);
    w->begin_ms = clock_ms(); /* before the locks can exist */
    for (size_t k = 0; k < p->n_claimed; k++) {
        uint32_t i = p->free_list[--p->n_free];
        p->claimed_at[k] = i;
        p->state[i] = ENTRY_BEGINNING;
        p->hold[i] = h;
        job_copy(&w->jobs[i], &p->claimed[k]);
        p->held_of[queue_index(w, &w->jobs[i])]++;
    }
    worker_slot_put(w, p->claimed_at, p->n_claimed);
    pthread_mutex_unlock(&p->lock);
}

/* The claim's begin was answered: each entry waits for a thread, or has
 * its fate already (cached, cancelled, locked, ...) for the finisher. A
 * child of a workflow has its parents' results read first, on the main
 * thread's connection (one HGETALL each; a pool thread has none). */
static void place_begun(worker *w)
{
    worker_pool *p = w->pool;
    size_t to_run = 0;

    for (size_t k = 0; k < p->n_claimed; k++) {
        const broker_job *j = &p->claimed[k];
        uint32_t i = p->claimed_at[k];

        freeReplyObject(w->parents_read[i]);
        w->parents_read[i] =
            j->e.parents ? workflow_parent_results(&w->b, j->queue->type,
                                                   j->e.task.id)
                         : NULL;
    }
    pthread_mutex_lock(&p->lock);
    for (size_t k = 0; k < p->n_claimed; k++) {
        uint32_t i = p->claimed_at[k];
        job_copy(&w->jobs[i], &p->claimed[k]);
        if (worker_begun_fate(w, &w->jobs[i])) {
            p->state[i] = ENTRY_WAITING;
            p->waiting[p->n_waiting++] = i;
            to_run++;
        } else {
            to_done(p, i);
        }
    }
    worker_slot_put(w, p->claimed_at, p->n_claimed);
    p->n_claimed = 0;
    while (to_run-- > 0)
        pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->lock);
}

/* The entries of the claim whose begin broke are free again, and
 * nothing is held. Lock held. */
static void drop_claimed(worker *w)
{
    worker_pool *p = w->pool;

    for (size_t k = 0; k < p->n_claimed; k++)
        to_free(w, p->claimed_at[k]);
    worker_slot_clear(w, p->claimed_at, p->n_claimed);
    p->n_claimed = 0;
    p->begin_broke = false;
    w->held = HELD_NONE;
}

/* After a reconnect: the locks of a claim whose begin broke are released
 * (those taken with answered tokens, and those of calls whose reply was
 * lost, by the call's owner nonce), and its entries freed. -1 if the
 * connection broke again. */
static int release_claimed(worker *w)
{
    worker_pool *p = w->pool;

    if (broker_release(&w->b, p->claimed, p->n_claimed) != 0)
        return -1;
    pthread_mutex_lock(&p->lock);
    drop_claimed(w);
    pthread_cond_signal(&p->freed);
    pthread_mutex_unlock(&p->lock);
    return 0;
}

/* Claims, begins and places one claim. 0, or -1 on a connection error. */
static int claim_and_begin(worker *w, unsigned count)
{
    worker_pool *p = w->pool;
    redisReply *claim = broker_claim(&w->b, count, w->opts->block_ms);

    if (!claim)
        return -1;
    p->n_claimed = broker_jobs(&w->b, claim, p->claimed, p->claim_room);
    if (p->n_claimed == 0) {
        freeReplyObject(claim);
        return 0;
    }
    for (size_t k = 0; k < p->n_claimed; k++)
        worker_unrunnable_fate(&p->claimed[k]);
    place_claim(w, claim);
    if (broker_begin(&w->b, p->claimed, p->n_claimed) != 0) {
        p->begin_broke = true;
        w->held = HELD_RELEASE; /* worker_keep_trying: worth resolving */
        return -1;
    }
    place_begun(w);
    return 0;
}

/* True if the free entries are worth a claim now: a gather of them, or
 * every thread idle, or GATHER_US since the first came free. Main
 * thread. */
static bool gathered(worker *w)
{
    worker_pool *p = w->pool;
    int64_t now;
    bool busy, enough;

    pthread_mutex_lock(&p->lock);
    busy = p->n_running + p->n_waiting > 0;
    enough = p->n_free >= p->gather || p->n_free >= w->capacity;
    pthread_mutex_unlock(&p->lock);
    if (!busy || enough)
        return true;
    now = clock_us();
    if (p->free_since == 0)
        p->free_since = now;
    return now - p->free_since >= GATHER_US;
}

/* True once nothing is left to run or to finish. Lock held. */
static bool all_done(const worker_pool *p)
{
    return p->n_waiting == 0 && p->n_running == 0 && p->n_done == 0 &&
           !p->begin_broke;
}

static void lost(worker *w, const char *what)
{
    log_fields(WHARF_LOG_WARN, what,
               (log_field[]){LOG_STR("error", w->b.errstr),
                             LOG_STR("worker", w->opts->consumer)},
               2);
    broker_disconnect(&w->b);
}

/* The main thread's loop, until a stop with nothing left. */
static int main_loop(worker *w)
{
    worker_pool *p = w->pool;

    for (;;) {
        bool stopping, done;
        unsigned count = 0;

        worker_read_signals(w);
        stopping = worker_stopping(w);
        worker_count_redis(w);
        pthread_mutex_lock(&p->lock);
        if (stopping && !p->stopping) {
            p->stopping = true;
            give_back_waiting(w);
        }
        if (stopping && worker_grace_over(w) && !p->give_up) {
            p->give_up = true; /* the grace is over */
            pthread_cond_broadcast(&p->done);
            /* A claim whose begin broke: its locks expire by their TTL;
             * its entries stay pending for the replacement, or another
             * host. */
            if (p->begin_broke)
                drop_claimed(w);
        }
        done = stopping && all_done(p);
        pthread_mutex_unlock(&p->lock);
        if (done)
            return EX_OK;

        if (p->begin_broke || !stopping) {
            if (!broker_connected(&w->b)) {
                int rc = worker_connect(w);
                if (rc == -2)
                    return EX_CONFIG;
                if (rc != 0)
                    continue; /* stopped: the loop sees it */
            }
            if (p->begin_broke && release_claimed(w) != 0) {
                lost(w, "redis connection lost; reconnecting");
                continue;
            }
        }
        if (!stopping) {
            if (worker_maintain(w) != 0) {
                lost(w, "redis connection lost; reconnecting");
                continue;
            }
            worker_note_pauses(w);
            pthread_mutex_lock(&p->lock);
            if (!overrun(w))
                count = claim_count(w);
            p->claim_room = p->n_free; /* only this thread takes entries */
            pthread_mutex_unlock(&p->lock);
        }
        if (count > 0 && !gathered(w)) {
            pthread_mutex_lock(&p->lock);
            timed_wait_us(&p->freed, &p->lock,
                          p->free_since + GATHER_US - clock_us());
            pthread_mutex_unlock(&p->lock);
            continue;
        }
        if (count > 0) {
            p->free_since = 0;
            if (claim_and_begin(w, count) != 0)
                lost(w, "redis connection lost; reconnecting");
            continue;
        }
        /* Nothing to claim now (entries or threads all busy, a run past
         * its deadline, every type paused, or stopping): wait for an
         * entry to come free. */
        pthread_mutex_lock(&p->lock);
        timed_wait(&p->freed, &p->lock, MAIN_NAP_MS);
        pthread_mutex_unlock(&p->lock);
    }
}

/* ---- setup and teardown ---- */

static void pool_free(worker *w)
{
    worker_pool *p = w->pool;

    if (!p)
        return;
    for (uint32_t i = 0; p->hold && i < w->capacity; i++)
        if (p->hold[i] && p->state[i] != ENTRY_FREE)
            to_free(w, i);
    broker_destroy(&p->fb);
    free(p->threads);
    free(p->state);
    free(p->hold);
    free(p->waiting);
    free(p->free_list);
    free(p->held_of);
    free(p->running_of);
    free(p->cap_of);
    free(p->plugin_of);
    free(p->plugin_running);
    free(p->plugin_threads);
    free(p->claimed);
    free(p->claimed_at);
    free(p->fjobs);
    free(p->fat);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->freed);
    free(p);
    w->pool = NULL;
}

/* The pool for w's entries and `threads` threads, its finisher's
 * broker serving the queues of the worker's. 0, or -1 (logged). */
static int pool_create(worker *w, size_t threads)
{
    worker_pool *p = xcalloc(1, sizeof(*p));
    const loader *ld = w->ld;
    size_t nq = w->b.n_queues ? w->b.n_queues : 1;
    const char **types = xcalloc(nq, sizeof(*types));
    const policy **policies = xcalloc(nq, sizeof(*policies));
    int rc = 0;

    w->pool = p;
    pthread_mutex_init(&p->lock, NULL);
    cond_init_monotonic(&p->work);
    cond_init_monotonic(&p->done);
    cond_init_monotonic(&p->freed);
    p->state = xcalloc(w->capacity, sizeof(*p->state));
    p->hold = xcalloc(w->capacity, sizeof(*p->hold));
    p->waiting = xcalloc(w->capacity, sizeof(*p->waiting));
    p->free_list = xcalloc(w->capacity, sizeof(*p->free_list));
    for (size_t i = w->capacity; i > 0; i--)
        p->free_list[p->n_free++] = (uint32_t)(i - 1);
    p->held_of = xcalloc(nq, sizeof(*p->held_of));
    p->running_of = xcalloc(nq, sizeof(*p->running_of));
    p->cap_of = xcalloc(nq, sizeof(*p->cap_of));
    p->plugin_of = xcalloc(nq, sizeof(*p->plugin_of));
    p->plugin_running =
        xcalloc(ld->n_plugins ? ld->n_plugins : 1, sizeof(*p->plugin_running));
    p->plugin_threads =
        xcalloc(ld->n_plugins ? ld->n_plugins : 1, sizeof(*p->plugin_threads));
    for (size_t k = 0; k < ld->n_plugins; k++)
        p->plugin_threads[k] =
            ld->plugins[k].threads ? ld->plugins[k].threads : 1;
    for (size_t q = 0; q < w->b.n_queues; q++) {
        const route *r = loader_route(ld, w->b.queues[q].type);
        p->cap_of[q] = r ? loader_route_cap(r) : 1;
        p->plugin_of[q] = r ? (size_t)(r->plugin - ld->plugins) : 0;
    }
    p->claimed = xcalloc(w->capacity, sizeof(*p->claimed));
    p->claimed_at = xcalloc(w->capacity, sizeof(*p->claimed_at));
    p->fjobs = xcalloc(w->capacity, sizeof(*p->fjobs));
    p->fat = xcalloc(w->capacity, sizeof(*p->fat));
    for (size_t q = 0; q < w->b.n_queues; q++) {
        types[q] = w->b.queues[q].type;
        policies[q] = w->b.queues[q].pol;
    }
    if (broker_init(&p->fb, w->cfg, types, policies, w->b.n_queues,
                    w->opts->consumer) != 0) {
        log_msg(WHARF_LOG_ERROR, "%s", p->fb.errstr);
        rc = -1;
    }
    free(types);
    free(policies);
    p->threads = xcalloc(threads, sizeof(*p->threads));
    p->n_threads = threads;
    p->gather = threads / 4 > GATHER_MAX ? GATHER_MAX
                : threads / 4 > 0        ? threads / 4
                                         : 1;
    return rc;
}

static int pool_start(worker *w)
{
    worker_pool *p = w->pool;
    int rc;

    for (; p->n_started < p->n_threads; p->n_started++) {
        rc = pthread_create(&p->threads[p->n_started], NULL, thread_main, w);
        if (rc != 0) {
            log_fields(WHARF_LOG_ERROR, "worker: cannot start a thread",
                       (log_field[]){LOG_STR("error", strerror(rc)),
                                     LOG_INT("started", (int64_t)p->n_started),
                                     LOG_STR("worker", w->opts->consumer)},
                       3);
            return -1;
        }
    }
    rc = pthread_create(&p->finisher, NULL, finisher_main, w);
    if (rc != 0) {
        log_fields(WHARF_LOG_ERROR, "worker: cannot start its finisher",
                   (log_field[]){LOG_STR("error", strerror(rc)),
                                 LOG_STR("worker", w->opts->consumer)},
                   2);
        return -1;
    }
    p->finisher_started = true;
    return 0;
}

/* Ends every thread: the runs under way end first (a stop waits for
 * them), then the finisher sends what is left, unless given up. */
static void pool_stop(worker *w)
{
    worker_pool *p = w->pool;

    pthread_mutex_lock(&p->lock);
    p->quit = true;
    pthread_cond_broadcast(&p->work);
    pthread_cond_broadcast(&p->done);
    pthread_mutex_unlock(&p->lock);
    for (size_t i = 0; i < p->n_started; i++)
        pthread_join(p->threads[i], NULL);
    pthread_mutex_lock(&p->lock);
    pthread_cond_broadcast(&p->done);
    pthread_mutex_unlock(&p->lock);
    if (p->finisher_started)
        pthread_join(p->finisher, NULL);
    finisher_count_redis(w);
    w->other_round_trips = broker_round_trips(&p->fb);
}

int worker_threads_run(worker *w, size_t threads)
{
    int status = EX_SOFTWARE;

    if (pool_create(w, threads) != 0) {
        pool_free(w);
        return EX_SOFTWARE;
    }
    if (pool_start(w) == 0)
        status = main_loop(w);
    if (status != EX_OK) {
        /* What waits is given back, as a stop would; what runs ends, and
         * its finish is tried once (the slot keeps it for the
         * supervisor otherwise). */
        pthread_mutex_lock(&w->pool->lock);
        w->pool->stopping = true;
        w->pool->give_up = true;
        give_back_waiting(w);
        pthread_mutex_unlock(&w->pool->lock);
    }
    pool_stop(w);
    pool_free(w);
    return status;
}
