/* The Redis nodes one process speaks to, and which of them serves a key.
 * A redis:// or unix:// address is one node serving every slot; a
 * redis+sentinel:// address is the one node the sentinels name as the
 * master (its ROLE checked); a redis+cluster:// address is the primaries
 * of a Redis Cluster, with the slot map read from CLUSTER SHARDS (CLUSTER
 * SLOTS before Redis 7) and patched by each MOVED. A connection to a node
 * is made at its first use. hiredis 0.14 knows nothing of clusters: this
 * and pipeline.h are all of wharf's cluster client. Shared by the host,
 * the CLI and the client library. */
#ifndef WHARF_NODES_H
#define WHARF_NODES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "error_kind.h"
#include "redis_url.h"
#include "script.h"

#define NODES_SLOTS 16384
/* In the slot map: no node serves the slot. */
#define NODES_NONE 0xffff
/* A node's name: "host:port" (ENDPOINT_TEXT_MAX) or a socket path. */
#define NODES_NAME_MAX 300

typedef struct redis_node {
    char host[ENDPOINT_HOST_MAX];
    int port;
    char name[NODES_NAME_MAX]; /* "host:port", or the socket path: for messages
                                */
    redisContext *redis;       /* NULL until used, or after it broke */
    bool sent;                 /* pipeline.c: commands went to it this run */
    bool unwaited;             /* pipeline.c: it wrote since its last WAIT */
    int acks; /* pipeline.c: what its last WAIT counted, or -1 */
} redis_node;

typedef struct nodes {
    redis_url url;
    const char *password; /* borrowed; NULL: the URL's own */
    int timeout_ms;
    bool cluster;     /* url is redis+cluster:// */
    redis_node *list; /* known nodes; an index stays valid until
                   nodes_disconnect */
    size_t n, cap;
    uint16_t slot_node[NODES_SLOTS]; /* index into list, or NODES_NONE */
    const script *const *scripts;    /* loaded on every new connection */
    char suspect[NODES_NAME_MAX]; /* Sentinel: the name of a master found moved
                          (nodes_master_moved), refused by nodes_connect
                          while a replica still says it is a master; "" */
    error_kind err;               /* what the last failure was (error_kind.h) */
    char errstr[ERROR_TEXT_MAX];  /* and what it was, in one line */
} nodes;

/* Prepares ns for url (copied) and password (borrowed, NULL for the
 * URL's own); connects nothing. */
void nodes_init(nodes *ns, const redis_url *url, const char *password,
                int timeout_ms);

/* Scripts (NULL-terminated; static storage) to SCRIPT LOAD on each new
 * connection, so a pipeline of EVALSHA does not come back as NOSCRIPT. */
void nodes_set_scripts(nodes *ns, const script *const *scripts);

/* Finds the nodes: the one node, the master the sentinels name (and
 * checks its ROLE), or the cluster's slot map from the first seed that
 * answers; connects to the node found first. 0; -1 when nothing answers
 * (for a list of seeds or sentinels, errstr says every one was tried),
 * or the master is a replica (a failover under way: try again later), or
 * it is the master nodes_master_moved found moved and one of its
 * replicas still says it is a master (the sentinels have not caught up
 * with a switchover yet);
 * -2 when retrying cannot help: Redis refuses our credentials (ns->err
 * is ERROR_KIND_AUTH), a seed is not in cluster mode or no sentinel knows
 * the master (ERROR_KIND_SETUP). ns->err says what failed (for -1:
 * UNAVAILABLE, REPLY for a slot map it cannot read, NOMEM), ns->errstr
 * says why in one line. */
int nodes_connect(nodes *ns);

/* True after a nodes_connect that succeeded, until nodes_disconnect. */
bool nodes_up(const nodes *ns);

/* Closes every connection and forgets the nodes (the next nodes_connect
 * finds them again: a failover may have moved the master). */
void nodes_disconnect(nodes *ns);

/* nodes_disconnect, and frees what ns holds; ns may be reused after
 * nodes_init. */
void nodes_free(nodes *ns);

/* The index of the node serving slot, or -1 when none does (the cluster
 * lost it) or ns is not up. */
int nodes_of_slot(const nodes *ns, unsigned slot);

/* The index of the node serving key (its slot: command_key_slot). */
int nodes_of_key(const nodes *ns, const char *key, size_t len);

/* The live connection of node index, made now (AUTH, SELECT, the
 * scripts) if it has none. NULL with ns->err (AUTH, UNAVAILABLE, REPLY,
 * NOMEM) and ns->errstr set when it cannot be made. Owned by ns. */
redisContext *nodes_context(nodes *ns, int index);

/* A new connection to node index (AUTH and SELECT done, no scripts)
 * that ns does not keep: for a blocking read that must not hold up the
 * node's shared connection. Caller frees; NULL with ns->err and
 * ns->errstr set, as nodes_context. */
redisContext *nodes_open(nodes *ns, int index);

/* Closes the connection of node index after it failed (the node stays
 * known; the next nodes_context connects again). */
void nodes_drop(nodes *ns, int index);

/* If r is a -MOVED or -ASK redirection: sets *index to the node it names
 * (added if new), *ask to whether it was ASK (the command must follow an
 * ASKING there), and for MOVED points the slot at that node; returns 1.
 * Returns 0 for any other reply, -1 (ns->err and ns->errstr set) for a
 * redirection that cannot be read. */
int nodes_redirected(nodes *ns, const redisReply *r, int *index, bool *ask);

/* After a WAIT on node index that fewer replicas than asked acknowledged:
 * on a Sentinel deployment, 1 when the master moved under us: the node
 * says it is no longer a master, a sentinel names another, or a replica
 * the sentinels list says it is a master (a switchover: Sentinel
 * promotes the replica at once and demotes the old master only seconds
 * later, and until then the old master takes writes that its resync
 * throws away). ns->errstr says which, and ns->suspect remembers the
 * node, so nodes_connect does not go back to it while the switch is
 * under way. 0 otherwise (replicas slow or gone, but this is the master),
 * and always on other deployments. Asks the sentinels and the replicas
 * on connections of its own, each with a timeout of at most 1 s. */
int nodes_master_moved(nodes *ns, int index);

/* "host:port" of node index, or "" when there is no such node. */
const char *nodes_name(const nodes *ns, int index);

/* The name of the node serving key, or "" when none does. */
const char *nodes_name_of_key(const nodes *ns, const char *key);

#endif /* WHARF_NODES_H */
