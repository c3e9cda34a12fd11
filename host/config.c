/* A configuration (config.h) and what it may hold (docs/manifest.md): the
 * fixed sections, the keys of each with their kind of value, range and
 * field, and their defaults; made with every key at its default before
 * the manifest is read over it (config_load.c), looked up by the host,
 * and freed. One table holds the keys of [host] .. [producer] (fields of
 * config), another those of [defaults] and [type.NAME] (fields of
 * policy). */

#include "config_internal.h"

#include <stdlib.h>
#include <string.h>

#include <wharf/plugin.h>

#include "xmalloc.h"

static const char *const backoff_names[] = {"linear", "exponential", NULL};
static const char *const idempotency_names[] = {"payload", "none", NULL};
static const char *const level_names[] = {"debug", "info", "warn", "error",
                                          NULL};
static const char *const format_names[] = {"json", "text", NULL};
static const char *const order_names[] = {"weighted", "strict", NULL};

_Static_assert(BACKOFF_LINEAR == 0 && BACKOFF_EXPONENTIAL == 1,
               "backoff_names follows backoff_kind");
_Static_assert(IDEMPOTENCY_PAYLOAD == 0 && IDEMPOTENCY_NONE == 1,
               "idempotency_names follows idempotency_kind");
_Static_assert(ORDER_WEIGHTED == 0 && ORDER_STRICT == 1,
               "order_names follows claim_order");
_Static_assert(LOG_FORMAT_JSON == 0 && LOG_FORMAT_TEXT == 1,
               "format_names follows log_format");
_Static_assert(WHARF_LOG_DEBUG == 0 && WHARF_LOG_INFO == 1 &&
                   WHARF_LOG_WARN == 2 && WHARF_LOG_ERROR == 3,
               "level_names follows WHARF_LOG_*");

#define FIELD(type, field) offsetof(type, field), sizeof(((type *)0)->field)
/* A key of a fixed section (section), a field of config. */
#define HOST(key, section, kind, field, lo, hi, choices)                       \
    {                                                                          \
        section, key, kind, FIELD(config, field), lo, hi, choices, NULL        \
    }
/* A key of [defaults] and [type.NAME], a field of policy. */
#define POLICY(key, kind, field, lo, hi, choices)                              \
    {                                                                          \
        SECTION_DEFAULTS, key, kind, FIELD(policy, field), lo, hi, choices,    \
            NULL                                                               \
    }
/* A policy duration with a floor that has a reason. */
#define POLICY_FLOOR(key, field, lo, hi, why)                                  \
    {                                                                          \
        SECTION_DEFAULTS, key, VALUE_DURATION, FIELD(policy, field), lo, hi,   \
            NULL, why                                                          \
    }
#define KEYS_END                                                               \
    {                                                                          \
        SECTION_NONE, NULL, VALUE_BOOL, 0, 0, 0, 0, NULL, NULL                 \
    }

/* Within a section, "did you mean" tries the keys in this order. */
static const key_spec config_keys[] = {
    HOST("plugins_dir", SECTION_HOST, VALUE_PATH, plugins_dir, 0, 0, NULL),
    HOST("autoload", SECTION_HOST, VALUE_BOOL, autoload, 0, 1, NULL),
    HOST("watch", SECTION_HOST, VALUE_BOOL, watch, 0, 1, NULL),
    HOST("insecure_plugins", SECTION_HOST, VALUE_BOOL, insecure_plugins, 0, 1,
         NULL),
    HOST("workers", SECTION_HOST, VALUE_NUMBER, workers, 1, 1024, NULL),
    HOST("threads", SECTION_HOST, VALUE_NUMBER, threads, 1, THREADS_MAX, NULL),
    HOST("order", SECTION_HOST, VALUE_ENUM, order, 0, 0, order_names),
    HOST("shutdown_timeout", SECTION_HOST, VALUE_DURATION, shutdown_timeout_ms,
         0, MS_DAY, NULL),
    HOST("instance", SECTION_HOST, VALUE_NAME, instance, 0, 0, NULL),
    HOST("init_timeout", SECTION_HOST, VALUE_DURATION, init_timeout_ms, 1,
         MS_DAY, NULL),

    HOST("url", SECTION_REDIS, VALUE_URL, redis_url, 0, 0, NULL),
    HOST("prefix", SECTION_REDIS, VALUE_NAME, prefix, 0, 0, NULL),
    HOST("data_dir", SECTION_REDIS, VALUE_PATH, data_dir, 0, 0, NULL),
    HOST("allow_eviction", SECTION_REDIS, VALUE_BOOL, allow_eviction, 0, 1,
         NULL),
    HOST("min_replicas_ack", SECTION_REDIS, VALUE_NUMBER, min_replicas_ack, 0,
         100, NULL),
    /* Under the 5 s I/O timeout of every connection. */
    HOST("min_replicas_timeout", SECTION_REDIS, VALUE_DURATION,
         min_replicas_timeout_ms, 1, 4000, NULL),
    HOST("password_file", SECTION_REDIS, VALUE_PATH, redis_password_file, 0, 0,
         NULL),
    HOST("tls_ca", SECTION_REDIS, VALUE_PATH, redis_tls_ca, 0, 0, NULL),
    HOST("tls_cert", SECTION_REDIS, VALUE_PATH, redis_tls_cert, 0, 0, NULL),
    HOST("tls_key", SECTION_REDIS, VALUE_PATH, redis_tls_key, 0, 0, NULL),
    HOST("tls_sni", SECTION_REDIS, VALUE_PATH, redis_tls_sni, 0, 0, NULL),
    HOST("tls_verify", SECTION_REDIS, VALUE_BOOL, redis_tls_verify, 0, 1,
         NULL),
    HOST("sentinel_user", SECTION_REDIS, VALUE_PATH, redis_sentinel_user, 0, 0,
         NULL),
    HOST("sentinel_password", SECTION_REDIS, VALUE_PATH,
         redis_sentinel_password, 0, 0, NULL),
    HOST("sentinel_password_file", SECTION_REDIS, VALUE_PATH,
         redis_sentinel_password_file, 0, 0, NULL),

    HOST("listen", SECTION_METRICS, VALUE_LISTEN, metrics_listen, 0, 0, NULL),
    /* A week at most: a type's history grows with it (docs/console.md). */
    HOST("history", SECTION_METRICS, VALUE_DURATION, metrics_history_ms, 0,
         7 * MS_DAY, NULL),

    HOST("actions", SECTION_CONSOLE, VALUE_BOOL, console_actions, 0, 1, NULL),
    HOST("token", SECTION_CONSOLE, VALUE_TOKEN, console_token, 0, 0, NULL),

    HOST("strict", SECTION_PRODUCER, VALUE_BOOL, producer_strict, 0, 1, NULL),

    HOST("level", SECTION_LOG, VALUE_ENUM, log_level, 0, 0, level_names),
    HOST("format", SECTION_LOG, VALUE_ENUM, log_format, 0, 0, format_names),
    KEYS_END,
};

const char *const config_redis_tls_keys[7] = {
    "tls_ca",     "tls_cert",      "tls_key",          "tls_sni",
    "tls_verify", "sentinel_user", "sentinel_password"};

/* The shortest lock_ttl and visibility_timeout: 1 s. The supervisor
 * renews a running task's lock and pending entry every third of the
 * shorter of the two (host/run.h), and a renewal may have to wait out one
 * Redis command timeout (a few hundred ms) and be tried once more before
 * the lease could expire. Below 1 s that no longer fits, and a healthy
 * host loses its own lease: the task is taken over while it runs, and
 * runs again beside itself. */
#define LEASE_FLOOR_MS MS_SECOND
#define LEASE_FLOOR_WHY                                                        \
    "below 1s a lease cannot be renewed in time (renewals come every third "   \
    "of it and may wait out a Redis timeout and a retry), so a healthy host "  \
    "would take over its own task"

const key_spec config_policy_keys[] = {
    POLICY("max_attempts", VALUE_NUMBER, max_attempts, 1, 1000, NULL),
    POLICY("backoff", VALUE_ENUM, backoff, 0, 0, backoff_names),
    POLICY("backoff_base", VALUE_DURATION, backoff_base_ms, 1, 30 * MS_DAY,
           NULL),
    POLICY("backoff_max", VALUE_DURATION, backoff_max_ms, 1, 30 * MS_DAY, NULL),
    POLICY("max_retry_delay", VALUE_DURATION, max_retry_delay_ms, 1,
           30 * MS_DAY, NULL),
    POLICY("jitter", VALUE_RATIO, jitter_pct, 0, 100, NULL),
    POLICY_FLOOR("lock_ttl", lock_ttl_ms, LEASE_FLOOR_MS, 30 * MS_DAY,
                 LEASE_FLOOR_WHY),
    POLICY("lock_retry", VALUE_DURATION, lock_retry_ms, 1, MS_DAY, NULL),
    POLICY("result_ttl", VALUE_DURATION, result_ttl_ms, 1, 3650 * MS_DAY, NULL),
    POLICY("idempotency", VALUE_ENUM, idempotency, 0, 0, idempotency_names),
    POLICY("idempotency_ttl", VALUE_DURATION, idempotency_ttl_ms, 1,
           3650 * MS_DAY, NULL),
    POLICY("timeout", VALUE_DURATION, timeout_ms, 1, 30 * MS_DAY, NULL),
    POLICY_FLOOR("visibility_timeout", visibility_timeout_ms, LEASE_FLOOR_MS,
                 30 * MS_DAY, LEASE_FLOOR_WHY),
    POLICY("prefetch", VALUE_NUMBER, prefetch, 1, 10000, NULL),
    POLICY("max_payload", VALUE_SIZE, max_payload, 1, 512 * MIB, NULL),
    POLICY("high_watermark", VALUE_NUMBER, high_watermark, 1, MAX_COUNT, NULL),
    POLICY("low_watermark", VALUE_NUMBER, low_watermark, 0, MAX_COUNT, NULL),
    POLICY("max_backlog", VALUE_NUMBER, max_backlog, 0, MAX_COUNT, NULL),
    POLICY("dead_max", VALUE_NUMBER, dead_max, 1, MAX_COUNT, NULL),
    POLICY("dead_ttl", VALUE_DURATION, dead_ttl_ms, 1, 3650 * MS_DAY, NULL),
    POLICY("concurrency_limit", VALUE_NUMBER, concurrency_limit, 0, 100000,
           NULL),
    POLICY("concurrency", VALUE_NUMBER, concurrency, 0, 100000, NULL),
    /* A weight as well as a rank: 1000 to 1 is as lopsided a share as a
     * claim of prefetch entries can still show. */
    POLICY("priority", VALUE_NUMBER, priority, 1, PRIORITY_MAX, NULL),
    /* rates (config_rate.c) */
    POLICY("rate_limit", VALUE_RATE, rate_limit, 0, 0, NULL),
    POLICY("rate_burst", VALUE_NUMBER, rate_burst, 1, 1000000, NULL),
    POLICY("limit_key", VALUE_POINTER, limit_key, 0, 0, NULL),
    KEYS_END,
};
_Static_assert(sizeof config_policy_keys / sizeof config_policy_keys[0] ==
                   POLICY_KEYS + 1,
               "POLICY_KEYS counts config_policy_keys");

/* `threads` of a [plugin.NAME] section, the one key there with a range
 * (path and types are checked by config_set.c, the rest is the
 * plugin's). */
const key_spec config_plugin_threads_key = {
    .section = SECTION_PLUGIN,
    .name = "threads",
    .kind = VALUE_NUMBER,
    .offset = offsetof(plugin_section, threads),
    .size = sizeof(((plugin_section *)0)->threads),
    .min = 1,
    .max = THREADS_MAX,
};

/* In the order "it belongs in" looks through them. */
const fixed_section config_fixed_sections[] = {
    {"host", SECTION_HOST},         {"redis", SECTION_REDIS},
    {"metrics", SECTION_METRICS},   {"log", SECTION_LOG},
    {"console", SECTION_CONSOLE},   {"producer", SECTION_PRODUCER},
    {"defaults", SECTION_DEFAULTS}, {NULL, SECTION_NONE},
};

section_kind config_fixed_section(const char *name)
{
    for (const fixed_section *s = config_fixed_sections; s->name != NULL; s++)
        if (strcmp(name, s->name) == 0)
            return s->kind;
    return SECTION_NONE;
}

const key_spec *config_keys_of(section_kind section)
{
    return section == SECTION_DEFAULTS ? config_policy_keys : config_keys;
}

const key_spec *config_find_key(section_kind section, const char *name)
{
    for (const key_spec *k = config_keys_of(section); k->name != NULL; k++)
        if (k->section == section && strcmp(k->name, name) == 0)
            return k;
    return NULL;
}

size_t config_policy_index(const char *name)
{
    return (size_t)(config_find_key(SECTION_DEFAULTS, name) -
                    config_policy_keys);
}

static const policy default_policy = {
    .max_attempts = 5,
    .backoff = BACKOFF_LINEAR,
    .backoff_base_ms = MS_SECOND,
    .backoff_max_ms = 10 * MS_MINUTE,
    .max_retry_delay_ms = MS_HOUR,
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
    .priority = 1,
    .rate_burst = 1, /* rates: strict spacing unless asked */
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
    cfg->threads = 1;
    cfg->order = ORDER_WEIGHTED;
    cfg->shutdown_timeout_ms = 30 * MS_SECOND;
    cfg->init_timeout_ms = 30 * MS_SECOND;
    cfg->instance = xstrdup("default");
    cfg->redis_url = xstrdup("redis://127.0.0.1:6379/0");
    cfg->prefix = xstrdup("wharf");
    cfg->data_dir = xstrdup("./data");
    cfg->allow_eviction = false;
    cfg->redis_tls_verify = true;
    cfg->min_replicas_ack = 0;
    cfg->min_replicas_timeout_ms = 1000;
    cfg->metrics_listen = xstrdup("127.0.0.1:9464");
    cfg->metrics_history_ms = MS_DAY;
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
    config_free_schedules(cfg);
    free(cfg->file);
    free(cfg->dir);
    free(cfg->plugins_dir);
    free(cfg->instance);
    free(cfg->redis_url);
    if (cfg->redis_password) /* do not leave the secret in freed memory */
        memset(cfg->redis_password, 0, strlen(cfg->redis_password));
    free(cfg->redis_password);
    free(cfg->redis_password_file);
    free(cfg->redis_tls_ca);
    free(cfg->redis_tls_cert);
    free(cfg->redis_tls_key);
    free(cfg->redis_tls_sni);
    free(cfg->redis_sentinel_user);
    if (cfg->redis_sentinel_password)
        memset(cfg->redis_sentinel_password, 0,
               strlen(cfg->redis_sentinel_password));
    free(cfg->redis_sentinel_password);
    free(cfg->redis_sentinel_password_file);
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

const schedule_section *config_schedule(const config *cfg, const char *name)
{
    for (size_t i = 0; name != NULL && i < cfg->n_schedules; i++)
        if (strcmp(cfg->schedules[i].name, name) == 0)
            return &cfg->schedules[i];
    return NULL;
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
