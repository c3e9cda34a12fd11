/* Fixture: answers with what its parents ended with, through
 * wharf_parent_result: "<type>:<id>=ok:<result>;" or "...=dead;" for
 * each parent in order, "none" for a task without parents. */
#include <stdio.h>
#include <string.h>

#include <wharf/plugin.h>

static const char *const types[] = {"parents", NULL};

static wharf_status process_business(wharf_ctx *ctx, const wharf_task *task)
{
    char out[4096];
    size_t used = 0;
    const char *name;
    const void *data;
    size_t len;
    int rc;

    (void)task;
    out[0] = '\0';
    for (size_t i = 0;
         (rc = wharf_parent_result(ctx, i, &name, &data, &len)) >= 0; i++) {
        int n =
            rc == 0
                ? snprintf(out + used, sizeof(out) - used, "%s=ok:%.*s;", name,
                           (int)len, (const char *)data)
                : snprintf(out + used, sizeof(out) - used, "%s=dead;", name);
        if (n < 0 || (size_t)n >= sizeof(out) - used)
            break;
        used += (size_t)n;
    }
    if (used == 0)
        used = (size_t)snprintf(out, sizeof(out), "none");
    if (wharf_result(ctx, out, used) != 0) {
        wharf_error(ctx, "cannot answer");
        return WHARF_FAIL;
    }
    return WHARF_OK;
}

/* It keeps nothing between calls: thread-safe, so the tests run it
 * with threads too. */
WHARF_PLUGIN(.name = "parents", .version = "1.0.0", .types = types,
             .process_business = process_business, .thread_safe = 1);
