/* Fixture: a shared object without a wharf_plugin_v1 symbol. The loader
 * must refuse it as "not a wharf plugin". */
#include <wharf/plugin.h>

WHARF_EXPORT int nosym_answer(void);

WHARF_EXPORT int nosym_answer(void)
{
    return 42;
}
