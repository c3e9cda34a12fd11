/* A JSON writer: a growing buffer that text is appended to, and one rule
 * for writing any bytes as a JSON string that is safe to show anywhere,
 * in a page included. No tree, no schema: the caller writes the braces
 * and commas, as it would with printf, and gets one malloc'd string.
 * Out of memory aborts with a message, as every host allocation does. */
#ifndef WHARF_JSON_OUT_H
#define WHARF_JSON_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Empty when zeroed (json_out b = {0}); s is NUL-terminated once
 * anything was written, NULL before. */
typedef struct json_out {
    char *s;
    size_t len, cap;
} json_out;

/* Appends n bytes as they are (punctuation, numbers, JSON made
 * elsewhere). */
void json_out_raw(json_out *b, const char *s, size_t n);

/* Appends the NUL-terminated s as it is. */
void json_out_puts(json_out *b, const char *s);

/* Appends printf's output as it is (names and numbers: nothing in it is
 * escaped). */
void json_out_printf(json_out *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Appends the first max bytes of text (len bytes, any bytes, NULs too) as
 * one JSON string: valid UTF-8 passes, every other byte that is not
 * printable becomes the text \xNN (as the CLI shows it), and <, >, & and
 * ' are \u-escaped so the JSON is inert even if a browser took it for
 * HTML. SIZE_MAX for no cut. */
void json_out_text(json_out *b, const char *text, size_t len, size_t max);

/* The rule json_out_text follows, one piece at a time, for writers that
 * cannot allocate (the log): writes into out what the bytes at s (n > 0
 * of them) become, at most JSON_OUT_PIECE_MAX bytes, returns how many it
 * wrote, and sets *used to how many bytes of s that took. inert: <, >, &
 * and ' \u-escaped, as json_out_text does for a page; a log, grepped
 * rather than shown, keeps them as they are. */
#define JSON_OUT_PIECE_MAX 8
size_t json_out_piece(const char *s, size_t n, bool inert,
                      char out[JSON_OUT_PIECE_MAX], size_t *used);

/* json_out_text of the whole NUL-terminated s. */
void json_out_str(json_out *b, const char *s);

/* Hands over what was written (malloc'd, NUL-terminated, the caller
 * frees; NULL if nothing was) and its length into *len if len is not
 * NULL; b is empty again. */
char *json_out_take(json_out *b, size_t *len);

/* Frees what b holds; b is empty again. */
void json_out_free(json_out *b);

#endif /* WHARF_JSON_OUT_H */
