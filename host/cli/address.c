/* Where the wharf CLI finds Redis; see address.h. */
#include "address.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "quote.h"
#include "redis_url.h"

#define DEFAULT_URL "redis://127.0.0.1:6379"
#define DEFAULT_PREFIX "wharf"

/* The manifest's url: "embedded" means the socket of the server the
 * supervisor runs under data_dir. 0, or -1 if it does not fit. */
static int manifest_url(const config *cfg, char *buf, size_t len)
{
    int n;

    if (strcmp(cfg->redis_url, "embedded") == 0)
        n = snprintf(buf, len, "unix://%s/redis.sock", cfg->data_dir);
    else
        n = snprintf(buf, len, "%s", cfg->redis_url);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* Checks ctx->url, which came from `source` (shown as it is: the caller
 * quotes a path); 0, or 78 after saying why. A bad address is
 * configuration wherever it came from, as wharfd says of its own. */
static int check_url(cli *ctx, const char *source)
{
    char err[CLI_ERR_MAX], shown[sizeof(ctx->url)];
    redis_url parsed;

    if (redis_url_parse(ctx->url, &parsed, err, sizeof(err)) != 0) {
        redis_url_redact(ctx->url, shown, sizeof(shown));
        fprintf(stderr, "wharf: %s: bad Redis URL '%s': %s\n", source, shown,
                err);
        return EX_CONFIG;
    }
    /* A password in the URL itself wins over WHARF_REDIS_PASSWORD. */
    if (parsed.password[0])
        ctx->password = NULL;
    return 0;
}

const char *const address_tls_options[ADDRESS_TLS_OPTIONS] = {
    "tls_ca", "tls_cert", "tls_key", "tls_sni", "tls_verify"};

int address_add_tls(cli *ctx, const char *const values[ADDRESS_TLS_OPTIONS])
{
    char err[CLI_ERR_MAX], shown[sizeof(ctx->url)];
    bool any = false;
    redis_url parsed;

    for (size_t i = 0; i < ADDRESS_TLS_OPTIONS; i++) {
        if (!values[i])
            continue;
        any = true;
        if (strncmp(ctx->url, "rediss", 6) != 0) {
            fprintf(stderr,
                    "wharf: --tls-%s needs a TLS address (rediss://, "
                    "rediss+cluster://, rediss+sentinel://)\n",
                    address_tls_options[i] + 4);
            return EX_CONFIG;
        }
        if (redis_url_append_param(ctx->url, sizeof(ctx->url),
                                   address_tls_options[i], values[i]) != 0) {
            fprintf(stderr,
                    "wharf: the Redis address is too long with "
                    "--tls-%s\n",
                    address_tls_options[i] + 4);
            return EX_CONFIG;
        }
    }
    if (any && redis_url_parse(ctx->url, &parsed, err, sizeof(err)) != 0) {
        redis_url_redact(ctx->url, shown, sizeof(shown));
        fprintf(stderr,
                "wharf: bad Redis URL '%s' with the --tls options: %s\n", shown,
                err);
        memset(&parsed, 0, sizeof(parsed));
        return EX_CONFIG;
    }
    memset(&parsed, 0, sizeof(parsed));
    return 0;
}

int address_resolve(cli *ctx, const char *redis_option, const char *config_path)
{
    char err[CONFIG_ERR_LEN];
    const char *env_url = getenv("WHARF_REDIS_URL");
    const char *env_password = getenv("WHARF_REDIS_PASSWORD");

    ctx->prefix = DEFAULT_PREFIX;
    ctx->password = env_password && env_password[0] ? env_password : NULL;
    if (config_path) {
        if (config_load_producer(config_path, &ctx->config, err,
                                 sizeof(err)) != 0) {
            fprintf(stderr, "wharf: %s\n", err);
            return EX_CONFIG;
        }
        ctx->prefix = ctx->config->prefix;
        ctx->password = ctx->config->redis_password;
    }
    if (redis_option) {
        snprintf(ctx->url, sizeof(ctx->url), "%s", redis_option);
        return check_url(ctx, "--redis");
    }
    if (ctx->config) {
        char path[CLI_PATH_QUOTE_MAX];
        /* config_load already applied WHARF_REDIS_URL over the file, as
         * wharfd does, so both talk to the same Redis. */
        quote_text(config_path, path, sizeof(path));
        if (manifest_url(ctx->config, ctx->url, sizeof(ctx->url)) != 0) {
            fprintf(stderr, "wharf: %s: the Redis address is too long\n", path);
            return EX_CONFIG;
        }
        return check_url(ctx, path);
    }
    if (env_url && env_url[0]) {
        snprintf(ctx->url, sizeof(ctx->url), "%s", env_url);
        return check_url(ctx, "WHARF_REDIS_URL");
    }
    snprintf(ctx->url, sizeof(ctx->url), "%s", DEFAULT_URL);
    return 0;
}
