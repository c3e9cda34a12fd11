/* Retry delays; see backoff.h. */
#include "backoff.h"

#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

int64_t backoff_delay_ms(const policy *pol, unsigned attempt, double unit)
{
    double delay;

    if (attempt < 1)
        attempt = 1;
    if (pol->backoff == BACKOFF_EXPONENTIAL) {
        /* 2^62 ms is beyond any cap; stop doubling long before overflow. */
        unsigned shift = attempt - 1 > 62 ? 62 : attempt - 1;
        delay = (double)pol->backoff_base_ms * (double)(UINT64_C(1) << shift);
    } else {
        delay = (double)pol->backoff_base_ms * attempt;
    }
    if (pol->backoff_max_ms > 0 && delay > (double)pol->backoff_max_ms)
        delay = (double)pol->backoff_max_ms;
    /* unit 0 -> -jitter, 0.5 -> none, 1 -> +jitter */
    delay *= 1.0 + (unit * 2.0 - 1.0) * pol->jitter_pct / 100.0;
    if (delay < 0)
        delay = 0;
    return (int64_t)delay;
}

void backoff_fail(broker_job *j, const char *reason)
{
    const wharf_task *t = &j->e.task;
    const policy *pol = j->queue->pol;

    /* The task's own max_attempts when it was enqueued with one (entry.c
     * set it), else the type's. */
    unsigned max_attempts =
        t->max_attempts ? t->max_attempts : pol->max_attempts;

    j->reason = reason;
    if (t->attempt < max_attempts) {
        j->finish = FINISH_RETRY;
        j->next_attempt = t->attempt + 1;
        j->delay_ms = backoff_delay_ms(pol, t->attempt, backoff_random_unit());
    } else {
        j->finish = FINISH_DEAD;
        j->next_attempt = t->attempt;
    }
}

int64_t backoff_retry_in(const policy *pol, int64_t ms)
{
    return ms < pol->max_retry_delay_ms ? ms : pol->max_retry_delay_ms;
}

double backoff_random_unit(void)
{
    /* One stream per thread (the supervisor's lease keeper draws too). */
    static _Thread_local unsigned short state[3];
    static _Thread_local pid_t seeded_for;

    /* Reseed in each forked worker, so workers do not jitter in step. */
    if (seeded_for != getpid()) {
        if (getrandom(state, sizeof(state), 0) != (ssize_t)sizeof(state)) {
            unsigned long t = (unsigned long)time(NULL) ^ (unsigned long)getpid();
            state[0] = (unsigned short)t;
            state[1] = (unsigned short)(t >> 16);
            state[2] = (unsigned short)(t >> 32);
        }
        seeded_for = getpid();
    }
    return erand48(state);
}
