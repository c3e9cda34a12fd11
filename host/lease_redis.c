/* The lease keeper's Redis thread (lease_internal.h), with a connection
 * of its own: it takes a reload's manifest, renews every published batch
 * when due (one call per worker and type), retrying a failed renewal at
 * once, records how much time each lease had left (the margins of
 * /metrics), and refreshes the instance name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock_ms.h"
#include "lease_internal.h"
#include "log.h"
#include "run.h"
#include "tls.h"
#include "xmalloc.h"

static int64_t shortest_lease_ms(const policy *pol)
{
    return pol->lock_ttl_ms < pol->visibility_timeout_ms
               ? pol->lock_ttl_ms
               : pol->visibility_timeout_ms;
}

/* Takes a new manifest: a broker for its types (connected on the next
 * pass), the renewal period and what the clock thread needs of each type.
 * Redis thread or start only, under the mutex. */
void lease_apply_config(lease_keeper *k, const config *cfg,
                        const char *const *types, const policy *const *policies,
                        size_t n)
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

void lease_free_args(lease_keeper *k)
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
    lease_free_args(k);
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
                w->renewed_ms[i] = sent_ms;
        } else if (k->ttl[j] == -2 && same &&
                   lease_matters(fresh, (uint32_t)i) && !w->lost[i]) {
            lease_note_lost(k, w, fresh, (uint32_t)i, 0,
                            "its lock no longer holds the run's token", now);
        }
    }
}

/* The renewals of the pass just made count (keep) or not: a lock's
 * lease runs from the last renewal confirmed. Mutex held. */
static void confirm_renewals(lease_keeper *k, bool keep)
{
    for (size_t wi = 0; wi < k->n_workers; wi++) {
        keeper_worker *w = &k->workers[wi];
        for (size_t i = 0; w->renewed_ms && i < w->cap; i++) {
            if (keep && w->renewed_ms[i] > w->confirmed_ms[i])
                w->confirmed_ms[i] = w->renewed_ms[i];
            w->renewed_ms[i] = 0;
        }
    }
}

/* One renew call for every published batch and type. -1 when the
 * connection failed. */
static int renew_calls(lease_keeper *k)
{
    pthread_mutex_lock(&k->lock);
    for (size_t wi = 0; wi < k->n_workers; wi++)
        lease_snapshot(&k->copies[wi], &k->workers[wi]);
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

/* One renewal of every published batch, confirmed as a lock's lease only
 * once it is safe: with min_replicas_ack, after one WAIT for the whole
 * pass. A renewal the master took but no replica has may be lost with
 * the master; and after a Sentinel switchover the old master goes on
 * answering for seconds, taking renewals that its demotion throws away,
 * while the locks run out on the new one. The WAIT's timeout is kept
 * under the connection's, and a short WAIT there is how the move is
 * seen: the pass fails, and is sent again at once on a new connection,
 * to the new master. Without min_replicas_ack a renewal counts once the
 * master answered, as the finish's write does. -1 when the connection
 * failed (the caller retries). */
static int renew_all(lease_keeper *k)
{
    int rc = renew_calls(k);
    bool waits = k->b.cfg->min_replicas_ack > 0;

    if (rc == 0 && waits &&
        broker_wait_replicas(&k->b, "renew",
                             k->b.timeout_ms / 2 < 50 ? 50
                                                      : k->b.timeout_ms / 2) !=
            0)
        rc = -1;
    pthread_mutex_lock(&k->lock);
    confirm_renewals(k, rc == 0 || !waits);
    pthread_mutex_unlock(&k->lock);
    return rc;
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

static bool keeper_connect(lease_keeper *k, int64_t now)
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
    if (!keeper_connect(k, now))
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

void *lease_redis_main(void *arg)
{
    lease_keeper *k = arg;

    lease_thread_entered(k);
    while (!atomic_load(&k->stop)) {
        int64_t now, next;

        lease_gate_enter();
        pthread_mutex_lock(&k->lock);
        if (k->pending) {
            lease_apply_config(k, k->next_cfg, k->next_types, k->next_policies,
                               k->next_n);
            k->pending = false;
            pthread_cond_broadcast(&k->applied);
        }
        pthread_mutex_unlock(&k->lock);
        redis_work(k, clock_ms());
        /* Between passes the supervisor may fork a worker: this thread
         * then holds no OpenSSL state of its own that the worker would
         * inherit without the thread that owns it. */
        tls_thread_idle();
        lease_gate_leave();
        now = clock_ms();
        next = k->next_renew_ms < k->next_heartbeat_ms ? k->next_renew_ms
                                                       : k->next_heartbeat_ms;
        if (!broker_connected(&k->b) && k->reconnect_at_ms > next)
            next = k->reconnect_at_ms;
        if (!k->b_ready)
            next = now + 1000; /* a bad URL: nothing to do until a reload */
        if (next > now)
            lease_nap(k, next - now, true);
    }
    return NULL;
}
