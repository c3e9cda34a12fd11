/* wharf_cancel: one call of sdk/lua/cancel.lua, which removes a waiting
 * task or leaves the cancel request a running one's host acts on. */
#include <stdio.h>
#include <string.h>

#include "client_internal.h"
#include "keys.h"
#include "lua_scripts.h"

/* The outcome a cancel script's word stands for, or -1 (PROTOCOL, or a
 * word it does not answer). */
static int outcome_of(script_cancel_word word)
{
    switch (word) {
    case SCRIPT_CANCEL_REMOVED:
        return WHARF_CANCEL_REMOVED;
    case SCRIPT_CANCEL_CANCELLING:
        return WHARF_CANCEL_REQUESTED;
    case SCRIPT_CANCEL_CANCELLED:
        return WHARF_CANCEL_ALREADY;
    case SCRIPT_CANCEL_FINISHED:
        return WHARF_CANCEL_FINISHED;
    case SCRIPT_CANCEL_UNKNOWN:
        return WHARF_CANCEL_UNKNOWN;
    default:
        return -1;
    }
}

wharf_client_status wharf_cancel(wharf_client *client, const char *type,
                                 const char *id, wharf_cancel_reply *out)
{
    wharf_cancel_reply answer;
    wharf_client_status status;
    redisReply *r = NULL;
    script_cancel_word word;
    pipeline *p;
    int outcome;

    if (!client)
        return WHARF_CLIENT_BAD_INPUT;
    status = client_check_names(client, type, id);
    if (status != WHARF_CLIENT_OK)
        return status;
    if (client_connect(client) != 0)
        return client->connect_status;
    /* Cannot overflow: prefix, type and id are checked, and bounded well
     * below KEY_MAX. */
    p = &client->pipe;
    if (script_cancel_call(&p->cmd, client->prefix, type, id, WHARF_GROUP,
                           CLIENT_PROTOCOLS) == 0)
        r = pipeline_call(p, &script_cancel, &p->cmd);
    if (!r)
        client_drop(client);
    status = client_reply_status(client, r, "cancel");
    if (status != WHARF_CLIENT_OK)
        goto out;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING ||
        r->element[1]->type != REDIS_REPLY_STRING) {
        client_error(client, "cancel: the cancel script gave an unexpected "
                             "reply");
        status = WHARF_CLIENT_ERROR;
        goto out;
    }
    word = script_cancel_word_of(r->element[0]->str);
    if (word == SCRIPT_CANCEL_PROTOCOL) {
        status = client_protocol_error(client, type, r->element[1]->str);
        goto out;
    }
    outcome = outcome_of(word);
    if (outcome < 0) {
        client_error(client, "cancel: the cancel script answered '%.40s'",
                     r->element[0]->str);
        status = WHARF_CLIENT_ERROR;
        goto out;
    }
    answer.outcome = (wharf_cancel_outcome)outcome;
    snprintf(answer.detail, sizeof(answer.detail), "%s", r->element[1]->str);
    if (answer.outcome == WHARF_CANCEL_FINISHED) {
        client_error(client,
                     "task '%s' of type '%s' has finished (%s): nothing to "
                     "cancel",
                     id, type, answer.detail);
        status = WHARF_CLIENT_NOT_FOUND;
    } else if (answer.outcome == WHARF_CANCEL_UNKNOWN) {
        client_error(client, "no task '%s' of type '%s' to cancel", id, type);
        status = WHARF_CLIENT_NOT_FOUND;
    }
    if (out)
        *out = answer;
out:
    freeReplyObject(r);
    return status;
}
