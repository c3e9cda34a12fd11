/* Walking a type's dead set a page at a time, for the commands that act on
 * all of it (dead replay --all, dead purge). */
#ifndef WHARF_CLI_DEAD_PAGES_H
#define WHARF_CLI_DEAD_PAGES_H

#include "cli.h"
#include "script.h"

/* Handles n ids of one page; 0 or an exit code. */
typedef int (*dead_page_fn)(cli *ctx, redisContext *redis, const char *type,
                            const char *const *ids, size_t n, void *arg);

/* Loads s, then hands fn the dead set of type a page of up to chunk ids at
 * a time, oldest first (fn is expected to take them out of the set). It
 * stops after as many ids as the set held at the start, so an id that dies
 * again meanwhile is not visited twice. what names the command in errors.
 * Returns 0 or an exit code. */
int dead_each_page(cli *ctx, const char *what, const char *type,
                   const script *s, long chunk, dead_page_fn fn, void *arg);

#endif /* WHARF_CLI_DEAD_PAGES_H */
