/* The supervisor (supervisor.h): its one poll loop, its start and its
 * stop. Signals arrive through a self-pipe (supervisor_signals.c), plugin
 * folder changes through inotify, and a 50 ms tick drives restarts, reloads,
 * HTTP and the Redis maintenance. The leases, the deadlines and the
 * instance name are the lease keeper's, threads of their own (lease.h),
 * so nothing this loop does can starve them. The loop's other jobs live
 * beside it, one a file (supervisor_internal.h lists them). */
#include "supervisor.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "backoff.h"
#include "clock_ms.h"
#include "history_write.h"
#include "log.h"
#include "notify.h"
#include "node_scripts.h"
#include "redis_url.h"
#include "schedule_timer.h"
#include "supervisor_internal.h"
#include "workflow.h"
#include "xmalloc.h"

static void begin_stop(supervisor *s, int code)
{
    if (s->stopping)
        return;
    s->stopping = true;
    notify_stopping(s->cfg->shutdown_timeout_ms + STOP_MARGIN_MS);
    s->exit_code = code;
    s->stop_deadline_ms = clock_ms() + s->cfg->shutdown_timeout_ms;
    log_fields(WHARF_LOG_INFO, "stopping: running tasks may finish",
               (log_field[]){
                   LOG_INT("shutdown_timeout_ms", s->cfg->shutdown_timeout_ms)},
               1);
    for (size_t i = 0; i < s->n_procs; i++)
        ask_to_stop(&s->procs[i]);
    if (s->check.running) {
        plugin_check_abandon(&s->check);
        config_free(s->next_cfg);
        s->next_cfg = NULL;
    }
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

/* Writes the fleet's history when a minute has ended (or, final, at a
 * stop: the minute under way), on the supervisor's connection. Within the
 * loop only while connected: a reconnect here would be one more wait on a
 * silent Redis between two turns of the loop, which answers /healthz and
 * enforces timeouts; the writer keeps the minutes until Redis is back. */
static void write_history(supervisor *s, bool final)
{
    int64_t wall = clock_wall_ms();

    if (!s->history || (!final && !history_writer_due(s->history, wall)))
        return;
    if (final ? ensure_connected(s, INT64_MAX) != 0 : !broker_connected(&s->b))
        return;
    if (history_writer_write(s->history, s->m, &s->b.pipe, s->cfg->prefix,
                             s->cfg->metrics_history_ms, wall, final) != 0) {
        broker_failed(&s->b, "writing the history", NULL);
        lost_connection(s, "writing the history");
    }
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

        fds[0].fd = signals_fd();
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
        signals_drain();
        now = clock_ms();
        if (watch_at >= 0 && (fds[watch_at].revents & POLLIN))
            read_watch(s, now);
        http_run(s->http);
        if (signals_take_child())
            reap(s, now);
        if (stop_requested())
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
            if (signals_take_reload() ||
                (s->reload_at_ms && now >= s->reload_at_ms)) {
                s->reload_at_ms = 0;
                start_reload(s);
            }
            if (s->check.running && plugin_check_step(&s->check, now))
                finish_reload(s);
            if (s->embedded_on &&
                embedded_check(&s->embedded, err, sizeof(err)) != 0 &&
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
        publish_presence(s, now);
        console_tick(s->console, now);
        maintain(s, now);
        write_history(s, false);
        workflow_sweep_tick(&s->b, now);
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

/* (Re)starts the schedules' timer on the manifest in effect: a reload
 * that adds, changes or removes schedules takes effect at once. */
void start_schedules(supervisor *s)
{
    schedule_timer_stop(s->timer);
    metrics_schedules_clear(s->m);
    s->timer = schedule_timer_start(
        s->cfg, s->embedded_on ? s->embedded.url : s->cfg->redis_url, s->m);
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
    node_scripts_check();
    if (signals_install() != 0) {
        log_msg(WHARF_LOG_ERROR, "cannot install signal handlers: %s",
                strerror(errno));
        status = EX_OSERR;
        goto out;
    }
    if (plugin_check_run(cfg, cfg->init_timeout_ms, &s.types, &s.n_types, err,
                         sizeof(err)) != 0) {
        fprintf(stderr, "%s\n", err);
        goto out;
    }
    if (gethostname(host, sizeof(host)) != 0)
        snprintf(host, sizeof(host), "localhost");
    host[sizeof(host) - 1] = '\0';
    snprintf(s.consumer, sizeof(s.consumer), "%s:%s:supervisor", host,
             cfg->instance);
    snprintf(s.name, sizeof(s.name), "%s:%s", host, cfg->instance);
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
        log_msg(WHARF_LOG_ERROR, "cannot map the metrics: %s", strerror(errno));
        status = EX_OSERR;
        goto out;
    }
    if (setup_broker(&s) != 0)
        goto out;
    if (cfg->metrics_listen) {
        s.http = http_start(cfg->metrics_listen, on_http, &s, err, sizeof(err));
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
    s.procs = xcalloc(s.n_procs, sizeof(*s.procs));
    setup_watch(&s);
    for (size_t i = 0; i < s.n_procs; i++) {
        snprintf(s.procs[i].consumer, sizeof(s.procs[i].consumer), "%s:%s:%zu",
                 host, cfg->instance, i);
        s.procs[i].restart_at_ms = clock_ms();
    }
    s.keeper = lease_keeper_start(
        s.cfg, (const char *const *)s.types, s.policies, s.n_types, s.n_procs,
        s.consumer, s.instance_key, s.instance_value, s.m, err, sizeof(err));
    if (!s.keeper) {
        log_msg(WHARF_LOG_ERROR, "%s", err);
        status = EX_OSERR;
        goto out;
    }
    start_schedules(&s);
    s.history = history_writer_create(s.name, s.instance_value);
    s.started_wall_ms = clock_wall_ms();
    /* The console answers on the metrics listener only: without it there
     * is no console (the host's presence is the supervisor's own). */
    if (s.http)
        s.console = console_create(
            s.name, s.embedded_on ? s.embedded.url : cfg->redis_url, s.m,
            s.n_procs, console_view_of, &s);
    log_fields(WHARF_LOG_INFO, "wharfd started",
               (log_field[]){LOG_INT("workers", cfg->workers),
                             LOG_INT("types", (int64_t)s.n_types),
                             LOG_STR("instance", cfg->instance)},
               3);
    {
        redis_url url;
        char why[256];

        /* Said once, at start, where an operator looks. */
        if (redis_url_parse(cfg->redis_url, &url, why, sizeof(why)) == 0 &&
            url.tls.enabled && url.tls.no_verify)
            log_msg(WHARF_LOG_WARN,
                    "tls_verify = no: the Redis server's certificate and "
                    "name are not checked, so anyone on the path can pose "
                    "as it");
        memset(&url, 0, sizeof(url));
    }
    s.watchdog_every_ms = notify_watchdog_interval_ms();
    notify_ready();
    notify_status("serving %zu types with %u workers", s.n_types, cfg->workers);
    status = run_loop(&s);
    reap(&s, clock_ms());
    schedule_timer_stop(s.timer);
    s.timer = NULL;
    /* Every worker is gone: nothing is left to renew. */
    lease_keeper_stop(s.keeper);
    s.keeper = NULL;
    /* A last try for what a worker that died while Redis was away left:
     * otherwise its tasks stay pending and run again at the next start. */
    for (size_t i = 0; i < s.n_procs; i++)
        if (s.procs[i].recovering && ensure_connected(&s, INT64_MAX) == 0)
            retry_recovery(&s, i);
    /* Every worker is gone and every count is in (the recovery's too):
     * the minute under way goes into the history now, so a clean stop
     * loses none of it. */
    write_history(&s, true);
    if (ensure_connected(&s, INT64_MAX) == 0)
        release_instance(&s);
    log_fields(WHARF_LOG_INFO, "wharfd stopped",
               (log_field[]){LOG_INT("status", status)}, 1);
out:
    schedule_timer_stop(s.timer);
    lease_keeper_stop(s.keeper);
    http_stop(s.http);
    console_destroy(s.console);
    history_writer_destroy(s.history);
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
    plugin_check_abandon(&s.check);
    config_free(s.next_cfg);
    free(s.procs);
    free(s.policies);
    plugin_check_free_types(s.types);
    config_free(s.cfg);
    return status;
}
