/* Fixture: version 1 of the plugin "versioned"; its result says "v1".
 * versioned_v2.c is the same plugin at version 2, for reload tests. */
#include <wharf/plugin.h>

static wharf_status process_business(wharf_ctx *ctx, const wharf_task *task)
{
    (void)task;
    return wharf_result(ctx, "v1", 2) == 0 ? WHARF_OK : WHARF_FAIL;
}

static const char *const types[] = {"versioned", NULL};

WHARF_PLUGIN(.name = "versioned", .version = "1.0.0", .types = types,
             .process_business = process_business);
