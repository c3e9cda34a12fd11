/* What the worker's files share (worker.c and its worker_*.c, one job
 * each): a worker's state and the calls each file makes of one below it.
 * Private to them. From the top: worker.c (the loop: connect, claim,
 * hold a batch across an outage, maintenance) uses worker_batch.c (one
 * batch: begin, run each plugin, decide each fate, count and log it),
 * which tells the supervisor what it does through worker_slot.c; all of
 * them ask worker_stop.c whether to stop. */
#ifndef WHARF_WORKER_INTERNAL_H
#define WHARF_WORKER_INTERNAL_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker.h"
#include "context.h"
#include "worker.h"

/* A batch kept across a broken connection: its begun locks to release, or
 * its finish to send again, once Redis is back. */
typedef enum held_kind { HELD_NONE = 0, HELD_RELEASE, HELD_FINISH } held_kind;

typedef struct worker {
    const config *cfg;
    loader *ld;
    const worker_options *opts;
    volatile sig_atomic_t *stop;
    broker b;
    broker_job *jobs;
    context *ctxs;
    /* With threads: a child's parents' results, read by the main thread
     * after its begin (a pool thread has no connection), taken by its
     * run; one per entry, or NULL. */
    redisReply **parents_read;
    size_t capacity;
    unsigned count;
    worker_counts counts;
    int64_t last_promote_ms;
    int64_t last_trim_ms;
    held_kind held;
    redisReply *held_claim; /* the jobs point into it */
    size_t held_n;
    int64_t stop_seen_ms; /* when a stop request was first seen, or 0 */
    int64_t begin_ms;     /* when the batch's begin was sent */
    bool signalled;       /* a SIGTERM / SIGINT is pending */
    int *metric_index;    /* per broker queue: its metrics type index */
    uint64_t counted_round_trips, counted_errors; /* already in metrics */
    int64_t *pause_seen_ms; /* per broker queue: when a begin last found
                               it paused, or 0 */
    unsigned threads;       /* its pool's threads (1: none) */
    bool threaded;          /* several threads: worker_threads.c runs it */
    struct worker_pool *pool; /* its threads and what they share, or NULL
                                 (worker_threads.c) */
    uint64_t other_round_trips; /* of the finisher's connection */
} worker;

/* ---- worker_stop.c: whether to stop, and sleeping ---- */

/* Reads a pending SIGTERM or SIGINT (kept blocked) into w->signalled. */
void worker_read_signals(worker *w);

/* True once a stop was asked for: by the caller's flag, by the supervisor
 * through the slot, or by a pending SIGTERM / SIGINT. */
bool worker_stopping(worker *w);

/* While stopping, true as long as a held batch is still worth sending. */
bool worker_keep_trying(worker *w);

/* True once a stop was asked for and shutdown_timeout is nearly over:
 * what is not sent by now is left to the supervisor. */
bool worker_grace_over(worker *w);

/* Sleeps ms, in short steps, so a stop request is seen quickly. */
void worker_sleep_ms(worker *w, int64_t ms);

/* ---- worker_slot.c: what the supervisor reads of this worker ---- */

/* Publishes the batch's first n jobs (0: none) in the slot (one
 * thread). */
void worker_slot_publish(worker *w, size_t n);

/* Several threads, with the worker's lock held: writes entries which[0..n)
 * of the table from their jobs, or clears them once finished. */
void worker_slot_put(worker *w, const uint32_t *which, size_t n);
void worker_slot_clear(worker *w, const uint32_t *which, size_t n);

/* Keeps what job i's plugin returned in the slot; false when it does not
 * fit the arena (the caller finishes it at once). */
bool worker_slot_returned(worker *w, uint32_t i);

/* Marks jobs [from, to) as finished already (one thread). */
void worker_slot_finished(worker *w, size_t from, size_t to);

/* The finish of entries which[0..n) is about to be sent (which NULL: the
 * whole batch). */
void worker_slot_finishing(worker *w, const uint32_t *which, size_t n);

/* Marks job i as running; the run number that names this plugin call. */
uint32_t worker_slot_running(worker *w, uint32_t i);

/* Which entry a fatal signal belongs to (worker_crash.c): set up once,
 * then entered and left around each plugin call by its thread. */
void worker_crash_setup(slot *sl);
void worker_crash_enter(uint32_t i);
void worker_crash_leave(void);

/* Each thread that runs plugin calls: an alternate stack for the fault
 * handler from its start to its end. */
void worker_crash_thread_start(void);
void worker_crash_thread_end(void);

/* ---- worker.c: the loop ---- */

/* Connects, waiting out an outage with capped backoff: 0, -1 when
 * stopped, -2 when Redis refuses what retrying cannot fix. */
int worker_connect(worker *w);

/* Promotes due tasks and trims dead sets when it is time. 0, or -1 on a
 * connection error. */
int worker_maintain(worker *w);

/* Marks the queues a claim leaves out (paused). */
void worker_note_pauses(worker *w);

/* Adds the round trips and Redis errors since the last call to the
 * shared counters. */
void worker_count_redis(worker *w);

/* A begin found q's type paused: q stays out of this worker's claims
 * until the supervisor's figures show the pause (or for a few seconds,
 * should they never do: it ended meanwhile). */
void worker_saw_pause(worker *w, const broker_queue *q);

/* ---- worker_batch.c: one batch ---- */

/* Begins one claimed batch of n jobs and runs the plugin of each task it
 * may run: 0, -1 if the connection broke before every begin was
 * answered, -2 if it broke while finishing a return too large for the
 * slot. */
int worker_begin_and_run(worker *w, size_t n);

/* Counts and logs a finished batch of n jobs. */
void worker_report(worker *w, size_t n);

/* Runs job i's plugin call (worker_batch.c): see there. */
bool worker_run_entry(worker *w, uint32_t i);
void worker_run_job(worker *w, uint32_t i, uint32_t run);

/* Before a begin: a job that cannot run (its entry is gone, or it is
 * bad) gets its fate now. */
void worker_unrunnable_fate(broker_job *j);

/* After its begin: true if job j is to run; else it has its fate
 * (cached, cancelled, paused, locked, waiting for a slot, or given back
 * because the worker stops). */
bool worker_begun_fate(worker *w, broker_job *j);

/* Counts and logs jobs which[0..n) once finished. */
void worker_report_some(worker *w, const broker_job *jobs, size_t n);

/* ---- worker_threads.c: several threads ---- */

/* The worker's lock, taken only with several threads (no-ops with one). */
void worker_lock(worker *w);
void worker_unlock(worker *w);

/* Serves with `threads` threads until a stop with nothing left: the
 * worker's status (EX_OK, EX_CONFIG, EX_SOFTWARE). */
int worker_threads_run(worker *w, size_t threads);

/* Whether the pool shows its worker stopping (lock held). */
bool worker_pool_stopping(const worker *w);

#endif /* WHARF_WORKER_INTERNAL_H */
