/* The console's JSON answers and the checks of its requests' arguments;
 * see console_reply.h. */
#include "console_reply.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "config.h"

void console_reply_json(http_reply *reply, unsigned status, json_out *b)
{
    json_out_puts(b, "\n");
    reply->status = status;
    reply->content_type = "application/json; charset=utf-8";
    reply->body = json_out_take(b, &reply->len);
}

void console_reply_error(http_reply *reply, unsigned status, const char *fmt,
                         ...)
{
    char why[512];
    json_out b = {0};
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    json_out_puts(&b, "{\"error\":");
    json_out_str(&b, why);
    json_out_puts(&b, "}");
    console_reply_json(reply, status, &b);
}

void console_unavailable(http_reply *reply, const char *retry_s,
                         const char *why)
{
    http_reply_header(reply, "Retry-After", retry_s);
    console_reply_error(reply, 503, "%s", why);
}

long console_query_number(const char *name, long def, long lo, long hi)
{
    const char *text = http_query(name);
    char *end;
    long n;

    if (!text || !*text)
        return def;
    n = strtol(text, &end, 10);
    if (*end || n < lo || n > hi)
        return -1;
    return n;
}

const char *console_type_arg(http_reply *reply, const char *type, bool required)
{
    if ((!type || !*type) && !required)
        return NULL;
    if (!type || !config_valid_type_name(type)) {
        console_reply_error(reply, 400,
                            "type: expected 1-100 bytes of [A-Za-z0-9._-]");
        return "";
    }
    return type;
}

const char *console_query_type(http_reply *reply, bool required)
{
    return console_type_arg(reply, http_query("type"), required);
}
