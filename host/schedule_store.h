/* The last tick of each schedule in Redis (docs/protocol.md, the key
 * P:{T}:schedules): a sorted set per type, one member per schedule of
 * that type, scored by the time (seconds since the epoch) of the last
 * tick fired. In the type's hash tag, so on a Redis Cluster it lives
 * where the type's tasks are enqueued; raised only (ZADD GT), so a host
 * that fires late never moves it back. Read and written over a conn
 * (conn.h) by wharfd's timer and `wharf schedules`. */
#ifndef WHARF_SCHEDULE_STORE_H
#define WHARF_SCHEDULE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "conn.h"

/* The last tick of the schedule name of type into *out (seconds), or -1
 * when none was ever fired. 0, or -1 with cn->err and cn->errstr set
 * (the connection dropped). */
int schedule_store_read(conn *cn, const char *prefix, const char *type,
                        const char *name, int64_t *out);

/* Records tick as the last of schedule name of type, unless a later one
 * is recorded already. 0, or -1 as schedule_store_read. */
int schedule_store_mark(conn *cn, const char *prefix, const char *type,
                        const char *name, int64_t tick);

#endif /* WHARF_SCHEDULE_STORE_H */
