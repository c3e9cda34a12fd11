/* limit_key's value of a task: see limit_value.h. A JSON pointer is
 * walked as RFC 6901 says: each /token names an object member (~1 is /,
 * ~0 is ~) or an array index (decimal, no leading zero). */
#include "limit_value.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "config.h"
#include "error_set.h"

/* The token of pointer at *at (after its /) unescaped into buf; *at moves
 * past it. False if it does not fit. */
static bool next_token(const char **at, char *buf, size_t cap)
{
    size_t n = 0;
    const char *c = *at;

    for (; *c != '\0' && *c != '/'; c++) {
        char ch = *c;
        if (ch == '~') {
            ch = c[1] == '1' ? '/' : '~';
            c++;
        }
        if (n + 1 >= cap)
            return false;
        buf[n++] = ch;
    }
    buf[n] = '\0';
    *at = c;
    return true;
}

/* The array index token names, or -1. */
static long long array_index(const char *token)
{
    char *end;
    long long i;

    if (token[0] < '0' || token[0] > '9' || (token[0] == '0' && token[1]))
        return -1;
    i = strtoll(token, &end, 10);
    return *end == '\0' ? i : -1;
}

/* The member of root that pointer names, or NULL. */
static json_t *resolve(json_t *root, const char *pointer)
{
    char token[LIMIT_KEY_MAX];
    const char *at = pointer;
    json_t *v = root;

    while (v && *at == '/') {
        at++;
        if (!next_token(&at, token, sizeof(token)))
            return NULL;
        if (json_is_object(v)) {
            v = json_object_get(v, token);
        } else if (json_is_array(v)) {
            long long i = array_index(token);
            v = i < 0 ? NULL : json_array_get(v, (size_t)i);
        } else {
            v = NULL;
        }
    }
    return v;
}

int limit_value(const char *key, const wharf_task *task, char *out, char *why,
                size_t why_len)
{
    json_t *root = NULL, *v;
    int len = -1;

    if (strcmp(key, "id") == 0) {
        len = snprintf(out, LIMIT_VALUE_MAX, "%s", task->id);
        if (len >= LIMIT_VALUE_MAX) {
            error_set(why, why_len, "limit_key id: the id is over %d bytes",
                      LIMIT_VALUE_MAX - 1);
            len = -1;
        }
        return len;
    }
    root = json_loadb((const char *)task->payload, task->payload_len,
                      JSON_DECODE_ANY, NULL);
    if (!root) {
        error_set(why, why_len, "limit_key %s: the payload is not JSON", key);
        goto out;
    }
    v = resolve(root, key);
    if (!v) {
        error_set(why, why_len, "limit_key %s: payload has no such member",
                  key);
    } else if (json_is_string(v)) {
        if (json_string_length(v) >= LIMIT_VALUE_MAX ||
            memchr(json_string_value(v), '\0', json_string_length(v))) {
            error_set(why, why_len,
                      "limit_key %s: the member is over %d bytes or holds "
                      "a NUL",
                      key, LIMIT_VALUE_MAX - 1);
        } else {
            len = (int)json_string_length(v);
            memcpy(out, json_string_value(v), (size_t)len + 1);
        }
    } else if (json_is_integer(v)) {
        len = snprintf(out, LIMIT_VALUE_MAX, "%" JSON_INTEGER_FORMAT,
                       json_integer_value(v));
    } else {
        error_set(why, why_len,
                  "limit_key %s: the member is not a string or an integer",
                  key);
    }
out:
    json_decref(root);
    return len;
}
