/* coprocess: handlers in any language. Each worker starts one long-lived
 * handler program per [plugin.NAME] section and hands it tasks over a pair
 * of pipes, in the frames of coprocess_frame.h (docs/handlers.md):
 *
 * [plugin.py]
 * path = coprocess.so
 * types = resize, notify
 * command = python3 -m wharf.handler myapp.handlers  ; words, no shell
 * cwd = /srv/myapp                ; default: the worker's
 * env = PYTHONUNBUFFERED=1        ; NAME=VALUE words, added to PATH, HOME,
 *                                 ; LANG, LC_ALL, TZ and TMPDIR
 * inflight = 1                    ; tasks the program may hold at once
 *
 * The host keeps every guarantee (locks, retries, the dead set, timeouts,
 * crash isolation), the program only answers. A program that exits, is
 * killed or writes a malformed frame fails the attempts it held with the
 * reason and is started again: at once after a death in a task, else
 * after a delay that grows as a worker's does; a task past its deadline (or
 * cancelled) is cancelled through the protocol, and the program killed if it
 * has not answered within CANCEL_GRACE_MS; its stderr lines go to the host's
 * log.
 *
 * Thread-safe: calls at once (a worker's threads, `[plugin.NAME]
 * threads`) share the worker's one program. Each puts a request in the
 * table below and waits on its own condition for its answer; one waiting
 * call at a time is the reader: it reads the program's stdout and stderr
 * and hands each answer to its call, waking that call alone. The reader
 * stays the reader until its own answer comes, then hands the role to
 * one other waiting call, so no thread of the plugin's own runs beside
 * the host's and an answer costs one wake-up, whatever the number of
 * calls waiting. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <wharf/plugin.h>

#include "coprocess_frame.h"
#include "coprocess_program.h"

/* A worker runs one task at a time: one is all a program of a worker
 * holds unless its calls run on several threads (wharf run --threads). */
#define DEFAULT_INFLIGHT 1
#define MAX_INFLIGHT 4096
/* How long a cancelled task's program has to answer before it is killed:
 * under the host's own grace (1 s) after the deadline, so the plugin
 * returns before its worker would be killed for it. */
#define CANCEL_GRACE_MS 500
/* How long a reader sleeps in poll, and a waiter on the condition, before
 * it looks at its own deadline again. */
#define STEP_MS 50
/* The restart delay: as a worker's, none after a death in a task (the
 * task pays, with an attempt), else 100 ms doubling to 10 s, back to the
 * shortest once a program has lived 10 s. */
#define RESTART_MIN_MS 100
#define RESTART_MAX_MS 10000
#define STABLE_AFTER_MS 10000
/* How long fini and a closed stdout wait for the program to exit. */
#define STOP_WAIT_MS 2000
#define EXIT_WAIT_MS 1000
#define REASON_LEN 512
#define STDERR_LINE_MAX 2048
#define READ_CHUNK 65536

typedef struct log_line {
    int level;
    char *text;
    struct log_line *next;
} log_line;

/* One task handed to the program, until its answer (or the program's end)
 * comes. Owned by the call that made it; the reader fills it in. */
typedef struct request {
    uint32_t id;
    uint64_t generation; /* the program it went to */
    bool answered;
    wharf_status status;
    unsigned char *result;
    size_t result_len;
    int64_t retry_in_ms;
    char reason[REASON_LEN];
    log_line *logs, **logs_tail; /* tied to this task, for its own call */
    pthread_cond_t wake;         /* its answer came, or it is to read */
    struct request *next;
} request;

typedef enum { PROGRAM_DOWN, PROGRAM_STARTING, PROGRAM_READY } program_state;

typedef struct coprocess {
    bool configured; /* a command was given */
    program_spec spec;
    uint32_t inflight;
    uint32_t version; /* what the running program answered its hello */

    pthread_mutex_t lock;          /* everything below */
    pthread_cond_t changed;        /* a start, a ready, an end, a free place */
    pthread_condattr_t clock_attr; /* CLOCK_MONOTONIC, for every condition */
    /* One frame at a time onto the program's stdin, held without `lock`
     * while writing; the program's fds change only under both. */
    pthread_mutex_t write_lock;

    program prog;
    program_state state;
    uint64_t generation; /* bumped at each start and each end */
    bool reader;         /* a call is reading the pipes */
    bool dying;          /* killed; the reader is to tear it down */
    char dying_why[REASON_LEN];
    uint32_t in_flight;
    uint32_t next_id;
    request *requests;
    unsigned char *in_buf; /* stdout bytes that are not a whole frame yet */
    size_t in_len, in_cap;
    char err_line[STDERR_LINE_MAX]; /* stderr's unfinished line */
    size_t err_len;
    bool err_done; /* stderr closed: no more polling it */
    int64_t started_ms, restart_at_ms;
    unsigned crashes;
    char last_end[REASON_LEN]; /* why the last program ended */
    bool said_full;            /* the "more calls than inflight" line */
} coprocess;

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* --- the log ----------------------------------------------------------- */

/* One line of the program's stderr, through the host's log. */
static void stderr_line(wharf_ctx *ctx, const char *line, size_t len)
{
    if (len > 0 && line[len - 1] == '\r')
        len--;
    if (len > 0)
        wharf_log(ctx, WHARF_LOG_WARN, "handler stderr: %.*s", (int)len, line);
}

/* Splits what was read of stderr into lines; a line longer than the
 * buffer is logged in pieces. */
static void stderr_bytes(coprocess *cp, wharf_ctx *ctx, const char *data,
                         size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (data[i] == '\n') {
            stderr_line(ctx, cp->err_line, cp->err_len);
            cp->err_len = 0;
            continue;
        }
        if (cp->err_len == sizeof cp->err_line) {
            stderr_line(ctx, cp->err_line, cp->err_len);
            cp->err_len = 0;
        }
        cp->err_line[cp->err_len++] = data[i];
    }
}

/* Reads stderr until it would block or ends; true at its end. */
static bool stderr_drain(coprocess *cp, wharf_ctx *ctx)
{
    char chunk[4096];
    ssize_t got;

    if (cp->prog.err_fd < 0 || cp->err_done)
        return true;
    for (;;) {
        got = read(cp->prog.err_fd, chunk, sizeof chunk);
        if (got > 0) {
            stderr_bytes(cp, ctx, chunk, (size_t)got);
            continue;
        }
        if (got < 0 && errno == EINTR)
            continue;
        if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
            cp->err_done = true;
        return cp->err_done;
    }
}

static void logs_free(log_line *l)
{
    while (l) {
        log_line *next = l->next;

        free(l->text);
        free(l);
        l = next;
    }
}

/* The log lines the program tied to r, logged by r's own call. */
static void logs_flush(wharf_ctx *ctx, request *r)
{
    for (log_line *l = r->logs; l; l = l->next)
        wharf_log(ctx, l->level, "%s", l->text);
    logs_free(r->logs);
    r->logs = NULL;
    r->logs_tail = &r->logs;
}

/* --- the program's end ------------------------------------------------- */

/* r's answer is in, with why as its reason (NULL: the one already in
 * r->reason); its call is woken. With `lock` held. */
static void answer(request *r, wharf_status status, const char *why)
{
    r->answered = true;
    r->status = status;
    if (why)
        snprintf(r->reason, sizeof r->reason, "%s", why);
    pthread_cond_signal(&r->wake);
}

/* The program is gone (or going): reaps it, logs the rest of its stderr,
 * fails every attempt it held with why (or how it ended, when why is
 * NULL), and sets when the next one starts. With `lock` held, by the
 * reader or while there is none. */
static void teardown(coprocess *cp, wharf_ctx *ctx, const char *why)
{
    char how[128], reason[REASON_LEN];
    int64_t now = now_ms(), delay;
    bool in_task = false;
    unsigned shift;

    stderr_drain(cp, ctx);
    pthread_mutex_lock(&cp->write_lock);
    program_stop(&cp->prog, why ? 0 : EXIT_WAIT_MS, how, sizeof how);
    stderr_drain(cp, ctx);
    if (cp->err_len > 0)
        stderr_line(ctx, cp->err_line, cp->err_len);
    cp->err_len = 0;
    program_close(&cp->prog);
    cp->generation++;
    pthread_mutex_unlock(&cp->write_lock);

    snprintf(reason, sizeof reason, "%s", why ? why : how);
    for (request *r = cp->requests; r; r = r->next)
        if (!r->answered) {
            answer(r, WHARF_RETRY, reason);
            in_task = true;
        }
    cp->state = PROGRAM_DOWN;
    cp->dying = false;
    cp->dying_why[0] = '\0';
    cp->in_len = 0;
    if (in_task) {
        /* As a worker that dies in a task: the task's fault, charged to
         * it as a failed attempt, so no delay for the next one. */
        cp->crashes = 0;
        delay = 0;
    } else {
        cp->crashes =
            now - cp->started_ms >= STABLE_AFTER_MS ? 1 : cp->crashes + 1;
        shift = cp->crashes - 1 > 7 ? 7 : cp->crashes - 1;
        delay = (int64_t)RESTART_MIN_MS << shift;
        if (delay > RESTART_MAX_MS)
            delay = RESTART_MAX_MS;
    }
    cp->restart_at_ms = now + delay;
    snprintf(cp->last_end, sizeof cp->last_end, "%s", reason);
    if (why)
        wharf_log(ctx, WHARF_LOG_WARN,
                  "handler program ended: %s (%s); restarting in %lld ms",
                  reason, how, (long long)delay);
    else
        wharf_log(ctx, WHARF_LOG_WARN,
                  "handler program ended: %s; restarting in %lld ms", reason,
                  (long long)delay);
    pthread_cond_broadcast(&cp->changed);
}

/* Ends the program for why: killed at once, torn down now if nobody is
 * reading, else by the reader, which sees its pipes close. With `lock`
 * held. */
static void take_down(coprocess *cp, wharf_ctx *ctx, const char *why)
{
    if (cp->state == PROGRAM_DOWN)
        return;
    if (!cp->dying) {
        cp->dying = true;
        snprintf(cp->dying_why, sizeof cp->dying_why, "%s", why);
    }
    program_kill(&cp->prog);
    if (!cp->reader)
        teardown(cp, ctx, cp->dying_why);
}

/* --- reading ----------------------------------------------------------- */

static request *find_request(coprocess *cp, uint32_t id)
{
    for (request *r = cp->requests; r; r = r->next)
        if (r->id == id && r->generation == cp->generation)
            return r;
    return NULL;
}

/* What one frame of the handler's means. 0, or -1 with why the program
 * broke the protocol in err. */
static int dispatch(coprocess *cp, wharf_ctx *ctx, const frame_in *f, char *err,
                    size_t errlen)
{
    request *r = NULL;

    if (f->kind == FRAME_READY) {
        if (cp->state != PROGRAM_STARTING || f->request != 0) {
            snprintf(err, errlen, "a ready frame %s",
                     f->request ? "with a request id" : "after the first");
            return -1;
        }
        if (f->version < FRAME_VERSION_MIN || f->version > FRAME_VERSION) {
            snprintf(err, errlen,
                     "the handler speaks protocol version %u, not %d to %d",
                     f->version, FRAME_VERSION_MIN, FRAME_VERSION);
            return -1;
        }
        cp->version = f->version;
        cp->state = PROGRAM_READY;
        pthread_cond_broadcast(&cp->changed);
        return 0;
    }
    if (f->kind == FRAME_LOG && f->request == 0) {
        wharf_log(ctx, f->level, "%.*s", (int)f->text_len,
                  (const char *)f->text);
        return 0;
    }
    if (cp->state != PROGRAM_READY) {
        snprintf(err, errlen, "an answer before the ready frame");
        return -1;
    }
    if ((r = find_request(cp, f->request)) == NULL || r->answered) {
        snprintf(err, errlen, "%s for request %u, which is not in flight",
                 f->kind == FRAME_LOG ? "a log line" : "an answer", f->request);
        return -1;
    }
    if (f->kind == FRAME_LOG) {
        log_line *l = calloc(1, sizeof *l);

        if (l == NULL || (l->text = malloc(f->text_len + 1)) == NULL) {
            free(l);
            return 0; /* a log line lost to memory, not the protocol */
        }
        memcpy(l->text, f->text, f->text_len);
        l->text[f->text_len] = '\0';
        l->level = f->level;
        *r->logs_tail = l;
        r->logs_tail = &l->next;
        return 0;
    }
    r->retry_in_ms = f->retry_in_ms;
    if (f->kind == FRAME_OK) {
        r->result = malloc(f->text_len ? f->text_len : 1);
        if (r->result == NULL) {
            answer(r, WHARF_RETRY, "out of memory for the result");
        } else {
            memcpy(r->result, f->text, f->text_len);
            r->result_len = f->text_len;
            answer(r, WHARF_OK, "");
        }
    } else {
        snprintf(r->reason, sizeof r->reason, "%.*s", (int)f->text_len,
                 (const char *)f->text);
        if (r->reason[0] == '\0')
            snprintf(r->reason, sizeof r->reason, "the handler gave no reason");
        answer(r, f->kind == FRAME_FAIL ? WHARF_FAIL : WHARF_RETRY, NULL);
    }
    return 0;
}

/* The whole frames in in_buf, dispatched; a partial one stays. 0, or -1
 * with why in err. */
static int frames(coprocess *cp, wharf_ctx *ctx, char *err, size_t errlen)
{
    size_t at = 0;
    char why[256];
    int rc = 0;

    while (cp->in_len - at >= 4) {
        uint32_t len = frame_length(cp->in_buf + at);
        frame_in f;

        if (len < 5 || len > FRAME_MAX) {
            const unsigned char *b = cp->in_buf + at;
            char shown[16];
            size_t n = 0;

            /* The first bytes as text: most often a print() to stdout. */
            for (size_t i = 0; i < 8 && at + i < cp->in_len; i++)
                shown[n++] = b[i] >= 0x20 && b[i] < 0x7f ? (char)b[i] : '?';
            shown[n] = '\0';
            snprintf(err, errlen,
                     "malformed frame: length %u, not 5 to %u (the stream "
                     "starts \"%s\": does the program write to stdout?)",
                     len, FRAME_MAX, shown);
            rc = -1;
            break;
        }
        if (cp->in_len - at - 4 < len)
            break;
        if (frame_parse(cp->in_buf + at + 4, len, &f, why, sizeof why) != 0 ||
            dispatch(cp, ctx, &f, why, sizeof why) != 0) {
            snprintf(err, errlen, "malformed frame: %s", why);
            rc = -1;
            break;
        }
        at += 4 + (size_t)len;
    }
    if (rc == 0 && at > 0) {
        memmove(cp->in_buf, cp->in_buf + at, cp->in_len - at);
        cp->in_len -= at;
    }
    return rc;
}

/* Appends what stdout has (non-blocking). 1 at its end, 0 otherwise, -1
 * out of memory. */
static int stdout_read(coprocess *cp)
{
    for (;;) {
        ssize_t got;

        if (cp->in_cap - cp->in_len < READ_CHUNK) {
            size_t cap = cp->in_cap ? cp->in_cap * 2 : 2 * READ_CHUNK;
            unsigned char *grown = realloc(cp->in_buf, cap);

            if (grown == NULL)
                return -1;
            cp->in_buf = grown;
            cp->in_cap = cap;
        }
        got = read(cp->prog.out_fd, cp->in_buf + cp->in_len, READ_CHUNK);
        if (got > 0) {
            cp->in_len += (size_t)got;
            continue;
        }
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        return 1;
    }
}

/* Sleeps up to STEP_MS on cond, with `lock` held. */
static void sleep_on(coprocess *cp, pthread_cond_t *cond)
{
    struct timespec until;

    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += STEP_MS * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    (void)pthread_cond_timedwait(cond, &cp->lock, &until);
}

/* The reader's role is free again: one call still waiting for its
 * answer is woken to take it (the others sleep on), and the calls
 * waiting for a start or a place look again. With `lock` held. */
static void hand_over(coprocess *cp)
{
    for (request *r = cp->requests; r; r = r->next)
        if (!r->answered) {
            pthread_cond_signal(&r->wake);
            break;
        }
    pthread_cond_broadcast(&cp->changed);
}

/* One step of waiting, with `lock` held, for the answer of mine (NULL: for
 * a start, a ready or a free place): as the reader (when nobody reads and
 * a program runs) up to STEP_MS in poll on its pipes, handing out what
 * came; else up to STEP_MS asleep, on mine's own condition or on
 * `changed`. A reader whose answer came hands the role over. */
static void wait_step(coprocess *cp, wharf_ctx *ctx, request *mine)
{
    struct pollfd fds[2];
    char why[REASON_LEN];
    int ended = 0;

    if (cp->reader || cp->state == PROGRAM_DOWN) {
        sleep_on(cp, mine ? &mine->wake : &cp->changed);
        return;
    }
    if (cp->dying) {
        teardown(cp, ctx, cp->dying_why);
        return;
    }
    cp->reader = true;
    fds[0] = (struct pollfd){.fd = cp->prog.out_fd, .events = POLLIN};
    fds[1] = (struct pollfd){.fd = cp->err_done ? -1 : cp->prog.err_fd,
                             .events = POLLIN};
    /* The fds, the input buffer and the stderr line cannot change while
     * this call is the reader (an end is torn down by the reader itself),
     * so it reads without `lock`, held only to hand the answers out. */
    pthread_mutex_unlock(&cp->lock);
    (void)poll(fds, 2, STEP_MS);
    if (fds[1].revents)
        stderr_drain(cp, ctx);
    if (fds[0].revents)
        ended = stdout_read(cp);
    pthread_mutex_lock(&cp->lock);
    if (fds[0].revents) {
        if (ended < 0) {
            take_down(cp, ctx, "out of memory reading the handler");
        } else if (frames(cp, ctx, why, sizeof why) != 0) {
            cp->reader = false;
            take_down(cp, ctx, why);
        } else if (ended) {
            cp->reader = false;
            teardown(cp, ctx, cp->dying ? cp->dying_why : NULL);
        }
    }
    if (cp->reader) {
        cp->reader = false;
        if (cp->dying)
            teardown(cp, ctx, cp->dying_why);
    }
    /* Still waiting: this call reads on at its next step, without waking
     * anyone. */
    if (mine == NULL || mine->answered)
        hand_over(cp);
}

/* --- writing ----------------------------------------------------------- */

/* Writes one frame to the program of `generation`, with `lock` not held.
 * A task's frame (ctx not NULL) gives up at its call's cancel: at once if
 * nothing was written yet, else CANCEL_GRACE_MS later; any other frame
 * gives up CANCEL_GRACE_MS after it started. 0 written; 1 not written
 * because the call was cancelled first (or the program already ended: the
 * request is answered then); -1 the pipe broke or the frame was given up
 * half-written, with why in err: the stream is broken then. */
static int send_frame(coprocess *cp, wharf_ctx *ctx, uint64_t generation,
                      const frame_out *out, char *err, size_t errlen)
{
    size_t done = 0;
    int64_t cancelled_at = ctx ? 0 : now_ms();
    int rc = 0;

    pthread_mutex_lock(&cp->write_lock);
    if (cp->generation != generation || cp->prog.in_fd < 0) {
        rc = 1;
        goto out;
    }
    while (done < out->len) {
        struct pollfd pfd = {.fd = cp->prog.in_fd, .events = POLLOUT};
        ssize_t put = write(cp->prog.in_fd, out->data + done, out->len - done);

        if (put > 0) {
            done += (size_t)put;
            continue;
        }
        if (put < 0 && errno == EINTR)
            continue;
        if (put < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            snprintf(err, errlen, "cannot write to the handler: %s",
                     strerror(errno));
            rc = -1;
            goto out;
        }
        if (ctx && wharf_cancelled(ctx) && done == 0) {
            rc = 1;
            goto out;
        }
        if (ctx && cancelled_at == 0 && wharf_cancelled(ctx))
            cancelled_at = now_ms();
        if (cancelled_at && now_ms() - cancelled_at > CANCEL_GRACE_MS) {
            snprintf(err, errlen,
                     "the handler took only %zu of a frame's %zu bytes in "
                     "time (it does not read its stdin)",
                     done, out->len);
            rc = -1;
            goto out;
        }
        (void)poll(&pfd, 1, STEP_MS);
    }
out:
    pthread_mutex_unlock(&cp->write_lock);
    return rc;
}

/* --- starting ---------------------------------------------------------- */

/* Starts a program and sends the hello frame, with `lock` held. 0, or -1
 * with why in err and the next start put off. */
static int start(coprocess *cp, wharf_ctx *ctx, char *err, size_t errlen)
{
    frame_out hello = {0};
    int rc = -1;

    pthread_mutex_lock(&cp->write_lock);
    if (program_start(&cp->prog, &cp->spec, err, errlen) == 0) {
        cp->generation++;
        cp->state = PROGRAM_STARTING;
        cp->started_ms = now_ms();
        cp->in_len = 0;
        cp->err_len = 0;
        cp->err_done = false;
        rc = 0;
    }
    pthread_mutex_unlock(&cp->write_lock);
    if (rc != 0) {
        cp->crashes++;
        cp->restart_at_ms = now_ms() + RESTART_MAX_MS;
        snprintf(cp->last_end, sizeof cp->last_end, "%s", err);
        return -1;
    }
    wharf_log(ctx, WHARF_LOG_INFO, "handler program started (pid %ld): %s",
              (long)cp->prog.pid, cp->spec.path);
    if (frame_hello(&hello, cp->inflight) != 0 ||
        send_frame(cp, NULL, cp->generation, &hello, err, errlen) != 0) {
        if (hello.failed)
            snprintf(err, errlen, "out of memory for the hello frame");
        frame_out_free(&hello);
        take_down(cp, ctx, err);
        return -1;
    }
    frame_out_free(&hello);
    pthread_cond_broadcast(&cp->changed);
    return 0;
}

/* --- the plugin -------------------------------------------------------- */

static void coprocess_free(coprocess *cp)
{
    if (cp == NULL)
        return;
    program_spec_free(&cp->spec);
    pthread_cond_destroy(&cp->changed);
    pthread_condattr_destroy(&cp->clock_attr);
    pthread_mutex_destroy(&cp->lock);
    pthread_mutex_destroy(&cp->write_lock);
    free(cp->in_buf);
    free(cp);
}

static int parse_inflight(const char *v, uint32_t *out)
{
    char *end;
    unsigned long n;

    errno = 0;
    n = strtoul(v, &end, 10);
    if (errno || end == v || *end != '\0' || v[0] == '-' || n < 1 ||
        n > MAX_INFLIGHT)
        return -1;
    *out = (uint32_t)n;
    return 0;
}

static coprocess *coprocess_new(void)
{
    coprocess *cp = calloc(1, sizeof *cp);

    if (cp == NULL)
        return NULL;
    cp->prog = (program){.pid = 0, .in_fd = -1, .out_fd = -1, .err_fd = -1};
    cp->inflight = DEFAULT_INFLIGHT;
    cp->next_id = 1;
    pthread_mutex_init(&cp->lock, NULL);
    pthread_mutex_init(&cp->write_lock, NULL);
    pthread_condattr_init(&cp->clock_attr);
    pthread_condattr_setclock(&cp->clock_attr, CLOCK_MONOTONIC);
    pthread_cond_init(&cp->changed, &cp->clock_attr);
    return cp;
}

/* A worker's threads each hold one call, and inflight is what the
 * program is told it may hold: unequal, one of them is wasted, so the
 * check (wharfd --check, and the one of each start and reload) says so,
 * once rather than once a worker. */
static void warn_threads(wharf_ctx *ctx, uint32_t inflight)
{
    const char *v = wharf_config(ctx, "threads");
    unsigned long threads = v ? strtoul(v, NULL, 10) : 0;

    if (threads == 0 || threads == inflight ||
        wharf_phase(ctx) != WHARF_PHASE_CHECK)
        return;
    wharf_log(ctx, WHARF_LOG_WARN,
              "coprocess: threads = %lu but inflight = %u: %s; give the "
              "section as many threads as inflight",
              threads, inflight,
              threads > inflight
                  ? "calls beyond inflight wait for a free place"
                  : "the program is never sent more than threads at once");
}

/* Reads and checks the section's keys; in a worker and in `wharf run`,
 * starts the program and waits for its ready frame, so a program that
 * cannot start fails init with its reason (and its stderr logged). In a
 * check, nothing is started. */
static int coprocess_init(wharf_ctx *ctx, void **state)
{
    coprocess *cp = coprocess_new();
    const char *command = wharf_config(ctx, "command");
    const char *v;
    char err[REASON_LEN];

    if (cp == NULL) {
        wharf_error(ctx, "coprocess: out of memory");
        return 1;
    }
    if ((v = wharf_config(ctx, "inflight")) != NULL &&
        parse_inflight(v, &cp->inflight) != 0) {
        wharf_error(ctx,
                    "coprocess: inflight '%s': a whole number from 1 "
                    "to %d",
                    v, MAX_INFLIGHT);
        goto fail;
    }
    if (command == NULL) {
        /* An autoloaded coprocess.so (no section) must not stop the host;
         * its tasks fail, saying why. A section without a command is an
         * error: it names a program that is not there. */
        if (wharf_config(ctx, "cwd") || wharf_config(ctx, "env") ||
            wharf_config(ctx, "inflight")) {
            wharf_error(ctx, "coprocess: no command: name the handler "
                             "program in `command`");
            goto fail;
        }
        wharf_log(ctx, WHARF_LOG_DEBUG,
                  "coprocess: no command in the section: every task will "
                  "fail");
        *state = cp;
        return 0;
    }
    if (program_spec_make(&cp->spec, command, wharf_config(ctx, "cwd"),
                          wharf_config(ctx, "env"), err, sizeof err) != 0) {
        wharf_error(ctx, "coprocess: %s", err);
        goto fail;
    }
    cp->configured = true;
    warn_threads(ctx, cp->inflight);
    if (wharf_phase(ctx) != WHARF_PHASE_CHECK) {
        pthread_mutex_lock(&cp->lock);
        if (start(cp, ctx, err, sizeof err) == 0)
            while (cp->state == PROGRAM_STARTING)
                wait_step(cp, ctx, NULL);
        if (cp->state != PROGRAM_READY) {
            wharf_error(ctx,
                        "coprocess: the handler program did not get "
                        "ready: %s",
                        cp->last_end[0] ? cp->last_end : err);
            pthread_mutex_unlock(&cp->lock);
            goto fail;
        }
        cp->crashes = 0;
        pthread_mutex_unlock(&cp->lock);
    }
    *state = cp;
    return 0;
fail:
    coprocess_free(cp);
    return 1;
}

/* Waits, with `lock` held, for a ready program with a free place,
 * starting one when it is time. 0, or -1 with why in err when the call's
 * deadline came first (or the start failed). */
static int wait_ready(coprocess *cp, wharf_ctx *ctx, char *err, size_t errlen)
{
    while (cp->state != PROGRAM_READY || cp->in_flight >= cp->inflight) {
        if (wharf_cancelled(ctx)) {
            if (cp->state == PROGRAM_DOWN)
                snprintf(err, errlen, "handler not running (%.400s)",
                         cp->last_end);
            else if (cp->state == PROGRAM_STARTING)
                snprintf(err, errlen, "handler not ready by the deadline");
            else
                snprintf(err, errlen,
                         "no free place among the handler's %u by the "
                         "deadline",
                         cp->inflight);
            return -1;
        }
        if (cp->state == PROGRAM_DOWN && now_ms() >= cp->restart_at_ms) {
            if (start(cp, ctx, err, errlen) != 0)
                return -1;
            continue;
        }
        if (cp->state == PROGRAM_READY) {
            /* All places taken: the calls in flight read for themselves;
             * this one waits for one of them to end. More threads than
             * places is a manifest that wastes its threads: said once. */
            if (!cp->said_full) {
                cp->said_full = true;
                wharf_log(ctx, WHARF_LOG_WARN,
                          "coprocess: more calls at once than inflight = %u: "
                          "the rest wait for a free place; give the section "
                          "as many `threads` as `inflight`",
                          cp->inflight);
            }
            sleep_on(cp, &cp->changed);
            continue;
        }
        wait_step(cp, ctx, NULL);
    }
    return 0;
}

/* The running task's parents (a workflow's child) for a version 2 task
 * frame, into *out (the caller frees it; the names and results are the
 * host's until process_business returns): how many, 0 for none. -1 when
 * memory ran out. */
static long task_parents(wharf_ctx *ctx, frame_parent **out)
{
    frame_parent *list = NULL;
    size_t n = 0, cap = 0;
    const char *name;
    const void *data;
    size_t len;
    int rc;

    *out = NULL;
    while ((rc = wharf_parent_result(ctx, n, &name, &data, &len)) >= 0) {
        if (n == cap) {
            frame_parent *grown;

            cap = cap ? cap * 2 : 4;
            if ((grown = realloc(list, cap * sizeof *list)) == NULL) {
                free(list);
                return -1;
            }
            list = grown;
        }
        list[n++] = (frame_parent){.name = name,
                                   .dead = rc == 1,
                                   .result = rc == 0 ? data : NULL,
                                   .result_len = rc == 0 ? len : 0};
    }
    *out = list;
    return (long)n;
}

static wharf_status coprocess_process(wharf_ctx *ctx, const wharf_task *task)
{
    coprocess *cp = wharf_state(ctx);
    request r = {.retry_in_ms = -1};
    frame_out out = {0};
    frame_parent *parents = NULL;
    long n_parents = 0;
    uint32_t version;
    frame_task t;
    char err[REASON_LEN];
    int64_t cancel_sent_ms = 0;
    wharf_status status;
    int sent;

    if (cp == NULL || !cp->configured) {
        wharf_error(ctx, "coprocess: no command in the plugin's section");
        return WHARF_FAIL;
    }
    r.logs_tail = &r.logs;
    pthread_cond_init(&r.wake, &cp->clock_attr);
    pthread_mutex_lock(&cp->lock);
    if (wait_ready(cp, ctx, err, sizeof err) != 0) {
        pthread_mutex_unlock(&cp->lock);
        pthread_cond_destroy(&r.wake);
        wharf_error(ctx, "%s", err);
        return WHARF_RETRY;
    }
    version = cp->version;
    r.id = cp->next_id++;
    if (cp->next_id == 0)
        cp->next_id = 1;
    r.generation = cp->generation;
    r.next = cp->requests;
    cp->requests = &r;
    cp->in_flight++;
    pthread_mutex_unlock(&cp->lock);

    if (version >= 2)
        n_parents = task_parents(ctx, &parents);
    t = (frame_task){.version = version,
                     .attempt = task->attempt,
                     .max_attempts = task->max_attempts,
                     .fence = task->fence,
                     .enqueued_at_ms = task->enqueued_at_ms,
                     .deadline_in_ms = wharf_deadline_ms(ctx),
                     .id = task->id,
                     .type = task->type,
                     .trace = task->trace,
                     .payload = task->payload,
                     .payload_len = task->payload_len,
                     .parents = parents,
                     .n_parents = n_parents > 0 ? (size_t)n_parents : 0};
    if (n_parents < 0 || frame_task_build(&out, r.id, &t) != 0) {
        snprintf(err, sizeof err, "task frame not built (%s)",
                 out.failed && task->payload_len > FRAME_MAX - 65536
                     ? "payload over 64 MiB"
                     : "out of memory");
        sent = 2;
    } else {
        sent = send_frame(cp, ctx, r.generation, &out, err, sizeof err);
    }
    frame_out_free(&out);
    free(parents);

    pthread_mutex_lock(&cp->lock);
    if (sent == 2 || (sent == 1 && !r.answered))
        answer(&r, WHARF_RETRY,
               sent == 2 ? err : "cancelled before the task was sent");
    else if (sent < 0 && r.generation == cp->generation)
        take_down(cp, ctx, err);
    while (!r.answered) {
        logs_flush(ctx, &r);
        if (wharf_cancelled(ctx)) {
            if (cancel_sent_ms == 0) {
                frame_out cancel = {0};

                cancel_sent_ms = now_ms();
                if (frame_cancel(&cancel, r.id) == 0) {
                    pthread_mutex_unlock(&cp->lock);
                    (void)send_frame(cp, NULL, r.generation, &cancel, err,
                                     sizeof err);
                    pthread_mutex_lock(&cp->lock);
                }
                frame_out_free(&cancel);
                continue;
            }
            if (now_ms() - cancel_sent_ms >= CANCEL_GRACE_MS) {
                snprintf(err, sizeof err,
                         "handler killed: task %.200s was cancelled and not "
                         "answered within %d ms",
                         task->id, CANCEL_GRACE_MS);
                if (r.generation == cp->generation)
                    take_down(cp, ctx, err);
                if (!r.answered)
                    answer(&r, WHARF_RETRY, err);
                break;
            }
        }
        wait_step(cp, ctx, &r);
    }
    logs_flush(ctx, &r);
    for (request **p = &cp->requests; *p; p = &(*p)->next)
        if (*p == &r) {
            *p = r.next;
            break;
        }
    cp->in_flight--;
    /* A successful answer: the program is healthy again. */
    if (r.status == WHARF_OK && now_ms() - cp->started_ms >= STABLE_AFTER_MS)
        cp->crashes = 0;
    pthread_cond_broadcast(&cp->changed);
    pthread_mutex_unlock(&cp->lock);

    status = r.status;
    if (status == WHARF_OK) {
        if (wharf_result(ctx, r.result, r.result_len) != 0) {
            wharf_error(ctx, "result of %zu bytes refused", r.result_len);
            status = WHARF_FAIL;
        }
    } else {
        wharf_error(ctx, "%s", r.reason);
        if (status == WHARF_RETRY && r.retry_in_ms >= 0)
            wharf_retry_in(ctx, r.retry_in_ms);
    }
    free(r.result);
    pthread_cond_destroy(&r.wake);
    return status;
}

/* Closes the program's stdin (a handler library finishes and exits) and
 * waits up to STOP_WAIT_MS for it, then kills it. */
static void coprocess_fini(wharf_ctx *ctx, void *state)
{
    coprocess *cp = state;
    char how[128];

    if (cp == NULL)
        return;
    if (cp->prog.pid > 0) {
        stderr_drain(cp, ctx);
        program_stop(&cp->prog, STOP_WAIT_MS, how, sizeof how);
        stderr_drain(cp, ctx);
        if (cp->err_len > 0)
            stderr_line(ctx, cp->err_line, cp->err_len);
        program_close(&cp->prog);
        wharf_log(ctx, WHARF_LOG_INFO, "handler program stopped: %s", how);
    }
    coprocess_free(cp);
}

WHARF_PLUGIN(.name = "coprocess", .version = "1.0.0",
             .types = (const char *const[]){"coprocess", NULL},
             .init = coprocess_init, .process_business = coprocess_process,
             .fini = coprocess_fini, .thread_safe = 1);
