/* The plugin of README's "Writing a plugin", verbatim: test_check builds it with the
 * plain line `cc -shared -fPIC -I sdk/include` and nothing else. */
#include <wharf/plugin.h>

static wharf_status process_business(wharf_ctx *ctx, const wharf_task *task)
{
    if (task->payload_len == 0) {
        wharf_error(ctx, "empty payload");
        return WHARF_FAIL;                 /* permanent: dead set, no retry */
    }
    wharf_log(ctx, WHARF_LOG_INFO, "got %zu bytes", task->payload_len);
    wharf_result(ctx, task->payload, task->payload_len);
    return WHARF_OK;                       /* WHARF_RETRY: try again later */
}

WHARF_PLUGIN(.name = "echo", .version = "1.0.0",
             .process_business = process_business);
