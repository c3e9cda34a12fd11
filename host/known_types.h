/* The queue figures of types this host does not serve: every type in
 * <prefix>:types (enqueued or served by anyone) gets its gauges on
 * /metrics, so the shipped backlog alert also fires for a type whose tasks
 * wait for a host that never comes (a misspelt type, a host gone for
 * good). Read-only: pressure and backlog are published by the hosts that
 * serve a type (pressure.c). The commands that read a type's figures
 * serve `wharf stats` too (host/cli/cmd_stats.c). */
#ifndef WHARF_KNOWN_TYPES_H
#define WHARF_KNOWN_TYPES_H

#include <stddef.h>

#include "broker.h"
#include "metrics.h"

/* Most unserved types read per refresh (one scrape stays cheap). */
#define KNOWN_TYPES_MAX 1000

typedef struct known_types {
    char **names; /* owned; the figures' type names point here */
    size_t n;
} known_types;

/* The commands that read one type's figures, in the order
 * known_types_add_queries sends them. */
enum {
    KNOWN_XLEN,
    KNOWN_PENDING,
    KNOWN_DELAYED,
    KNOWN_DEAD,
    KNOWN_PRESSURE,
    KNOWN_PAUSED,
    KNOWN_SLOTS,
    KNOWN_COMMANDS
};

/* Adds to p the KNOWN_COMMANDS commands (XLEN, XPENDING, ZCARD, ZCARD,
 * EXISTS, PTTL, ZCARD) that read the figures of type under prefix, each to the node
 * of its key. 0, or -1 when out of memory. */
int known_types_add_queries(pipeline *p, const char *prefix, const char *type);

/* Stores the reply r of command q into f. 0, or -1 for a reply of
 * another shape (an error reply among them): f is then as it was. */
int known_types_take(int q, const redisReply *r, queue_figures *f);

/* Once every reply of a type is in f: ready leaves out the running
 * entries (those pending are in the stream too), never below 0. */
void known_types_settle(queue_figures *f);

/* Reads the types set and, for each valid type name b does not serve (up
 * to KNOWN_TYPES_MAX), its figures, all in two round trips, into out
 * (KNOWN_TYPES_MAX entries); k names them, and says how many. A reply of
 * another shape (such as NOGROUP) counts as 0. 0; -1 on a connection
 * error (b->errstr says why); -2 when out of memory. On an error, k and
 * out are as before. */
int known_types_refresh(broker *b, known_types *k, queue_figures *out);

/* Frees k's contents (k itself is the caller's). */
void known_types_free(known_types *k);

#endif /* WHARF_KNOWN_TYPES_H */
