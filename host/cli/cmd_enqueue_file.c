/* wharf enqueue TYPE --file FILE: one payload a line (a JSON Lines file;
 * the newline, and a CR before it, are not part of the payload; empty
 * lines are skipped), enqueued in pipelined batches. Prints each id on its
 * own line in file order and a summary on stderr; a progress bar on stderr
 * when it is a terminal. Slows down while the type reports pressure. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include "cli.h"
#include "client_ids.h"
#include "clock_ms.h"
#include "quote.h"

/* Tasks per wharf_enqueue_batch call. */
#define FILE_BATCH 10000
#define PROGRESS_EVERY_MS 100
#define PRESSURE_FIRST_MS 20
#define PRESSURE_MAX_MS 1000

/* One batch of lines: their bytes back to back in data, and the tasks and
 * replies that refer to them. */
typedef struct line_batch {
    char *data;
    size_t used, cap;
    size_t n;
    size_t offset[FILE_BATCH];
    size_t len[FILE_BATCH];
    long line_no[FILE_BATCH];
    wharf_enqueue_opts tasks[FILE_BATCH];
    wharf_enqueue_reply replies[FILE_BATCH];
    /* the tasks sent again after BACKPRESSURE, and where they came from */
    wharf_enqueue_opts retry_tasks[FILE_BATCH];
    wharf_enqueue_reply retry_replies[FILE_BATCH];
    size_t retry_from[FILE_BATCH];
} line_batch;

/* One --file run. */
typedef struct file_run {
    cli *ctx;
    const char *name;      /* for messages: the path (quoted), or "stdin" */
    char quoted_path[CLI_PATH_QUOTE_MAX]; /* as quote_text shows it */
    FILE *in;
    const wharf_enqueue_opts *base;
    const wharf_task_options *options; /* every task's, or NULL */
    int64_t wait_ms;
    long line_no;
    size_t enqueued, duplicate, refused;
    int warned;   /* said that no host serves the type */
    int code;     /* exit code of the first refusal, 0 if none */
    int progress; /* stderr is a terminal: draw the bar */
    int drawn;    /* a bar is on the screen */
    off_t size;   /* bytes in the file, 0 if unknown */
    off_t done;   /* bytes read */
    int64_t started, last_draw, pause_ms;
} file_run;

static void clear_progress(file_run *run)
{
    if (run->drawn)
        fputs("\r\033[K", stderr);
    run->drawn = 0;
}

static void draw_progress(file_run *run)
{
    int64_t now = clock_ms();
    int64_t elapsed = now - run->started;
    size_t tasks = run->enqueued + run->duplicate + run->refused;
    double rate = elapsed > 0 ? (double)tasks * 1000.0 / (double)elapsed : 0;

    if (!run->progress || now - run->last_draw < PROGRESS_EVERY_MS)
        return;
    run->last_draw = now;
    fputs("\r\033[K", stderr);
    if (run->size > 0) {
        int pct = (int)(run->done * 100 / run->size), width = 30;
        int fill = pct * width / 100;
        fprintf(stderr, "[%.*s%*s] %3d%% ", fill,
                "##############################", width - fill, "", pct);
    }
    fprintf(stderr, "%zu tasks, %.0f/s", tasks, rate);
    fflush(stderr);
    run->drawn = 1;
}

/* Appends one line (without its newline) to the batch. 0 or -1 (out of
 * memory). */
static int add_line(line_batch *b, const char *line, size_t len, long no)
{
    if (b->cap - b->used < len) {
        size_t cap = b->cap ? b->cap : 65536;
        char *grown;
        while (cap - b->used < len)
            cap *= 2;
        grown = realloc(b->data, cap);
        if (!grown)
            return -1;
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->used, line, len);
    b->offset[b->n] = b->used;
    b->len[b->n] = len;
    b->line_no[b->n] = no;
    b->used += len;
    b->n++;
    return 0;
}

/* Reads up to FILE_BATCH non-empty lines. 0, or an exit code after saying
 * why. */
static int read_batch(file_run *run, line_batch *b)
{
    char *line = NULL;
    size_t size = 0;
    ssize_t got;
    int code = 0;

    b->n = 0;
    b->used = 0;
    errno = 0;
    while (b->n < FILE_BATCH && (got = getline(&line, &size, run->in)) > 0) {
        size_t len = (size_t)got;
        run->line_no++;
        run->done += got;
        if (len > 0 && line[len - 1] == '\n')
            len--;
        if (len > 0 && line[len - 1] == '\r')
            len--;
        if (len > 0 && add_line(b, line, len, run->line_no) != 0) {
            code = cli_fail(run->ctx, EX_OSERR, "out of memory");
            break;
        }
    }
    if (code == 0 && ferror(run->in)) {
        clear_progress(run);
        code = cli_fail(run->ctx, EX_IOERR, "%s: cannot read: %s", run->name,
                        strerror(errno ? errno : EIO));
    }
    free(line);
    return code;
}

/* Sends the batch, and sends again what BACKPRESSURE refused while
 * --wait allows. 0 (each reply has its task's answer), or an exit code
 * after saying why the batch could not be sent. */
static int send_batch(file_run *run, line_batch *b)
{
    wharf_client *client = run->ctx->client;
    wharf_client_status status;
    int64_t deadline = 0, step = 0;
    size_t retries;

    for (size_t i = 0; i < b->n; i++) {
        b->tasks[i] = *run->base;
        b->tasks[i].payload = b->data + b->offset[i];
        b->tasks[i].payload_len = b->len[i];
    }
    status = wharf_enqueue_batch_with(client, b->tasks, b->n, run->options,
                                      b->replies);
    while (status == WHARF_CLIENT_OK) {
        retries = 0;
        for (size_t i = 0; i < b->n; i++) {
            if (b->replies[i].status != WHARF_CLIENT_BACKPRESSURE &&
                b->replies[i].status != WHARF_CLIENT_FULL)
                continue;
            b->retry_tasks[retries] = b->tasks[i];
            b->retry_from[retries++] = i;
        }
        if (retries == 0 || run->wait_ms <= 0)
            return 0;
        if (deadline == 0)
            deadline = clock_ms() + run->wait_ms;
        if (cli_backoff(&step, deadline) != 0)
            return 0;
        status = wharf_enqueue_batch_with(client, b->retry_tasks, retries,
                                          run->options, b->retry_replies);
        for (size_t r = 0; r < retries; r++)
            b->replies[b->retry_from[r]] = b->retry_replies[r];
    }
    /* The batch stopped part way: print the ids that got their answer. */
    clear_progress(run);
    for (size_t i = 0; i < b->n; i++) {
        if (b->replies[i].status == WHARF_CLIENT_OK)
            run->enqueued++;
        else if (b->replies[i].status == WHARF_CLIENT_DUPLICATE)
            run->duplicate++;
        else
            continue;
        printf("%s\n", b->replies[i].id);
    }
    return cli_fail(run->ctx, cli_exit_status(status), "%s: line %ld: %s",
                    run->name, b->line_no[0], wharf_client_errstr(client));
}

/* Pressure means the hosts are behind: pause between batches, longer
 * while it lasts, so the hard limit (max_backlog) is not reached. */
static int64_t next_pause(int64_t pause_ms, int pressure)
{
    if (!pressure)
        return 0;
    if (pause_ms == 0)
        return PRESSURE_FIRST_MS;
    return pause_ms * 2 > PRESSURE_MAX_MS ? PRESSURE_MAX_MS : pause_ms * 2;
}

/* Prints the ids of the batch in order and reports its refusals: each
 * line's own, except that only the first of a run of "try later" ones
 * (BACKPRESSURE, a full Redis) is said, with how far the file got.
 * Returns 0 to go on, or EX_TEMPFAIL when one of those refused a task for
 * good. */
static int report_batch(file_run *run, const line_batch *b)
{
    const char *why = wharf_client_errstr(run->ctx->client);
    int stop = 0, pressure = 0;

    for (size_t i = 0; i < b->n; i++) {
        const wharf_enqueue_reply *r = &b->replies[i];
        pressure |= r->pressure;
        if (r->unserved && !run->warned && r->status == WHARF_CLIENT_OK) {
            run->warned = 1;
            cli_warn_unserved(run->ctx, run->base->type, "");
        }
        if (r->status == WHARF_CLIENT_UNSERVED ||
            r->status == WHARF_CLIENT_PROTOCOL) {
            /* Every task of the type is refused alike: say it once. */
            run->refused += b->n - i;
            clear_progress(run);
            cli_fail(run->ctx, cli_exit_status(r->status), "%s", why);
            run->code = cli_exit_status(r->status);
            return run->code;
        }
        if (r->status == WHARF_CLIENT_OK ||
            r->status == WHARF_CLIENT_DUPLICATE) {
            printf("%s\n", r->id);
            if (r->status == WHARF_CLIENT_OK)
                run->enqueued++;
            else
                run->duplicate++;
            continue;
        }
        run->refused++;
        clear_progress(run);
        if (r->status == WHARF_CLIENT_TOO_LARGE)
            cli_fail(run->ctx, EX_DATAERR,
                     "%s:%ld: payload of %zu bytes is over max_payload "
                     "%llu of type '%s'",
                     run->name, b->line_no[i], b->len[i],
                     (unsigned long long)r->limit, run->base->type);
        else if (r->status == WHARF_CLIENT_BACKPRESSURE && !stop)
            cli_fail(run->ctx, EX_TEMPFAIL,
                     "%s:%ld: type '%s' is at its backlog limit "
                     "(max_backlog %llu): try later; %zu lines enqueued "
                     "before it",
                     run->name, b->line_no[i], run->base->type,
                     (unsigned long long)r->limit, run->enqueued);
        else if (r->status == WHARF_CLIENT_FULL && !stop)
            cli_fail(run->ctx, EX_TEMPFAIL,
                     "%s:%ld: %s; %zu lines enqueued before it", run->name,
                     b->line_no[i], why, run->enqueued);
        else if (r->status == WHARF_CLIENT_BAD_INPUT)
            cli_fail(run->ctx, cli_exit_status(r->status), "%s:%ld: %s",
                     run->name, b->line_no[i],
                     wharf_client_status_name(r->status));
        else if (r->status != WHARF_CLIENT_BACKPRESSURE &&
                 r->status != WHARF_CLIENT_FULL)
            /* A failed script call: the client's error says why, the
             * same for every line of the call. */
            cli_fail(run->ctx, cli_exit_status(r->status), "%s:%ld: %s",
                     run->name, b->line_no[i], why);
        if (r->status == WHARF_CLIENT_BACKPRESSURE ||
            r->status == WHARF_CLIENT_FULL)
            stop = 1;
        if (run->code == 0)
            run->code = cli_exit_status(r->status);
    }
    run->pause_ms = next_pause(run->pause_ms, pressure);
    return stop ? EX_TEMPFAIL : 0;
}

/* Opens the input; 0 or an exit code after saying why. */
static int open_input(file_run *run, const char *path)
{
    struct stat st;

    if (strcmp(path, "-") == 0) {
        run->in = stdin;
        run->name = "stdin";
    } else if (!(run->in = fopen(path, "rb"))) {
        quote_text(path, run->quoted_path, sizeof(run->quoted_path));
        return cli_fail(run->ctx, EX_NOINPUT, "cannot open '%s': %s",
                        run->quoted_path, strerror(errno));
    } else {
        quote_text(path, run->quoted_path, sizeof(run->quoted_path));
        run->name = run->quoted_path;
    }
    if (fstat(fileno(run->in), &st) == 0 && S_ISREG(st.st_mode))
        run->size = st.st_size;
    return 0;
}

int cli_enqueue_file(cli *ctx, const char *path, const wharf_enqueue_opts *base,
                     const wharf_task_options *options, int64_t wait_ms)
{
    file_run run;
    line_batch *batch = NULL;
    int code;

    memset(&run, 0, sizeof(run));
    run.ctx = ctx;
    run.base = base;
    run.options = options;
    run.wait_ms = wait_ms;
    run.progress = isatty(STDERR_FILENO);
    run.started = clock_ms();
    code = open_input(&run, path);
    if (code == 0)
        code = cli_connect(ctx);
    if (code == 0 && !(batch = calloc(1, sizeof(*batch))))
        code = cli_fail(ctx, EX_OSERR, "out of memory");
    while (code == 0) {
        code = read_batch(&run, batch);
        if (code != 0 || batch->n == 0)
            break;
        clock_sleep_ms(run.pause_ms); /* under pressure: see next_pause */
        code = send_batch(&run, batch);
        if (code == 0)
            code = report_batch(&run, batch);
        draw_progress(&run);
    }
    clear_progress(&run);
    if (batch) {
        fprintf(stderr, "wharf: enqueue: %s: %zu enqueued, %zu duplicate",
                run.name, run.enqueued, run.duplicate);
        if (run.refused)
            fprintf(stderr, ", %zu refused", run.refused);
        fputc('\n', stderr);
    }
    if (run.in && run.in != stdin)
        fclose(run.in);
    if (batch)
        free(batch->data);
    free(batch);
    return code != 0 ? code : run.code;
}
