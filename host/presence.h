/* Host presence: each live host says every second that it is there, and
 * which types it serves, in keys that expire unless refreshed
 * (docs/console.md, "Keys"): <prefix>:host:<name> (a hash of what it
 * is), <prefix>:hosts and <prefix>:{T}:hosts (zsets of names scored by
 * when each entry expires). The supervisor publishes its host's
 * (supervisor_instance.c), console or not; `wharf stats` reads
 * {T}:hosts to tell whether a type is served; the console reads back
 * the hosts it lists. The module only builds the commands and reads the
 * replies: the caller owns the connection and runs each round trip
 * within its own time. */
#ifndef WHARF_PRESENCE_H
#define WHARF_PRESENCE_H

#include <stddef.h>
#include <stdint.h>

#include "pipeline.h"

/* A host's presence lives this long unless refreshed, which it is this
 * often. */
#define PRESENCE_TTL_MS 5000
#define PRESENCE_EVERY_MS 1000
/* Hosts read back per type and in all. */
#define PRESENCE_HOSTS_MAX 32

/* What this host says of itself; borrowed for the length of a call. */
typedef struct presence_self {
    const char *prefix;       /* the manifest's key prefix */
    const char *name;         /* "<hostname>:<instance>" */
    const char *const *types; /* served, n_types of them */
    size_t n_types;
    size_t workers;     /* worker processes */
    unsigned busy;      /* of them running a task */
    int64_t started_ms; /* wall clock */
    int64_t now_ms;     /* wall clock: when it is said */
} presence_self;

/* Runs every command added to p since its last reset, each wait within
 * what the caller allows: 0, or -1 when the replies are not to be read. */
typedef int (*presence_run_fn)(void *arg, pipeline *p);

typedef struct presence presence;

/* Publishes self's presence in one round trip on p (reset first, and
 * after): its hash, its entry in <prefix>:hosts and in each served
 * type's {T}:hosts (one HSET, then per key a ZADD, a ZREMRANGEBYSCORE of
 * the expired entries, and a PEXPIRE). 0, or -1 when run failed. */
int presence_publish(const presence_self *self, pipeline *p,
                     presence_run_fn run, void *arg);

/* What one host learns of the others: nothing yet. */
presence *presence_create(void);

/* Accepts NULL. */
void presence_destroy(presence *pr);

/* Reads everyone's presence, in two round trips on p (reset first, left
 * holding the last round's replies): one ZRANGEBYSCORE of at most
 * PRESENCE_HOSTS_MAX live names of <prefix>:hosts and of each type of
 * self (only its prefix, types and now_ms are read); then one HGETALL
 * per live host. What a round could not read is kept from the read
 * before. */
void presence_read(presence *pr, const presence_self *self, pipeline *p,
                   presence_run_fn run, void *arg);

/* Withdraws self's presence at once, in one round trip on p (best
 * effort: the keys expire anyway). */
void presence_withdraw(const presence_self *self, pipeline *p,
                       presence_run_fn run, void *arg);

/* The live hosts as a JSON array of objects ({"name":..., and each field
 * of its hash}), from the last read that got them; NULL before. Owned
 * by pr, valid until its next read. */
const char *presence_hosts_json(const presence *pr);

/* The names of the live hosts serving type as a JSON array of strings,
 * from the last read that got them; "[]" for a type not read. Owned by
 * pr, valid until its next read. */
const char *presence_served_json(const presence *pr, const char *type);

#endif /* WHARF_PRESENCE_H */
