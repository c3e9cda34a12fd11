/* POST /api/replay, /api/purge, /api/cancel, /api/pause and /api/resume
 * (console_actions.c). */
#ifndef WHARF_CONSOLE_ACTIONS_H
#define WHARF_CONSOLE_ACTIONS_H

#include "console_state.h"
#include "http.h"

/* what: "replay", "purge", "cancel", "pause" or "resume". */
void console_action(console *c, const char *what, http_reply *reply);

#endif /* WHARF_CONSOLE_ACTIONS_H */
