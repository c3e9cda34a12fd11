/* phases: records where its code runs. With `file = PATH` in its section
 * it appends "init <phase>", "task <phase>" and "fini <phase>" lines to
 * PATH (wharf_phase's answer), and its fini logs through its ctx, so the
 * tests can show what runs when and that fini can log. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <wharf/plugin.h>

static void note(wharf_ctx *ctx, const char *what)
{
    const char *path = wharf_config(ctx, "file");
    char line[64];
    int n, fd;

    if (!path)
        return;
    n = snprintf(line, sizeof(line), "%s %d\n", what, wharf_phase(ctx));
    fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    if (write(fd, line, (size_t)n) != n) {
        /* the test sees the line missing */
    }
    close(fd);
}

static int init(wharf_ctx *ctx, void **state)
{
    *state = NULL;
    note(ctx, "init");
    return 0;
}

static wharf_status process_business(wharf_ctx *ctx, const wharf_task *task)
{
    note(ctx, "task");
    wharf_result(ctx, task->payload, task->payload_len);
    return WHARF_OK;
}

static void fini(wharf_ctx *ctx, void *state)
{
    (void)state;
    note(ctx, "fini");
    wharf_log(ctx, WHARF_LOG_INFO, "phases: fini in phase %d",
              wharf_phase(ctx));
}

WHARF_PLUGIN(.name = "phases", .version = "1.0.0", .init = init,
             .process_business = process_business, .fini = fini);
