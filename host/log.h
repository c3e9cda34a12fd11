/* The host's logger: one JSON object (or one text line) per line on stderr,
 * filtered by level. Plugins' wharf_log() lines come through here too. */
#ifndef WHARF_LOG_H
#define WHARF_LOG_H

#include <stddef.h>
#include <stdint.h>

#include <wharf/plugin.h> /* the levels: WHARF_LOG_* */

#include "config.h"

/* One extra field of a log line: a string (str != NULL) or an integer. */
typedef struct log_field {
    const char *key;
    const char *str;
    int64_t num;
} log_field;

/* A string field; NULL is logged as "". */
static inline log_field log_str(const char *key, const char *value)
{
    log_field f = {.key = key, .str = value ? value : "", .num = 0};
    return f;
}

#define LOG_STR(k, v) log_str((k), (v))
#define LOG_INT(k, v) ((log_field){.key = (k), .str = NULL, .num = (int64_t)(v)})

/* Sets the minimum level and the format; before the call: info, json. */
void log_setup(int level, log_format format);

/* True if a line at `level` would be written. */
int log_enabled(int level);

/* Writes one line: ts, level, msg, then the fields in order. The line is
 * built in memory and written with a single write(2), so lines from
 * several processes never interleave. Not async-signal-safe. */
void log_fields(int level, const char *msg, const log_field *fields,
                size_t n_fields);

/* log_fields without fields, with a printf-style message. */
void log_msg(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The level's name ("debug", "info", "warn", "error"). */
const char *log_level_name(int level);

#endif /* WHARF_LOG_H */
