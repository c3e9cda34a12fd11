/* The lease keeper's clock thread (lease_internal.h), which talks to no
 * one: every KEEPER_TICK_MS it copies each worker's slot, enforces the
 * runs' deadlines and init_timeout, kills a worker that ignored a
 * request to end, and notices leases that went a whole TTL unrenewed, so
 * a Redis that hangs delays none of it. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>

#include "clock_ms.h"
#include "lease_internal.h"
#include "log.h"
#include "run.h"

/* Whether entry i's run (as the copy shows it) was asked to end, and if
 * so whether it ignored that past the grace: then its worker is killed.
 * A request its run answered by ending is forgotten. Clock thread. */
static bool enforce_ask(keeper_worker *w, const slot *snap, uint32_t i,
                        int64_t now)
{
    const slot_task *t = &snap->batch[i];

    if (!w->asked_ms[i])
        return false;
    if (!slot_task_running(snap, i) || t->run != w->asked_run[i]) {
        w->asked_ms[i] = 0; /* it ended that run itself */
        return false;
    }
    if (now - w->asked_ms[i] >= RUN_KILL_GRACE_MS && !w->end.killed) {
        log_fields(WHARF_LOG_WARN,
                   "task ignored its cancel request; killing its worker",
                   (log_field[]){LOG_STR("task", t->id),
                                 LOG_STR("type", t->type),
                                 LOG_INT("running", (int64_t)snap->n_running),
                                 LOG_STR("worker", w->consumer)},
                   4);
        kill(w->pid, SIGKILL);
        w->end.killed = true;
    }
    return true;
}

/* The deadlines of w's runs, as the copy shows them, and the leases that
 * ran out while no renewal could be made. Clock thread. */
static void enforce(lease_keeper *k, keeper_worker *w, const slot *snap,
                    int64_t now)
{
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
            !(lt = lease_type_of(k, snap->batch[i].type)))
            continue;
        unrenewed = now - w->confirmed_ms[i];
        if (unrenewed >= lt->shortest_ms) {
            char why[128];
            snprintf(why, sizeof(why),
                     "not renewed for %" PRId64 " ms (Redis unreachable)",
                     unrenewed);
            lease_note_lost(k, w, snap, i, lt->shortest_ms - unrenewed, why,
                            now);
        }
    }
    for (uint32_t i = 0; i < snap->batch_n && i < w->cap; i++) {
        const slot_task *t = &snap->batch[i];
        if (enforce_ask(w, snap, i, now) || w->end.killed ||
            !slot_task_running(snap, i) || now - t->started_ms <= t->timeout_ms)
            continue;
        lease_ask_to_end(w, snap, i, now, false);
        log_fields(
            WHARF_LOG_WARN, "task ran past its timeout; asking it to end",
            (log_field[]){LOG_STR("task", t->id), LOG_STR("type", t->type),
                          LOG_INT("timeout_ms", t->timeout_ms),
                          LOG_STR("worker", w->consumer)},
            4);
    }
}

void *lease_clock_main(void *arg)
{
    lease_keeper *k = arg;

    lease_thread_entered(k);
    while (!atomic_load(&k->stop)) {
        int64_t now;
        lease_gate_enter();
        now = clock_ms();
        pthread_mutex_lock(&k->lock);
        for (size_t i = 0; i < k->n_workers; i++) {
            lease_snapshot(&k->clock_copies[i], &k->workers[i]);
            if (k->clock_copies[i].have)
                enforce(k, &k->workers[i], k->clock_copies[i].snap, now);
        }
        pthread_mutex_unlock(&k->lock);
        lease_gate_leave();
        lease_nap(k, KEEPER_TICK_MS, false);
    }
    return NULL;
}
