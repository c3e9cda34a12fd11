/* Stream entries: turning one entry of an XREADGROUP reply into a
 * wharf_task, and saying precisely why an entry is a bad task. */
#ifndef WHARF_ENTRY_H
#define WHARF_ENTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>
#include <wharf/plugin.h>

#include "config.h"

#define ENTRY_REASON_LEN 256
/* The latest time in ms a task's time field may hold: the last
 * millisecond of the year 9999 (UTC). Anything later is a bad task. */
#define ENTRY_TIME_MAX_MS 253402300799999LL

typedef struct entry {
    const char *entry_id; /* the stream entry id, in the reply */
    wharf_task task;      /* points into the reply; id is always usable */
    size_t trace_len;
    const char *enqueued_at; /* the field's text, "" if missing */
    bool deleted;            /* pending, but its entry is gone: ack it */
    char bad[ENTRY_REASON_LEN]; /* "" for a good task, else why it is bad */
    char fallback_id[48];    /* task.id of an entry without a usable id */
    const char *parents; /* workflows: its "parents" field ("<type>:<id>,
                            ..."), or NULL: a child released by its
                            parents (wf_notify.lua) */
    /* Per-task options (enqueue's options, docs/protocol.md); 0 for none.
     * timeout_ms is already the one the run gets: the task's, cut to the
     * type's; task.max_attempts is the task's when it has one. */
    int64_t timeout_ms;
    int64_t expires_at_ms;     /* wall clock ms: no attempt begins after it */
    int64_t opt_timeout_ms;    /* as enqueued (a retry keeps them), or 0 */
    unsigned opt_max_attempts; /* as enqueued, or 0 */
} entry;

/* Parses r (an [entry-id, [field, value, ...]] reply) read from the stream
 * of `type`. Never fails: a malformed entry comes back with e->bad set (a
 * missing or malformed field, a type that does not match its stream, a
 * payload over max_payload), and a task id to dead-letter it under. The
 * entry points into r, which must outlive it. */
void entry_parse(entry *e, const redisReply *r, const char *type,
                 const policy *pol);

/* True if text (len bytes) is a W3C traceparent
 * "00-<32 hex>-<16 hex>-<2 hex>" with neither id all zero. */
bool entry_valid_trace(const char *text, size_t len);

#endif /* WHARF_ENTRY_H */
