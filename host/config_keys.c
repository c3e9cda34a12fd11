/* What the manifest may hold (docs/manifest.md): its fixed sections, the
 * keys of each with their kind of value, range and field, and the "did
 * you mean" hints for a key or section it does not know. One table holds
 * the keys of [host] .. [producer] (fields of config), another those of
 * [defaults] and [type.NAME] (fields of policy). */

#include "config_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wharf/plugin.h>

#include "xmalloc.h"

static const char *const backoff_names[] = {"linear", "exponential", NULL};
static const char *const idempotency_names[] = {"payload", "none", NULL};
static const char *const level_names[] = {"debug", "info", "warn", "error",
                                          NULL};
static const char *const format_names[] = {"json", "text", NULL};

_Static_assert(BACKOFF_LINEAR == 0 && BACKOFF_EXPONENTIAL == 1,
               "backoff_names follows backoff_kind");
_Static_assert(IDEMPOTENCY_PAYLOAD == 0 && IDEMPOTENCY_NONE == 1,
               "idempotency_names follows idempotency_kind");
_Static_assert(LOG_FORMAT_JSON == 0 && LOG_FORMAT_TEXT == 1,
               "format_names follows log_format");
_Static_assert(WHARF_LOG_DEBUG == 0 && WHARF_LOG_INFO == 1 &&
                   WHARF_LOG_WARN == 2 && WHARF_LOG_ERROR == 3,
               "level_names follows WHARF_LOG_*");

#define FIELD(type, field) offsetof(type, field), sizeof(((type *)0)->field)
/* A key of the fixed section [section], a field of config. */
#define KEY(section, key, kind, field, lo, hi, choices)                        \
    {                                                                          \
        SECTION_##section, key, kind, FIELD(config, field), lo, hi, choices,   \
            NULL                                                               \
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
    KEY(HOST, "plugins_dir", VALUE_PATH, plugins_dir, 0, 0, NULL),
    KEY(HOST, "autoload", VALUE_BOOL, autoload, 0, 1, NULL),
    KEY(HOST, "watch", VALUE_BOOL, watch, 0, 1, NULL),
    KEY(HOST, "insecure_plugins", VALUE_BOOL, insecure_plugins, 0, 1, NULL),
    KEY(HOST, "workers", VALUE_NUMBER, workers, 1, 1024, NULL),
    KEY(HOST, "shutdown_timeout", VALUE_DURATION, shutdown_timeout_ms, 0,
        MS_DAY, NULL),
    KEY(HOST, "instance", VALUE_NAME, instance, 0, 0, NULL),
    KEY(HOST, "init_timeout", VALUE_DURATION, init_timeout_ms, 1, MS_DAY, NULL),

    KEY(REDIS, "url", VALUE_URL, redis_url, 0, 0, NULL),
    KEY(REDIS, "prefix", VALUE_NAME, prefix, 0, 0, NULL),
    KEY(REDIS, "data_dir", VALUE_PATH, data_dir, 0, 0, NULL),
    KEY(REDIS, "allow_eviction", VALUE_BOOL, allow_eviction, 0, 1, NULL),
    KEY(REDIS, "min_replicas_ack", VALUE_NUMBER, min_replicas_ack, 0, 100,
        NULL),
    /* Under the 5 s I/O timeout of every connection. */
    KEY(REDIS, "min_replicas_timeout", VALUE_DURATION, min_replicas_timeout_ms,
        1, 4000, NULL),

    KEY(METRICS, "listen", VALUE_LISTEN, metrics_listen, 0, 0, NULL),

    KEY(CONSOLE, "actions", VALUE_BOOL, console_actions, 0, 1, NULL),
    KEY(CONSOLE, "token", VALUE_TOKEN, console_token, 0, 0, NULL),

    KEY(PRODUCER, "strict", VALUE_BOOL, producer_strict, 0, 1, NULL),

    KEY(LOG, "level", VALUE_ENUM, log_level, 0, 0, level_names),
    KEY(LOG, "format", VALUE_ENUM, log_format, 0, 0, format_names),
    KEYS_END,
};

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
    KEYS_END,
};
_Static_assert(sizeof config_policy_keys / sizeof config_policy_keys[0] ==
                   POLICY_KEYS + 1,
               "POLICY_KEYS counts config_policy_keys");

typedef struct fixed_section {
    const char *name;
    section_kind kind;
} fixed_section;

/* In the order "it belongs in" looks through them. */
static const fixed_section fixed_sections[] = {
    {"host", SECTION_HOST},         {"redis", SECTION_REDIS},
    {"metrics", SECTION_METRICS},   {"log", SECTION_LOG},
    {"console", SECTION_CONSOLE},   {"producer", SECTION_PRODUCER},
    {"defaults", SECTION_DEFAULTS}, {NULL, SECTION_NONE},
};

section_kind config_fixed_section(const char *name)
{
    for (const fixed_section *s = fixed_sections; s->name != NULL; s++)
        if (strcmp(name, s->name) == 0)
            return s->kind;
    return SECTION_NONE;
}

/* The table that holds the keys of section. */
static const key_spec *keys_of(section_kind section)
{
    return section == SECTION_DEFAULTS ? config_policy_keys : config_keys;
}

const key_spec *config_find_key(section_kind section, const char *name)
{
    for (const key_spec *k = keys_of(section); k->name != NULL; k++)
        if (k->section == section && strcmp(k->name, name) == 0)
            return k;
    return NULL;
}

size_t config_policy_index(const char *name)
{
    return (size_t)(config_find_key(SECTION_DEFAULTS, name) -
                    config_policy_keys);
}

/* ---- "did you mean" ---- */

/* Edit distance with adjacent transpositions, or a large number when a
 * string is too long to bother. */
static size_t edit_distance(const char *a, const char *b)
{
    enum { LONGEST = 40 };
    size_t la = strlen(a), lb = strlen(b);
    size_t rows[3][LONGEST + 1];
    size_t *before = rows[0], *prev = rows[1], *cur = rows[2];

    if (la > LONGEST || lb > LONGEST)
        return SIZE_MAX;
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t *spare = before;

        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = a[i - 1] != b[j - 1];
            size_t best = prev[j - 1] + cost;

            if (prev[j] + 1 < best)
                best = prev[j] + 1;
            if (cur[j - 1] + 1 < best)
                best = cur[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
                a[i - 2] == b[j - 1] && before[j - 2] + 1 < best)
                best = before[j - 2] + 1;
            cur[j] = best;
        }
        before = prev;
        prev = cur;
        cur = spare;
    }
    return prev[lb];
}

static bool looks_like(const char *typed, const char *known)
{
    size_t d = edit_distance(typed, known);

    return d <= 2 && d * 3 <= strlen(known);
}

void config_unknown_key_hint(const char *name, section_kind section, char *hint,
                             size_t len)
{
    hint[0] = '\0';
    for (const key_spec *k = keys_of(section); k->name != NULL; k++) {
        if (k->section == section && looks_like(name, k->name)) {
            snprintf(hint, len, " (did you mean '%s'?)", k->name);
            return;
        }
    }
    for (const fixed_section *s = fixed_sections; s->name != NULL; s++) {
        if (s->kind == section || config_find_key(s->kind, name) == NULL)
            continue;
        if (s->kind == SECTION_DEFAULTS)
            snprintf(hint, len, " (it belongs in [defaults] or [type.NAME])");
        else
            snprintf(hint, len, " (it belongs in [%s])", s->name);
        return;
    }
}

void config_unknown_section_hint(const char *name, char *hint, size_t len)
{
    const char *dot = strchr(name, '.');

    hint[0] = '\0';
    if (strcmp(name, "plugin") == 0 || strcmp(name, "type") == 0) {
        snprintf(hint, len, " (expected [%s.NAME])", name);
        return;
    }
    for (const fixed_section *s = fixed_sections; s->name != NULL; s++)
        if (looks_like(name, s->name))
            snprintf(hint, len, " (did you mean [%s]?)", s->name);
    if (dot != NULL && hint[0] == '\0') {
        char *head = xstrndup(name, (size_t)(dot - name));

        if (looks_like(head, "plugin") || looks_like(head, "type"))
            snprintf(hint, len, " (did you mean [%s%s]?)",
                     looks_like(head, "plugin") ? "plugin" : "type", dot);
        free(head);
    }
}
