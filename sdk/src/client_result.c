/* Results: the bytes a finished task left in result:<id>, read once or
 * polled for until they appear. */
#include <stdlib.h>
#include <string.h>

#include "client_ids.h"
#include "client_internal.h"
#include "keys.h"

/* Polling starts fast (a short task is done in a few ms) and backs off. */
#define POLL_FIRST_MS 5
#define POLL_MAX_MS 100

static wharf_client_status check_names(wharf_client *c, const char *type,
                                       const char *id)
{
    char quoted[120];

    if (!client_valid_type(type)) {
        client_quote(type ? type : "", quoted, sizeof(quoted));
        client_error(c, "type '%s' is not valid: " CLIENT_TYPE_RULE, quoted);
        return WHARF_CLIENT_BAD_INPUT;
    }
    if (!client_valid_id(id)) {
        client_quote(id ? id : "", quoted, sizeof(quoted));
        client_error(c, "task id '%s' is not valid: " CLIENT_ID_RULE, quoted);
        return WHARF_CLIENT_BAD_INPUT;
    }
    return WHARF_CLIENT_OK;
}

/* One GET. On OK *data is a malloc'd copy with a NUL after it. */
static wharf_client_status get_once(wharf_client *c, const char *key,
                                    const char *type, const char *id,
                                    void **data, size_t *len)
{
    redisReply *r = NULL;
    wharf_client_status status = WHARF_CLIENT_UNAVAILABLE;
    char *copy;

    if (client_connect(c) != 0) {
        status = c->connect_status;
        goto out;
    }
    r = pipeline_command(&c->pipe, key, "GET %s", key);
    if (!r)
        client_drop(c);
    status = client_reply_status(c, r, "result");
    if (status != WHARF_CLIENT_OK)
        goto out;
    if (r->type == REDIS_REPLY_NIL) {
        client_error(c, "no result for task '%s' of type '%s'", id, type);
        status = WHARF_CLIENT_NOT_FOUND;
    } else if (r->type != REDIS_REPLY_STRING) {
        client_error(c, "result: %s is not a string", key);
        status = WHARF_CLIENT_ERROR;
    } else if (!(copy = malloc(r->len + 1))) {
        client_error(c, "result: out of memory for %zu bytes", r->len);
        status = WHARF_CLIENT_ERROR;
    } else {
        memcpy(copy, r->str, r->len);
        copy[r->len] = '\0';
        *data = copy;
        *len = r->len;
    }
out:
    freeReplyObject(r);
    return status;
}

wharf_client_status wharf_result_wait(wharf_client *client, const char *type,
                                      const char *id, int64_t timeout_ms,
                                      void **data, size_t *len)
{
    char key[KEY_MAX];
    int64_t deadline, step = POLL_FIRST_MS;
    wharf_client_status status;

    if (!client)
        return WHARF_CLIENT_BAD_INPUT;
    if (!data || !len) {
        client_error(client, "result: no place to put the result");
        return WHARF_CLIENT_BAD_INPUT;
    }
    status = check_names(client, type, id);
    if (status != WHARF_CLIENT_OK)
        return status;
    key_of_task(key, sizeof(key), client->prefix, type, "result", id);
    deadline = client_monotonic_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    for (;;) {
        int64_t left;
        status = get_once(client, key, type, id, data, len);
        left = deadline - client_monotonic_ms();
        if (status != WHARF_CLIENT_NOT_FOUND || timeout_ms <= 0)
            break;
        if (left <= 0) {
            client_error(client,
                         "no result for task '%s' of type '%s' "
                         "after %lld ms",
                         id, type, (long long)timeout_ms);
            status = WHARF_CLIENT_TIMEOUT;
            break;
        }
        client_sleep_ms(step < left ? step : left);
        step = step * 2 < POLL_MAX_MS ? step * 2 : POLL_MAX_MS;
    }
    return status;
}

wharf_client_status wharf_result_get(wharf_client *client, const char *type,
                                     const char *id, void **data, size_t *len)
{
    return wharf_result_wait(client, type, id, 0, data, len);
}
