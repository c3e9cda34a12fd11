/* Fixture: its result is when its run began and ended, "<start_ms>
 * <end_ms>" by CLOCK_REALTIME (the clock Redis's TIME reads on the same
 * machine), so a test can hold the starts against the schedule a
 * rate_limit allows and see whether runs of one key overlapped. Payload:
 * a number of ms to run, or a JSON object whose "ms" member is one. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <wharf/plugin.h>

static long long now_ms(void)
{
    struct timespec t;

    clock_gettime(CLOCK_REALTIME, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* The ms the payload asks for: the number after "ms": in an object, or
 * the whole payload. */
static long run_ms(const wharf_task *task)
{
    char text[256];
    const char *at;

    snprintf(text, sizeof(text), "%.*s",
             (int)(task->payload_len < 255 ? task->payload_len : 255),
             (const char *)task->payload);
    at = strstr(text, "\"ms\":");
    return atol(at ? at + 5 : text);
}

static wharf_status process_business(wharf_ctx *ctx, const wharf_task *task)
{
    long long start = now_ms();
    long ms = run_ms(task);
    struct timespec left = {ms / 1000, (ms % 1000) * 1000000L};
    char result[64];
    int len;

    while (ms > 0 && nanosleep(&left, &left) != 0 && errno == EINTR)
        ;
    len = snprintf(result, sizeof(result), "%lld %lld", start, now_ms());
    return wharf_result(ctx, result, (size_t)len) == 0 ? WHARF_OK : WHARF_FAIL;
}

static const char *const types[] = {"stamp", NULL};

WHARF_PLUGIN(.name = "stamp", .version = "1.0.0", .types = types,
             .process_business = process_business);
