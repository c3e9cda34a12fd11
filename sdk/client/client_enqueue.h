/* What an enqueue keeps between calls, and one call run alone; private to
 * sdk/client. The buffers are made on first use and freed by
 * wharf_client_close, so an enqueue allocates nothing. */
#ifndef WHARF_CLIENT_ENQUEUE_H
#define WHARF_CLIENT_ENQUEUE_H

#include <stddef.h>

#include <wharf/client.h>

#include "client_enqueue_call.h"
#include "client_enqueue_types.h"

/* Tasks per pipelined round trip of wharf_enqueue_batch. */
#define ROUND_TASKS 500

/* What became of a call of a round. */
enum { CALL_PENDING = 0, CALL_SENT, CALL_AGAIN, CALL_ANSWERED };

/* One round of a batch: the calls sent, each covering members[first ..
 * first + count) (indices of tasks). */
typedef struct call_plan {
    size_t first, count;
    int state;
    int node; /* the node it was sent to */
} call_plan;

typedef struct enqueue_round {
    size_t members[ROUND_TASKS];
    call_plan calls[ROUND_TASKS];
    size_t n_members, n_calls;
    int nodes[ROUND_TASKS]; /* the nodes its calls went to, each once */
    int acks[ROUND_TASKS];  /* with min_replicas: what each one's WAIT
                               counted */
    size_t n_nodes;
} enqueue_round;

/* A client's buffers, kept between calls so an enqueue allocates
 * nothing. */
struct enqueue_buffers {
    enqueue_call call;
    enqueue_round rounds[2]; /* one in flight while the next is built */
    enqueue_types added;     /* the types this connection added */
};

/* c's buffers, made on first use; NULL with c->errstr set when out of
 * memory. */
struct enqueue_buffers *client_enqueue_buffers(wharf_client *c);

/* Frees c->enqueue_buffers; called by wharf_client_close. */
void client_enqueue_free(wharf_client *c);

/* Builds, runs and parses the call of count tasks (given by index), then
 * adds their types; the WAIT for min_replicas follows the call. */
wharf_client_status client_enqueue_alone(wharf_client *c, enqueue_call *call,
                                         const wharf_enqueue_opts *tasks,
                                         const size_t *index, size_t count,
                                         wharf_enqueue_reply *replies);

/* errstr for a task of type refused as unserved (strict). */
void client_enqueue_say_unserved(wharf_client *c, const char *type);

#endif /* WHARF_CLIENT_ENQUEUE_H */
