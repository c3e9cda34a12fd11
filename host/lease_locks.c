/* What the lease keeper knows of each worker's locks, read and changed
 * by both of its threads with the mutex held (lease_internal.h): the
 * copy of a slot, whether a lock matters, asking a run to end, and a
 * lost lease. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lease_internal.h"
#include "log.h"
#include "xmalloc.h"

/* What the clock thread knows of type, or NULL. */
const lease_type *lease_type_of(const lease_keeper *k, const char *type)
{
    for (size_t i = 0; i < k->n_types; i++)
        if (strcmp(k->types[i].type, type) == 0)
            return &k->types[i];
    return NULL;
}

void lease_fit(keeper_worker *w)
{
    if (!w->sl || (w->leases_gen == w->gen && w->cap == w->sl->capacity))
        return;
    w->leases_gen = w->gen;
    w->cap = w->sl->capacity;
    free(w->tokens);
    free(w->confirmed_ms);
    free(w->renewed_ms);
    free(w->lost);
    free(w->asked_ms);
    free(w->asked_run);
    w->tokens = xcalloc(w->cap, sizeof(*w->tokens));
    w->confirmed_ms = xcalloc(w->cap, sizeof(*w->confirmed_ms));
    w->renewed_ms = xcalloc(w->cap, sizeof(*w->renewed_ms));
    w->lost = xcalloc(w->cap, sizeof(*w->lost));
    w->asked_ms = xcalloc(w->cap, sizeof(*w->asked_ms));
    w->asked_run = xcalloc(w->cap, sizeof(*w->asked_run));
}

/* Copies w's slot into c; brings what w knows of its locks in line (a
 * new attach forgets the last worker's; a lock not seen before lives
 * lock_ttl from its begin). */
void lease_snapshot(copy *c, keeper_worker *w)
{
    size_t size;

    c->have = false;
    if (w->pid <= 0 || !w->sl)
        return;
    size = slot_size(w->sl);
    lease_fit(w);
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
            w->renewed_ms[i] = 0;
            w->lost[i] = false;
        }
    }
    c->have = true;
}

/* True if task i of the copy is one whose lock a lost lease endangers:
 * locked, its plugin not yet returned, the batch's finish not yet sent. */
bool lease_matters(const slot *snap, uint32_t i)
{
    return i < snap->batch_n && snap->batch[i].token[0] &&
           snap->batch[i].ret.finish == 0 && !snap->batch[i].finishing;
}

/* Asks the run under way in entry i (of the copy in snap) to end: its
 * deadline passed, or its lease was lost. */
void lease_ask_to_end(keeper_worker *w, const slot *snap, uint32_t i,
                      int64_t now, bool lease_lost)
{
    slot_ask *a = &slot_asks(w->sl)[i];
    uint32_t run = snap->batch[i].run;

    w->asked_ms[i] = now;
    w->asked_run[i] = run;
    if (lease_lost)
        atomic_store(&a->lease_lost, run); /* before cancel */
    atomic_store(&a->cancel, run);
}

/* Task i of w's batch (as snap shows it) lost its lease (why): says so
 * once, counts it, asks its run to end if it is under way, and asks the
 * worker to stop after it, so the rest of its batch goes back unrun and
 * its replacement begins them anew with fresh locks. */
void lease_note_lost(lease_keeper *k, keeper_worker *w, const slot *snap,
                     uint32_t i, int64_t margin_ms, const char *why,
                     int64_t now)
{
    const slot_task *task = &snap->batch[i];
    const lease_type *lt = lease_type_of(k, task->type);

    w->lost[i] = true;
    if (lt && lt->ti >= 0)
        atomic_fetch_add(&k->m->types[lt->ti].leases_lost, 1);
    log_fields(
        WHARF_LOG_ERROR, "lease lost",
        (log_field[]){LOG_STR("task", task->id), LOG_STR("type", task->type),
                      LOG_INT("margin_ms", margin_ms), LOG_STR("why", why),
                      LOG_STR("worker", w->consumer)},
        5);
    if (slot_task_running(snap, i) &&
        !(w->asked_ms[i] && w->asked_run[i] == task->run))
        lease_ask_to_end(w, snap, i, now, true);
    w->retired = true;
    atomic_store(&w->sl->stop, 1);
}
