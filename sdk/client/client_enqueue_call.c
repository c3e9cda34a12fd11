/* One call of enqueue.lua (docs/protocol.md) for a run of tasks of one
 * type: each task checked, the call built (the keys of both candidate
 * ids, traces, delays, payloads) and the script's reply read back into
 * every task's reply, each handled exactly as if it were alone. See
 * client_enqueue_call.h. */
#include "client_enqueue_call.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "client_internal.h"
#include "quote.h"

/* The policy used while no host has published one for the type. */
#define DEFAULT_MAX_PAYLOAD "1048576"
#define DEFAULT_MAX_BACKLOG "0"
#define DEFAULT_IDEMPOTENCY "payload"
#define DEFAULT_IDEMPOTENCY_TTL "300000"

/* A hundred years: anything longer is a mistake, not a schedule. */
#define MAX_DELAY_MS (INT64_C(100) * 365 * 24 * 3600 * 1000)

void client_enqueue_check_replicas(wharf_client *c, int acks, const char *node,
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

wharf_client_status client_enqueue_check(wharf_client *c,
                                         const wharf_enqueue_opts *t)
{
    char quoted[120];

    if (!t) {
        client_error(c, "enqueue: no task given");
        return WHARF_CLIENT_BAD_INPUT;
    }
    if (!client_valid_type(t->type)) {
        quote_text(t->type ? t->type : "", quoted, sizeof(quoted));
        client_error(c, "type '%s' is not valid: " CLIENT_TYPE_RULE, quoted);
        return WHARF_CLIENT_BAD_INPUT;
    }
    if (!t->payload && t->payload_len > 0) {
        client_error(c, "enqueue: payload is NULL but its length is %zu",
                     t->payload_len);
        return WHARF_CLIENT_BAD_INPUT;
    }
    if (t->id && !client_valid_id(t->id)) {
        quote_text(t->id, quoted, sizeof(quoted));
        client_error(c, "task id '%s' is not valid: " CLIENT_ID_RULE, quoted);
        return WHARF_CLIENT_BAD_INPUT;
    }
    if (t->trace && !client_valid_trace(t->trace)) {
        quote_text(t->trace, quoted, sizeof(quoted));
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


wharf_client_status client_enqueue_options(wharf_client *c, enqueue_call *call,
                                           const wharf_task_options *o)
{
    size_t len = 0;

    call->options[0] = '\0';
    if (!o)
        return WHARF_CLIENT_OK;
    /* A caller built against a shorter struct than ours is refused, not
     * read past its end; sizes from later versions read what we know. */
    if (o->size < sizeof(*o)) {
        client_error(c,
                     "enqueue: task options of %zu bytes: set size to "
                     "sizeof(wharf_task_options)",
                     o->size);
        return WHARF_CLIENT_BAD_INPUT;
    }
    if (o->timeout_ms < 0 || o->timeout_ms > WHARF_TASK_TIMEOUT_MAX_MS) {
        client_error(c,
                     "timeout of %" PRId64 " ms is out of range: use 1 ms "
                     "up to 30 days",
                     o->timeout_ms);
        return WHARF_CLIENT_BAD_INPUT;
    }
    if (o->max_attempts > WHARF_TASK_MAX_ATTEMPTS_MAX) {
        client_error(c, "max_attempts %u is out of range: use 1 up to %d",
                     o->max_attempts, WHARF_TASK_MAX_ATTEMPTS_MAX);
        return WHARF_CLIENT_BAD_INPUT;
    }
    if (o->expires_at_ms < 0 || o->expires_at_ms > WHARF_TASK_EXPIRES_MAX_MS) {
        client_error(c,
                     "expiry %" PRId64 " is out of range: a wall-clock time "
                     "in ms up to the year 9999",
                     o->expires_at_ms);
        return WHARF_CLIENT_BAD_INPUT;
    }
    /* Three bounded numbers always fit CLIENT_OPTIONS_SIZE. */
    if (o->timeout_ms > 0)
        len +=
            (size_t)snprintf(call->options + len, sizeof(call->options) - len,
                             " timeout_ms %" PRId64, o->timeout_ms);
    if (o->max_attempts > 0)
        len +=
            (size_t)snprintf(call->options + len, sizeof(call->options) - len,
                             " max_attempts %u", o->max_attempts);
    if (o->expires_at_ms > 0)
        len +=
            (size_t)snprintf(call->options + len, sizeof(call->options) - len,
                             " expires_at %" PRId64, o->expires_at_ms);
    if (len > 0)
        memmove(call->options, call->options + 1, len);
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

wharf_client_status client_enqueue_build(wharf_client *c, enqueue_call *call,
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
                        CLIENT_PROTOCOLS, c->strict ? "1" : "0", call->options);
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

wharf_client_status client_enqueue_parse(wharf_client *c, const redisReply *r,
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
