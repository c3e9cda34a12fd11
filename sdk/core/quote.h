/* The one quoting rule for text shown in a message or a log line (a name,
 * a path, a URL, a field of a task, whatever a user or a plugin gave):
 * printable ASCII (0x20..0x7e) as it is, every other byte as '?', cut
 * with "..." to fit. So no control byte, escape sequence or byte a
 * terminal might read as one (0x80 and up: C1 controls, broken UTF-8)
 * reaches a terminal or splits a line. */
#ifndef WHARF_QUOTE_H
#define WHARF_QUOTE_H

#include <stdbool.h>
#include <stddef.h>

/* True if byte c is shown as it is. */
static inline bool quote_shown(unsigned char c)
{
    return c >= 0x20 && c <= 0x7e;
}

/* What byte c is shown as: itself, or '?'. */
static inline char quote_char(unsigned char c)
{
    return quote_shown(c) ? (char)c : '?';
}

/* Copies the NUL-terminated s (NULL: "") into buf for a message: at most
 * len - 1 bytes, each as quote_char shows it, the last three "..." when
 * s is longer. */
void quote_text(const char *s, char *buf, size_t len);

/* quote_text of the n bytes at s, NUL bytes included (as '?'). */
void quote_bytes(const char *s, size_t n, char *buf, size_t len);

#endif /* WHARF_QUOTE_H */
