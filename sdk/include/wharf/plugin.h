/* The wharf plugin ABI (WHARF_PLUGIN_ABI below); wharf-plugin(3).
 *
 * A plugin is one C file compiled against this header alone. It defines one
 * descriptor with WHARF_PLUGIN(...) and reaches the host only through the
 * function table behind wharf_ctx, so it links nothing of the host. */
#ifndef WHARF_PLUGIN_H
#define WHARF_PLUGIN_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever wharf_plugin, wharf_task or the meaning of an existing
 * service changes. Appending a service at the end of wharf_services does
 * not bump it: a plugin asks for a newer service with WHARF_HAS_SERVICE,
 * and the wrappers of services appended after the first release check it
 * themselves. A field appended at the end of wharf_plugin does bump it,
 * but keeps the ABIs from WHARF_PLUGIN_ABI_OLDEST on loadable: the host
 * reads an appended field only from a plugin whose abi has it, so an
 * older plugin's shorter descriptor is never read past its end, and the
 * field counts as 0 (its default) there. The host refuses a plugin whose
 * abi is outside that range, saying which ABIs it loads.
 * ABI 2: fini receives a ctx (it can log and read its config).
 * ABI 3: .thread_safe appended (ABI 2 plugins load, as not thread-safe). */
#define WHARF_PLUGIN_ABI 3
#define WHARF_PLUGIN_ABI_OLDEST 2

#if defined(__GNUC__)
#define WHARF_EXPORT __attribute__((visibility("default")))
#define WHARF_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define WHARF_EXPORT
#define WHARF_PRINTF(fmt, args)
#endif

/* What process_business returns. The numbers never change. */
typedef enum wharf_status {
    WHARF_OK = 0,    /* done: the result (possibly empty) is cached */
    WHARF_RETRY = 1, /* transient failure: try again after a backoff */
    WHARF_FAIL = 2   /* permanent failure: dead set, no retry */
} wharf_status;

enum {
    WHARF_LOG_DEBUG = 0,
    WHARF_LOG_INFO = 1,
    WHARF_LOG_WARN = 2,
    WHARF_LOG_ERROR = 3
};

/* One task, as handed to process_business. Everything it points to is owned
 * by the host and valid only during the call. */
typedef struct wharf_task {
    const char *id;               /* idempotency key, printable ASCII */
    const char *type;             /* the queue it came from */
    const char *trace;            /* W3C traceparent, never NULL */
    const unsigned char *payload; /* binary-safe, payload_len bytes */
    size_t payload_len;
    unsigned attempt;      /* 1 on the first run */
    unsigned max_attempts; /* the type's policy */
    uint64_t fence;        /* fencing token of this run, grows per id */
    int64_t enqueued_at_ms;
} wharf_task;

typedef struct wharf_ctx wharf_ctx;

/* The host's services. Filled by the host; plugins call them through the
 * inline wrappers below. New services are only ever appended, and `size`
 * tells a plugin built against a newer header which ones exist. */
typedef struct wharf_services {
    size_t size; /* sizeof(wharf_services) of the host that filled it */
    int (*result)(wharf_ctx *ctx, const void *data, size_t len);
    void (*error)(wharf_ctx *ctx, const char *fmt, va_list ap);
    void (*log)(wharf_ctx *ctx, int level, const char *fmt, va_list ap);
    const char *(*config)(wharf_ctx *ctx, const char *key);
    void *(*state)(wharf_ctx *ctx);
    /* Appended after the first release; see the wrappers below. */
    int64_t (*deadline_ms)(wharf_ctx *ctx);
    int (*cancelled)(wharf_ctx *ctx);
    int (*phase)(wharf_ctx *ctx);
    int (*retry_in)(wharf_ctx *ctx, int64_t ms);
    int (*parent_result)(wharf_ctx *ctx, size_t i, const char **name,
                         const void **data, size_t *len);
} wharf_services;

/* Where a plugin's code is running; see wharf_phase. */
enum {
    WHARF_PHASE_WORKER = 0, /* a worker process: init once, then tasks */
    WHARF_PHASE_CHECK = 1,  /* a check (start, reload, wharfd --check):
                               init then fini at once, no task */
    WHARF_PHASE_RUN = 2     /* `wharf run`: one task, no Redis */
};

/* True if the host that filled the table has the service `member`: how a
 * plugin asks what the host supports, since one built against a newer
 * header must not call past an older host's table. The first five
 * services (result to state) are in every host; the wrappers of the later
 * ones check this themselves and answer a documented default. */
#define WHARF_HAS_SERVICE(ctx, member)                                        \
    ((ctx)->services->size >= offsetof(wharf_services, member) +              \
                                  sizeof((ctx)->services->member) &&          \
     (ctx)->services->member != NULL)

/* The host's context starts with this; the rest is private to the host. */
struct wharf_ctx {
    const wharf_services *services;
};

/* Sets the task's result (copied; a later call replaces it). 0 on success,
 * -1 if it cannot be kept (too large, out of memory, or not inside
 * process_business). */
static inline int wharf_result(wharf_ctx *ctx, const void *data, size_t len)
{
    return ctx->services->result(ctx, data, len);
}

/* Sets the failure reason kept with the task when it retries or dies. */
static inline WHARF_PRINTF(2, 3) void wharf_error(wharf_ctx *ctx,
                                                  const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ctx->services->error(ctx, fmt, ap);
    va_end(ap);
}

/* Writes a log line through the host's logger, naming plugin and task. */
static inline WHARF_PRINTF(3, 4) void wharf_log(wharf_ctx *ctx, int level,
                                                const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ctx->services->log(ctx, level, fmt, ap);
    va_end(ap);
}

/* The value of one of the plugin's own keys in its [plugin.NAME] manifest
 * section, or NULL if absent. Owned by the host. "threads" is the host's
 * and always answered: how many calls of the plugin a worker makes at
 * once (its section's threads, else [host] threads for a thread-safe
 * plugin, else 1). */
static inline const char *wharf_config(wharf_ctx *ctx, const char *key)
{
    return ctx->services->config(ctx, key);
}

/* What init stored in *state (NULL if there is no init). */
static inline void *wharf_state(wharf_ctx *ctx)
{
    return ctx->services->state(ctx);
}

/* Milliseconds left before the running task's deadline (its type's
 * `timeout`, counted from the start of this process_business call): 0 once
 * it has passed, -1 outside process_business or on a host without the
 * service. Use it to bound waits (poll, connect, a client's timeout).
 * Whatever process_business returns after the deadline is thrown away:
 * the attempt fails with "timeout after N ms", retried or dead by the
 * type's policy, exactly as if the worker had been killed. */
static inline int64_t wharf_deadline_ms(wharf_ctx *ctx)
{
    if (!WHARF_HAS_SERVICE(ctx, deadline_ms))
        return -1;
    return ctx->services->deadline_ms(ctx);
}

/* Non-zero once the host asks the running task to end early: its deadline
 * passed. A plugin doing long work checks it between steps and returns
 * (any status: the host already knows the outcome). One that does not
 * return is killed with SIGKILL a short grace later. 0 outside
 * process_business or on a host without the service. */
static inline int wharf_cancelled(wharf_ctx *ctx)
{
    if (!WHARF_HAS_SERVICE(ctx, cancelled))
        return 0;
    return ctx->services->cancelled(ctx);
}

/* Which phase the plugin's code runs in (WHARF_PHASE_*), during init,
 * process_business and fini; -1 on a host without the service. A plugin
 * whose init opens connections or starts threads can skip that in
 * WHARF_PHASE_CHECK, where only loading is being checked.
 *
 * What runs when. init runs once in each worker process, before its first
 * task (a worker restarted after a crash or a reload runs it again), and
 * once in a short-lived check process at start, at `wharfd --check` and
 * at each reload, where fini follows at once; `wharf run` runs init, one
 * process_business and fini. fini runs when the process stops serving
 * (a worker's graceful stop, the end of a check), never after a crash or a
 * kill: anything that must not outlive the process belongs to it. The
 * check and each worker are separate processes, so what init stores in
 * *state is that process's own. */
static inline int wharf_phase(wharf_ctx *ctx)
{
    if (!WHARF_HAS_SERVICE(ctx, phase))
        return -1;
    return ctx->services->phase(ctx);
}

/* Asks that, if this call returns WHARF_RETRY, the next attempt start ms
 * milliseconds after it, in place of the type's backoff: for an API that
 * says when to come back (HTTP Retry-After, a quota's reset time). The
 * host caps it at the type's `max_retry_delay`; a later call replaces it;
 * it is ignored for any other status, and on the last attempt the task
 * is dead as usual. 0 once taken; -1 outside process_business, for
 * ms < 0, or on a host without the service (the backoff applies). */
static inline int wharf_retry_in(wharf_ctx *ctx, int64_t ms)
{
    if (!WHARF_HAS_SERVICE(ctx, retry_in))
        return -1;
    return ctx->services->retry_in(ctx, ms);
}

/* Workflows: what parent i (from 0, in the order the child named them
 * with --after) of the running task ended with. 0: it finished ok, *data
 * and *len are its result (owned by the host until process_business
 * returns); 1: it is dead (no result; the child runs because its
 * on_parent_dead is run); -1: no parent i (a task without parents, i past
 * the last, outside process_business, or a host without the service). name (may be NULL) gets "<type>:<id>". The
 * results are the host's copies, kept for the child whatever the
 * parents' result_ttl. */
static inline int wharf_parent_result(wharf_ctx *ctx, size_t i,
                                      const char **name, const void **data,
                                      size_t *len)
{
    if (!WHARF_HAS_SERVICE(ctx, parent_result))
        return -1;
    return ctx->services->parent_result(ctx, i, name, data, len);
}

/* Signals, EINTR and threads. A worker process blocks SIGTERM, SIGINT and
 * SIGHUP for its whole life, and threads a plugin starts inherit that
 * mask, so no stop, reload or Ctrl-C ever interrupts a plugin's system
 * call with EINTR: a stop or a reload is a request the worker reads
 * between tasks, and the task in hand finishes (up to shutdown_timeout).
 * The host signals a worker only with SIGKILL: after a task's deadline
 * plus a short grace, or at the end of shutdown_timeout; a worker also
 * dies with SIGKILL when its supervisor dies. SIGPIPE is ignored: a write
 * to a closed socket fails with EPIPE. A plugin must not unblock those
 * signals or install handlers for them. It may start threads, but the
 * services above are for the thread that runs process_business (or init),
 * during that call, with that call's ctx; a plugin with .thread_safe = 1
 * may have several such calls at once, one per thread. */

/* The descriptor. `abi` comes first so the host can check it before it
 * trusts the rest of the layout. */
typedef struct wharf_plugin {
    uint32_t abi;
    const char *name;
    const char *version;
    const char *const *types; /* NULL-terminated, optional */
    int (*init)(wharf_ctx *ctx, void **state);
    wharf_status (*process_business)(wharf_ctx *ctx, const wharf_task *task);
    void (*fini)(wharf_ctx *ctx, void *state);
    /* From ABI 3. 1: process_business may run on several threads of one
     * process at once, each call with its own ctx, so a manifest may give
     * the plugin more than one thread. It then must keep what init stored
     * in *state safe to share (read-only, or guarded by its own locks),
     * keep per-task data in locals or in memory it allocates per call, and
     * call only thread-safe library functions (no strtok, no static
     * buffers). Every service is safe from any process_business call, for
     * that call's ctx. init and fini still run alone. 0 (the default, and
     * what an ABI 2 plugin counts as): one call at a time per process. */
    int thread_safe;
} wharf_plugin;

/* Defines and exports the plugin's descriptor:
 *   WHARF_PLUGIN(.name = "echo", .version = "1.0.0",
 *                .process_business = process_business);
 * Its symbol keeps the name wharf_plugin_v1 whatever the ABI: .abi, read
 * first, tells the ABIs apart. */
#define WHARF_PLUGIN(...)                                                     \
    extern WHARF_EXPORT const wharf_plugin wharf_plugin_v1;                   \
    WHARF_EXPORT const wharf_plugin wharf_plugin_v1 = {                       \
        .abi = WHARF_PLUGIN_ABI, __VA_ARGS__}

#ifdef __cplusplus
}
#endif

#endif /* WHARF_PLUGIN_H */
