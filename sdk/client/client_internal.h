/* The inside of a wharf_client, shared by the client library's files in
 * sdk/client and by nothing else: the host and the CLI speak to Redis
 * through the core (sdk/core; the CLI's operator commands through
 * conn.h) and use the client only through <wharf/client.h>. Not
 * installed.
 *
 * The files are layered, each calling only those below it: client.c, the
 * connection and its errors, at the bottom; the operations above it
 * (client_status.c, client_result.c on it, client_cancel.c, and
 * client_enqueue*.c with their own private headers); client_open.c, a
 * client's open and close, at the top. */
#ifndef WHARF_CLIENT_INTERNAL_H
#define WHARF_CLIENT_INTERNAL_H

#include <stddef.h>

#include <hiredis/hiredis.h>
#include <openssl/evp.h>

#include <wharf/client.h>

#include "nodes.h"
#include "pipeline.h"
#include "protocol_version.h"
#include "redis_url.h"
#include "script.h"

struct wharf_client {
    nodes nodes;   /* the Redis nodes (nodes.h); found again after a failure */
    pipeline pipe; /* single commands, the CLI's pipelines */
    redis_url url;
    char *password; /* NULL: the URL's own; owned */
    char prefix[WHARF_PREFIX_MAX + 1];
    int strict;               /* wharf_client_set_strict */
    const script *scripts[2]; /* {&script_enqueue, NULL} (lua_scripts.h):
                                 loaded on each connection a node gets
                                 (nodes_set_scripts); status and cancel
                                 load on their first NOSCRIPT
                                 (pipeline.h) */
    int min_replicas;         /* wharf_client_require_replicas */
    int replicas_timeout_ms;
    struct enqueue_buffers *enqueue_buffers; /* client_enqueue.h's, made
                                                on first use; owned */
    EVP_MD *sha256;     /* fetched once: task ids hash every payload */
    EVP_MD_CTX *digest; /* reused for every hash */
    wharf_client_status connect_status; /* why client_connect last failed:
                                           UNAVAILABLE, AUTH, or BAD_INPUT
                                           (not a cluster node, a master
                                           no sentinel knows) */
    char errstr[512];
};

/* ---- client.c: the connection and its errors ---- */

/* Sets c->errstr (one line) from a printf-style format. */
void client_error(wharf_client *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Finds c's nodes again if they are not known (after a failure). 0, or
 * -1 with c->errstr and c->connect_status set when Redis cannot be
 * reached (UNAVAILABLE), refuses our credentials (AUTH) or is not what
 * the URL says (BAD_INPUT). */
int client_connect(wharf_client *c);

/* The live connection of the node serving key (connecting first if
 * needed); NULL with c->errstr and c->connect_status set. Owned by c. */
redisContext *client_redis_of(wharf_client *c, const char *key);

/* Drops every connection of c after a failure (the next use finds the
 * nodes again). */
void client_drop(wharf_client *c);

/* The status for reply, a reply of a command about `what` (for the
 * message): OK for any reply that is not an error; for NULL (the
 * connection failed: c->pipe.errstr says why, if anything) UNAVAILABLE;
 * for an error reply FULL when Redis is at maxmemory (OOM: a script or
 * command refused at its first write wrote nothing), AUTH when it wants
 * credentials (NOAUTH, WRONGPASS), UNAVAILABLE when it is loading, busy or
 * refusing writes, else ERROR. Sets c->errstr to one line unless OK. Does
 * not free reply. */
wharf_client_status
client_reply_status(wharf_client *c, const redisReply *reply, const char *what);

/* Checks a type and an id given to a call: OK, or BAD_INPUT with
 * c->errstr set. */
wharf_client_status client_check_names(wharf_client *c, const char *type,
                                       const char *id);

/* Writes "no host serves 'T'; served types: a, b" into buf (served.h),
 * connecting first if needed. On a Redis failure it names none. */
void client_unserved_message(wharf_client *c, const char *type, char *buf,
                             size_t len);

/* The message for a PROTOCOL answer: the hosts speak `host`. Sets
 * c->errstr and returns WHARF_CLIENT_PROTOCOL. */
wharf_client_status client_protocol_error(wharf_client *c, const char *type,
                                          const char *host);

/* ---- client_status.c, for client_result.c ---- */

/* Runs sdk/lua/status.lua for task id of type (with its result bytes when
 * with_result): the reply (caller frees), whose first element is the
 * state word; or NULL with *status saying why (BAD_INPUT, PROTOCOL,
 * UNAVAILABLE, AUTH, ERROR) and c->errstr set. */
redisReply *client_status_call(wharf_client *c, const char *type,
                               const char *id, int with_result,
                               wharf_client_status *status);

/* Fills *out from a reply of client_status_call. */
void client_status_parse(const redisReply *r, wharf_task_info *out);

/* The result bytes in a "done" reply made with_result, or NULL. */
const redisReply *client_status_result(const redisReply *r);

#endif /* WHARF_CLIENT_INTERNAL_H */
