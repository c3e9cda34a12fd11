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

/* The --tls-ca, --tls-cert, --tls-key, --tls-sni and --tls-verify values
 * (NULL: not given), in that order. */
#define ADDRESS_TLS_OPTIONS 5
extern const char *const address_tls_options[ADDRESS_TLS_OPTIONS];

/* Adds the given TLS options to ctx->url as its query parameters (after
 * address_resolve). 0, or 78 after one line on stderr: an option without
 * a rediss URL, one the URL gives too, a URL too long, or a value the
 * parser refuses. */
int address_add_tls(cli *ctx, const char *const values[ADDRESS_TLS_OPTIONS]);

#endif /* WHARF_CLI_ADDRESS_H */
