/* The console's answers and the arguments of its requests: JSON replies,
 * errors, 503 with Retry-After, and the checks of a request's number and
 * type arguments. The lowest of the console's files (console.h): it
 * knows requests and replies, not the console. */
#ifndef WHARF_CONSOLE_REPLY_H
#define WHARF_CONSOLE_REPLY_H

#include <stdbool.h>

#include "http.h"
#include "json_out.h"

/* Answers b (a newline is added; reply takes b's text). */
void console_reply_json(http_reply *reply, unsigned status, json_out *b);

/* Answers {"error": why}. */
void console_reply_error(http_reply *reply, unsigned status, const char *fmt,
                         ...) __attribute__((format(printf, 3, 4)));

/* Answers 503 with Retry-After: retry_s (Redis is away or slow; come
 * back in a while). */
void console_unavailable(http_reply *reply, const char *retry_s,
                         const char *why);

/* A number query argument in lo..hi, or def when absent; -1 when bad. */
long console_query_number(const char *name, long def, long lo, long hi);

/* A type argument: type itself when valid, NULL when absent and not
 * required, or "" after answering 400. */
const char *console_type_arg(http_reply *reply, const char *type,
                             bool required);

/* The type argument of the query (as console_type_arg). */
const char *console_query_type(http_reply *reply, bool required);

#endif /* WHARF_CONSOLE_REPLY_H */
