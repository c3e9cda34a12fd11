/* A worker's slot: shared memory in which one worker process says what it
 * is doing (its batch, the task running, since when), so the supervisor
 * can renew leases, enforce timeouts and record the failure of a task
 * whose worker died; and in which the supervisor asks the worker to stop
 * or to cancel its task, so no signal ever interrupts plugin code.
 *
 * One slot is mapped for each worker process just before it is forked,
 * sized for the batch that worker may hold under the manifest of the
 * moment, and unmapped once that process is gone: a reload that adds a
 * type or raises prefetch gets slots of the new size, and a worker killed
 * in the middle of a write leaves nothing behind for its replacement. */
#ifndef WHARF_SLOTS_H
#define WHARF_SLOTS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
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

/* What a plugin call returned, kept until the batch's finish is sent. */
typedef struct slot_return {
    int finish;            /* a finish_kind (broker.h); 0: not returned */
    uint32_t next_attempt; /* as the worker decided (retry, dead) */
    int64_t delay_ms;
    uint32_t reason_off, reason_len; /* in the arena; len 0: no reason */
    uint32_t result_off, result_len; /* in the arena (FINISH_OK) */
    int has_result;
    int finished; /* 1: sent already (finished at once), nothing to do */
} slot_return;

/* One claimed task of a worker's batch. */
typedef struct slot_task {
    char type[SLOT_TYPE_MAX];
    char id[SLOT_ID_MAX];
    char entry_id[SLOT_ENTRY_MAX];
    char token[SLOT_TOKEN_MAX]; /* the lock's value while held, else "" */
    int64_t locked_ms; /* CLOCK_MONOTONIC before the begin that took the
                          lock was sent: the lock lives at most lock_ttl
                          from here unless renewed */
    slot_return ret;
} slot_task;

typedef struct slot {
    /* Written by the supervisor, read by the worker at any time. */
    _Atomic int stop;       /* 1: stop claiming, finish, exit 0 */
    _Atomic uint32_t cancel; /* the `run` that must end (its deadline
                                passed, or it was cancelled), or 0 */
    _Atomic uint32_t cancel_requested; /* the `run` a wharf cancel asked to
                                          end (set before `cancel`), or 0 */
    _Atomic uint32_t lease_lost; /* the `run` whose lock could not be kept
                                    (set before `cancel`), or 0 */
    uint32_t capacity;      /* batch entries, fixed at slot_create */

    /* Written by the worker between slot_write_begin and _end. */
    _Atomic uint32_t seq;   /* odd while the worker writes */
    _Atomic pid_t writer;   /* who writes (set at slot_write_begin) */
    int state;              /* slot_state */
    uint32_t running;       /* index into batch of the running task, or
                               SLOT_NONE */
    uint32_t run;           /* counts plugin calls (from 1): names the one
                               under way, so a cancel meant for one call
                               never reaches the next */
    int64_t started_ms;     /* CLOCK_MONOTONIC, when it started */
    int64_t timeout_ms;     /* its type's timeout */
    uint32_t batch_n;
    uint32_t arena_used;    /* bytes of the arena the batch's returns use */
    int finishing;          /* 1: the batch's finish is being sent */
    slot_task batch[];      /* capacity entries, then SLOT_ARENA_BYTES of
                               arena (slot_arena), outside slot_size */
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

/* The task of s's batch whose plugin call is under way, or NULL (none
 * is, or the slot names no task of its batch). */
const slot_task *slot_running_task(const slot *s);

/* True if plugin call `run` (not 0) is one a wharf cancel asked to end:
 * such a run ends as cancelled, whatever it returned or however its
 * worker died. */
bool slot_run_cancelled(const slot *s, uint32_t run);

/* True if plugin call `run` (not 0) lost its lease: the lease keeper could
 * not keep its lock, so whatever it returns is not trusted. */
bool slot_run_lease_lost(const slot *s, uint32_t run);

#endif /* WHARF_SLOTS_H */
