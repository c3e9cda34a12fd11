/* Fixture: serves "clash" and also "good", which good.so serves: loaded
 * beside good.so without a `types` override, the types clash. */
#include <wharf/plugin.h>

static const char *const types[] = {"clash", "good", NULL};

static wharf_status process_business(wharf_ctx *ctx, const wharf_task *task)
{
    wharf_result(ctx, "clash", 5);
    (void)task;
    return WHARF_OK;
}

WHARF_PLUGIN(.name = "clash", .version = "1.0.0", .types = types,
             .process_business = process_business);
