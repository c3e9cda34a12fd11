/* broker_begin: a batch's begin in one round trip (begin.lua: the result
 * cache checked and the lock taken, per task). */
#include <stdio.h>
#include <string.h>

#include "broker_internal.h"
#include "client_ids.h"
#include "log.h"
#include "lua_scripts.h"

static bool job_begins(const broker_job *j)
{
    return !j->e.deleted && j->e.bad[0] == '\0';
}

/* Pushes the key <what>:<id> of every job of c that begins. */
static void push_keys_of(broker *b, broker_job *jobs, const batch_call *c,
                         const char *what)
{
    for (size_t i = c->first; i < c->end; i++)
        if (job_begins(&jobs[i]))
            call_push_key(b, &jobs[i], what);
}

/* rates: true if the type's concurrency_limit is per limit_key value. */
static bool keyed_slots(const policy *pol)
{
    return pol->limit_key[0] != '\0' && pol->concurrency_limit > 0;
}

/* rates: pushes "<prefix>:{<type>}:<what>" (no limit_key) or
 * "...:<what>:<value>" of every job of c that begins. */
static void push_limit_keys_of(broker *b, broker_job *jobs,
                               const batch_call *c, const char *what)
{
    const broker_queue *q = jobs[c->first].queue;
    char key[KEY_MAX];

    for (size_t i = c->first; i < c->end; i++) {
        const broker_job *j = &jobs[i];
        int len;
        if (!job_begins(j))
            continue;
        if (q->pol->limit_key[0])
            len = snprintf(key, sizeof(key), "%s%s:%.*s", q->task_prefix,
                           what, j->limit_value_len, j->limit_value);
        else
            len = snprintf(key, sizeof(key), "%s%s", q->task_prefix, what);
        command_push_key_copy(&b->scratch->cmd, key, (size_t)len);
    }
}

/* KEYS and ARGV as sdk/lua/begin.lua states them: its numbered keys,
 * then each "then" key of every job that begins (result:<id>...,
 * cancel:<id>..., lock:<id>..., and rate:<key>... only with a
 * rate_limit); its numbered arguments, then the entry ids. */
static void begin_build(broker *b, broker_job *jobs, const batch_call *c)
{
    const broker_queue *q = jobs[c->first].queue;
    const script_spec *spec = &script_begin_spec;
    command *cmd = &b->scratch->cmd;
    const policy_rate *rate = &q->pol->rate_limit;

    script_begin_keys(cmd, b->cfg->prefix, q->type);
    for (size_t k = 0; k < spec->n_then_keys; k++) {
        const char *what = spec->then_keys[k].what;
        if (strcmp(what, "rate") == 0) {
            if (rate->count > 0)
                push_limit_keys_of(b, jobs, c, what);
        } else if (strcmp(what, "slots") == 0) {
            if (keyed_slots(q->pol))
                push_limit_keys_of(b, jobs, c, what);
        } else {
            push_keys_of(b, jobs, c, what);
        }
    }
    /* id_offset: the length of "<prefix>:{<type>}:result:". */
    script_begin_args(
        cmd, call_number(q->pol->lock_ttl_ms).s, jobs[c->first].owner,
        call_number((long long)(q->task_prefix_len + strlen("result:"))).s,
        call_number((long long)q->pol->concurrency_limit).s,
        call_number((long long)rate->count).s,
        call_number((long long)rate->period_ms).s,
        call_number((long long)q->pol->rate_burst).s,
        /* key_slot_ttl_ms: a run holds its key's slot until its task is
         * finished, by it or, past visibility_timeout, by a takeover;
         * its timeout bounds it, and a lease's length more. */
        call_number(keyed_slots(q->pol)
                        ? (long long)(q->pol->timeout_ms +
                                      q->pol->visibility_timeout_ms +
                                      q->pol->lock_ttl_ms)
                        : 0)
            .s);
    for (size_t i = c->first; i < c->end; i++)
        if (job_begins(&jobs[i]))
            call_push_str(b, jobs[i].e.entry_id);
}

/* r: the error (or unexpected) reply, for the call or for j alone. */
static void begin_failed(broker *b, broker_job *j, const redisReply *r)
{
    broker_failed(b, "begin", r);
    log_fields(WHARF_LOG_ERROR, "begin failed",
               (log_field[]){LOG_STR("task", j->e.task.id),
                             LOG_STR("type", j->queue->type),
                             LOG_STR("error", b->errstr)},
               3);
    /* Left pending: it is read again after a reconnect. */
    j->begin = BEGIN_NONE;
}

/* True if text (len bytes) is the lock value "<fence>-<owner>" of a call
 * of this owner; sets *fence. */
static bool lock_value_fence(const char *text, size_t len, const char *owner,
                             uint64_t *fence)
{
    size_t owner_len = strlen(owner), digits = 0;
    uint64_t n = 0;

    while (digits < len && text[digits] >= '0' && text[digits] <= '9') {
        if (n > (UINT64_MAX - 9) / 10)
            return false;
        n = n * 10 + (uint64_t)(text[digits] - '0');
        digits++;
    }
    if (digits == 0 || len != digits + 1 + owner_len ||
        len >= sizeof(((broker_job *)0)->token) || text[digits] != '-' ||
        memcmp(text + digits + 1, owner, owner_len) != 0)
        return false;
    *fence = n;
    return true;
}

/* One element per task: 0 (cached), -1 (locked), -2 (cancelled), -3
 * (paused), -4 (no concurrency slot), {wait_ms} (its rate turn is
 * wait_ms away: j->rate_wait_ms) or the lock value. */
static void begin_apply(broker *b, broker_job *jobs, const batch_call *c,
                        const redisReply *r)
{
    bool whole = r->type == REDIS_REPLY_ARRAY && r->elements == c->n;
    size_t k = 0;

    for (size_t i = c->first; i < c->end; i++) {
        broker_job *j = &jobs[i];
        const redisReply *v;
        if (!job_begins(j))
            continue;
        if (!whole) {
            begin_failed(b, j, r);
            continue;
        }
        v = r->element[k++];
        j->wait_ms = keyed_slots(j->queue->pol) ? BROKER_WAIT_FOR_KEY_SLOT
                                                 : BROKER_WAIT_FOR_SLOT;
        if (v->type == REDIS_REPLY_ARRAY && v->elements == 1 &&
            v->element[0]->type == REDIS_REPLY_INTEGER &&
            v->element[0]->integer > 0) {
            /* rates: a turn reserved; it waits like a task without a
             * slot, but for that long (worker_batch.c). */
            j->begin = BEGIN_NO_SLOT;
            j->wait_ms = v->element[0]->integer;
        } else if (v->type == REDIS_REPLY_INTEGER) {
            j->begin = v->integer == 0    ? BEGIN_CACHED
                       : v->integer == -2 ? BEGIN_CANCELLED
                       : v->integer == -3 ? BEGIN_PAUSED
                       : v->integer == -4 ? BEGIN_NO_SLOT
                                          : BEGIN_LOCKED;
        } else if (v->type == REDIS_REPLY_STRING &&
                   lock_value_fence(v->str, v->len, j->owner,
                                    &j->e.task.fence)) {
            memcpy(j->token, v->str, v->len + 1);
            j->begin = BEGIN_RUN;
        } else {
            begin_failed(b, j, v);
        }
    }
}

/* On a Sentinel master begin WAITs too: the claim (on the same
 * connection, just before) and the locks are on a replica before any
 * plugin runs. A planned switchover promotes the replica at once but
 * leaves the old master answering as one for seconds; a claim and a
 * begin it took then are thrown away when it is demoted, and the task
 * would run again on the new master. A WAIT that comes back short there
 * with the master moved fails the begin like a broken connection (see
 * pipeline.h): the worker releases what it may hold on the new master
 * and claims again there; nothing ran. While replicas are known short
 * (a finish's WAIT said so) begin does not wait, so a replica that is
 * down costs each batch one WAIT timeout, not two. */
static const batch_ops begin_ops = {
    .s = &script_begin,
    .what = "begin",
    .durable_on_sentinel = true,
    .max_tasks = CALL_TASKS,
    .takes = job_begins,
    .shares = call_same_queue,
    .build = begin_build,
    .apply = begin_apply,
};

int broker_begin(broker *b, broker_job *jobs, size_t n)
{
    unsigned char random[8];
    char owner[17];

    if (!broker_connected(b))
        return -1;
    if (client_random_bytes(random, sizeof(random)) != 0) {
        snprintf(b->errstr, sizeof(b->errstr),
                 "begin: libcrypto has no random bytes to give");
        return -1;
    }
    for (size_t i = 0; i < sizeof(random); i++)
        snprintf(owner + 2 * i, 3, "%02x", random[i]);
    /* rates: a task whose limit_key has no value is dead at once, as a
     * bad entry is (worker_unrunnable_fate): no attempt could give it
     * one. */
    for (size_t i = 0; i < n; i++) {
        broker_job *j = &jobs[i];
        if (!job_begins(j) || !j->queue->pol->limit_key[0])
            continue;
        j->limit_value_len =
            limit_value(j->queue->pol->limit_key, &j->e.task, j->limit_value,
                        j->e.bad, sizeof(j->e.bad));
        if (j->limit_value_len < 0) {
            j->finish = FINISH_DEAD;
            j->next_attempt = j->e.task.attempt;
            j->reason = j->e.bad;
        }
    }
    /* Stored before anything is sent: if the replies are lost, the
     * release knows whose locks to look for. */
    for (size_t i = 0; i < n; i++)
        if (job_begins(&jobs[i]))
            memcpy(jobs[i].owner, owner, sizeof(owner));
    return call_run_batch(b, &begin_ops, jobs, n);
}
