/* The supervisor; see supervisor.h. One poll loop: signals arrive
 * through a self-pipe, plugin folder changes through inotify, and a 50 ms
 * tick drives restarts, reloads, HTTP and the Redis maintenance. The
 * leases, the deadlines and the instance name are the lease keeper's, a
 * thread of its own (lease.h), so nothing this loop does can starve
 * them. */
#define _GNU_SOURCE /* pipe2, sigabbrev_np */
#include "supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <unistd.h>

#include "backoff.h"
#include "broker.h"
#include "cancel_check.h"
#include "check.h"
#include "child.h"
#include "console.h"
#include "embedded.h"
#include "http.h"
#include "known_types.h"
#include "lease.h"
#include "loader.h"
#include "log.h"
#include "metrics.h"
#include "notify.h"
#include "pressure.h"
#include "run.h"
#include "scripts.h"
#include "slots.h"
#include "worker.h"

#define TICK_MS 50
/* Restart delays of a worker that keeps dying before it takes a task (in
 * init, loading its plugins): 100 ms doubling to 10 s; a worker that
 * lived this long resets the count. One that died in a plugin call is
 * started again at once: that crash is the task's, charged to it as a
 * failed attempt, and must not slow the host. */
#define RESTART_MIN_MS 100
#define RESTART_MAX_MS 10000
#define STABLE_AFTER_MS 10000
/* Workers block this long in XREADGROUP; promotion's XADD wakes them. */
#define WORKER_BLOCK_MS 500
#define TRIM_EVERY_MS 1000
#define RECONNECT_MAX_MS 5000
/* What a stop may take past shutdown_timeout (reaping the workers, the
 * embedded Redis's own shutdown, up to 10 s): told to systemd at the
 * start of a stop, so its TimeoutStopSec follows the manifest. */
#define STOP_MARGIN_MS 15000
/* Changes in plugins_dir are gathered this long before a reload. */
#define WATCH_SETTLE_MS 300
/* Queue figures (and pressure) are refreshed this often; /metrics and the
 * console answer from the last refresh. */
#define FIGURES_EVERY_MS 1000

typedef struct worker_proc {
    pid_t pid;                /* 0 when not running */
    char consumer[300];
    slot *sl;                 /* this generation's slot, while it lives */
    slot *snap;               /* a copy of sl, for reading it */
    int64_t forked_ms;
    int64_t restart_at_ms;    /* when to fork it again; 0 = not waiting */
    unsigned crashes;         /* deaths in a row, each before STABLE_AFTER */
    lease_end end;            /* what the lease keeper did to it (its
                                 deadline, a cancel, a lost lease) */
    bool recovering;          /* died while Redis was away: its slot is
                                 kept, and it is not started again, until
                                 recover_slot has recorded its tasks */
    int dead_status;          /* how it ended, for that recovery */
    bool retiring;            /* asked to stop: reload or shutdown */
    bool replace;             /* reload: stop it, then start it anew */
} worker_proc;

typedef struct supervisor {
    const char *config_path;
    config *cfg;
    char **types; /* served types, NULL-terminated (from the check child) */
    size_t n_types;
    const policy **policies;
    worker_proc *procs;
    size_t n_procs;
    broker b;          /* the supervisor's own connection */
    bool b_ready;      /* broker initialized for the current types */
    int64_t reconnect_at_ms;
    int64_t reconnect_delay_ms;
    bool redis_down_logged;
    char consumer[300];
    char instance_key[KEY_MAX];
    char instance_value[64];
    lease_keeper *keeper; /* leases, deadlines, the instance name */
    bool instance_lost;   /* the keeper found it taken: stopping */
    embedded_redis embedded;
    bool embedded_on;
    int64_t last_promote_ms, last_trim_ms, last_takeover_ms,
        last_cancel_check_ms;
    int watch_fd;
    int64_t reload_at_ms; /* a watched change asks for a reload then */
    plugin_check check;   /* a reload's plugin check under way */
    config *next_cfg;     /* the manifest that check is for */
    bool stopping;
    int64_t stop_deadline_ms;
    int64_t watchdog_every_ms; /* systemd's WatchdogSec / 2, 0 = none */
    int64_t last_watchdog_ms;
    int exit_code;
    metrics *m;
    http_server *http;
    queue_figures *figures; /* one per broker queue, then (with /metrics)
                               room for KNOWN_TYPES_MAX unserved types' */
    known_types known;      /* the unserved types whose figures follow */
    bool figures_ok;
    int64_t figures_ms;
    uint64_t counted_round_trips, counted_errors;
    console *console; /* the page and /api/ (console.h) */
} supervisor;

static int signal_pipe[2] = {-1, -1};
static volatile sig_atomic_t got_stop, got_reload, got_child;
static volatile sig_atomic_t worker_stop; /* in a worker process */

static void on_signal(int sig)
{
    int saved = errno;
    char c = (char)sig;

    if (sig == SIGTERM || sig == SIGINT)
        got_stop = 1;
    else if (sig == SIGHUP)
        got_reload = 1;
    else if (sig == SIGCHLD)
        got_child = 1;
    if (write(signal_pipe[1], &c, 1) < 0) {
        /* the pipe is full: the loop wakes anyway */
    }
    errno = saved;
}

static int install_signals(void)
{
    struct sigaction sa;

    if (pipe2(signal_pipe, O_NONBLOCK | O_CLOEXEC) != 0)
        return -1;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    if (sigaction(SIGTERM, &sa, NULL) || sigaction(SIGINT, &sa, NULL) ||
        sigaction(SIGHUP, &sa, NULL) || sigaction(SIGCHLD, &sa, NULL))
        return -1;
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

/* ---- the supervisor's Redis connection ---- */

/* Adds the supervisor's own round trips and Redis errors to the shared
 * counters. */
static void count_redis(supervisor *s)
{
    metrics_add(s->m, &s->m->round_trips,
                broker_round_trips(&s->b) - s->counted_round_trips);
    metrics_add(s->m, &s->m->redis_errors,
                s->b.redis_errors - s->counted_errors);
    s->counted_round_trips = broker_round_trips(&s->b);
    s->counted_errors = s->b.redis_errors;
}

/* (Re)initializes the broker for the current types and policies. */
static int setup_broker(supervisor *s)
{
    const policy **policies;

    count_redis(s);
    broker_destroy(&s->b);
    known_types_free(&s->known); /* their figures follow the old types' */
    s->counted_round_trips = 0;
    s->counted_errors = 0;
    s->b_ready = false;
    policies = calloc(s->n_types + 1, sizeof(*policies));
    if (!policies) {
        log_msg(WHARF_LOG_ERROR, "supervisor: out of memory");
        return -1;
    }
    for (size_t i = 0; i < s->n_types; i++)
        policies[i] = config_policy(s->cfg, s->types[i]);
    /* The counters exist before the keeper or any worker that adds to
     * them uses them. */
    for (size_t i = 0; i < s->n_types; i++)
        if (metrics_type_add(s->m, s->types[i]) < 0)
            log_fields(WHARF_LOG_WARN, "too many types to count; this one "
                                       "has no metrics",
                       (log_field[]){LOG_STR("type", s->types[i])}, 1);
    /* The keeper serves the new manifest before the old one is freed. */
    if (s->keeper)
        lease_keeper_configure(s->keeper, s->cfg,
                               (const char *const *)s->types, policies,
                               s->n_types);
    free(s->policies);
    s->policies = policies;
    if (broker_init(&s->b, s->cfg, (const char *const *)s->types, policies,
                    s->n_types, s->consumer) != 0) {
        log_msg(WHARF_LOG_ERROR, "%s", s->b.errstr);
        return -1;
    }
    s->b.timeout_ms = RUN_SUPERVISOR_REDIS_TIMEOUT_MS;
    free(s->figures);
    /* Only /metrics shows the unserved types, after the served ones in
     * the same array; [metrics] listen holds across reloads. */
    s->figures =
        calloc(s->n_types + 1 + (s->cfg->metrics_listen ? KNOWN_TYPES_MAX : 0),
               sizeof(*s->figures));
    if (!s->figures) {
        log_msg(WHARF_LOG_ERROR, "supervisor: out of memory");
        return -1;
    }
    s->figures_ok = false;
    s->b_ready = true;
    return 0;
}

/* Connects when due; logs each change of state once. -2 when Redis
 * refuses what retrying cannot fix. */
static int ensure_connected(supervisor *s, int64_t now)
{
    int rc;

    if (broker_connected(&s->b))
        return 0;
    if (!s->b_ready || now < s->reconnect_at_ms)
        return -1;
    rc = broker_connect(&s->b);
    if (rc == 0) {
        if (s->redis_down_logged)
            log_msg(WHARF_LOG_INFO, "supervisor: redis reachable again");
        s->redis_down_logged = false;
        s->reconnect_delay_ms = 0;
        return 0;
    }
    if (rc == -2)
        return -2;
    if (!s->redis_down_logged) {
        log_fields(WHARF_LOG_WARN, "supervisor: redis unreachable; retrying",
                   (log_field[]){LOG_STR("error", s->b.errstr)}, 1);
        s->redis_down_logged = true;
    }
    s->reconnect_delay_ms = s->reconnect_delay_ms == 0
                                ? 100
                                : s->reconnect_delay_ms * 2;
    if (s->reconnect_delay_ms > RECONNECT_MAX_MS)
        s->reconnect_delay_ms = RECONNECT_MAX_MS;
    s->reconnect_at_ms =
        now + (int64_t)(s->reconnect_delay_ms * (0.5 + backoff_random_unit()));
    return -1;
}

static void lost_connection(supervisor *s, const char *what)
{
    log_fields(WHARF_LOG_WARN, "supervisor: redis command failed",
               (log_field[]){LOG_STR("during", what),
                             LOG_STR("error", s->b.errstr)},
               2);
    broker_disconnect(&s->b);
}

/* ---- workers ---- */

/* In the forked child (see child_fork): loads the plugins and serves
 * until the supervisor asks it to stop through its slot. Never returns. */
static void worker_process(supervisor *s, size_t index)
{
    worker_proc *p = &s->procs[index];
    worker_options opts;
    char err[CONFIG_ERR_LEN];
    loader *ld = NULL;
    int status;

    child_block_stops();
    /* The supervisor's connection is its own; child_fork closed its
     * socket, so this frees memory and sends nothing. */
    broker_disconnect(&s->b);

    if (loader_open(s->cfg, &ld, err, sizeof(err)) != 0 ||
        loader_init(ld, err, sizeof(err)) != 0) {
        log_fields(WHARF_LOG_ERROR, "worker cannot load its plugins",
                   (log_field[]){LOG_STR("error", err),
                                 LOG_STR("worker", p->consumer)},
                   2);
        loader_close(ld);
        _exit(EX_CONFIG);
    }
    opts.consumer = p->consumer;
    opts.block_ms = WORKER_BLOCK_MS;
    opts.maintenance = 0;
    opts.status = p->sl;
    opts.metrics = s->m;
    status = worker_run(s->cfg, ld, &opts, &worker_stop, NULL);
    loader_close(ld);
    /* exit, not _exit: a sanitizer build checks the worker for leaks. */
    exit(status);
}

/* Batch entries a worker may hold under the current manifest: XREADGROUP
 * takes the smallest prefetch of the served types for every stream. */
static size_t slot_capacity(const supervisor *s)
{
    uint32_t count = 0;

    for (size_t i = 0; i < s->n_types; i++)
        if (count == 0 || s->policies[i]->prefetch < count)
            count = s->policies[i]->prefetch;
    return (size_t)(count ? count : 1) * (s->n_types ? s->n_types : 1);
}

/* Unmaps a worker's slot once nothing reads it any more. */
static void drop_slot(worker_proc *p)
{
    slot_destroy(p->sl);
    p->sl = NULL;
    free(p->snap);
    p->snap = NULL;
}

static void start_worker(supervisor *s, size_t index, int64_t now)
{
    worker_proc *p = &s->procs[index];
    pid_t pid;

    drop_slot(p);
    p->sl = slot_create(slot_capacity(s));
    p->snap = p->sl ? malloc(slot_size(p->sl)) : NULL;
    if (!p->sl || !p->snap) {
        log_msg(WHARF_LOG_ERROR, "cannot map a slot for worker %zu: %s",
                index, strerror(errno));
        drop_slot(p);
        p->restart_at_ms = now + RESTART_MAX_MS;
        return;
    }
    pid = child_fork(-1);
    if (pid < 0) {
        log_msg(WHARF_LOG_ERROR, "cannot fork worker %zu: %s", index,
                strerror(errno));
        drop_slot(p);
        p->restart_at_ms = now + RESTART_MAX_MS;
        return;
    }
    if (pid == 0)
        worker_process(s, index);
    p->pid = pid;
    p->forked_ms = now;
    p->restart_at_ms = 0;
    memset(&p->end, 0, sizeof(p->end));
    p->retiring = false;
    lease_keeper_attach(s->keeper, index, pid, p->sl, p->consumer, now);
    log_fields(WHARF_LOG_INFO, "worker started",
               (log_field[]){LOG_INT("pid", pid), LOG_INT("slot", index),
                             LOG_INT("slot_capacity",
                                     (int64_t)p->sl->capacity),
                             LOG_STR("worker", p->consumer)},
               4);
}

/* A consistent copy of p's slot in p->snap: 0, or -1 when there is none
 * (no worker, or it kept writing). A copy torn by a writer that died
 * mid-write is refused here; recovery reads it on its own terms. */
static int read_slot(worker_proc *p)
{
    if (!p->sl || !p->snap)
        return -1;
    return slot_read(p->sl, p->snap) == 0 ? 0 : -1;
}

/* Names how a worker ended, for the task it was running. */
static void death_reason(const worker_proc *p, int status, const char *entry_id,
                         char *buf, size_t len)
{
    bool asked = p->end.entry[0] && strcmp(p->end.entry, entry_id) == 0;

    if (asked && p->end.timeout_ms > 0)
        snprintf(buf, len, "timeout after %" PRId64 " ms", p->end.timeout_ms);
    else if (asked && p->end.lease_lost)
        snprintf(buf, len, "lease lost: its lock could not be renewed in "
                           "time");
    else if (WIFSIGNALED(status))
        snprintf(buf, len, "worker crashed: SIG%s",
                 sigabbrev_np(WTERMSIG(status))
                     ? sigabbrev_np(WTERMSIG(status))
                     : "UNKNOWN");
    else
        snprintf(buf, len, "worker exited with status %d during the task",
                 WEXITSTATUS(status));
}

/* Makes j act for the dead worker's consumer with the lock token its
 * slot recorded ("" when it held no lock). */
static void own_slot_task(broker_job *j, broker_queue *q, const char *consumer,
                          const char *token)
{
    j->queue = q;
    j->consumer = consumer;
    snprintf(j->token, sizeof(j->token), "%s", token);
    j->begin = token[0] ? BEGIN_RUN : BEGIN_NONE;
}

/* Job j (task t of the dead worker's batch, whose entry r holds, queue q)
 * finishes as the worker's plugin returned, from what the slot kept:
 * reason and result are copied out of the arena into buf (reason, then
 * result). False when the arena's figures do not add up (a torn write). */
static bool returned_job(broker_job *j, const slot_task *t, slot *sl,
                         char **buf)
{
    const slot_return *r = &t->ret;
    const unsigned char *arena = slot_arena(sl);

    if ((uint64_t)r->reason_off + r->reason_len > SLOT_ARENA_BYTES ||
        (uint64_t)r->result_off + r->result_len > SLOT_ARENA_BYTES)
        return false;
    *buf = malloc((size_t)r->reason_len + 1 + r->result_len + 1);
    if (!*buf) {
        log_msg(WHARF_LOG_ERROR, "recovering a dead worker: out of memory");
        abort();
    }
    memcpy(*buf, arena + r->reason_off, r->reason_len);
    (*buf)[r->reason_len] = '\0';
    memcpy(*buf + r->reason_len + 1, arena + r->result_off, r->result_len);
    j->finish = (finish_kind)r->finish;
    j->next_attempt = r->next_attempt;
    j->delay_ms = r->delay_ms;
    j->reason = r->reason_len ? *buf : NULL;
    j->result = r->has_result
                    ? (const unsigned char *)*buf + r->reason_len + 1
                    : NULL;
    j->result_len = r->has_result ? r->result_len : 0;
    return true;
}

/* A worker died: finishes what its plugins had returned (kept in the
 * slot as each returned), records the failure of the task it was running
 * through the normal retry/dead path (or its end as cancelled, when a
 * wharf cancel had asked that run to end), and releases the locks of the
 * rest of its batch so its replacement can run them at once. So a death
 * costs one attempt of the task in hand and runs nothing else again.
 * True when that is done (the slot is then unmapped); false if Redis was
 * away, in which case the slot is kept and recovery is tried again before
 * the worker is started anew: a replacement would read the same pending
 * entries and run the failed task again at the same attempt, never
 * spending it. Everything is finished in resend mode: the worker may have
 * sent its batch's finish itself before it died, or an earlier try of
 * this recovery may have landed unseen; either counts once. */
static bool recover_slot(supervisor *s, size_t index, int status)
{
    worker_proc *p = &s->procs[index];
    slot *snap = p->snap;
    broker_job *jobs = NULL;
    redisReply **entries = NULL;
    char **bufs = NULL;
    char reason[256];
    bool mid_task, done = false;
    size_t n, n_returned = 0;

    if (!p->sl || !snap)
        return true;
    /* The worker is gone: a write it left half done (it died in it) is
     * read as it stands, which still names every entry it held. */
    if (slot_read(p->sl, snap) == -1)
        memcpy(snap, p->sl, slot_size(p->sl));
    if (snap->batch_n > snap->capacity)
        snap->batch_n = snap->capacity;
    /* Any end of the process while a plugin call was under way (a crash,
     * a kill, or exit() called by the plugin) fails that task's attempt;
     * only an exit between tasks is clean. */
    mid_task = slot_running_task(snap) != NULL;

    n = snap->batch_n;
    if (n == 0) {
        done = true;
        goto out;
    }
    if (ensure_connected(s, slots_now_ms()) != 0)
        goto out;
    jobs = calloc(n, sizeof(*jobs));
    entries = calloc(n, sizeof(*entries));
    bufs = calloc(n, sizeof(*bufs));
    if (!jobs || !entries || !bufs) {
        log_msg(WHARF_LOG_ERROR, "recovering a dead worker: out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        const slot_task *t = &snap->batch[i];
        broker_job *j = &jobs[i];
        broker_queue *q = broker_queue_of(&s->b, t->type);
        bool running = mid_task && i == snap->running;
        bool returned = t->ret.finish != 0 && !t->ret.finished;
        if (!q)
            continue;
        own_slot_task(j, q, p->consumer, t->token);
        j->e.task.id = t->id;
        j->e.task.trace = "";
        j->e.enqueued_at = "";
        if (!running && !returned)
            continue; /* not begun, or not run: its lock is released */
        entries[i] = broker_entry(&s->b, q, t->entry_id);
        if (!entries[i]) {
            lost_connection(s, "reading a dead worker's task");
            goto out;
        }
        if (entries[i]->elements != 1) {
            j->begin = BEGIN_NONE; /* finished already: nothing to do */
            continue;
        }
        broker_entries(&s->b, q, entries[i], j, 1); /* resets j */
        own_slot_task(j, q, p->consumer, t->token);
        if (returned) {
            if (!returned_job(j, t, p->sl, &bufs[i])) {
                j->finish = FINISH_NONE; /* torn: it runs again */
                continue;
            }
            n_returned++;
        } else if (slot_run_cancelled(p->sl, snap->run)) {
            /* It ignored a wharf cancel: the run ends as cancelled, as
             * the worker ends one that returns (run_job). */
            j->finish = FINISH_CANCEL;
            j->reason = "cancelled";
        } else {
            death_reason(p, status, t->entry_id, reason, sizeof(reason));
            backoff_fail(j, reason);
        }
    }
    /* One finish for every job that has one: the returned ones and the
     * one in hand; the rest have FINISH_NONE and are left to release. */
    if (broker_finish_resend(&s->b, jobs, n) != 0) {
        lost_connection(s, "recording a dead worker's tasks");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        broker_job *j = &jobs[i];
        if (j->finish == FINISH_NONE || !j->queue)
            continue;
        metrics_outcome(s->m, metrics_type_find(s->m, j->queue->type),
                        j->outcome);
        if (mid_task && i == snap->running)
            log_fields(WHARF_LOG_WARN, "task failed with its worker",
                       (log_field[]){LOG_STR("task", j->e.task.id),
                                     LOG_STR("type", j->queue->type),
                                     LOG_INT("attempt", j->e.task.attempt),
                                     LOG_STR("outcome",
                                             task_outcome_name(j->outcome)),
                                     LOG_STR("error", j->reason),
                                     LOG_STR("worker", p->consumer)},
                       6);
        j->begin = BEGIN_NONE; /* its lock went with the finish */
    }
    if (n_returned > 0)
        log_fields(WHARF_LOG_INFO,
                   "finished what a dead worker's plugins had returned",
                   (log_field[]){LOG_INT("tasks", (int64_t)n_returned),
                                 LOG_STR("worker", p->consumer)},
                   2);
    if (broker_release(&s->b, jobs, n) != 0) {
        lost_connection(s, "releasing a dead worker's locks");
        goto out;
    }
    done = true;
out:
    for (size_t i = 0; entries && i < n; i++)
        freeReplyObject(entries[i]);
    for (size_t i = 0; bufs && i < n; i++)
        free(bufs[i]);
    free(bufs);
    free(entries);
    free(jobs);
    if (done)
        drop_slot(p);
    return done;
}

/* Tries again to recover the slot of a worker that died while Redis was
 * away. True once done (or nothing was left to do). */
static bool retry_recovery(supervisor *s, size_t index)
{
    worker_proc *p = &s->procs[index];

    if (!p->recovering)
        return true;
    if (!recover_slot(s, index, p->dead_status))
        return false;
    p->recovering = false;
    log_fields(WHARF_LOG_INFO, "a dead worker's tasks are recorded",
               (log_field[]){LOG_STR("worker", p->consumer)}, 1);
    return true;
}

static void worker_exited(supervisor *s, size_t index, int status,
                          int64_t now)
{
    worker_proc *p = &s->procs[index];
    bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    bool in_task = false, retired = lease_keeper_retired(s->keeper, index);
    int64_t lived = now - p->forked_ms;
    char how[64];

    if (WIFSIGNALED(status))
        snprintf(how, sizeof(how), "signal SIG%s",
                 sigabbrev_np(WTERMSIG(status)) ? sigabbrev_np(WTERMSIG(status))
                                                : "?");
    else
        snprintf(how, sizeof(how), "exit %d", WEXITSTATUS(status));
    if (p->sl && read_slot(p) == 0)
        in_task = slot_running_task(p->snap) != NULL;
    if (clean && in_task)
        clean = false; /* exit() inside a plugin call */
    p->recovering = !recover_slot(s, index, status);
    p->dead_status = status;
    if (p->recovering)
        log_fields(WHARF_LOG_WARN,
                   "a dead worker's tasks wait for Redis to be recorded; "
                   "its replacement waits with them",
                   (log_field[]){LOG_STR("worker", p->consumer)}, 1);
    p->pid = 0;
    if (s->stopping)
        return;
    if (clean && (p->retiring || p->replace || retired)) {
        p->replace = false;
        p->crashes = 0;
        p->restart_at_ms = now;
        metrics_add(s->m, &s->m->restarts[RESTART_RELOAD], 1);
        console_worker_exited(s->console, index, RESTART_RELOAD, how);
    } else {
        restart_reason why = p->end.killed          ? RESTART_TIMEOUT
                             : WIFSIGNALED(status) ? RESTART_CRASH
                                                   : RESTART_EXIT;
        metrics_add(s->m, &s->m->restarts[why], 1);
        console_worker_exited(s->console, index, why, how);
        unsigned shift;
        int64_t delay;
        p->replace = false; /* it starts with the current plugins */
        if (in_task) {
            /* The task's fault, charged to it: no delay for the host. */
            p->crashes = 0;
            delay = 0;
        } else {
            p->crashes = lived >= STABLE_AFTER_MS ? 1 : p->crashes + 1;
            shift = p->crashes - 1 > 7 ? 7 : p->crashes - 1;
            delay = (int64_t)RESTART_MIN_MS << shift;
            if (delay > RESTART_MAX_MS)
                delay = RESTART_MAX_MS;
        }
        p->restart_at_ms = now + delay;
        log_fields(WHARF_LOG_WARN, "worker died; restarting",
                   (log_field[]){LOG_STR("how", how),
                                 LOG_INT("restart_in_ms", delay),
                                 LOG_STR("worker", p->consumer)},
                   3);
    }
}

static void reap(supervisor *s, int64_t now)
{
    int status;
    pid_t pid;
    char err[256];
    siginfo_t info;

    /* Each child is looked at before it is reaped: a worker is detached
     * from the lease keeper while its pid cannot yet be reused, so the
     * keeper never kills another process by that number. */
    while (memset(&info, 0, sizeof(info)),
           waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
               info.si_pid > 0) {
        pid = info.si_pid;
        for (size_t i = 0; i < s->n_procs; i++)
            if (s->procs[i].pid == pid)
                lease_keeper_detach(s->keeper, i, &s->procs[i].end);
        if (waitpid(pid, &status, 0) != pid)
            break;
        if (s->embedded_on && embedded_reaped(&s->embedded, pid, status, err,
                                              sizeof(err))) {
            log_fields(WHARF_LOG_ERROR, "embedded redis-server stopped",
                       (log_field[]){LOG_STR("error", err)}, 1);
            continue;
        }
        if (check_reaped(&s->check, pid, status))
            continue;
        for (size_t i = 0; i < s->n_procs; i++)
            if (s->procs[i].pid == pid)
                worker_exited(s, i, status, now);
    }
}

/* Asks the running plugin of each worker whose task was cancelled
 * (cancel:<id> names its entry, see cancel_check.h) to end, through the
 * lease keeper, which ends it as it ends a run past its deadline: the
 * plugin sees wharf_cancelled, the worker ends the run as cancelled, and
 * one that ignores it is killed after the same grace (its finish writes
 * nothing either way). */
static int check_cancels(supervisor *s)
{
    const char *types[s->n_procs ? s->n_procs : 1];
    const char *ids[s->n_procs ? s->n_procs : 1];
    const char *entry_ids[s->n_procs ? s->n_procs : 1];
    uint32_t runs[s->n_procs ? s->n_procs : 1];
    bool cancelled[s->n_procs ? s->n_procs : 1];
    size_t which[s->n_procs ? s->n_procs : 1];
    size_t n = 0;

    for (size_t i = 0; i < s->n_procs; i++) {
        worker_proc *p = &s->procs[i];
        const slot_task *t;
        if (p->pid <= 0 || read_slot(p) != 0 ||
            !(t = slot_running_task(p->snap)))
            continue;
        types[n] = t->type;
        ids[n] = t->id;
        entry_ids[n] = t->entry_id;
        runs[n] = p->snap->run;
        which[n++] = i;
    }
    if (n == 0)
        return 0;
    if (cancel_check(&s->b, types, ids, entry_ids, n, cancelled) != 0)
        return -1;
    for (size_t k = 0; k < n; k++)
        if (cancelled[k] && lease_keeper_cancel(s->keeper, which[k], runs[k],
                                                entry_ids[k]))
            log_fields(WHARF_LOG_INFO, "task cancelled; asking it to end",
                       (log_field[]){LOG_STR("task", ids[k]),
                                     LOG_STR("type", types[k]),
                                     LOG_STR("worker",
                                             s->procs[which[k]].consumer)},
                       3);
    return 0;
}

/* ---- maintenance ---- */

/* Takes over the entries of silent hosts (idle past visibility_timeout):
 * each takeover is a failed attempt, so the task goes through retry/dead
 * and runs again on any host. */
static int take_over(supervisor *s)
{
    broker_job jobs[100];

    for (size_t q = 0; q < s->b.n_queues; q++) {
        broker_queue *queue = &s->b.queues[q];
        redisReply *r = broker_autoclaim(&s->b, queue,
                                         queue->pol->visibility_timeout_ms,
                                         100);
        size_t n;
        if (!r)
            return -1;
        n = broker_entries(&s->b, queue, r->element[1], jobs, 100);
        for (size_t i = 0; i < n; i++) {
            broker_job *j = &jobs[i];
            if (j->e.deleted) {
                j->finish = FINISH_NONE;
            } else if (j->e.bad[0]) {
                j->finish = FINISH_DEAD;
                j->next_attempt = j->e.task.attempt;
                j->reason = j->e.bad;
            } else {
                backoff_fail(j, "taken over: its host was silent longer "
                                "than visibility_timeout");
            }
        }
        if (n > 0 && broker_finish(&s->b, jobs, n) != 0) {
            freeReplyObject(r);
            return -1;
        }
        for (size_t i = 0; i < n; i++)
            if (jobs[i].finish != FINISH_NONE)
                metrics_outcome(s->m, metrics_type_find(s->m, queue->type),
                                jobs[i].outcome);
        for (size_t i = 0; i < n; i++)
            if (jobs[i].finish != FINISH_NONE)
                log_fields(WHARF_LOG_WARN, "task taken over from a silent host",
                           (log_field[]){LOG_STR("task", jobs[i].e.task.id),
                                         LOG_STR("type", queue->type),
                                         LOG_INT("attempt",
                                                 jobs[i].e.task.attempt),
                                         LOG_STR("outcome",
                                                 task_outcome_name(
                                                     jobs[i].outcome))},
                           4);
        freeReplyObject(r);
    }
    return 0;
}

static int64_t takeover_every_ms(const supervisor *s)
{
    int64_t every = INT64_MAX;
    for (size_t i = 0; i < s->n_types; i++)
        if (s->policies[i]->visibility_timeout_ms / 4 < every)
            every = s->policies[i]->visibility_timeout_ms / 4;
    return every < 100 ? 100 : every > 5000 ? 5000 : every;
}

/* Reads every queue's figures and publishes backlog and pressure; when
 * /metrics is served, reads those of the unserved types too. -1 when the
 * connection failed. */
static int refresh_figures(supervisor *s, int64_t now)
{
    int rc;

    s->figures_ms = now;
    if (pressure_refresh(&s->b, s->figures) != 0) {
        s->figures_ok = false;
        lost_connection(s, "reading queue figures");
        return -1;
    }
    s->figures_ok = true;
    /* Only /metrics reads them, and they never make the served types'
     * figures less sure (figures_ok). */
    if (!s->http)
        return 0;
    rc = known_types_refresh(&s->b, &s->known, s->figures + s->b.n_queues);
    if (rc == -1) {
        lost_connection(s, "reading the figures of unserved types");
        return -1;
    }
    if (rc != 0)
        log_msg(WHARF_LOG_WARN, "supervisor: out of memory reading the "
                                "figures of unserved types; /metrics shows "
                                "them as before");
    return 0;
}

/* One pass of the Redis housekeeping that is due (the leases and the
 * instance name are the lease keeper's). */
static void maintain(supervisor *s, int64_t now)
{
    if (ensure_connected(s, now) != 0)
        return;
    if (now - s->last_cancel_check_ms >= CANCEL_CHECK_EVERY_MS) {
        s->last_cancel_check_ms = now;
        if (check_cancels(s) != 0) {
            lost_connection(s, "looking for cancel requests");
            return;
        }
    }
    if (now - s->last_promote_ms >= TICK_MS) {
        s->last_promote_ms = now;
        if (broker_promote(&s->b) < 0) {
            lost_connection(s, "promoting due tasks");
            return;
        }
    }
    if (now - s->last_trim_ms >= TRIM_EVERY_MS) {
        s->last_trim_ms = now;
        if (broker_trim_dead(&s->b) < 0) {
            lost_connection(s, "trimming dead sets");
            return;
        }
    }
    if (now - s->last_takeover_ms >= takeover_every_ms(s)) {
        s->last_takeover_ms = now;
        if (take_over(s) != 0) {
            lost_connection(s, "taking over silent hosts' tasks");
            return;
        }
    }
    if (now - s->figures_ms >= FIGURES_EVERY_MS)
        refresh_figures(s, now);
}

/* ---- the HTTP endpoint ---- */

static worker_figures count_workers(supervisor *s)
{
    worker_figures w = {0, 0, 0, 0};

    for (size_t i = 0; i < s->n_procs; i++) {
        worker_proc *p = &s->procs[i];
        if (p->pid <= 0 || read_slot(p) != 0) {
            w.down++;
            continue;
        }
        switch (p->snap->state) {
        case SLOT_RUNNING:
            w.running++;
            break;
        case SLOT_STOPPING:
            w.stopping++;
            break;
        case SLOT_IDLE:
            w.idle++;
            break;
        default:
            w.down++;
            break;
        }
    }
    return w;
}

/* What the console shows, from what the loop already knows. */
static void console_view_of(void *arg, console_view *v)
{
    supervisor *s = arg;
    int64_t now = slots_now_ms();

    v->cfg = s->cfg;
    v->types = (const char *const *)s->types;
    v->n_types = s->b.n_queues;
    v->figures = s->figures;
    v->figures_ok = s->figures_ok;
    v->redis_up = broker_connected(&s->b);
    v->workers = count_workers(s);
    for (size_t i = 0; i < v->n_slots && i < s->n_procs; i++) {
        worker_proc *p = &s->procs[i];
        console_slot *out = &v->slots[i];
        const slot_task *t;
        memset(out, 0, sizeof(*out));
        out->consumer = p->consumer;
        out->pid = p->pid > 0 ? p->pid : 0;
        out->state = -1;
        out->restart_in_ms = p->restart_at_ms ? p->restart_at_ms - now : 0;
        if (p->pid <= 0 || read_slot(p) != 0)
            continue;
        out->state = p->snap->state;
        out->up_ms = now - p->forked_ms;
        out->batch_n = p->snap->batch_n;
        t = slot_running_task(p->snap);
        if (t) {
            snprintf(out->type, sizeof(out->type), "%s", t->type);
            snprintf(out->id, sizeof(out->id), "%s", t->id);
            out->running_ms = now - p->snap->started_ms;
        }
    }
}

static void text_reply(http_reply *reply, unsigned status, const char *body)
{
    reply->status = status;
    reply->content_type = "text/plain; charset=utf-8";
    reply->body = strdup(body);
    reply->len = reply->body ? strlen(reply->body) : 0;
}

/* /metrics, /healthz, /readyz. Answered from what the loop already knows
 * (the queue figures it refreshes every second, the connection's state),
 * never by a Redis call of its own: a slow Redis must not hold the loop
 * that enforces timeouts and renews leases. */
static void on_http(void *arg, const char *method, const char *path,
                    http_reply *reply)
{
    supervisor *s = arg;
    worker_figures workers;

    if (s->console && console_handles(path)) {
        console_http(s->console, method, path, reply);
        return;
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        text_reply(reply, 405, "only GET\n");
        return;
    }
    if (strcmp(path, "/healthz") == 0) {
        text_reply(reply, 200, "ok\n");
        return;
    }
    workers = count_workers(s);
    if (strcmp(path, "/readyz") == 0) {
        bool up = broker_connected(&s->b);
        if (!up)
            text_reply(reply, 503, "not ready: redis unreachable\n");
        else if (workers.idle + workers.running == 0)
            text_reply(reply, 503, "not ready: no worker up\n");
        else
            text_reply(reply, 200, "ready\n");
        return;
    }
    if (strcmp(path, "/metrics") == 0) {
        count_redis(s);
        reply->status = 200;
        reply->content_type = "text/plain; version=0.0.4; charset=utf-8";
        /* The served types first, then every other known type: one
         * array, as refresh_figures keeps it. */
        reply->body = metrics_render(
            s->m, s->figures, s->b.n_queues + s->known.n, &workers,
            broker_connected(&s->b) && s->figures_ok, &reply->len);
        return;
    }
    text_reply(reply, 404, "not found: try /metrics, /healthz, /readyz\n");
}

/* ---- start, reload, stop ---- */

/* Takes the instance name: waits, saying so, while another live host holds
 * it, up to a little longer than the key lives unrefreshed. */
static int acquire_instance(supervisor *s)
{
    int64_t deadline = slots_now_ms() + RUN_INSTANCE_TTL_MS + 2000;
    bool said = false;

    while (!got_stop) {
        int64_t now = slots_now_ms();
        int rc = ensure_connected(s, now);
        if (rc == -2) {
            log_msg(WHARF_LOG_ERROR, "%s", s->b.errstr);
            return EX_CONFIG;
        }
        if (rc == 0) {
            int held = broker_heartbeat(&s->b, s->instance_key,
                                        s->instance_value, RUN_INSTANCE_TTL_MS);
            if (held == 1)
                return 0;
            if (held < 0) {
                lost_connection(s, "heartbeat");
            } else if (now >= deadline) {
                log_fields(WHARF_LOG_ERROR,
                           "another live wharfd holds this instance name; "
                           "give this host its own [host] instance",
                           (log_field[]){LOG_STR("key", s->instance_key)}, 1);
                return EX_CONFIG;
            } else if (!said) {
                log_fields(WHARF_LOG_WARN,
                           "instance name held by another wharfd; waiting "
                           "for its key to expire",
                           (log_field[]){LOG_STR("key", s->instance_key)}, 1);
                said = true;
            }
        }
        /* /healthz and /readyz answer while we wait. */
        if (s->http) {
            struct pollfd pfd = {http_fd(s->http), POLLIN, 0};
            poll(&pfd, 1, 200);
            http_run(s->http);
        } else {
            usleep(200 * 1000);
        }
    }
    return -1;
}

static int setup_watch(supervisor *s)
{
    s->watch_fd = -1;
    if (!s->cfg->watch)
        return 0;
    s->watch_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (s->watch_fd < 0 ||
        inotify_add_watch(s->watch_fd, s->cfg->plugins_dir,
                          IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM |
                              IN_DELETE | IN_CREATE) < 0) {
        log_fields(WHARF_LOG_ERROR, "cannot watch plugins_dir",
                   (log_field[]){LOG_STR("dir", s->cfg->plugins_dir),
                                 LOG_STR("error", strerror(errno))},
                   2);
        if (s->watch_fd >= 0)
            close(s->watch_fd);
        s->watch_fd = -1;
        return -1;
    }
    return 0;
}

/* Reads inotify events; a change of a *.so asks for a reload soon. */
static void read_watch(supervisor *s, int64_t now)
{
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t n;

    while ((n = read(s->watch_fd, buf, sizeof(buf))) > 0) {
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            size_t len = ev->len ? strlen(ev->name) : 0;
            if (len > 3 && strcmp(ev->name + len - 3, ".so") == 0)
                s->reload_at_ms = now + WATCH_SETTLE_MS;
            p += sizeof(*ev) + ev->len;
        }
    }
}

/* SIGHUP (or a watched change): re-reads the manifest and starts checking
 * its plugins in a child; the loop goes on serving while it runs, and
 * finish_reload takes the outcome. */
static void start_reload(supervisor *s)
{
    char err[CONFIG_ERR_LEN];
    config *next = NULL;

    notify_reloading();
    log_fields(WHARF_LOG_INFO, "reloading",
               (log_field[]){LOG_STR("manifest", s->config_path)}, 1);
    if (s->check.running) {
        log_msg(WHARF_LOG_INFO, "reload: a check is under way; it is "
                                "started again for the latest manifest");
        check_abandon(&s->check);
        config_free(s->next_cfg);
        s->next_cfg = NULL;
    }
    if (config_load(s->config_path, &next, err, sizeof(err)) != 0 ||
        check_start(&s->check, next, next->init_timeout_ms, err,
                    sizeof(err)) != 0) {
        log_fields(WHARF_LOG_ERROR, "reload refused; serving as before",
                   (log_field[]){LOG_STR("error", err)}, 1);
        config_free(next);
        notify_ready();
        return;
    }
    s->next_cfg = next;
}

/* The reload's check is over: if the plugins passed, the new manifest
 * takes effect and the workers are replaced one at a time so they load
 * the new plugins; if not, says why and keeps serving as before. */
static void finish_reload(supervisor *s)
{
    char err[CONFIG_ERR_LEN];
    config *next = s->next_cfg;
    char **types = NULL;
    size_t n_types = 0;

    s->next_cfg = NULL;
    if (check_result(&s->check, next, &types, &n_types, err, sizeof(err)) !=
        0) {
        log_fields(WHARF_LOG_ERROR, "reload refused; serving as before",
                   (log_field[]){LOG_STR("error", err)}, 1);
        config_free(next);
        notify_ready();
        return;
    }
    if (next->workers != s->cfg->workers || next->watch != s->cfg->watch ||
        strcmp(next->redis_url, s->cfg->redis_url) != 0 ||
        strcmp(next->prefix, s->cfg->prefix) != 0 ||
        strcmp(next->instance, s->cfg->instance) != 0 ||
        (next->metrics_listen == NULL) != (s->cfg->metrics_listen == NULL) ||
        (next->metrics_listen &&
         strcmp(next->metrics_listen, s->cfg->metrics_listen) != 0))
        log_msg(WHARF_LOG_WARN, "reload: workers, watch, [redis] url, prefix, "
                                "instance and [metrics] listen take effect at "
                                "the next start");
    /* Those stay as they were; everything else is the new manifest's. */
    next->workers = s->cfg->workers;
    next->watch = s->cfg->watch;
    free(next->redis_url);
    next->redis_url = strdup(s->cfg->redis_url);
    free(next->prefix);
    next->prefix = strdup(s->cfg->prefix);
    free(next->instance);
    next->instance = strdup(s->cfg->instance);
    free(next->metrics_listen);
    next->metrics_listen =
        s->cfg->metrics_listen ? strdup(s->cfg->metrics_listen) : NULL;
    if (!next->redis_url || !next->prefix || !next->instance ||
        (s->cfg->metrics_listen && !next->metrics_listen)) {
        log_msg(WHARF_LOG_ERROR, "reload: out of memory; serving as before");
        config_free(next);
        check_free_types(types);
        notify_ready();
        return;
    }
    /* The old manifest and types are freed once the broker and the lease
     * keeper serve the new ones (setup_broker). */
    config *old_cfg = s->cfg;
    char **old_types = s->types;
    s->cfg = next;
    s->types = types;
    s->n_types = n_types;
    log_setup(s->cfg->log_level, s->cfg->log_format);
    setup_broker(s);
    config_free(old_cfg);
    check_free_types(old_types);
    for (size_t i = 0; i < s->n_procs; i++)
        s->procs[i].replace = true;
    log_fields(WHARF_LOG_INFO, "reload checked; replacing the workers",
               (log_field[]){LOG_INT("types", (int64_t)n_types)}, 1);
    notify_ready();
}

/* Asks a worker to stop through its slot: it finishes the task in hand
 * and exits 0. No signal, so no plugin system call is interrupted. */
static void ask_to_stop(worker_proc *p)
{
    p->retiring = true;
    if (p->pid > 0 && p->sl)
        atomic_store(&p->sl->stop, 1);
}

/* Replaces one worker at a time: the next one is asked to stop once the
 * one before it runs again. */
static void replace_workers(supervisor *s)
{
    for (size_t i = 0; i < s->n_procs; i++) {
        worker_proc *p = &s->procs[i];
        if (!p->replace)
            continue;
        if (p->pid > 0 && !p->retiring) {
            ask_to_stop(p);
        } else if (p->pid <= 0 && p->restart_at_ms == 0) {
            /* not running and not waiting: start it with the new plugins */
            p->replace = false;
            p->restart_at_ms = slots_now_ms();
        }
        return; /* one at a time */
    }
}

static void start_due_workers(supervisor *s, int64_t now)
{
    for (size_t i = 0; i < s->n_procs; i++) {
        worker_proc *p = &s->procs[i];
        if (p->pid <= 0 && p->restart_at_ms && now >= p->restart_at_ms &&
            retry_recovery(s, i))
            start_worker(s, i, now);
    }
}

static void begin_stop(supervisor *s, int code)
{
    if (s->stopping)
        return;
    s->stopping = true;
    notify_stopping(s->cfg->shutdown_timeout_ms + STOP_MARGIN_MS);
    s->exit_code = code;
    s->stop_deadline_ms = slots_now_ms() + s->cfg->shutdown_timeout_ms;
    log_fields(WHARF_LOG_INFO, "stopping: running tasks may finish",
               (log_field[]){LOG_INT("shutdown_timeout_ms",
                                     s->cfg->shutdown_timeout_ms)},
               1);
    for (size_t i = 0; i < s->n_procs; i++)
        ask_to_stop(&s->procs[i]);
    if (s->check.running) {
        check_abandon(&s->check);
        config_free(s->next_cfg);
        s->next_cfg = NULL;
    }
}

static bool any_worker_alive(const supervisor *s)
{
    for (size_t i = 0; i < s->n_procs; i++)
        if (s->procs[i].pid > 0)
            return true;
    return false;
}

static void drain_signal_pipe(void)
{
    char buf[64];
    while (read(signal_pipe[0], buf, sizeof(buf)) > 0)
        ;
}

/* A test hook: with WHARF_TEST_STALL_FILE=PATH, each pass of the loop
 * sleeps 5 s while PATH exists, as a loop held by a slow console, a slow
 * Redis or a loaded machine would, so the tests can show that leases and
 * deadlines do not depend on it. */
static void stall_if_asked(void)
{
    static const char *path;
    static bool looked;

    if (!looked) {
        path = getenv("WHARF_TEST_STALL_FILE");
        looked = true;
    }
    if (path && access(path, F_OK) == 0)
        usleep(5000 * 1000);
}

static int run_loop(supervisor *s)
{
    struct pollfd fds[4];
    char err[256];

    while (true) {
        int64_t now;
        nfds_t nfds = 1;
        int watch_at = -1;
        int tick = TICK_MS;

        fds[0].fd = signal_pipe[0];
        fds[0].events = POLLIN;
        if (s->watch_fd >= 0) {
            fds[nfds].fd = s->watch_fd;
            fds[nfds].events = POLLIN;
            watch_at = (int)nfds++;
        }
        if (s->http) {
            fds[nfds].fd = http_fd(s->http);
            fds[nfds].events = POLLIN;
            nfds++;
        }
        if (s->check.running) {
            fds[nfds].fd = s->check.fd; /* -1 once read: poll skips it */
            fds[nfds].events = POLLIN;
            nfds++;
            if (s->check.fd < 0)
                tick = 10; /* its child closed its end: reap it soon */
        }
        if (poll(fds, nfds, tick) < 0 && errno != EINTR)
            log_msg(WHARF_LOG_ERROR, "poll: %s", strerror(errno));
        drain_signal_pipe();
        now = slots_now_ms();
        if (watch_at >= 0 && (fds[watch_at].revents & POLLIN))
            read_watch(s, now);
        http_run(s->http);
        if (got_child) {
            got_child = 0;
            reap(s, now);
        }
        if (got_stop)
            begin_stop(s, EX_OK);
        if (s->stopping) {
            if (!any_worker_alive(s))
                break;
            if (now >= s->stop_deadline_ms) {
                log_msg(WHARF_LOG_WARN, "shutdown_timeout passed; killing "
                                        "the workers still running (their "
                                        "tasks stay pending)");
                for (size_t i = 0; i < s->n_procs; i++)
                    if (s->procs[i].pid > 0)
                        kill(s->procs[i].pid, SIGKILL);
                s->stop_deadline_ms = INT64_MAX;
            }
        } else {
            if (got_reload || (s->reload_at_ms && now >= s->reload_at_ms)) {
                got_reload = 0;
                s->reload_at_ms = 0;
                start_reload(s);
            }
            if (s->check.running && check_step(&s->check, now))
                finish_reload(s);
            if (s->embedded_on && embedded_check(&s->embedded, err,
                                                 sizeof(err)) != 0 &&
                embedded_start(&s->embedded, s->cfg->data_dir, err,
                               sizeof(err)) != 0)
                log_fields(WHARF_LOG_ERROR, "cannot restart embedded redis",
                           (log_field[]){LOG_STR("error", err)}, 1);
            replace_workers(s);
            start_due_workers(s, now);
        }
        if (s->watchdog_every_ms &&
            now - s->last_watchdog_ms >= s->watchdog_every_ms) {
            notify_watchdog(); /* the loop turns: timeouts hold */
            s->last_watchdog_ms = now;
        }
        count_redis(s);
        console_tick(s->console, now);
        maintain(s, now);
        stall_if_asked();
        if (lease_keeper_instance_lost(s->keeper) && !s->instance_lost) {
            s->instance_lost = true;
            log_fields(WHARF_LOG_ERROR,
                       "another wharfd took this instance name; stopping",
                       (log_field[]){LOG_STR("key", s->instance_key)}, 1);
            begin_stop(s, EX_CONFIG);
        }
    }
    return s->exit_code;
}

int supervisor_run(const char *config_path, config *cfg)
{
    supervisor s;
    char err[CONFIG_ERR_LEN];
    char host[256];
    int status = EX_CONFIG;

    memset(&s, 0, sizeof(s));
    s.check.fd = -1;
    s.config_path = config_path;
    s.cfg = cfg;
    s.watch_fd = -1;
    scripts_init();
    if (install_signals() != 0) {
        log_msg(WHARF_LOG_ERROR, "cannot install signal handlers: %s",
                strerror(errno));
        status = EX_OSERR;
        goto out;
    }
    if (check_run(cfg, cfg->init_timeout_ms, &s.types, &s.n_types, err,
                  sizeof(err)) != 0) {
        fprintf(stderr, "%s\n", err);
        goto out;
    }
    if (gethostname(host, sizeof(host)) != 0)
        snprintf(host, sizeof(host), "localhost");
    host[sizeof(host) - 1] = '\0';
    snprintf(s.consumer, sizeof(s.consumer), "%s:%s:supervisor", host,
             cfg->instance);
    snprintf(err, sizeof(err), "instance:%s:%s", host, cfg->instance);
    key_global(s.instance_key, sizeof(s.instance_key), cfg->prefix, err);
    snprintf(s.instance_value, sizeof(s.instance_value), "%ld-%08lx",
             (long)getpid(),
             (unsigned long)(backoff_random_unit() * 4294967295.0));
    if (strcmp(cfg->redis_url, "embedded") == 0) {
        if (embedded_start(&s.embedded, cfg->data_dir, err, sizeof(err)) != 0) {
            fprintf(stderr, "embedded redis: %s\n", err);
            status = EX_UNAVAILABLE;
            goto out;
        }
        s.embedded_on = true;
        log_fields(WHARF_LOG_INFO, "embedded redis-server started",
                   (log_field[]){LOG_STR("url", s.embedded.url),
                                 LOG_INT("pid", s.embedded.pid)},
                   2);
    }
    s.m = metrics_create();
    if (!s.m) {
        log_msg(WHARF_LOG_ERROR, "cannot map the metrics: %s",
                strerror(errno));
        status = EX_OSERR;
        goto out;
    }
    if (setup_broker(&s) != 0)
        goto out;
    if (cfg->metrics_listen) {
        s.http = http_start(cfg->metrics_listen, on_http, &s, err,
                            sizeof(err));
        if (!s.http) {
            fprintf(stderr, "%s: [metrics] listen: %s\n", cfg->file, err);
            status = EX_CONFIG;
            goto out;
        }
        log_fields(WHARF_LOG_INFO, "serving /metrics, /healthz, /readyz",
                   (log_field[]){LOG_STR("listen", cfg->metrics_listen)}, 1);
    }
    status = acquire_instance(&s);
    if (status != 0) {
        if (status < 0)
            status = EX_OK; /* stopped while waiting */
        goto out;
    }
    s.n_procs = cfg->workers;
    s.procs = calloc(s.n_procs, sizeof(*s.procs));
    if (!s.procs) {
        log_msg(WHARF_LOG_ERROR, "supervisor: out of memory");
        status = EX_OSERR;
        goto out;
    }
    setup_watch(&s);
    for (size_t i = 0; i < s.n_procs; i++) {
        snprintf(s.procs[i].consumer, sizeof(s.procs[i].consumer),
                 "%s:%s:%zu", host, cfg->instance, i);
        s.procs[i].restart_at_ms = slots_now_ms();
    }
    s.keeper = lease_keeper_start(s.cfg, (const char *const *)s.types,
                                  s.policies, s.n_types, s.n_procs,
                                  s.consumer, s.instance_key,
                                  s.instance_value, s.m, err, sizeof(err));
    if (!s.keeper) {
        log_msg(WHARF_LOG_ERROR, "%s", err);
        status = EX_OSERR;
        goto out;
    }
    snprintf(err, sizeof(err), "%s:%s", host, cfg->instance);
    s.console =
        console_create(err, s.embedded_on ? s.embedded.url : cfg->redis_url,
                       s.m, s.n_procs, console_view_of, &s);
    log_fields(WHARF_LOG_INFO, "wharfd started",
               (log_field[]){LOG_INT("workers", cfg->workers),
                             LOG_INT("types", (int64_t)s.n_types),
                             LOG_STR("instance", cfg->instance)},
               3);
    s.watchdog_every_ms = notify_watchdog_interval_ms();
    notify_ready();
    notify_status("serving %zu types with %u workers", s.n_types,
                  cfg->workers);
    status = run_loop(&s);
    reap(&s, slots_now_ms());
    /* Every worker is gone: nothing is left to renew. */
    lease_keeper_stop(s.keeper);
    s.keeper = NULL;
    /* A last try for what a worker that died while Redis was away left:
     * otherwise its tasks stay pending and run again at the next start. */
    for (size_t i = 0; i < s.n_procs; i++)
        if (s.procs[i].recovering && ensure_connected(&s, INT64_MAX) == 0)
            retry_recovery(&s, i);
    if (ensure_connected(&s, INT64_MAX) == 0)
        broker_release_key(&s.b, s.instance_key, s.instance_value);
    log_fields(WHARF_LOG_INFO, "wharfd stopped",
               (log_field[]){LOG_INT("status", status)}, 1);
out:
    lease_keeper_stop(s.keeper);
    http_stop(s.http);
    console_destroy(s.console);
    broker_destroy(&s.b);
    metrics_destroy(s.m);
    free(s.figures);
    known_types_free(&s.known);
    if (s.embedded_on)
        embedded_stop(&s.embedded);
    if (s.watch_fd >= 0)
        close(s.watch_fd);
    for (size_t i = 0; s.procs && i < s.n_procs; i++)
        drop_slot(&s.procs[i]);
    check_abandon(&s.check);
    config_free(s.next_cfg);
    free(s.procs);
    free(s.policies);
    check_free_types(s.types);
    config_free(s.cfg);
    return status;
}
