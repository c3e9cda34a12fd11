/* The clocks, in milliseconds (and microseconds): the monotonic clock for
 * deadlines, pauses and durations, the wall clock for what is stored or
 * shown as a time of day. The one place wharf reads a clock; the host,
 * the CLI and the client library all use it. */
#ifndef WHARF_CLOCK_MS_H
#define WHARF_CLOCK_MS_H

#include <stdint.h>

/* Milliseconds of CLOCK_MONOTONIC (0 if it cannot be read). */
int64_t clock_ms(void);

/* Microseconds of CLOCK_MONOTONIC (0 if it cannot be read). */
int64_t clock_us(void);

/* Milliseconds since the epoch (CLOCK_REALTIME; 0 if it cannot be read). */
int64_t clock_wall_ms(void);

/* Sleeps ms milliseconds (none for ms <= 0), restarting after signals. */
void clock_sleep_ms(int64_t ms);

#endif /* WHARF_CLOCK_MS_H */
