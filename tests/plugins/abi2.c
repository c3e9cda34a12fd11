/* Fixture: a plugin built against ABI 2, before .thread_safe was
 * appended. Written by hand with ABI 2's layout (it ends at fini), so the
 * loader must load it and read nothing past its end: it counts as not
 * thread-safe. */
#include <wharf/plugin.h>

typedef struct abi2_plugin {
    uint32_t abi;
    const char *name;
    const char *version;
    const char *const *types;
    int (*init)(wharf_ctx *ctx, void **state);
    wharf_status (*process_business)(wharf_ctx *ctx, const wharf_task *task);
    void (*fini)(wharf_ctx *ctx, void *state);
} abi2_plugin;

static const char *const types[] = {"abi2", NULL};

static wharf_status process_business(wharf_ctx *ctx, const wharf_task *task)
{
    (void)task;
    return wharf_result(ctx, "abi2", 4) == 0 ? WHARF_OK : WHARF_RETRY;
}

extern WHARF_EXPORT const abi2_plugin wharf_plugin_v1;
WHARF_EXPORT const abi2_plugin wharf_plugin_v1 = {
    .abi = 2,
    .name = "abi2",
    .version = "2.0.0",
    .types = types,
    .process_business = process_business,
};
