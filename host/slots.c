/* The slot table in shared memory; see slots.h. */
#include "slots.h"

#include <string.h>
#include <sys/mman.h>
#include <time.h>

int slots_create(slot_table *t, size_t n_slots, size_t capacity)
{
    size_t size;
    void *base;

    memset(t, 0, sizeof(*t));
    /* Each slot starts on its own 64-byte line. */
    size = (sizeof(slot) + capacity * sizeof(slot_task) + 63) & ~(size_t)63;
    base = mmap(NULL, size * n_slots, PROT_READ | PROT_WRITE,
                MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED)
        return -1;
    t->base = base;
    t->n_slots = n_slots;
    t->capacity = capacity;
    t->slot_size = size;
    for (size_t i = 0; i < n_slots; i++)
        slots_get(t, i)->running = SLOT_NONE;
    return 0;
}

void slots_destroy(slot_table *t)
{
    if (t->base)
        munmap(t->base, t->slot_size * t->n_slots);
    memset(t, 0, sizeof(*t));
}

slot *slots_get(const slot_table *t, size_t i)
{
    return (slot *)((char *)t->base + i * t->slot_size);
}

void slot_write_begin(slot *s)
{
    atomic_fetch_add_explicit(&s->seq, 1, memory_order_acq_rel);
    atomic_thread_fence(memory_order_release);
}

void slot_write_end(slot *s)
{
    atomic_thread_fence(memory_order_release);
    atomic_fetch_add_explicit(&s->seq, 1, memory_order_acq_rel);
}

int slot_read(const slot_table *t, const slot *s, slot *copy)
{
    for (int tries = 0; tries < 100; tries++) {
        uint32_t before = atomic_load_explicit(&s->seq, memory_order_acquire);
        if (before & 1)
            continue;
        /* The copy may race a write; the sequence check below throws such
         * a copy away, and nothing reads it before. */
        memcpy((char *)copy + sizeof(copy->seq), (const char *)s + sizeof(s->seq),
               t->slot_size - sizeof(s->seq));
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&s->seq, memory_order_acquire) == before)
            return 0;
    }
    return -1;
}

int64_t slots_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
