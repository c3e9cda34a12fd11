/* The console: a page at / and a JSON API under /api/ on the metrics
 * listener (docs/console.md), served from the supervisor's loop.
 *
 * Overview figures come from what the supervisor already holds (queue
 * figures, slots, shared counters) plus a ring of per-second samples of
 * the counters kept here; reads that need Redis (the dead set, one task,
 * which hosts serve a type) and the actions use a connection of the
 * console's own and bounded commands. All the console's waits on Redis
 * in one pass of the loop (from one console_tick to the next) share one
 * budget, CONSOLE_PASS_BUDGET_MS (console_redis.h), enforced as the
 * socket timeout of each wait, so however many requests come in while
 * Redis is slow, the loop's timeouts and renewals are held up by at most
 * that much; a request that finds the budget used, or Redis away, is
 * answered 503 with Retry-After. Actions (replay, purge, cancel) are off
 * unless the manifest says [console] actions = yes; they need its token
 * and pass a cross-origin check.
 *
 * The console's files stand in layers, each calling only those below:
 * console.c (this API and the routing) on the pages (console_overview.c,
 * console_tasks.c, console_actions.c, console_schedules.c), on
 * console_redis.c and
 * console_sample.c, on console_reply.c; console_state.h is the state
 * they share, console_view.h what the supervisor shows them. */
#ifndef WHARF_CONSOLE_H
#define WHARF_CONSOLE_H

#include <stdbool.h>
#include <stdint.h>

#include "console_view.h"
#include "http.h"
#include "metrics.h"

/* Makes the console of one host: name is "<hostname>:<instance>",
 * url the Redis address the supervisor uses (its "embedded" already
 * resolved), m the shared counters, n_slots the workers. view is called
 * whenever the console needs the supervisor's figures. Connects nothing
 * yet. Out of memory aborts (xmalloc.h). */
console *console_create(const char *name, const char *url, metrics *m,
                        size_t n_slots, console_view_fn view, void *arg);

/* Disconnects and frees. Accepts NULL. */
void console_destroy(console *c);

/* Call once every loop pass: it begins the pass's Redis budget, and once
 * a second samples the counters and reads hosts' presence (presence.h,
 * within that budget; the supervisor's heartbeat writes this host's, in
 * supervisor_instance.c, console or not). */
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
