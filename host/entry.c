/* Stream entries into tasks; see entry.h. A bad entry is never an error
 * of the worker: it is described, dead-lettered and the queue goes on. */
#include "entry.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wharf/client.h>

#include "client_ids.h"
#include "quote.h"

/* A field's text quoted in a bad entry's reason. */
#define ENTRY_SHOWN_MAX 64

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
    /* strtoll would skip leading spaces and take a '+': a field is the
     * plain decimal Redis and the producers write. */
    if (!(v->str[0] == '-' || (v->str[0] >= '0' && v->str[0] <= '9')))
        return false;
    errno = 0;
    n = strtoll(v->str, &end, 10);
    if (errno != 0 || end != v->str + v->len || n < min || n > max)
        return false;
    *out = n;
    return true;
}

/* The fields of a task entry, in the order a missing one is reported. */
enum { F_ID, F_TYPE, F_PAYLOAD, F_ATTEMPT, F_ENQUEUED_AT, F_TRACE, F_COUNT };

static const char *const field_names[F_COUNT] = {
    "id", "type", "payload", "attempt", "enqueued_at", "trace"};

/* Finds every known field of a [field, value, ...] array in one pass:
 * v[f] is the value of the first key named f, or NULL when there is no
 * such key or its value is not a string. */
static void fields_of(const redisReply *fields,
                      const redisReply *v[F_COUNT])
{
    bool seen[F_COUNT] = {false};

    for (int f = 0; f < F_COUNT; f++)
        v[f] = NULL;
    for (size_t i = 0; i + 1 < fields->elements; i += 2) {
        const redisReply *k = fields->element[i];
        if (k->type != REDIS_REPLY_STRING)
            continue;
        for (int f = 0; f < F_COUNT; f++) {
            if (seen[f] || k->str[0] != field_names[f][0] ||
                strcmp(k->str, field_names[f]) != 0)
                continue;
            seen[f] = true;
            if (fields->element[i + 1]->type == REDIS_REPLY_STRING)
                v[f] = fields->element[i + 1];
            break;
        }
    }
}

/* Gives e the id "entry-<entry id>", for an entry without a usable id. */
static void use_fallback_id(entry *e)
{
    snprintf(e->fallback_id, sizeof(e->fallback_id), "entry-%s", e->entry_id);
    e->task.id = e->fallback_id;
}

/* A field's text for a reason, as the one quoting rule shows it. */
static void quote(char *buf, size_t len, const redisReply *v)
{
    quote_bytes(v->str, v->len, buf, len);
}

/* Takes one field past the six task fields: a workflow child's parents,
 * or a per-task option. A malformed option makes e a bad task (the first
 * reason found is kept). */
static void extra_field(entry *e, const char *name, const redisReply *v,
                        const policy *pol)
{
    long long n = 0;
    char shown[ENTRY_SHOWN_MAX];
    const char *want = NULL;

    if (strcmp(name, "parents") == 0) {
        e->parents = v->str;
    } else if (strcmp(name, "timeout_ms") == 0) {
        if (!parse_int(v, 1, WHARF_TASK_TIMEOUT_MAX_MS, &n)) {
            want = "a time in ms from 1 to 30 days";
        } else {
            e->opt_timeout_ms = n;
            /* Only shorter than the type's: its lock, its keyed slot and
             * takeovers are sized by the type's timeout. */
            if (n < pol->timeout_ms)
                e->timeout_ms = n;
        }
    } else if (strcmp(name, "max_attempts") == 0) {
        if (!parse_int(v, 1, WHARF_TASK_MAX_ATTEMPTS_MAX, &n))
            want = "a number from 1 to 1000";
        else
            e->task.max_attempts = e->opt_max_attempts = (unsigned)n;
    } else if (strcmp(name, "expires_at") == 0) {
        if (!parse_int(v, 1, ENTRY_TIME_MAX_MS, &n))
            want = "a time in ms from 1 to the year 9999";
        else
            e->expires_at_ms = n;
    }
    if (want && !e->bad[0]) {
        quote(shown, sizeof(shown), v);
        snprintf(e->bad, sizeof(e->bad), "bad task: %s '%s' is not %s", name,
                 shown, want);
    }
}

void entry_parse(entry *e, const redisReply *r, const char *type,
                 const policy *pol)
{
    const redisReply *fields, *v[F_COUNT], *id, *t, *payload, *trace;
    long long attempt = 1, enqueued = 0;
    char shown[ENTRY_SHOWN_MAX];

    memset(e, 0, sizeof(*e));
    e->entry_id = r->element[0]->str;
    e->enqueued_at = "";
    e->task.type = type;
    e->task.trace = "";
    e->task.attempt = 1;
    e->task.max_attempts = pol->max_attempts;
    e->timeout_ms = pol->timeout_ms;

    fields = r->elements > 1 ? r->element[1] : NULL;
    if (!fields || fields->type != REDIS_REPLY_ARRAY) {
        use_fallback_id(e);
        e->deleted = true;
        return;
    }
    fields_of(fields, v);
    /* Only an entry with more than the six task fields can have one: a
     * task without workflows or options costs nothing here. */
    for (size_t i = 2 * F_COUNT; i + 1 < fields->elements; i += 2)
        if (fields->element[i]->type == REDIS_REPLY_STRING &&
            fields->element[i + 1]->type == REDIS_REPLY_STRING)
            extra_field(e, fields->element[i]->str, fields->element[i + 1],
                        pol);
    id = v[F_ID];
    if (id && config_valid_task_id(id->str, id->len))
        e->task.id = id->str;
    else
        use_fallback_id(e);
    /* Kept even for a bad entry, so its dead envelope still has them. */
    payload = v[F_PAYLOAD];
    if (payload) {
        e->task.payload = (const unsigned char *)payload->str;
        e->task.payload_len = payload->len;
    }
    trace = v[F_TRACE];
    if (trace && strlen(trace->str) == trace->len) {
        e->task.trace = trace->str;
        e->trace_len = trace->len;
    }
    if (v[F_ENQUEUED_AT])
        e->enqueued_at = v[F_ENQUEUED_AT]->str;
    for (int f = 0; f < F_COUNT; f++) {
        if (!v[f]) {
            snprintf(e->bad, sizeof(e->bad), "bad task: missing field '%s'",
                     field_names[f]);
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
    t = v[F_TYPE];
    if (t->len != strlen(type) || memcmp(t->str, type, t->len) != 0) {
        quote(shown, sizeof(shown), t);
        snprintf(e->bad, sizeof(e->bad),
                 "bad task: type field '%s' does not match its stream '%s'",
                 shown, type);
        return;
    }
    if (!parse_int(v[F_ATTEMPT], 1, 1000000, &attempt)) {
        quote(shown, sizeof(shown), v[F_ATTEMPT]);
        snprintf(e->bad, sizeof(e->bad),
                 "bad task: attempt '%s' is not a number from 1", shown);
        return;
    }
    e->task.attempt = (unsigned)attempt;
    /* Bounded so that every sum and product of times the host makes
     * (wait time, in us too) stays far from overflow. */
    if (!parse_int(v[F_ENQUEUED_AT], 0, ENTRY_TIME_MAX_MS, &enqueued)) {
        quote(shown, sizeof(shown), v[F_ENQUEUED_AT]);
        snprintf(e->bad, sizeof(e->bad),
                 "bad task: enqueued_at '%s' is not a time in ms from 0 to "
                 "%lld (year 9999)",
                 shown, (long long)ENTRY_TIME_MAX_MS);
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
