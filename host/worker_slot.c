/* What a worker tells the supervisor through its slot (slots.h,
 * worker_internal.h): the entries it holds and their lock tokens, the
 * run under way, what each plugin returned, and that the batch's finish
 * is on its way. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock_ms.h"
#include "worker_internal.h"

/* A test hook: with WHARF_TEST_DIE_IN_SLOT_WRITE=PATH, the first worker
 * that creates PATH kills itself in the middle of its first slot write,
 * as a crash there would, so the tests can show that its replacement's
 * slot works. */
static void die_in_slot_write_if_asked(void)
{
    static int asked = -1;
    const char *path;
    int fd;

    if (asked == 0)
        return;
    path = getenv("WHARF_TEST_DIE_IN_SLOT_WRITE");
    asked = 0;
    if (!path)
        return;
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0)
        raise(SIGKILL);
}

/* Tells the supervisor, through the slot, which entries this worker holds
 * (and, once begun, with which lock tokens), so it can renew their leases
 * and release them if this process dies. worker_setup made sure the slot
 * holds the whole batch. */
void worker_slot_publish(worker *w, size_t n)
{
    slot *sl = w->opts->status;

    if (!sl)
        return;
    if (n > sl->capacity)
        n = sl->capacity; /* cannot happen: see worker_setup */
    slot_write_begin(sl);
    die_in_slot_write_if_asked();
    for (size_t i = 0; i < n; i++) {
        const broker_job *j = &w->jobs[i];
        slot_task *t = &sl->batch[i];
        snprintf(t->type, sizeof(t->type), "%s", j->queue->type);
        snprintf(t->id, sizeof(t->id), "%s", j->e.task.id);
        snprintf(t->entry_id, sizeof(t->entry_id), "%s", j->e.entry_id);
        snprintf(t->token, sizeof(t->token), "%s",
                 j->begin == BEGIN_RUN ? j->token : "");
        t->locked_ms = w->begin_ms;
        memset(&t->ret, 0, sizeof(t->ret)); /* nothing has returned yet */
    }
    sl->batch_n = (uint32_t)n;
    sl->arena_used = 0;
    sl->finishing = 0;
    sl->running = SLOT_NONE;
    sl->state = worker_stopping(w) ? SLOT_STOPPING : SLOT_IDLE;
    slot_write_end(sl);
}

/* Keeps what job i's plugin returned in the slot, where the supervisor
 * finds it if this process dies before the batch's finish is sent, and
 * marks nothing running. False when its result and reason do not fit
 * the arena: the caller finishes it at once instead. */
bool worker_slot_returned(worker *w, uint32_t i)
{
    slot *sl = w->opts->status;
    const broker_job *j = &w->jobs[i];
    size_t reason_len = j->reason ? strlen(j->reason) : 0;
    size_t result_len = j->finish == FINISH_OK && j->result ? j->result_len : 0;
    bool fits;

    if (!sl)
        return true;
    fits = i < sl->capacity &&
           reason_len + result_len <= SLOT_ARENA_BYTES - sl->arena_used;
    slot_write_begin(sl);
    if (fits) {
        slot_return *r = &sl->batch[i].ret;
        unsigned char *arena = slot_arena(sl);
        r->next_attempt = j->next_attempt;
        r->delay_ms = j->delay_ms;
        r->reason_off = sl->arena_used;
        r->reason_len = (uint32_t)reason_len;
        memcpy(arena + sl->arena_used, j->reason ? j->reason : "", reason_len);
        sl->arena_used += (uint32_t)reason_len;
        r->has_result = j->finish == FINISH_OK && j->result != NULL;
        r->result_off = sl->arena_used;
        r->result_len = (uint32_t)result_len;
        if (result_len)
            memcpy(arena + sl->arena_used, j->result, result_len);
        sl->arena_used += (uint32_t)result_len;
        r->finish = (int)j->finish;
    }
    sl->running = SLOT_NONE;
    sl->state = worker_stopping(w) ? SLOT_STOPPING : SLOT_IDLE;
    slot_write_end(sl);
    return fits;
}

/* Marks jobs [from, to) of the slot as finished already (finish_now). */
void worker_slot_finished(worker *w, size_t from, size_t to)
{
    slot *sl = w->opts->status;

    if (!sl)
        return;
    slot_write_begin(sl);
    for (size_t i = from; i < to && i < sl->capacity; i++)
        sl->batch[i].ret.finished = 1;
    sl->arena_used = 0; /* every return kept there is finished */
    slot_write_end(sl);
}

/* The batch's finish is about to be sent: from here its locks go away
 * with it, which the lease keeper must not take for a lost lease. */
void worker_slot_finishing(worker *w)
{
    slot *sl = w->opts->status;

    if (!sl)
        return;
    slot_write_begin(sl);
    sl->finishing = 1;
    slot_write_end(sl);
}

/* Marks job i as running (slot_returned ends that). Returns the run
 * number that names this plugin call (0 without a slot). */
uint32_t worker_slot_running(worker *w, uint32_t i)
{
    slot *sl = w->opts->status;
    uint32_t run;

    if (!sl)
        return 0;
    slot_write_begin(sl);
    sl->running = i < sl->capacity ? i : SLOT_NONE;
    sl->run = sl->run + 1 ? sl->run + 1 : 1;
    sl->started_ms = clock_ms();
    sl->timeout_ms = w->jobs[i].queue->pol->timeout_ms;
    sl->state = SLOT_RUNNING;
    run = sl->run;
    slot_write_end(sl);
    return run;
}
