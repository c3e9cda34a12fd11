/* Where the wharf CLI finds Redis: --redis, else the manifest of --config,
 * else WHARF_REDIS_URL, else redis://127.0.0.1:6379 (wharf(1)). */
#ifndef WHARF_CLI_ADDRESS_H
#define WHARF_CLI_ADDRESS_H

#include "cli.h"

/* Fills ctx->url, ->password, ->prefix and ->config (which ctx then owns)
 * from the --redis and --config values (NULL if not given) and the
 * environment. 0, or the exit code after one line on stderr: 78 for a bad
 * manifest or Redis address (--redis, the manifest's, WHARF_REDIS_URL). */
int address_resolve(cli *ctx, const char *redis_option,
                    const char *config_path);

#endif /* WHARF_CLI_ADDRESS_H */
