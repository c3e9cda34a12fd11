/* The console's own Redis connection, and the budget its waits share in
 * one pass of the loop (console.h). Every command the console sends goes
 * through here. */
#ifndef WHARF_CONSOLE_REDIS_H
#define WHARF_CONSOLE_REDIS_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include "command.h"
#include "console_state.h"
#include "http.h"
#include "pipeline.h"
#include "script.h"

/* The console's Redis waits in one pass of the loop, all together, take
 * at most this long... */
#define CONSOLE_PASS_BUDGET_MS 250
/* ...and a request that needs Redis is begun only while less than this
 * much of it is used: with a fast Redis many requests fit in a pass,
 * with a slow one the first takes the pass and the others are told to
 * come back (503, Retry-After: 1). */
#define CONSOLE_PASS_BUSY_MS 25

/* The console's pipeline, reset, with its nodes found if due and if the
 * budget allows: NULL while Redis is away. */
pipeline *console_connection(console *c);

/* Runs the pipeline within what is left of the budget: 0, or -1 after
 * dropping the connections. */
int console_run_pipe(console *c);

/* Runs the pipeline and takes its n replies into r (NULL-filled on
 * failure): 0, or -1 after dropping the connections. A pipeline that
 * holds other than n commands is not run: -1. */
int console_read_replies(console *c, redisReply **r, size_t n);

void console_free_replies(redisReply **r, size_t n);

/* Runs the call of s built in cmd (lua_scripts.h) with EVALSHA within
 * the budget: the reply (caller frees), or NULL after dropping the
 * connections. */
redisReply *console_run_script(console *c, const script *s, command *cmd);

/* The connection for one request, or NULL after answering 503. */
pipeline *console_redis_for(console *c, http_reply *reply);

#endif /* WHARF_CONSOLE_REDIS_H */
