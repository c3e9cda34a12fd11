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
        lease_ask_to_end(w, snap, now, snap->timeout_ms, false);
        log_fields(WHARF_LOG_WARN,
                   "task ran past its timeout; asking it to end",
                   (log_field[]){LOG_STR("task", running->id),
                                 LOG_STR("type", running->type),
                                 LOG_INT("timeout_ms", snap->timeout_ms),
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
