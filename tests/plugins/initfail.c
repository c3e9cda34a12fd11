/* Fixture: init fails with status 3 and says why. */
#include <wharf/plugin.h>

static const char *const types[] = {"initfail", NULL};

static int init(wharf_ctx *ctx, void **state)
{
    (void)state;
    wharf_error(ctx, "no database configured");
    return 3;
}

static wharf_status process_business(wharf_ctx *ctx, const wharf_task *task)
{
    (void)ctx;
    (void)task;
    return WHARF_OK;
}

WHARF_PLUGIN(.name = "initfail", .version = "1.0.0", .types = types,
             .init = init, .process_business = process_business);
