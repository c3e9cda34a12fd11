/* Tests of the context behind wharf_ctx, called through the very inline
 * wrappers a plugin uses, with no plugin loaded. */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include <wharf/plugin.h>

#include "context.h"
#include "log.h"

static const wharf_task task = {
    .id = "t1",
    .type = "echo",
    .trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    .payload = (const unsigned char *)"x",
    .payload_len = 1,
    .attempt = 1,
    .max_attempts = 5,
};

Test(context, services_table_is_filled)
{
    context c;

    context_init(&c, NULL, 16);
    cr_assert_eq(c.base.services->size, sizeof(wharf_services));
    cr_assert_not_null(c.base.services->result);
    cr_assert_not_null(c.base.services->error);
    cr_assert_not_null(c.base.services->log);
    cr_assert_not_null(c.base.services->config);
    cr_assert_not_null(c.base.services->state);
    cr_assert_eq((void *)&c.base, (void *)&c, "base comes first");
    context_destroy(&c);
}

Test(context, result_only_inside_a_task)
{
    context c;

    context_init(&c, NULL, 16);
    cr_assert_eq(wharf_result(&c.base, "abc", 3), -1);
    cr_assert_not(c.has_result);
    context_begin(&c, &task);
    cr_assert_eq(wharf_result(&c.base, "abc", 3), 0);
    context_end(&c);
    cr_assert(c.has_result, "the result stays readable after the call");
    cr_assert_eq(c.result_len, 3);
    cr_assert(memcmp(c.result, "abc", 3) == 0);
    cr_assert_eq(wharf_result(&c.base, "def", 3), -1);
    cr_assert(memcmp(c.result, "abc", 3) == 0);
    context_destroy(&c);
}

Test(context, result_is_replaced_and_bounded)
{
    context c;

    context_init(&c, NULL, 8);
    context_begin(&c, &task);
    cr_assert_eq(wharf_result(&c.base, "first", 5), 0);
    cr_assert_eq(wharf_result(&c.base, "second", 6), 0);
    cr_assert_eq(c.result_len, 6);
    cr_assert(memcmp(c.result, "second", 6) == 0);
    cr_assert_eq(wharf_result(&c.base, "12345678", 8), 0, "max is allowed");
    cr_assert_eq(wharf_result(&c.base, "123456789", 9), -1);
    cr_assert_eq(c.result_len, 8, "a refused result changes nothing");
    cr_assert_eq(wharf_result(&c.base, NULL, 3), -1);
    context_end(&c);
    context_destroy(&c);
}

Test(context, empty_result_counts)
{
    context c;

    context_init(&c, NULL, 8);
    context_begin(&c, &task);
    cr_assert_eq(wharf_result(&c.base, NULL, 0), 0);
    cr_assert(c.has_result);
    cr_assert_eq(c.result_len, 0);
    cr_assert_not_null(c.result, "has_result comes with a buffer");
    cr_assert_eq(wharf_result(&c.base, "", 0), 0);
    cr_assert(c.has_result);
    context_end(&c);
    context_destroy(&c);
}

Test(context, result_grows_to_large_sizes)
{
    size_t len = 3 * 1024 * 1024 + 17;
    unsigned char *data = malloc(len);
    context c;
    size_t i;

    cr_assert_not_null(data);
    for (i = 0; i < len; i++)
        data[i] = (unsigned char)(i * 31);
    context_init(&c, NULL, len);
    context_begin(&c, &task);
    cr_assert_eq(wharf_result(&c.base, "small", 5), 0);
    cr_assert_eq(wharf_result(&c.base, data, len), 0);
    cr_assert_eq(c.result_len, len);
    cr_assert(memcmp(c.result, data, len) == 0);
    cr_assert_leq(c.result_cap, len, "never more than max_result");
    context_end(&c);
    context_destroy(&c);
    free(data);
}

Test(context, begin_clears_result_and_error)
{
    context c;

    context_init(&c, NULL, 8);
    context_begin(&c, &task);
    wharf_result(&c.base, "abc", 3);
    wharf_error(&c.base, "broken: %d", 42);
    context_end(&c);
    cr_assert_str_eq(c.error, "broken: 42");
    context_begin(&c, &task);
    cr_assert_not(c.has_result);
    cr_assert_eq(c.result_len, 0);
    cr_assert_str_eq(c.error, "");
    context_end(&c);
    context_destroy(&c);
}

Test(context, error_is_cut_safely)
{
    char *longer = malloc(CONTEXT_ERROR_LEN * 3);
    context c;

    cr_assert_not_null(longer);
    memset(longer, 'e', CONTEXT_ERROR_LEN * 3 - 1);
    longer[CONTEXT_ERROR_LEN * 3 - 1] = '\0';
    context_init(&c, NULL, 8);
    context_begin(&c, &task);
    wharf_error(&c.base, "%s", longer);
    cr_assert_eq(strlen(c.error), CONTEXT_ERROR_LEN - 1);
    context_end(&c);
    /* Outside a task it is harmless (and kept, for init's failure). */
    wharf_error(&c.base, "after %s", "the call");
    cr_assert_str_eq(c.error, "after the call");
    context_destroy(&c);
    free(longer);
}

Test(context, config_and_state_without_a_plugin)
{
    int value = 7;
    context c;

    context_init(&c, NULL, 8);
    cr_assert_null(wharf_config(&c.base, "anything"));
    cr_assert_null(wharf_state(&c.base));
    c.state = &value;
    cr_assert_eq(wharf_state(&c.base), &value);
    context_destroy(&c);
}

Test(context, log_is_harmless_outside_a_task)
{
    context c;

    log_setup(WHARF_LOG_ERROR, LOG_FORMAT_TEXT);
    context_init(&c, NULL, 8);
    wharf_log(&c.base, WHARF_LOG_DEBUG, "filtered %d", 1);
    wharf_log(&c.base, -5, "clamped to debug, filtered");
    context_begin(&c, &task);
    wharf_log(&c.base, WHARF_LOG_DEBUG, "filtered inside %s", "a task");
    context_end(&c);
    context_destroy(&c);
}

Test(context, destroy_accepts_null_and_repeats)
{
    context c;

    context_destroy(NULL);
    context_init(&c, NULL, 8);
    context_begin(&c, &task);
    wharf_result(&c.base, "abc", 3);
    context_end(&c);
    context_destroy(&c);
    context_destroy(&c);
    cr_assert_null(c.result);
}

/* wharf_retry_in: only inside a task, never negative, the last call wins,
 * and the next task starts without it. */
Test(context, retry_in_is_kept_for_its_call_only)
{
    context c;

    context_init(&c, NULL, 16);
    cr_assert(WHARF_HAS_SERVICE(&c.base, retry_in));
    cr_assert_eq(wharf_retry_in(&c.base, 100), -1, "outside a task");
    cr_assert_eq(c.retry_in_ms, -1);
    context_begin(&c, &task);
    cr_assert_eq(wharf_retry_in(&c.base, -1), -1, "negative");
    cr_assert_eq(c.retry_in_ms, -1);
    cr_assert_eq(wharf_retry_in(&c.base, 2000), 0);
    cr_assert_eq(wharf_retry_in(&c.base, 0), 0);
    cr_assert_eq(c.retry_in_ms, 0, "a later call replaces it");
    context_end(&c);
    cr_assert_eq(c.retry_in_ms, 0, "readable after the call");
    context_begin(&c, &task);
    cr_assert_eq(c.retry_in_ms, -1, "the next call starts without it");
    context_end(&c);
    context_destroy(&c);
}
