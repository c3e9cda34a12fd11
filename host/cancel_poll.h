/* Cancel requests for running tasks. `wharf cancel` of a task that a
 * worker holds leaves cancel:<id> naming its stream entry (sdk/lua/
 * cancel.lua); the host whose worker runs it finds out here, from its own
 * supervisor, however far the producer is, since the request travels
 * through Redis. */
#ifndef WHARF_CANCEL_POLL_H
#define WHARF_CANCEL_POLL_H

#include <stdbool.h>
#include <stddef.h>

#include "broker.h"

/* How often the supervisor looks for cancel requests of running tasks. */
#define CANCEL_POLL_EVERY_MS 250

/* For n running tasks (types[i], ids[i], their stream entry_ids[i]), sets
 * cancelled[i] when cancel:<id> names that entry: one MGET per type (its
 * keys share the type's hash tag), all in one pipelined round trip, so a
 * worker with hundreds of threads costs Redis a command per type. 0, or -1 on a connection error (b->errstr says
 * why; cancelled is then untouched). */
int cancel_poll(broker *b, const char *const *types, const char *const *ids,
                const char *const *entry_ids, size_t n, bool *cancelled);

#endif /* WHARF_CANCEL_POLL_H */
