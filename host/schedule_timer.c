/* The schedule timer (schedule_timer.h). One thread, one pass every
 * PASS_MS: for each schedule whose next tick is due, the last tick is
 * read from Redis (another host may have fired it), the ticks due since
 * are fired per catch_up, oldest first, and the newest is recorded. A
 * pass holds the fork gate (fork_gate.h), as the lease keeper's do, so
 * no worker is forked while this thread is inside hiredis, OpenSSL or a
 * borrowed timezone (zone.c). */
#define _GNU_SOURCE /* pthread_condattr_setclock */
#include "schedule_timer.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <wharf/client.h>

#include "clock_ms.h"
#include "conn.h"
#include "cron.h"
#include "fork_gate.h"
#include "log.h"
#include "schedule_store.h"
#include "schedule_tick.h"
#include "tls.h"
#include "xmalloc.h"
#include "zone.h"

_Static_assert(CONFIG_SCHEDULES_MAX <= METRICS_MAX_SCHEDULES,
               "every schedule has its figures");

/* A pass every 100 ms: a tick fires within that of its time, plus one
 * enqueue's round trip. */
#define PASS_MS 100
/* After a failure to reach Redis, the next try. */
#define RETRY_MS 1000

/* A schedule, copied from the manifest, and where it stands. */
typedef struct entry {
    schedule_section s;
    cron_line line;
    bool known;    /* last has been read from Redis once */
    bool recorded; /* last is a tick fired, not the start */
    int64_t last;  /* the last tick fired (or seen fired), or the start */
    int64_t next;  /* the first tick after last; 0: none will come */
    int mi;        /* metrics index, or -1 */
} entry;

struct schedule_timer {
    pthread_t thread;
    bool started, counted;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool entered; /* the thread is past its start (under lock) */
    atomic_bool stop;

    entry *entries;
    size_t n;
    char *url, *password, *prefix;
    unsigned min_replicas;
    int64_t replicas_timeout_ms;
    bool strict;
    metrics *m;

    /* The thread's own. */
    wharf_client *client; /* enqueues; NULL until connected */
    conn *store;          /* the last ticks */
    int64_t retry_at_ms;  /* no Redis before this (monotonic) */
    bool down_logged;
};

/* ---- the clock ---- */

/* Seconds and ms of wall time: the real clock, or for the tests only the
 * number of seconds written in the file WHARF_TEST_CLOCK_FILE names (read
 * at each pass, so a test moves time by rewriting it). */
static int64_t wall_now_ms(void)
{
    static int64_t last_fake_ms;
    const char *path = getenv("WHARF_TEST_CLOCK_FILE");
    FILE *f;
    double seconds;

    if (path == NULL || *path == '\0')
        return clock_wall_ms();
    f = fopen(path, "re");
    if (f != NULL) {
        if (fscanf(f, "%lf", &seconds) == 1)
            last_fake_ms = (int64_t)(seconds * 1000.0);
        fclose(f);
    }
    return last_fake_ms;
}

/* ---- ticks ---- */

static int64_t next_after(const entry *e, int64_t after)
{
    int64_t at;

    if (e->s.every_s != 0)
        return cron_next_every(e->s.every_s, after);
    return cron_next(&e->line, e->s.timezone, after, &at) == 0 ? at : 0;
}

static void publish(schedule_timer *t, const entry *e)
{
    if (t->m == NULL || e->mi < 0)
        return;
    atomic_store(&t->m->schedules[e->mi].last_tick_s,
                 e->recorded ? e->last : 0);
    atomic_store(&t->m->schedules[e->mi].next_tick_s, e->next);
}

/* A failure to reach Redis: logged once an outage, tried again later. */
static void redis_down(schedule_timer *t, const char *what, const char *why)
{
    if (!t->down_logged)
        log_fields(WHARF_LOG_ERROR, "schedules: cannot reach Redis",
                   (log_field[]){LOG_STR("doing", what), LOG_STR("error", why)},
                   2);
    t->down_logged = true;
    t->retry_at_ms = clock_ms() + RETRY_MS;
    if (t->m)
        metrics_add(t->m, &t->m->redis_errors, 1);
}

static bool connect_client(schedule_timer *t)
{
    char err[512];

    if (t->client != NULL)
        return true;
    if (wharf_client_open(&t->client, t->url, t->password, t->prefix, err,
                          sizeof(err)) != WHARF_CLIENT_OK) {
        t->client = NULL;
        redis_down(t, "connecting", err);
        return false;
    }
    wharf_client_set_strict(t->client, t->strict);
    if (t->min_replicas > 0)
        wharf_client_require_replicas(t->client, (int)t->min_replicas,
                                      t->replicas_timeout_ms);
    return true;
}

/* Enqueues the task of e's tick at `tick`. 1 when this host added it, 0
 * when it was there already or Redis refused it for good (logged: the
 * tick is passed over), -1 when Redis could not be asked (try again). */
static int fire(schedule_timer *t, entry *e, int64_t tick)
{
    char id[WHARF_ID_MAX + 1], at[SCHEDULE_TIME_MAX];
    wharf_enqueue_opts opts;
    wharf_enqueue_reply reply;
    wharf_client_status status;
    size_t len;
    char *payload = schedule_payload(e->s.payload, tick, &len);

    schedule_tick_id(id, sizeof(id), e->s.name, tick);
    memset(&opts, 0, sizeof(opts));
    opts.type = e->s.type;
    opts.payload = payload;
    opts.payload_len = len;
    opts.id = id;
    status = wharf_enqueue(t->client, &opts, &reply);
    free(payload);
    schedule_format_time(at, sizeof(at), tick);
    switch (status) {
    case WHARF_CLIENT_OK:
        /* A schedule that fires more often than once a minute would
         * double the log beside its tasks' own lines: its fires are
         * debug lines; a cron line fires at most once a minute. */
        log_fields(e->s.cron == NULL && e->s.every_s < 60 ? WHARF_LOG_DEBUG
                                                          : WHARF_LOG_INFO,
                   "schedule fired",
                   (log_field[]){LOG_STR("schedule", e->s.name),
                                 LOG_STR("type", e->s.type),
                                 LOG_STR("tick", at), LOG_STR("id", id)},
                   4);
        return 1;
    case WHARF_CLIENT_DUPLICATE:
        return 0;
    case WHARF_CLIENT_UNAVAILABLE:
    case WHARF_CLIENT_ERROR:
    case WHARF_CLIENT_AUTH:
    case WHARF_CLIENT_FULL:
        redis_down(t, "enqueueing a tick", wharf_client_errstr(t->client));
        wharf_client_close(t->client);
        t->client = NULL;
        return -1;
    default:
        log_fields(
            WHARF_LOG_ERROR, "schedule tick refused; passed over",
            (log_field[]){LOG_STR("schedule", e->s.name), LOG_STR("tick", at),
                          LOG_STR("error", wharf_client_errstr(t->client))},
            3);
        return 0;
    }
}

/* The ticks of e due at now (seconds) that catch_up fires, oldest first,
 * into out (SCHEDULE_CATCH_UP_MAX of room); how many. *newest is the
 * newest tick due, which is recorded whatever fires (0: none due). */
static size_t ticks_to_fire(const entry *e, int64_t now, int64_t *out,
                            int64_t *newest)
{
    int64_t due[SCHEDULE_CATCH_UP_MAX];
    bool older = false;
    size_t n = cron_ticks(&e->line, e->s.every_s, e->s.timezone, e->last, now,
                          due, SCHEDULE_CATCH_UP_MAX, &older);
    size_t first_on_time = n, k = 0, skipped;

    *newest = n > 0 ? due[n - 1] : 0;
    for (size_t i = 0; i < n; i++)
        if (now - due[i] < SCHEDULE_MISSED_AFTER_S) {
            first_on_time = i;
            break;
        }
    if (e->s.catch_up == CATCH_UP_ALL) {
        memcpy(out, due, n * sizeof(*due));
        k = n;
    } else {
        if (e->s.catch_up == CATCH_UP_LAST && first_on_time > 0)
            out[k++] = due[first_on_time - 1];
        for (size_t i = first_on_time; i < n; i++)
            out[k++] = due[i];
    }
    skipped = n - k;
    if (skipped > 0 || older)
        log_fields(
            WHARF_LOG_WARN, "schedule ticks missed and not fired",
            (log_field[]){
                LOG_STR("schedule", e->s.name),
                LOG_INT("skipped", (int64_t)skipped),
                LOG_STR("more", older ? "yes" : "no"),
                LOG_STR("catch_up", e->s.catch_up == CATCH_UP_NONE   ? "none"
                                    : e->s.catch_up == CATCH_UP_LAST ? "last"
                                                                     : "all")},
            4);
    return k;
}

/* One schedule whose next tick may be due at now_ms. -1 when Redis could
 * not be asked. */
static int run_entry(schedule_timer *t, entry *e, int64_t now_ms)
{
    int64_t now = now_ms / 1000, recorded, newest;
    int64_t todo[SCHEDULE_CATCH_UP_MAX];
    size_t n;

    if (e->known && (e->next == 0 || now < e->next))
        return 0;
    if (schedule_store_read(t->store, t->prefix, e->s.type, e->s.name,
                            &recorded) != 0) {
        redis_down(t, "reading the last tick", t->store->errstr);
        return -1;
    }
    /* What Redis holds wins: another host may have fired since. A new
     * schedule starts from now (its first tick is the next one). */
    if (recorded >= 0) {
        e->last = recorded;
        e->recorded = true;
    } else if (!e->known) {
        e->last = now;
    }
    e->known = true;
    n = ticks_to_fire(e, now, todo, &newest);
    for (size_t i = 0; i < n; i++) {
        int rc;

        if (!connect_client(t))
            return -1;
        rc = fire(t, e, todo[i]);
        if (rc < 0)
            return -1;
        if (rc > 0 && t->m && e->mi >= 0) {
            metrics_add(t->m, &t->m->schedules[e->mi].fired, 1);
            atomic_store(&t->m->schedules[e->mi].lag_ms,
                         now_ms - todo[i] * 1000);
        }
    }
    if (newest > 0) {
        if (schedule_store_mark(t->store, t->prefix, e->s.type, e->s.name,
                                newest) != 0) {
            redis_down(t, "recording the last tick", t->store->errstr);
            return -1;
        }
        e->last = newest;
        e->recorded = true;
    }
    e->next = next_after(e, e->last);
    publish(t, e);
    return 0;
}

static void pass(schedule_timer *t)
{
    int64_t now_ms = wall_now_ms();

    if (clock_ms() < t->retry_at_ms)
        return;
    for (size_t i = 0; i < t->n; i++)
        if (run_entry(t, &t->entries[i], now_ms) != 0)
            return;
    t->down_logged = false;
}

static void nap(schedule_timer *t, int64_t ms)
{
    struct timespec until = clock_monotonic_after_us(ms * 1000);

    pthread_mutex_lock(&t->lock);
    if (!atomic_load(&t->stop))
        pthread_cond_timedwait(&t->wake, &t->lock, &until);
    pthread_mutex_unlock(&t->lock);
}

static void *timer_main(void *arg)
{
    schedule_timer *t = arg;

    pthread_mutex_lock(&t->lock);
    t->entered = true;
    pthread_cond_broadcast(&t->wake);
    pthread_mutex_unlock(&t->lock);
    while (!atomic_load(&t->stop)) {
        lease_gate_enter();
        pass(t);
        /* As the lease keeper: no OpenSSL state of this thread's is left
         * for a worker forked between passes. */
        tls_thread_idle();
        lease_gate_leave();
        nap(t, PASS_MS);
    }
    return NULL;
}

/* ---- start and stop ---- */

static void copy_schedule(entry *e, const schedule_section *s, metrics *m)
{
    char why[256], when[80];

    memset(e, 0, sizeof(*e));
    e->s = *s;
    e->s.name = xstrdup(s->name);
    e->s.type = xstrdup(s->type);
    e->s.cron = s->cron ? xstrdup(s->cron) : NULL;
    e->s.timezone = xstrdup(s->timezone);
    e->s.payload = xstrdup(s->payload);
    if (s->cron != NULL && cron_parse(s->cron, &e->line, why, sizeof(why)) != 0)
        abort(); /* config_load parsed it */
    if (s->cron != NULL)
        snprintf(when, sizeof(when), "%s", s->cron);
    else
        snprintf(when, sizeof(when), "every %" PRId64 "s", s->every_s);
    e->mi = metrics_schedule_add(m, s->name, s->type, when, s->timezone);
}

schedule_timer *schedule_timer_start(const config *cfg, const char *url,
                                     metrics *m)
{
    schedule_timer *t;
    pthread_condattr_t attr;
    sigset_t all, old;
    error_kind kind;
    char err[512];
    int rc;

    if (cfg->n_schedules == 0)
        return NULL;
    t = xcalloc(1, sizeof(*t));
    pthread_mutex_init(&t->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&t->wake, &attr);
    pthread_condattr_destroy(&attr);
    t->m = m;
    t->url = xstrdup(url);
    t->password = cfg->redis_password ? xstrdup(cfg->redis_password) : NULL;
    t->prefix = xstrdup(cfg->prefix);
    t->min_replicas = cfg->min_replicas_ack;
    t->replicas_timeout_ms = cfg->min_replicas_timeout_ms;
    t->strict = cfg->producer_strict;
    t->n = cfg->n_schedules;
    t->entries = xcalloc(t->n, sizeof(*t->entries));
    for (size_t i = 0; i < t->n; i++)
        copy_schedule(&t->entries[i], &cfg->schedules[i], m);
    t->store = conn_open(t->url, t->password, CONN_TIMEOUT_MS, &kind, err,
                         sizeof(err));
    if (t->store == NULL) {
        log_fields(WHARF_LOG_ERROR, "schedules: not started",
                   (log_field[]){LOG_STR("error", err)}, 1);
        schedule_timer_stop(t);
        return NULL;
    }
    /* TZ into the environment now, on the supervisor's thread, before
     * the timer's exists (zone.c says why). */
    zone_enter("UTC");
    zone_leave();
    lease_gate_setup();
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    lease_gate_keeper_started();
    t->counted = true;
    rc = pthread_create(&t->thread, NULL, timer_main, t);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        log_fields(WHARF_LOG_ERROR, "schedules: cannot start the timer",
                   (log_field[]){LOG_STR("error", strerror(rc))}, 1);
        schedule_timer_stop(t);
        return NULL;
    }
    t->started = true;
    /* No fork before the thread is past its start (lease_sync.c). */
    pthread_mutex_lock(&t->lock);
    while (!t->entered)
        pthread_cond_wait(&t->wake, &t->lock);
    pthread_mutex_unlock(&t->lock);
    log_fields(WHARF_LOG_INFO, "schedules started",
               (log_field[]){LOG_INT("schedules", (int64_t)t->n)}, 1);
    return t;
}

void schedule_timer_stop(schedule_timer *t)
{
    if (t == NULL)
        return;
    pthread_mutex_lock(&t->lock);
    atomic_store(&t->stop, true);
    pthread_cond_broadcast(&t->wake);
    pthread_mutex_unlock(&t->lock);
    if (t->started)
        pthread_join(t->thread, NULL);
    if (t->counted)
        lease_gate_keeper_stopped();
    wharf_client_close(t->client);
    conn_close(t->store);
    for (size_t i = 0; i < t->n; i++) {
        free(t->entries[i].s.name);
        free(t->entries[i].s.type);
        free(t->entries[i].s.cron);
        free(t->entries[i].s.timezone);
        free(t->entries[i].s.payload);
    }
    free(t->entries);
    free(t->url);
    if (t->password)
        memset(t->password, 0, strlen(t->password));
    free(t->password);
    free(t->prefix);
    pthread_cond_destroy(&t->wake);
    pthread_mutex_destroy(&t->lock);
    free(t);
}
