/* Fixture: a descriptor without process_business. */
#include <wharf/plugin.h>

static const char *const types[] = {"nullcb", NULL};

WHARF_PLUGIN(.name = "nullcb", .version = "1.0.0", .types = types);
