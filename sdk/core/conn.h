/* A connection to one wharf deployment for a program that speaks to
 * Redis itself rather than through libwharf-client: the CLI's operator
 * commands (stats, dead, locks, queue drop). Its nodes (nodes.h), a
 * pipeline over them, and the last failure as a kind and one line. The
 * client library keeps the same pieces in its wharf_client. */
#ifndef WHARF_CONN_H
#define WHARF_CONN_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include "error_kind.h"
#include "nodes.h"
#include "pipeline.h"
#include "redis_url.h"

/* Connect and I/O timeout of the client's and the CLI's connections. */
#define CONN_TIMEOUT_MS 5000

typedef struct conn {
    redis_url url;
    char *password; /* NULL: the URL's own; owned */
    nodes nodes;    /* found again after a failure (conn_drop) */
    pipeline pipe;  /* single commands and pipelines */
    error_kind err; /* what the last failure was */
    char errstr[512];
} conn;

/* A conn for url and password (copied; NULL: the URL's own) with the
 * connect and I/O timeout timeout_ms. Connects nothing. NULL when url
 * does not parse ("bad Redis URL '...': why" in err, *kind SETUP) or out
 * of memory (NOMEM). Free with conn_close. */
conn *conn_open(const char *url, const char *password, int timeout_ms,
                error_kind *kind, char *err, size_t errlen);

/* Finds the nodes if they are not known (after a failure): 0, -1 or -2
 * (error_kind.h) with cn->err and cn->errstr set. */
int conn_connect(conn *cn);

/* The live connection of the node serving key (connecting first if
 * needed); NULL with cn->err (AUTH, SETUP, UNAVAILABLE, REPLY, NOMEM) and
 * cn->errstr set, after dropping every connection. Owned by cn. */
redisContext *conn_redis_of(conn *cn, const char *key);

/* Records why a command on redis (one of cn's) got no reply, saved_errno
 * being errno right after it, for conn_reply_error to say:
 * "Redis did not answer in 5 s" for a Redis that is paused or stuck. */
void conn_no_reply(conn *cn, const redisContext *redis, int saved_errno);

/* What reply, the answer to a command about `what`, means, as
 * redis_url_reply_error says (NULL: none came; the pipeline's message or
 * conn_no_reply's says why). ERROR_KIND_NONE, or the kind with cn->err
 * and cn->errstr set. Does not free reply. */
error_kind conn_reply_error(conn *cn, const redisReply *reply,
                            const char *what);

/* Drops every connection of cn after a failure (the next use finds the
 * nodes again) and resets the pipeline. */
void conn_drop(conn *cn);

/* Frees cn, its connections and the copy of the password. Accepts NULL. */
void conn_close(conn *cn);

#endif /* WHARF_CONN_H */
