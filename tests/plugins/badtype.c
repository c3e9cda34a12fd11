/* Fixture: a plugin listing a type name that would break a Redis key. */
#include <wharf/plugin.h>

static const char *const types[] = {"fine", "bad type!", NULL};

static wharf_status process_business(wharf_ctx *ctx, const wharf_task *task)
{
    (void)ctx;
    (void)task;
    return WHARF_OK;
}

WHARF_PLUGIN(.name = "badtype", .version = "1.0.0", .types = types,
             .process_business = process_business);
