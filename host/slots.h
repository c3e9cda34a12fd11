/* A worker's slot: shared memory in which one worker process says what it
 * is doing (the entries it holds, the tasks running, since when), so the supervisor
 * can renew leases, enforce timeouts and record the failure of a task
 * whose worker died; and in which the supervisor asks the worker to stop
 * or to cancel one of its tasks, so no signal ever interrupts plugin
 * code. A worker with one thread holds a batch (entries from the first);
 * one with several holds a table whose entries come and go one by one.
 *
 * One slot is mapped for each worker process just before it is forked,
 * sized for the entries that worker may hold under the manifest of the
 * moment, and unmapped once that process is gone: a reload that adds a
 * type or raises prefetch gets slots of the new size, and a worker killed
 * in the middle of a write leaves nothing behind for its replacement. */
#ifndef WHARF_SLOTS_H
#define WHARF_SLOTS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#define SLOT_TYPE_MAX 101
#define SLOT_ID_MAX 201
#define SLOT_ENTRY_MAX 48
#define SLOT_TOKEN_MAX 48
#define SLOT_NONE UINT32_MAX
/* Bytes of each slot for what the plugins of a batch returned (results
 * and reasons), so the supervisor can finish them if the worker dies; a
 * return that does not fit is finished at once instead (worker_batch.c). */
#define SLOT_ARENA_BYTES ((size_t)1 << 20)

typedef enum slot_state {
    SLOT_EMPTY = 0, /* no worker yet (forked, loading its plugins) */
    SLOT_IDLE,      /* waiting for work, or between tasks */
    SLOT_RUNNING,   /* a plugin call is under way */
    SLOT_STOPPING   /* finishing up after a stop request */
} slot_state;

/* What a plugin call returned, kept until its finish is sent. */
typedef struct slot_return {
    int finish;            /* a finish_kind (broker.h); 0: not returned */
    uint32_t next_attempt; /* as the worker decided (retry, dead) */
    int64_t delay_ms;
    uint32_t reason_off, reason_len; /* in the arena; len 0: no reason */
    uint32_t result_off, result_len; /* in the arena (FINISH_OK) */
    int has_result;
    int finished; /* 1: sent already (finished at once), nothing to do */
} slot_return;

/* One claimed task of the worker: an entry of its batch (one thread) or
 * of its table of entries (several threads, where an unused entry has an
 * empty type). */
typedef struct slot_task {
    char type[SLOT_TYPE_MAX];
    char id[SLOT_ID_MAX];
    char entry_id[SLOT_ENTRY_MAX];
    char token[SLOT_TOKEN_MAX]; /* the lock's value while held, else "" */
    int64_t locked_ms; /* CLOCK_MONOTONIC before the begin that took the
                          lock was sent: the lock lives at most lock_ttl
                          from here unless renewed */
    uint32_t run;       /* the plugin call under way for it, or 0 */
    int64_t started_ms; /* CLOCK_MONOTONIC, when that call started */
    int64_t timeout_ms; /* its type's timeout */
    int finishing;      /* 1: its finish is being sent, and its lock goes
                           away with it */
    /* The fatal signal its thread took during that call, or 0: written
     * by the worker's signal handler (worker_crash.c), outside the
     * sequence, just before the process dies. */
    volatile sig_atomic_t crashed;
    slot_return ret;
} slot_task;

/* What the supervisor asks of one entry's plugin call. Each field names
 * the `run` it is meant for, so it never reaches the entry's next call.
 * Written by the supervisor with atomics, read by the worker at any
 * time; kept apart from the worker half, which slot_read copies. */
typedef struct slot_ask {
    _Atomic uint32_t cancel;           /* the run that must end (its
                                          deadline passed, it was
                                          cancelled, or its lease lost) */
    _Atomic uint32_t cancel_requested; /* the run a wharf cancel asked to
                                          end (set before cancel) */
    _Atomic uint32_t lease_lost;       /* the run whose lock could not be
                                          kept (set before cancel) */
} slot_ask;

typedef struct slot {
    /* Written by the supervisor, read by the worker at any time. */
    _Atomic int stop;  /* 1: stop claiming, finish, exit 0 */
    uint32_t capacity; /* entries, fixed at slot_create */

    /* Written by the worker between slot_write_begin and _end. */
    _Atomic uint32_t seq; /* odd while the worker writes */
    _Atomic pid_t writer; /* who writes (set at slot_write_begin) */
    int state;            /* slot_state */
    uint32_t run;         /* the last run number given out: counts plugin
                             calls (from 1), so each names one call */
    uint32_t n_running;   /* entries whose plugin call is under way */
    uint32_t batch_n;     /* entries in use from the first: the batch, or
                             every entry of the table */
    uint32_t arena_used;  /* bytes of the arena the batch's returns use */
    slot_task batch[];    /* capacity entries, then capacity slot_asks
                             (slot_asks) and SLOT_ARENA_BYTES of arena
                             (slot_arena), both outside slot_size */
} slot;

/* Maps a zeroed, shared, anonymous slot of capacity batch entries (at
 * least 1). The slot, or NULL with errno set. Unmap with slot_destroy. */
slot *slot_create(size_t capacity);

/* Unmaps s. Accepts NULL. */
void slot_destroy(slot *s);

/* Bytes of a slot of s's capacity: the size of a copy for slot_read. The
 * arena is not part of it: the supervisor reads it in place, and only
 * from a worker that is gone. */
size_t slot_size(const slot *s);

/* The arena of s: SLOT_ARENA_BYTES for the batch's results and reasons. */
unsigned char *slot_arena(slot *s);

/* Worker side: bracket every change of the slot's worker half. */
void slot_write_begin(slot *s);
void slot_write_end(slot *s);

/* Supervisor side: copies s into copy (slot_size(s) bytes) once no write
 * is under way. 0 on a consistent copy; -1 if the worker kept writing
 * (try again on the next tick); -2 if the writer died in the middle of a
 * write (the copy is made anyway and may be torn: its batch still names
 * the entries the dead worker held, which is what recovery needs). */
int slot_read(const slot *s, slot *copy);

/* The supervisor's asks of s, one per entry (capacity of them). */
slot_ask *slot_asks(slot *s);
const slot_ask *slot_asks_const(const slot *s);

/* True if entry i of s is in use and its plugin call is under way. */
bool slot_task_running(const slot *s, uint32_t i);

/* True if plugin call `run` (not 0) of entry i is one a wharf cancel
 * asked to end: such a run ends as cancelled, whatever it returned or
 * however its worker died. */
bool slot_run_cancelled(const slot *s, uint32_t i, uint32_t run);

/* True if plugin call `run` (not 0) of entry i lost its lease: the lease
 * keeper could not keep its lock, so whatever it returns is not trusted. */
bool slot_run_lease_lost(const slot *s, uint32_t i, uint32_t run);

/* True if plugin call `run` (not 0) of entry i was asked to end, for any
 * of the reasons above or its deadline. */
bool slot_run_asked_to_end(const slot *s, uint32_t i, uint32_t run);

#endif /* WHARF_SLOTS_H */
