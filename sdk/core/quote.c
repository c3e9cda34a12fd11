/* The one quoting rule; see quote.h. */
#include "quote.h"

#include <string.h>

void quote_bytes(const char *s, size_t n, char *buf, size_t len)
{
    size_t i = 0;

    if (len == 0)
        return;
    for (; i < n && i + 1 < len; i++)
        buf[i] = quote_char((unsigned char)s[i]);
    buf[i] = '\0';
    if (i < n && len >= 4)
        memcpy(buf + len - 4, "...", 4);
}

void quote_text(const char *s, char *buf, size_t len)
{
    quote_bytes(s ? s : "", s ? strlen(s) : 0, buf, len);
}
