/* The broker's script calls (broker_internal.h): each is built in the
 * scratch's command, whose buffers are kept from call to call, so a
 * batch allocates nothing beyond what hiredis does once they have grown
 * to the largest call. begin, finish and release run as script calls
 * that each carry a run of consecutive jobs of one queue (and, for
 * finish, one consumer), up to CALL_TASKS of them; up to PIPE_CALLS calls
 * go in one round trip. The lease keeper's renew call is here too. */
#include <stdio.h>
#include <string.h>

#include "broker_internal.h"
#include "log.h"
#include "lua_scripts.h"

void call_push(broker *b, const void *data, size_t len)
{
    command_push(&b->scratch->cmd, data, len);
}

void call_push_str(broker *b, const char *s)
{
    command_push_str(&b->scratch->cmd, s);
}

number_text call_number(long long value)
{
    number_text t;

    snprintf(t.s, sizeof(t.s), "%lld", value);
    return t;
}

/* Writes the key "<prefix>:{<type>}:<what>:<id>" of task id of queue q
 * into buf (KEY_MAX): the key key_of_task spells, copied together from the
 * queue's "<prefix>:{<type>}:" (snprintf was a sixth of a worker's time).
 * Its length, or 0 if it does not fit (cannot happen: prefix, type and id
 * are bounded). */
size_t call_task_key(const broker_queue *q, const char *what, const char *id,
                     char *buf)
{
    size_t what_len = strlen(what), id_len = strlen(id);
    size_t len = q->task_prefix_len + what_len + 1 + id_len;

    if (len >= KEY_MAX)
        return 0;
    memcpy(buf, q->task_prefix, q->task_prefix_len);
    memcpy(buf + q->task_prefix_len, what, what_len);
    buf[q->task_prefix_len + what_len] = ':';
    memcpy(buf + q->task_prefix_len + what_len + 1, id, id_len);
    buf[len] = '\0';
    return len;
}

/* Pushes the key <what>:<id> of job j. */
void call_push_key(broker *b, const broker_job *j, const char *what)
{
    char key[KEY_MAX];
    size_t len = call_task_key(j->queue, what, j->e.task.id, key);

    command_push_key_copy(&b->scratch->cmd, key, len);
}

/* Runs the one call built in the scratch's command: its reply (caller
 * frees), or NULL with b->errstr set. */
redisReply *call_run(broker *b, const script *s)
{
    pipeline *p = &b->pipe;
    redisReply *r = NULL;

    pipeline_reset(p);
    if (pipeline_add_command(p, -1, &b->scratch->cmd, s) == 0 &&
        pipeline_run(p) == 0)
        r = pipeline_take(p, 0);
    if (!r)
        broker_failed(b, s->name, NULL);
    pipeline_reset(p);
    return r;
}

long broker_renew(broker *b, broker_queue *q, const char *consumer,
                  const char *const *entry_ids, const char *const *task_ids,
                  const char *const *tokens, size_t n, int64_t *idle_ms,
                  int64_t *ttl_ms)
{
    command *cmd = &b->scratch->cmd;
    char key[KEY_MAX];
    long result = -1;
    redisReply *r;

    if (!broker_connected(b))
        return -1;
    /* A worker may hold hundreds of tasks of a type: the call grows with
     * them (3n + 4 arguments), with no limit. */
    script_renew_keys(cmd, b->cfg->prefix, q->type);
    for (size_t i = 0; i < n; i++)
        command_push_key_copy(cmd, key,
                              call_task_key(q,
                                            script_renew_spec.then_keys[0].what,
                                            task_ids[i], key));
    /* slot_offset: with a concurrency_limit, the length of
     * "<prefix>:{<type>}:lock:", so renew extends the slots too. */
    script_renew_args(
        cmd, WHARF_GROUP, consumer, call_number(q->pol->lock_ttl_ms).s,
        call_number(q->pol->concurrency_limit
                        ? (long long)(q->task_prefix_len + strlen("lock:"))
                        : 0)
            .s);
    for (size_t i = 0; i < n; i++)
        call_push_str(b, entry_ids[i]);
    for (size_t i = 0; i < n; i++)
        call_push_str(b, tokens[i]);
    r = call_run(b, &script_renew);
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 * n) {
        result = 0;
        for (size_t i = 0; i < n; i++) {
            const redisReply *idle = r->element[2 * i];
            const redisReply *ttl = r->element[2 * i + 1];
            idle_ms[i] = idle->type == REDIS_REPLY_INTEGER ? idle->integer : -1;
            ttl_ms[i] = ttl->type == REDIS_REPLY_INTEGER ? ttl->integer : -2;
            if (idle_ms[i] >= 0)
                result++;
        }
    } else if (r) {
        broker_failed(b, "renew", r);
    }
    freeReplyObject(r);
    return result;
}

/* The next call from *cursor on, or false when no job is left. */
static bool next_call(const broker *b, const batch_ops *ops,
                      const broker_job *jobs, size_t n, size_t *cursor,
                      batch_call *c)
{
    size_t i = *cursor;
    const broker_job *lead = NULL;

    while (i < n && !ops->takes(&jobs[i]))
        i++;
    if (i == n) {
        *cursor = n;
        return false;
    }
    c->first = i;
    c->n = 0;
    for (; i < n; i++) {
        if (!ops->takes(&jobs[i]))
            continue;
        if (c->n == ops->max_tasks || (lead && !ops->shares(b, lead, &jobs[i])))
            break;
        lead = lead ? lead : &jobs[i];
        c->n++;
    }
    c->end = i;
    *cursor = i;
    return true;
}

/* After a call's WAIT that the master's move did not fail (pipeline.h):
 * says once when replicas stop keeping up with min_replicas_ack, and once
 * when they are back. A finish Redis took stays taken; what a failover
 * could lose then is the finish itself, and the task would run again. */
static void replicas_acked(broker *b, int fewest, const char *what)
{
    bool short_now = fewest < (int)b->cfg->min_replicas_ack;

    if (short_now == b->replicas_short)
        return;
    b->replicas_short = short_now;
    if (short_now)
        log_fields(WHARF_LOG_WARN,
                   "fewer replicas than min_replicas_ack acknowledged a "
                   "write in time; a failover now could run such tasks again",
                   (log_field[]){
                       LOG_STR("call", what), LOG_INT("acknowledged", fewest),
                       LOG_INT("min_replicas_ack", b->cfg->min_replicas_ack)},
                   3);
    else
        log_msg(WHARF_LOG_INFO, "%s: replicas acknowledge again", what);
}

/* How long a WAIT may take: min_replicas_timeout, or while replicas are
 * known short a tenth of it (at least WAIT_SHORT_MIN_MS), so a replica
 * that is gone (or, after a Sentinel switchover, the old master not yet
 * resynced as the new one's replica) costs each batch that much rather
 * than the whole timeout. The first WAIT that counts enough replicas
 * again brings the whole timeout back. */
static int wait_timeout(const broker *b)
{
    int64_t full = b->cfg->min_replicas_timeout_ms, part = full / 10;

    if (!b->replicas_short)
        return (int)full;
    return (int)(part < WAIT_SHORT_MIN_MS
                     ? (full < WAIT_SHORT_MIN_MS ? full : WAIT_SHORT_MIN_MS)
                     : part);
}

int broker_wait_replicas(broker *b, const char *what, int max_ms)
{
    pipeline *p = &b->pipe;
    int timeout = wait_timeout(b), rc;

    if (b->cfg->min_replicas_ack == 0)
        return 0;
    if (!broker_connected(b))
        return -1;
    pipeline_reset(p);
    p->min_replicas = (int)b->cfg->min_replicas_ack;
    p->wait_timeout_ms = timeout < max_ms ? timeout : max_ms;
    rc = pipeline_wait_all(p);
    if (rc != 0)
        broker_failed(b, what, NULL);
    else if (p->fewest_acks >= 0)
        replicas_acked(b, p->fewest_acks, what);
    return rc;
}

/* Runs ops over the jobs it takes, up to PIPE_CALLS calls a round trip,
 * each call sent to the node of its queue, every node at once (see
 * pipeline.h: redirections and NOSCRIPT are settled there). Every reply
 * that came is applied, even when the round trip broke, so the jobs
 * answered know it (a begun lock is then released). 0, or -1 on a
 * connection error (the jobs not answered are left as they were). */
int call_run_batch(broker *b, const batch_ops *ops, broker_job *jobs, size_t n)
{
    broker_scratch *sc = b->scratch;
    pipeline *p = &b->pipe;
    size_t cursor = 0;
    int rc = 0;

    if (!broker_connected(b))
        return -1;
    while (rc == 0) {
        int calls = 0;
        pipeline_reset(p);
        while (calls < PIPE_CALLS &&
               next_call(b, ops, jobs, n, &cursor, &sc->calls[calls])) {
            const broker_queue *q = jobs[sc->calls[calls].first].queue;

            ops->build(b, jobs, &sc->calls[calls]);
            if (pipeline_add_command(p, (long)q->hash_slot, &sc->cmd,
                                     ops->s) != 0) {
                snprintf(b->errstr, sizeof(b->errstr),
                         "building a script call: %s", p->errstr);
                pipeline_reset(p);
                return -1;
            }
            calls++;
        }
        if (calls == 0)
            break;
        p->wait = b->cfg->min_replicas_ack > 0 &&
                  (ops->durable ||
                   (ops->durable_on_sentinel &&
                    b->url.kind == REDIS_URL_SENTINEL && !b->replicas_short));
        p->min_replicas = (int)b->cfg->min_replicas_ack;
        p->wait_timeout_ms = wait_timeout(b);
        if (pipeline_run(p) != 0)
            rc = -1;
        for (int i = 0; i < calls; i++)
            if (pipeline_reply(p, (size_t)i))
                ops->apply(b, jobs, &sc->calls[i],
                           pipeline_reply(p, (size_t)i));
        if (p->wait && rc == 0)
            replicas_acked(b, p->fewest_acks, ops->what);
    }
    if (rc != 0)
        broker_failed(b, ops->what, NULL);
    pipeline_reset(p);
    return rc;
}

bool call_same_queue(const broker *b, const broker_job *a, const broker_job *c)
{
    (void)b;
    return a->queue == c->queue;
}
