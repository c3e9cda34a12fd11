/* Which types some host serves (its policy is published): the one line
 * the client library and the CLI say about a task of a type nobody
 * serves. */
#ifndef WHARF_SERVED_H
#define WHARF_SERVED_H

#include <stdbool.h>
#include <stddef.h>

#include "pipeline.h"

/* Writes "no host serves 'T'; served types: a, b" into buf: the types of
 * <prefix>:types whose policy some host published, sorted (one SMEMBERS,
 * then one pipelined EXISTS each, over p, whose nodes are up when
 * connected is true). When Redis fails, or is not connected, it names
 * none. Leaves p reset. */
void served_message(pipeline *p, bool connected, const char *prefix,
                    const char *type, char *buf, size_t len);

#endif /* WHARF_SERVED_H */
