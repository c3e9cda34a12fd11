/* How the lease keeper's two threads keep out of the way of forks and
 * of the supervisor (lease_internal.h): the fork gate, a thread's start,
 * its naps. */
#define _GNU_SOURCE /* pthread_rwlockattr_setkind_np */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "clock_ms.h"
#include "lease_internal.h"

/* Forks wait for the keeper's threads to be between passes (readers of
 * this gate while they work): a child forked in the middle of a pass
 * would hold memory only a thread it does not have points to (a
 * connection being made, a reply being read), which is a leak to
 * LeakSanitizer and nothing anyone could free. The wait is one pass at
 * most: microseconds, or a Redis command's timeout while Redis hangs.
 * A thread's start is outside any pass and allocates too (the C library
 * and a sanitizer's allocator set the thread up), so lease_keeper_start
 * returns only once both threads are past it (lease_thread_entered): a child
 * forked in that start would inherit the allocator's lock held and hang
 * in its first malloc or at exit. */
static pthread_rwlock_t fork_gate;
static pthread_once_t fork_gate_once = PTHREAD_ONCE_INIT;
static atomic_int keepers_running;

static void gate_init(void)
{
    pthread_rwlockattr_t attr;

    pthread_rwlockattr_init(&attr);
    /* A fork waiting is not starved by the two readers taking turns. */
    pthread_rwlockattr_setkind_np(&attr,
                                  PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&fork_gate, &attr);
    pthread_rwlockattr_destroy(&attr);
}

static void before_fork(void)
{
    if (atomic_load(&keepers_running) > 0)
        pthread_rwlock_wrlock(&fork_gate);
}

static void after_fork_parent(void)
{
    if (atomic_load(&keepers_running) > 0)
        pthread_rwlock_unlock(&fork_gate);
}

/* The child has no keeper threads: its forks need not wait for any. */
static void after_fork_child(void)
{
    atomic_store(&keepers_running, 0);
    gate_init();
}

static void register_fork_gate(void)
{
    gate_init();
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

void lease_gate_setup(void)
{
    pthread_once(&fork_gate_once, register_fork_gate);
}

void lease_gate_keeper_started(void)
{
    atomic_fetch_add(&keepers_running, 1);
}

void lease_gate_keeper_stopped(void)
{
    atomic_fetch_sub(&keepers_running, 1);
}

void lease_gate_enter(void)
{
    pthread_rwlock_rdlock(&fork_gate);
}

void lease_gate_leave(void)
{
    pthread_rwlock_unlock(&fork_gate);
}

void lease_nap(lease_keeper *k, int64_t ms, bool for_reload)
{
    struct timespec until = clock_monotonic_after_us(ms * 1000);

    pthread_mutex_lock(&k->lock);
    if (!(for_reload && k->pending) && !atomic_load(&k->stop))
        pthread_cond_timedwait(&k->wake, &k->lock, &until);
    pthread_mutex_unlock(&k->lock);
}

/* Each thread's first step: lease_keeper_start waits for both. */
void lease_thread_entered(lease_keeper *k)
{
    pthread_mutex_lock(&k->lock);
    k->threads_in++;
    pthread_cond_broadcast(&k->applied);
    pthread_mutex_unlock(&k->lock);
}
