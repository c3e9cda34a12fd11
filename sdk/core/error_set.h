/* The message half of an error (error_kind.h is the kind half): one line
 * written into a caller's buffer, the err and errlen out-param of the
 * functions that take one, cut to fit, and nothing written when err is
 * NULL or errlen is 0. Static inline in this header, the whole module:
 * five lines need no object file of their own. */
#ifndef WHARF_ERROR_SET_H
#define WHARF_ERROR_SET_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

static inline void error_set(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static inline void error_set(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (!err || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

#endif /* WHARF_ERROR_SET_H */
