/* Fixture: a well-behaved plugin that exercises every service. init reads
 * its manifest keys into a state; process_business answers according to
 * the payload; fini appends a line to the file named by `fini_file`, so a
 * test can see that it ran. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wharf/plugin.h>

static const char *const types[] = {"good", NULL};

typedef struct good_state {
    char greeting[64];
    char fini_file[512];
    int missing_key_is_null; /* wharf_config of an absent key was NULL */
    int result_outside_task; /* what wharf_result returned during init */
} good_state;

static int init(wharf_ctx *ctx, void **state)
{
    const char *greeting = wharf_config(ctx, "greeting");
    const char *fini_file = wharf_config(ctx, "fini_file");
    good_state *st = calloc(1, sizeof *st);

    if (st == NULL)
        return 1;
    snprintf(st->greeting, sizeof st->greeting, "%s",
             greeting ? greeting : "hello");
    snprintf(st->fini_file, sizeof st->fini_file, "%s",
             fini_file ? fini_file : "");
    st->missing_key_is_null = wharf_config(ctx, "no_such_key") == NULL;
    st->result_outside_task = wharf_result(ctx, "x", 1);
    wharf_error(ctx, "an error outside a task is harmless");
    wharf_log(ctx, WHARF_LOG_INFO, "init: greeting %s", st->greeting);
    *state = st;
    return 0;
}

static void fini(wharf_ctx *ctx, void *state)
{
    good_state *st = state;
    FILE *file;

    wharf_log(ctx, WHARF_LOG_DEBUG, "good: fini");
    if (st->fini_file[0] != '\0') {
        file = fopen(st->fini_file, "a");
        if (file != NULL) {
            fprintf(file, "fini %s\n", st->greeting);
            fclose(file);
        }
    }
    free(st);
}

static int payload_is(const wharf_task *task, const char *word)
{
    size_t len = strlen(word);

    return task->payload_len == len && memcmp(task->payload, word, len) == 0;
}

/* The plain answer: "GREETING, PAYLOAD", refused past max_result. */
static wharf_status greet(wharf_ctx *ctx, const good_state *st,
                          const wharf_task *task)
{
    char text[256];
    size_t head, len;

    snprintf(text, sizeof text, "%s, ", st->greeting);
    head = strlen(text);
    len = task->payload_len < sizeof text - head ? task->payload_len
                                                 : sizeof text - head;
    memcpy(text + head, task->payload, len);
    if (wharf_result(ctx, text, head + len) != 0) {
        wharf_error(ctx, "result refused");
        return WHARF_RETRY;
    }
    return WHARF_OK;
}

static wharf_status process_business(wharf_ctx *ctx, const wharf_task *task)
{
    good_state *st = wharf_state(ctx);
    char text[256];

    if (st == NULL) {
        wharf_error(ctx, "no state");
        return WHARF_FAIL;
    }
    if (payload_is(task, "probe")) {
        /* What init saw, for the tests to check. */
        snprintf(text, sizeof text, "greeting=%s missing=%d outside=%d",
                 st->greeting, st->missing_key_is_null,
                 st->result_outside_task);
        wharf_result(ctx, text, strlen(text));
        return WHARF_OK;
    }
    if (payload_is(task, "fail")) {
        wharf_error(ctx, "failed on purpose: task %s attempt %u", task->id,
                    task->attempt);
        return WHARF_FAIL;
    }
    if (payload_is(task, "retry"))
        return WHARF_RETRY;
    if (payload_is(task, "empty")) {
        wharf_result(ctx, "first", 5);
        return wharf_result(ctx, NULL, 0) == 0 ? WHARF_OK : WHARF_FAIL;
    }
    if (payload_is(task, "log")) {
        wharf_log(ctx, WHARF_LOG_WARN, "logging for task %s", task->id);
        wharf_log(ctx, 99, "a bad level is clamped");
        return WHARF_OK;
    }
    return greet(ctx, st, task);
}

WHARF_PLUGIN(.name = "good", .version = "1.0.0", .types = types, .init = init,
             .process_business = process_business, .fini = fini);
