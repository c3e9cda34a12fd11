/* The manifest (docs/manifest.md): an INI file parsed with inih into a
 * validated, typed configuration. Every error is one line
 * "FILE:LINE: what is wrong" and the caller exits 78. */
#ifndef WHARF_CONFIG_H
#define WHARF_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONFIG_ERR_LEN 512

typedef enum backoff_kind {
    BACKOFF_LINEAR = 0,
    BACKOFF_EXPONENTIAL
} backoff_kind;
typedef enum idempotency_kind {
    IDEMPOTENCY_PAYLOAD = 0,
    IDEMPOTENCY_NONE
} idempotency_kind;
typedef enum log_format { LOG_FORMAT_JSON = 0, LOG_FORMAT_TEXT } log_format;
/* The highest [type.NAME] priority (config.c says why). */
#define PRIORITY_MAX 1000

/* How a worker serving types of unlike priority claims (claim.h). */
typedef enum claim_order {
    ORDER_WEIGHTED = 0, /* entries per type in proportion to priority */
    ORDER_STRICT        /* the highest priority with entries first */
} claim_order;

/* rate_limit = COUNT/s|/min|/h (config_rate.c): COUNT starts per
 * period_ms across every host; count 0: no rate limit. */
typedef struct policy_rate {
    uint64_t count;
    int64_t period_ms;
} policy_rate;
/* The longest limit_key, with its NUL. */
#define LIMIT_KEY_MAX 128

/* rates: rate as the manifest writes it ("100/s", "30/min", "5/h"), or
 * "off" when it has none (config_rate.c). */
void config_format_rate(const policy_rate *rate, char *buf, size_t len);

/* The per-type policy: [defaults], overridden per type by [type.NAME].
 * Durations are in milliseconds, sizes in bytes, ratios in percent. */
typedef struct policy {
    unsigned max_attempts;
    backoff_kind backoff;
    int64_t backoff_base_ms;
    int64_t backoff_max_ms;
    int64_t max_retry_delay_ms; /* cap of a plugin's wharf_retry_in */
    unsigned jitter_pct;
    int64_t lock_ttl_ms;
    int64_t lock_retry_ms;
    int64_t result_ttl_ms;
    idempotency_kind idempotency;
    int64_t idempotency_ttl_ms;
    int64_t timeout_ms;
    int64_t visibility_timeout_ms;
    unsigned prefetch;
    uint64_t max_payload;
    uint64_t high_watermark;
    uint64_t low_watermark;
    uint64_t max_backlog; /* 0 = no hard limit */
    uint64_t dead_max;
    int64_t dead_ttl_ms;
    uint64_t concurrency_limit; /* runs at once across every host; 0: no cap */
    unsigned concurrency;       /* runs at once in one worker process: a cap
                                   on its threads, not concurrency_limit's
                                   across every host; 0: no cap */
    unsigned priority;          /* 1..1000, default 1: a rank ([host]
                                   order = strict) or a weight (weighted)
                                   among a worker's types; manifest.md */
    /* rates: rate_limit, rate_burst and limit_key (config_rate.c) */
    policy_rate rate_limit; /* starts per period across every host */
    uint64_t rate_burst;    /* starts at once after an idle spell, 1.. */
    char limit_key[LIMIT_KEY_MAX]; /* "", "id" or a JSON pointer: the
                                      rate applies per value of it */
} policy;

/* One key of a [plugin.NAME] section that the host does not know; the
 * plugin reads it with wharf_config(). */
typedef struct config_kv {
    char *key;
    char *value;
} config_kv;

/* A [plugin.NAME] section. */
typedef struct plugin_section {
    char *name;
    char *path;       /* absolute, resolved against plugins_dir */
    char **types;     /* NULL-terminated; NULL if `types` was not given */
    config_kv *extra; /* plugin's own keys, n_extra of them */
    size_t n_extra;
    int line;         /* line of the [plugin.NAME] header */
    int path_line;    /* line of `path`, or the header line if absent */
    int types_line;   /* line of `types`, or 0 if absent */
    unsigned threads; /* tasks at once in one worker, 1..1024; 0: not set
                         ([host] threads applies if the plugin opted in) */
    int threads_line; /* line of `threads`, or 0 if absent */
} plugin_section;

/* What a schedule does after a downtime with the ticks it missed
 * (docs/manifest.md, catch_up). */
typedef enum catch_up_kind {
    CATCH_UP_NONE = 0, /* skipped */
    CATCH_UP_LAST,     /* the newest one fires */
    CATCH_UP_ALL       /* each fires, the newest SCHEDULE_CATCH_UP_MAX */
} catch_up_kind;

/* A [schedule.NAME] section: a task of `type` enqueued at each tick of
 * `cron` in `timezone`, or every `every_s` seconds. */
typedef struct schedule_section {
    char *name;
    char *type;
    char *cron;       /* as written, or NULL with every_s */
    int64_t every_s;  /* 0 with cron */
    char *timezone;   /* a zone of the tz database; "UTC" by default */
    char *payload;    /* "" by default; {{tick}} and {{tick_unix}} are
                         the tick's time (docs/manifest.md) */
    catch_up_kind catch_up;
    int line;          /* of the [schedule.NAME] header */
    int cron_line;     /* of cron or every, or 0 */
    int timezone_line; /* or 0 */
} schedule_section;

/* The most [schedule.NAME] sections a manifest holds: each has its figures
 * in /metrics and the console, in a table of fixed size. */
#define CONFIG_SCHEDULES_MAX 256

/* The most missed ticks catch_up = all fires after a downtime: the newest
 * ones (a minute's schedule down a day would otherwise flood its type). */
#define SCHEDULE_CATCH_UP_MAX 100

/* A [type.NAME] section: the effective policy of that type. */
typedef struct type_section {
    char *name;
    policy policy; /* [defaults] with this section's keys applied */
    int line;
} type_section;

typedef struct config {
    char *file; /* the manifest path as given (for messages) */
    char *dir;  /* its folder, absolute */

    /* [host] */
    char *plugins_dir; /* absolute */
    int plugins_dir_line;
    bool autoload;
    bool watch;
    bool insecure_plugins;
    unsigned workers;
    claim_order order; /* between types of unlike priority */
    unsigned threads; /* tasks at once in one worker process, for each
                         plugin that opted in (loader.h); 1..1024 */
    int threads_line; /* line of `threads`, or 0 if absent */
    int64_t shutdown_timeout_ms;
    int64_t init_timeout_ms; /* plugin check, and a worker's plugin init */
    char *instance;

    /* [redis] */
    char *redis_url;           /* WHARF_REDIS_URL wins over the manifest */
    char *redis_password;      /* WHARF_REDIS_PASSWORD, else password_file's
                                  first line, or NULL */
    char *redis_password_file; /* absolute, or NULL */
    int redis_password_file_line;
    /* tls_ca, tls_cert, tls_key, tls_sni, tls_verify: by config_finish
     * made query parameters of redis_url (its paths absolute), so every
     * reader of the URL gets them; these keep what the file said. */
    char *redis_tls_ca, *redis_tls_cert, *redis_tls_key, *redis_tls_sni;
    bool redis_tls_verify;
    /* sentinel_user, sentinel_password: the sentinels' own credentials,
     * made query parameters of redis_url the same way */
    char *redis_sentinel_user, *redis_sentinel_password;
    /* sentinel_password_file: absolute, or NULL; its first line becomes
     * redis_sentinel_password */
    char *redis_sentinel_password_file;
    int redis_sentinel_password_file_line;
    int redis_tls_lines[7]; /* the keys' lines, in the order of
                               config_redis_tls_keys; 0: not set */
    char *prefix;
    char *data_dir; /* absolute */
    bool allow_eviction;
    unsigned min_replicas_ack;       /* WAIT for this many after each
                                        finish and enqueue; 0 = none */
    int64_t min_replicas_timeout_ms; /* how long that WAIT may take */

    /* [metrics] */
    char *metrics_listen; /* "host:port", or NULL when "off" */
    int64_t metrics_history_ms; /* how long the fleet's history is kept
                                   (history.h); 0: not written */

    /* [console] (docs/console.md) */
    bool console_actions; /* replay / purge / cancel allowed */
    char *console_token;  /* what actions must present, or NULL */
    bool producer_strict; /* [producer] strict: wharf enqueue refuses a
                             type no host ever served */
    int console_line;     /* the [console] header, for messages; 0 if none */

    /* [log] */
    int log_level; /* WHARF_LOG_DEBUG .. WHARF_LOG_ERROR */
    log_format log_format;

    /* [defaults] */
    policy defaults;

    plugin_section *plugins;
    size_t n_plugins;
    type_section *types;
    size_t n_types;
    schedule_section *schedules;
    size_t n_schedules;
} config;

/* Parses and validates the manifest at `path`. On success returns 0 and sets
 * *out (caller frees with config_free). On failure returns -1, leaves *out
 * untouched and writes one line "FILE:LINE: what is wrong" into err. */
int config_load(const char *path, config **out, char *err, size_t errlen);

/* config_load for a producer or operator (the wharf CLI): the same
 * checks, but a plugin file named by the manifest need not exist, as the
 * plugins live on the worker hosts, not on every machine that enqueues. */
int config_load_producer(const char *path, config **out, char *err,
                         size_t errlen);

/* Every key at its default, as an empty manifest in the current folder
 * would give (wharf run without a manifest); cfg->file is NULL. 0, or -1
 * with why in err. */
int config_load_defaults(config **out, char *err, size_t errlen);

void config_free(config *cfg);

/* The effective policy of `type`: its [type.NAME] section or [defaults]. */
const policy *config_policy(const config *cfg, const char *type);

/* The [schedule.NAME] section named `name`, or NULL. */
const schedule_section *config_schedule(const config *cfg, const char *name);

/* The [plugin.NAME] section named `name`, or NULL. */
const plugin_section *config_plugin(const config *cfg, const char *name);

/* The value of `key` in a plugin section's own keys, or NULL. */
const char *config_plugin_value(const plugin_section *section, const char *key);

/* The longest pause `wharf pause --for` and the console's pause take: a
 * pause meant to last longer is one without an end. */
#define CONFIG_PAUSE_FOR_MAX_MS ((int64_t)30 * 24 * 3600 * 1000)

/* Value parsers, exposed for the CLI (--delay, --wait) and tests.
 * Each returns 0 and writes *out on success, -1 on a bad value. */
int config_parse_duration(const char *text, int64_t *out_ms);
int config_parse_size(const char *text, uint64_t *out_bytes);

/* Name rules of docs/protocol.md (type names and task ids). */
bool config_valid_type_name(const char *name);
bool config_valid_task_id(const char *id, size_t len);

#endif /* WHARF_CONFIG_H */
