/* Why a call into the core failed, as a kind beside its one-line message
 * (hiredis's err + errstr): callers decide by the kind, never by reading
 * the message. And what the core's return codes mean, once for every
 * module in sdk/core. */
#ifndef WHARF_ERROR_KIND_H
#define WHARF_ERROR_KIND_H

/* Return codes of the core's functions that return int:
 *    0  success; out-params are written.
 *   -1  failure, with the message (errstr or err) and, where the object
 *       has one, its kind set. Retrying may help (a node down, a
 *       failover under way, a broken connection).
 *   -2  failure that retrying cannot fix: the kind is ERROR_KIND_AUTH or
 *       ERROR_KIND_SETUP (only nodes_connect, sentinel_master and
 *       conn_connect, which passes it on). ERROR_KIND_TLS comes with -1:
 *       a daemon goes on trying (a certificate may be renewed, a port
 *       reconfigured), a command-line program stops with it.
 * A function that returns a pointer returns NULL for either, with the
 * same kind (where its object keeps one) and message. No other negative
 * value is returned. */

typedef enum error_kind {
    ERROR_KIND_NONE = 0,
    /* Redis cannot serve now: it cannot be reached, the connection broke
     * or timed out, no node serves the slot, or it answered LOADING,
     * BUSY, MASTERDOWN, TRYAGAIN, READONLY, CLUSTERDOWN, MOVED or ASK. */
    ERROR_KIND_UNAVAILABLE,
    /* Redis wants credentials we did not give, or refuses ours. */
    ERROR_KIND_AUTH,
    /* Redis is not what the address says: a cluster seed not in cluster
     * mode, a master no sentinel knows. */
    ERROR_KIND_SETUP,
    /* Redis is at maxmemory (an OOM error reply: nothing was written). */
    ERROR_KIND_FULL,
    /* Any other error reply, a reply the core cannot read, or a command
     * it cannot encode. */
    ERROR_KIND_REPLY,
    /* This process ran out of memory. The core reports it rather than
     * aborting, as libwharf-client is built on it and <wharf/client.h>
     * promises WHARF_CLIENT_ERROR for it; the host and the CLI abort
     * instead (xmalloc.h). */
    ERROR_KIND_NOMEM,
    /* The TLS handshake failed, or TLS spoke on one side only: a
     * certificate not trusted, expired or for another name, a client
     * certificate refused or missing, rediss:// to a plain port or
     * redis:// to a TLS one. */
    ERROR_KIND_TLS
} error_kind;

/* The one-line message beside a kind (nodes, pipeline): room for an
 * address, what was asked and Redis's own words. */
#define ERROR_TEXT_MAX 600

#endif /* WHARF_ERROR_KIND_H */
