/* Fixture: a descriptor whose name is the empty string. */
#include <wharf/plugin.h>

static const char *const types[] = {"emptyname", NULL};

static wharf_status process_business(wharf_ctx *ctx, const wharf_task *task)
{
    (void)ctx;
    (void)task;
    return WHARF_OK;
}

WHARF_PLUGIN(.name = "", .version = "1.0.0", .types = types,
             .process_business = process_business);
