/* Asking Redis Sentinel where the master is: each sentinel of a
 * redis+sentinel:// address in turn, until one names it. Used by
 * nodes_connect, which then checks the ROLE of what it reached, and by
 * nodes_master_moved, which after a WAIT that came back short asks every
 * sentinel whether the master moved and which replicas it has. */
#ifndef WHARF_SENTINEL_H
#define WHARF_SENTINEL_H

#include <stdbool.h>
#include <stddef.h>

#include <hiredis/hiredis.h>

#include "endpoint.h"
#include "error_kind.h"
#include "redis_url.h"

/* Writes into host (of hostlen bytes) and *port the address of the master
 * url->master that the first answering sentinel of url names. 0; -1 when
 * no sentinel answers ("no sentinel answered (tried N): ...", the last
 * one's reason after it) or the ones that do know the master but have no
 * address for it yet (*kind ERROR_KIND_UNAVAILABLE); -2 when every
 * sentinel that answers knows no such master (a configuration error:
 * ERROR_KIND_SETUP) or when every sentinel that answers refuses
 * url->sentinel_user / sentinel_password, or wants one we did not give
 * (ERROR_KIND_AUTH). err says why in one line, the address list first and
 * never a password. kind may be NULL; it is written only on failure. */
int sentinel_master(const redis_url *url, int timeout_ms, char *host,
                    size_t hostlen, int *port, error_kind *kind, char *err,
                    size_t errlen);

/* A connection to sentinel s of url (over TLS when url says), with
 * url->sentinel_password (and sentinel_user) sent as AUTH when given:
 * NULL with why in err, *refused (may be NULL) true when the sentinel
 * refused those credentials. Free with tls_free. */
redisContext *sentinel_open(const redis_url *url, const redis_seed *s,
                            int timeout_ms, bool *refused, char *err,
                            size_t errlen);

/* A replica as a sentinel lists it. */
typedef struct sentinel_replica {
    char host[ENDPOINT_HOST_MAX];
    int port;
} sentinel_replica;

/* The nodes that may have taken over from the master host:port, for
 * nodes_master_moved to ask: every address a sentinel of url names as
 * master url->master other than host:port, then the replicas the first
 * sentinel that lists any lists, less those it holds down or
 * disconnected; each once, at most max. A sentinel that does not answer
 * is passed over. Their number. */
size_t sentinel_candidates(const redis_url *url, int timeout_ms,
                           const char *host, int port, sentinel_replica *out,
                           size_t max);

#endif /* WHARF_SENTINEL_H */
