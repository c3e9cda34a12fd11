/* broker_finish and broker_release: a batch's end in one round trip
 * (finish.lua: results, retries, dead records, acks; release.lua: locks
 * given back unrun). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "broker_internal.h"
#include "keys.h"
#include "log.h"
#include "lua_scripts.h"
#include "workflow.h"

static bool job_finishes(const broker_job *j)
{
    return j->finish != FINISH_NONE;
}

static const char *consumer_of(const broker *b, const broker_job *j)
{
    return j->consumer ? j->consumer : b->consumer;
}

static bool same_owner(const broker *b, const broker_job *a,
                       const broker_job *c)
{
    return a->queue == c->queue &&
           (consumer_of(b, a) == consumer_of(b, c) ||
            strcmp(consumer_of(b, a), consumer_of(b, c)) == 0);
}

/* The envelope a retried or dead task keeps: id, payload, attempt,
 * enqueued_at, trace, error. */
static void push_envelope(broker *b, const broker_job *j)
{
    call_push_str(b, j->e.task.id);
    call_push(b, j->e.task.payload ? (const void *)j->e.task.payload : "",
              j->e.task.payload_len);
    command_push_int(&b->scratch->cmd, j->next_attempt);
    call_push_str(b, j->e.enqueued_at[0] ? j->e.enqueued_at : "0");
    call_push_str(b, j->e.task.trace);
    call_push_str(b, j->reason ? j->reason : "");
}

/* True when j was enqueued with options its envelope must keep. */
static bool has_options(const broker_job *j)
{
    return j->e.opt_timeout_ms > 0 || j->e.opt_max_attempts > 0 ||
           j->e.expires_at_ms > 0;
}

/* The options of j (has_options) as finish.lua takes them: "name value"
 * pairs, space-separated, copied into the call. */
static void push_options(broker *b, const broker_job *j)
{
    char buf[128];
    int len = 0;

    if (j->e.opt_timeout_ms > 0)
        len += snprintf(buf + len, sizeof(buf) - (size_t)len,
                        " timeout_ms %" PRId64, j->e.opt_timeout_ms);
    if (j->e.opt_max_attempts > 0)
        len += snprintf(buf + len, sizeof(buf) - (size_t)len,
                        " max_attempts %u", j->e.opt_max_attempts);
    if (j->e.expires_at_ms > 0)
        len += snprintf(buf + len, sizeof(buf) - (size_t)len,
                        " expires_at %" PRId64, j->e.expires_at_ms);
    /* Three bounded numbers fit; the leading space is dropped. */
    command_push_copy(&b->scratch->cmd, buf + 1, (size_t)len - 1);
}

/* The key <what>:<id> a finish writes: the result, the envelope of a
 * retry (promote reads it), or the dead record (only death, trim_dead and
 * the CLI's dead commands touch it, so a new run of the id cannot). */
static const char *record_of(finish_kind kind)
{
    switch (kind) {
    case FINISH_OK:
        return "result";
    case FINISH_DEAD:
        return "dead";
    case FINISH_CANCEL:
        return "cancel";
    default:
        return "task";
    }
}

/* A finish kind as script_finish spells it. */
static char finish_letter(finish_kind kind)
{
    switch (kind) {
    case FINISH_ACK:
        return 'a';
    case FINISH_OK:
        return 'o';
    case FINISH_DEAD:
        return 'd';
    case FINISH_CANCEL:
        return 'c';
    default:
        return 'r';
    }
}

/* j's kind letter: upper case for a retry or dead task that carries its
 * options (one argument more, finish.lua), so a task without any costs
 * the script nothing. */
static char kind_letter(const broker_job *j)
{
    char k = finish_letter(j->finish);

    if ((k == 'r' || k == 'd') && has_options(j))
        return k == 'r' ? 'R' : 'D';
    return k;
}

/* KEYS and ARGV as sdk/lua/finish.lua states them. */
static void finish_build(broker *b, broker_job *jobs, const batch_call *c)
{
    broker_scratch *sc = b->scratch;
    const broker_job *lead = &jobs[c->first];
    const broker_queue *q = lead->queue;
    command *cmd = &sc->cmd;
    size_t t = 0;

    script_finish_keys(cmd, b->cfg->prefix, q->type);
    /* The "then" keys: lock:<id> and the record of each but an ack, the
     * cancel:<id> of every task. */
    for (size_t i = c->first; i < c->end; i++)
        if (job_finishes(&jobs[i]) && jobs[i].finish != FINISH_ACK)
            call_push_key(b, &jobs[i], "lock");
    for (size_t i = c->first; i < c->end; i++)
        if (job_finishes(&jobs[i]) && jobs[i].finish != FINISH_ACK)
            call_push_key(b, &jobs[i], record_of(jobs[i].finish));
    for (size_t i = c->first; i < c->end; i++)
        if (job_finishes(&jobs[i]))
            call_push_key(b, &jobs[i], "cancel");
    /* Workflows: children:<id> of every task, then the type's outbox. */
    for (size_t i = c->first; i < c->end; i++)
        if (job_finishes(&jobs[i]))
            call_push_key(b, &jobs[i], "children");
    {
        char outbox[KEY_MAX];
        int len = key_of_type(outbox, sizeof(outbox), b->cfg->prefix, q->type,
                              "outbox");
        command_push_key_copy(cmd, outbox, len > 0 ? (size_t)len : 0);
    }
    for (size_t i = c->first; i < c->end; i++)
        if (job_finishes(&jobs[i]))
            sc->kinds[t++] = kind_letter(&jobs[i]);
    sc->kinds[t] = '\0';
    /* id_offset: the length of "<prefix>:{<type>}:cancel:". */
    script_finish_args(
        cmd, WHARF_GROUP, consumer_of(b, lead),
        call_number(q->pol->result_ttl_ms).s,
        call_number(q->pol->dead_ttl_ms).s, q->type, sc->resend ? "resend" : "",
        sc->kinds,
        call_number((long long)(q->task_prefix_len + strlen("cancel:"))).s,
        call_number((long long)q->pol->concurrency_limit).s);
    for (size_t i = c->first; i < c->end; i++)
        if (job_finishes(&jobs[i]))
            call_push_str(b, jobs[i].e.entry_id);
    /* Only a run that took the lock checks and releases it. */
    for (size_t i = c->first; i < c->end; i++)
        if (job_finishes(&jobs[i]) && jobs[i].finish != FINISH_ACK)
            call_push_str(b, jobs[i].begin == BEGIN_RUN ? jobs[i].token : "");
    for (size_t i = c->first; i < c->end; i++) {
        const broker_job *j = &jobs[i];
        if (!job_finishes(j) || j->finish == FINISH_ACK ||
            j->finish == FINISH_CANCEL)
            continue;
        if (j->finish == FINISH_OK) {
            call_push(b, j->result ? (const void *)j->result : "",
                      j->result_len);
            continue;
        }
        push_envelope(b, j);
        if (j->finish != FINISH_DEAD)
            command_push_int(cmd, j->delay_ms);
        if (has_options(j))
            push_options(b, j);
    }
}

/* The outcome of a job that finished as asked. */
static task_outcome outcome_done(const broker_job *j)
{
    switch (j->finish) {
    case FINISH_OK:
        return OUTCOME_OK;
    case FINISH_RETRY:
        return OUTCOME_RETRY;
    case FINISH_RESCHEDULE:
        return j->begin == BEGIN_LOCKED    ? OUTCOME_LOCKED
               : j->begin == BEGIN_PAUSED  ? OUTCOME_PAUSED
               : j->begin == BEGIN_NO_SLOT ? OUTCOME_LIMITED
                                           : OUTCOME_RESCHEDULED;
    case FINISH_DEAD:
        return OUTCOME_DEAD;
    case FINISH_CANCEL:
        return OUTCOME_CANCELLED;
    default:
        return OUTCOME_CACHED;
    }
}

static void finish_failed(broker *b, broker_job *j, const redisReply *r)
{
    j->outcome = OUTCOME_STALE;
    broker_failed(b, "finish", r);
    log_fields(WHARF_LOG_ERROR, "finish failed; the task stays pending",
               (log_field[]){LOG_STR("task", j->e.task.id),
                             LOG_STR("type", j->queue->type),
                             LOG_STR("error", b->errstr)},
               3);
}

/* {codes, errors...}: per task k (done), c (cancelled), s (stale) or e
 * (failed, with
 * the next error). A reply of another shape fails every job. */
static void finish_apply(broker *b, broker_job *jobs, const batch_call *c,
                         const redisReply *r)
{
    const redisReply *codes = NULL;
    size_t k = 0, next_error = 1;

    if (r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
        r->element[0]->type == REDIS_REPLY_STRING && r->element[0]->len == c->n)
        codes = r->element[0];
    for (size_t i = c->first; i < c->end; i++) {
        broker_job *j = &jobs[i];
        char code;
        if (!job_finishes(j))
            continue;
        code = codes ? codes->str[k++] : '?';
        if (code == 'k') {
            j->outcome = outcome_done(j);
        } else if (code == 'w') {
            /* Done, and its dependents' notice waits in the outbox. */
            j->outcome = outcome_done(j);
            j->queue->outbox_due = true;
        } else if (code == 'c') {
            j->outcome = OUTCOME_CANCELLED;
        } else if (code == 's') {
            j->outcome = OUTCOME_STALE;
        } else if (code == 'e' && next_error < r->elements) {
            finish_failed(b, j, r->element[next_error++]);
        } else {
            finish_failed(b, j, r);
        }
    }
}

static const batch_ops finish_ops = {
    .s = &script_finish,
    .what = "finish",
    .durable = true,
    .max_tasks = CALL_TASKS,
    .takes = job_finishes,
    .shares = same_owner,
    .build = finish_build,
    .apply = finish_apply,
};

/* Drains the outbox of each queue a finish just wrote to, so the next
 * step of a workflow starts at once (a failure is left to the sweep). */
static void drain_outboxes(broker *b)
{
    for (size_t i = 0; i < b->n_queues; i++) {
        broker_queue *q = &b->queues[i];
        if (!q->outbox_due)
            continue;
        q->outbox_due = false;
        (void)workflow_drain(b, q->type, NULL);
    }
}

int broker_finish(broker *b, broker_job *jobs, size_t n)
{
    int rc = call_run_batch(b, &finish_ops, jobs, n);

    drain_outboxes(b);
    return rc;
}

int broker_finish_resend(broker *b, broker_job *jobs, size_t n)
{
    int rc;

    b->scratch->resend = true;
    rc = call_run_batch(b, &finish_ops, jobs, n);
    b->scratch->resend = false;
    drain_outboxes(b);
    return rc;
}

/* A job whose lock is ours (BEGIN_RUN), or may be: its begin was sent
 * and not answered (the call may have run). */
static bool job_holds_lock(const broker_job *j)
{
    return j->begin == BEGIN_RUN ||
           (j->begin == BEGIN_NONE && j->owner[0] != '\0');
}

/* KEYS the job's lock; ARGV its token, or its owner and mode "owner".
 * One task a call: a rare path (a batch dropped by a broken
 * connection). */
static void release_build(broker *b, broker_job *jobs, const batch_call *c)
{
    const broker_job *j = &jobs[c->first];
    command *cmd = &b->scratch->cmd;
    char key[KEY_MAX];

    call_task_key(j->queue, "lock", j->e.task.id, key);
    script_release_keys(cmd, key);
    if (j->begin == BEGIN_RUN)
        script_release_args(cmd, j->token, NULL);
    else
        script_release_args(cmd, j->owner, "owner");
}

static void release_apply(broker *b, broker_job *jobs, const batch_call *c,
                          const redisReply *r)
{
    broker_job *j = &jobs[c->first];

    /* An error reply (a key of the wrong type) cannot be fixed by trying
     * again: the lock expires with its TTL. */
    if (r->type == REDIS_REPLY_ERROR)
        broker_failed(b, "release", r);
    j->begin = BEGIN_NONE;
    j->owner[0] = '\0';
    j->token[0] = '\0';
}

static const batch_ops release_ops = {
    .s = &script_release,
    .what = "release",
    .max_tasks = 1,
    .takes = job_holds_lock,
    .shares = call_same_queue,
    .build = release_build,
    .apply = release_apply,
};

int broker_release(broker *b, broker_job *jobs, size_t n)
{
    return call_run_batch(b, &release_ops, jobs, n);
}
