/* The supervisor's workers: forking each (and, in the child, serving as
 * one), its restarts and their delays, and what is done when it exits or
 * dies (worker_exited, reap; its batch is supervisor_recovery.c's). */
#define _GNU_SOURCE /* pipe2, sigabbrev_np, waitid */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <unistd.h>

#include "child.h"
#include "clock_ms.h"
#include "log.h"
#include "worker.h"
#include "supervisor_internal.h"
#include "xmalloc.h"

static volatile sig_atomic_t worker_stop; /* in a worker process */

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

/* Entries a worker may hold under the current manifest: XREADGROUP
 * takes the smallest prefetch of the served types for every stream, and
 * a worker with threads holds a run for each thread besides. The most
 * threads the manifest gives any plugin bound what the worker's plugins
 * take (the worker knows which opted in; worker.c). */
static size_t slot_capacity(const supervisor *s)
{
    uint32_t count = 0;
    unsigned threads = s->cfg->threads;

    for (size_t i = 0; i < s->n_types; i++)
        if (count == 0 || s->policies[i]->prefetch < count)
            count = s->policies[i]->prefetch;
    for (size_t i = 0; i < s->cfg->n_plugins; i++)
        if (s->cfg->plugins[i].threads > threads)
            threads = s->cfg->plugins[i].threads;
    return (size_t)(count ? count : 1) * (s->n_types ? s->n_types : 1) +
           (threads > 1 ? threads : 0);
}

static void start_worker(supervisor *s, size_t index, int64_t now)
{
    worker_proc *p = &s->procs[index];
    pid_t pid;

    drop_slot(p);
    p->sl = slot_create(slot_capacity(s));
    p->snap = p->sl ? xcalloc(1, slot_size(p->sl)) : NULL;
    if (!p->sl) {
        log_msg(WHARF_LOG_ERROR, "cannot map a slot for worker %zu: %s", index,
                strerror(errno));
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
                             LOG_INT("slot_capacity", (int64_t)p->sl->capacity),
                             LOG_STR("worker", p->consumer)},
               4);
}

static void worker_exited(supervisor *s, size_t index, int status, int64_t now)
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
        in_task = p->snap->n_running > 0;
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
        restart_reason why = p->end.killed         ? RESTART_TIMEOUT
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

void reap(supervisor *s, int64_t now)
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
        if (s->embedded_on &&
            embedded_reaped(&s->embedded, pid, status, err, sizeof(err))) {
            log_fields(WHARF_LOG_ERROR, "embedded redis-server stopped",
                       (log_field[]){LOG_STR("error", err)}, 1);
            continue;
        }
        if (plugin_check_reaped(&s->check, pid, status))
            continue;
        for (size_t i = 0; i < s->n_procs; i++)
            if (s->procs[i].pid == pid)
                worker_exited(s, i, status, now);
    }
}

/* Asks a worker to stop through its slot: it finishes the task in hand
 * and exits 0. No signal, so no plugin system call is interrupted. */
void ask_to_stop(worker_proc *p)
{
    p->retiring = true;
    if (p->pid > 0 && p->sl)
        atomic_store(&p->sl->stop, 1);
}

/* Replaces one worker at a time: the next one is asked to stop once the
 * one before it runs again. */
void replace_workers(supervisor *s)
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
            p->restart_at_ms = clock_ms();
        }
        return; /* one at a time */
    }
}

void start_due_workers(supervisor *s, int64_t now)
{
    for (size_t i = 0; i < s->n_procs; i++) {
        worker_proc *p = &s->procs[i];
        if (p->pid <= 0 && p->restart_at_ms && now >= p->restart_at_ms &&
            retry_recovery(s, i))
            start_worker(s, i, now);
    }
}

bool any_worker_alive(const supervisor *s)
{
    for (size_t i = 0; i < s->n_procs; i++)
        if (s->procs[i].pid > 0)
            return true;
    return false;
}
