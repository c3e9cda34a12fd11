/* Fixture: its result is when its run began and ended, "<start_ms>
 * <end_ms>" by CLOCK_REALTIME (the clock Redis's TIME reads on the same
 * machine), so a test can hold the starts against the schedule a
 * rate_limit allows and see whether runs of one key overlapped. Payload:
 * a number of ms to run, or a JSON object whose "ms" member is one and
 * whose "wait" member, if any, names a file: the run then writes
 * "<file>.in" and waits until the file exists (or the host cancels it)
 * before its ms. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/* The path after "wait":" in the payload into path, or "" for none. */
static void wait_path(const wharf_task *task, char *path, size_t len)
{
    char text[512];
    const char *at, *end;

    snprintf(text, sizeof(text), "%.*s",
             (int)(task->payload_len < 511 ? task->payload_len : 511),
             (const char *)task->payload);
    path[0] = '\0';
    if ((at = strstr(text, "\"wait\": \"")) == NULL ||
        (end = strchr(at + 9, '"')) == NULL)
        return;
    snprintf(path, len, "%.*s", (int)(end - at - 9), at + 9);
}

/* Says it is in (path.in), then waits until path exists. */
static void wait_for(wharf_ctx *ctx, const char *path)
{
    char in[600];
    struct timespec step = {0, 10 * 1000000L};
    FILE *f;

    snprintf(in, sizeof(in), "%s.in", path);
    if ((f = fopen(in, "w")) != NULL)
        fclose(f);
    while (access(path, F_OK) != 0 && !wharf_cancelled(ctx))
        nanosleep(&step, NULL);
}

static wharf_status process_business(wharf_ctx *ctx, const wharf_task *task)
{
    long long start = now_ms();
    long ms = run_ms(task);
    char gate[512];
    struct timespec left = {ms / 1000, (ms % 1000) * 1000000L};
    char result[64];
    int len;

    wait_path(task, gate, sizeof(gate));
    if (gate[0])
        wait_for(ctx, gate);
    while (ms > 0 && nanosleep(&left, &left) != 0 && errno == EINTR)
        ;
    len = snprintf(result, sizeof(result), "%lld %lld", start, now_ms());
    return wharf_result(ctx, result, (size_t)len) == 0 ? WHARF_OK : WHARF_FAIL;
}

static const char *const types[] = {"stamp", NULL};

WHARF_PLUGIN(.name = "stamp", .version = "1.0.0", .types = types,
             .process_business = process_business);
