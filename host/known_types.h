/* The queue figures of types this host does not serve: every type in
 * <prefix>:types (enqueued or served by anyone) gets its gauges on
 * /metrics, so the shipped backlog alert also fires for a type whose tasks
 * wait for a host that never comes (a misspelt type, a host gone for
 * good). Read-only: pressure and backlog are published by the hosts that
 * serve a type (pressure.c). */
#ifndef WHARF_KNOWN_TYPES_H
#define WHARF_KNOWN_TYPES_H

#include <stddef.h>

#include "broker.h"
#include "metrics.h"

/* Most unserved types read per refresh (one scrape stays cheap). */
#define KNOWN_TYPES_MAX 1000

typedef struct known_types {
    char **names;           /* owned */
    queue_figures *figures; /* n; each type points into names */
    size_t n;
} known_types;

/* Reads the types set and, for each valid type name b does not serve, its
 * figures in O(1) commands (XLEN, XPENDING, ZCARD, ZCARD, EXISTS), all in
 * two round trips. Replaces k's contents. 0, or -1 on a connection error
 * (k is then as before; b->errstr says why). */
int known_types_refresh(broker *b, known_types *k);

/* Frees k's contents (k itself is the caller's). */
void known_types_free(known_types *k);

#endif /* WHARF_KNOWN_TYPES_H */
