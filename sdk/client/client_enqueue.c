/* Enqueue (docs/protocol.md, enqueue.lua): one atomic Lua script enforces the
 * type's policy in Redis, deduplicates by id and adds the task to the
 * stream, or to the delayed set when it has a delay. One call of the
 * script takes a run of tasks of one type, each handled exactly as if it
 * were alone, so a batch pays the script's fixed costs (policy, TIME,
 * pressure, EVALSHA itself) once per run instead of once per task. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_ids.h"
#include "client_internal.h"
#include "keys.h"
#include "lua_scripts.h"

/* Tasks per script call, and their payload bytes (a call takes at least
 * one task): a call blocks Redis for well under a millisecond. */
#define CALL_TASKS 100
#define CALL_BYTES (1024 * 1024)
/* Tasks per pipelined round trip. */
#define ROUND_TASKS 500

/* The policy used while no host has published one for the type. */
#define DEFAULT_MAX_PAYLOAD "1048576"
#define DEFAULT_MAX_BACKLOG "0"
#define DEFAULT_IDEMPOTENCY "payload"
#define DEFAULT_IDEMPOTENCY_TTL "300000"

/* A hundred years: anything longer is a mistake, not a schedule. */
#define MAX_DELAY_MS (INT64_C(100) * 365 * 24 * 3600 * 1000)

/* The script is sdk/lua/enqueue.lua, whose header states its KEYS, ARGV
 * and reply (lua_scripts.h: script_enqueue). Each task adds its "each"
 * keys: the seen and task keys of both candidate ids (the script checks
 * the envelope of a ready task too: a retrying id is a duplicate). */

enum {
    TASK_KEYS = SCRIPT_ENQUEUE_EACH_KEYS,
    TASK_RANDOM_BYTES = CLIENT_RANDOM_ID_BYTES + CLIENT_TRACE_BYTES
};

/* What one task adds to a call: its keys, and the trace and delay its
 * arguments point to. */
typedef struct task_slot {
    char keys[TASK_KEYS][KEY_MAX];
    char trace[CLIENT_TRACE_SIZE];
    char delay[24];
} task_slot;

/* One script call being built: cmd's arguments point into it and into
 * the tasks; cmd keeps its buffers from call to call. */
typedef struct enqueue_call {
    task_slot slots[CALL_TASKS];
    unsigned char random[CALL_TASKS * TASK_RANDOM_BYTES];
    command cmd;
} enqueue_call;

/* What became of a call of a round. */
enum { CALL_PENDING = 0, CALL_SENT, CALL_AGAIN, CALL_ANSWERED };

/* One round of a batch: the calls sent, each covering members[first ..
 * first + count) (indices of tasks). */
typedef struct call_plan {
    size_t first, count;
    int state;
    int node; /* the node it was sent to */
} call_plan;

typedef struct enqueue_round {
    size_t members[ROUND_TASKS];
    call_plan calls[ROUND_TASKS];
    size_t n_members, n_calls;
    int nodes[ROUND_TASKS]; /* the nodes its calls went to, each once */
    int acks[ROUND_TASKS];  /* with min_replicas: what each one's WAIT
                               counted */
    size_t n_nodes;
} enqueue_round;

/* A client's buffers, kept between calls so an enqueue allocates
 * nothing. */
struct enqueue_buffers {
    enqueue_call call;
    enqueue_round rounds[2]; /* one in flight while the next is built */
    /* The types this connection added to <prefix>:types. That set is a
     * key of no type's slot, so it is written by a command of its own,
     * once per type per connection, never by the enqueue script (whose
     * keys all share the type's Redis Cluster slot). */
    char (*types)[WHARF_TYPE_MAX + 1];
    size_t n_types, types_cap;
    const redisContext *types_conn;
};

static void say_unserved(wharf_client *c, const char *type);

void wharf_client_set_strict(wharf_client *client, int strict)
{
    if (client)
        client->strict = strict != 0;
}

void client_enqueue_free(wharf_client *c)
{
    if (c->enqueue_buffers) {
        command_free(&c->enqueue_buffers->call.cmd);
        free(c->enqueue_buffers->types);
    }
    free(c->enqueue_buffers);
    c->enqueue_buffers = NULL;
}

/* c's buffers, made on first use; NULL with c->errstr set when out of
 * memory. */
static struct enqueue_buffers *buffers(wharf_client *c)
{
    if (!c->enqueue_buffers) {
        c->enqueue_buffers = malloc(sizeof(*c->enqueue_buffers));
        if (c->enqueue_buffers) {
            command_init(&c->enqueue_buffers->call.cmd);
            c->enqueue_buffers->types = NULL;
            c->enqueue_buffers->n_types = 0;
            c->enqueue_buffers->types_cap = 0;
            c->enqueue_buffers->types_conn = NULL;
        } else
            client_error(c, "enqueue: out of memory");
    }
    return c->enqueue_buffers;
}

/* Makes b's list of added types the one of connection redis (a new
 * connection starts over). */
static void types_of(struct enqueue_buffers *b, const redisContext *redis)
{
    if (b->types_conn != redis) {
        b->types_conn = redis;
        b->n_types = 0;
    }
}

/* True if type still has to be added to the types set. */
static int type_unknown(const struct enqueue_buffers *b, const char *type)
{
    for (size_t i = 0; i < b->n_types; i++)
        if (strcmp(b->types[i], type) == 0)
            return 0;
    return 1;
}

/* Remembers that type was added on this connection. Out of memory only
 * means it is added again next time. */
static void type_added(struct enqueue_buffers *b, const char *type)
{
    if (b->n_types == b->types_cap) {
        size_t cap = b->types_cap ? 2 * b->types_cap : 8;
        void *grown = realloc(b->types, cap * sizeof(*b->types));
        if (!grown)
            return;
        b->types = grown;
        b->types_cap = cap;
    }
    snprintf(b->types[b->n_types++], sizeof(*b->types), "%s", type);
}

/* Tasks the script took (OK) on a node fewer than c->min_replicas replicas
 * confirmed (acks) get UNAVAILABLE, with why in c->errstr: a failover now
 * could lose them. */
static void check_replicas(wharf_client *c, int acks, const char *node,
                           const size_t *index, size_t count,
                           wharf_enqueue_reply *replies)
{
    bool told = false;

    if (c->min_replicas <= 0 || acks >= c->min_replicas)
        return;
    for (size_t i = 0; i < count; i++) {
        wharf_enqueue_reply *r = &replies[index ? index[i] : i];
        if (r->status != WHARF_CLIENT_OK)
            continue;
        r->status = WHARF_CLIENT_UNAVAILABLE;
        if (!told)
            client_error(c,
                         "enqueue: %s took the task but only %d of %d "
                         "replicas confirmed it within %d ms "
                         "(min_replicas_ack): a failover now could lose it; "
                         "enqueue it again (the same id is a duplicate then)",
                         node, acks < 0 ? 0 : acks, c->min_replicas,
                         c->replicas_timeout_ms);
        told = true;
    }
}

/* Adds to <prefix>:types, in one pipeline, the types of the tasks
 * tasks[index[0..count)] (index NULL: tasks[0..count)) that were enqueued
 * (reply OK) and that this connection has not added yet: once per type per
 * connection, and never for a type none of whose tasks was added. Call with
 * nothing in flight. OK, or why not (c->errstr set). */
static wharf_client_status add_types(wharf_client *c,
                                     const wharf_enqueue_opts *tasks,
                                     const size_t *index, size_t count,
                                     const wharf_enqueue_reply *replies)
{
    struct enqueue_buffers *b = c->enqueue_buffers;
    wharf_client_status status = WHARF_CLIENT_OK;
    pipeline *p = &c->pipe;
    redisContext *redis;
    size_t first, sent = 0;
    char key[KEY_MAX];

    key_global(key, sizeof(key), c->prefix, "types");
    if (!(redis = client_redis_of(c, key)))
        return c->connect_status;
    types_of(b, redis);
    first = b->n_types;
    pipeline_reset(p);
    for (size_t i = 0; i < count; i++) {
        size_t t = index ? index[i] : i;
        const char *type = tasks[t].type;
        if (replies[t].status != WHARF_CLIENT_OK || !type_unknown(b, type))
            continue;
        if (pipeline_addf(p, key, "SADD %s %s", key, type) != 0)
            return client_reply_status(c, NULL, "enqueue");
        type_added(b, type);
        sent++;
    }
    if (sent > 0 && pipeline_run(p) != 0)
        status = client_reply_status(c, NULL, "enqueue");
    for (size_t i = 0; i < sent && status == WHARF_CLIENT_OK; i++)
        status = client_reply_status(c, pipeline_reply(p, i),
                                     "enqueue: adding the type");
    pipeline_reset(p);
    /* Not added: forget them, so the next enqueue tries again. */
    if (status != WHARF_CLIENT_OK && b->n_types > first)
        b->n_types = first;
    return status;
}

/* Checks t; BAD_INPUT with c->errstr set when it breaks a rule. */
static wharf_client_status check_task(wharf_client *c,
                                      const wharf_enqueue_opts *t)
{
    char quoted[120];

    if (!t) {
        client_error(c, "enqueue: no task given");
        return WHARF_CLIENT_BAD_INPUT;
    }
    if (!client_valid_type(t->type)) {
        client_quote(t->type ? t->type : "", quoted, sizeof(quoted));
        client_error(c, "type '%s' is not valid: " CLIENT_TYPE_RULE, quoted);
        return WHARF_CLIENT_BAD_INPUT;
    }
    if (!t->payload && t->payload_len > 0) {
        client_error(c, "enqueue: payload is NULL but its length is %zu",
                     t->payload_len);
        return WHARF_CLIENT_BAD_INPUT;
    }
    if (t->id && !client_valid_id(t->id)) {
        client_quote(t->id, quoted, sizeof(quoted));
        client_error(c, "task id '%s' is not valid: " CLIENT_ID_RULE, quoted);
        return WHARF_CLIENT_BAD_INPUT;
    }
    if (t->trace && !client_valid_trace(t->trace)) {
        client_quote(t->trace, quoted, sizeof(quoted));
        client_error(c,
                     "trace '%s' is not a W3C traceparent: " CLIENT_TRACE_RULE,
                     quoted);
        return WHARF_CLIENT_BAD_INPUT;
    }
    if (t->delay_ms < 0 || t->delay_ms > MAX_DELAY_MS) {
        client_error(c,
                     "delay of %" PRId64 " ms is out of range: use 0 up "
                     "to 100 years",
                     t->delay_ms);
        return WHARF_CLIENT_BAD_INPUT;
    }
    return WHARF_CLIENT_OK;
}

/* Fills the slot of task t: the keys of its candidate ids, its trace and
 * delay. random holds TASK_RANDOM_BYTES random bytes. */
static wharf_client_status fill_slot(wharf_client *c,
                                     const wharf_enqueue_opts *t,
                                     const unsigned char *random, task_slot *s)
{
    char hash_id[CLIENT_HASH_ID_SIZE], random_id[CLIENT_RANDOM_ID_SIZE];
    const char *id1 = t->id, *id2 = t->id;

    if (!t->id) {
        if (client_hash_id(c->digest, c->sha256, t->type, t->payload,
                           t->payload_len, hash_id) != 0) {
            client_error(c, "enqueue: libcrypto could not hash the payload");
            return WHARF_CLIENT_ERROR;
        }
        client_random_id(random, random_id);
        id1 = hash_id;
        id2 = random_id;
    }
    if (!t->trace)
        client_new_trace(random + CLIENT_RANDOM_ID_BYTES, s->trace);
    snprintf(s->delay, sizeof(s->delay), "%" PRId64, t->delay_ms);
    /* Cannot overflow: prefix, type and id are bounded well below
     * KEY_MAX, so the returns need no check. */
    for (int k = 0; k < TASK_KEYS; k++) {
        const script_key *key = &script_enqueue_spec.each_keys[k];
        key_of_task(s->keys[k], KEY_MAX, c->prefix, t->type, key->what,
                    strcmp(key->placeholder, "id2") == 0 ? id2 : id1);
    }
    return WHARF_CLIENT_OK;
}

/* Builds the EVALSHA call for count (<= CALL_TASKS) checked tasks of one
 * type, all ready or all delayed: tasks[index[0]], tasks[index[1]], ...
 * OK, or ERROR with c->errstr set when libcrypto fails. */
static wharf_client_status build_call(wharf_client *c, enqueue_call *call,
                                      const wharf_enqueue_opts *tasks,
                                      const size_t *index, size_t count)
{
    const char *type = tasks[index[0]].type, *prefix = c->prefix;
    int delayed = tasks[index[0]].delay_ms > 0;
    int task_keys = TASK_KEYS;
    command *cmd = &call->cmd;
    char seen[KEY_MAX], skip[24];

    if (client_random_bytes(call->random, count * TASK_RANDOM_BYTES) != 0) {
        client_error(c, "enqueue: libcrypto has no random bytes to give");
        return WHARF_CLIENT_ERROR;
    }
    for (size_t i = 0; i < count; i++) {
        wharf_client_status status =
            fill_slot(c, &tasks[index[i]], call->random + i * TASK_RANDOM_BYTES,
                      &call->slots[i]);
        if (status != WHARF_CLIENT_OK)
            return status;
    }
    /* id_offset: the length of "<prefix>:{<type>}:seen:". */
    snprintf(skip, sizeof(skip), "%d",
             key_of_type(seen, sizeof(seen), prefix, type, "seen:"));
    script_enqueue_keys(cmd, prefix, type);
    for (size_t i = 0; i < count; i++)
        for (int k = 0; k < task_keys; k++)
            command_push_key(cmd, call->slots[i].keys[k],
                             strlen(call->slots[i].keys[k]));
    script_enqueue_args(cmd, type, skip, delayed ? "1" : "0",
                        DEFAULT_MAX_PAYLOAD, DEFAULT_MAX_BACKLOG,
                        DEFAULT_IDEMPOTENCY, DEFAULT_IDEMPOTENCY_TTL,
                        CLIENT_PROTOCOLS, c->strict ? "1" : "0");
    for (size_t i = 0; i < count; i++) {
        const wharf_enqueue_opts *t = &tasks[index[i]];
        task_slot *s = &call->slots[i];
        command_push(cmd, t->payload ? (const char *)t->payload : "",
                     t->payload_len);
        command_push_str(cmd, t->trace ? t->trace : s->trace);
        if (delayed)
            command_push_str(cmd, s->delay);
    }
    if (cmd->err) {
        client_error(c, "enqueue: building the script call: %s",
                     strerror(cmd->err));
        return WHARF_CLIENT_ERROR;
    }
    return WHARF_CLIENT_OK;
}

static int is_string(const redisReply *r)
{
    return r->type == REDIS_REPLY_STRING && r->len <= WHARF_ID_MAX;
}

/* Turns the part of the script's reply about task t (word, id, limit at
 * element[at..at+2]) into *out. Returns the task's status; c->errstr says
 * why for anything but OK and DUPLICATE. */
static wharf_client_status parse_task(wharf_client *c,
                                      const wharf_enqueue_opts *t,
                                      const redisReply *r, size_t at,
                                      wharf_enqueue_reply *out)
{
    const redisReply *word = r->element[at], *id = r->element[at + 1];
    const redisReply *limit = r->element[at + 2];
    wharf_client_status status;

    memset(out, 0, sizeof(*out));
    if (!is_string(word) || !is_string(id) ||
        limit->type != REDIS_REPLY_INTEGER) {
        client_error(c, "enqueue: the enqueue script gave an unexpected "
                        "reply");
        out->status = WHARF_CLIENT_ERROR;
        return out->status;
    }
    memcpy(out->id, id->str, id->len);
    out->id[id->len] = '\0';
    out->pressure = (r->element[0]->integer & 1) != 0;
    out->unserved = (r->element[0]->integer & 2) != 0;
    out->limit = limit->integer > 0 ? (uint64_t)limit->integer : 0;
    switch (script_enqueue_word_of(word->str)) {
    case SCRIPT_ENQUEUE_OK:
        status = WHARF_CLIENT_OK;
        break;
    case SCRIPT_ENQUEUE_DUPLICATE:
        out->duplicate = 1;
        status = WHARF_CLIENT_DUPLICATE;
        break;
    case SCRIPT_ENQUEUE_TOO_LARGE:
        client_error(c,
                     "payload of %zu bytes is over max_payload %" PRIu64
                     " of type '%s'",
                     t->payload_len, out->limit, t->type);
        status = WHARF_CLIENT_TOO_LARGE;
        break;
    case SCRIPT_ENQUEUE_BACKPRESSURE:
        client_error(c,
                     "type '%s' is at its backlog limit (max_backlog %" PRIu64
                     "): try later",
                     t->type, out->limit);
        status = WHARF_CLIENT_BACKPRESSURE;
        break;
    case SCRIPT_ENQUEUE_UNSERVED:
        /* Said once the call's replies are all read (it needs Redis). */
        status = WHARF_CLIENT_UNSERVED;
        break;
    case SCRIPT_ENQUEUE_PROTOCOL: {
        char host[24];
        snprintf(host, sizeof(host), "%" PRIu64, out->limit);
        status = client_protocol_error(c, t->type, host);
        break;
    }
    default:
        client_error(c, "enqueue: the enqueue script answered '%.40s'",
                     word->str);
        status = WHARF_CLIENT_ERROR;
    }
    out->status = status;
    return status;
}

/* Fills the replies of a call's tasks from its reply r. Returns OK when r
 * is a proper reply (each task's own status is in its reply), else the
 * status of every task of the call, with c->errstr set. */
static wharf_client_status parse_call(wharf_client *c, const redisReply *r,
                                      const wharf_enqueue_opts *tasks,
                                      const size_t *index, size_t count,
                                      wharf_enqueue_reply *replies)
{
    wharf_client_status status = client_reply_status(c, r, "enqueue");

    if (status == WHARF_CLIENT_OK &&
        (r->type != REDIS_REPLY_ARRAY || r->elements != 1 + 3 * count ||
         r->element[0]->type != REDIS_REPLY_INTEGER)) {
        client_error(c, "enqueue: the enqueue script gave an unexpected "
                        "reply");
        status = WHARF_CLIENT_ERROR;
    }
    for (size_t i = 0; i < count; i++) {
        if (status == WHARF_CLIENT_OK) {
            parse_task(c, &tasks[index[i]], r, 1 + 3 * i, &replies[index[i]]);
        } else {
            memset(&replies[index[i]], 0, sizeof(replies[index[i]]));
            replies[index[i]].status = status;
        }
    }
    return status;
}

/* Builds, runs and parses the call of count tasks (given by index). */
static wharf_client_status call_alone(wharf_client *c, enqueue_call *call,
                                      const wharf_enqueue_opts *tasks,
                                      const size_t *index, size_t count,
                                      wharf_enqueue_reply *replies)
{
    pipeline *p = &c->pipe;
    wharf_client_status status;

    if (client_connect(c) != 0)
        return c->connect_status;
    status = build_call(c, call, tasks, index, count);
    if (status != WHARF_CLIENT_OK)
        return status;
    pipeline_reset(p);
    p->wait = c->min_replicas > 0;
    p->min_replicas = c->min_replicas;
    p->wait_timeout_ms = c->replicas_timeout_ms;
    if (pipeline_add_command(p, -1, &call->cmd, &script_enqueue) != 0) {
        client_error(c, "enqueue: encoding the script call: %s", p->errstr);
        return WHARF_CLIENT_ERROR;
    }
    /* Redirections and NOSCRIPT are followed in there (pipeline.h). */
    if (pipeline_run(p) != 0)
        client_drop(c);
    status = parse_call(c, pipeline_reply(p, 0), tasks, index, count, replies);
    if (status == WHARF_CLIENT_OK && p->wait)
        check_replicas(c, p->fewest_acks, nodes_name(&c->nodes, p->e[0].node),
                       index, count, replies);
    pipeline_reset(p);
    if (status == WHARF_CLIENT_OK)
        status = add_types(c, tasks, index, count, replies);
    return status;
}

wharf_client_status wharf_enqueue(wharf_client *client,
                                  const wharf_enqueue_opts *opts,
                                  wharf_enqueue_reply *out)
{
    struct enqueue_buffers *b;
    wharf_enqueue_reply answer;
    wharf_client_status status;
    size_t only = 0;

    if (!client)
        return WHARF_CLIENT_BAD_INPUT;
    status = check_task(client, opts);
    if (status != WHARF_CLIENT_OK)
        return status;
    if (!(b = buffers(client)))
        return WHARF_CLIENT_ERROR;
    memset(&answer, 0, sizeof(answer));
    status = call_alone(client, &b->call, opts, &only, 1, &answer);
    if (status == WHARF_CLIENT_OK)
        status = answer.status;
    if (status == WHARF_CLIENT_UNSERVED)
        say_unserved(client, opts->type);
    if (out &&
        (status == WHARF_CLIENT_OK || status == WHARF_CLIENT_DUPLICATE ||
         status == WHARF_CLIENT_TOO_LARGE ||
         status == WHARF_CLIENT_BACKPRESSURE ||
         status == WHARF_CLIENT_UNSERVED || status == WHARF_CLIENT_PROTOCOL))
        *out = answer;
    return status;
}

/* errstr for a task refused as unserved (strict). */
static void say_unserved(wharf_client *c, const char *type)
{
    char message[sizeof(c->errstr) - 32];

    client_unserved_message(c, type, message, sizeof(message));
    client_error(c, "%s; refused (strict)", message);
}

/* True if b may join the call a is in: same type, both ready or both
 * delayed. */
static int same_call(const wharf_enqueue_opts *a, const wharf_enqueue_opts *b)
{
    return (a->delay_ms > 0) == (b->delay_ms > 0) &&
           strcmp(a->type, b->type) == 0;
}

/* Plans a round from tasks[start ..]: checks tasks (a bad one gets its
 * BAD_INPUT reply now) until ROUND_TASKS are taken, and groups them into
 * calls (see same_call). Returns how many tasks it went through. */
static size_t plan_round(wharf_client *c, const wharf_enqueue_opts *tasks,
                         size_t start, size_t n, wharf_enqueue_reply *replies,
                         enqueue_round *round)
{
    size_t i = start, bytes = 0;

    round->n_members = 0;
    round->n_calls = 0;
    for (; i < n && round->n_members < ROUND_TASKS; i++) {
        const wharf_enqueue_opts *t = &tasks[i];
        call_plan *last =
            round->n_calls ? &round->calls[round->n_calls - 1] : NULL;
        memset(&replies[i], 0, sizeof(replies[i]));
        replies[i].status = check_task(c, t);
        if (replies[i].status != WHARF_CLIENT_OK)
            continue;
        if (!last || last->count == CALL_TASKS ||
            bytes + t->payload_len > CALL_BYTES ||
            !same_call(&tasks[round->members[last->first]], t)) {
            last = &round->calls[round->n_calls++];
            last->first = round->n_members;
            last->count = 0;
            last->state = CALL_PENDING;
            bytes = 0;
        }
        round->members[round->n_members++] = i;
        last->count++;
        bytes += t->payload_len;
    }
    return i - start;
}

/* Flushes the output buffer of each node of round to Redis, so they work
 * on what was appended while we build the next round. REDIS_OK or
 * REDIS_ERR (c->pipe.errstr set). */
static int flush_output(wharf_client *c, const enqueue_round *round)
{
    for (size_t k = 0; k < round->n_nodes; k++) {
        redisContext *redis = c->nodes.list[round->nodes[k]].redis;
        int done = 0;
        while (redis && !done)
            if (redisBufferWrite(redis, &done) != REDIS_OK) {
                snprintf(c->pipe.errstr, sizeof(c->pipe.errstr), "%s",
                         redis->errstr);
                return REDIS_ERR;
            }
        if (!redis)
            return REDIS_ERR;
    }
    return REDIS_OK;
}

/* The live connection of node index for a round, or NULL with
 * c->pipe.errstr set. */
static redisContext *round_redis(wharf_client *c, int index)
{
    redisContext *redis = nodes_context(&c->nodes, index);

    if (!redis)
        memcpy(c->pipe.errstr, c->nodes.errstr, sizeof(c->pipe.errstr));
    return redis;
}

/* Notes that round sent a call to node index. */
static void round_uses(enqueue_round *round, int index)
{
    for (size_t k = 0; k < round->n_nodes; k++)
        if (round->nodes[k] == index)
            return;
    round->nodes[round->n_nodes] = index;
    round->acks[round->n_nodes++] = -1;
}

/* Builds and sends every call of a planned round, each to the node of
 * its type, without waiting for the replies; with min_replicas, a WAIT
 * follows each node's calls. */
static wharf_client_status send_round(wharf_client *c, enqueue_call *call,
                                      const wharf_enqueue_opts *tasks,
                                      enqueue_round *round)
{
    wharf_client_status status =
        client_connect(c) == 0 ? WHARF_CLIENT_OK : c->connect_status;

    round->n_nodes = 0;
    c->pipe.errstr[0] = '\0';
    for (size_t i = 0; i < round->n_calls && status == WHARF_CLIENT_OK; i++) {
        call_plan *p = &round->calls[i];
        redisContext *redis;
        status =
            build_call(c, call, tasks, &round->members[p->first], p->count);
        if (status != WHARF_CLIENT_OK)
            break;
        /* Every key of the call has the type's hash tag. */
        p->node = nodes_of_slot(&c->nodes,
                                (unsigned)command_first_key_slot(&call->cmd));
        if (!(redis = round_redis(c, p->node))) {
            status = client_reply_status(c, NULL, "enqueue");
        } else if (command_append(&call->cmd, redis) == 0) {
            p->state = CALL_SENT;
            round_uses(round, p->node);
        } else if (call->cmd.err) {
            client_error(c, "enqueue: encoding the script call: %s",
                         strerror(call->cmd.err));
            status = WHARF_CLIENT_ERROR;
        } else {
            snprintf(c->pipe.errstr, sizeof(c->pipe.errstr), "%s",
                     redis->errstr);
            status = client_reply_status(c, NULL, "enqueue");
        }
    }
    for (size_t k = 0; k < round->n_nodes && c->min_replicas > 0; k++)
        if (status == WHARF_CLIENT_OK &&
            redisAppendCommand(c->nodes.list[round->nodes[k]].redis,
                               "WAIT %d %d", c->min_replicas,
                               c->replicas_timeout_ms) != REDIS_OK)
            status = client_reply_status(c, NULL, "enqueue");
    if (status == WHARF_CLIENT_OK && flush_output(c, round) != REDIS_OK)
        status = client_reply_status(c, NULL, "enqueue");
    return status;
}

/* Reads the replies of a sent round. A call whose reply is not the
 * script's answer (NOSCRIPT, a redirection, a slot being migrated) is
 * marked CALL_AGAIN and *again set: it runs again alone once nothing is
 * in flight. Then reads the round's WAITs, if any. */
static wharf_client_status read_round(wharf_client *c,
                                      const wharf_enqueue_opts *tasks,
                                      wharf_enqueue_reply *replies,
                                      enqueue_round *round, int *again)
{
    for (size_t i = 0; i < round->n_calls; i++) {
        call_plan *p = &round->calls[i];
        redisContext *redis = c->nodes.list[p->node].redis;
        redisReply *r = NULL;
        if (p->state != CALL_SENT)
            continue;
        if (!redis || redisGetReply(redis, (void **)&r) != REDIS_OK) {
            snprintf(c->pipe.errstr, sizeof(c->pipe.errstr), "%s",
                     redis ? redis->errstr : "connection lost");
            return client_reply_status(c, NULL, "enqueue");
        }
        if (pipeline_must_settle(r)) {
            p->state = CALL_AGAIN;
            *again = 1;
        } else {
            p->state = CALL_ANSWERED;
            parse_call(c, r, tasks, &round->members[p->first], p->count,
                       replies);
        }
        freeReplyObject(r);
    }
    for (size_t k = 0; k < round->n_nodes && c->min_replicas > 0; k++) {
        redisContext *redis = c->nodes.list[round->nodes[k]].redis;
        redisReply *r = NULL;
        if (!redis || redisGetReply(redis, (void **)&r) != REDIS_OK) {
            snprintf(c->pipe.errstr, sizeof(c->pipe.errstr), "%s",
                     redis ? redis->errstr : "connection lost");
            return client_reply_status(c, NULL, "enqueue");
        }
        round->acks[k] = r->type == REDIS_REPLY_INTEGER ? (int)r->integer : 0;
        freeReplyObject(r);
    }
    for (size_t i = 0; i < round->n_calls && c->min_replicas > 0; i++) {
        const call_plan *p = &round->calls[i];
        for (size_t k = 0; k < round->n_nodes; k++)
            if (p->state == CALL_ANSWERED && round->nodes[k] == p->node)
                check_replicas(c, round->acks[k],
                               nodes_name(&c->nodes, p->node),
                               &round->members[p->first], p->count, replies);
    }
    return WHARF_CLIENT_OK;
}

/* Runs the calls of a read round marked CALL_AGAIN again, one by one. */
static wharf_client_status rerun_round(wharf_client *c, enqueue_call *call,
                                       const wharf_enqueue_opts *tasks,
                                       wharf_enqueue_reply *replies,
                                       enqueue_round *round)
{
    wharf_client_status status = WHARF_CLIENT_OK;

    for (size_t i = 0; i < round->n_calls && status == WHARF_CLIENT_OK; i++) {
        call_plan *p = &round->calls[i];
        if (p->state != CALL_AGAIN)
            continue;
        status = call_alone(c, call, tasks, &round->members[p->first], p->count,
                            replies);
        if (status == WHARF_CLIENT_OK)
            p->state = CALL_ANSWERED;
    }
    return status;
}

/* After a failure: the tasks of every call of round without an answer get
 * status (some of them may have been enqueued). */
static void fail_round(enqueue_round *round, wharf_enqueue_reply *replies,
                       wharf_client_status status)
{
    for (size_t i = 0; i < round->n_calls; i++) {
        const call_plan *p = &round->calls[i];
        if (p->state == CALL_ANSWERED)
            continue;
        for (size_t m = 0; m < p->count; m++)
            replies[round->members[p->first + m]].status = status;
    }
}

/* Rounds go out back to back: round k + 1 is built and sent while Redis
 * works on round k, whose replies are read after. */
wharf_client_status wharf_enqueue_batch(wharf_client *client,
                                        const wharf_enqueue_opts *tasks,
                                        size_t n, wharf_enqueue_reply *replies)
{
    wharf_client_status status = WHARF_CLIENT_OK;
    enqueue_round *sent = NULL, *next = NULL;
    struct enqueue_buffers *b;
    size_t done = 0;
    int which = 0;

    if (!client)
        return WHARF_CLIENT_BAD_INPUT;
    if (n == 0)
        return WHARF_CLIENT_OK;
    if (!tasks || !replies) {
        client_error(client, "enqueue: no tasks or no room for replies");
        return WHARF_CLIENT_BAD_INPUT;
    }
    if (!(b = buffers(client)))
        status = WHARF_CLIENT_ERROR;
    while (status == WHARF_CLIENT_OK && (done < n || sent)) {
        int again = 0;
        next = NULL;
        if (done < n) {
            next = &b->rounds[which];
            which ^= 1;
            done += plan_round(client, tasks, done, n, replies, next);
            status = send_round(client, &b->call, tasks, next);
        }
        if (sent && status == WHARF_CLIENT_OK)
            status = read_round(client, tasks, replies, sent, &again);
        /* A call to run again: drain the pipeline before anything runs alone.
         */
        if (again && next && status == WHARF_CLIENT_OK)
            status = read_round(client, tasks, replies, next, &again);
        if (again && status == WHARF_CLIENT_OK)
            status = rerun_round(client, &b->call, tasks, replies, sent);
        if (again && next && status == WHARF_CLIENT_OK)
            status = rerun_round(client, &b->call, tasks, replies, next);
        if (status != WHARF_CLIENT_OK)
            break;
        sent = again ? NULL : next;
    }
    if (status != WHARF_CLIENT_OK) {
        if (sent)
            fail_round(sent, replies, status);
        if (next)
            fail_round(next, replies, status);
        /* Unsent commands or unread replies may be left in them. */
        client_drop(client);
    }
    for (; done < n; done++) {
        memset(&replies[done], 0, sizeof(replies[done]));
        replies[done].status = status;
    }
    /* Every round is read: nothing is in flight. */
    if (status == WHARF_CLIENT_OK)
        status = add_types(client, tasks, NULL, n, replies);
    for (size_t i = 0; status == WHARF_CLIENT_OK && i < n; i++)
        if (replies[i].status == WHARF_CLIENT_UNSERVED) {
            say_unserved(client, tasks[i].type);
            break;
        }
    return status;
}
