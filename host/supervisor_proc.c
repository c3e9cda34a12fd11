/* A worker process as the rest of the supervisor sees it: a
 * consistent copy of its slot, its slot unmapped, how it ended, and the
 * workers counted by what they do. Below the files that fork, reap and
 * recover workers and those that read what they do. */
#define _GNU_SOURCE /* sigabbrev_np */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "supervisor_internal.h"

/* Unmaps a worker's slot once nothing reads it any more. */
void drop_slot(worker_proc *p)
{
    slot_destroy(p->sl);
    p->sl = NULL;
    free(p->snap);
    p->snap = NULL;
}

/* A consistent copy of p's slot in p->snap: 0, or -1 when there is none
 * (no worker, or it kept writing). A copy torn by a writer that died
 * mid-write is refused here; recovery reads it on its own terms. */
int read_slot(worker_proc *p)
{
    if (!p->sl || !p->snap)
        return -1;
    return slot_read(p->sl, p->snap) == 0 ? 0 : -1;
}

/* Names how a worker ended, for a task it was running that no request
 * to end and no fault of its own singles out. */
void death_reason(int status, char *buf, size_t len)
{
    if (WIFSIGNALED(status))
        snprintf(buf, len, "worker crashed: SIG%s",
                 sigabbrev_np(WTERMSIG(status)) ? sigabbrev_np(WTERMSIG(status))
                                                : "UNKNOWN");
    else
        snprintf(buf, len, "worker exited with status %d during the task",
                 WEXITSTATUS(status));
}

/* The workers by what they do now, read from their slots. */
worker_figures count_workers(supervisor *s)
{
    worker_figures w = {0, 0, 0, 0, 0};

    for (size_t i = 0; i < s->n_procs; i++) {
        worker_proc *p = &s->procs[i];
        if (p->pid <= 0 || read_slot(p) != 0) {
            w.down++;
            continue;
        }
        w.in_flight += p->snap->n_running;
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
