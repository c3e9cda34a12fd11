/* The worker slot in shared memory: sized per worker generation,
 * consistent copies, a writer that dies mid-write, and the supervisor's
 * requests seen across fork. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "slots.h"

static slot *copy_of(const slot *s)
{
    slot *c = malloc(slot_size(s));
    cr_assert(c != NULL);
    return c;
}

Test(slots, sized_for_its_capacity_and_zeroed)
{
    slot *s = slot_create(300);
    cr_assert(s != NULL);
    cr_assert_eq(s->capacity, 300);
    cr_assert_eq(s->n_running, 0);
    cr_assert_eq(s->state, SLOT_EMPTY);
    cr_assert_eq(s->batch_n, 0);
    cr_assert_geq(slot_size(s), sizeof(slot) + 300 * sizeof(slot_task));
    /* The last entry, its ask and the arena's last byte are writable:
     * the mapping covers them all, each apart from the others. */
    strcpy(s->batch[299].id, "last");
    atomic_store(&slot_asks(s)[299].cancel, 9);
    slot_arena(s)[SLOT_ARENA_BYTES - 1] = 1;
    cr_assert_str_eq(s->batch[299].id, "last");
    cr_assert_eq(atomic_load(&slot_asks(s)[299].cancel), 9);
    cr_assert_geq((unsigned char *)slot_asks(s),
                  (unsigned char *)&s->batch[300]);
    cr_assert_geq(slot_arena(s), (unsigned char *)&slot_asks(s)[300]);
    slot_destroy(s);
    slot_destroy(NULL);
    s = slot_create(0);
    cr_assert(s != NULL);
    cr_assert_eq(s->capacity, 1);
    slot_destroy(s);
}

Test(slots, read_copies_what_was_written)
{
    slot *s = slot_create(4);
    slot *c = copy_of(s);
    slot_write_begin(s);
    s->state = SLOT_RUNNING;
    s->batch_n = 2;
    s->n_running = 1;
    s->batch[1].run = 4;
    strcpy(s->batch[1].id, "task-b");
    slot_write_end(s);
    cr_assert_eq(slot_read(s, c), 0);
    cr_assert_eq(c->state, SLOT_RUNNING);
    cr_assert_eq(c->batch_n, 2);
    cr_assert_eq(c->n_running, 1);
    cr_assert_eq(c->batch[1].run, 4);
    cr_assert_str_eq(c->batch[1].id, "task-b");
    cr_assert_eq(c->capacity, 4);
    cr_assert_eq(s->writer, getpid());
    free(c);
    slot_destroy(s);
}

Test(slots, a_write_under_way_by_a_live_writer_is_not_read)
{
    slot *s = slot_create(2);
    slot *c = copy_of(s);
    slot_write_begin(s); /* this process: alive */
    cr_assert_eq(slot_read(s, c), -1);
    slot_write_end(s);
    cr_assert_eq(slot_read(s, c), 0);
    free(c);
    slot_destroy(s);
}

Test(slots, a_writer_that_died_mid_write_is_told_apart)
{
    slot *s = slot_create(8);
    slot *c = copy_of(s);
    pid_t pid = fork();
    int status;

    cr_assert(pid >= 0);
    if (pid == 0) {
        slot_write_begin(s);
        s->batch_n = 3;
        strcpy(s->batch[2].entry_id, "1-2");
        raise(SIGKILL); /* dies with the write half done */
        _exit(0);
    }
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFSIGNALED(status));
    cr_assert_eq(slot_read(s, c), -2,
                 "a dead writer's odd sequence must "
                 "not read as a busy one");
    /* The copy is made anyway: it names the entries the worker held. */
    cr_assert_eq(c->batch_n, 3);
    cr_assert_str_eq(c->batch[2].entry_id, "1-2");
    free(c);
    slot_destroy(s);
}

Test(slots, requests_reach_a_forked_worker)
{
    slot *s = slot_create(1);
    pid_t pid = fork();
    int status;

    cr_assert(pid >= 0);
    if (pid == 0) {
        for (int i = 0; i < 5000 && !atomic_load(&s->stop); i++)
            usleep(1000);
        _exit(atomic_load(&s->stop) &&
                      atomic_load(&slot_asks(s)[0].cancel) == 7
                  ? 0
                  : 1);
    }
    atomic_store(&slot_asks(s)[0].cancel, 7);
    atomic_store(&s->stop, 1);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "the worker did not see the stop and cancel requests");
    slot_destroy(s);
}

Test(slots, reading_leaves_the_asks_alone)
{
    slot *s = slot_create(2);
    slot *c = copy_of(s);
    atomic_store(&slot_asks(s)[1].cancel, 3);
    slot_write_begin(s);
    s->run = 3;
    s->batch_n = 2;
    s->batch[1].run = 3;
    strcpy(s->batch[1].type, "echo");
    slot_write_end(s);
    cr_assert_eq(slot_read(s, c), 0);
    cr_assert_eq(c->run, 3);
    /* The asks are read in place, from the live slot. */
    cr_assert(slot_run_asked_to_end(s, 1, 3));
    cr_assert_not(slot_run_asked_to_end(s, 0, 3), "another entry");
    free(c);
    slot_destroy(s);
}

Test(slots, the_running_tasks_are_entries_in_use)
{
    slot *s = slot_create(4);
    cr_assert_not(slot_task_running(s, 0), "an empty slot runs nothing");
    s->state = SLOT_RUNNING;
    s->batch_n = 3;
    strcpy(s->batch[1].type, "echo");
    strcpy(s->batch[1].id, "task-b");
    s->batch[1].run = 2;
    strcpy(s->batch[2].type, "echo");
    s->batch[2].run = 3;
    cr_assert(slot_task_running(s, 1));
    cr_assert(slot_task_running(s, 2), "two at once, on two threads");
    cr_assert_not(slot_task_running(s, 0), "an entry not in use");
    s->batch[1].type[0] = '\0';
    cr_assert_not(slot_task_running(s, 1), "a cleared entry");
    s->batch_n = 2;
    cr_assert_not(slot_task_running(s, 2), "past the batch: no task");
    cr_assert_not(slot_task_running(s, 9), "past the capacity");
    slot_destroy(s);
}

Test(slots, a_cancelled_run_is_that_run_of_that_entry_only)
{
    slot *s = slot_create(2);
    cr_assert_not(slot_run_cancelled(s, 0, 0), "0 names no run");
    cr_assert_not(slot_run_cancelled(s, 0, 1));
    atomic_store(&slot_asks(s)[0].cancel_requested, 5);
    cr_assert(slot_run_cancelled(s, 0, 5));
    cr_assert_not(slot_run_cancelled(s, 0, 6), "the next run is not");
    cr_assert_not(slot_run_cancelled(s, 1, 5), "nor another entry's");
    cr_assert_not(slot_run_cancelled(s, 2, 5), "nor one past the capacity");
    atomic_store(&slot_asks(s)[1].lease_lost, 8);
    cr_assert(slot_run_lease_lost(s, 1, 8));
    cr_assert_not(slot_run_lease_lost(s, 0, 8));
    slot_destroy(s);
}
