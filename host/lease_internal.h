/* What the lease keeper's files share (lease.c and its lease_*.c, one
 * job each): the keeper's state and the calls each file makes of one
 * below it. Private to them. From the top: lease.c (the supervisor's
 * side: start, stop, attach, detach, cancel) starts the two threads,
 * lease_clock.c (deadlines) and lease_redis.c (renewals, the instance
 * name, a reload's manifest); both use lease_locks.c (what is known of
 * each worker's locks, under the mutex) and lease_sync.c (the fork gate,
 * a thread's start, its naps). lease.c says which thread owns what. */
#ifndef WHARF_LEASE_INTERNAL_H
#define WHARF_LEASE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "broker.h"
#include "config.h"
#include "lease.h"
#include "metrics.h"
#include "slots.h"

#define KEEPER_TICK_MS 50
/* The margin shown in /metrics is the least seen over this window (two
 * halves, so it neither forgets a dip at once nor keeps it forever). */
#define MARGIN_HALF_WINDOW_MS 30000
/* A worker as the supervisor attached it, and what is known of the
 * locks of its batch; under the mutex. */
typedef struct keeper_worker {
    unsigned gen; /* counts attaches: tells a new worker from the last */
    pid_t pid;    /* 0: none */
    slot *sl;
    const char *consumer;
    int64_t forked_ms;
    bool retired; /* asked to stop: a lease of its batch was lost */
    lease_end end;
    unsigned leases_gen; /* the attach the arrays below follow */
    size_t cap;
    char (*tokens)[SLOT_TOKEN_MAX]; /* the lock each index is known by */
    int64_t *confirmed_ms;          /* when a renewal that kept it was sent */
    int64_t *renewed_ms; /* this pass's renewal kept it, sent then, but is
                            not confirmed until the pass's WAIT; or 0 */
    bool *lost;                     /* reported lost already */
    int64_t *asked_ms;   /* a request to end run asked_run of the entry
                            was sent then, or 0 */
    uint32_t *asked_run;
} keeper_worker;

/* A thread's own copy of a worker's slot. */
typedef struct copy {
    unsigned gen; /* the attach it was made of */
    bool have;    /* a consistent copy of this pass */
    const char *consumer;
    slot *snap;
    size_t room;
} copy;

/* What the clock thread knows of a served type; under the mutex. */
typedef struct lease_type {
    char type[SLOT_TYPE_MAX];
    int64_t shortest_ms; /* the shorter of lock_ttl, visibility_timeout */
    int ti;              /* metrics index, or -1 */
} lease_type;

/* The least margin of a type over the window (Redis thread). */
typedef struct margin {
    int64_t now_min, last_min; /* -1: none in that half */
} margin;

struct lease_keeper {
    pthread_t thread, clock_thread;
    bool started, clock_started;
    bool counted; /* in keepers_running */
    pthread_mutex_t lock;
    pthread_cond_t wake;    /* a stop or a reload for the thread */
    pthread_cond_t applied; /* a reload taken or a thread started */
    int threads_in;         /* threads past their start, under the mutex */
    atomic_bool stop;
    atomic_bool instance_lost;
    atomic_bool connected;

    /* Under the mutex. */
    keeper_worker *workers;
    size_t n_workers;
    lease_type *types;
    size_t n_types;
    int64_t init_timeout_ms;
    bool pending; /* next_* wait to be taken */
    const config *next_cfg;
    const char *const *next_types;
    const policy *const *next_policies;
    size_t next_n;

    /* The clock thread's own. */
    copy *clock_copies;

    /* The Redis thread's own. */
    broker b;
    bool b_ready;
    copy *copies;
    margin *margins; /* one per broker queue */
    int64_t margin_half_ms;
    int64_t every_ms; /* renew period */
    int64_t next_renew_ms, next_heartbeat_ms, reconnect_at_ms;
    int64_t retry_delay_ms;
    bool down_logged;
    char consumer[300];
    const char *instance_key, *instance_value;
    metrics *m;
    slot *fresh; /* a copy made when a renewal's answer comes */
    size_t fresh_room;
    /* Renew call arguments, grown as needed. */
    const char **entry_ids, **ids, **tokens;
    int64_t *idle, *ttl;
    size_t *index;
    size_t room;
};

/* ---- lease_sync.c: the threads' synchronisation ---- */

/* Makes the fork gate (once a process) and has every fork wait at it
 * while a keeper runs. */
void lease_gate_setup(void);

/* A keeper's threads are about to start (counted until _stopped):
 * from now on forks wait at the gate. */
void lease_gate_keeper_started(void);
void lease_gate_keeper_stopped(void);

/* A thread's pass begins (a reader of the gate) and ends. */
void lease_gate_enter(void);
void lease_gate_leave(void);

/* Sleeps on k->wake until ms from now, a stop, or (for the Redis thread)
 * a reload. */
void lease_nap(lease_keeper *k, int64_t ms, bool for_reload);

/* Each thread's first step: lease_keeper_start waits for both. */
void lease_thread_entered(lease_keeper *k);

/* ---- lease_locks.c: a worker's locks, with the mutex held ---- */

/* What the clock thread knows of type, or NULL. */
const lease_type *lease_type_of(const lease_keeper *k, const char *type);

/* Sizes what w knows of each entry to its slot's capacity, forgetting
 * the last worker's after a new attach. */
void lease_fit(keeper_worker *w);

/* Copies w's slot into c and brings what w knows of its locks in line. */
void lease_snapshot(copy *c, keeper_worker *w);

/* True if task i of the copy is one whose lock a lost lease endangers. */
bool lease_matters(const slot *snap, uint32_t i);

/* Asks the run under way in entry i of w (of the copy in snap) to end:
 * its deadline passed, or its lease was lost. */
void lease_ask_to_end(keeper_worker *w, const slot *snap, uint32_t i,
                      int64_t now, bool lease_lost);

/* Task i of w's batch (as snap shows it) lost its lease (why). */
void lease_note_lost(lease_keeper *k, keeper_worker *w, const slot *snap,
                     uint32_t i, int64_t margin_ms, const char *why,
                     int64_t now);

/* ---- lease_clock.c: the clock thread ---- */

void *lease_clock_main(void *arg);

/* ---- lease_redis.c: the Redis thread ---- */

/* Takes a new manifest. Redis thread or start only, under the mutex. */
void lease_apply_config(lease_keeper *k, const config *cfg,
                        const char *const *types, const policy *const *policies,
                        size_t n);

/* Frees the renew call's argument arrays. */
void lease_free_args(lease_keeper *k);

void *lease_redis_main(void *arg);

#endif /* WHARF_LEASE_INTERNAL_H */
