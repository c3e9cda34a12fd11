/* Stream entries into tasks; see entry.h. A bad entry is never an error
 * of the worker: it is described, dead-lettered and the queue goes on. */
#include "entry.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_ids.h"

bool entry_valid_trace(const char *t, size_t len)
{
    /* The producer's rule (SDK), on a reply string that may hold a NUL. */
    return strlen(t) == len && client_valid_trace(t);
}

/* Parses a decimal integer in [min, max] from a reply string. */
static bool parse_int(const redisReply *v, long long min, long long max,
                      long long *out)
{
    char *end;
    long long n;

    if (!v || v->len == 0 || v->len > 20)
        return false;
    errno = 0;
    n = strtoll(v->str, &end, 10);
    if (errno != 0 || end != v->str + v->len || n < min || n > max)
        return false;
    *out = n;
    return true;
}

/* The value of `field` in a [field, value, ...] array, or NULL. */
static const redisReply *field(const redisReply *fields, const char *name)
{
    for (size_t i = 0; i + 1 < fields->elements; i += 2) {
        const redisReply *k = fields->element[i];
        if (k->type == REDIS_REPLY_STRING && strcmp(k->str, name) == 0) {
            const redisReply *v = fields->element[i + 1];
            return v->type == REDIS_REPLY_STRING ? v : NULL;
        }
    }
    return NULL;
}

/* Writes a printable, bounded copy of a field's text for a reason. */
static void quote(char *buf, size_t len, const redisReply *v)
{
    size_t n = 0;

    for (size_t i = 0; i < v->len && n + 4 < len; i++) {
        unsigned char c = (unsigned char)v->str[i];
        buf[n++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    if (n + 4 >= len && v->len > n) {
        memcpy(buf + n, "...", 3);
        n += 3;
    }
    buf[n] = '\0';
}

void entry_parse(entry *e, const redisReply *r, const char *type,
                 const policy *pol)
{
    static const char *const required[] = {"id",       "type",
                                           "payload",  "attempt",
                                           "enqueued_at", "trace"};
    const redisReply *fields, *id, *t, *payload, *trace;
    long long attempt = 1, enqueued = 0;
    char shown[64];

    memset(e, 0, sizeof(*e));
    e->entry_id = r->element[0]->str;
    e->enqueued_at = "";
    e->task.type = type;
    e->task.trace = "";
    e->task.attempt = 1;
    e->task.max_attempts = pol->max_attempts;
    snprintf(e->fallback_id, sizeof(e->fallback_id), "entry-%s", e->entry_id);
    e->task.id = e->fallback_id;

    fields = r->elements > 1 ? r->element[1] : NULL;
    if (!fields || fields->type != REDIS_REPLY_ARRAY) {
        e->deleted = true;
        return;
    }
    id = field(fields, "id");
    if (id && config_valid_task_id(id->str, id->len))
        e->task.id = id->str;
    /* Kept even for a bad entry, so its dead envelope still has them. */
    payload = field(fields, "payload");
    if (payload) {
        e->task.payload = (const unsigned char *)payload->str;
        e->task.payload_len = payload->len;
    }
    trace = field(fields, "trace");
    if (trace && strlen(trace->str) == trace->len) {
        e->task.trace = trace->str;
        e->trace_len = trace->len;
    }
    if (field(fields, "enqueued_at"))
        e->enqueued_at = field(fields, "enqueued_at")->str;
    for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
        if (!field(fields, required[i])) {
            snprintf(e->bad, sizeof(e->bad), "bad task: missing field '%s'",
                     required[i]);
            return;
        }
    }
    if (e->task.id == e->fallback_id) {
        quote(shown, sizeof(shown), id);
        snprintf(e->bad, sizeof(e->bad),
                 "bad task: id '%s' is not 1-200 printable bytes without "
                 "spaces", shown);
        return;
    }
    t = field(fields, "type");
    if (t->len != strlen(type) || memcmp(t->str, type, t->len) != 0) {
        quote(shown, sizeof(shown), t);
        snprintf(e->bad, sizeof(e->bad),
                 "bad task: type field '%s' does not match its stream '%s'",
                 shown, type);
        return;
    }
    if (!parse_int(field(fields, "attempt"), 1, 1000000, &attempt)) {
        quote(shown, sizeof(shown), field(fields, "attempt"));
        snprintf(e->bad, sizeof(e->bad),
                 "bad task: attempt '%s' is not a number from 1", shown);
        return;
    }
    e->task.attempt = (unsigned)attempt;
    if (!parse_int(field(fields, "enqueued_at"), 0, INT64_MAX, &enqueued)) {
        quote(shown, sizeof(shown), field(fields, "enqueued_at"));
        snprintf(e->bad, sizeof(e->bad),
                 "bad task: enqueued_at '%s' is not a time in ms", shown);
        return;
    }
    e->task.enqueued_at_ms = enqueued;
    if (!entry_valid_trace(trace->str, trace->len)) {
        quote(shown, sizeof(shown), trace);
        snprintf(e->bad, sizeof(e->bad),
                 "bad task: trace '%s' is not a W3C traceparent", shown);
        return;
    }
    if (payload->len > pol->max_payload) {
        snprintf(e->bad, sizeof(e->bad),
                 "bad task: payload of %zu bytes is over max_payload %" PRIu64,
                 payload->len, pol->max_payload);
        return;
    }
}
