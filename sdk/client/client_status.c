/* Where a task is (wharf_task_status), with one call of sdk/lua/status.lua:
 * the stream index, the delayed and dead sets, the result and the cancel
 * marker, read atomically. client_result.c polls the same script. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"
#include "keys.h"
#include "lua_scripts.h"

static const char *const state_names[] = {
    "unknown", "queued", "running",   "delayed",
    "done",    "dead",   "cancelled", "held"};

const char *wharf_task_state_name(wharf_task_state s)
{
    return (unsigned)s < sizeof(state_names) / sizeof(state_names[0])
               ? state_names[s]
               : "unknown";
}

/* The value of field `name` of a status reply (flat name, value pairs
 * after the state), or NULL. */
static const redisReply *field(const redisReply *r, const char *name)
{
    for (size_t i = 1; i + 1 < r->elements; i += 2)
        if (r->element[i]->type == REDIS_REPLY_STRING &&
            strcmp(r->element[i]->str, name) == 0 &&
            r->element[i + 1]->type == REDIS_REPLY_STRING)
            return r->element[i + 1];
    return NULL;
}

static int64_t number(const redisReply *r, const char *name)
{
    const redisReply *v = field(r, name);

    return v ? strtoll(v->str, NULL, 10) : 0;
}

static void text(const redisReply *r, const char *name, char *buf, size_t len)
{
    const redisReply *v = field(r, name);
    size_t n = v ? v->len : 0;

    if (n >= len)
        n = len - 1;
    if (n)
        memcpy(buf, v->str, n);
    buf[n] = '\0';
}

redisReply *client_status_call(wharf_client *c, const char *type,
                               const char *id, int with_result,
                               wharf_client_status *status)
{
    pipeline *p = &c->pipe;
    redisReply *r = NULL;

    *status = client_check_names(c, type, id);
    if (*status != WHARF_CLIENT_OK)
        return NULL;
    if (client_connect(c) != 0) {
        *status = c->connect_status;
        return NULL;
    }
    /* Cannot overflow: prefix, type and id are checked, and bounded well
     * below KEY_MAX. */
    if (script_status_call(&p->cmd, c->prefix, type, id, WHARF_GROUP,
                           CLIENT_PROTOCOLS, with_result ? "result" : "") == 0)
        r = pipeline_call(p, &script_status, &p->cmd);
    if (!r)
        client_drop(c);
    *status = client_reply_status(c, r, "status");
    if (*status == WHARF_CLIENT_OK &&
        (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
         r->element[0]->type != REDIS_REPLY_STRING)) {
        client_error(c, "status: the status script gave an unexpected reply");
        *status = WHARF_CLIENT_ERROR;
    }
    if (*status == WHARF_CLIENT_OK &&
        script_status_word_of(r->element[0]->str) == SCRIPT_STATUS_PROTOCOL) {
        const redisReply *v = field(r, "protocol");
        *status = client_protocol_error(c, type, v ? v->str : "?");
    }
    if (*status != WHARF_CLIENT_OK) {
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

/* The task state a status reply's word names; unknown for any other. */
static wharf_task_state state_of(const char *word)
{
    switch (script_status_word_of(word)) {
    case SCRIPT_STATUS_QUEUED:
        return WHARF_TASK_QUEUED;
    case SCRIPT_STATUS_RUNNING:
        return WHARF_TASK_RUNNING;
    case SCRIPT_STATUS_DELAYED:
        return WHARF_TASK_DELAYED;
    case SCRIPT_STATUS_DONE:
        return WHARF_TASK_DONE;
    case SCRIPT_STATUS_DEAD:
        return WHARF_TASK_DEAD;
    case SCRIPT_STATUS_CANCELLED:
        return WHARF_TASK_CANCELLED;
    case SCRIPT_STATUS_HELD:
        return WHARF_TASK_HELD;
    default:
        return WHARF_TASK_UNKNOWN;
    }
}

void client_status_parse(const redisReply *r, wharf_task_info *out)
{
    memset(out, 0, sizeof(*out));
    out->state = state_of(r->element[0]->str);
    out->now_ms = number(r, "now");
    out->attempt = (unsigned)number(
        r, out->state == WHARF_TASK_DEAD ? "attempts" : "attempt");
    out->enqueued_at_ms = number(r, "enqueued_at");
    out->since_ms = number(r, "since");
    out->cancel_requested = number(r, "cancel_requested") != 0;
    out->due_at_ms = number(r, "due_at");
    out->died_at_ms = number(r, "died_at");
    out->expires_in_ms = number(r, "expires_in_ms");
    out->result_bytes = (uint64_t)number(r, "result_bytes");
    text(r, "worker", out->worker, sizeof(out->worker));
    text(r, "entry", out->entry, sizeof(out->entry));
    text(r, "error", out->error, sizeof(out->error));
    text(r, "waits_for", out->waits_for, sizeof(out->waits_for));
    out->timeout_ms = number(r, "timeout_ms");
    out->max_attempts = (unsigned)number(r, "max_attempts");
    out->expires_at_ms = number(r, "expires_at");
}

const redisReply *client_status_result(const redisReply *r)
{
    return field(r, "result");
}

wharf_client_status wharf_task_status(wharf_client *client, const char *type,
                                      const char *id, wharf_task_info *out)
{
    wharf_client_status status;
    redisReply *r;

    if (!client)
        return WHARF_CLIENT_BAD_INPUT;
    if (!out) {
        client_error(client, "status: no place to put the answer");
        return WHARF_CLIENT_BAD_INPUT;
    }
    r = client_status_call(client, type, id, 0, &status);
    if (r)
        client_status_parse(r, out);
    freeReplyObject(r);
    return status;
}
