/* Fixture: a plugin that lists no types of its own; it loads only when the
 * manifest names them in `types`. */
#include <wharf/plugin.h>

static wharf_status process_business(wharf_ctx *ctx, const wharf_task *task)
{
    wharf_result(ctx, "notypes", 7);
    (void)task;
    return WHARF_OK;
}

WHARF_PLUGIN(.name = "notypes", .version = "1.0.0",
             .process_business = process_business);
