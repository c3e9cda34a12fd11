/* Retry delays: linear (base * attempt) or exponential
 * (base * 2^(attempt-1)), capped by backoff_max, with +-jitter. */
#ifndef WHARF_BACKOFF_H
#define WHARF_BACKOFF_H

#include <stdint.h>

#include "config.h"

/* The delay before the run after `attempt` (1 = the first run failed).
 * unit is a number in [0, 1) that picks the jitter (0.5 = none). */
int64_t backoff_delay_ms(const policy *pol, unsigned attempt, double unit);

/* A number in [0, 1) from this process's generator (seeded once from
 * the kernel). For jitter, not for anything secret. */
double backoff_random_unit(void);

#endif /* WHARF_BACKOFF_H */
