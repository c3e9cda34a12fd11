/* Asking Redis Sentinel where the master is: each sentinel of a
 * redis+sentinel:// address in turn, until one names it. Used by
 * nodes_connect, which then checks the ROLE of what it reached. */
#ifndef WHARF_SENTINEL_H
#define WHARF_SENTINEL_H

#include <stddef.h>

#include "redis_url.h"

/* Writes into host (of hostlen bytes) and *port the address of the master
 * url->master that the first answering sentinel of url names. 0; -1 when
 * no sentinel answers or the ones that do know the master but have no
 * address for it yet; -2 when every sentinel that answers knows no such
 * master (a configuration error). err says why in one line. */
int sentinel_master(const redis_url *url, int timeout_ms, char *host,
                    size_t hostlen, int *port, char *err, size_t errlen);

#endif /* WHARF_SENTINEL_H */
