/* The monotonic clock in milliseconds, for deadlines and pauses: what the
 * client library and the CLI wait with. */
#ifndef WHARF_MONOTONIC_H
#define WHARF_MONOTONIC_H

#include <stdint.h>

/* Milliseconds of CLOCK_MONOTONIC (0 if it cannot be read). */
int64_t monotonic_ms(void);

/* Sleeps ms milliseconds (none for ms <= 0), restarting after signals. */
void monotonic_sleep_ms(int64_t ms);

#endif /* WHARF_MONOTONIC_H */
