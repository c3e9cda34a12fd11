/* A worker with several threads (worker_internal.h). */
#include <pthread.h>

#include "worker_internal.h"

void worker_lock(worker *w)
{
    if (w->pool)
        pthread_mutex_lock(&w->pool->lock);
}

void worker_unlock(worker *w)
{
    if (w->pool)
        pthread_mutex_unlock(&w->pool->lock);
}
