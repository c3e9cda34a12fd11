/* limit_key: the value of a task that its rate and its concurrency slots
 * are counted per (docs/manifest.md): its id, or the member a JSON
 * pointer names in its payload. */
#ifndef WHARF_LIMIT_VALUE_H
#define WHARF_LIMIT_VALUE_H

#include <stddef.h>

#include <wharf/plugin.h>

/* The longest value: its keys ("<prefix>:{<type>}:slots:<value>") must
 * fit KEY_MAX with room for the longest prefix and type. */
#define LIMIT_VALUE_MAX 200

/* Writes the value of key (limit_key: "id" or a JSON pointer) for task
 * into out (LIMIT_VALUE_MAX bytes, NUL-terminated; a string member as
 * its text, an integer in decimal) and returns its length; -1 with the
 * one-line reason in why when the payload is not JSON, has no such
 * member, or its member is not a string or an integer, or is too long. */
int limit_value(const char *key, const wharf_task *task, char *out, char *why,
                size_t why_len);

#endif /* WHARF_LIMIT_VALUE_H */
