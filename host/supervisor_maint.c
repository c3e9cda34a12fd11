/* The Redis housekeeping the supervisor's loop runs on its own
 * connection (supervisor_redis.c): take-over of silent hosts' tasks,
 * promotion of due tasks, trimming the dead sets, cancel polling, the
 * concurrency slots of runs that died without a finish, and
 * the queue figures /metrics and the console answer from. */

#include <stdatomic.h>

#include "backoff.h"
#include "cancel_poll.h"
#include "log.h"
#include "pressure.h"
#include "supervisor_internal.h"
#include "xmalloc.h"

/* Asks the running plugin of each worker whose task was cancelled
 * (cancel:<id> names its entry, see cancel_poll.h) to end, through the
 * lease keeper, which ends it as it ends a run past its deadline: the
 * plugin sees wharf_cancelled, the worker ends the run as cancelled, and
 * one that ignores it is killed after the same grace (its finish writes
 * nothing either way). */
static int check_cancels(supervisor *s)
{
    size_t room = 0, n = 0;
    const char **types, **ids, **entry_ids;
    uint32_t *runs, *entries;
    bool *cancelled;
    size_t *which;
    int rc = 0;

    for (size_t i = 0; i < s->n_procs; i++)
        if (s->procs[i].pid > 0 && read_slot(&s->procs[i]) == 0)
            room += s->procs[i].snap->n_running;
    if (room == 0)
        return 0;
    types = xcalloc(room, sizeof(*types));
    ids = xcalloc(room, sizeof(*ids));
    entry_ids = xcalloc(room, sizeof(*entry_ids));
    runs = xcalloc(room, sizeof(*runs));
    entries = xcalloc(room, sizeof(*entries));
    cancelled = xcalloc(room, sizeof(*cancelled));
    which = xcalloc(room, sizeof(*which));
    /* The copies read above are the ones used: read_slot is not called
     * again, so the count matches. */
    for (size_t i = 0; i < s->n_procs; i++) {
        const slot *snap = s->procs[i].snap;
        if (s->procs[i].pid <= 0 || !snap)
            continue;
        for (uint32_t e = 0; e < snap->batch_n && n < room; e++) {
            const slot_task *t = &snap->batch[e];
            if (!slot_task_running(snap, e))
                continue;
            types[n] = t->type;
            ids[n] = t->id;
            entry_ids[n] = t->entry_id;
            runs[n] = t->run;
            entries[n] = e;
            which[n++] = i;
        }
    }
    if (n > 0 && cancel_poll(&s->b, types, ids, entry_ids, n, cancelled) != 0)
        rc = -1;
    for (size_t k = 0; rc == 0 && k < n; k++)
        if (cancelled[k] &&
            lease_keeper_cancel(s->keeper, which[k], entries[k], runs[k]))
            log_fields(WHARF_LOG_INFO, "task cancelled; asking it to end",
                       (log_field[]){
                           LOG_STR("task", ids[k]), LOG_STR("type", types[k]),
                           LOG_STR("worker", s->procs[which[k]].consumer)},
                       3);
    free(types);
    free(ids);
    free(entry_ids);
    free(runs);
    free(entries);
    free(cancelled);
    free(which);
    return rc;
}

/* Takes over the entries of silent hosts (idle past visibility_timeout):
 * each takeover is a failed attempt, so the task goes through retry/dead
 * and runs again on any host. */
static int take_over(supervisor *s)
{
    broker_job jobs[100];

    for (size_t q = 0; q < s->b.n_queues; q++) {
        broker_queue *queue = &s->b.queues[q];
        redisReply *r = broker_autoclaim(
            &s->b, queue, queue->pol->visibility_timeout_ms, 100);
        size_t n;
        if (!r)
            return -1;
        n = broker_entries(&s->b, queue, r->element[1], jobs, 100);
        for (size_t i = 0; i < n; i++) {
            broker_job *j = &jobs[i];
            if (j->e.deleted) {
                j->finish = FINISH_NONE;
            } else if (j->e.bad[0]) {
                j->finish = FINISH_DEAD;
                j->next_attempt = j->e.task.attempt;
                j->reason = j->e.bad;
            } else {
                backoff_fail(j, "taken over: its host was silent longer "
                                "than visibility_timeout");
            }
        }
        if (n > 0 && broker_finish(&s->b, jobs, n) != 0) {
            freeReplyObject(r);
            return -1;
        }
        for (size_t i = 0; i < n; i++)
            if (jobs[i].finish != FINISH_NONE)
                metrics_outcome(s->m, metrics_type_find(s->m, queue->type),
                                jobs[i].outcome);
        for (size_t i = 0; i < n; i++)
            if (jobs[i].finish != FINISH_NONE)
                log_fields(
                    WHARF_LOG_WARN, "task taken over from a silent host",
                    (log_field[]){
                        LOG_STR("task", jobs[i].e.task.id),
                        LOG_STR("type", queue->type),
                        LOG_INT("attempt", jobs[i].e.task.attempt),
                        LOG_STR("outcome", task_outcome_name(jobs[i].outcome))},
                    4);
        freeReplyObject(r);
    }
    return 0;
}

static int64_t takeover_every_ms(const supervisor *s)
{
    int64_t every = INT64_MAX;
    for (size_t i = 0; i < s->n_types; i++)
        if (s->policies[i]->visibility_timeout_ms / 4 < every)
            every = s->policies[i]->visibility_timeout_ms / 4;
    return every < 100 ? 100 : every > 5000 ? 5000 : every;
}

/* Tells the workers which served types are paused (they leave those out
 * of their claims), from the figures just read. */
static void publish_pauses(supervisor *s)
{
    metrics *m = s->m;

    for (size_t i = 0; m && i < s->b.n_queues; i++) {
        int t = metrics_type_find(m, s->b.queues[i].type);
        if (t >= 0)
            atomic_store_explicit(&m->types[t].paused, s->figures[i].paused,
                                  memory_order_relaxed);
    }
}

/* Reads every queue's figures and publishes backlog and pressure; when
 * /metrics is served, reads those of the unserved types too. -1 when the
 * connection failed. */
int refresh_figures(supervisor *s, int64_t now)
{
    int rc;

    s->figures_ms = now;
    if (pressure_refresh(&s->b, s->figures) != 0) {
        s->figures_ok = false;
        lost_connection(s, "reading queue figures");
        return -1;
    }
    s->figures_ok = true;
    publish_pauses(s);
    /* Only /metrics reads them, and they never make the served types'
     * figures less sure (figures_ok). */
    if (!s->http)
        return 0;
    rc = known_types_refresh(&s->b, &s->known, s->figures + s->b.n_queues);
    if (rc == -1) {
        lost_connection(s, "reading the figures of unserved types");
        return -1;
    }
    if (rc != 0)
        log_msg(WHARF_LOG_WARN, "supervisor: out of memory reading the "
                                "figures of unserved types; /metrics shows "
                                "them as before");
    return 0;
}

/* One pass of the Redis housekeeping that is due (the leases and the
 * instance name are the lease keeper's). */
void maintain(supervisor *s, int64_t now)
{
    if (ensure_connected(s, now) != 0)
        return;
    if (now - s->last_cancel_poll_ms >= CANCEL_POLL_EVERY_MS) {
        s->last_cancel_poll_ms = now;
        if (check_cancels(s) != 0) {
            lost_connection(s, "looking for cancel requests");
            return;
        }
    }
    if (now - s->last_promote_ms >= TICK_MS) {
        s->last_promote_ms = now;
        if (broker_promote(&s->b) < 0) {
            lost_connection(s, "promoting due tasks");
            return;
        }
    }
    if (now - s->last_trim_ms >= TRIM_EVERY_MS) {
        s->last_trim_ms = now;
        if (broker_trim_dead(&s->b) < 0) {
            lost_connection(s, "trimming dead sets");
            return;
        }
    }
    if (now - s->last_takeover_ms >= takeover_every_ms(s)) {
        s->last_takeover_ms = now;
        if (take_over(s) != 0) {
            lost_connection(s, "taking over silent hosts' tasks");
            return;
        }
    }
    if (now - s->last_limit_wake_ms >= FIGURES_EVERY_MS) {
        s->last_limit_wake_ms = now;
        if (broker_limit_wake(&s->b) < 0) {
            lost_connection(s, "freeing the slots of dead runs");
            return;
        }
    }
    if (now - s->figures_ms >= FIGURES_EVERY_MS)
        refresh_figures(s, now);
}
