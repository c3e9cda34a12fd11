/* A worker's slot in shared memory; see slots.h. */
#include "slots.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* Rounded to whole pages: the mapping is that large anyway. */
static size_t bytes_for(size_t capacity)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t size =
        sizeof(slot) + capacity * (sizeof(slot_task) + sizeof(slot_ask)) +
        SLOT_ARENA_BYTES;

    return (size + page - 1) / page * page;
}

slot *slot_create(size_t capacity)
{
    slot *s;

    if (capacity == 0)
        capacity = 1;
    if (capacity > UINT32_MAX / 2) {
        errno = EINVAL;
        return NULL;
    }
    s = mmap(NULL, bytes_for(capacity), PROT_READ | PROT_WRITE,
             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (s == MAP_FAILED)
        return NULL;
    /* mmap zeroes it; only what is not zero is set. */
    s->capacity = (uint32_t)capacity;
    return s;
}

void slot_destroy(slot *s)
{
    if (s)
        munmap(s, bytes_for(s->capacity));
}

size_t slot_size(const slot *s)
{
    return sizeof(slot) + (size_t)s->capacity * sizeof(slot_task);
}

slot_ask *slot_asks(slot *s)
{
    return (slot_ask *)((unsigned char *)s + slot_size(s));
}

const slot_ask *slot_asks_const(const slot *s)
{
    return (const slot_ask *)((const unsigned char *)s + slot_size(s));
}

unsigned char *slot_arena(slot *s)
{
    return (unsigned char *)(slot_asks(s) + s->capacity);
}

void slot_write_begin(slot *s)
{
    atomic_store_explicit(&s->writer, getpid(), memory_order_relaxed);
    atomic_fetch_add_explicit(&s->seq, 1, memory_order_acq_rel);
    atomic_thread_fence(memory_order_release);
}

void slot_write_end(slot *s)
{
    atomic_thread_fence(memory_order_release);
    atomic_fetch_add_explicit(&s->seq, 1, memory_order_acq_rel);
}

/* The worker half: everything from seq on. */
static void copy_worker_half(const slot *s, slot *copy)
{
    size_t from = offsetof(slot, writer);

    copy->stop = atomic_load(&s->stop);
    copy->capacity = s->capacity;
    memcpy((char *)copy + from, (const char *)s + from, slot_size(s) - from);
}

/* True if the pid that began the write under way is gone. */
static int writer_died(const slot *s)
{
    pid_t pid = atomic_load_explicit(&s->writer, memory_order_relaxed);

    return pid > 0 && kill(pid, 0) != 0 && errno == ESRCH;
}

int slot_read(const slot *s, slot *copy)
{
    for (int tries = 0; tries < 100; tries++) {
        uint32_t before = atomic_load_explicit(&s->seq, memory_order_acquire);
        if (before & 1) {
            if (writer_died(s))
                break;
            continue;
        }
        /* The copy may race a write; the sequence check below throws such
         * a copy away, and nothing reads it before. */
        copy_worker_half(s, copy);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&s->seq, memory_order_acquire) == before) {
            atomic_store(&copy->seq, before);
            return 0;
        }
    }
    if (!writer_died(s))
        return -1;
    copy_worker_half(s, copy);
    if (copy->batch_n > copy->capacity)
        copy->batch_n = copy->capacity;
    return -2;
}

bool slot_task_running(const slot *s, uint32_t i)
{
    return i < s->batch_n && i < s->capacity && s->batch[i].run != 0 &&
           s->batch[i].type[0];
}

bool slot_run_cancelled(const slot *s, uint32_t i, uint32_t run)
{
    return run != 0 && i < s->capacity &&
           atomic_load(&slot_asks_const(s)[i].cancel_requested) == run;
}

bool slot_run_lease_lost(const slot *s, uint32_t i, uint32_t run)
{
    return run != 0 && i < s->capacity &&
           atomic_load(&slot_asks_const(s)[i].lease_lost) == run;
}

bool slot_run_asked_to_end(const slot *s, uint32_t i, uint32_t run)
{
    return run != 0 && i < s->capacity &&
           atomic_load(&slot_asks_const(s)[i].cancel) == run;
}
