/* Fixture: counts how many of its tasks run at once across every process
 * and host on the machine, in a file shared through flock: `counter =
 * PATH` in its manifest section holds "<running> <most>". Payload "MS":
 * the task runs MS milliseconds; its result is "ok". A test reads the
 * file to see the most that ever ran at once. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <wharf/plugin.h>

/* Adds delta to the running count in path under an exclusive lock, and
 * keeps the most seen. 0, or -1 with the reason in ctx. */
static int count(wharf_ctx *ctx, const char *path, int delta)
{
    char text[64] = "";
    long running = 0, most = 0;
    ssize_t got;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644), rc = -1;

    if (fd < 0) {
        wharf_error(ctx, "overlap: %s: %s", path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX) != 0) {
        wharf_error(ctx, "overlap: flock %s: %s", path, strerror(errno));
        goto out;
    }
    got = pread(fd, text, sizeof(text) - 1, 0);
    if (got > 0)
        sscanf(text, "%ld %ld", &running, &most);
    running += delta;
    if (running > most)
        most = running;
    snprintf(text, sizeof(text), "%ld %ld\n", running, most);
    if (ftruncate(fd, 0) != 0 ||
        pwrite(fd, text, strlen(text), 0) != (ssize_t)strlen(text)) {
        wharf_error(ctx, "overlap: writing %s: %s", path, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    close(fd); /* drops the lock */
    return rc;
}

static wharf_status process_business(wharf_ctx *ctx, const wharf_task *task)
{
    const char *path = wharf_config(ctx, "counter");
    char ms_text[16];
    struct timespec left;
    long ms;

    if (!path) {
        wharf_error(ctx, "overlap: no counter in its manifest section");
        return WHARF_FAIL;
    }
    snprintf(ms_text, sizeof(ms_text), "%.*s",
             (int)(task->payload_len < 15 ? task->payload_len : 15),
             (const char *)task->payload);
    ms = atol(ms_text);
    if (count(ctx, path, 1) != 0)
        return WHARF_FAIL;
    left.tv_sec = ms / 1000;
    left.tv_nsec = (ms % 1000) * 1000000L;
    while (nanosleep(&left, &left) != 0 && errno == EINTR)
        ;
    if (count(ctx, path, -1) != 0)
        return WHARF_FAIL;
    return wharf_result(ctx, "ok", 2) == 0 ? WHARF_OK : WHARF_FAIL;
}

static const char *const types[] = {"overlap", NULL};

WHARF_PLUGIN(.name = "overlap", .version = "1.0.0", .types = types,
             .process_business = process_business);
