/* The host side of wharf_ctx: the services table a plugin calls, and the
 * per-call state behind it (the result buffer and the failure reason). */
#ifndef WHARF_CONTEXT_H
#define WHARF_CONTEXT_H

#include <stdbool.h>
#include <stddef.h>

#include <wharf/plugin.h>

#include "config.h"
#include "slots.h"

#define CONTEXT_ERROR_LEN 1024

struct loaded_plugin;

typedef struct context {
    wharf_ctx base; /* first, so a wharf_ctx * is a context * */
    const struct loaded_plugin *plugin;
    const wharf_task *task; /* NULL outside process_business */
    void *state;            /* wharf_state's answer when plugin is NULL */
    size_t max_result;      /* largest result wharf_result accepts */

    unsigned char *result; /* owned; valid until the next context_begin;
                              non-NULL whenever has_result */
    size_t result_len;
    size_t result_cap;
    bool has_result;
    char error[CONTEXT_ERROR_LEN]; /* "" if the plugin set no reason */

    int64_t deadline_ms; /* CLOCK_MONOTONIC; 0: no deadline */
    const slot_ask *ask; /* where the supervisor asks this call's entry
                            to end, or NULL */
    uint32_t ask_run;    /* the slot's `run` of this call */
    int phase;           /* WHARF_PHASE_*: what wharf_phase answers */
    int64_t retry_in_ms; /* wharf_retry_in's delay, or -1 */
    /* workflows: the running task's parents ("<type>:<id>,...", in the
     * reply's storage) and what they ended with (HGETALL of its
     * parents:<id>, owned), or NULL */
    const char *parents;
    struct redisReply *parent_results;
} context;

/* Prepares c for calls into `plugin` (whose state it reads at each call). */
void context_init(context *c, const struct loaded_plugin *plugin,
                  size_t max_result);

/* Starts a process_business call for `task`: clears result, error and
 * retry delay. */
void context_begin(context *c, const wharf_task *task);

/* Gives the call under way a deadline (clock_ms() clock) and, with its
 * entry's asks in a slot, the run number the supervisor names when it
 * asks that call to end. */
void context_set_deadline(context *c, int64_t deadline_ms, const slot_ask *ask,
                          uint32_t run);

/* True once the deadline has passed or the supervisor asked the task to
 * end. */
bool context_cancelled(const context *c);

/* Gives the call under way its parents' list and results (reply of
 * HGETALL parents:<id>, whose ownership passes to c; may be NULL), for
 * wharf_parent_result. */
void context_set_parents(context *c, const char *parents,
                         struct redisReply *results);

/* Ends the call: services used after it no longer see the task. The result
 * and error stay readable until the next context_begin. */
void context_end(context *c);

/* Frees the result buffer. Accepts NULL. */
void context_destroy(context *c);

#endif /* WHARF_CONTEXT_H */
