/* The host's logger. Each line is assembled in a fixed buffer and written
 * with one write(2) to stderr, so concurrent worker processes never
 * interleave their lines. */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <wharf/plugin.h>

#include "json_out.h"
#include "quote.h"

/* Every part of a line has its own budget, so a line never outgrows its
 * buffer and structural bytes are never cut: the message keeps at most
 * LOG_MSG_MAX escaped bytes, each field key and value LOG_FIELD_MAX, and at
 * most LOG_FIELDS_MAX fields are written. A cut string ends with "...". */
#define LOG_MSG_MAX 4000
#define LOG_FIELD_MAX 1000
#define LOG_FIELDS_MAX 12
/* "2026-12-02T15:04:05.123Z" with room; a long long in decimal. */
#define LOG_TIME_MAX 40
#define LOG_NUMBER_MAX 32
/* The rest of a line: priority, timestamp, level, keys and punctuation. */
#define LOG_FRAME_MAX 256
#define LOG_LINE_MAX                                                           \
    (LOG_FRAME_MAX + LOG_MSG_MAX + LOG_FIELDS_MAX * (2 * LOG_FIELD_MAX + 8))

/* Read by every thread (the supervisor's lease keeper logs too). */
static _Atomic int log_min_level = WHARF_LOG_INFO;
static _Atomic log_format log_fmt = LOG_FORMAT_JSON;

static const char *const level_names[] = {"debug", "info", "warn", "error"};

/* When stderr is the journal (systemd sets $JOURNAL_STREAM to the
 * "device:inode" of the stream it connected), each line starts with its
 * syslog priority ("<3>" error ... "<7>" debug, sd-daemon(3)), which
 * journald strips and records as PRIORITY, and the text format leaves
 * out its timestamp, which the journal adds to every line anyway. JSON
 * keeps "ts": it is a field of the line that log shippers parse. */
static const char *const journal_priorities[] = {"<7>", "<6>", "<4>", "<3>"};
static _Atomic int log_journal = -1; /* -1: not yet looked at */

static int log_to_journal(void)
{
    const char *stream = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    struct stat st;
    char tail;

    if (stream == NULL ||
        sscanf(stream, "%llu:%llu%c", &dev, &ino, &tail) != 2 ||
        fstat(STDERR_FILENO, &st) != 0)
        return 0;
    return (unsigned long long)st.st_dev == dev &&
           (unsigned long long)st.st_ino == ino;
}

void log_setup(int level, log_format format)
{
    if (level < WHARF_LOG_DEBUG)
        level = WHARF_LOG_DEBUG;
    if (level > WHARF_LOG_ERROR)
        level = WHARF_LOG_ERROR;
    log_min_level = level;
    log_fmt = format;
    log_journal = log_to_journal();
}

int log_enabled(int level)
{
    return level >= log_min_level;
}

const char *log_level_name(int level)
{
    if (level < WHARF_LOG_DEBUG || level > WHARF_LOG_ERROR)
        return "info";
    return level_names[level];
}

typedef struct line_buf {
    char data[LOG_LINE_MAX];
    size_t len;
} line_buf;

/* Callers stay within the budgets above, so this always fits. */
static void put_raw(line_buf *b, const char *s, size_t n)
{
    memcpy(b->data + b->len, s, n);
    b->len += n;
}

static void put(line_buf *b, const char *s)
{
    put_raw(b, s, strlen(s));
}

/* Appends s, escaped, using at most max bytes: for JSON, as every JSON
 * string of the host is written (json_out_piece: valid UTF-8 as it is,
 * other bytes outside printable ASCII as the text \xNN; not inert, so
 * < > & ' as they are), so any plugin text stays valid JSON; for text,
 * the one quoting rule (quote.h: every byte outside printable ASCII
 * becomes '?') so one event is always one line and nothing in it reaches
 * a terminal as a control. */
static void put_escaped(line_buf *b, const char *s, size_t max, int json)
{
    size_t start = b->len, left = strlen(s), used, n;
    char piece[JSON_OUT_PIECE_MAX];

    for (; left > 0; s += used, left -= used) {
        if (json) {
            n = json_out_piece(s, left, false, piece, &used);
        } else {
            piece[0] = quote_char((unsigned char)*s);
            n = used = 1;
        }
        if (b->len - start + n + 3 > max) {
            put_raw(b, "...", 3);
            return;
        }
        put_raw(b, piece, n);
    }
}

static void put_timestamp(line_buf *b)
{
    struct timespec now;
    struct tm tm;
    char ts[LOG_TIME_MAX];

    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    size_t n = strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(ts + n, sizeof(ts) - n, ".%03ldZ", now.tv_nsec / 1000000);
    put(b, ts);
}

static void write_all(const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = write(STDERR_FILENO, data, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return; /* nowhere left to report it */
        }
        data += n;
        len -= (size_t)n;
    }
}

void log_fields(int level, const char *msg, const log_field *fields,
                size_t n_fields)
{
    /* large; one per thread, never re-entered */
    static _Thread_local line_buf b;
    int json = log_fmt == LOG_FORMAT_JSON;
    char num[LOG_NUMBER_MAX];

    if (!log_enabled(level))
        return;
    if (n_fields > LOG_FIELDS_MAX)
        n_fields = LOG_FIELDS_MAX;
    if (log_journal < 0)
        log_journal = log_to_journal();
    b.len = 0;
    if (log_journal)
        put(&b, journal_priorities[level < WHARF_LOG_DEBUG   ? WHARF_LOG_DEBUG
                                   : level > WHARF_LOG_ERROR ? WHARF_LOG_ERROR
                                                             : level]);
    if (json) {
        put(&b, "{\"ts\":\"");
        put_timestamp(&b);
        put(&b, "\",\"level\":\"");
    } else if (!log_journal) {
        put_timestamp(&b);
        put(&b, " ");
    }
    put(&b, log_level_name(level));
    put(&b, json ? "\",\"msg\":\"" : " ");
    put_escaped(&b, msg, LOG_MSG_MAX, json);
    put(&b, json ? "\"" : "");
    for (size_t i = 0; i < n_fields; i++) {
        put(&b, json ? ",\"" : " ");
        put_escaped(&b, fields[i].key, LOG_FIELD_MAX, json);
        put(&b, json ? "\":" : "=");
        if (fields[i].str) {
            put(&b, json ? "\"" : "");
            put_escaped(&b, fields[i].str, LOG_FIELD_MAX, json);
            put(&b, json ? "\"" : "");
        } else {
            snprintf(num, sizeof(num), "%lld", (long long)fields[i].num);
            put(&b, num);
        }
    }
    put(&b, json ? "}\n" : "\n");
    write_all(b.data, b.len);
}

void log_msg(int level, const char *fmt, ...)
{
    char msg[LOG_MSG_MAX];
    va_list ap;

    if (!log_enabled(level))
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    log_fields(level, msg, NULL, 0);
}
