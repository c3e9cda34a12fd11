/* Claims: how a worker takes entries from the streams of its types.
 *
 * On one Redis (redis://, unix://, Sentinel's master): one XREADGROUP
 * over every stream, blocking while all are empty.
 *
 * On a Redis Cluster no command reads streams of two hash slots, and a
 * connection blocked on one type's stream can read no other, so:
 *   1. a sweep: one XREADGROUP per type without BLOCK, pipelined, every
 *      node at once; if anything came (or a type is re-reading its own
 *      pending entries), that is the batch;
 *   2. else a wait: each type blocks (XREADGROUP BLOCK) on a connection
 *      of its own to the node that serves it, its waiter; once the first
 *      answers, the others are released with CLIENT UNBLOCK, sent over
 *      each node's shared connection, and read at once.
 * Either way every entry claimed is in hand before any plugin runs, so
 * the worker publishes all of them in its slot and the supervisor renews
 * them all (run.h); no reply is left to arrive while a task runs. A type
 * on a slow or quiet shard never holds up the others: waits are
 * parallel, and a sweep costs the slowest node's round trip.
 *
 * Types of unlike priority ([type.NAME] priority, [host] order) are
 * swept first, without BLOCK: strict reads one priority level a sweep,
 * highest first, until one has entries; weighted reads every type in one
 * sweep, each with a COUNT in proportion to its priority. Only if that
 * finds nothing comes the claim above, over every type. A claim reply
 * lists its types highest priority first. Types of one priority (the
 * default) are claimed exactly as above. */
#ifndef WHARF_CLAIM_H
#define WHARF_CLAIM_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include "broker.h"

/* State for n queues (waiters, argument arrays). NULL when out of
 * memory. */
claim_state *claim_create(size_t n);

/* Closes the waiters (after a lost connection, or at the end). Accepts
 * NULL. */
void claim_drop(claim_state *cs, size_t n);

/* claim_drop, and frees. Accepts NULL. */
void claim_destroy(claim_state *cs, size_t n);

/* broker_claim's work (broker.h): the claim reply, [[stream, entries],
 * ...], caller frees; NULL on a connection error (b->errstr set). */
redisReply *claim_next(broker *b, unsigned count, int block_ms);

#endif /* WHARF_CLAIM_H */
