/* POST /api/replay, /api/purge, /api/cancel, /api/pause and /api/resume
 * (console_actions.c). */
#ifndef WHARF_CONSOLE_ACTIONS_H
#define WHARF_CONSOLE_ACTIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "console_state.h"
#include "http.h"

/* Whether an action may run: actions on, same origin, the token.
 * Answers 403 with why when not. */
bool console_action_allowed(console *c, http_reply *reply);

/* An action's argument: from the query, else from the form, copied into
 * buf; NULL when it has none. */
const char *console_action_arg(const char *name, char *buf, size_t len);

/* what: "replay", "purge", "cancel", "pause" or "resume". */
void console_action(console *c, const char *what, http_reply *reply);

#endif /* WHARF_CONSOLE_ACTIONS_H */
