/* The broker: wharfd's side of Redis; see broker.h. Round trips are the
 * hot path's cost, so a batch costs three: claim, begin, finish. */
#include "broker.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "scripts.h"

/* Redis command timeout: far above any BLOCK we ask for. */
#define BROKER_TIMEOUT_MS 10000
/* Ids per promote or trim script call. */
#define BROKER_MOVE_BATCH 100
/* Promote or trim calls per queue per maintenance pass, so one busy queue
 * cannot hold a worker in maintenance for long. */
#define BROKER_MOVE_ROUNDS 10

static const char *const outcome_names[OUTCOME_COUNT] = {
    "ok", "retry", "dead", "cached", "locked", "stale"};

const char *task_outcome_name(task_outcome outcome)
{
    return outcome < OUTCOME_COUNT ? outcome_names[outcome] : "unknown";
}

int broker_init(broker *b, const config *cfg, const char *const *types,
                const policy *const *policies, size_t n, const char *consumer)
{
    char url_text[600];
    const char *url = cfg->redis_url;

    memset(b, 0, sizeof(*b));
    b->cfg = cfg;
    if (strcmp(url, "embedded") == 0) {
        snprintf(url_text, sizeof(url_text), "unix://%s/redis.sock",
                 cfg->data_dir);
        url = url_text;
    }
    if (redis_url_parse(url, &b->url, b->errstr, sizeof(b->errstr)) != 0)
        return -1;
    snprintf(b->consumer, sizeof(b->consumer), "%s", consumer);
    b->queues = calloc(n ? n : 1, sizeof(*b->queues));
    if (!b->queues) {
        snprintf(b->errstr, sizeof(b->errstr), "out of memory");
        return -1;
    }
    b->n_queues = n;
    for (size_t i = 0; i < n; i++) {
        broker_queue *q = &b->queues[i];
        q->type = types[i];
        q->pol = policies[i];
        if (key_of_type(q->stream, KEY_MAX, cfg->prefix, q->type, "stream") < 0 ||
            key_of_type(q->delayed, KEY_MAX, cfg->prefix, q->type, "delayed") < 0 ||
            key_of_type(q->dead, KEY_MAX, cfg->prefix, q->type, "dead") < 0 ||
            key_of_type(q->fence, KEY_MAX, cfg->prefix, q->type, "fence") < 0 ||
            key_of_type(q->policy_key, KEY_MAX, cfg->prefix, q->type,
                        "policy") < 0) {
            snprintf(b->errstr, sizeof(b->errstr), "type '%s': key too long",
                     q->type);
            return -1;
        }
    }
    return 0;
}

void broker_disconnect(broker *b)
{
    redisFree(b->redis);
    b->redis = NULL;
}

void broker_destroy(broker *b)
{
    if (!b)
        return;
    broker_disconnect(b);
    free(b->queues);
    b->queues = NULL;
    b->n_queues = 0;
}

/* Records a failed command: the connection's error, or the error reply. */
static void command_failed(broker *b, const char *what, const redisReply *r)
{
    char where[400];

    b->redis_errors++;
    redis_url_describe(&b->url, where, sizeof(where));
    if (!r)
        snprintf(b->errstr, sizeof(b->errstr), "%s: %s: %s", where, what,
                 b->redis ? b->redis->errstr : "not connected");
    else if (r->type == REDIS_REPLY_ERROR)
        snprintf(b->errstr, sizeof(b->errstr), "%s: %s: %s", where, what,
                 r->str);
    else
        snprintf(b->errstr, sizeof(b->errstr), "%s: %s: unexpected reply",
                 where, what);
}

/* An evicted lock, lease or result silently breaks every guarantee, so a
 * Redis that may evict is refused unless the manifest allows it. */
static int check_eviction(broker *b)
{
    redisReply *r;
    int rc = 0;

    if (b->cfg->allow_eviction)
        return 0;
    r = redisCommand(b->redis, "CONFIG GET maxmemory-policy");
    b->round_trips++;
    if (!r) {
        command_failed(b, "CONFIG GET", r);
        return -1;
    }
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[1]->type == REDIS_REPLY_STRING) {
        if (strcmp(r->element[1]->str, "noeviction") != 0) {
            snprintf(b->errstr, sizeof(b->errstr),
                     "Redis maxmemory-policy is '%s': an evicted lock or "
                     "result breaks wharf's guarantees; set it to "
                     "noeviction, or [redis] allow_eviction = yes",
                     r->element[1]->str);
            rc = -2;
        }
    } else {
        snprintf(b->errstr, sizeof(b->errstr),
                 "cannot read Redis maxmemory-policy (%s); set [redis] "
                 "allow_eviction = yes to start without the check",
                 r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
        rc = -2;
    }
    freeReplyObject(r);
    return rc;
}

/* Creates each queue's group (BUSYGROUP is fine), publishes its policy for
 * the enqueue script and adds it to the types set, in one pipeline. */
static int setup_queues(broker *b)
{
    char types_key[KEY_MAX];
    int rc = 0;

    key_global(types_key, sizeof(types_key), b->cfg->prefix, "types");
    for (size_t i = 0; i < b->n_queues; i++) {
        const broker_queue *q = &b->queues[i];
        char max_payload[24], max_backlog[24], ttl[24];

        snprintf(max_payload, sizeof(max_payload), "%" PRIu64,
                 q->pol->max_payload);
        snprintf(max_backlog, sizeof(max_backlog), "%" PRIu64,
                 q->pol->max_backlog);
        snprintf(ttl, sizeof(ttl), "%" PRId64, q->pol->idempotency_ttl_ms);
        redisAppendCommand(b->redis, "XGROUP CREATE %s %s 0 MKSTREAM",
                           q->stream, WHARF_GROUP);
        redisAppendCommand(
            b->redis,
            "HSET %s max_payload %s max_backlog %s idempotency %s "
            "idempotency_ttl %s",
            q->policy_key, max_payload, max_backlog,
            q->pol->idempotency == IDEMPOTENCY_NONE ? "none" : "payload", ttl);
        redisAppendCommand(b->redis, "SADD %s %s", types_key, q->type);
    }
    b->round_trips++;
    for (size_t i = 0; i < 3 * b->n_queues; i++) {
        redisReply *r = NULL;
        if (redisGetReply(b->redis, (void **)&r) != REDIS_OK) {
            command_failed(b, "setting up queues", NULL);
            return -1;
        }
        if (r->type == REDIS_REPLY_ERROR &&
            strncmp(r->str, "BUSYGROUP", 9) != 0 && rc == 0) {
            command_failed(b, "setting up queues", r);
            rc = -1;
        }
        freeReplyObject(r);
    }
    return rc;
}

int broker_connect(broker *b)
{
    int rc;

    broker_disconnect(b);
    b->redis = redis_url_connect(&b->url, b->cfg->redis_password,
                                 BROKER_TIMEOUT_MS, b->errstr,
                                 sizeof(b->errstr));
    if (!b->redis) {
        b->redis_errors++;
        return -1;
    }
    rc = check_eviction(b);
    if (rc == 0)
        rc = setup_queues(b);
    for (size_t i = 0; rc == 0 && scripts_all[i]; i++) {
        b->round_trips++;
        if (script_load(b->redis, scripts_all[i], b->errstr,
                        sizeof(b->errstr)) != 0)
            rc = -1;
    }
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
    size_t n = b->n_queues;
    size_t argc = 0;
    const char **argv = NULL;
    char count_text[16], block_text[16];
    bool history = false;
    redisReply *r = NULL;

    if (!b->redis)
        return NULL;
    argv = malloc((10 + 2 * n) * sizeof(*argv));
    if (!argv) {
        snprintf(b->errstr, sizeof(b->errstr), "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        history = history || !b->queues[i].history_done;
    snprintf(count_text, sizeof(count_text), "%u", count ? count : 1);
    snprintf(block_text, sizeof(block_text), "%d", block_ms);
    argv[argc++] = "XREADGROUP";
    argv[argc++] = "GROUP";
    argv[argc++] = WHARF_GROUP;
    argv[argc++] = b->consumer;
    argv[argc++] = "COUNT";
    argv[argc++] = count_text;
    if (!history && block_ms > 0) {
        argv[argc++] = "BLOCK";
        argv[argc++] = block_text;
    }
    argv[argc++] = "STREAMS";
    for (size_t i = 0; i < n; i++)
        argv[argc++] = b->queues[i].stream;
    for (size_t i = 0; i < n; i++)
        argv[argc++] = b->queues[i].history_done ? ">"
                                                 : b->queues[i].history_from;
    r = redisCommandArgv(b->redis, (int)argc, argv, NULL);
    b->round_trips++;
    free(argv);
    if (!r || r->type == REDIS_REPLY_ERROR) {
        command_failed(b, "XREADGROUP", r);
        freeReplyObject(r);
        return NULL;
    }
    return r;
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

    if (!b->redis)
        return NULL;
    r = redisCommand(b->redis, "XAUTOCLAIM %s %s %s %lld 0-0 COUNT %u",
                     q->stream, WHARF_GROUP, b->consumer,
                     (long long)min_idle_ms, count);
    b->round_trips++;
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 2) {
        command_failed(b, "XAUTOCLAIM", r);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

redisReply *broker_entry(broker *b, broker_queue *q, const char *entry_id)
{
    redisReply *r;

    if (!b->redis)
        return NULL;
    r = redisCommand(b->redis, "XRANGE %s %s %s", q->stream, entry_id,
                     entry_id);
    b->round_trips++;
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        command_failed(b, "XRANGE", r);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

long broker_renew(broker *b, broker_queue *q, const char *consumer,
                  const char *const *entry_ids, const char *const *task_ids,
                  const char *const *tokens, size_t n)
{
    const char **argv = malloc((4 * n + 4) * sizeof(*argv));
    char *keys = malloc((n ? n : 1) * KEY_MAX);
    char ttl[24];
    size_t argc = 0;
    long result = -1;
    redisReply *r;

    if (!argv || !keys) {
        snprintf(b->errstr, sizeof(b->errstr), "out of memory");
        goto out;
    }
    if (!b->redis)
        goto out;
    argv[argc++] = q->stream;
    for (size_t i = 0; i < n; i++) {
        key_of_task(keys + i * KEY_MAX, KEY_MAX, b->cfg->prefix, q->type,
                    "lock", task_ids[i]);
        argv[argc++] = keys + i * KEY_MAX;
    }
    snprintf(ttl, sizeof(ttl), "%" PRId64, q->pol->lock_ttl_ms);
    argv[argc++] = WHARF_GROUP;
    argv[argc++] = consumer;
    argv[argc++] = ttl;
    for (size_t i = 0; i < n; i++)
        argv[argc++] = entry_ids[i];
    for (size_t i = 0; i < n; i++)
        argv[argc++] = tokens[i];
    b->round_trips++;
    r = script_run(b->redis, &script_renew, (int)n + 1, (int)argc, argv,
                   NULL);
    if (r && r->type == REDIS_REPLY_INTEGER)
        result = (long)r->integer;
    else
        command_failed(b, "renew", r);
    freeReplyObject(r);
out:
    free(argv);
    free(keys);
    return result;
}

int broker_heartbeat(broker *b, const char *key, const char *value,
                     int64_t ttl_ms)
{
    char ttl[24];
    const char *argv[3] = {key, value, ttl};
    redisReply *r;
    int rc = -1;

    if (!b->redis)
        return -1;
    snprintf(ttl, sizeof(ttl), "%" PRId64, ttl_ms);
    b->round_trips++;
    r = script_run(b->redis, &script_heartbeat, 1, 3, argv, NULL);
    if (r && r->type == REDIS_REPLY_INTEGER)
        rc = r->integer == 1 ? 1 : 0;
    else
        command_failed(b, "heartbeat", r);
    freeReplyObject(r);
    return rc;
}

int broker_release_key(broker *b, const char *key, const char *value)
{
    const char *argv[2] = {key, value};
    redisReply *r;
    int rc = -1;

    if (!b->redis)
        return -1;
    b->round_trips++;
    r = script_run(b->redis, &script_release, 1, 2, argv, NULL);
    if (r && r->type == REDIS_REPLY_INTEGER)
        rc = 0;
    else
        command_failed(b, "release", r);
    freeReplyObject(r);
    return rc;
}

/* Key buffers and argument arrays of one script call. */
typedef struct call_args {
    char keys[4][KEY_MAX];
    const char *argv[20];
    size_t argvlen[20];
    int argc;
    int numkeys;
    char numbers[3][24];
} call_args;

static void arg(call_args *a, const void *data, size_t len)
{
    a->argv[a->argc] = data;
    a->argvlen[a->argc] = len;
    a->argc++;
}

static void arg_str(call_args *a, const char *s)
{
    arg(a, s, strlen(s));
}

/* KEYS result, lock, fence; ARGV lock_ttl. */
static void begin_args(const broker *b, const broker_job *j, call_args *a)
{
    const char *prefix = b->cfg->prefix;
    const char *type = j->queue->type;

    a->argc = 0;
    a->numkeys = 3;
    key_of_task(a->keys[0], KEY_MAX, prefix, type, "result", j->e.task.id);
    key_of_task(a->keys[1], KEY_MAX, prefix, type, "lock", j->e.task.id);
    arg_str(a, a->keys[0]);
    arg_str(a, a->keys[1]);
    arg_str(a, j->queue->fence);
    snprintf(a->numbers[0], sizeof(a->numbers[0]), "%" PRId64,
             j->queue->pol->lock_ttl_ms);
    arg_str(a, a->numbers[0]);
}

/* KEYS lock; ARGV token. */
static void release_args(const broker *b, const broker_job *j, call_args *a)
{
    a->argc = 0;
    a->numkeys = 1;
    key_of_task(a->keys[0], KEY_MAX, b->cfg->prefix, j->queue->type, "lock",
                j->e.task.id);
    arg_str(a, a->keys[0]);
    arg_str(a, j->token);
}

static bool job_begins(const broker_job *j)
{
    return !j->e.deleted && j->e.bad[0] == '\0';
}

/* Appends a call, or runs it at once when its pipelined reply was
 * NOSCRIPT (the server lost its scripts: script_run loads them again). */
static int append_call(broker *b, const script *s, const call_args *a)
{
    return script_append(b->redis, s, a->numkeys, a->argc, a->argv,
                         a->argvlen);
}

/* Reads the next pipelined reply; if it is NOSCRIPT, runs the call again
 * with script_run. NULL on a connection error. */
static redisReply *read_reply(broker *b, const script *s, const call_args *a)
{
    redisReply *r = NULL;

    if (redisGetReply(b->redis, (void **)&r) != REDIS_OK)
        return NULL;
    if (script_is_noscript(r)) {
        freeReplyObject(r);
        b->round_trips++;
        r = script_run(b->redis, s, a->numkeys, a->argc, a->argv, a->argvlen);
    }
    return r;
}

int broker_begin(broker *b, broker_job *jobs, size_t n)
{
    call_args a;
    size_t sent = 0;

    if (!b->redis)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (!job_begins(&jobs[i]))
            continue;
        begin_args(b, &jobs[i], &a);
        if (append_call(b, &script_begin, &a) != 0) {
            command_failed(b, "begin", NULL);
            return -1;
        }
        sent++;
    }
    if (sent == 0)
        return 0;
    b->round_trips++;
    for (size_t i = 0; i < n; i++) {
        broker_job *j = &jobs[i];
        redisReply *r;
        if (!job_begins(j))
            continue;
        begin_args(b, j, &a);
        r = read_reply(b, &script_begin, &a);
        if (!r) {
            command_failed(b, "begin", NULL);
            return -1;
        }
        if (r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
            r->element[0]->type == REDIS_REPLY_INTEGER) {
            long long kind = r->element[0]->integer;
            if (kind == 0) {
                j->begin = BEGIN_CACHED;
            } else if (kind == 1 && r->elements == 2) {
                j->begin = BEGIN_RUN;
                snprintf(j->token, sizeof(j->token), "%lld",
                         r->element[1]->integer);
                j->e.task.fence = (uint64_t)r->element[1]->integer;
            } else {
                j->begin = BEGIN_LOCKED;
            }
        } else {
            /* Leave it pending: it is read again after a reconnect. */
            command_failed(b, "begin", r);
            log_fields(WHARF_LOG_ERROR, "begin failed",
                       (log_field[]){LOG_STR("task", j->e.task.id),
                                     LOG_STR("type", j->queue->type),
                                     LOG_STR("error", b->errstr)},
                       3);
            j->begin = BEGIN_NONE;
        }
        freeReplyObject(r);
    }
    return 0;
}

/* The arguments of j's finish script, by its finish kind. */
static const script *finish_args(const broker *b, const broker_job *j,
                                 call_args *a)
{
    const char *prefix = b->cfg->prefix;
    const char *type = j->queue->type;
    const char *id = j->e.task.id;
    const script *s;

    a->argc = 0;
    arg_str(a, j->queue->stream);
    if (j->finish == FINISH_ACK) {
        a->numkeys = 1;
        s = &script_ack;
    } else {
        key_of_task(a->keys[0], KEY_MAX, prefix, type, "lock", id);
        arg_str(a, a->keys[0]);
        if (j->finish == FINISH_OK) {
            key_of_task(a->keys[1], KEY_MAX, prefix, type, "result", id);
            arg_str(a, a->keys[1]);
            a->numkeys = 3;
            s = &script_finish_ok;
        } else {
            key_of_task(a->keys[1], KEY_MAX, prefix, type, "task", id);
            arg_str(a, a->keys[1]);
            arg_str(a, j->finish == FINISH_DEAD ? j->queue->dead
                                                : j->queue->delayed);
            a->numkeys = 4;
            s = j->finish == FINISH_DEAD ? &script_finish_dead
                                         : &script_finish_retry;
        }
    }
    arg_str(a, WHARF_GROUP);
    arg_str(a, j->consumer ? j->consumer : b->consumer);
    arg_str(a, j->e.entry_id);
    if (j->finish == FINISH_ACK)
        return s;
    /* Only a run that took the lock checks and releases it. */
    arg_str(a, j->begin == BEGIN_RUN ? j->token : "");
    if (j->finish == FINISH_OK) {
        arg(a, j->result ? (const void *)j->result : "", j->result_len);
        snprintf(a->numbers[0], sizeof(a->numbers[0]), "%" PRId64,
                 j->queue->pol->result_ttl_ms);
        arg_str(a, a->numbers[0]);
        return s;
    }
    arg_str(a, id);
    arg_str(a, type);
    arg(a, j->e.task.payload ? (const void *)j->e.task.payload : "",
        j->e.task.payload_len);
    snprintf(a->numbers[0], sizeof(a->numbers[0]), "%u", j->next_attempt);
    arg_str(a, a->numbers[0]);
    arg_str(a, j->e.enqueued_at[0] ? j->e.enqueued_at : "0");
    arg_str(a, j->e.task.trace);
    arg_str(a, j->reason ? j->reason : "");
    arg_str(a, j->consumer ? j->consumer : b->consumer);
    snprintf(a->numbers[1], sizeof(a->numbers[1]), "%" PRId64,
             j->finish == FINISH_DEAD ? j->queue->pol->dead_ttl_ms
                                      : j->delay_ms);
    arg_str(a, a->numbers[1]);
    return s;
}

static task_outcome outcome_of(const broker_job *j, const redisReply *r)
{
    if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS)
        return OUTCOME_STALE;
    if (strcmp(r->str, "stale") == 0)
        return OUTCOME_STALE;
    switch (j->finish) {
    case FINISH_OK:
        return OUTCOME_OK;
    case FINISH_RETRY:
        return OUTCOME_RETRY;
    case FINISH_RESCHEDULE:
        return OUTCOME_LOCKED;
    case FINISH_DEAD:
        return OUTCOME_DEAD;
    default:
        return OUTCOME_CACHED;
    }
}

int broker_finish(broker *b, broker_job *jobs, size_t n)
{
    call_args a;
    size_t sent = 0;

    if (!b->redis)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (jobs[i].finish == FINISH_NONE)
            continue;
        if (append_call(b, finish_args(b, &jobs[i], &a), &a) != 0) {
            command_failed(b, "finish", NULL);
            return -1;
        }
        sent++;
    }
    if (sent == 0)
        return 0;
    b->round_trips++;
    for (size_t i = 0; i < n; i++) {
        broker_job *j = &jobs[i];
        const script *s;
        redisReply *r;
        if (j->finish == FINISH_NONE)
            continue;
        s = finish_args(b, j, &a);
        r = read_reply(b, s, &a);
        if (!r) {
            command_failed(b, "finish", NULL);
            return -1;
        }
        j->outcome = outcome_of(j, r);
        if (r->type == REDIS_REPLY_ERROR) {
            command_failed(b, s->name, r);
            log_fields(WHARF_LOG_ERROR, "finish failed; the task stays pending",
                       (log_field[]){LOG_STR("task", j->e.task.id),
                                     LOG_STR("type", j->queue->type),
                                     LOG_STR("error", b->errstr)},
                       3);
        }
        freeReplyObject(r);
    }
    return 0;
}

int broker_release(broker *b, broker_job *jobs, size_t n)
{
    call_args a;
    size_t sent = 0;

    if (!b->redis)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (jobs[i].begin != BEGIN_RUN)
            continue;
        release_args(b, &jobs[i], &a);
        if (append_call(b, &script_release, &a) != 0) {
            command_failed(b, "release", NULL);
            return -1;
        }
        sent++;
    }
    if (sent == 0)
        return 0;
    b->round_trips++;
    for (size_t i = 0; i < n; i++) {
        redisReply *r;
        if (jobs[i].begin != BEGIN_RUN)
            continue;
        release_args(b, &jobs[i], &a);
        r = read_reply(b, &script_release, &a);
        if (!r) {
            command_failed(b, "release", NULL);
            return -1;
        }
        freeReplyObject(r);
        jobs[i].begin = BEGIN_NONE;
    }
    return 0;
}

/* Runs a maintenance script over ids: KEYS first_keys..., then the task
 * key of each id; ARGV lead_arg (if any), then the ids. Returns the
 * script's integer, or -1 on a connection error. */
static long move_ids(broker *b, const script *s, const broker_queue *q,
                     const char *const *first_keys, int n_first,
                     const char *lead_arg, const redisReply *ids)
{
    size_t n = ids->elements;
    int argc = 0;
    const char **argv = malloc((n * 2 + 4) * sizeof(*argv));
    char *keys = malloc(n * KEY_MAX);
    long result = -1;
    redisReply *r;

    if (!argv || !keys) {
        snprintf(b->errstr, sizeof(b->errstr), "out of memory");
        goto out;
    }
    for (int i = 0; i < n_first; i++)
        argv[argc++] = first_keys[i];
    for (size_t i = 0; i < n; i++) {
        key_of_task(keys + i * KEY_MAX, KEY_MAX, b->cfg->prefix, q->type,
                    "task", ids->element[i]->str);
        argv[argc++] = keys + i * KEY_MAX;
    }
    if (lead_arg)
        argv[argc++] = lead_arg;
    for (size_t i = 0; i < n; i++)
        argv[argc++] = ids->element[i]->str;
    b->round_trips++;
    r = script_run(b->redis, s, n_first + (int)n, argc, argv, NULL);
    if (!r) {
        command_failed(b, s->name, NULL);
        goto out;
    }
    if (r->type == REDIS_REPLY_INTEGER) {
        result = (long)r->integer;
    } else {
        /* The connection is fine; the ids stay where they are and the
         * next pass tries them again. */
        command_failed(b, s->name, r);
        log_fields(WHARF_LOG_ERROR, "maintenance script failed",
                   (log_field[]){LOG_STR("type", q->type),
                                 LOG_STR("error", b->errstr)},
                   2);
        result = 0;
    }
    freeReplyObject(r);
out:
    free(argv);
    free(keys);
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

    if (!b->redis)
        return -1;
    snprintf(limit, sizeof(limit), "%d", BROKER_MOVE_BATCH);
    for (size_t i = 0; i < b->n_queues; i++) {
        broker_queue *q = &b->queues[i];
        for (int round = 0; round < BROKER_MOVE_ROUNDS; round++) {
            const char *due_args[2] = {q->delayed, limit};
            const char *keys[2] = {q->delayed, q->stream};
            redisReply *due;
            long moved;

            b->round_trips++;
            due = script_run(b->redis, &script_due, 1, 2, due_args, NULL);
            if (!due) {
                command_failed(b, "due", NULL);
                return -1;
            }
            if (due->type != REDIS_REPLY_ARRAY || !all_strings(due)) {
                command_failed(b, "due", due);
                freeReplyObject(due);
                break;
            }
            if (due->elements == 0) {
                freeReplyObject(due);
                break;
            }
            moved = move_ids(b, &script_promote, q, keys, 2, NULL, due);
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

    if (!b->redis)
        return -1;
    for (size_t i = 0; i < b->n_queues; i++) {
        broker_queue *q = &b->queues[i];
        for (int round = 0; round < BROKER_MOVE_ROUNDS; round++) {
            long long size, excess;
            char max[24];
            const char *keys[1] = {q->dead};
            redisReply *r = redisCommand(b->redis, "ZCARD %s", q->dead);
            long removed;

            b->round_trips++;
            if (!r || r->type != REDIS_REPLY_INTEGER) {
                command_failed(b, "ZCARD", r);
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
            r = redisCommand(b->redis, "ZRANGE %s 0 %lld", q->dead,
                             excess - 1);
            b->round_trips++;
            if (!r || r->type != REDIS_REPLY_ARRAY || !all_strings(r)) {
                command_failed(b, "ZRANGE", r);
                freeReplyObject(r);
                return r ? total : -1;
            }
            snprintf(max, sizeof(max), "%" PRIu64, q->pol->dead_max);
            removed = move_ids(b, &script_trim_dead, q, keys, 1, max, r);
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
