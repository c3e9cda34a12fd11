/* The lease keeper: a thread of the supervisor with a Redis connection of
 * its own. It renews the leases and locks of every worker's published
 * batch, enforces the runs' deadlines and keeps the host's instance name,
 * and shares fate with nothing else the supervisor does: the console,
 * HTTP, reloads, cancel polling, the queue figures and the supervisor's
 * own Redis commands cannot hold a renewal past a lock's TTL. host/run.h
 * says which thread owns which key.
 *
 * The supervisor tells the keeper which worker process owns which slot
 * (lease_keeper_attach / _detach); from then on the keeper alone asks a
 * run to end and kills a worker. Every function here is called by the
 * supervisor's thread. */
#ifndef WHARF_LEASE_H
#define WHARF_LEASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "metrics.h"
#include "slots.h"

typedef struct lease_keeper lease_keeper;

/* What the keeper did to a worker that is gone. Which runs it asked to
 * end, and why, the slot's asks say (slots.h). */
typedef struct lease_end {
    bool killed; /* SIGKILLed: a deadline, an ignored cancel, or
                    init_timeout */
} lease_end;

/* Starts the keeper for n_workers slots, serving the n_types types of
 * cfg with their policies, renewing as consumer-less calls (each slot
 * names its worker's consumer at attach) and holding instance_key with
 * instance_value. Everything passed must outlive the keeper or the next
 * lease_keeper_configure. The keeper, or NULL with err set. */
lease_keeper *lease_keeper_start(const config *cfg, const char *const *types,
                                 const policy *const *policies, size_t n_types,
                                 size_t n_workers, const char *consumer,
                                 const char *instance_key,
                                 const char *instance_value, metrics *m,
                                 char *err, size_t errlen);

/* Stops the thread, closes its connection and frees k. Accepts NULL. */
void lease_keeper_stop(lease_keeper *k);

/* A reload: the keeper serves these from its next pass on. Returns once
 * it does, so the caller may then free what it passed before. */
void lease_keeper_configure(lease_keeper *k, const config *cfg,
                            const char *const *types,
                            const policy *const *policies, size_t n_types);

/* Worker pid now owns slot sl of index (its consumer name lives as long
 * as the keeper); forked at forked_ms. */
void lease_keeper_attach(lease_keeper *k, size_t index, pid_t pid, slot *sl,
                         const char *consumer, int64_t forked_ms);

/* The worker of index is gone (reaped): the keeper forgets it and says
 * what it did to it in *end. After this the caller may unmap its slot. */
void lease_keeper_detach(lease_keeper *k, size_t index, lease_end *end);

/* A wharf cancel of the run under way in entry `at` of index's slot:
 * asks it to end as a timeout would, and kills the worker if it is still
 * in that run RUN_KILL_GRACE_MS later. False if that run was already
 * asked to end (left to that request). */
bool lease_keeper_cancel(lease_keeper *k, size_t index, uint32_t at,
                         uint32_t run);

/* True if the keeper's worker of index was asked to stop because a lease
 * of its batch was lost (so its clean exit is a replacement). */
bool lease_keeper_retired(lease_keeper *k, size_t index);

/* True once another host took the instance name: the host must stop. */
bool lease_keeper_instance_lost(lease_keeper *k);

/* True while the keeper's connection is up. */
bool lease_keeper_connected(lease_keeper *k);

#endif /* WHARF_LEASE_H */
