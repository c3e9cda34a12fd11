/* chaos: a test plugin whose payload says what to do, so tests and the
 * demo can make a task succeed, retry, fail, crash or hang on purpose.
 *
 *   ok          succeed
 *   fail:N      WHARF_RETRY while attempt <= N, then succeed
 *   fatal       WHARF_FAIL (dead at once)
 *   later:MS    on attempt 1, WHARF_RETRY with wharf_retry_in(MS), as
 *               an API that says when to come back; then succeed
 *   crash       SIGSEGV, raised with the default action (past any
 *               handler a sanitizer or the host set)
 *   segv        a write to a page that forbids it, as a wild pointer
 *               does: the host's handler sees it first
 *   overflow    recurse until the stack overflows (SIGSEGV on its guard
 *               page): the host's handler runs on a stack of its own
 *   abort       abort()
 *   sleep:MS    sleep MS milliseconds (resuming after EINTR), then succeed
 *   nap:MS      one nanosleep of MS ms, then succeed however it ended
 *   snooze:S    a plain sleep(S), then succeed however it ended
 *   polite:MS   work in 10 ms steps for MS ms or until wharf_cancelled,
 *               then succeed (the host throws a late success away)
 *   wait:PATH   wait (in 10 ms steps) until PATH exists, then succeed: a
 *               task held in flight until a test lets it go
 *   read:PATH   open PATH (a fifo) and read one byte: succeed if one came,
 *               retry with the reason if the read failed (EINTR included)
 *   exit:N      exit(N) in the middle of the task
 *   big:BYTES   succeed with a result of BYTES bytes of 'x'
 *
 * The result of a success is "ok attempt=N". With `runs_file = PATH` in
 * its manifest section it appends "<id> <attempt>\n" to PATH each time it
 * starts a task, and with `done_file = PATH` "<id>\n" each time it
 * completes one, so a test can count how often each task really ran.
 * With `init_sleep_ms = MS` its init sleeps that long (a hanging init).
 *
 * It is thread-safe: each call keeps its state on its own stack, and the
 * files are appended to with one write(2) per line. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <wharf/plugin.h>

/* Appends one line to the file named by the manifest key `key`, with one
 * write(2) in O_APPEND mode so lines from several workers never mix. */
static void record(wharf_ctx *ctx, const char *key, const wharf_task *task,
                   int with_attempt)
{
    const char *path = wharf_config(ctx, key);
    char line[256];
    int n, fd;

    if (!path)
        return;
    n = with_attempt
            ? snprintf(line, sizeof(line), "%s %u\n", task->id, task->attempt)
            : snprintf(line, sizeof(line), "%s\n", task->id);
    if (n < 0 || (size_t)n >= sizeof(line))
        return;
    fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        wharf_log(ctx, WHARF_LOG_ERROR, "%s %s: %s", key, path,
                  strerror(errno));
        return;
    }
    if (write(fd, line, (size_t)n) != n)
        wharf_log(ctx, WHARF_LOG_ERROR, "%s %s: short write", key, path);
    close(fd);
}

static wharf_status succeed(wharf_ctx *ctx, const wharf_task *task)
{
    char result[64];
    int n = snprintf(result, sizeof(result), "ok attempt=%u", task->attempt);
    if (wharf_result(ctx, result, (size_t)n) != 0)
        return WHARF_FAIL;
    record(ctx, "done_file", task, 0);
    return WHARF_OK;
}

/* read:PATH: one blocking open and read, as network code blocks in recv. */
static wharf_status read_one(wharf_ctx *ctx, const wharf_task *task,
                             const char *path)
{
    char byte;
    ssize_t n;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0) {
        wharf_error(ctx, "read: open %s: %s", path, strerror(errno));
        return WHARF_RETRY;
    }
    n = read(fd, &byte, 1);
    if (n != 1) {
        wharf_error(ctx, "read: %s: %s", path,
                    n < 0 ? strerror(errno) : "end of file");
        close(fd);
        return WHARF_RETRY;
    }
    close(fd);
    return succeed(ctx, task);
}

/* Parses the number after a "word:" command; -1 if there is none. */
static long long command_number(const char *text, const char *word)
{
    size_t n = strlen(word);
    char *end;
    long long v;

    if (strncmp(text, word, n) != 0 || text[n] != ':')
        return -1;
    errno = 0;
    v = strtoll(text + n + 1, &end, 10);
    if (errno != 0 || *end != '\0' || end == text + n + 1 || v < 0)
        return -1;
    return v;
}

/* overflow: each call keeps a page of its stack in use, and uses the
 * next call's result, so no compiler turns it into a loop. The bound is
 * far past any stack (a million pages), and read at run time. */
static volatile int deepest = 1 << 20;

static int deeper(int n)
{
    volatile char page[4096];

    if (n >= deepest)
        return 0;
    page[0] = (char)n;
    page[sizeof(page) - 1] = (char)n;
    return deeper(n + 1) + page[0] + page[sizeof(page) - 1];
}

static wharf_status process_business(wharf_ctx *ctx, const wharf_task *task)
{
    char command[512];
    long long n;

    record(ctx, "runs_file", task, 1);
    if (task->payload_len >= sizeof(command) ||
        memchr(task->payload, '\0', task->payload_len)) {
        wharf_error(ctx, "payload is not a chaos command");
        return WHARF_FAIL;
    }
    memcpy(command, task->payload, task->payload_len);
    command[task->payload_len] = '\0';

    if (strcmp(command, "ok") == 0)
        return succeed(ctx, task);
    if (strcmp(command, "fatal") == 0) {
        wharf_error(ctx, "fatal: asked to fail for good");
        return WHARF_FAIL;
    }
    if (strcmp(command, "crash") == 0) {
        /* As a wild pointer would, whatever handler a sanitizer set. */
        signal(SIGSEGV, SIG_DFL);
        raise(SIGSEGV);
        return WHARF_FAIL; /* not reached while SIGSEGV kills */
    }
    if (strcmp(command, "segv") == 0) {
        /* A store to a page that forbids it: a real fault, and not
         * undefined behaviour a sanitizer would stop at first. */
        volatile int *page = mmap(NULL, 4096, PROT_NONE,
                                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (page == MAP_FAILED) {
            wharf_error(ctx, "segv: mmap: %s", strerror(errno));
            return WHARF_FAIL;
        }
        *page = 1;
        return WHARF_FAIL; /* not reached */
    }
    if (strcmp(command, "overflow") == 0)
        return deeper(0) ? WHARF_FAIL : WHARF_FAIL; /* not reached */
    if (strcmp(command, "abort") == 0)
        abort();
    if ((n = command_number(command, "fail")) >= 0) {
        if (task->attempt <= (unsigned long long)n) {
            wharf_error(ctx, "fail:%lld: attempt %u fails", n, task->attempt);
            return WHARF_RETRY;
        }
        return succeed(ctx, task);
    }
    if ((n = command_number(command, "later")) >= 0) {
        /* As an API that answers "come back in n ms" does. */
        if (task->attempt > 1)
            return succeed(ctx, task);
        wharf_retry_in(ctx, n);
        wharf_error(ctx, "later:%lld: asked to come back in %lld ms", n, n);
        return WHARF_RETRY;
    }
    if ((n = command_number(command, "sleep")) >= 0) {
        struct timespec ts = {(time_t)(n / 1000), (long)(n % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
        return succeed(ctx, task);
    }
    if ((n = command_number(command, "nap")) >= 0) {
        struct timespec ts = {(time_t)(n / 1000), (long)(n % 1000) * 1000000L};
        nanosleep(&ts, NULL); /* as careless code does: EINTR ends it */
        return succeed(ctx, task);
    }
    if ((n = command_number(command, "snooze")) >= 0) {
        sleep((unsigned)n);
        return succeed(ctx, task);
    }
    if ((n = command_number(command, "polite")) >= 0) {
        struct timespec step = {0, 10 * 1000000L};
        for (long long waited = 0; waited < n && !wharf_cancelled(ctx);
             waited += 10)
            nanosleep(&step, NULL);
        if (wharf_cancelled(ctx))
            wharf_log(ctx, WHARF_LOG_INFO, "polite: cancelled, %lld ms left",
                      (long long)wharf_deadline_ms(ctx));
        return succeed(ctx, task);
    }
    if (strncmp(command, "read:", 5) == 0)
        return read_one(ctx, task, command + 5);
    if (strncmp(command, "wait:", 5) == 0) {
        struct timespec step = {0, 10 * 1000000L};
        while (access(command + 5, F_OK) != 0)
            nanosleep(&step, NULL);
        return succeed(ctx, task);
    }
    if ((n = command_number(command, "exit")) >= 0)
        exit((int)n);
    if ((n = command_number(command, "big")) >= 0) {
        char *data = malloc(n > 0 ? (size_t)n : 1);
        int rc;
        if (!data) {
            wharf_error(ctx, "big:%lld: out of memory", n);
            return WHARF_RETRY;
        }
        memset(data, 'x', (size_t)n);
        rc = wharf_result(ctx, data, (size_t)n);
        free(data);
        if (rc != 0) {
            wharf_error(ctx, "big:%lld: result refused by the host", n);
            return WHARF_FAIL;
        }
        return WHARF_OK;
    }
    wharf_error(ctx, "unknown chaos command '%s'", command);
    return WHARF_FAIL;
}

/* init_sleep_ms = MS: sleeps that long, for tests of a hanging init. */
static int init(wharf_ctx *ctx, void **state)
{
    const char *text = wharf_config(ctx, "init_sleep_ms");
    long long ms = text ? atoll(text) : 0;
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};

    *state = NULL;
    while (ms > 0 && nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
    return 0;
}

static const char *const chaos_types[] = {"chaos", NULL};

WHARF_PLUGIN(.name = "chaos", .version = "1.0.0", .types = chaos_types,
             .init = init, .process_business = process_business,
             .thread_safe = 1);
