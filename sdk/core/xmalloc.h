/* Allocation that cannot fail: on out of memory it prints one line,
 * "wharf: out of memory", and aborts, as Redis's zmalloc does. The one
 * policy for code with no caller to report to: the host (wharfd) and the
 * CLI. The core's own modules and libwharf-client do not use it: they are
 * linked into producers' programs, so they report ERROR_KIND_NOMEM
 * (error_kind.h) and WHARF_CLIENT_ERROR as <wharf/client.h> promises. */
#ifndef WHARF_XMALLOC_H
#define WHARF_XMALLOC_H

#include <stddef.h>

/* Prints "wharf: out of memory" on stderr and aborts. */
_Noreturn void xmalloc_oom(void);

/* realloc (old may be NULL; size 0 is taken as 1). */
void *xrealloc(void *old, size_t size);

/* calloc (a zero count or size is taken as 1). */
void *xcalloc(size_t count, size_t size);

/* A NUL-terminated copy of len bytes of s. */
char *xstrndup(const char *s, size_t len);

/* A copy of s. */
char *xstrdup(const char *s);

#endif /* WHARF_XMALLOC_H */
