/* Fixture: a descriptor from a future ABI (999) whose layout after `abi`
 * differs from version 1. Written by hand, not with WHARF_PLUGIN, so the
 * loader must read abi alone and refuse the rest unread. */
#include <wharf/plugin.h>

typedef struct future_plugin {
    uint32_t abi;
    uint32_t flags; /* a field version 1 does not have */
    const char *name;
    void (*entry_points[4])(void);
} future_plugin;

extern WHARF_EXPORT const future_plugin wharf_plugin_v1;
WHARF_EXPORT const future_plugin wharf_plugin_v1 = {
    .abi = 999,
    .flags = 0xffffffffu,
    .name = "badabi",
};
