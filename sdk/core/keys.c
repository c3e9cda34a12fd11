/* Redis key names; see keys.h. */
#include "keys.h"

#include <stdio.h>

static int fit(char *buf, size_t len, int n)
{
    if (n < 0 || (size_t)n >= len) {
        if (len > 0)
            buf[0] = '\0';
        return -1;
    }
    return n;
}

int key_of_type(char *buf, size_t len, const char *prefix, const char *type,
                const char *what)
{
    return fit(buf, len, snprintf(buf, len, "%s:{%s}:%s", prefix, type, what));
}

int key_of_task(char *buf, size_t len, const char *prefix, const char *type,
                const char *what, const char *id)
{
    return fit(buf, len,
               snprintf(buf, len, "%s:{%s}:%s:%s", prefix, type, what, id));
}

int key_global(char *buf, size_t len, const char *prefix, const char *what)
{
    return fit(buf, len, snprintf(buf, len, "%s:%s", prefix, what));
}
