/* wharf_cancel: one call of sdk/lua/cancel.lua, which removes a waiting
 * task or leaves the cancel request a running one's host acts on. */
#include <stdio.h>
#include <string.h>

#include "client_internal.h"
#include "keys.h"

enum { CANCEL_KEYS = 9 };

/* The outcome of a cancel script's word, or -1. */
static int outcome_of(const char *word)
{
    static const struct {
        const char *word;
        wharf_cancel_outcome outcome;
    } words[] = {{"REMOVED", WHARF_CANCEL_REMOVED},
                 {"CANCELLING", WHARF_CANCEL_REQUESTED},
                 {"CANCELLED", WHARF_CANCEL_ALREADY},
                 {"FINISHED", WHARF_CANCEL_FINISHED},
                 {"UNKNOWN", WHARF_CANCEL_UNKNOWN}};

    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (strcmp(word, words[i].word) == 0)
            return (int)words[i].outcome;
    return -1;
}

wharf_client_status wharf_cancel(wharf_client *client, const char *type,
                                 const char *id, wharf_cancel_reply *out)
{
    char keys[CANCEL_KEYS][KEY_MAX];
    const char *argv[CANCEL_KEYS + 3];
    wharf_cancel_reply answer;
    wharf_client_status status;
    redisReply *r;
    int outcome;

    if (!client)
        return WHARF_CLIENT_BAD_INPUT;
    status = client_check_names(client, type, id);
    if (status != WHARF_CLIENT_OK)
        return status;
    key_of_type(keys[0], KEY_MAX, client->prefix, type, "policy");
    key_of_type(keys[1], KEY_MAX, client->prefix, type, "entries");
    key_of_type(keys[2], KEY_MAX, client->prefix, type, "stream");
    key_of_type(keys[3], KEY_MAX, client->prefix, type, "delayed");
    key_of_task(keys[4], KEY_MAX, client->prefix, type, "task", id);
    key_of_task(keys[5], KEY_MAX, client->prefix, type, "seen", id);
    key_of_task(keys[6], KEY_MAX, client->prefix, type, "cancel", id);
    key_of_task(keys[7], KEY_MAX, client->prefix, type, "result", id);
    key_of_type(keys[8], KEY_MAX, client->prefix, type, "dead");
    for (int k = 0; k < CANCEL_KEYS; k++)
        argv[k] = keys[k];
    argv[CANCEL_KEYS] = id;
    argv[CANCEL_KEYS + 1] = WHARF_GROUP;
    argv[CANCEL_KEYS + 2] = CLIENT_PROTOCOLS;
    if (client_connect(client) != 0)
        return client->connect_status;
    r = pipeline_script(&client->pipe, &client->cancel, CANCEL_KEYS,
                        CANCEL_KEYS + 3, argv, NULL);
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
    if (strcmp(r->element[0]->str, "PROTOCOL") == 0) {
        status = client_protocol_error(client, type, r->element[1]->str);
        goto out;
    }
    outcome = outcome_of(r->element[0]->str);
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
