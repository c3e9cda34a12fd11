/* Host presence: each live host says every second that it is there, and
 * which types it serves, in keys that expire unless refreshed
 * (docs/console.md, "Keys"): <prefix>:host:<name> (a hash of what it
 * is), <prefix>:hosts and <prefix>:{T}:hosts (zsets of names scored by
 * when each entry expires). `wharf stats` reads {T}:hosts to tell
 * whether a type is served; the console lists the hosts it reads back.
 * The module only builds the commands and reads the replies: the caller
 * owns the connection and runs each round trip within its own time. */
#ifndef WHARF_PRESENCE_H
#define WHARF_PRESENCE_H

#include <stddef.h>
#include <stdint.h>

#include "pipeline.h"

/* A host's presence lives this long unless refreshed (every second). */
#define PRESENCE_TTL_MS 5000
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

/* What one host learns of the others: nothing yet. NULL when out of
 * memory. */
presence *presence_create(void);

/* Accepts NULL. */
void presence_destroy(presence *pr);

/* Publishes self's presence and reads everyone's, in two round trips on
 * p (reset first, left holding the last round's replies): per served
 * type one ZADD, one ZREMRANGEBYSCORE, one PEXPIRE and one
 * ZRANGEBYSCORE of at most PRESENCE_HOSTS_MAX names; then one HGETALL
 * per live host (at most PRESENCE_HOSTS_MAX). What a round could not
 * read is kept from the refresh before. */
void presence_refresh(presence *pr, const presence_self *self, pipeline *p,
                      presence_run_fn run, void *arg);

/* Withdraws self's presence at once, in one round trip on p (best
 * effort: the keys expire anyway). */
void presence_withdraw(const presence_self *self, pipeline *p,
                       presence_run_fn run, void *arg);

/* The live hosts as a JSON array of objects ({"name":..., and each field
 * of its hash}), from the last refresh that read them; NULL before.
 * Owned by pr, valid until its next refresh. */
const char *presence_hosts_json(const presence *pr);

/* The names of the live hosts serving type as a JSON array of strings,
 * from the last refresh that read them; "[]" for a type not read. Owned
 * by pr, valid until its next refresh. */
const char *presence_served_json(const presence *pr, const char *type);

#endif /* WHARF_PRESENCE_H */
