/* The host side of wharf_ctx: the services a plugin calls during init and
 * process_business. A context keeps the result and failure reason of one
 * call; the worker reads them after the call returns. */
#include "context.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "clock_ms.h"
#include "loader.h"
#include "log.h"

/* The longest wharf_log message; a longer one is cut. */
#define CONTEXT_LOG_LEN 4096

static context *context_of(wharf_ctx *ctx)
{
    /* base is the first member, so this is the context the host made. */
    return (context *)ctx;
}

/* Copies len bytes of data into the result. Refuses (-1, result as before)
 * outside process_business, over max_result, or out of memory. */
static int context_result(wharf_ctx *ctx, const void *data, size_t len)
{
    context *c = context_of(ctx);
    int rc = -1;

    if (c->task == NULL || len > c->max_result || (data == NULL && len > 0))
        goto out;
    /* Allocated even for an empty result, so that has_result always comes
     * with a non-NULL result pointer. */
    if (len > c->result_cap || c->result == NULL) {
        size_t cap = c->result_cap ? c->result_cap : 256;
        unsigned char *grown;

        while (cap < len)
            cap = cap > c->max_result / 2 ? c->max_result : cap * 2;
        grown = realloc(c->result, cap);
        if (grown == NULL)
            goto out;
        c->result = grown;
        c->result_cap = cap;
    }
    if (len > 0)
        memcpy(c->result, data, len);
    c->result_len = len;
    c->has_result = true;
    rc = 0;
out:
    return rc;
}

/* Formats the failure reason into error[], cut to fit. Outside a task it is
 * kept too: loader_init reports it when init fails. */
static void context_error(wharf_ctx *ctx, const char *fmt, va_list ap)
{
    context *c = context_of(ctx);

    if (vsnprintf(c->error, sizeof c->error, fmt, ap) < 0)
        c->error[0] = '\0';
}

/* Formats the message and hands it to the host logger with the plugin and,
 * inside a task, the task named. */
static void context_log(wharf_ctx *ctx, int level, const char *fmt, va_list ap)
{
    context *c = context_of(ctx);
    char msg[CONTEXT_LOG_LEN];
    char trace[64];
    log_field fields[4];
    size_t n = 0;

    if (level < WHARF_LOG_DEBUG)
        level = WHARF_LOG_DEBUG;
    if (level > WHARF_LOG_ERROR)
        level = WHARF_LOG_ERROR;
    if (!log_enabled(level))
        return;
    if (vsnprintf(msg, sizeof msg, fmt, ap) < 0)
        snprintf(msg, sizeof msg, "(bad log format)");
    /* The manifest's section name: two sections may load one .so. */
    fields[n++] =
        LOG_STR("plugin", c->plugin == NULL    ? NULL
                          : c->plugin->section ? c->plugin->section->name
                                               : c->plugin->name);
    if (c->task != NULL) {
        fields[n++] = LOG_STR("task", c->task->id);
        fields[n++] = LOG_STR("type", c->task->type);
        /* The traceparent's trace id, as the host's task lines log it,
         * so one grep finds a task's every line. */
        if (c->task->trace && strlen(c->task->trace) == 55)
            snprintf(trace, sizeof trace, "%.32s", c->task->trace + 3);
        else
            snprintf(trace, sizeof trace, "%s",
                     c->task->trace ? c->task->trace : "");
        fields[n++] = LOG_STR("trace_id", trace);
    }
    log_fields(level, msg, fields, n);
}

/* The plugin's own manifest key, or NULL (always NULL when autoloaded: an
 * autoloaded plugin has no section); "threads" always (plugin.h). */
static const char *context_config(wharf_ctx *ctx, const char *key)
{
    context *c = context_of(ctx);

    if (key == NULL || c->plugin == NULL)
        return NULL;
    /* The host's key of the section, as the loader resolved it: how many
     * calls of this plugin a worker makes at once. */
    if (strcmp(key, "threads") == 0)
        return c->plugin->threads_text;
    if (c->plugin->section == NULL)
        return NULL;
    return config_plugin_value(c->plugin->section, key);
}

/* What init stored: read from the plugin at each call, so a context made
 * before init sees the state once init has run. */
static void *context_state(wharf_ctx *ctx)
{
    context *c = context_of(ctx);

    return c->plugin ? c->plugin->state : c->state;
}

/* Milliseconds left, 0 once passed, -1 outside a task. */
static int64_t context_deadline(wharf_ctx *ctx)
{
    context *c = context_of(ctx);
    int64_t left;

    if (c->task == NULL || c->deadline_ms == 0)
        return -1;
    left = c->deadline_ms - clock_ms();
    return left > 0 ? left : 0;
}

static int context_cancelled_service(wharf_ctx *ctx)
{
    context *c = context_of(ctx);

    return c->task != NULL && context_cancelled(c);
}

bool context_cancelled(const context *c)
{
    if (c->ask && c->ask_run && atomic_load(&c->ask->cancel) == c->ask_run)
        return true;
    return c->deadline_ms != 0 && clock_ms() > c->deadline_ms;
}

void context_set_deadline(context *c, int64_t deadline_ms, const slot_ask *ask,
                          uint32_t run)
{
    c->deadline_ms = deadline_ms;
    c->ask = ask;
    c->ask_run = run;
}

static int context_phase(wharf_ctx *ctx)
{
    return context_of(ctx)->phase;
}

static int context_retry_in(wharf_ctx *ctx, int64_t ms)
{
    context *c = context_of(ctx);

    if (c->task == NULL || ms < 0)
        return -1;
    c->retry_in_ms = ms;
    return 0;
}

/* The value of field name in an HGETALL reply, or NULL. */
static const redisReply *context_hash_field(const redisReply *r,
                                            const char *name, size_t len)
{
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements;
         i += 2)
        if (r->element[i]->len == len &&
            memcmp(r->element[i]->str, name, len) == 0)
            return r->element[i + 1];
    return NULL;
}

/* Parent i of c->parents: its name is the i-th item of the list, its
 * notice the field of that name, "o" + result or "d" (wf_notify.lua). */
static int context_parent_result(wharf_ctx *ctx, size_t i, const char **name,
                                 const void **data, size_t *len)
{
    context *c = context_of(ctx);
    const char *item = c->parents, *end;
    const redisReply *notice;

    if (c->task == NULL || item == NULL)
        return -1;
    for (;;) {
        end = strchr(item, ',');
        if (i == 0)
            break;
        if (!end)
            return -1;
        item = end + 1;
        i--;
    }
    notice = context_hash_field(c->parent_results, item,
                                end ? (size_t)(end - item) : strlen(item));
    if (!notice || notice->type != REDIS_REPLY_STRING || notice->len < 1)
        return -1;
    if (name) {
        /* The field's own bytes: NUL-terminated, and named alone. */
        const redisReply *r = c->parent_results;
        for (size_t k = 0; k + 1 < r->elements; k += 2)
            if (r->element[k + 1] == notice)
                *name = r->element[k]->str;
    }
    if (notice->str[0] == 'd')
        return 1;
    if (data)
        *data = notice->str + 1;
    if (len)
        *len = notice->len - 1;
    return 0;
}

void context_set_parents(context *c, const char *parents, redisReply *results)
{
    freeReplyObject(c->parent_results);
    c->parents = parents;
    c->parent_results = results;
}

static const wharf_services context_services = {
    .size = sizeof(wharf_services),
    .result = context_result,
    .error = context_error,
    .log = context_log,
    .config = context_config,
    .state = context_state,
    .deadline_ms = context_deadline,
    .cancelled = context_cancelled_service,
    .phase = context_phase,
    .retry_in = context_retry_in,
    .parent_result = context_parent_result,
};

void context_init(context *c, const struct loaded_plugin *plugin,
                  size_t max_result)
{
    memset(c, 0, sizeof *c);
    c->base.services = &context_services;
    c->plugin = plugin;
    c->state = plugin ? plugin->state : NULL;
    c->max_result = max_result;
    c->retry_in_ms = -1;
}

void context_begin(context *c, const wharf_task *task)
{
    c->task = task;
    c->result_len = 0;
    c->has_result = false;
    c->error[0] = '\0';
    c->deadline_ms = 0;
    c->ask = NULL;
    c->ask_run = 0;
    c->retry_in_ms = -1;
    context_set_parents(c, NULL, NULL);
}

void context_end(context *c)
{
    c->task = NULL;
}

void context_destroy(context *c)
{
    if (c == NULL)
        return;
    free(c->result);
    c->result = NULL;
    c->result_len = 0;
    c->result_cap = 0;
    c->has_result = false;
    context_set_parents(c, NULL, NULL);
}
