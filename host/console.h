/* The console: a page at / and a JSON API under /api/ on the metrics
 * listener (docs/console.md), served from the supervisor's loop.
 *
 * Overview figures come from what the supervisor already holds (queue
 * figures, slots, shared counters) plus a ring of per-second samples of
 * the counters kept here; reads that need Redis (the dead set, one task,
 * which hosts serve a type) and the actions use a connection of the
 * console's own and bounded commands. All the console's waits on Redis
 * in one pass of the loop (from one console_tick to the next) share one
 * budget, CONSOLE_PASS_BUDGET_MS, enforced as the socket timeout of
 * each wait, so however many requests come in while Redis is slow, the
 * loop's timeouts and renewals are held up by at most that much; a
 * request that finds the budget used, or Redis away, is answered 503
 * with Retry-After. Actions (replay, purge, cancel) are off unless the
 * manifest says [console] actions = yes; they need its token and pass a
 * cross-origin check. */
#ifndef WHARF_CONSOLE_H
#define WHARF_CONSOLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "http.h"
#include "metrics.h"
#include "slots.h"

/* The console's Redis waits in one pass of the loop, all together, take
 * at most this long... */
#define CONSOLE_PASS_BUDGET_MS 250
/* ...and a request that needs Redis is begun only while less than this
 * much of it is used: with a fast Redis many requests fit in a pass,
 * with a slow one the first takes the pass and the others are told to
 * come back (503, Retry-After: 1). */
#define CONSOLE_PASS_BUSY_MS 25
/* Dead-set page size bound (GET /api/dead?limit=). */
#define CONSOLE_PAGE_MAX 100
/* Per-second samples kept for the rate charts. */
#define CONSOLE_SAMPLES 301

typedef struct console console;

/* One worker slot as the supervisor sees it. */
typedef struct console_slot {
    const char *consumer;
    pid_t pid;                /* 0 when not running */
    int state;                /* slot_state, or -1 when down */
    char type[SLOT_TYPE_MAX]; /* of the running task, or "" */
    char id[SLOT_ID_MAX];
    int64_t running_ms; /* how long that task has run */
    int64_t up_ms;      /* how long this process has lived */
    uint32_t batch_n;
    int64_t restart_in_ms; /* waiting to be started again, or 0 */
} console_slot;

/* What the supervisor knows right now, filled on demand by its
 * console_view_fn into memory the console owns. */
typedef struct console_view {
    const config *cfg;        /* the manifest in effect */
    const char *const *types; /* served, n_types of them */
    size_t n_types;
    const queue_figures *figures; /* one per type, in the same order, from
                                     the last refresh (type NULL before
                                     the first) */
    bool figures_ok;              /* the last refresh worked */
    bool redis_up;                /* the supervisor's own connection */
    worker_figures workers;
    console_slot *slots; /* n_slots (fixed at console_create) */
    size_t n_slots;
} console_view;

typedef void (*console_view_fn)(void *arg, console_view *view);

/* Makes the console of one host: name is "<hostname>:<instance>",
 * url the Redis address the supervisor uses (its "embedded" already
 * resolved), m the shared counters, n_slots the workers. view is called
 * whenever the console needs the supervisor's figures. Connects nothing
 * yet. Out of memory aborts (xmalloc.h), but for presence_create's, which
 * is NULL. */
console *console_create(const char *name, const char *url, metrics *m,
                        size_t n_slots, console_view_fn view, void *arg);

/* Withdraws this host's presence (best effort), disconnects and frees.
 * Accepts NULL. */
void console_destroy(console *c);

/* Call once every loop pass: it begins the pass's Redis budget, and once
 * a second samples the counters and publishes and reads hosts' presence
 * (presence.h, within that budget). */
void console_tick(console *c, int64_t now_ms);

/* A worker of slot index ended: why (restart_reason) and how ("signal
 * SIGSEGV", "exit 3"), for the slot list. */
void console_worker_exited(console *c, size_t index, restart_reason why,
                           const char *how);

/* True for the paths the console answers: "/" and "/api/...", and its
 * assets. */
bool console_handles(const char *path);

/* Answers one request (method, path; headers and query through
 * http_header / http_query). */
void console_http(console *c, const char *method, const char *path,
                  http_reply *reply);

#endif /* WHARF_CONSOLE_H */
