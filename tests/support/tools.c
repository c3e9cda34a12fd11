/* The outside programs some tests drive; see tools.h. */
#include "tools.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

void test_need_tools(const char *const *tools)
{
    char missing[256] = "", cmd[300];

    for (size_t i = 0; tools[i]; i++) {
        snprintf(cmd, sizeof(cmd), "command -v '%s' >/dev/null 2>&1", tools[i]);
        if (system(cmd) != 0) {
            size_t used = strlen(missing);
            snprintf(missing + used, sizeof(missing) - used, " %s", tools[i]);
        }
    }
    cr_assert(missing[0] == '\0',
              "not installed:%s (scripts/bootstrap installs it; run it as "
              "root, or `make test`, which runs it first)",
              missing);
}
