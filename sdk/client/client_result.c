/* Results: the bytes a finished task left in result:<id>, read once or
 * polled for until they appear, with sdk/lua/status.lua, so a wait ends at
 * once when the task is dead or cancelled and no result will ever come. */
#include <stdlib.h>
#include <string.h>

#include "clock_ms.h"
#include "client_internal.h"

/* Polling starts fast (a short task is done in a few ms) and backs off. */
#define POLL_FIRST_MS 5
#define POLL_MAX_MS 100

/* One status call. On OK *data is a malloc'd copy with a NUL after it. */
static wharf_client_status get_once(wharf_client *c, const char *type,
                                    const char *id, void **data, size_t *len)
{
    wharf_client_status status;
    const redisReply *bytes;
    wharf_task_info info;
    redisReply *r = client_status_call(c, type, id, 1, &status);
    char *copy;

    if (!r)
        return status;
    client_status_parse(r, &info);
    bytes = client_status_result(r);
    if (info.state == WHARF_TASK_DONE && bytes) {
        if (!(copy = malloc(bytes->len + 1))) {
            client_error(c, "result: out of memory for %zu bytes", bytes->len);
            status = WHARF_CLIENT_ERROR;
        } else {
            memcpy(copy, bytes->str, bytes->len);
            copy[bytes->len] = '\0';
            *data = copy;
            *len = bytes->len;
        }
    } else if (info.state == WHARF_TASK_DEAD) {
        client_error(c, "task '%s' of type '%s' is dead after %u attempts: %s",
                     id, type, info.attempt, info.error);
        status = WHARF_CLIENT_DEAD;
    } else if (info.state == WHARF_TASK_CANCELLED) {
        client_error(c, "task '%s' of type '%s' was cancelled", id, type);
        status = WHARF_CLIENT_CANCELLED;
    } else if (info.state == WHARF_TASK_UNKNOWN) {
        client_error(c, "no result for task '%s' of type '%s'", id, type);
        status = WHARF_CLIENT_NOT_FOUND;
    } else {
        client_error(c, "no result for task '%s' of type '%s' yet (it is %s)",
                     id, type, wharf_task_state_name(info.state));
        status = WHARF_CLIENT_NOT_FOUND;
    }
    freeReplyObject(r);
    return status;
}

wharf_client_status wharf_result_wait(wharf_client *client, const char *type,
                                      const char *id, int64_t timeout_ms,
                                      void **data, size_t *len)
{
    int64_t deadline, step = POLL_FIRST_MS;
    wharf_client_status status;

    if (!client)
        return WHARF_CLIENT_BAD_INPUT;
    if (!data || !len) {
        client_error(client, "result: no place to put the result");
        return WHARF_CLIENT_BAD_INPUT;
    }
    deadline = clock_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    for (;;) {
        int64_t left;
        status = get_once(client, type, id, data, len);
        left = deadline - clock_ms();
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
        clock_sleep_ms(step < left ? step : left);
        step = step * 2 < POLL_MAX_MS ? step * 2 : POLL_MAX_MS;
    }
    return status;
}

wharf_client_status wharf_result_get(wharf_client *client, const char *type,
                                     const char *id, void **data, size_t *len)
{
    return wharf_result_wait(client, type, id, 0, data, len);
}
