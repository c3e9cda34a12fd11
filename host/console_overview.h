/* GET /api/overview (console_overview.c). */
#ifndef WHARF_CONSOLE_OVERVIEW_H
#define WHARF_CONSOLE_OVERVIEW_H

#include "console_state.h"
#include "http.h"

void console_overview(console *c, http_reply *reply);

#endif /* WHARF_CONSOLE_OVERVIEW_H */
