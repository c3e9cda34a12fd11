/* The broker: wharfd's side of Redis; see broker.h. Round trips and
 * script calls are the hot path's cost, so a batch costs three round
 * trips (claim, begin, finish) and two script calls per queue. */
#include "broker.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wharf/client.h>

#include "claim.h"
#include "client_ids.h"
#include "log.h"
#include "lua_scripts.h"
#include "scripts.h"

/* Ids per promote or trim script call. */
#define BROKER_MOVE_BATCH 100
/* Promote or trim calls per queue per maintenance pass, so one busy queue
 * cannot hold a worker in maintenance for long. */
#define BROKER_MOVE_ROUNDS 10
/* Tasks per begin or finish script call: a call keeps Redis busy for well
 * under a millisecond. */
#define CALL_TASKS 64
/* Script calls per round trip. */
#define PIPE_CALLS 16
/* The shortest WAIT while replicas are known short (wait_timeout). */
#define WAIT_SHORT_MIN_MS 10

/* One call: the jobs [first, end) it was built from, n of them taken. */
typedef struct batch_call {
    size_t first, end, n;
} batch_call;

/* Every script call is built in cmd, kept from call to call, so a batch
 * allocates nothing beyond what hiredis does once the buffers have grown
 * to the largest call. */
struct broker_scratch {
    command cmd;
    char kinds[CALL_TASKS + 1]; /* finish: one letter per task */
    bool resend;                /* finish: broker_finish_resend */
    batch_call calls[PIPE_CALLS];
};

int broker_init(broker *b, const config *cfg, const char *const *types,
                const policy *const *policies, size_t n, const char *consumer)
{
    char url_text[600];
    const char *url = cfg->redis_url;

    memset(b, 0, sizeof(*b));
    b->cfg = cfg;
    b->timeout_ms = BROKER_TIMEOUT_MS;
    if (strcmp(url, "embedded") == 0) {
        snprintf(url_text, sizeof(url_text), "unix://%s/redis.sock",
                 cfg->data_dir);
        url = url_text;
    }
    if (redis_url_parse(url, &b->url, b->errstr, sizeof(b->errstr)) != 0)
        return -1;
    nodes_init(&b->nodes, &b->url, cfg->redis_password, BROKER_TIMEOUT_MS);
    /* Every node the broker reaches has every script before its first
     * call, so a pipeline of EVALSHA never comes back NOSCRIPT. */
    nodes_set_scripts(&b->nodes, (const script *const *)scripts_all);
    pipeline_init(&b->pipe, &b->nodes);
    snprintf(b->consumer, sizeof(b->consumer), "%s", consumer);
    b->queues = calloc(n ? n : 1, sizeof(*b->queues));
    b->scratch = calloc(1, sizeof(*b->scratch));
    b->claims = claim_create(n);
    if (!b->queues || !b->scratch || !b->claims) {
        snprintf(b->errstr, sizeof(b->errstr), "out of memory");
        return -1;
    }
    b->n_queues = n;
    for (size_t i = 0; i < n; i++) {
        broker_queue *q = &b->queues[i];
        q->type = types[i];
        q->pol = policies[i];
        const char *p = cfg->prefix, *t = q->type;
        if (key_of_type(q->stream, KEY_MAX, p, t, "stream") < 0 ||
            key_of_type(q->delayed, KEY_MAX, p, t, "delayed") < 0 ||
            key_of_type(q->dead, KEY_MAX, p, t, "dead") < 0 ||
            key_of_type(q->fence, KEY_MAX, p, t, "fence") < 0 ||
            key_of_type(q->policy_key, KEY_MAX, p, t, "policy") < 0 ||
            key_of_type(q->entries, KEY_MAX, p, t, "entries") < 0 ||
            key_of_type(q->task_prefix, KEY_MAX, p, t, "") < 0) {
            snprintf(b->errstr, sizeof(b->errstr), "type '%s': key too long",
                     q->type);
            return -1;
        }
        q->task_prefix_len = strlen(q->task_prefix);
        q->slot = command_key_slot(q->stream, strlen(q->stream));
    }
    return 0;
}

void broker_disconnect(broker *b)
{
    claim_drop(b->claims, b->n_queues);
    nodes_disconnect(&b->nodes);
}

bool broker_connected(const broker *b)
{
    return nodes_up(&b->nodes);
}

uint64_t broker_round_trips(const broker *b)
{
    return b->round_trips + b->pipe.round_trips;
}

const char *broker_node_of(const broker *b, const broker_queue *q)
{
    return nodes_name(&b->nodes, nodes_of_slot(&b->nodes, q->slot));
}

void broker_destroy(broker *b)
{
    if (!b)
        return;
    broker_disconnect(b);
    claim_destroy(b->claims, b->n_queues);
    b->claims = NULL;
    free(b->queues);
    b->queues = NULL;
    b->n_queues = 0;
    if (b->scratch)
        command_free(&b->scratch->cmd);
    free(b->scratch);
    b->scratch = NULL;
    pipeline_free(&b->pipe);
    nodes_free(&b->nodes);
}

/* An evicted lock, lease or result silently breaks every guarantee, so a
 * Redis that may evict is refused unless the manifest allows it. On a
 * cluster each node that serves a queue is asked. */
static int check_eviction(broker *b)
{
    pipeline *p = &b->pipe;
    int rc = 0;

    if (b->cfg->allow_eviction)
        return 0;
    pipeline_reset(p);
    for (size_t i = 0; i < b->n_queues; i++) {
        int node = nodes_of_slot(&b->nodes, b->queues[i].slot);
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++)
            seen = nodes_of_slot(&b->nodes, b->queues[k].slot) == node;
        if (!seen)
            pipeline_addf(p, b->queues[i].stream,
                          "CONFIG GET maxmemory-policy");
    }
    if (b->n_queues == 0)
        pipeline_addf(p, NULL, "CONFIG GET maxmemory-policy");
    if (pipeline_run(p) != 0) {
        broker_failed(b, "CONFIG GET", NULL);
        return -1;
    }
    for (size_t i = 0; i < p->n && rc == 0; i++) {
        const redisReply *r = pipeline_reply(p, i);
        const char *node = nodes_name(&b->nodes, p->e[i].node);
        if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
            r->element[1]->type == REDIS_REPLY_STRING) {
            if (strcmp(r->element[1]->str, "noeviction") != 0) {
                snprintf(b->errstr, sizeof(b->errstr),
                         "Redis maxmemory-policy is '%s'%s%s: an evicted "
                         "lock or result breaks wharf's guarantees; set it "
                         "to noeviction, or [redis] allow_eviction = yes",
                         r->element[1]->str, b->nodes.cluster ? " on " : "",
                         b->nodes.cluster ? node : "");
                rc = -2;
            }
        } else {
            snprintf(b->errstr, sizeof(b->errstr),
                     "cannot read Redis maxmemory-policy (%s); set [redis] "
                     "allow_eviction = yes to start without the check",
                     r->type == REDIS_REPLY_ERROR ? r->str
                                                  : "unexpected reply");
            rc = -2;
        }
    }
    pipeline_reset(p);
    return rc;
}

/* Creates each queue's group (BUSYGROUP is fine), publishes its policy for
 * the enqueue script and adds it to the types set, in one pipeline. */
static int setup_queues(broker *b)
{
    pipeline *p = &b->pipe;
    char types_key[KEY_MAX];
    int rc = 0;

    key_global(types_key, sizeof(types_key), b->cfg->prefix, "types");
    pipeline_reset(p);
    for (size_t i = 0; i < b->n_queues; i++) {
        const broker_queue *q = &b->queues[i];
        char max_payload[24], max_backlog[24], ttl[24], visibility[24];

        snprintf(max_payload, sizeof(max_payload), "%" PRIu64,
                 q->pol->max_payload);
        snprintf(max_backlog, sizeof(max_backlog), "%" PRIu64,
                 q->pol->max_backlog);
        snprintf(ttl, sizeof(ttl), "%" PRId64, q->pol->idempotency_ttl_ms);
        snprintf(visibility, sizeof(visibility), "%" PRId64,
                 q->pol->visibility_timeout_ms);
        pipeline_addf(p, q->stream, "XGROUP CREATE %s %s 0 MKSTREAM", q->stream,
                      WHARF_GROUP);
        pipeline_addf(p, q->policy_key,
                      "HSET %s max_payload %s max_backlog %s idempotency %s "
                      "idempotency_ttl %s visibility_timeout %s protocol %d",
                      q->policy_key, max_payload, max_backlog,
                      q->pol->idempotency == IDEMPOTENCY_NONE ? "none"
                                                              : "payload",
                      ttl, visibility, WHARF_PROTOCOL);
        /* Its own command: the set is in no type's slot. */
        pipeline_addf(p, types_key, "SADD %s %s", types_key, q->type);
    }
    if (pipeline_run(p) != 0) {
        broker_failed(b, "setting up queues", NULL);
        pipeline_reset(p);
        return -1;
    }
    for (size_t i = 0; i < p->n && rc == 0; i++) {
        const redisReply *r = pipeline_reply(p, i);
        if (r->type == REDIS_REPLY_ERROR &&
            strncmp(r->str, "BUSYGROUP", 9) != 0) {
            broker_failed(b, "setting up queues", r);
            rc = -1;
        }
    }
    pipeline_reset(p);
    return rc;
}

int broker_connect(broker *b)
{
    int rc;

    broker_disconnect(b);
    b->nodes.timeout_ms = b->timeout_ms;
    rc = nodes_connect(&b->nodes);
    b->round_trips++;
    if (rc != 0) {
        b->redis_errors++;
        snprintf(b->errstr, sizeof(b->errstr), "%s", b->nodes.errstr);
        /* A refused password, a seed not in cluster mode or a master no
         * sentinel knows do not fix themselves by retrying. */
        return rc;
    }
    rc = check_eviction(b);
    if (rc == 0)
        rc = setup_queues(b);
    if (rc != 0) {
        broker_disconnect(b);
        return rc;
    }
    /* After any reconnect, first re-read what is already ours. */
    for (size_t i = 0; i < b->n_queues; i++) {
        b->queues[i].history_done = false;
        snprintf(b->queues[i].history_from, sizeof(b->queues[i].history_from),
                 "0");
    }
    return 0;
}

redisReply *broker_claim(broker *b, unsigned count, int block_ms)
{
    if (!broker_connected(b))
        return NULL;
    return claim_next(b, count, block_ms);
}

static broker_queue *queue_of_stream(broker *b, const char *stream)
{
    for (size_t i = 0; i < b->n_queues; i++)
        if (strcmp(b->queues[i].stream, stream) == 0)
            return &b->queues[i];
    return NULL;
}

size_t broker_entries(broker *b, broker_queue *q, const redisReply *entries,
                      broker_job *jobs, size_t max)
{
    size_t n = 0;

    (void)b;
    if (entries->type != REDIS_REPLY_ARRAY)
        return 0;
    for (size_t j = 0; j < entries->elements && n < max; j++) {
        const redisReply *e = entries->element[j];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 1 ||
            e->element[0]->type != REDIS_REPLY_STRING)
            continue;
        memset(&jobs[n], 0, sizeof(jobs[n]));
        entry_parse(&jobs[n].e, e, q->type, q->pol);
        jobs[n].queue = q;
        n++;
    }
    return n;
}

size_t broker_jobs(broker *b, const redisReply *claim, broker_job *jobs,
                   size_t max)
{
    size_t n = 0;
    bool got[b->n_queues ? b->n_queues : 1];

    memset(got, 0, sizeof(got));
    for (size_t i = 0; claim->type == REDIS_REPLY_ARRAY && i < claim->elements;
         i++) {
        const redisReply *s = claim->element[i];
        broker_queue *q;
        size_t added;
        if (s->type != REDIS_REPLY_ARRAY || s->elements != 2 ||
            s->element[0]->type != REDIS_REPLY_STRING)
            continue;
        q = queue_of_stream(b, s->element[0]->str);
        if (!q)
            continue;
        added = broker_entries(b, q, s->element[1], jobs + n, max - n);
        if (added > 0 && !q->history_done)
            snprintf(q->history_from, sizeof(q->history_from), "%s",
                     jobs[n + added - 1].e.entry_id);
        got[q - b->queues] = added > 0;
        n += added;
    }
    /* A history read that came back empty means all of ours were read. */
    for (size_t i = 0; i < b->n_queues; i++)
        if (!b->queues[i].history_done && !got[i])
            b->queues[i].history_done = true;
    return n;
}

broker_queue *broker_queue_of(broker *b, const char *type)
{
    for (size_t i = 0; i < b->n_queues; i++)
        if (strcmp(b->queues[i].type, type) == 0)
            return &b->queues[i];
    return NULL;
}

redisReply *broker_autoclaim(broker *b, broker_queue *q, int64_t min_idle_ms,
                             unsigned count)
{
    redisReply *r;

    if (!broker_connected(b))
        return NULL;
    r = pipeline_command(
        &b->pipe, q->stream, "XAUTOCLAIM %s %s %s %lld 0-0 COUNT %u", q->stream,
        WHARF_GROUP, b->consumer, (long long)min_idle_ms, count);
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 2) {
        broker_failed(b, "XAUTOCLAIM", r);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

redisReply *broker_entry(broker *b, broker_queue *q, const char *entry_id)
{
    redisReply *r;

    if (!broker_connected(b))
        return NULL;
    r = pipeline_command(&b->pipe, q->stream, "XRANGE %s %s %s", q->stream,
                         entry_id, entry_id);
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        broker_failed(b, "XRANGE", r);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

int broker_heartbeat(broker *b, const char *key, const char *value,
                     int64_t ttl_ms)
{
    pipeline *p = &b->pipe;
    char ttl[24];
    redisReply *r = NULL;
    int rc = -1;

    if (!broker_connected(b))
        return -1;
    snprintf(ttl, sizeof(ttl), "%" PRId64, ttl_ms);
    if (script_heartbeat_call(&p->cmd, key, value, ttl) == 0)
        r = pipeline_call(p, &script_heartbeat, &p->cmd);
    if (r && r->type == REDIS_REPLY_INTEGER)
        rc = r->integer == 1 ? 1 : 0;
    else
        broker_failed(b, "heartbeat", r);
    freeReplyObject(r);
    return rc;
}

int broker_release_key(broker *b, const char *key, const char *value)
{
    pipeline *p = &b->pipe;
    redisReply *r = NULL;
    int rc = -1;

    if (!broker_connected(b))
        return -1;
    if (script_release_call(&p->cmd, key, value, NULL) == 0)
        r = pipeline_call(p, &script_release, &p->cmd);
    if (r && r->type == REDIS_REPLY_INTEGER)
        rc = 0;
    else
        broker_failed(b, "release", r);
    freeReplyObject(r);
    return rc;
}

/* ---- batched script calls ----
 * begin, finish and release run as script calls that each carry a run of
 * consecutive jobs of one queue (and, for finish, one consumer), up to
 * CALL_TASKS of them; up to PIPE_CALLS calls go in one round trip. Each
 * is built in the scratch's command, whose buffers are kept from call to
 * call, so a batch allocates nothing beyond what hiredis does once they
 * have grown to the largest call. */

/* What one batched script does with jobs. */
typedef struct batch_ops {
    const script *s;
    const char *what;         /* for messages */
    bool durable;             /* WAIT for min_replicas_ack replicas after it */
    bool durable_on_sentinel; /* so too on a Sentinel master, while its
                                 replicas keep up (see begin_ops) */
    size_t max_tasks;         /* per call */
    bool (*takes)(const broker_job *j);
    bool (*shares)(const broker *b, const broker_job *a, const broker_job *c);
    /* Builds the call's keys and arguments with push/push_key. */
    void (*build)(broker *b, broker_job *jobs, const batch_call *c);
    /* Reads the call's reply into its jobs (r may be an error). */
    void (*apply)(broker *b, broker_job *jobs, const batch_call *c,
                  const redisReply *r);
} batch_ops;

static void push(broker *b, const void *data, size_t len)
{
    command_push(&b->scratch->cmd, data, len);
}

static void push_str(broker *b, const char *s)
{
    command_push_str(&b->scratch->cmd, s);
}

/* A number as the generated argument functions take it (text). */
typedef struct number_text {
    char s[24];
} number_text;

static number_text text_of(long long value)
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
static size_t task_key(const broker_queue *q, const char *what, const char *id,
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
static void push_key(broker *b, const broker_job *j, const char *what)
{
    char key[KEY_MAX];
    size_t len = task_key(j->queue, what, j->e.task.id, key);

    command_push_key_copy(&b->scratch->cmd, key, len);
}

/* Runs the one call built in the scratch's command: its reply (caller
 * frees), or NULL with b->errstr set. */
static redisReply *run_call(broker *b, const script *s)
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
        command_push_key_copy(
            cmd, key,
            task_key(q, script_renew_spec.then_keys[0].what, task_ids[i], key));
    script_renew_args(cmd, WHARF_GROUP, consumer,
                      text_of(q->pol->lock_ttl_ms).s);
    for (size_t i = 0; i < n; i++)
        push_str(b, entry_ids[i]);
    for (size_t i = 0; i < n; i++)
        push_str(b, tokens[i]);
    r = run_call(b, &script_renew);
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

/* Runs ops over the jobs it takes, up to PIPE_CALLS calls a round trip,
 * each call sent to the node of its queue, every node at once (see
 * pipeline.h: redirections and NOSCRIPT are settled there). Every reply
 * that came is applied, even when the round trip broke, so the jobs
 * answered know it (a begun lock is then released). 0, or -1 on a
 * connection error (the jobs not answered are left as they were). */
static int run_batch(broker *b, const batch_ops *ops, broker_job *jobs,
                     size_t n)
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
            ops->build(b, jobs, &sc->calls[calls]);
            if (pipeline_add_command(
                    p, (long)jobs[sc->calls[calls].first].queue->slot, &sc->cmd,
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

/* ---- begin ---- */

static bool job_begins(const broker_job *j)
{
    return !j->e.deleted && j->e.bad[0] == '\0';
}

static bool same_queue(const broker *b, const broker_job *a,
                       const broker_job *c)
{
    (void)b;
    return a->queue == c->queue;
}

/* Pushes the key <what>:<id> of every job of c that begins. */
static void push_keys_of(broker *b, broker_job *jobs, const batch_call *c,
                         const char *what)
{
    for (size_t i = c->first; i < c->end; i++)
        if (job_begins(&jobs[i]))
            push_key(b, &jobs[i], what);
}

/* KEYS and ARGV as sdk/lua/begin.lua states them: its numbered keys,
 * then each "then" key of every job that begins (result:<id>...,
 * cancel:<id>..., lock:<id>...); its numbered arguments, then the entry
 * ids. */
static void begin_build(broker *b, broker_job *jobs, const batch_call *c)
{
    const broker_queue *q = jobs[c->first].queue;
    const script_spec *spec = &script_begin_spec;
    command *cmd = &b->scratch->cmd;

    script_begin_keys(cmd, b->cfg->prefix, q->type);
    for (size_t k = 0; k < spec->n_then_keys; k++)
        push_keys_of(b, jobs, c, spec->then_keys[k].what);
    /* id_offset: the length of "<prefix>:{<type>}:result:". */
    script_begin_args(
        cmd, text_of(q->pol->lock_ttl_ms).s, jobs[c->first].owner,
        text_of((long long)(q->task_prefix_len + strlen("result:"))).s);
    for (size_t i = c->first; i < c->end; i++)
        if (job_begins(&jobs[i]))
            push_str(b, jobs[i].e.entry_id);
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

/* One element per task: 0 (cached), -1 (locked), -2 (cancelled) or the
 * lock value. */
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
        if (v->type == REDIS_REPLY_INTEGER) {
            j->begin = v->integer == 0    ? BEGIN_CACHED
                       : v->integer == -2 ? BEGIN_CANCELLED
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
    .shares = same_queue,
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
    /* Stored before anything is sent: if the replies are lost, the
     * release knows whose locks to look for. */
    for (size_t i = 0; i < n; i++)
        if (job_begins(&jobs[i]))
            memcpy(jobs[i].owner, owner, sizeof(owner));
    return run_batch(b, &begin_ops, jobs, n);
}

/* ---- finish ---- */

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
    push_str(b, j->e.task.id);
    push(b, j->e.task.payload ? (const void *)j->e.task.payload : "",
         j->e.task.payload_len);
    command_push_int(&b->scratch->cmd, j->next_attempt);
    push_str(b, j->e.enqueued_at[0] ? j->e.enqueued_at : "0");
    push_str(b, j->e.task.trace);
    push_str(b, j->reason ? j->reason : "");
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
            push_key(b, &jobs[i], "lock");
    for (size_t i = c->first; i < c->end; i++)
        if (job_finishes(&jobs[i]) && jobs[i].finish != FINISH_ACK)
            push_key(b, &jobs[i], record_of(jobs[i].finish));
    for (size_t i = c->first; i < c->end; i++)
        if (job_finishes(&jobs[i]))
            push_key(b, &jobs[i], "cancel");
    for (size_t i = c->first; i < c->end; i++)
        if (job_finishes(&jobs[i]))
            sc->kinds[t++] = finish_letter(jobs[i].finish);
    sc->kinds[t] = '\0';
    /* id_offset: the length of "<prefix>:{<type>}:cancel:". */
    script_finish_args(
        cmd, WHARF_GROUP, consumer_of(b, lead),
        text_of(q->pol->result_ttl_ms).s, text_of(q->pol->dead_ttl_ms).s,
        q->type, sc->resend ? "resend" : "", sc->kinds,
        text_of((long long)(q->task_prefix_len + strlen("cancel:"))).s);
    for (size_t i = c->first; i < c->end; i++)
        if (job_finishes(&jobs[i]))
            push_str(b, jobs[i].e.entry_id);
    /* Only a run that took the lock checks and releases it. */
    for (size_t i = c->first; i < c->end; i++)
        if (job_finishes(&jobs[i]) && jobs[i].finish != FINISH_ACK)
            push_str(b, jobs[i].begin == BEGIN_RUN ? jobs[i].token : "");
    for (size_t i = c->first; i < c->end; i++) {
        const broker_job *j = &jobs[i];
        if (!job_finishes(j) || j->finish == FINISH_ACK ||
            j->finish == FINISH_CANCEL)
            continue;
        if (j->finish == FINISH_OK) {
            push(b, j->result ? (const void *)j->result : "", j->result_len);
            continue;
        }
        push_envelope(b, j);
        if (j->finish != FINISH_DEAD)
            command_push_int(cmd, j->delay_ms);
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
        return j->begin == BEGIN_LOCKED ? OUTCOME_LOCKED : OUTCOME_RESCHEDULED;
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

int broker_finish(broker *b, broker_job *jobs, size_t n)
{
    return run_batch(b, &finish_ops, jobs, n);
}

int broker_finish_resend(broker *b, broker_job *jobs, size_t n)
{
    int rc;

    b->scratch->resend = true;
    rc = run_batch(b, &finish_ops, jobs, n);
    b->scratch->resend = false;
    return rc;
}

/* ---- release ---- */

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

    task_key(j->queue, "lock", j->e.task.id, key);
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
    .shares = same_queue,
    .build = release_build,
    .apply = release_apply,
};

int broker_release(broker *b, broker_job *jobs, size_t n)
{
    return run_batch(b, &release_ops, jobs, n);
}

/* Runs a maintenance script (promote, trim_dead) over ids, as its
 * header states: its numbered keys of q's type, then its "then" key of
 * each id; its numbered argument lead_arg (if it has one), then the ids.
 * Returns the script's integer, or -1 on a connection error. */
static long move_ids(broker *b, const script_spec *spec,
                     const broker_queue *q, const char *lead_arg,
                     const redisReply *ids)
{
    const script *s = spec->script;
    const char *what = spec->then_keys[0].what;
    command *cmd = &b->scratch->cmd;
    char key[KEY_MAX];
    long result = -1;
    redisReply *r;

    script_spec_keys(cmd, spec, b->cfg->prefix, q->type, NULL);
    for (size_t i = 0; i < ids->elements; i++)
        command_push_key_copy(cmd, key,
                              task_key(q, what, ids->element[i]->str, key));
    if (spec->n_args > 0)
        push_str(b, lead_arg);
    for (size_t i = 0; i < ids->elements; i++)
        push(b, ids->element[i]->str, ids->element[i]->len);
    r = run_call(b, s);
    if (!r)
        return -1;
    if (r->type == REDIS_REPLY_INTEGER) {
        result = (long)r->integer;
    } else {
        /* The connection is fine; the ids stay where they are and the
         * next pass tries them again. */
        broker_failed(b, s->name, r);
        log_fields(WHARF_LOG_ERROR, "maintenance script failed",
                   (log_field[]){LOG_STR("type", q->type),
                                 LOG_STR("error", b->errstr)},
                   2);
        result = 0;
    }
    freeReplyObject(r);
    return result;
}

/* True if every element of r is a string (ids from ZRANGE and the like). */
static bool all_strings(const redisReply *r)
{
    for (size_t i = 0; i < r->elements; i++)
        if (r->element[i]->type != REDIS_REPLY_STRING)
            return false;
    return true;
}

long broker_promote(broker *b)
{
    long total = 0;
    char limit[16];

    if (!broker_connected(b))
        return -1;
    snprintf(limit, sizeof(limit), "%d", BROKER_MOVE_BATCH);
    for (size_t i = 0; i < b->n_queues; i++) {
        broker_queue *q = &b->queues[i];
        for (int round = 0; round < BROKER_MOVE_ROUNDS; round++) {
            pipeline *p = &b->pipe;
            redisReply *due = NULL;
            long moved;

            if (script_due_call(&p->cmd, b->cfg->prefix, q->type, limit) == 0)
                due = pipeline_call(p, &script_due, &p->cmd);
            if (!due) {
                broker_failed(b, "due", NULL);
                return -1;
            }
            if (due->type != REDIS_REPLY_ARRAY || !all_strings(due)) {
                broker_failed(b, "due", due);
                freeReplyObject(due);
                break;
            }
            if (due->elements == 0) {
                freeReplyObject(due);
                break;
            }
            moved = move_ids(b, &script_promote_spec, q, NULL, due);
            freeReplyObject(due);
            if (moved < 0)
                return -1;
            total += moved;
            if (moved < BROKER_MOVE_BATCH)
                break;
        }
    }
    return total;
}

long broker_trim_dead(broker *b)
{
    long total = 0;

    if (!broker_connected(b))
        return -1;
    for (size_t i = 0; i < b->n_queues; i++) {
        broker_queue *q = &b->queues[i];
        for (int round = 0; round < BROKER_MOVE_ROUNDS; round++) {
            long long size, excess;
            char max[24];
            redisReply *r =
                pipeline_command(&b->pipe, q->dead, "ZCARD %s", q->dead);
            long removed;

            if (!r || r->type != REDIS_REPLY_INTEGER) {
                broker_failed(b, "ZCARD", r);
                freeReplyObject(r);
                return r ? total : -1;
            }
            size = r->integer;
            freeReplyObject(r);
            excess = size - (long long)q->pol->dead_max;
            if (excess <= 0)
                break;
            if (excess > BROKER_MOVE_BATCH)
                excess = BROKER_MOVE_BATCH;
            r = pipeline_command(&b->pipe, q->dead, "ZRANGE %s 0 %lld", q->dead,
                                 excess - 1);
            if (!r || r->type != REDIS_REPLY_ARRAY || !all_strings(r)) {
                broker_failed(b, "ZRANGE", r);
                freeReplyObject(r);
                return r ? total : -1;
            }
            snprintf(max, sizeof(max), "%" PRIu64, q->pol->dead_max);
            removed = move_ids(b, &script_trim_dead_spec, q, max, r);
            freeReplyObject(r);
            if (removed < 0)
                return -1;
            total += removed;
            if (removed == 0)
                break;
        }
    }
    return total;
}
