/* The slot table: shared memory, set up by the supervisor before it forks,
 * in which each worker says what it is doing (its batch, the task running,
 * since when), so the supervisor can renew leases, enforce timeouts and
 * record the failure of a task whose worker died. A worker writes only its
 * own slot, under a sequence counter; the supervisor reads a consistent
 * copy. */
#ifndef WHARF_SLOTS_H
#define WHARF_SLOTS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SLOT_TYPE_MAX 101
#define SLOT_ID_MAX 201
#define SLOT_ENTRY_MAX 48
#define SLOT_TOKEN_MAX 48 /* a lock value "<fence>-<owner>": broker_job.token */
#define SLOT_NONE UINT32_MAX

typedef enum slot_state {
    SLOT_EMPTY = 0, /* no worker */
    SLOT_IDLE,      /* waiting for work, or between tasks */
    SLOT_RUNNING,   /* a plugin call is under way */
    SLOT_STOPPING   /* finishing up after a stop request */
} slot_state;

/* One claimed task of a worker's batch. */
typedef struct slot_task {
    char type[SLOT_TYPE_MAX];
    char id[SLOT_ID_MAX];
    char entry_id[SLOT_ENTRY_MAX];
    char token[SLOT_TOKEN_MAX]; /* the lock's token while held, else "" */
} slot_task;

typedef struct slot {
    _Atomic uint32_t seq; /* odd while the worker writes */
    pid_t pid;            /* written by the supervisor */
    int state;            /* slot_state */
    char consumer[300];
    uint32_t running;     /* index into batch of the running task, or
                             SLOT_NONE */
    int64_t started_ms;   /* CLOCK_MONOTONIC, when it started */
    int64_t timeout_ms;   /* its type's timeout */
    uint32_t batch_n;
    slot_task batch[];    /* capacity entries */
} slot;

typedef struct slot_table {
    void *base;
    size_t n_slots;
    size_t capacity;  /* batch entries per slot */
    size_t slot_size; /* bytes per slot */
} slot_table;

/* Maps a zeroed, shared, anonymous table of n_slots slots of capacity batch
 * entries each. 0, or -1 with errno set. */
int slots_create(slot_table *t, size_t n_slots, size_t capacity);

/* Unmaps it. Accepts a table that was never created. */
void slots_destroy(slot_table *t);

slot *slots_get(const slot_table *t, size_t i);

/* Worker side: bracket every change of the slot. */
void slot_write_begin(slot *s);
void slot_write_end(slot *s);

/* Supervisor side: copies s into copy (a buffer of t->slot_size bytes)
 * once no write is under way, retrying a few times. 0, or -1 if the
 * worker kept writing (try again on the next tick). */
int slot_read(const slot_table *t, const slot *s, slot *copy);

/* CLOCK_MONOTONIC in milliseconds: one clock for every process. */
int64_t slots_now_ms(void);

#endif /* WHARF_SLOTS_H */
