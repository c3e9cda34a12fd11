/* What the supervisor's files share (supervisor.c and its
 * supervisor_*.c, one job each): its state, its constants, and the calls
 * each file makes of one below it. Private to them. From the top:
 * supervisor.c (the loop, the start, the stop) uses the others. Below it
 * supervisor_reload.c, supervisor_http.c, supervisor_workers.c (forking,
 * reaping; a dead worker's batch goes to supervisor_recovery.c),
 * supervisor_maint.c (the Redis housekeeping) and supervisor_instance.c
 * (the instance name and the host's presence). At the bottom
 * supervisor_redis.c (the connection), supervisor_proc.c (a worker's
 * slot, read) and supervisor_signals.c. Below them all, the lease
 * keeper (lease.h) and the worker (worker.h). */
#ifndef WHARF_SUPERVISOR_INTERNAL_H
#define WHARF_SUPERVISOR_INTERNAL_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "broker.h"
#include "plugin_check.h"
#include "config.h"
#include "console.h"
#include "embedded.h"
#include "http.h"
#include "keys.h"
#include "known_types.h"
#include "lease.h"
#include "metrics.h"
#include "slots.h"

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
    pid_t pid; /* 0 when not running */
    char consumer[300];
    slot *sl;   /* this generation's slot, while it lives */
    slot *snap; /* a copy of sl, for reading it */
    int64_t forked_ms;
    int64_t restart_at_ms; /* when to fork it again; 0 = not waiting */
    unsigned crashes;      /* deaths in a row, each before STABLE_AFTER */
    lease_end end;         /* what the lease keeper did to it */
    bool recovering;       /* died while Redis was away: its slot is
                              kept, and it is not started again, until
                              recover_slot has recorded its tasks */
    int dead_status;       /* how it ended, for that recovery */
    bool retiring;         /* asked to stop: reload or shutdown */
    bool replace;          /* reload: stop it, then start it anew */
} worker_proc;

typedef struct supervisor {
    const char *config_path;
    config *cfg;
    struct schedule_timer *timer; /* the schedules' thread, or NULL */
    char **types; /* served types, NULL-terminated (from the check child) */
    size_t n_types;
    const policy **policies;
    worker_proc *procs;
    size_t n_procs;
    broker b;     /* the supervisor's own connection */
    bool b_ready; /* broker initialized for the current types */
    int64_t reconnect_at_ms;
    int64_t reconnect_delay_ms;
    bool redis_down_logged;
    char consumer[300];
    char name[300]; /* "<hostname>:<instance>", its presence's name */
    int64_t started_wall_ms;
    int64_t presence_ms; /* when its presence was last published */
    char instance_key[KEY_MAX];
    char instance_value[64];
    lease_keeper *keeper; /* leases, deadlines, the instance name */
    bool instance_lost;   /* the keeper found it taken: stopping */
    embedded_redis embedded;
    bool embedded_on;
    int64_t last_promote_ms, last_trim_ms, last_takeover_ms,
        last_cancel_poll_ms, last_limit_wake_ms;
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
    struct history_writer *history; /* the fleet's history (history_write.h) */
} supervisor;

/* supervisor_signals.c: the self-pipe and the flags of SIGTERM / SIGINT
 * (a stop), SIGHUP (a reload) and SIGCHLD. */
int signals_install(void);
int signals_fd(void);     /* poll it: readable when a signal came */
void signals_drain(void); /* empties the pipe */
bool stop_requested(void);
bool signals_take_reload(void); /* true once per SIGHUP (or several) */
bool signals_take_child(void);  /* true once per SIGCHLD (or several) */

/* supervisor_proc.c */
void drop_slot(worker_proc *p);
int read_slot(worker_proc *p);
void death_reason(int status, char *buf, size_t len);
worker_figures count_workers(supervisor *s);

/* supervisor_redis.c */
void count_redis(supervisor *s);
int setup_broker(supervisor *s);
int ensure_connected(supervisor *s, int64_t now);
void lost_connection(supervisor *s, const char *what);

/* supervisor_maint.c */
int refresh_figures(supervisor *s, int64_t now);
void maintain(supervisor *s, int64_t now);

/* supervisor_workers.c */
void reap(supervisor *s, int64_t now);
void ask_to_stop(worker_proc *p);
void replace_workers(supervisor *s);
void start_due_workers(supervisor *s, int64_t now);
bool any_worker_alive(const supervisor *s);

/* supervisor_recovery.c */
bool recover_slot(supervisor *s, size_t index, int status);
bool retry_recovery(supervisor *s, size_t index);

/* supervisor_reload.c */
int setup_watch(supervisor *s);
void read_watch(supervisor *s, int64_t now);
void start_reload(supervisor *s);
void finish_reload(supervisor *s);
void start_schedules(supervisor *s);

/* supervisor_http.c */
void console_view_of(void *arg, console_view *v);
void on_http(void *arg, const char *method, const char *path,
             http_reply *reply);

/* supervisor_instance.c */
int acquire_instance(supervisor *s);
/* Publishes this host's presence when due (and Redis is there). */
void publish_presence(supervisor *s, int64_t now);
/* At a stop: releases the instance name and withdraws the presence. */
void release_instance(supervisor *s);

#endif /* WHARF_SUPERVISOR_INTERNAL_H */
