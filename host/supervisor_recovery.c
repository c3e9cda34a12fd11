/* What the supervisor does with the entries of a worker that died: the
 * returns it recorded are finished as it would have, the task (or tasks)
 * whose run killed it fail one attempt, and the rest go back unrun
 * (run.h, "Returns kept" and "Threads"). */
#define _GNU_SOURCE /* sigabbrev_np */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "clock_ms.h"
#include "log.h"
#include "supervisor_internal.h"
#include "xmalloc.h"

/* Makes j act for the dead worker's consumer with the lock token its
 * slot recorded ("" when it held no lock). */
static void own_slot_task(broker_job *j, broker_queue *q, const char *consumer,
                          const char *token)
{
    j->queue = q;
    j->consumer = consumer;
    snprintf(j->token, sizeof(j->token), "%s", token);
    j->begin = token[0] ? BEGIN_RUN : BEGIN_NONE;
}

/* Job j (task t of the dead worker's batch, whose entry r holds, queue q)
 * finishes as the worker's plugin returned, from what the slot kept:
 * reason and result are copied out of the arena into buf (reason, then
 * result). False when the arena's figures do not add up (a torn write). */
static bool returned_job(broker_job *j, const slot_task *t, slot *sl,
                         char **buf)
{
    const slot_return *r = &t->ret;
    const unsigned char *arena = slot_arena(sl);

    if ((uint64_t)r->reason_off + r->reason_len > SLOT_ARENA_BYTES ||
        (uint64_t)r->result_off + r->result_len > SLOT_ARENA_BYTES)
        return false;
    *buf = xcalloc(1, (size_t)r->reason_len + 1 + r->result_len + 1);
    memcpy(*buf, arena + r->reason_off, r->reason_len);
    (*buf)[r->reason_len] = '\0';
    memcpy(*buf + r->reason_len + 1, arena + r->result_off, r->result_len);
    j->finish = (finish_kind)r->finish;
    j->next_attempt = r->next_attempt;
    j->delay_ms = r->delay_ms;
    j->reason = r->reason_len ? *buf : NULL;
    j->result =
        r->has_result ? (const unsigned char *)*buf + r->reason_len + 1 : NULL;
    j->result_len = r->has_result ? r->result_len : 0;
    return true;
}

/* How a run under way when its worker died ends. */
typedef enum run_fate {
    FATE_CHARGED,   /* fails one attempt (reason says why) */
    FATE_CANCELLED, /* a wharf cancel had asked it to end */
    FATE_GIVEN_BACK /* a neighbour of the culprit: back unrun, no attempt */
} run_fate;

/* True if entry i's run (snap) is one that singles itself out as the
 * cause of its worker's death: it was asked to end (a deadline, a cancel,
 * a lost lease) and did not, or its thread took a fatal signal. */
static bool culprit(const slot *live, const slot *snap, uint32_t i)
{
    return slot_run_asked_to_end(live, i, snap->batch[i].run) ||
           snap->batch[i].crashed != 0;
}

/* The fate of entry i's run, under way when its worker died with status,
 * and the reason of a charged one in buf. When some run singles itself
 * out, only such runs are charged and the others are given back; when
 * none does (a kill from outside, exit() in a plugin), every run under
 * way is charged, and the reason says how many there were. */
static run_fate fate_of(const slot *live, const slot *snap, uint32_t i,
                        bool any_culprit, int status, char *buf, size_t len)
{
    const slot_task *t = &snap->batch[i];

    if (slot_run_cancelled(live, i, t->run))
        return FATE_CANCELLED;
    if (slot_run_lease_lost(live, i, t->run)) {
        snprintf(buf, len, "lease lost: its lock could not be renewed in time");
    } else if (slot_run_asked_to_end(live, i, t->run)) {
        snprintf(buf, len, "timeout after %" PRId64 " ms", t->timeout_ms);
    } else if (t->crashed) {
        snprintf(buf, len, "worker crashed: SIG%s",
                 sigabbrev_np(t->crashed) ? sigabbrev_np(t->crashed)
                                          : "UNKNOWN");
    } else if (any_culprit) {
        return FATE_GIVEN_BACK;
    } else {
        size_t used;
        death_reason(status, buf, len);
        used = strlen(buf);
        if (snap->n_running > 1 && used < len)
            snprintf(buf + used, len - used, " while running %u tasks",
                     snap->n_running);
    }
    return FATE_CHARGED;
}

/* Logs and counts a run given back with its dead worker. */
static void log_given_back(supervisor *s, const worker_proc *p,
                           const slot_task *t)
{
    int ti = metrics_type_find(s->m, t->type);

    if (s->m && ti >= 0)
        atomic_fetch_add(&s->m->types[ti].given_back, 1);
    log_fields(WHARF_LOG_WARN,
               "task given back unrun: its worker died of another task",
               (log_field[]){LOG_STR("task", t->id), LOG_STR("type", t->type),
                             LOG_STR("worker", p->consumer)},
               3);
}

/* A worker died: finishes what its plugins had returned (kept in the
 * slot as each returned), records the failure of the task whose run
 * killed it through the normal retry/dead path (or its end as cancelled,
 * when a wharf cancel had asked that run to end; fate_of says which runs
 * are charged), and releases the locks of the rest of its entries so its
 * replacement can run them at once. So a death costs one attempt of the
 * task at fault and runs nothing else again.
 * True when that is done (the slot is then unmapped); false if Redis was
 * away, in which case the slot is kept and recovery is tried again before
 * the worker is started anew: a replacement would read the same pending
 * entries and run the failed task again at the same attempt, never
 * spending it. Everything is finished in resend mode: the worker may have
 * sent its batch's finish itself before it died, or an earlier try of
 * this recovery may have landed unseen; either counts once. */
bool recover_slot(supervisor *s, size_t index, int status)
{
    worker_proc *p = &s->procs[index];
    slot *snap = p->snap;
    broker_job *jobs = NULL;
    redisReply **entries = NULL;
    char **bufs = NULL;
    char reason[256];
    bool any_culprit = false, done = false;
    size_t n, n_returned = 0;

    if (!p->sl || !snap)
        return true;
    /* The worker is gone: a write it left half done (it died in it) is
     * read as it stands, which still names every entry it held. */
    if (slot_read(p->sl, snap) == -1)
        memcpy(snap, p->sl, slot_size(p->sl));
    if (snap->batch_n > snap->capacity)
        snap->batch_n = snap->capacity;
    /* Any end of the process while a plugin call was under way (a crash,
     * a kill, or exit() called by the plugin) fails an attempt (fate_of);
     * only an exit between tasks is clean. */
    n = snap->batch_n;
    for (uint32_t i = 0; i < n; i++)
        if (slot_task_running(snap, i) && culprit(p->sl, snap, i))
            any_culprit = true;

    if (n == 0) {
        done = true;
        goto out;
    }
    if (ensure_connected(s, clock_ms()) != 0)
        goto out;
    jobs = xcalloc(n, sizeof(*jobs));
    entries = xcalloc(n, sizeof(*entries));
    bufs = xcalloc(n, sizeof(*bufs));
    for (size_t i = 0; i < n; i++) {
        const slot_task *t = &snap->batch[i];
        broker_job *j = &jobs[i];
        broker_queue *q = broker_queue_of(&s->b, t->type);
        bool running = slot_task_running(snap, (uint32_t)i);
        bool returned = t->ret.finish != 0 && !t->ret.finished;
        run_fate fate = FATE_CHARGED;
        if (!q)
            continue;
        own_slot_task(j, q, p->consumer, t->token);
        j->e.task.id = t->id;
        j->e.task.trace = "";
        j->e.enqueued_at = "";
        if (running && !returned) {
            fate = fate_of(p->sl, snap, (uint32_t)i, any_culprit, status,
                           reason, sizeof(reason));
            if (fate == FATE_GIVEN_BACK) {
                log_given_back(s, p, t);
                continue; /* its lock is released: it runs again */
            }
        }
        if (!running && !returned)
            continue; /* not begun, or not run: its lock is released */
        entries[i] = broker_entry(&s->b, q, t->entry_id);
        if (!entries[i]) {
            lost_connection(s, "reading a dead worker's task");
            goto out;
        }
        if (entries[i]->elements != 1) {
            j->begin = BEGIN_NONE; /* finished already: nothing to do */
            continue;
        }
        broker_entries(&s->b, q, entries[i], j, 1); /* resets j */
        own_slot_task(j, q, p->consumer, t->token);
        if (returned) {
            if (!returned_job(j, t, p->sl, &bufs[i])) {
                j->finish = FINISH_NONE; /* torn: it runs again */
                continue;
            }
            n_returned++;
        } else if (fate == FATE_CANCELLED) {
            /* It ignored a wharf cancel: the run ends as cancelled, as
             * the worker ends one that returns (run_job). */
            j->finish = FINISH_CANCEL;
            j->reason = "cancelled";
        } else {
            /* bufs[i] keeps the reason: reason is reused by the next. */
            bufs[i] = xstrdup(reason);
            backoff_fail(j, bufs[i]);
        }
    }
    /* One finish for every job that has one: the returned ones and the
     * one in hand; the rest have FINISH_NONE and are left to release. */
    if (broker_finish_resend(&s->b, jobs, n) != 0) {
        lost_connection(s, "recording a dead worker's tasks");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        broker_job *j = &jobs[i];
        if (j->finish == FINISH_NONE || !j->queue)
            continue;
        metrics_outcome(s->m, metrics_type_find(s->m, j->queue->type),
                        j->outcome);
        if (slot_task_running(snap, (uint32_t)i) &&
            !(snap->batch[i].ret.finish != 0 && !snap->batch[i].ret.finished))
            log_fields(
                WHARF_LOG_WARN, "task failed with its worker",
                (log_field[]){LOG_STR("task", j->e.task.id),
                              LOG_STR("type", j->queue->type),
                              LOG_INT("attempt", j->e.task.attempt),
                              LOG_STR("outcome", task_outcome_name(j->outcome)),
                              LOG_STR("error", j->reason),
                              LOG_STR("worker", p->consumer)},
                6);
        j->begin = BEGIN_NONE; /* its lock went with the finish */
    }
    if (n_returned > 0)
        log_fields(WHARF_LOG_INFO,
                   "finished what a dead worker's plugins had returned",
                   (log_field[]){LOG_INT("tasks", (int64_t)n_returned),
                                 LOG_STR("worker", p->consumer)},
                   2);
    if (broker_release(&s->b, jobs, n) != 0) {
        lost_connection(s, "releasing a dead worker's locks");
        goto out;
    }
    done = true;
out:
    for (size_t i = 0; entries && i < n; i++)
        freeReplyObject(entries[i]);
    for (size_t i = 0; bufs && i < n; i++)
        free(bufs[i]);
    free(bufs);
    free(entries);
    free(jobs);
    if (done)
        drop_slot(p);
    return done;
}

/* Tries again to recover the slot of a worker that died while Redis was
 * away. True once done (or nothing was left to do). */
bool retry_recovery(supervisor *s, size_t index)
{
    worker_proc *p = &s->procs[index];

    if (!p->recovering)
        return true;
    if (!recover_slot(s, index, p->dead_status))
        return false;
    p->recovering = false;
    log_fields(WHARF_LOG_INFO, "a dead worker's tasks are recorded",
               (log_field[]){LOG_STR("worker", p->consumer)}, 1);
    return true;
}
