/* <prefix>:types, every type enqueued or served: a producer adds each type
 * once per connection, with a command of its own after the enqueue (the set
 * is a key of no type's Redis Cluster slot, so the enqueue script, whose
 * keys all share the type's slot, cannot write it). Private to
 * sdk/client. */
#ifndef WHARF_CLIENT_ENQUEUE_TYPES_H
#define WHARF_CLIENT_ENQUEUE_TYPES_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include <wharf/client.h>

/* The types one connection has added to the set. */
typedef struct enqueue_types {
    char (*names)[WHARF_TYPE_MAX + 1];
    size_t n, cap;
    const redisContext *conn; /* the connection they were added on */
} enqueue_types;

/* An empty list, and freeing one. */
void client_enqueue_types_init(enqueue_types *added);
void client_enqueue_types_free(enqueue_types *added);

/* Adds to <prefix>:types, in one pipeline, the types of the tasks
 * tasks[index[0..count)] (index NULL: tasks[0..count)) that were enqueued
 * (reply OK) and that this connection has not added yet (added says
 * which): once per type per connection, and never for a type none of
 * whose tasks was added. Call with nothing in flight. OK, or why not
 * (c->errstr set). */
wharf_client_status
client_enqueue_add_types(wharf_client *c, enqueue_types *added,
                         const wharf_enqueue_opts *tasks, const size_t *index,
                         size_t count, const wharf_enqueue_reply *replies);

#endif /* WHARF_CLIENT_ENQUEUE_TYPES_H */
