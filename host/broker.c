/* The broker: wharfd's side of Redis; see broker.h. Round trips and
 * script calls are the hot path's cost, so a batch costs three round
 * trips (claim, begin, finish) and two script calls per queue. */
#include "broker.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wharf/client.h>

#include "broker_internal.h"
#include "claim.h"
#include "lua_scripts.h"
#include "node_scripts.h"

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
    nodes_set_scripts(&b->nodes, (const script *const *)node_scripts_all);
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
        q->priority = policies[i]->priority;
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
        q->hash_slot = command_key_slot(q->stream, strlen(q->stream));
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
    return nodes_name(&b->nodes, nodes_of_slot(&b->nodes, q->hash_slot));
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
        int node = nodes_of_slot(&b->nodes, b->queues[i].hash_slot);
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++)
            seen = nodes_of_slot(&b->nodes, b->queues[k].hash_slot) == node;
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

/* rates: adds the HSET of q's rate keys to its policy hash, for wharf
 * stats and the console: "rate_limit 50/s rate_burst 1 limit_key off". */
static void add_rate_policy(pipeline *p, const broker_queue *q)
{
    char rate[32];

    config_format_rate(&q->pol->rate_limit, rate, sizeof(rate));
    pipeline_addf(p, q->policy_key,
                  "HSET %s rate_limit %s rate_burst %" PRIu64 " limit_key %s",
                  q->policy_key, rate, q->pol->rate_burst,
                  q->pol->limit_key[0] ? q->pol->limit_key : "off");
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
        add_rate_policy(p, q);
        /* Its own command: the set is in no type's hash slot. */
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

size_t broker_claimable(const broker *b)
{
    size_t n = 0;

    for (size_t i = 0; i < b->n_queues; i++)
        if (!b->queues[i].paused)
            n++;
    return n;
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
    /* A history read that came back empty means all of ours were read (a
     * paused queue was not read at all). */
    for (size_t i = 0; i < b->n_queues; i++)
        if (!b->queues[i].history_done && !b->queues[i].paused && !got[i])
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
