/* workflow: the host's part of workflows (docs/protocol.md, "Workflows"):
 * draining a type's outbox into the slots of its dependents (held
 * children, groups), enqueueing a group's callback once every member has
 * ended, and the periodic sweep that re-drives what a dead host left. */
#ifndef WHARF_WORKFLOW_H
#define WHARF_WORKFLOW_H

#include <stdint.h>

#include "broker.h"

/* How often each host sweeps (outboxes of its types, fired groups). */
#define WORKFLOW_SWEEP_EVERY_MS 2000
/* An outbox entry older than this is the sweep's: its finisher had time
 * to drain it and did not (it died). */
#define WORKFLOW_SWEEP_AGE_MS 2000

/* Delivers the entries of type's outbox (all of them, or with max_id
 * those up to that stream id) to their dependents and deletes each one
 * once all its dependents have it. Every delivery is idempotent, so an
 * entry delivered twice (a drain that died before its XDEL, two hosts at
 * once) counts once. The number of entries drained, or -1 with
 * b->errstr set (Redis failed: what is left waits for the sweep). */
int workflow_drain(broker *b, const char *type, const char *max_id);

/* What the parents of the released child id of type ended with: the
 * HGETALL reply of its parent_results:<id> (caller frees), or NULL (Redis
 * failed: the plugin then sees no parent results). */
struct redisReply *workflow_parent_results(broker *b, const char *type,
                                           const char *id);

/* The sweep, when WORKFLOW_SWEEP_EVERY_MS have passed since the last:
 * drains the old entries of each served type's outbox and enqueues the
 * callback of every group that fired without a confirmed callback
 * (<prefix>:groups). Errors are logged; the next sweep tries again. */
void workflow_sweep_tick(broker *b, int64_t now_ms);

#endif /* WHARF_WORKFLOW_H */
