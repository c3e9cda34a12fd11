/* GET /api/dead/search and POST /api/dead/replay, /api/dead/purge
 * (console_dead_search.c): the dead set searched by the CLI's filters
 * (grep, since, before, attempts, id prefix) and the matches replayed or
 * purged, each request a few bounded steps of the shared walk
 * (dead_search.h) that hands back a cursor to go on from. */
#ifndef WHARF_CONSOLE_DEAD_SEARCH_H
#define WHARF_CONSOLE_DEAD_SEARCH_H

#include "console_state.h"
#include "http.h"

/* Pages of DEAD_SEARCH_PAGE ids one search request reads at most (each
 * two round trips of well under a millisecond or two of Redis time). */
#define CONSOLE_SEARCH_PAGES 5

void console_dead_search(console *c, http_reply *reply);

/* what: "replay" or "purge": one page of matches, behind the actions'
 * checks (console_actions.h). */
void console_dead_bulk(console *c, const char *what, http_reply *reply);

#endif /* WHARF_CONSOLE_DEAD_SEARCH_H */
