/* GET /api/schedules (docs/console.md): the schedules this host's timer
 * runs, from the figures it keeps in the shared metrics (no Redis read),
 * one page of the console (console.h says how the files are layered). */
#ifndef WHARF_CONSOLE_SCHEDULES_H
#define WHARF_CONSOLE_SCHEDULES_H

#include "console.h"
#include "http.h"

/* Answers GET /api/schedules: {"api":1,"time_ms":..,"schedules":[..]}. */
void console_schedules(console *c, http_reply *reply);

#endif /* WHARF_CONSOLE_SCHEDULES_H */
