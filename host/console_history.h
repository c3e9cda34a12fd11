/* GET /api/history (console_history.c): the fleet's history (history.h)
 * of one type or of every type of the fleet (<prefix>:types), summed over
 * all hosts or taken from one, per minute over the last 1 to 1440
 * minutes. */
#ifndef WHARF_CONSOLE_HISTORY_H
#define WHARF_CONSOLE_HISTORY_H

#include "console_state.h"
#include "http.h"

/* The most minutes one request reads: 24 h. */
#define CONSOLE_HISTORY_MINUTES_MAX 1440
/* The most types summed when none is named (the first by name). */
#define CONSOLE_HISTORY_TYPES_MAX 256
/* The most minute keys one request reads (types x minutes): some 100 ms
 * of Redis time, well inside the pass's budget; 34 types over 24 h. */
#define CONSOLE_HISTORY_READS_MAX 50000

void console_history(console *c, http_reply *reply);

#endif /* WHARF_CONSOLE_HISTORY_H */
