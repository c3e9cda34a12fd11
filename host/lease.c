/* The lease keeper; see lease.h. Two threads that share one mutex, never
 * held across a Redis call:
 *  - the clock thread, which talks to no one: every 50 ms it copies each
 *    worker's slot, enforces the runs' deadlines and notices leases that
 *    went a whole TTL unrenewed, so a Redis that hangs delays none of it;
 *  - the Redis thread, with a connection of its own: it renews every
 *    published batch when due (one call per worker and type), retrying a
 *    failed renewal at once, records how much time each lease had left,
 *    and refreshes the instance name. */
#define _GNU_SOURCE /* pthread_condattr_setclock */
#include "lease.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "broker.h"
#include "clock_ms.h"
#include "log.h"
#include "run.h"

#define KEEPER_TICK_MS 50

/* Forks wait for the keeper's threads to be between passes (readers of
 * this gate while they work): a child forked in the middle of a pass
 * would hold memory only a thread it does not have points to (a
 * connection being made, a reply being read), which is a leak to
 * LeakSanitizer and nothing anyone could free. The wait is one pass at
 * most: microseconds, or a Redis command's timeout while Redis hangs.
 * A thread's start is outside any pass and allocates too (the C library
 * and a sanitizer's allocator set the thread up), so lease_keeper_start
 * returns only once both threads are past it (thread_entered): a child
 * forked in that start would inherit the allocator's lock held and hang
 * in its first malloc or at exit. */
static pthread_rwlock_t fork_gate;
static pthread_once_t fork_gate_once = PTHREAD_ONCE_INIT;
static atomic_int keepers_running;

static void gate_init(void)
{
    pthread_rwlockattr_t attr;

    pthread_rwlockattr_init(&attr);
    /* A fork waiting is not starved by the two readers taking turns. */
    pthread_rwlockattr_setkind_np(&attr,
                                  PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&fork_gate, &attr);
    pthread_rwlockattr_destroy(&attr);
}

static void before_fork(void)
{
    if (atomic_load(&keepers_running) > 0)
        pthread_rwlock_wrlock(&fork_gate);
}

static void after_fork_parent(void)
{
    if (atomic_load(&keepers_running) > 0)
        pthread_rwlock_unlock(&fork_gate);
}

/* The child has no keeper threads: its forks need not wait for any. */
static void after_fork_child(void)
{
    atomic_store(&keepers_running, 0);
    gate_init();
}

static void register_fork_gate(void)
{
    gate_init();
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}
/* The margin shown in /metrics is the least seen over this window (two
 * halves, so it neither forgets a dip at once nor keeps it forever). */
#define MARGIN_HALF_WINDOW_MS 30000

/* A worker as the supervisor attached it, and what is known of the
 * locks of its batch; under the mutex. */
typedef struct keeper_worker {
    unsigned gen; /* counts attaches: tells a new worker from the last */
    pid_t pid;    /* 0: none */
    slot *sl;
    const char *consumer;
    int64_t forked_ms;
    int64_t cancel_sent_ms; /* a request to end run cancel_run, or 0 */
    uint32_t cancel_run;
    bool retired; /* asked to stop: a lease of its batch was lost */
    lease_end end;
    unsigned leases_gen; /* the attach the arrays below follow */
    size_t cap;
    char (*tokens)[SLOT_TOKEN_MAX]; /* the lock each index is known by */
    int64_t *confirmed_ms;          /* when a renewal that kept it was sent */
    bool *lost;                     /* reported lost already */
} keeper_worker;

/* A thread's own copy of a worker's slot. */
typedef struct copy {
    unsigned gen; /* the attach it was made of */
    bool have;    /* a consistent copy of this pass */
    const char *consumer;
    slot *snap;
    size_t room;
} copy;

/* What the clock thread knows of a served type; under the mutex. */
typedef struct lease_type {
    char type[SLOT_TYPE_MAX];
    int64_t shortest_ms; /* the shorter of lock_ttl, visibility_timeout */
    int ti;              /* metrics index, or -1 */
} lease_type;

/* The least margin of a type over the window (Redis thread). */
typedef struct margin {
    int64_t now_min, last_min; /* -1: none in that half */
} margin;

struct lease_keeper {
    pthread_t thread, clock_thread;
    bool started, clock_started;
    bool counted; /* in keepers_running */
    pthread_mutex_t lock;
    pthread_cond_t wake;    /* a stop or a reload for the thread */
    pthread_cond_t applied; /* a reload taken or a thread started */
    int threads_in;         /* threads past their start, under the mutex */
    atomic_bool stop;
    atomic_bool instance_lost;
    atomic_bool connected;

    /* Under the mutex. */
    keeper_worker *workers;
    size_t n_workers;
    lease_type *types;
    size_t n_types;
    int64_t init_timeout_ms;
    bool pending; /* next_* wait to be taken */
    const config *next_cfg;
    const char *const *next_types;
    const policy *const *next_policies;
    size_t next_n;

    /* The clock thread's own. */
    copy *clock_copies;

    /* The Redis thread's own. */
    broker b;
    bool b_ready;
    copy *copies;
    margin *margins; /* one per broker queue */
    int64_t margin_half_ms;
    int64_t every_ms; /* renew period */
    int64_t next_renew_ms, next_heartbeat_ms, reconnect_at_ms;
    int64_t retry_delay_ms;
    bool down_logged;
    char consumer[300];
    const char *instance_key, *instance_value;
    metrics *m;
    slot *fresh; /* a copy made when a renewal's answer comes */
    size_t fresh_room;
    /* Renew call arguments, grown as needed. */
    const char **entry_ids, **ids, **tokens;
    int64_t *idle, *ttl;
    size_t *index;
    size_t room;
};

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);

    if (!p) {
        log_msg(WHARF_LOG_ERROR, "lease keeper: out of memory");
        abort();
    }
    return p;
}

static int64_t shortest_lease_ms(const policy *pol)
{
    return pol->lock_ttl_ms < pol->visibility_timeout_ms
               ? pol->lock_ttl_ms
               : pol->visibility_timeout_ms;
}

/* Takes a new manifest: a broker for its types (connected on the next
 * pass), the renewal period and what the clock thread needs of each type.
 * Redis thread or start only, under the mutex. */
static void apply_config(lease_keeper *k, const config *cfg,
                         const char *const *types,
                         const policy *const *policies, size_t n)
{
    int64_t every = INT64_MAX, shortest = INT64_MAX;

    broker_destroy(&k->b);
    atomic_store(&k->connected, false);
    k->init_timeout_ms = cfg->init_timeout_ms;
    k->b_ready = broker_init(&k->b, cfg, types, policies, n, k->consumer) == 0;
    if (!k->b_ready)
        log_msg(WHARF_LOG_ERROR, "lease keeper: %s", k->b.errstr);
    free(k->types);
    k->types = xcalloc(n, sizeof(*k->types));
    k->n_types = n;
    for (size_t i = 0; i < n; i++) {
        int64_t s = shortest_lease_ms(policies[i]);
        lease_type *lt = &k->types[i];
        snprintf(lt->type, sizeof(lt->type), "%s", types[i]);
        lt->shortest_ms = s;
        lt->ti = metrics_type_find(k->m, types[i]);
        if (lt->ti >= 0)
            atomic_store(&k->m->types[lt->ti].lease_ttl_ms, s);
        if (s < shortest)
            shortest = s;
        if (s / RUN_RENEWALS_PER_TTL < every)
            every = s / RUN_RENEWALS_PER_TTL;
    }
    k->every_ms = every < KEEPER_TICK_MS ? KEEPER_TICK_MS : every;
    /* A renewal that waits longer than a quarter of the shortest lease
     * for its answer is given up and sent again on a new connection. */
    k->b.timeout_ms = RUN_SUPERVISOR_REDIS_TIMEOUT_MS;
    if (shortest != INT64_MAX && shortest / 4 < k->b.timeout_ms)
        k->b.timeout_ms = (int)(shortest / 4 < 100 ? 100 : shortest / 4);
    free(k->margins);
    k->margins = xcalloc(k->b.n_queues, sizeof(*k->margins));
    for (size_t i = 0; i < k->b.n_queues; i++)
        k->margins[i].now_min = k->margins[i].last_min = -1;
    k->next_renew_ms = 0;
    k->reconnect_at_ms = 0;
}

/* What the clock thread knows of type, or NULL. Mutex held. */
static const lease_type *type_of(const lease_keeper *k, const char *type)
{
    for (size_t i = 0; i < k->n_types; i++)
        if (strcmp(k->types[i].type, type) == 0)
            return &k->types[i];
    return NULL;
}

/* ---- with the mutex held ---- */

/* Copies w's slot into c; brings what w knows of its locks in line (a
 * new attach forgets the last worker's; a lock not seen before lives
 * lock_ttl from its begin). */
static void snapshot(copy *c, keeper_worker *w)
{
    size_t size;

    c->have = false;
    if (w->pid <= 0 || !w->sl)
        return;
    size = slot_size(w->sl);
    if (w->leases_gen != w->gen || w->cap != w->sl->capacity) {
        w->leases_gen = w->gen;
        w->cap = w->sl->capacity;
        free(w->tokens);
        free(w->confirmed_ms);
        free(w->lost);
        w->tokens = xcalloc(w->cap, sizeof(*w->tokens));
        w->confirmed_ms = xcalloc(w->cap, sizeof(*w->confirmed_ms));
        w->lost = xcalloc(w->cap, sizeof(*w->lost));
    }
    if (c->room < size) {
        free(c->snap);
        c->snap = xcalloc(1, size);
        c->room = size;
    }
    c->gen = w->gen;
    c->consumer = w->consumer;
    if (slot_read(w->sl, c->snap) != 0)
        return;
    for (uint32_t i = 0; i < c->snap->batch_n && i < w->cap; i++) {
        const slot_task *task = &c->snap->batch[i];
        if (strcmp(w->tokens[i], task->token) != 0) {
            snprintf(w->tokens[i], sizeof(w->tokens[i]), "%s", task->token);
            w->confirmed_ms[i] = task->locked_ms;
            w->lost[i] = false;
        }
    }
    c->have = true;
}

/* True if task i of the copy is one whose lock a lost lease endangers:
 * locked, its plugin not yet returned, the batch's finish not yet sent. */
static bool lease_matters(const slot *snap, uint32_t i)
{
    return i < snap->batch_n && snap->batch[i].token[0] &&
           snap->batch[i].ret.finish == 0 && !snap->finishing;
}

/* Asks w's run (of the copy in snap) to end: its deadline passed, or its
 * lease was lost. */
static void ask_to_end(keeper_worker *w, const slot *snap, int64_t now,
                       int64_t timeout_ms, bool lease_lost)
{
    const slot_task *t = slot_running_task(snap);

    snprintf(w->end.entry, sizeof(w->end.entry), "%s", t ? t->entry_id : "");
    w->end.timeout_ms = timeout_ms;
    w->end.lease_lost = lease_lost;
    w->cancel_sent_ms = now;
    w->cancel_run = snap->run;
    if (lease_lost)
        atomic_store(&w->sl->lease_lost, snap->run); /* before cancel */
    atomic_store(&w->sl->cancel, snap->run);
}

/* Task i of w's batch (as snap shows it) lost its lease (why): says so
 * once, counts it, asks its run to end if it is under way, and asks the
 * worker to stop after it, so the rest of its batch goes back unrun and
 * its replacement begins them anew with fresh locks. */
static void lease_lost(lease_keeper *k, keeper_worker *w, const slot *snap,
                       uint32_t i, int64_t margin_ms, const char *why,
                       int64_t now)
{
    const slot_task *task = &snap->batch[i];
    const slot_task *running = slot_running_task(snap);
    const lease_type *lt = type_of(k, task->type);

    w->lost[i] = true;
    if (lt && lt->ti >= 0)
        atomic_fetch_add(&k->m->types[lt->ti].leases_lost, 1);
    log_fields(
        WHARF_LOG_ERROR, "lease lost",
        (log_field[]){LOG_STR("task", task->id), LOG_STR("type", task->type),
                      LOG_INT("margin_ms", margin_ms), LOG_STR("why", why),
                      LOG_STR("worker", w->consumer)},
        5);
    if (running == task && !w->cancel_sent_ms)
        ask_to_end(w, snap, now, 0, true);
    w->retired = true;
    atomic_store(&w->sl->stop, 1);
}

/* The deadlines of w's run, as the copy shows it, and the leases that ran
 * out while no renewal could be made. Clock thread. */
static void enforce(lease_keeper *k, keeper_worker *w, const slot *snap,
                    int64_t now)
{
    const slot_task *running;

    if (w->end.killed)
        return;
    if (snap->state == SLOT_EMPTY) {
        if (now - w->forked_ms > k->init_timeout_ms) {
            log_fields(
                WHARF_LOG_ERROR,
                "worker still loading its plugins after "
                "init_timeout; killing it",
                (log_field[]){LOG_INT("init_timeout_ms", k->init_timeout_ms),
                              LOG_STR("worker", w->consumer)},
                2);
            kill(w->pid, SIGKILL);
            w->end.killed = true;
        }
        return;
    }
    for (uint32_t i = 0; i < snap->batch_n && i < w->cap; i++) {
        const lease_type *lt;
        int64_t unrenewed;
        if (!lease_matters(snap, i) || w->lost[i] ||
            !(lt = type_of(k, snap->batch[i].type)))
            continue;
        unrenewed = now - w->confirmed_ms[i];
        if (unrenewed >= lt->shortest_ms) {
            char why[128];
            snprintf(why, sizeof(why),
                     "not renewed for %" PRId64 " ms (Redis unreachable)",
                     unrenewed);
            lease_lost(k, w, snap, i, lt->shortest_ms - unrenewed, why, now);
        }
    }
    if (w->cancel_sent_ms) {
        if (snap->state != SLOT_RUNNING || snap->run != w->cancel_run) {
            w->cancel_sent_ms = 0; /* it ended that run itself */
        } else if (now - w->cancel_sent_ms >= RUN_KILL_GRACE_MS) {
            log_fields(WHARF_LOG_WARN,
                       "task ignored its cancel request; "
                       "killing its worker",
                       (log_field[]){LOG_STR("worker", w->consumer)}, 1);
            kill(w->pid, SIGKILL);
            w->end.killed = true;
        }
        return;
    }
    running = slot_running_task(snap);
    if (running && now - snap->started_ms > snap->timeout_ms) {
        ask_to_end(w, snap, now, snap->timeout_ms, false);
        log_fields(WHARF_LOG_WARN,
                   "task ran past its timeout; asking it to end",
                   (log_field[]){LOG_STR("task", running->id),
                                 LOG_STR("type", running->type),
                                 LOG_INT("timeout_ms", snap->timeout_ms),
                                 LOG_STR("worker", w->consumer)},
                   4);
    }
}

/* Sleeps on k->wake until ms from now, a stop, or (for the Redis thread)
 * a reload. */
static void nap(lease_keeper *k, int64_t ms, bool for_reload)
{
    struct timespec until;

    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&k->lock);
    if (!(for_reload && k->pending) && !atomic_load(&k->stop))
        pthread_cond_timedwait(&k->wake, &k->lock, &until);
    pthread_mutex_unlock(&k->lock);
}

/* Each thread's first step: lease_keeper_start waits for both. */
static void thread_entered(lease_keeper *k)
{
    pthread_mutex_lock(&k->lock);
    k->threads_in++;
    pthread_cond_broadcast(&k->applied);
    pthread_mutex_unlock(&k->lock);
}

static void *clock_main(void *arg)
{
    lease_keeper *k = arg;

    thread_entered(k);
    while (!atomic_load(&k->stop)) {
        int64_t now;
        pthread_rwlock_rdlock(&fork_gate);
        now = clock_ms();
        pthread_mutex_lock(&k->lock);
        for (size_t i = 0; i < k->n_workers; i++) {
            snapshot(&k->clock_copies[i], &k->workers[i]);
            if (k->clock_copies[i].have)
                enforce(k, &k->workers[i], k->clock_copies[i].snap, now);
        }
        pthread_mutex_unlock(&k->lock);
        pthread_rwlock_unlock(&fork_gate);
        nap(k, KEEPER_TICK_MS, false);
    }
    return NULL;
}

/* ---- renewals (the Redis thread) ---- */

static void free_args(lease_keeper *k)
{
    free(k->entry_ids);
    free(k->ids);
    free(k->tokens);
    free(k->idle);
    free(k->ttl);
    free(k->index);
}

static void grow_args(lease_keeper *k, size_t n)
{
    if (n <= k->room)
        return;
    free_args(k);
    k->room = n;
    k->entry_ids = xcalloc(n, sizeof(*k->entry_ids));
    k->ids = xcalloc(n, sizeof(*k->ids));
    k->tokens = xcalloc(n, sizeof(*k->tokens));
    k->idle = xcalloc(n, sizeof(*k->idle));
    k->ttl = xcalloc(n, sizeof(*k->ttl));
    k->index = xcalloc(n, sizeof(*k->index));
}

static void note_margin(lease_keeper *k, size_t qi, int64_t margin_ms)
{
    margin *mg = &k->margins[qi];

    if (margin_ms < 0)
        margin_ms = 0;
    if (mg->now_min < 0 || margin_ms < mg->now_min)
        mg->now_min = margin_ms;
}

/* Publishes the margins and turns the window when its half is over. */
static void publish_margins(lease_keeper *k, int64_t now)
{
    bool turn = now - k->margin_half_ms >= MARGIN_HALF_WINDOW_MS;

    for (size_t i = 0; i < k->b.n_queues; i++) {
        margin *mg = &k->margins[i];
        int ti = metrics_type_find(k->m, k->b.queues[i].type);
        int64_t least = mg->now_min;
        if (mg->last_min >= 0 && (least < 0 || mg->last_min < least))
            least = mg->last_min;
        if (ti >= 0 && least >= 0) {
            atomic_store(&k->m->types[ti].lease_margin_ms, least);
            atomic_store(&k->m->types[ti].lease_margin_known, 1);
        }
        if (turn) {
            mg->last_min = mg->now_min;
            mg->now_min = -1;
        }
    }
    if (turn)
        k->margin_half_ms = now;
}

/* The outcome of one renew call for the n tasks of queue qi of worker
 * wi (k->index maps them to batch indexes), sent at sent_ms. Mutex held. */
static void renewed(lease_keeper *k, size_t wi, size_t qi, size_t n,
                    int64_t sent_ms, int64_t now)
{
    keeper_worker *w = &k->workers[wi];
    int64_t vt = k->b.queues[qi].pol->visibility_timeout_ms;
    slot *fresh;
    bool have;

    if (k->copies[wi].gen != w->gen || w->pid <= 0 || !w->sl)
        return; /* that worker is gone */
    /* What it does now, not when the call was sent. */
    if (k->fresh_room < slot_size(w->sl)) {
        free(k->fresh);
        k->fresh_room = slot_size(w->sl);
        k->fresh = xcalloc(1, k->fresh_room);
    }
    fresh = k->fresh;
    have = slot_read(w->sl, fresh) == 0;
    for (size_t j = 0; j < n; j++) {
        size_t i = k->index[j];
        bool same = have && i < fresh->batch_n && i < w->cap &&
                    strcmp(fresh->batch[i].token, k->tokens[j]) == 0 &&
                    strcmp(fresh->batch[i].entry_id, k->entry_ids[j]) == 0;
        if (k->idle[j] >= 0)
            note_margin(k, qi, vt - k->idle[j]);
        if (k->ttl[j] >= 0) {
            note_margin(k, qi, k->ttl[j]);
            if (same && strcmp(w->tokens[i], k->tokens[j]) == 0)
                w->confirmed_ms[i] = sent_ms;
        } else if (k->ttl[j] == -2 && same &&
                   lease_matters(fresh, (uint32_t)i) && !w->lost[i]) {
            lease_lost(k, w, fresh, (uint32_t)i, 0,
                       "its lock no longer holds the run's token", now);
        }
    }
}

/* One renewal of every published batch. -1 when the connection failed
 * (the caller retries). */
static int renew_all(lease_keeper *k)
{
    pthread_mutex_lock(&k->lock);
    for (size_t wi = 0; wi < k->n_workers; wi++)
        snapshot(&k->copies[wi], &k->workers[wi]);
    pthread_mutex_unlock(&k->lock);
    for (size_t wi = 0; wi < k->n_workers; wi++) {
        copy *c = &k->copies[wi];
        if (!c->have || c->snap->batch_n == 0)
            continue;
        grow_args(k, c->snap->batch_n);
        for (size_t qi = 0; qi < k->b.n_queues; qi++) {
            broker_queue *q = &k->b.queues[qi];
            size_t n = 0;
            int64_t sent;
            long rc;
            for (uint32_t i = 0; i < c->snap->batch_n; i++) {
                const slot_task *task = &c->snap->batch[i];
                if (strcmp(task->type, q->type) != 0)
                    continue;
                k->entry_ids[n] = task->entry_id;
                k->ids[n] = task->id;
                k->tokens[n] = task->token;
                k->index[n++] = i;
            }
            if (n == 0)
                continue;
            sent = clock_ms();
            rc = broker_renew(&k->b, q, c->consumer, k->entry_ids, k->ids,
                              k->tokens, n, k->idle, k->ttl);
            atomic_fetch_add(
                &k->m->lease_renewals[rc < 0 ? LEASE_FAILED : LEASE_RENEWED],
                1);
            if (rc < 0)
                return -1;
            pthread_mutex_lock(&k->lock);
            renewed(k, wi, qi, n, sent, clock_ms());
            pthread_mutex_unlock(&k->lock);
        }
    }
    return 0;
}

static void connection_failed(lease_keeper *k, const char *what, int64_t now)
{
    if (!k->down_logged) {
        log_fields(WHARF_LOG_WARN,
                   "lease keeper: redis command failed; "
                   "retrying at once",
                   (log_field[]){LOG_STR("during", what),
                                 LOG_STR("error", k->b.errstr)},
                   2);
        k->down_logged = true;
    }
    broker_disconnect(&k->b);
    atomic_store(&k->connected, false);
    /* The first retry at once, then quickly: a lease has at most two
     * renewal periods left. */
    k->reconnect_at_ms = now + k->retry_delay_ms;
    k->next_renew_ms = k->reconnect_at_ms;
    k->retry_delay_ms = k->retry_delay_ms == 0 ? 50 : k->retry_delay_ms * 2;
    if (k->retry_delay_ms > k->every_ms / 2)
        k->retry_delay_ms = k->every_ms / 2;
}

static bool ensure_connected(lease_keeper *k, int64_t now)
{
    if (broker_connected(&k->b))
        return true;
    if (!k->b_ready || now < k->reconnect_at_ms)
        return false;
    if (broker_connect(&k->b) != 0) {
        connection_failed(k, "connecting", now);
        return false;
    }
    atomic_store(&k->connected, true);
    if (k->down_logged)
        log_msg(WHARF_LOG_INFO, "lease keeper: redis reachable again");
    k->down_logged = false;
    return true;
}

/* Redis work that is due: the instance name, then the renewals. */
static void redis_work(lease_keeper *k, int64_t now)
{
    if (now < k->next_heartbeat_ms && now < k->next_renew_ms)
        return;
    if (!ensure_connected(k, now))
        return;
    if (now >= k->next_heartbeat_ms && k->instance_key) {
        int held = broker_heartbeat(&k->b, k->instance_key, k->instance_value,
                                    RUN_INSTANCE_TTL_MS);
        if (held < 0) {
            connection_failed(k, "heartbeat", now);
            return;
        }
        if (held == 0)
            atomic_store(&k->instance_lost, true);
        k->next_heartbeat_ms = now + RUN_INSTANCE_EVERY_MS;
    }
    if (now >= k->next_renew_ms) {
        if (renew_all(k) != 0) {
            connection_failed(k, "renewing leases", clock_ms());
            return;
        }
        k->retry_delay_ms = 0;
        k->next_renew_ms = now + k->every_ms;
        publish_margins(k, clock_ms());
    }
}

static void *keeper_main(void *arg)
{
    lease_keeper *k = arg;

    thread_entered(k);
    while (!atomic_load(&k->stop)) {
        int64_t now, next;

        pthread_rwlock_rdlock(&fork_gate);
        pthread_mutex_lock(&k->lock);
        if (k->pending) {
            apply_config(k, k->next_cfg, k->next_types, k->next_policies,
                         k->next_n);
            k->pending = false;
            pthread_cond_broadcast(&k->applied);
        }
        pthread_mutex_unlock(&k->lock);
        redis_work(k, clock_ms());
        pthread_rwlock_unlock(&fork_gate);
        now = clock_ms();
        next = k->next_renew_ms < k->next_heartbeat_ms ? k->next_renew_ms
                                                       : k->next_heartbeat_ms;
        if (!broker_connected(&k->b) && k->reconnect_at_ms > next)
            next = k->reconnect_at_ms;
        if (!k->b_ready)
            next = now + 1000; /* a bad URL: nothing to do until a reload */
        if (next > now)
            nap(k, next - now, true);
    }
    return NULL;
}

/* ---- the supervisor's side ---- */

lease_keeper *lease_keeper_start(const config *cfg, const char *const *types,
                                 const policy *const *policies, size_t n_types,
                                 size_t n_workers, const char *consumer,
                                 const char *instance_key,
                                 const char *instance_value, metrics *m,
                                 char *err, size_t errlen)
{
    lease_keeper *k = xcalloc(1, sizeof(*k));
    pthread_condattr_t attr;
    sigset_t all, old;
    int rc;

    pthread_once(&fork_gate_once, register_fork_gate);
    pthread_mutex_init(&k->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&k->wake, &attr);
    pthread_condattr_destroy(&attr);
    pthread_cond_init(&k->applied, NULL);
    k->n_workers = n_workers;
    k->workers = xcalloc(n_workers, sizeof(*k->workers));
    k->copies = xcalloc(n_workers, sizeof(*k->copies));
    k->clock_copies = xcalloc(n_workers, sizeof(*k->clock_copies));
    k->m = m;
    k->instance_key = instance_key;
    k->instance_value = instance_value;
    snprintf(k->consumer, sizeof(k->consumer), "%s:leases", consumer);
    k->margin_half_ms = clock_ms();
    /* The instance key was just taken: the next refresh is due in a
     * second, as it would be on the loop that took it. */
    k->next_heartbeat_ms = clock_ms() + RUN_INSTANCE_EVERY_MS;
    apply_config(k, cfg, types, policies, n_types);
    /* Signals are the supervisor thread's (its self-pipe): this one
     * blocks them all. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    atomic_fetch_add(&keepers_running, 1);
    k->counted = true;
    rc = pthread_create(&k->thread, NULL, keeper_main, k);
    k->started = rc == 0;
    if (rc == 0) {
        rc = pthread_create(&k->clock_thread, NULL, clock_main, k);
        k->clock_started = rc == 0;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the lease keeper: %s",
                 strerror(rc));
        lease_keeper_stop(k);
        return NULL;
    }
    /* No fork before both threads are past their start (the gate's
     * comment says why). */
    pthread_mutex_lock(&k->lock);
    while (k->threads_in < 2)
        pthread_cond_wait(&k->applied, &k->lock);
    pthread_mutex_unlock(&k->lock);
    return k;
}

void lease_keeper_stop(lease_keeper *k)
{
    if (!k)
        return;
    pthread_mutex_lock(&k->lock);
    atomic_store(&k->stop, true);
    pthread_cond_broadcast(&k->wake);
    pthread_mutex_unlock(&k->lock);
    if (k->started)
        pthread_join(k->thread, NULL);
    if (k->clock_started)
        pthread_join(k->clock_thread, NULL);
    if (k->counted)
        atomic_fetch_sub(&keepers_running, 1);
    broker_destroy(&k->b);
    for (size_t i = 0; i < k->n_workers; i++) {
        free(k->copies[i].snap);
        free(k->clock_copies[i].snap);
        free(k->workers[i].tokens);
        free(k->workers[i].confirmed_ms);
        free(k->workers[i].lost);
    }
    free(k->copies);
    free(k->clock_copies);
    free(k->types);
    free(k->workers);
    free(k->margins);
    free(k->fresh);
    free_args(k);
    pthread_cond_destroy(&k->wake);
    pthread_cond_destroy(&k->applied);
    pthread_mutex_destroy(&k->lock);
    free(k);
}

void lease_keeper_configure(lease_keeper *k, const config *cfg,
                            const char *const *types,
                            const policy *const *policies, size_t n_types)
{
    pthread_mutex_lock(&k->lock);
    k->next_cfg = cfg;
    k->next_types = types;
    k->next_policies = policies;
    k->next_n = n_types;
    k->pending = true;
    pthread_cond_broadcast(&k->wake);
    while (k->pending)
        pthread_cond_wait(&k->applied, &k->lock);
    pthread_mutex_unlock(&k->lock);
}

void lease_keeper_attach(lease_keeper *k, size_t index, pid_t pid, slot *sl,
                         const char *consumer, int64_t forked_ms)
{
    keeper_worker *w;

    if (!k || index >= k->n_workers)
        return;
    pthread_mutex_lock(&k->lock);
    w = &k->workers[index];
    w->gen++;
    w->pid = pid;
    w->sl = sl;
    w->consumer = consumer;
    w->forked_ms = forked_ms;
    w->cancel_sent_ms = 0;
    w->cancel_run = 0;
    w->retired = false;
    memset(&w->end, 0, sizeof(w->end));
    pthread_mutex_unlock(&k->lock);
}

void lease_keeper_detach(lease_keeper *k, size_t index, lease_end *end)
{
    keeper_worker *w;

    memset(end, 0, sizeof(*end));
    if (!k || index >= k->n_workers)
        return;
    pthread_mutex_lock(&k->lock);
    w = &k->workers[index];
    if (w->pid > 0)
        *end = w->end;
    w->pid = 0;
    w->sl = NULL;
    pthread_mutex_unlock(&k->lock);
}

bool lease_keeper_cancel(lease_keeper *k, size_t index, uint32_t run,
                         const char *entry_id)
{
    keeper_worker *w;
    bool asked = false;

    if (!k || index >= k->n_workers)
        return false;
    pthread_mutex_lock(&k->lock);
    w = &k->workers[index];
    if (w->pid > 0 && w->sl && !w->cancel_sent_ms && !w->end.killed) {
        snprintf(w->end.entry, sizeof(w->end.entry), "%s", entry_id);
        w->end.timeout_ms = 0;
        w->end.lease_lost = false;
        w->cancel_sent_ms = clock_ms();
        w->cancel_run = run;
        /* Before cancel: a worker that sees cancel reads it next. */
        atomic_store(&w->sl->cancel_requested, run);
        atomic_store(&w->sl->cancel, run);
        asked = true;
    }
    pthread_mutex_unlock(&k->lock);
    return asked;
}

bool lease_keeper_retired(lease_keeper *k, size_t index)
{
    bool retired;

    if (!k || index >= k->n_workers)
        return false;
    pthread_mutex_lock(&k->lock);
    retired = k->workers[index].retired;
    pthread_mutex_unlock(&k->lock);
    return retired;
}

bool lease_keeper_instance_lost(lease_keeper *k)
{
    return k && atomic_load(&k->instance_lost);
}

bool lease_keeper_connected(lease_keeper *k)
{
    return k && atomic_load(&k->connected);
}
