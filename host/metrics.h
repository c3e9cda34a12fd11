/* Metrics: counters and histograms in shared memory, set up by the
 * supervisor before it forks, added to by every process with atomic adds
 * (so counts are exact), and rendered by the supervisor in the Prometheus
 * text format. README's "Metrics and health" names them. */
#ifndef WHARF_METRICS_H
#define WHARF_METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "outcome.h"

#define METRICS_MAX_TYPES 256
#define METRICS_TYPE_LEN 101
/* Histogram upper bounds in microseconds; a last bucket is +Inf. */
#define METRICS_BUCKETS 14

typedef enum restart_reason {
    RESTART_CRASH = 0, /* killed by a signal */
    RESTART_TIMEOUT,   /* stopped for a task past its timeout */
    RESTART_EXIT,      /* exited by itself */
    RESTART_RELOAD,    /* replaced by a reload */
    RESTART_REASON_COUNT
} restart_reason;

/* How a lease keeper's renewal call went. */
typedef enum lease_result {
    LEASE_RENEWED = 0, /* answered */
    LEASE_FAILED,      /* an error or no answer in time (retried) */
    LEASE_RESULT_COUNT
} lease_result;

typedef struct histogram {
    _Atomic uint64_t buckets[METRICS_BUCKETS]; /* not cumulative */
    _Atomic uint64_t sum_us;
} histogram;

typedef struct type_metrics {
    char type[METRICS_TYPE_LEN];
    _Atomic uint64_t outcomes[OUTCOME_COUNT];
    histogram duration; /* plugin run time */
    histogram wait;     /* enqueue to start */
    /* Written by the lease keeper: the least time a lock or lease of the
     * type had left when renewed, over the last minute or so (known: 1
     * once there is one), the shorter of lock_ttl and visibility_timeout,
     * and the runs whose lock could not be kept. */
    _Atomic int64_t lease_margin_ms;
    _Atomic int lease_margin_known;
    _Atomic int64_t lease_ttl_ms;
    _Atomic uint64_t leases_lost;
    /* Written by the supervisor: tasks that were running beside one whose
     * crash or overrun killed their worker, given back unrun (no attempt
     * spent). */
    _Atomic uint64_t given_back;
    /* Written by the supervisor from the queue figures (every second):
     * 1 while the type is paused. Workers leave it out of their claims. */
    _Atomic int paused;
    /* rates: tasks a rate_limit made wait for their turn (workers). */
    _Atomic uint64_t rate_waits;
    /* Tasks dead unrun, begun past their own expiry (workers). */
    _Atomic uint64_t expired;
} type_metrics;

/* A schedule of this host (docs/manifest.md, [schedule.NAME]), written by
 * its timer (host/schedule_timer.c): the last tick recorded for it, the
 * next one, and how late after its time this host enqueued the last one
 * it fired. Times in seconds since the epoch; 0 while unknown. */
#define METRICS_MAX_SCHEDULES 256
typedef struct schedule_metrics {
    char name[METRICS_TYPE_LEN];
    char type[METRICS_TYPE_LEN];
    char when[80];  /* the cron line, or "every 30s" */
    char zone[72];  /* its timezone */
    _Atomic int64_t last_tick_s;
    _Atomic int64_t next_tick_s;
    _Atomic int64_t lag_ms; /* -1 until this host fired one */
    _Atomic uint64_t fired; /* ticks this host enqueued (not duplicates) */
} schedule_metrics;

typedef struct metrics {
    _Atomic uint32_t n_types; /* written by the supervisor only */
    type_metrics types[METRICS_MAX_TYPES];
    _Atomic uint32_t n_schedules; /* written by the timer's start only */
    schedule_metrics schedules[METRICS_MAX_SCHEDULES];
    _Atomic uint64_t lock_contended;
    _Atomic uint64_t redis_errors;
    _Atomic uint64_t round_trips;
    _Atomic uint64_t restarts[RESTART_REASON_COUNT];
    _Atomic uint64_t lease_renewals[LEASE_RESULT_COUNT];
} metrics;

/* Queue figures of one type, read from Redis in O(1) commands. */
typedef struct queue_figures {
    const char *type;
    long long ready, running, delayed, dead;
    int pressure;
    int paused;               /* 1 while the type is paused (wharf pause) */
    long long paused_left_ms; /* the pause's time left; -1: no end */
    long long slots;          /* concurrency slots held (concurrency_limit) */
    long long held;           /* workflows: tasks held for their parents */
    long long held_oldest_ms; /* the oldest held task's age, 0 if none */
    char node[300]; /* "host:port" of the Redis node serving the type */
} queue_figures;

typedef struct worker_figures {
    unsigned idle, running, stopping, down;
    unsigned in_flight; /* plugin calls under way, every thread's */
} worker_figures;

/* Maps a zeroed shared region. NULL with errno set on failure. */
metrics *metrics_create(void);

/* Unmaps it. Accepts NULL. */
void metrics_destroy(metrics *m);

/* The index of type's counters, adding them if new (supervisor only,
 * before the workers that use them are forked). -1 when full. */
int metrics_type_add(metrics *m, const char *type);

/* The index of type's counters, or -1. */
int metrics_type_find(const metrics *m, const char *type);

/* The index of a new schedule's figures, or -1 when full (the timer's
 * start only). */
/* Forgets every schedule's figures: the timer is about to start again
 * with the schedules of a new manifest. Only while no timer runs. */
void metrics_schedules_clear(metrics *m);

int metrics_schedule_add(metrics *m, const char *name, const char *type,
                         const char *when, const char *zone);

/* Adds one finished task of type index ti (ignored when ti < 0 or m is
 * NULL, as are the other adders). */
void metrics_outcome(metrics *m, int ti, task_outcome outcome);

/* rates: adds one task that waits for its rate_limit turn. */
void metrics_rate_wait(metrics *m, int ti);

/* Counts a task of type ti dead with "expired" (NULL m or ti < 0: no-op). */
void metrics_expired(metrics *m, int ti);

/* Records a plugin run: how long it took and how long it waited. */
void metrics_run(metrics *m, int ti, int64_t duration_us, int64_t wait_us);

/* Adds n to a global counter. */
void metrics_add(metrics *m, _Atomic uint64_t *counter, uint64_t n);

/* The upper bound of finite histogram bucket b (< METRICS_BUCKETS - 1),
 * in microseconds; -1 for the last (+Inf) bucket. */
int64_t metrics_bucket_bound_us(size_t b);

/* "crash", "timeout", "exit" or "reload". */
const char *metrics_restart_name(restart_reason why);

/* Renders everything as Prometheus text (format 0.0.4) into a malloc'd,
 * NUL-terminated buffer (caller frees); NULL when a line could not be
 * formatted (out of memory aborts, xmalloc.h). queues
 * are n_queues current figures (redis_up 0: queue gauges left out). */
char *metrics_render(const metrics *m, const queue_figures *queues,
                     size_t n_queues, const worker_figures *workers,
                     int redis_up, size_t *len);

#endif /* WHARF_METRICS_H */
