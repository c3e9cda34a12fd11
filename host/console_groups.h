/* GET /api/group?group=G (docs/console.md): one workflow group's
 * progress, one page of the console (console.h says how the files are
 * layered). */
#ifndef WHARF_CONSOLE_GROUPS_H
#define WHARF_CONSOLE_GROUPS_H

#include "console.h"
#include "http.h"

/* Answers GET /api/group: {"api":1,"group":G,"n":..,"ok":..,"dead":..,
 * "pending":..,"callback_type":..,"callback":"waiting"|"due"|
 * "enqueued"|"cancelled"}; 404 when there is no such group. */
void console_group(console *c, http_reply *reply);

#endif /* WHARF_CONSOLE_GROUPS_H */
