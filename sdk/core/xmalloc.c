/* Allocation that aborts on failure; see xmalloc.h. Moved here from the
 * manifest parser, which had it as its own. */
#include "xmalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void xmalloc_oom(void)
{
    fputs("wharf: out of memory\n", stderr);
    abort();
}

void *xrealloc(void *old, size_t size)
{
    void *p = realloc(old, size ? size : 1);

    if (p == NULL)
        xmalloc_oom();
    return p;
}

void *xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);

    if (p == NULL)
        xmalloc_oom();
    return p;
}

char *xstrndup(const char *s, size_t len)
{
    char *p = xrealloc(NULL, len + 1);

    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

char *xstrdup(const char *s)
{
    return xstrndup(s, strlen(s));
}
