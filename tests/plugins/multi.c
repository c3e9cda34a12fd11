/* Fixture: a plugin without init or fini serving two types; the tests
 * autoload it. */
#include <string.h>

#include <wharf/plugin.h>

static const char *const types[] = {"beta", "alpha", NULL};

static wharf_status process_business(wharf_ctx *ctx, const wharf_task *task)
{
    const char *config = wharf_config(ctx, "greeting");

    /* Autoloaded: no section, so no config and no state. */
    if (config != NULL || wharf_state(ctx) != NULL) {
        wharf_error(ctx, "unexpected config or state");
        return WHARF_FAIL;
    }
    wharf_result(ctx, task->type, strlen(task->type));
    return WHARF_OK;
}

WHARF_PLUGIN(.name = "multi", .version = "1.0.0", .types = types,
             .process_business = process_business);
