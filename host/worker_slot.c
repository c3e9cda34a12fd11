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

/* Writes entry i of the slot from job i: its task and, once begun, its
 * lock token; nothing of it runs or has returned yet. */
static void put_entry(worker *w, slot *sl, size_t i)
{
    const broker_job *j = &w->jobs[i];
    slot_task *t = &sl->batch[i];

    snprintf(t->type, sizeof(t->type), "%s", j->queue->type);
    snprintf(t->id, sizeof(t->id), "%s", j->e.task.id);
    snprintf(t->entry_id, sizeof(t->entry_id), "%s", j->e.entry_id);
    snprintf(t->token, sizeof(t->token), "%s",
             j->begin == BEGIN_RUN ? j->token : "");
    t->locked_ms = w->begin_ms;
    t->run = 0;
    t->finishing = 0;
    t->crashed = 0;
    memset(&t->ret, 0, sizeof(t->ret)); /* nothing has returned yet */
}

/* The state the slot shows once a call starts or ends. */
static void set_state(worker *w, slot *sl)
{
    if (sl->n_running > 0)
        sl->state = SLOT_RUNNING;
    else if (w->threaded)
        sl->state = worker_pool_stopping(w) ? SLOT_STOPPING : SLOT_IDLE;
    else
        sl->state = worker_stopping(w) ? SLOT_STOPPING : SLOT_IDLE;
}

/* Tells the supervisor, through the slot, which entries this worker holds
 * (and, once begun, with which lock tokens), so it can renew their leases
 * and release them if this process dies. worker_setup made sure the slot
 * holds the whole batch. One thread only: a batch is entries [0, n). */
void worker_slot_publish(worker *w, size_t n)
{
    slot *sl = w->opts->status;

    if (!sl)
        return;
    if (n > sl->capacity)
        n = sl->capacity; /* cannot happen: see worker_setup */
    slot_write_begin(sl);
    die_in_slot_write_if_asked();
    for (size_t i = 0; i < n; i++)
        put_entry(w, sl, i);
    sl->batch_n = (uint32_t)n;
    sl->arena_used = 0;
    sl->n_running = 0;
    set_state(w, sl);
    slot_write_end(sl);
}

/* Several threads: entries come and go one by one, so each is written
 * on its own, and the table is shown whole (unused entries have no
 * type). The caller holds the worker's lock. */
void worker_slot_put(worker *w, const uint32_t *which, size_t n)
{
    slot *sl = w->opts->status;

    if (!sl)
        return;
    slot_write_begin(sl);
    die_in_slot_write_if_asked();
    for (size_t k = 0; k < n; k++)
        if (which[k] < sl->capacity)
            put_entry(w, sl, which[k]);
    sl->batch_n = sl->capacity;
    set_state(w, sl);
    slot_write_end(sl);
}

/* Several threads: entries that are finished (or were never begun) are
 * unused again. The caller holds the worker's lock. */
void worker_slot_clear(worker *w, const uint32_t *which, size_t n)
{
    slot *sl = w->opts->status;

    if (!sl)
        return;
    slot_write_begin(sl);
    for (size_t k = 0; k < n; k++) {
        slot_task *t;
        if (which[k] >= sl->capacity)
            continue;
        t = &sl->batch[which[k]];
        if (t->run != 0 && sl->n_running > 0)
            sl->n_running--; /* cannot happen: only ended calls finish */
        memset(t, 0, sizeof(*t));
    }
    sl->batch_n = sl->capacity;
    set_state(w, sl);
    slot_write_end(sl);
}

/* Where entry i's return is kept in the arena: one thread shares it
 * among the batch in order; several threads give each entry a fixed
 * share, as entries return and finish in any order. */
static bool arena_room(worker *w, slot *sl, uint32_t i, size_t len,
                       uint32_t *off)
{
    if (!w->threaded) {
        if (len > SLOT_ARENA_BYTES - sl->arena_used)
            return false;
        *off = sl->arena_used;
        sl->arena_used += (uint32_t)len;
        return true;
    }
    size_t share = SLOT_ARENA_BYTES / sl->capacity;
    if (len > share)
        return false;
    *off = (uint32_t)(share * i);
    return true;
}

/* Keeps what job i's plugin returned in the slot, where the supervisor
 * finds it if this process dies before its finish is sent, and marks its
 * call ended. False when its result and reason do not fit the arena: the
 * caller finishes it at once instead. With several threads the caller
 * holds the worker's lock. */
bool worker_slot_returned(worker *w, uint32_t i)
{
    slot *sl = w->opts->status;
    const broker_job *j = &w->jobs[i];
    size_t reason_len = j->reason ? strlen(j->reason) : 0;
    size_t result_len = j->finish == FINISH_OK && j->result ? j->result_len : 0;
    uint32_t off = 0;
    bool fits;

    if (!sl)
        return true;
    slot_write_begin(sl);
    fits =
        i < sl->capacity && arena_room(w, sl, i, reason_len + result_len, &off);
    if (fits) {
        slot_return *r = &sl->batch[i].ret;
        unsigned char *arena = slot_arena(sl);
        r->next_attempt = j->next_attempt;
        r->delay_ms = j->delay_ms;
        r->reason_off = off;
        r->reason_len = (uint32_t)reason_len;
        memcpy(arena + off, j->reason ? j->reason : "", reason_len);
        r->has_result = j->finish == FINISH_OK && j->result != NULL;
        r->result_off = off + (uint32_t)reason_len;
        r->result_len = (uint32_t)result_len;
        if (result_len)
            memcpy(arena + r->result_off, j->result, result_len);
        r->finish = (int)j->finish;
    }
    if (i < sl->capacity && sl->batch[i].run != 0) {
        sl->batch[i].run = 0;
        if (sl->n_running > 0)
            sl->n_running--;
    }
    set_state(w, sl);
    slot_write_end(sl);
    return fits;
}

/* Marks jobs [from, to) of the slot as finished already (finish_now). One
 * thread only. */
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

/* The finish of entries which[0..n) is about to be sent: from here their
 * locks go away with it, which the lease keeper must not take for lost
 * leases. which NULL: the whole batch (one thread). */
void worker_slot_finishing(worker *w, const uint32_t *which, size_t n)
{
    slot *sl = w->opts->status;

    if (!sl)
        return;
    slot_write_begin(sl);
    if (!which)
        n = sl->batch_n;
    for (size_t k = 0; k < n; k++) {
        uint32_t i = which ? which[k] : (uint32_t)k;
        if (i < sl->capacity)
            sl->batch[i].finishing = 1;
    }
    slot_write_end(sl);
}

/* Marks job i as running (slot_returned ends that). Returns the run
 * number that names this plugin call (0 without a slot). With several
 * threads the caller holds the worker's lock. */
uint32_t worker_slot_running(worker *w, uint32_t i)
{
    slot *sl = w->opts->status;
    uint32_t run;

    if (!sl || i >= sl->capacity)
        return 0;
    slot_write_begin(sl);
    sl->run = sl->run + 1 ? sl->run + 1 : 1;
    run = sl->run;
    sl->batch[i].run = run;
    sl->batch[i].started_ms = clock_ms();
    sl->batch[i].timeout_ms = w->jobs[i].e.timeout_ms; /* task or type */
    sl->batch[i].crashed = 0;
    sl->n_running++;
    sl->state = SLOT_RUNNING;
    slot_write_end(sl);
    return run;
}
