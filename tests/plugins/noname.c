/* Fixture: a descriptor without a name. */
#include <wharf/plugin.h>

static const char *const types[] = {"noname", NULL};

static wharf_status process_business(wharf_ctx *ctx, const wharf_task *task)
{
    (void)ctx;
    (void)task;
    return WHARF_OK;
}

WHARF_PLUGIN(.version = "1.0.0", .types = types,
             .process_business = process_business);
