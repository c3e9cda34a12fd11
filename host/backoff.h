/* Retry delays: linear (base * attempt) or exponential
 * (base * 2^(attempt-1)), capped by backoff_max, with +-jitter; or the
 * one a plugin asked for with wharf_retry_in, capped by max_retry_delay. */
#ifndef WHARF_BACKOFF_H
#define WHARF_BACKOFF_H

#include <stdint.h>

#include "broker.h"
#include "config.h"

/* The delay before the run after `attempt` (1 = the first run failed).
 * unit is a number in [0, 1) that picks the jitter (0.5 = none). */
int64_t backoff_delay_ms(const policy *pol, unsigned attempt, double unit);

/* Decides the fate of job j whose run failed (the plugin returned RETRY,
 * or its worker died): FINISH_RETRY with attempt + 1 after a backoff while
 * attempts remain, else FINISH_DEAD. reason is kept with the task. */
void backoff_fail(broker_job *j, const char *reason);

/* The delay of a retry whose plugin asked for ms (wharf_retry_in): ms,
 * at most the type's max_retry_delay. No jitter: the plugin was told a
 * time by what it calls. */
int64_t backoff_retry_in(const policy *pol, int64_t ms);

/* A number in [0, 1) from this process's generator (seeded once from
 * the kernel). For jitter, not for anything secret. */
double backoff_random_unit(void);

#endif /* WHARF_BACKOFF_H */
