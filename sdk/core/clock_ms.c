/* The clocks in milliseconds; see clock_ms.h. */
#include "clock_ms.h"

#include <errno.h>
#include <time.h>

static int64_t read_clock(clockid_t id, int64_t per_second)
{
    struct timespec ts;

    if (clock_gettime(id, &ts) != 0)
        return 0;
    return (int64_t)ts.tv_sec * per_second +
           ts.tv_nsec / (1000000000 / per_second);
}

int64_t clock_ms(void)
{
    return read_clock(CLOCK_MONOTONIC, 1000);
}

int64_t clock_us(void)
{
    return read_clock(CLOCK_MONOTONIC, 1000000);
}

int64_t clock_wall_ms(void)
{
    return read_clock(CLOCK_REALTIME, 1000);
}

void clock_sleep_ms(int64_t ms)
{
    struct timespec ts;

    if (ms <= 0)
        return;
    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

struct timespec clock_monotonic_after_us(int64_t us)
{
    struct timespec ts = {0, 0};

    clock_gettime(CLOCK_MONOTONIC, &ts);
    if (us < 0)
        us = 0;
    ts.tv_sec += (time_t)(us / 1000000);
    ts.tv_nsec += (long)(us % 1000000) * 1000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}
