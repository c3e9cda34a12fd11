/* hello: a starting point for a wharf plugin, built out of the wharf tree
 * with either Makefile (pkg-config wharf-plugin) or CMakeLists.txt
 * (find_package(wharf)). Rename it, keep the shape:
 *
 *   init              read and check the [plugin.hello] keys, once per
 *                     process that loads the plugin; no side effects
 *   process_business  one task: return WHARF_OK, WHARF_RETRY or WHARF_FAIL
 *   fini              free what init made
 *
 * See wharf-plugin(3). Try it without Redis:
 *   wharf run ./hello.so hello world [--config wharf.ini] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wharf/plugin.h>

typedef struct hello {
    char greeting[64];
} hello;

static int init(wharf_ctx *ctx, void **state)
{
    const char *greeting = wharf_config(ctx, "greeting");
    hello *h;

    if (greeting == NULL)
        greeting = "hello";
    if (strlen(greeting) >= sizeof(h->greeting)) {
        wharf_error(ctx, "greeting: at most %zu bytes",
                    sizeof(h->greeting) - 1);
        return 1; /* the host refuses to start, naming this reason */
    }
    h = calloc(1, sizeof(*h));
    if (h == NULL) {
        wharf_error(ctx, "out of memory");
        return 1;
    }
    snprintf(h->greeting, sizeof(h->greeting), "%s", greeting);
    *state = h;
    return 0;
}

static wharf_status process_business(wharf_ctx *ctx, const wharf_task *task)
{
    const hello *h = wharf_state(ctx);
    char result[256];
    int n;

    if (task->payload_len == 0) {
        wharf_error(ctx, "empty payload: nothing to greet");
        return WHARF_FAIL; /* permanent: the same payload fails again */
    }
    if (task->payload_len > 128) {
        wharf_error(ctx, "payload of %zu bytes: at most 128",
                    task->payload_len);
        return WHARF_FAIL;
    }
    /* Bound any wait by what is left of the task's timeout. */
    if (wharf_deadline_ms(ctx) == 0)
        return WHARF_RETRY;
    n = snprintf(result, sizeof(result), "%s, %.*s", h->greeting,
                 (int)task->payload_len, (const char *)task->payload);
    wharf_log(ctx, WHARF_LOG_INFO, "greeted (attempt %u of %u)",
              task->attempt, task->max_attempts);
    if (wharf_result(ctx, result, (size_t)n) != 0)
        return WHARF_RETRY;
    return WHARF_OK;
}

static void fini(wharf_ctx *ctx, void *state)
{
    wharf_log(ctx, WHARF_LOG_DEBUG, "hello: closing");
    free(state);
}

WHARF_PLUGIN(.name = "hello", .version = "0.1.0",
             .types = (const char *const[]){"hello", NULL}, .init = init,
             .process_business = process_business, .fini = fini);
