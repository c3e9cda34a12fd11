/* A configuration (config.h): made with every key at its default, before
 * the manifest is read over it (config_load.c), looked up by the host,
 * and freed. Each default here is the one docs/manifest.md states. */

#include "config_internal.h"

#include <stdlib.h>
#include <string.h>

#include <wharf/plugin.h>

#include "xmalloc.h"

static const policy default_policy = {
    .max_attempts = 5,
    .backoff = BACKOFF_LINEAR,
    .backoff_base_ms = MS_SECOND,
    .backoff_max_ms = 10 * MS_MINUTE,
    .jitter_pct = 10,
    .lock_ttl_ms = 60 * MS_SECOND,
    .lock_retry_ms = 500,
    .result_ttl_ms = 300 * MS_SECOND,
    .idempotency = IDEMPOTENCY_PAYLOAD,
    .idempotency_ttl_ms = 300 * MS_SECOND,
    .timeout_ms = 30 * MS_SECOND,
    .visibility_timeout_ms = 5 * MS_MINUTE,
    .prefetch = 16,
    .max_payload = MIB,
    .high_watermark = 10000,
    .low_watermark = 5000,
    .max_backlog = 0,
    .dead_max = 10000,
    .dead_ttl_ms = 90 * MS_DAY,
};

config *config_new(const char *path)
{
    config *cfg = xcalloc(1, sizeof *cfg);

    cfg->file = xstrdup(path);
    cfg->plugins_dir = xstrdup("plugins");
    cfg->autoload = true;
    cfg->watch = false;
    cfg->insecure_plugins = false;
    cfg->workers = 2;
    cfg->shutdown_timeout_ms = 30 * MS_SECOND;
    cfg->init_timeout_ms = 30 * MS_SECOND;
    cfg->instance = xstrdup("default");
    cfg->redis_url = xstrdup("redis://127.0.0.1:6379/0");
    cfg->prefix = xstrdup("wharf");
    cfg->data_dir = xstrdup("./data");
    cfg->allow_eviction = false;
    cfg->min_replicas_ack = 0;
    cfg->min_replicas_timeout_ms = 1000;
    cfg->metrics_listen = xstrdup("127.0.0.1:9464");
    cfg->log_level = WHARF_LOG_INFO;
    cfg->log_format = LOG_FORMAT_JSON;
    cfg->defaults = default_policy;
    return cfg;
}

size_t config_count_types(char *const *types)
{
    size_t n = 0;

    while (types != NULL && types[n] != NULL)
        n++;
    return n;
}

void config_free(config *cfg)
{
    if (cfg == NULL)
        return;
    for (size_t i = 0; i < cfg->n_plugins; i++) {
        plugin_section *section = &cfg->plugins[i];

        free(section->name);
        free(section->path);
        for (size_t j = 0; j < config_count_types(section->types); j++)
            free(section->types[j]);
        free(section->types);
        for (size_t j = 0; j < section->n_extra; j++) {
            free(section->extra[j].key);
            free(section->extra[j].value);
        }
        free(section->extra);
    }
    free(cfg->plugins);
    for (size_t i = 0; i < cfg->n_types; i++)
        free(cfg->types[i].name);
    free(cfg->types);
    free(cfg->file);
    free(cfg->dir);
    free(cfg->plugins_dir);
    free(cfg->instance);
    free(cfg->redis_url);
    free(cfg->redis_password);
    free(cfg->prefix);
    free(cfg->data_dir);
    free(cfg->metrics_listen);
    free(cfg->console_token);
    free(cfg);
}

const policy *config_policy(const config *cfg, const char *type)
{
    for (size_t i = 0; type != NULL && i < cfg->n_types; i++)
        if (strcmp(cfg->types[i].name, type) == 0)
            return &cfg->types[i].policy;
    return &cfg->defaults;
}

const plugin_section *config_plugin(const config *cfg, const char *name)
{
    for (size_t i = 0; name != NULL && i < cfg->n_plugins; i++)
        if (strcmp(cfg->plugins[i].name, name) == 0)
            return &cfg->plugins[i];
    return NULL;
}

const char *config_plugin_value(const plugin_section *section, const char *key)
{
    for (size_t i = 0; section != NULL && key != NULL && i < section->n_extra;
         i++)
        if (strcmp(section->extra[i].key, key) == 0)
            return section->extra[i].value;
    return NULL;
}
