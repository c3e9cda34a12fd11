/* When a worker stops (worker_internal.h): its stop requests (the
 * caller's flag, the slot's stop, a pending SIGTERM or SIGINT), how long
 * a held batch is still worth sending, and its sleeps, in steps short
 * enough to see a stop. */
#include <signal.h>
#include <stdatomic.h>
#include <time.h>

#include "clock_ms.h"
#include "worker_internal.h"

/* Reads a SIGTERM or SIGINT sent to this process: the worker keeps them
 * blocked (see child_block_stops), so they wait, pending, to be read here
 * between tasks rather than interrupting a plugin's system call. Once per
 * claim and per sleep step: a system call, kept off the per-task path. */
void worker_read_signals(worker *w)
{
    sigset_t pending;

    if (!w->signalled && sigpending(&pending) == 0 &&
        (sigismember(&pending, SIGTERM) == 1 ||
         sigismember(&pending, SIGINT) == 1))
        w->signalled = true;
}

/* True once a stop was asked for: by the caller's flag, by the supervisor
 * through the slot, or by a pending SIGTERM / SIGINT. */
bool worker_stopping(worker *w)
{
    bool stop = *w->stop != 0 || w->signalled;

    if (!stop && w->opts->status)
        stop = atomic_load_explicit(&w->opts->status->stop,
                                    memory_order_relaxed) != 0;
    if (stop && w->stop_seen_ms == 0)
        w->stop_seen_ms = clock_ms() | 1; /* never 0 */
    return stop;
}

/* While stopping, a batch whose finish the connection cut off is still
 * worth sending: until shutdown_timeout is nearly over (the supervisor
 * kills a worker at its end), the worker keeps trying. */
bool worker_keep_trying(worker *w)
{
    if (!worker_stopping(w))
        return true;
    return w->held != HELD_NONE && !worker_grace_over(w);
}

bool worker_grace_over(worker *w)
{
    return worker_stopping(w) &&
           clock_ms() - w->stop_seen_ms >=
               w->cfg->shutdown_timeout_ms - w->cfg->shutdown_timeout_ms / 10;
}

void worker_sleep_ms(worker *w, int64_t ms)
{
    /* In short steps, so a stop request is seen quickly. */
    while (ms > 0) {
        worker_read_signals(w);
        if (!worker_keep_trying(w))
            break;
        int64_t step = ms > 50 ? 50 : ms;
        struct timespec ts = {0, (long)step * 1000000L};
        nanosleep(&ts, NULL);
        ms -= step;
    }
}
