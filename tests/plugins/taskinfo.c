/* Fixture: answers with what it was given, so a test can see the task a
 * run handed it: "id=.. attempt=.. fence=.. enqueued_at=.. trace=..
 * payload_len=.. note=.." (note: its manifest key `note`, "-" if none). */
#include <inttypes.h>
#include <stdio.h>

#include <wharf/plugin.h>

static const char *const types[] = {"taskinfo", NULL};

static wharf_status process_business(wharf_ctx *ctx, const wharf_task *task)
{
    const char *note = wharf_config(ctx, "note");
    char line[512];
    int n = snprintf(line, sizeof(line),
                     "id=%s attempt=%u fence=%" PRIu64 " enqueued_at=%" PRId64
                     " trace=%s payload_len=%zu note=%s",
                     task->id, task->attempt, task->fence, task->enqueued_at_ms,
                     task->trace, task->payload_len, note ? note : "-");

    if (n < 0 || (size_t)n >= sizeof(line) ||
        wharf_result(ctx, line, (size_t)n) != 0) {
        wharf_error(ctx, "cannot answer");
        return WHARF_FAIL;
    }
    return WHARF_OK;
}

WHARF_PLUGIN(.name = "taskinfo", .version = "1.0.0", .types = types,
             .process_business = process_business);
