/* The clocks, in milliseconds (and microseconds): the monotonic clock for
 * deadlines, pauses and durations, the wall clock for what is stored or
 * shown as a time of day. The one place wharf reads a clock; the host,
 * the CLI and the client library all use it. */
#ifndef WHARF_CLOCK_MS_H
#define WHARF_CLOCK_MS_H

#include <stdint.h>
#include <time.h>

/* Milliseconds of CLOCK_MONOTONIC (0 if it cannot be read). */
int64_t clock_ms(void);

/* Microseconds of CLOCK_MONOTONIC (0 if it cannot be read). */
int64_t clock_us(void);

/* Milliseconds since the epoch (CLOCK_REALTIME; 0 if it cannot be read). */
int64_t clock_wall_ms(void);

/* The CLOCK_MONOTONIC time us microseconds from now, as
 * pthread_cond_timedwait takes it (a condition variable set to that
 * clock). */
struct timespec clock_monotonic_after_us(int64_t us);

/* Sleeps ms milliseconds (none for ms <= 0), restarting after signals. */
void clock_sleep_ms(int64_t ms);

#endif /* WHARF_CLOCK_MS_H */
