/* Metrics in shared memory, rendered as Prometheus text; see metrics.h. */
#include "metrics.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <wharf/plugin.h>

#include "xmalloc.h"

/* Upper bounds of the finite buckets, in microseconds. */
static const int64_t bucket_us[METRICS_BUCKETS - 1] = {
    1000,   2500,   5000,    10000,   25000,   50000,  100000,
    250000, 500000, 1000000, 2500000, 5000000, 10000000};
static const char *const bucket_le[METRICS_BUCKETS] = {
    "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1",
    "0.25",  "0.5",    "1",     "2.5",  "5",     "10",   "+Inf"};

static const char *const restart_names[RESTART_REASON_COUNT] = {
    "crash", "timeout", "exit", "reload"};

int64_t metrics_bucket_bound_us(size_t b)
{
    return b < METRICS_BUCKETS - 1 ? bucket_us[b] : -1;
}

const char *metrics_restart_name(restart_reason why)
{
    return why < RESTART_REASON_COUNT ? restart_names[why] : "unknown";
}

metrics *metrics_create(void)
{
    void *p = mmap(NULL, sizeof(metrics), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void metrics_destroy(metrics *m)
{
    if (m)
        munmap(m, sizeof(*m));
}

int metrics_type_find(const metrics *m, const char *type)
{
    uint32_t n;

    if (!m)
        return -1;
    n = atomic_load_explicit(&m->n_types, memory_order_acquire);
    for (uint32_t i = 0; i < n && i < METRICS_MAX_TYPES; i++)
        if (strcmp(m->types[i].type, type) == 0)
            return (int)i;
    return -1;
}

int metrics_type_add(metrics *m, const char *type)
{
    int i = metrics_type_find(m, type);
    uint32_t n;

    if (i >= 0 || !m)
        return i;
    n = atomic_load_explicit(&m->n_types, memory_order_acquire);
    if (n >= METRICS_MAX_TYPES)
        return -1;
    snprintf(m->types[n].type, sizeof(m->types[n].type), "%s", type);
    atomic_store_explicit(&m->n_types, n + 1, memory_order_release);
    return (int)n;
}

void metrics_schedules_clear(metrics *m)
{
    if (!m)
        return;
    atomic_store_explicit(&m->n_schedules, 0, memory_order_release);
    memset(m->schedules, 0, sizeof(m->schedules));
}

int metrics_schedule_add(metrics *m, const char *name, const char *type,
                         const char *when, const char *zone)
{
    uint32_t n;
    schedule_metrics *sm;

    if (!m)
        return -1;
    n = atomic_load_explicit(&m->n_schedules, memory_order_acquire);
    if (n >= METRICS_MAX_SCHEDULES)
        return -1;
    sm = &m->schedules[n];
    snprintf(sm->name, sizeof(sm->name), "%s", name);
    snprintf(sm->type, sizeof(sm->type), "%s", type);
    snprintf(sm->when, sizeof(sm->when), "%s", when);
    snprintf(sm->zone, sizeof(sm->zone), "%s", zone);
    atomic_store(&sm->lag_ms, -1);
    atomic_store_explicit(&m->n_schedules, n + 1, memory_order_release);
    return (int)n;
}

void metrics_outcome(metrics *m, int ti, task_outcome outcome)
{
    if (!m || ti < 0 || outcome >= OUTCOME_COUNT)
        return;
    atomic_fetch_add_explicit(&m->types[ti].outcomes[outcome], 1,
                              memory_order_relaxed);
}

/* rates */
void metrics_rate_wait(metrics *m, int ti)
{
    if (m && ti >= 0)
        atomic_fetch_add_explicit(&m->types[ti].rate_waits, 1,
                                  memory_order_relaxed);
}

/* per-task options: an expired task */
void metrics_expired(metrics *m, int ti)
{
    if (m && ti >= 0)
        atomic_fetch_add_explicit(&m->types[ti].expired, 1,
                                  memory_order_relaxed);
}

static void observe(histogram *h, int64_t us)
{
    size_t b = 0;

    if (us < 0)
        us = 0;
    while (b < METRICS_BUCKETS - 1 && us > bucket_us[b])
        b++;
    atomic_fetch_add_explicit(&h->buckets[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_us, (uint64_t)us, memory_order_relaxed);
}

void metrics_run(metrics *m, int ti, int64_t duration_us, int64_t wait_us)
{
    if (!m || ti < 0)
        return;
    observe(&m->types[ti].duration, duration_us);
    observe(&m->types[ti].wait, wait_us);
}

void metrics_add(metrics *m, _Atomic uint64_t *counter, uint64_t n)
{
    if (m && n)
        atomic_fetch_add_explicit(counter, n, memory_order_relaxed);
}

/* ---- rendering ---- */

typedef struct text {
    char *data;
    size_t len, cap;
    int failed; /* a line vsnprintf could not format */
} text;

static void put(text *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void put(text *t, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (t->failed)
        return;
    for (;;) {
        va_start(ap, fmt);
        n = vsnprintf(t->data + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->failed = 1;
            return;
        }
        if ((size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        t->cap = t->cap * 2 + (size_t)n + 1;
        t->data = xrealloc(t->data, t->cap);
    }
}

static uint64_t load(const _Atomic uint64_t *v)
{
    return atomic_load_explicit(v, memory_order_relaxed);
}

static void render_histogram(text *t, const char *name, const char *help,
                             const metrics *m, uint32_t n, int wait)
{
    put(t, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    for (uint32_t i = 0; i < n; i++) {
        const type_metrics *tm = &m->types[i];
        const histogram *h = wait ? &tm->wait : &tm->duration;
        uint64_t cumulative = 0;
        for (size_t b = 0; b < METRICS_BUCKETS; b++) {
            cumulative += load(&h->buckets[b]);
            put(t, "%s_bucket{type=\"%s\",le=\"%s\"} %" PRIu64 "\n", name,
                tm->type, bucket_le[b], cumulative);
        }
        put(t, "%s_sum{type=\"%s\"} %.6f\n", name, tm->type,
            (double)load(&h->sum_us) / 1e6);
        put(t, "%s_count{type=\"%s\"} %" PRIu64 "\n", name, tm->type,
            cumulative);
    }
}

static void render_gauge(text *t, const char *name, const char *help,
                         const queue_figures *q, size_t nq, size_t field)
{
    put(t, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
    for (size_t i = 0; i < nq; i++) {
        long long v = field == 0   ? q[i].ready
                      : field == 1 ? q[i].running
                      : field == 2 ? q[i].delayed
                      : field == 3 ? q[i].dead
                      : field == 4 ? q[i].pressure
                      : field == 5 ? q[i].paused
                      : field == 6 ? q[i].slots
                      : field == 7 ? q[i].held
                                   : q[i].held_oldest_ms / 1000;
        put(t, "%s{type=\"%s\"} %lld\n", name, q[i].type, v);
    }
}

/* The schedules' families: the last and next tick, and the lag. */
static void render_schedules(text *t, const metrics *m)
{
    uint32_t n = atomic_load_explicit(&m->n_schedules, memory_order_acquire);

    if (n > METRICS_MAX_SCHEDULES)
        n = METRICS_MAX_SCHEDULES;
    put(t, "# HELP wharf_schedule_last_tick_seconds The time of the last "
           "tick of the schedule fired by any host (0: none yet).\n"
           "# TYPE wharf_schedule_last_tick_seconds gauge\n");
    for (uint32_t i = 0; i < n; i++)
        put(t,
            "wharf_schedule_last_tick_seconds{schedule=\"%s\",type=\"%s\"} "
            "%" PRId64 "\n",
            m->schedules[i].name, m->schedules[i].type,
            atomic_load(&m->schedules[i].last_tick_s));
    put(t, "# HELP wharf_schedule_next_tick_seconds The time of the "
           "schedule's next tick (0: none will come).\n"
           "# TYPE wharf_schedule_next_tick_seconds gauge\n");
    for (uint32_t i = 0; i < n; i++)
        put(t,
            "wharf_schedule_next_tick_seconds{schedule=\"%s\",type=\"%s\"} "
            "%" PRId64 "\n",
            m->schedules[i].name, m->schedules[i].type,
            atomic_load(&m->schedules[i].next_tick_s));
    put(t, "# HELP wharf_schedule_lag_seconds How long after its time this "
           "host enqueued the last tick it fired.\n"
           "# TYPE wharf_schedule_lag_seconds gauge\n");
    for (uint32_t i = 0; i < n; i++)
        if (atomic_load(&m->schedules[i].lag_ms) >= 0)
            put(t,
                "wharf_schedule_lag_seconds{schedule=\"%s\",type=\"%s\"} "
                "%.3f\n",
                m->schedules[i].name, m->schedules[i].type,
                (double)atomic_load(&m->schedules[i].lag_ms) / 1000.0);
    put(t, "# HELP wharf_schedule_ticks_total Ticks of the schedule this "
           "host enqueued (a tick another host enqueued first is not "
           "counted).\n"
           "# TYPE wharf_schedule_ticks_total counter\n");
    for (uint32_t i = 0; i < n; i++)
        put(t,
            "wharf_schedule_ticks_total{schedule=\"%s\",type=\"%s\"} "
            "%" PRIu64 "\n",
            m->schedules[i].name, m->schedules[i].type,
            load(&m->schedules[i].fired));
}

char *metrics_render(const metrics *m, const queue_figures *queues,
                     size_t n_queues, const worker_figures *workers,
                     int redis_up, size_t *len)
{
    text t = {xrealloc(NULL, 16384), 0, 16384, 0};
    uint32_t n = atomic_load_explicit(&m->n_types, memory_order_acquire);

    if (n > METRICS_MAX_TYPES)
        n = METRICS_MAX_TYPES;
    put(&t, "# HELP wharf_tasks_total Tasks finished, by type and outcome.\n"
            "# TYPE wharf_tasks_total counter\n");
    for (uint32_t i = 0; i < n; i++)
        for (int o = 0; o < OUTCOME_COUNT; o++)
            put(&t, "wharf_tasks_total{type=\"%s\",outcome=\"%s\"} %" PRIu64
                    "\n",
                m->types[i].type, task_outcome_name((task_outcome)o),
                load(&m->types[i].outcomes[o]));
    /* rates */
    put(&t, "# HELP wharf_rate_waits_total Tasks a rate_limit made wait "
            "for their turn (uncharged), by type.\n"
            "# TYPE wharf_rate_waits_total counter\n");
    for (uint32_t i = 0; i < n; i++)
        put(&t, "wharf_rate_waits_total{type=\"%s\"} %" PRIu64 "\n",
            m->types[i].type, load(&m->types[i].rate_waits));
    render_histogram(&t, "wharf_task_duration_seconds",
                     "How long process_business ran.", m, n, 0);
    render_histogram(&t, "wharf_task_wait_seconds",
                     "From enqueue to the start of the run.", m, n, 1);
    if (redis_up) {
        render_gauge(&t, "wharf_queue_ready", "Tasks ready to run.", queues,
                     n_queues, 0);
        render_gauge(&t, "wharf_queue_running",
                     "Tasks claimed and not yet finished.", queues, n_queues,
                     1);
        render_gauge(&t, "wharf_queue_delayed",
                     "Tasks waiting for a retry or their time.", queues,
                     n_queues, 2);
        render_gauge(&t, "wharf_queue_dead", "Tasks in the dead set.", queues,
                     n_queues, 3);
        render_gauge(&t, "wharf_queue_pressure",
                     "1 while the backlog is above the high watermark.",
                     queues, n_queues, 4);
        render_gauge(&t, "wharf_queue_paused",
                     "1 while the type is paused (wharf pause): no task of it "
                     "starts.",
                     queues, n_queues, 5);
        render_gauge(&t, "wharf_queue_slots",
                     "Concurrency slots held (concurrency_limit) across "
                     "every host.",
                     queues, n_queues, 6);
        render_gauge(&t, "wharf_queue_held",
                     "Tasks held until their parents finish (workflows).",
                     queues, n_queues, 7);
        render_gauge(&t, "wharf_queue_held_oldest_seconds",
                     "How long the oldest held task has waited for its "
                     "parents (0: none held).",
                     queues, n_queues, 8);
        put(&t, "# HELP wharf_queue_node 1 for the Redis node that serves "
                "the type (on a cluster, the primary owning its slot).\n"
                "# TYPE wharf_queue_node gauge\n");
        for (size_t i = 0; i < n_queues; i++)
            put(&t, "wharf_queue_node{type=\"%s\",node=\"%s\"} 1\n",
                queues[i].type, queues[i].node);
    }
    put(&t, "# HELP wharf_lock_contended_total Runs that found their task's "
            "lock held by another run.\n"
            "# TYPE wharf_lock_contended_total counter\n"
            "wharf_lock_contended_total %" PRIu64 "\n",
        load(&m->lock_contended));
    put(&t, "# HELP wharf_lease_renewals_total Renewal calls of the lease "
            "keeper (one per worker and type), by result.\n"
            "# TYPE wharf_lease_renewals_total counter\n"
            "wharf_lease_renewals_total{result=\"ok\"} %" PRIu64 "\n"
            "wharf_lease_renewals_total{result=\"failed\"} %" PRIu64 "\n",
        load(&m->lease_renewals[LEASE_RENEWED]),
        load(&m->lease_renewals[LEASE_FAILED]));
    put(&t, "# HELP wharf_lease_margin_seconds The least time a running "
            "task's lock or lease had left when the lease keeper renewed it, "
            "over the last minute.\n"
            "# TYPE wharf_lease_margin_seconds gauge\n");
    for (uint32_t i = 0; i < n; i++)
        if (atomic_load(&m->types[i].lease_margin_known))
            put(&t, "wharf_lease_margin_seconds{type=\"%s\"} %.3f\n",
                m->types[i].type,
                (double)atomic_load(&m->types[i].lease_margin_ms) / 1000.0);
    put(&t, "# HELP wharf_lease_ttl_seconds The shorter of lock_ttl and "
            "visibility_timeout: what a lease starts with.\n"
            "# TYPE wharf_lease_ttl_seconds gauge\n");
    for (uint32_t i = 0; i < n; i++)
        if (atomic_load(&m->types[i].lease_ttl_ms) > 0)
            put(&t, "wharf_lease_ttl_seconds{type=\"%s\"} %.3f\n",
                m->types[i].type,
                (double)atomic_load(&m->types[i].lease_ttl_ms) / 1000.0);
    put(&t, "# HELP wharf_leases_lost_total Runs whose lock could not be "
            "kept (Redis away longer than lock_ttl, or the lock gone): asked "
            "to end.\n"
            "# TYPE wharf_leases_lost_total counter\n");
    for (uint32_t i = 0; i < n; i++)
        put(&t, "wharf_leases_lost_total{type=\"%s\"} %" PRIu64 "\n",
            m->types[i].type, load(&m->types[i].leases_lost));
    put(&t, "# HELP wharf_tasks_given_back_total Tasks that were running "
            "beside one whose crash or overrun killed their worker: given "
            "back to the queue, no attempt spent.\n"
            "# TYPE wharf_tasks_given_back_total counter\n");
    for (uint32_t i = 0; i < n; i++)
        put(&t, "wharf_tasks_given_back_total{type=\"%s\"} %" PRIu64 "\n",
            m->types[i].type, load(&m->types[i].given_back));
    put(&t, "# HELP wharf_tasks_expired_total Tasks dead with \"expired\": "
            "begun past the expiry they were enqueued with, never run.\n"
            "# TYPE wharf_tasks_expired_total counter\n");
    for (uint32_t i = 0; i < n; i++)
        put(&t, "wharf_tasks_expired_total{type=\"%s\"} %" PRIu64 "\n",
            m->types[i].type, load(&m->types[i].expired));
    put(&t, "# HELP wharf_worker_restarts_total Worker processes started "
            "again, by why the last one ended.\n"
            "# TYPE wharf_worker_restarts_total counter\n");
    for (int r = 0; r < RESTART_REASON_COUNT; r++)
        put(&t, "wharf_worker_restarts_total{reason=\"%s\"} %" PRIu64 "\n",
            restart_names[r], load(&m->restarts[r]));
    put(&t, "# HELP wharf_redis_errors_total Failed Redis commands and "
            "connections.\n# TYPE wharf_redis_errors_total counter\n"
            "wharf_redis_errors_total %" PRIu64 "\n",
        load(&m->redis_errors));
    put(&t, "# HELP wharf_redis_up 1 while this host reaches Redis.\n"
            "# TYPE wharf_redis_up gauge\nwharf_redis_up %d\n",
        redis_up ? 1 : 0);
    put(&t, "# HELP wharf_round_trips_total Redis round trips (commands or "
            "pipelines) made by this host.\n"
            "# TYPE wharf_round_trips_total counter\n"
            "wharf_round_trips_total %" PRIu64 "\n",
        load(&m->round_trips));
    put(&t, "# HELP wharf_workers Worker processes by state.\n"
            "# TYPE wharf_workers gauge\n"
            "wharf_workers{state=\"idle\"} %u\n"
            "wharf_workers{state=\"running\"} %u\n"
            "wharf_workers{state=\"stopping\"} %u\n"
            "wharf_workers{state=\"down\"} %u\n",
        workers->idle, workers->running, workers->stopping, workers->down);
    put(&t, "# HELP wharf_tasks_in_flight Plugin calls under way in this "
            "host's workers (a worker with threads runs several).\n"
            "# TYPE wharf_tasks_in_flight gauge\n"
            "wharf_tasks_in_flight %u\n",
        workers->in_flight);
    render_schedules(&t, m);
    put(&t, "# HELP wharf_build_info The wharfd build.\n"
            "# TYPE wharf_build_info gauge\n"
            "wharf_build_info{version=\"%s\",abi=\"%d\"} 1\n",
        WHARF_VERSION, WHARF_PLUGIN_ABI);
    if (t.failed) {
        free(t.data);
        return NULL;
    }
    *len = t.len;
    return t.data;
}
