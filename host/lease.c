/* The lease keeper; see lease.h. Two threads that share one mutex, never
 * held across a Redis call:
 *  - the clock thread (lease_clock.c), which talks to no one: every 50 ms
 *    it copies each worker's slot, enforces the runs' deadlines and
 *    notices leases that went a whole TTL unrenewed, so a Redis that
 *    hangs delays none of it;
 *  - the Redis thread (lease_redis.c), with a connection of its own: it
 *    renews every published batch when due (one call per worker and
 *    type), retrying a failed renewal at once, records how much time each
 *    lease had left, and refreshes the instance name.
 * Forks wait for both to be between passes (lease_sync.c says why).
 * This file is the supervisor's side: it starts and stops the threads
 * and tells them which worker owns which slot; lease_internal.h names
 * the rest. */
#define _GNU_SOURCE /* pthread_condattr_setclock */
#include "lease.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock_ms.h"
#include "lease_internal.h"
#include "run.h"
#include "xmalloc.h"

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

    lease_gate_setup();
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
    lease_apply_config(k, cfg, types, policies, n_types);
    /* Signals are the supervisor thread's (its self-pipe): this one
     * blocks them all. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    lease_gate_keeper_started();
    k->counted = true;
    rc = pthread_create(&k->thread, NULL, lease_redis_main, k);
    k->started = rc == 0;
    if (rc == 0) {
        rc = pthread_create(&k->clock_thread, NULL, lease_clock_main, k);
        k->clock_started = rc == 0;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the lease keeper: %s",
                 strerror(rc));
        lease_keeper_stop(k);
        return NULL;
    }
    /* No fork before both threads are past their start (lease_sync.c
     * says why). */
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
        lease_gate_keeper_stopped();
    broker_destroy(&k->b);
    for (size_t i = 0; i < k->n_workers; i++) {
        free(k->copies[i].snap);
        free(k->clock_copies[i].snap);
        free(k->workers[i].tokens);
        free(k->workers[i].confirmed_ms);
        free(k->workers[i].renewed_ms);
        free(k->workers[i].lost);
        free(k->workers[i].asked_ms);
        free(k->workers[i].asked_run);
    }
    free(k->copies);
    free(k->clock_copies);
    free(k->types);
    free(k->workers);
    free(k->margins);
    free(k->fresh);
    lease_free_args(k);
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
    w->retired = false;
    memset(&w->end, 0, sizeof(w->end));
    lease_fit(w);
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

bool lease_keeper_cancel(lease_keeper *k, size_t index, uint32_t at,
                         uint32_t run)
{
    keeper_worker *w;
    bool asked = false;

    if (!k || index >= k->n_workers)
        return false;
    pthread_mutex_lock(&k->lock);
    w = &k->workers[index];
    if (w->pid > 0 && w->sl && !w->end.killed && at < w->cap &&
        !(w->asked_ms[at] && w->asked_run[at] == run)) {
        slot_ask *a = &slot_asks(w->sl)[at];
        w->asked_ms[at] = clock_ms();
        w->asked_run[at] = run;
        /* Before cancel: a worker that sees cancel reads it next. */
        atomic_store(&a->cancel_requested, run);
        atomic_store(&a->cancel, run);
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
