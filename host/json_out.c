/* The JSON writer; see json_out.h. The buffer doubles as it grows (from
 * 1 KiB), so a writer that appends byte by byte stays linear. */
#include "json_out.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xmalloc.h"

void json_out_raw(json_out *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + n + 1)
            cap *= 2;
        b->s = xrealloc(b->s, cap);
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

void json_out_puts(json_out *b, const char *s)
{
    json_out_raw(b, s, strlen(s));
}

/* What json_out_printf writes without a second pass: names and numbers
 * are short. */
#define JSON_OUT_SMALL 256

void json_out_printf(json_out *b, const char *fmt, ...)
{
    char small[JSON_OUT_SMALL];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof(small)) {
        json_out_raw(b, small, (size_t)n);
        return;
    }
    {
        char *big = xrealloc(NULL, (size_t)n + 1);
        va_start(ap, fmt);
        vsnprintf(big, (size_t)n + 1, fmt, ap);
        va_end(ap);
        json_out_raw(b, big, (size_t)n);
        free(big);
    }
}

/* Length of the valid UTF-8 sequence at s (of n bytes), or 0. */
static size_t utf8_length(const unsigned char *s, size_t n)
{
    size_t need;
    unsigned lo = 0x80, hi = 0xbf;

    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        need = 2;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        need = 3;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        need = 4;
    else
        return 0;
    if (n < need)
        return 0;
    if (s[0] == 0xe0)
        lo = 0xa0;
    else if (s[0] == 0xed)
        hi = 0x9f; /* no surrogates */
    else if (s[0] == 0xf0)
        lo = 0x90;
    else if (s[0] == 0xf4)
        hi = 0x8f;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < need; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return need;
}

size_t json_out_piece(const char *text, size_t n, bool inert,
                      char out[JSON_OUT_PIECE_MAX], size_t *used)
{
    const unsigned char *s = (const unsigned char *)text;
    unsigned char ch = s[0];
    size_t run;

    *used = 1;
    if (ch == '"' || ch == '\\') {
        out[0] = '\\';
        out[1] = (char)ch;
        return 2;
    }
    if (inert && (ch == '<' || ch == '>' || ch == '&' || ch == '\''))
        return (size_t)snprintf(out, JSON_OUT_PIECE_MAX, "\\u%04x", ch);
    if (ch == '\n' || ch == '\t') {
        out[0] = '\\';
        out[1] = ch == '\n' ? 'n' : 't';
        return 2;
    }
    if (ch >= 0x20 && ch < 0x7f) {
        out[0] = (char)ch;
        return 1;
    }
    if (ch >= 0x80 && (run = utf8_length(s, n)) > 0) {
        memcpy(out, s, run);
        *used = run;
        return run;
    }
    return (size_t)snprintf(out, JSON_OUT_PIECE_MAX, "\\\\x%02x", ch);
}

void json_out_text(json_out *b, const char *text, size_t len, size_t max)
{
    size_t n = len < max ? len : max;
    char piece[JSON_OUT_PIECE_MAX];

    json_out_raw(b, "\"", 1);
    for (size_t i = 0, used; i < n; i += used) {
        size_t wrote = json_out_piece(text + i, n - i, true, piece, &used);
        json_out_raw(b, piece, wrote);
    }
    json_out_raw(b, "\"", 1);
}

void json_out_str(json_out *b, const char *s)
{
    json_out_text(b, s, strlen(s), SIZE_MAX);
}

char *json_out_take(json_out *b, size_t *len)
{
    char *s = b->s;

    if (len)
        *len = b->len;
    b->s = NULL;
    b->len = b->cap = 0;
    return s;
}

void json_out_free(json_out *b)
{
    free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
}
