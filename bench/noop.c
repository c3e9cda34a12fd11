/* noop: the benchmark's plugin. It does nothing and returns WHARF_OK, so a
 * run measures the host and Redis alone. With the manifest key
 * latency_file set, each payload is the producer's send time (decimal
 * microseconds of CLOCK_REALTIME) and the plugin appends "now - sent" in
 * microseconds, one number a line, to that file. With sleep_us set, each
 * task sleeps that long first (a task that waits on I/O), for the tuning
 * guide's runs of tasks that take time. With crash_permille set, that
 * many tasks in a thousand (chosen by a hash of the id, so the same ones
 * every run) kill their worker with SIGSEGV at their first attempt: the
 * bench's row of poison tasks. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <wharf/plugin.h>

typedef struct noop_state {
    int fd;        /* latency_file, or -1 */
    long sleep_us; /* 0: no sleep */
    long crash_permille;
} noop_state;

/* Reads sleep_us and opens latency_file (O_APPEND: the workers share it,
 * and a short write with O_APPEND never interleaves). */
static int noop_init(wharf_ctx *ctx, void **state)
{
    const char *path = wharf_config(ctx, "latency_file");
    const char *sleep_us = wharf_config(ctx, "sleep_us");
    const char *crash = wharf_config(ctx, "crash_permille");
    noop_state *s = malloc(sizeof(*s));
    char *end;

    *state = NULL;
    if (!s) {
        wharf_error(ctx, "out of memory");
        return -1;
    }
    s->fd = -1;
    s->sleep_us = sleep_us ? strtol(sleep_us, &end, 10) : 0;
    if (sleep_us && (*end != '\0' || s->sleep_us < 0)) {
        wharf_error(ctx, "sleep_us '%s' is not a number of microseconds",
                    sleep_us);
        free(s);
        return -1;
    }
    s->crash_permille = crash ? strtol(crash, &end, 10) : 0;
    if (crash && (*end != '\0' || s->crash_permille < 0 ||
                  s->crash_permille > 1000)) {
        wharf_error(ctx, "crash_permille '%s' is not 0..1000", crash);
        free(s);
        return -1;
    }
    if (path) {
        s->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (s->fd < 0) {
            wharf_error(ctx, "cannot open latency_file '%s'", path);
            free(s);
            return -1;
        }
    }
    *state = s;
    return 0;
}

/* Appends now - sent (both microseconds of the realtime clock). A payload
 * that is not a number is skipped: it was not sent by the steady
 * producer. */
static void record_latency(int fd, const wharf_task *task)
{
    char text[32], line[32];
    struct timespec now;
    long long sent, now_us;
    char *end;
    int n;

    if (task->payload_len == 0 || task->payload_len >= sizeof(text))
        return;
    memcpy(text, task->payload, task->payload_len);
    text[task->payload_len] = '\0';
    sent = strtoll(text, &end, 10);
    if (*end != '\0' || clock_gettime(CLOCK_REALTIME, &now) != 0)
        return;
    now_us = (long long)now.tv_sec * 1000000 + now.tv_nsec / 1000;
    n = snprintf(line, sizeof(line), "%lld\n", now_us - sent);
    if (n > 0 && write(fd, line, (size_t)n) != n)
        return; /* a lost sample shows as a count below what was sent */
}

/* FNV-1a of the id: which tasks crash, the same every run. */
static unsigned long id_hash(const char *id)
{
    unsigned long h = 2166136261UL;

    for (; *id; id++)
        h = (h ^ (unsigned char)*id) * 16777619UL;
    return h;
}

static wharf_status noop_process(wharf_ctx *ctx, const wharf_task *task)
{
    const noop_state *s = wharf_state(ctx);

    if (s && s->crash_permille > 0 && task->attempt == 1 &&
        (long)(id_hash(task->id) % 1000) < s->crash_permille) {
        signal(SIGSEGV, SIG_DFL);
        raise(SIGSEGV);
    }
    if (s && s->fd >= 0)
        record_latency(s->fd, task);
    if (s && s->sleep_us > 0) {
        struct timespec ts = {s->sleep_us / 1000000,
                              (s->sleep_us % 1000000) * 1000};
        nanosleep(&ts, NULL);
    }
    return WHARF_OK;
}

static void noop_fini(wharf_ctx *ctx, void *state)
{
    noop_state *s = state;

    (void)ctx;
    if (s && s->fd >= 0)
        close(s->fd);
    free(s);
}

static const char *const noop_types[] = {"noop", NULL};

WHARF_PLUGIN(.name = "noop", .version = "1.0.0", .types = noop_types,
             .init = noop_init, .process_business = noop_process,
             .fini = noop_fini,
             .thread_safe = 1);
