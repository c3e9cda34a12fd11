/* wharf stats --history: the fleet's history (host/history.h) of the
 * types given, per minute over the last while, as a table or JSON. */
#ifndef WHARF_CLI_STATS_HISTORY_H
#define WHARF_CLI_STATS_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli.h"

/* Reads and prints the history of the n types over the last last_ms
 * (whole minutes, the one under way last), summed over every host, or of
 * host alone when not NULL. 0 or an exit code. */
int stats_history(cli *ctx, const char *const *types, size_t n, int64_t last_ms,
                  const char *host, bool json);

#endif /* WHARF_CLI_STATS_HISTORY_H */
