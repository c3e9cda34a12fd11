/* echo: the example plugin. The result of a task is its payload; an empty
 * payload is a permanent failure, to show WHARF_FAIL. */
#include <wharf/plugin.h>

static wharf_status process_business(wharf_ctx *ctx, const wharf_task *task)
{
    if (task->payload_len == 0) {
        wharf_error(ctx, "empty payload");
        return WHARF_FAIL;
    }
    wharf_log(ctx, WHARF_LOG_DEBUG, "echoing %zu bytes", task->payload_len);
    if (wharf_result(ctx, task->payload, task->payload_len) != 0) {
        wharf_error(ctx, "result of %zu bytes refused", task->payload_len);
        return WHARF_FAIL;
    }
    return WHARF_OK;
}

static const char *const echo_types[] = {"echo", NULL};

/* Keeps nothing between calls, so any number may run at once. */
WHARF_PLUGIN(.name = "echo", .version = "1.0.0", .types = echo_types,
             .process_business = process_business, .thread_safe = 1);
