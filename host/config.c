/* The manifest parser (docs/manifest.md). We feed inih one whole line at a
 * time through our own reader, so we know every line's number, catch lines
 * too long for inih and track section headers ourselves; inih splits the
 * key = value lines. The first problem in file order is the one reported. */

#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <ini.h>
#include <wharf/plugin.h>

#include "client_ids.h"
#include "redis_url.h"
#include "xmalloc.h"

#define NAME_RULE "expected 1-100 bytes of A-Z a-z 0-9 . _ -"

#define MS_SECOND INT64_C(1000)
#define MS_MINUTE (60 * MS_SECOND)
#define MS_HOUR (60 * MS_MINUTE)
#define MS_DAY (24 * MS_HOUR)
#define KIB UINT64_C(1024)
#define MIB (1024 * KIB)
#define GIB (1024 * MIB)
#define MAX_COUNT UINT64_C(1000000000000) /* watermarks, backlog, dead_max */

/* The largest manifest read: a real one is a few KiB, and a bound keeps a
 * wrong path (/dev/zero, a log file) from being read into memory without
 * end. docs/manifest.md states it. */
#define MANIFEST_MAX_BYTES MIB
#define MANIFEST_MAX_TEXT "1 MiB"

/* ---- value parsers ---- */

enum { PARSE_OK = 0, PARSE_BAD = -1, PARSE_TOO_LARGE = -2 };

/* Reads the decimal digits at *text into *out and moves *text past them.
 * PARSE_BAD if there is no digit, PARSE_TOO_LARGE if it overflows. */
static int read_digits(const char **text, uint64_t *out)
{
    const char *p = *text;
    uint64_t n = 0;
    int rc = PARSE_OK;

    if (!isdigit((unsigned char)*p))
        return PARSE_BAD;
    for (; isdigit((unsigned char)*p); p++) {
        unsigned digit = (unsigned)(*p - '0');

        if (n > (UINT64_MAX - digit) / 10)
            rc = PARSE_TOO_LARGE;
        else
            n = n * 10 + digit;
    }
    *text = p;
    *out = n;
    return rc;
}

/* A whole decimal number and nothing else; *why says what is wrong. */
static int parse_count(const char *text, uint64_t *out, const char **why)
{
    int rc = read_digits(&text, out);

    if (rc == PARSE_OK && *text != '\0')
        rc = PARSE_BAD;
    if (rc == PARSE_BAD)
        *why = "expected a whole number";
    return rc;
}

typedef struct unit {
    const char *name;
    uint64_t factor;
} unit;

static const unit duration_units[] = {
    {"ms", 1},      {"s", MS_SECOND}, {"m", MS_MINUTE},
    {"h", MS_HOUR}, {"d", MS_DAY},    {NULL, 0},
};

static const unit size_units[] = {
    {"", 1}, {"B", 1}, {"KiB", KIB}, {"MiB", MIB}, {"GiB", GIB}, {NULL, 0},
};

/* A number followed by one of `units`, at most `limit` in all. The caller
 * words the reason of a PARSE_BAD for its kind of value. */
static int parse_with_unit(const char *text, const unit *units, uint64_t limit,
                           uint64_t *out)
{
    uint64_t n = 0;
    int rc = read_digits(&text, &n);
    const unit *u;

    if (rc == PARSE_BAD)
        return rc;
    for (u = units; u->name != NULL; u++)
        if (strcmp(text, u->name) == 0)
            break;
    if (u->name == NULL)
        return PARSE_BAD;
    if (rc == PARSE_TOO_LARGE || n > limit / u->factor)
        return PARSE_TOO_LARGE;
    *out = n * u->factor;
    return PARSE_OK;
}

static int parse_duration_why(const char *text, int64_t *out_ms,
                              const char **why)
{
    uint64_t ms = 0;
    const char *p = text;
    uint64_t ignored;
    int rc;

    rc = parse_with_unit(text, duration_units, INT64_MAX, &ms);
    if (rc == PARSE_BAD) {
        if (read_digits(&p, &ignored) != PARSE_BAD && *p == '\0')
            *why = "a duration needs a unit: ms, s, m, h or d (e.g. 30s)";
        else
            *why = "expected a whole number followed by ms, s, m, h or d "
                   "(e.g. 30s)";
        return rc;
    }
    if (rc == PARSE_OK)
        *out_ms = (int64_t)ms;
    return rc;
}

static int parse_size_why(const char *text, uint64_t *out, const char **why)
{
    int rc = parse_with_unit(text, size_units, UINT64_MAX, out);

    if (rc == PARSE_BAD)
        *why = "expected a whole number of B, KiB, MiB or GiB (e.g. 1MiB)";
    return rc;
}

static int parse_ratio_why(const char *text, uint64_t *out, const char **why)
{
    const char *p = text;
    uint64_t n = 0;
    int rc = read_digits(&p, &n);

    if (rc != PARSE_BAD && *p == '\0') {
        *why = "a ratio needs a '%' (e.g. 10%)";
        return PARSE_BAD;
    }
    if (rc == PARSE_BAD || strcmp(p, "%") != 0) {
        *why = "expected a percentage (e.g. 10%)";
        return PARSE_BAD;
    }
    if (rc == PARSE_OK)
        *out = n;
    return rc;
}

static int parse_bool(const char *text, bool *out)
{
    static const char *const yes[] = {"yes", "true", "on", "1", NULL};
    static const char *const no[] = {"no", "false", "off", "0", NULL};

    for (size_t i = 0; yes[i] != NULL; i++) {
        if (strcasecmp(text, yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcasecmp(text, no[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    return -1;
}

int config_parse_duration(const char *text, int64_t *out_ms)
{
    const char *why = NULL;
    int64_t ms = 0;

    if (text == NULL || parse_duration_why(text, &ms, &why) != PARSE_OK)
        return -1;
    *out_ms = ms;
    return 0;
}

int config_parse_size(const char *text, uint64_t *out_bytes)
{
    const char *why = NULL;
    uint64_t bytes = 0;

    if (text == NULL || parse_size_why(text, &bytes, &why) != PARSE_OK)
        return -1;
    *out_bytes = bytes;
    return 0;
}

/* The name rules live once, with the producer's checks in the SDK, so the
 * manifest, the CLI and the client library agree to the byte. */
bool config_valid_type_name(const char *name)
{
    return client_valid_type(name);
}

bool config_valid_task_id(const char *id, size_t len)
{
    return client_valid_id_len(id, len);
}

/* Checks a [redis] url with the SDK's parser of Redis addresses (the one
 * the CLI and the client library use); "embedded" is the host's own.
 * Returns NULL if fine, else why not (in why, or a static string). */
static const char *check_redis_url(const char *url, char *why, size_t len)
{
    redis_url parsed;

    if (strcmp(url, "embedded") == 0)
        return NULL;
    if (redis_url_parse(url, &parsed, why, len) == 0)
        return NULL;
    return why;
}

/* Checks a [metrics] listen address (not "off") with the SDK's parser of
 * host:port, the one Redis URLs go through, so what --check passes the
 * start can bind (a host name is resolved then). NULL if fine, else why
 * not (in why). */
static const char *check_listen(const char *text, char *why, size_t len)
{
    static const char usage[] = "expected host:port (port 1..65535) or off";
    char host[256], reason[128];
    int port = 0;

    if (redis_address_parse(text, strlen(text), host, &port, reason,
                            sizeof(reason)) != 0) {
        snprintf(why, len, "%s (%s)", usage, reason);
        return why;
    }
    if (port == 0) {
        snprintf(why, len, "%s (no port)", usage);
        return why;
    }
    return NULL;
}

/* ---- what the manifest may hold ---- */

typedef enum value_kind {
    VALUE_BOOL,
    VALUE_NUMBER, /* an unsigned field of `size` bytes */
    VALUE_DURATION,
    VALUE_SIZE,
    VALUE_RATIO,
    VALUE_ENUM,
    VALUE_NAME, /* instance, prefix: the type name rule */
    VALUE_PATH,
    VALUE_URL,
    VALUE_LISTEN,
    VALUE_TOKEN /* a secret: 16..200 printable bytes, no spaces */
} value_kind;

typedef struct key_spec {
    const char *name;
    value_kind kind;
    size_t offset; /* of the field in config or in policy */
    size_t size;
    uint64_t min, max;
    const char *const *choices; /* VALUE_ENUM: index = stored value */
    const char *why_min;        /* why nothing below min will do, or NULL */
} key_spec;

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
#define HOST(key, kind, field, lo, hi, choices)                                \
    {                                                                          \
        key, kind, FIELD(config, field), lo, hi, choices, NULL                 \
    }
#define POLICY(key, kind, field, lo, hi, choices)                              \
    {                                                                          \
        key, kind, FIELD(policy, field), lo, hi, choices, NULL                 \
    }
/* A policy duration with a floor that has a reason. */
#define POLICY_FLOOR(key, field, lo, hi, why)                                  \
    {                                                                          \
        key, VALUE_DURATION, FIELD(policy, field), lo, hi, NULL, why           \
    }

static const key_spec host_keys[] = {
    HOST("plugins_dir", VALUE_PATH, plugins_dir, 0, 0, NULL),
    HOST("autoload", VALUE_BOOL, autoload, 0, 1, NULL),
    HOST("watch", VALUE_BOOL, watch, 0, 1, NULL),
    HOST("insecure_plugins", VALUE_BOOL, insecure_plugins, 0, 1, NULL),
    HOST("workers", VALUE_NUMBER, workers, 1, 1024, NULL),
    HOST("shutdown_timeout", VALUE_DURATION, shutdown_timeout_ms, 0, MS_DAY,
         NULL),
    HOST("instance", VALUE_NAME, instance, 0, 0, NULL),
    HOST("init_timeout", VALUE_DURATION, init_timeout_ms, 1, MS_DAY, NULL),
    {NULL, VALUE_BOOL, 0, 0, 0, 0, NULL, NULL},
};

static const key_spec redis_keys[] = {
    HOST("url", VALUE_URL, redis_url, 0, 0, NULL),
    HOST("prefix", VALUE_NAME, prefix, 0, 0, NULL),
    HOST("data_dir", VALUE_PATH, data_dir, 0, 0, NULL),
    HOST("allow_eviction", VALUE_BOOL, allow_eviction, 0, 1, NULL),
    HOST("min_replicas_ack", VALUE_NUMBER, min_replicas_ack, 0, 100, NULL),
    /* Under the 5 s I/O timeout of every connection. */
    HOST("min_replicas_timeout", VALUE_DURATION, min_replicas_timeout_ms, 1,
         4000, NULL),
    {NULL, VALUE_BOOL, 0, 0, 0, 0, NULL, NULL},
};

static const key_spec metrics_keys[] = {
    HOST("listen", VALUE_LISTEN, metrics_listen, 0, 0, NULL),
    {NULL, VALUE_BOOL, 0, 0, 0, 0, NULL, NULL},
};

static const key_spec console_keys[] = {
    HOST("actions", VALUE_BOOL, console_actions, 0, 1, NULL),
    HOST("token", VALUE_TOKEN, console_token, 0, 0, NULL),
    {NULL, VALUE_BOOL, 0, 0, 0, 0, NULL, NULL},
};

static const key_spec producer_keys[] = {
    HOST("strict", VALUE_BOOL, producer_strict, 0, 1, NULL),
    {NULL, VALUE_BOOL, 0, 0, 0, 0, NULL, NULL},
};

static const key_spec log_keys[] = {
    HOST("level", VALUE_ENUM, log_level, 0, 0, level_names),
    HOST("format", VALUE_ENUM, log_format, 0, 0, format_names),
    {NULL, VALUE_BOOL, 0, 0, 0, 0, NULL, NULL},
};

/* [defaults] and [type.NAME]. */
enum { POLICY_KEYS = 19 };

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

static const key_spec policy_keys[] = {
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
    {NULL, VALUE_BOOL, 0, 0, 0, 0, NULL, NULL},
};
_Static_assert(sizeof policy_keys / sizeof policy_keys[0] == POLICY_KEYS + 1,
               "POLICY_KEYS counts policy_keys");

typedef enum section_kind {
    SECTION_NONE,
    SECTION_HOST,
    SECTION_REDIS,
    SECTION_METRICS,
    SECTION_LOG,
    SECTION_CONSOLE,
    SECTION_PRODUCER,
    SECTION_DEFAULTS,
    SECTION_PLUGIN,
    SECTION_TYPE,
    SECTION_KINDS
} section_kind;

typedef struct fixed_section {
    const char *name;
    section_kind kind;
    const key_spec *keys;
} fixed_section;

static const fixed_section fixed_sections[] = {
    {"host", SECTION_HOST, host_keys},
    {"redis", SECTION_REDIS, redis_keys},
    {"metrics", SECTION_METRICS, metrics_keys},
    {"log", SECTION_LOG, log_keys},
    {"console", SECTION_CONSOLE, console_keys},
    {"producer", SECTION_PRODUCER, producer_keys},
    {"defaults", SECTION_DEFAULTS, policy_keys},
    {NULL, SECTION_NONE, NULL},
};

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

/* ---- the parser's state ---- */

typedef struct seen_key {
    char *name;
    int line;
} seen_key;

typedef struct parser {
    char shown[256]; /* the file for messages, as client_quote shows it */
    FILE *stream;
    uint64_t bytes; /* read so far (MANIFEST_MAX_BYTES) */
    char *buf; /* getline's */
    size_t buf_cap;
    int line; /* of the line inih is working on */
    config *cfg;

    bool failed;
    int err_rank; /* line of the error; INT_MAX when it has none */
    char err[CONFIG_ERR_LEN];

    section_kind kind; /* of the current section */
    char *section;     /* its name as written, e.g. "plugin.echo" */
    size_t index;      /* its plugin or type index */
    seen_key *keys;    /* keys met in it so far */
    size_t n_keys;
    int fixed_line[SECTION_KINDS];   /* header line of each fixed section */
    int defaults_lines[POLICY_KEYS]; /* line of each key set, or 0 */
    int (*type_lines)[POLICY_KEYS];  /* the same per [type.NAME] */
    bool skip_plugin_files;          /* config_load_producer */
} parser;

/* Records an error at `line` (0: the file has no line for it, -1: not about
 * the file at all) unless one earlier in the file is already recorded. */
__attribute__((format(printf, 3, 4))) static void fail(parser *p, int line,
                                                       const char *fmt, ...)
{
    int rank = line > 0 ? line : INT_MAX;
    int used = 0;
    va_list ap;

    if (p->failed && p->err_rank <= rank)
        return;
    if (line > 0)
        used = snprintf(p->err, sizeof p->err, "%s:%d: ", p->shown, line);
    else if (line == 0)
        used = snprintf(p->err, sizeof p->err, "%s: ", p->shown);
    if (used < 0 || (size_t)used >= sizeof p->err)
        used = 0;
    va_start(ap, fmt);
    vsnprintf(p->err + used, sizeof p->err - (size_t)used, fmt, ap);
    va_end(ap);
    p->failed = true;
    p->err_rank = rank;
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

static const key_spec *find_key(const key_spec *keys, const char *name)
{
    for (; keys->name != NULL; keys++)
        if (strcmp(keys->name, name) == 0)
            return keys;
    return NULL;
}

/* A hint for an unknown key of [host]..[type.NAME] (writes "" if none). */
static void unknown_key_hint(const char *name, const key_spec *keys, char *hint,
                             size_t len)
{
    hint[0] = '\0';
    for (const key_spec *k = keys; k->name != NULL; k++) {
        if (looks_like(name, k->name)) {
            snprintf(hint, len, " (did you mean '%s'?)", k->name);
            return;
        }
    }
    for (const fixed_section *s = fixed_sections; s->name != NULL; s++) {
        if (s->keys == keys || find_key(s->keys, name) == NULL)
            continue;
        if (s->kind == SECTION_DEFAULTS)
            snprintf(hint, len, " (it belongs in [defaults] or [type.NAME])");
        else
            snprintf(hint, len, " (it belongs in [%s])", s->name);
        return;
    }
}

/* ---- setting values ---- */

static void store_number(void *field, size_t size, value_kind kind,
                         uint64_t value)
{
    if (kind == VALUE_DURATION) {
        int64_t ms = (int64_t)value;

        memcpy(field, &ms, sizeof ms);
    } else if (size == sizeof(uint32_t)) {
        uint32_t v = (uint32_t)value;

        memcpy(field, &v, sizeof v);
    } else if (size == sizeof(uint64_t)) {
        memcpy(field, &value, sizeof value);
    } else {
        fputs("wharf: config: unexpected field size\n", stderr);
        abort();
    }
}

static void store_string(void *field, const char *value)
{
    char *old;
    char *copy = value != NULL ? xstrdup(value) : NULL;

    memcpy(&old, field, sizeof old);
    free(old);
    memcpy(field, &copy, sizeof copy);
}

/* An amount in the unit a person would write it in. */
static void format_amount(char *buf, size_t len, value_kind kind, uint64_t n)
{
    const unit *units = kind == VALUE_DURATION ? duration_units
                        : kind == VALUE_SIZE   ? size_units
                                               : NULL;
    const unit *best = NULL;

    if (kind == VALUE_RATIO) {
        snprintf(buf, len, "%" PRIu64 "%%", n);
        return;
    }
    if (units != NULL && n == 0) {
        snprintf(buf, len, "0%s", kind == VALUE_DURATION ? "s" : "B");
        return;
    }
    for (const unit *u = units; u != NULL && u->name != NULL; u++)
        if (u->name[0] != '\0' && n % u->factor == 0 &&
            (best == NULL || u->factor > best->factor))
            best = u;
    if (best != NULL)
        snprintf(buf, len, "%" PRIu64 "%s", n / best->factor, best->name);
    else
        snprintf(buf, len, "%" PRIu64, n);
}

/* "a or b", "a, b or c" */
static void format_choices(char *buf, size_t len, const char *const *choices)
{
    size_t n = 0, used = 0;

    while (choices[n] != NULL)
        n++;
    buf[0] = '\0';
    for (size_t i = 0; i < n && used < len; i++) {
        const char *sep = i == 0 ? "" : i + 1 == n ? " or " : ", ";
        int w = snprintf(buf + used, len - used, "%s%s", sep, choices[i]);

        if (w < 0)
            break;
        used += (size_t)w;
    }
}

/* Parses `value` as `spec` says and stores it in the field of `base`, or
 * records why it cannot. */
static void set_value(parser *p, const key_spec *spec, void *base,
                      const char *value)
{
    char *field = (char *)base + spec->offset;
    char url_why[256];
    const char *why = NULL;
    uint64_t number = 0;
    int64_t ms = 0;
    bool flag = false;
    int rc = PARSE_OK;
    char lo[32], hi[32], choices[128];

    if (*value == '\0') {
        fail(p, p->line, "%s has no value", spec->name);
        return;
    }
    switch (spec->kind) {
    case VALUE_BOOL:
        if (parse_bool(value, &flag) < 0)
            fail(p, p->line,
                 "bad value '%s' for %s: expected yes, no, true, false, "
                 "on, off, 1 or 0",
                 value, spec->name);
        else
            memcpy(field, &flag, sizeof flag);
        return;
    case VALUE_ENUM:
        for (size_t i = 0; spec->choices[i] != NULL; i++) {
            if (strcasecmp(value, spec->choices[i]) == 0) {
                store_number(field, spec->size, spec->kind, i);
                return;
            }
        }
        format_choices(choices, sizeof choices, spec->choices);
        fail(p, p->line, "bad value '%s' for %s: expected %s", value,
             spec->name, choices);
        return;
    case VALUE_NAME:
        if (!config_valid_type_name(value))
            fail(p, p->line, "bad value '%s' for %s: " NAME_RULE, value,
                 spec->name);
        else
            store_string(field, value);
        return;
    case VALUE_PATH:
        store_string(field, value);
        return;
    case VALUE_URL:
        why = check_redis_url(value, url_why, sizeof(url_why));
        if (why != NULL)
            fail(p, p->line, "bad value '%s' for %s: %s", value, spec->name,
                 why);
        else
            store_string(field, value);
        return;
    case VALUE_LISTEN:
        if (strcasecmp(value, "off") == 0) {
            store_string(field, NULL);
            return;
        }
        why = check_listen(value, url_why, sizeof(url_why));
        if (why != NULL)
            fail(p, p->line, "bad value '%s' for %s: %s", value, spec->name,
                 why);
        else
            store_string(field, value);
        return;
    case VALUE_TOKEN:
        if (strlen(value) < 16 || strlen(value) > 200)
            fail(p, p->line, "bad value for %s: it must be 16 to 200 bytes "
                 "long (a long random string)", spec->name);
        else if (value[strcspn(value, " \t\"'\\")] != '\0')
            fail(p, p->line, "bad value for %s: no spaces, quotes or "
                 "backslashes", spec->name);
        else
            store_string(field, value);
        return;
    case VALUE_NUMBER:
        rc = parse_count(value, &number, &why);
        break;
    case VALUE_DURATION:
        rc = parse_duration_why(value, &ms, &why);
        number = (uint64_t)ms;
        break;
    case VALUE_SIZE:
        rc = parse_size_why(value, &number, &why);
        break;
    case VALUE_RATIO:
        rc = parse_ratio_why(value, &number, &why);
        break;
    }
    if (rc == PARSE_BAD) {
        fail(p, p->line, "bad value '%s' for %s: %s", value, spec->name, why);
        return;
    }
    if (rc == PARSE_TOO_LARGE || number < spec->min || number > spec->max) {
        format_amount(lo, sizeof lo, spec->kind, spec->min);
        format_amount(hi, sizeof hi, spec->kind, spec->max);
        if (rc != PARSE_TOO_LARGE && number < spec->min && spec->why_min)
            fail(p, p->line, "%s = %s is out of range %s..%s: %s", spec->name,
                 value, lo, hi, spec->why_min);
        else
            fail(p, p->line, "%s = %s is out of range %s..%s", spec->name,
                 value, lo, hi);
        return;
    }
    store_number(field, spec->size, spec->kind, number);
}

/* ---- [plugin.NAME] ---- */

static size_t count_types(char *const *types)
{
    size_t n = 0;

    while (types != NULL && types[n] != NULL)
        n++;
    return n;
}

/* `types = a, b c`: each a valid type name, none listed twice, none served
 * by an earlier plugin section. */
static void set_plugin_types(parser *p, plugin_section *section,
                             const char *value)
{
    static const char separators[] = ", \t";
    const char *c = value;

    section->types = xcalloc(1, sizeof *section->types);
    section->types_line = p->line;
    while (*(c += strspn(c, separators)) != '\0') {
        size_t len = strcspn(c, separators), n = count_types(section->types);
        char *name = xstrndup(c, len);

        c += len;
        section->types =
            xrealloc(section->types, (n + 2) * sizeof *section->types);
        section->types[n] = name;
        section->types[n + 1] = NULL;
        if (!config_valid_type_name(name)) {
            fail(p, p->line, "bad type name '%s' in types: " NAME_RULE, name);
            return;
        }
        for (size_t i = 0; i < n; i++) {
            if (strcmp(section->types[i], name) == 0) {
                fail(p, p->line, "type '%s' is listed twice in types", name);
                return;
            }
        }
        for (size_t i = 0; i < p->cfg->n_plugins; i++) {
            const plugin_section *other = &p->cfg->plugins[i];

            if (other == section)
                continue;
            for (size_t j = 0; j < count_types(other->types); j++) {
                if (strcmp(other->types[j], name) == 0) {
                    fail(p, p->line,
                         "type '%s' is served by both plugin '%s' (line %d) "
                         "and plugin '%s'",
                         name, other->name, other->types_line, section->name);
                    return;
                }
            }
        }
    }
    if (section->types[0] == NULL)
        fail(p, p->line, "types lists no type name");
}

static void set_plugin_key(parser *p, const char *name, const char *value)
{
    plugin_section *section = &p->cfg->plugins[p->index];
    config_kv *kv;

    if (strcmp(name, "path") == 0) {
        if (*value == '\0') {
            fail(p, p->line, "path has no value");
            return;
        }
        free(section->path);
        section->path = xstrdup(value);
        section->path_line = p->line;
    } else if (strcmp(name, "types") == 0) {
        if (*value == '\0')
            fail(p, p->line, "types has no value");
        else
            set_plugin_types(p, section, value);
    } else {
        section->extra = xrealloc(section->extra, (section->n_extra + 1) *
                                                      sizeof *section->extra);
        kv = &section->extra[section->n_extra++];
        kv->key = xstrdup(name);
        kv->value = xstrdup(value);
    }
}

/* ---- sections ---- */

static void forget_keys(parser *p)
{
    for (size_t i = 0; i < p->n_keys; i++)
        free(p->keys[i].name);
    free(p->keys);
    p->keys = NULL;
    p->n_keys = 0;
}

static void unknown_section(parser *p, const char *name)
{
    char hint[160] = "";
    const char *dot = strchr(name, '.');

    if (strcmp(name, "plugin") == 0 || strcmp(name, "type") == 0) {
        snprintf(hint, sizeof hint, " (expected [%s.NAME])", name);
    } else {
        for (const fixed_section *s = fixed_sections; s->name != NULL; s++)
            if (looks_like(name, s->name))
                snprintf(hint, sizeof hint, " (did you mean [%s]?)", s->name);
        if (dot != NULL && hint[0] == '\0') {
            char *head = xstrndup(name, (size_t)(dot - name));

            if (looks_like(head, "plugin") || looks_like(head, "type"))
                snprintf(hint, sizeof hint, " (did you mean [%s%s]?)",
                         looks_like(head, "plugin") ? "plugin" : "type", dot);
            free(head);
        }
    }
    fail(p, p->line, "unknown section [%s]%s", name, hint);
}

static void begin_plugin(parser *p, const char *name)
{
    config *cfg = p->cfg;
    plugin_section *section;

    for (size_t i = 0; i < cfg->n_plugins; i++) {
        if (strcmp(cfg->plugins[i].name, name) == 0) {
            fail(p, p->line, "duplicate section [plugin.%s] (first at line %d)",
                 name, cfg->plugins[i].line);
            return;
        }
    }
    cfg->plugins =
        xrealloc(cfg->plugins, (cfg->n_plugins + 1) * sizeof *cfg->plugins);
    section = &cfg->plugins[cfg->n_plugins];
    memset(section, 0, sizeof *section);
    section->name = xstrdup(name);
    section->line = p->line;
    section->path_line = p->line;
    p->index = cfg->n_plugins++;
}

static void begin_type(parser *p, const char *name)
{
    config *cfg = p->cfg;
    type_section *section;

    for (size_t i = 0; i < cfg->n_types; i++) {
        if (strcmp(cfg->types[i].name, name) == 0) {
            fail(p, p->line, "duplicate section [type.%s] (first at line %d)",
                 name, cfg->types[i].line);
            return;
        }
    }
    cfg->types = xrealloc(cfg->types, (cfg->n_types + 1) * sizeof *cfg->types);
    p->type_lines =
        xrealloc(p->type_lines, (cfg->n_types + 1) * sizeof *p->type_lines);
    memset(p->type_lines[cfg->n_types], 0, sizeof *p->type_lines);
    section = &cfg->types[cfg->n_types];
    memset(section, 0, sizeof *section);
    section->name = xstrdup(name);
    section->line = p->line;
    p->index = cfg->n_types++;
}

/* The section header `name` starts at the current line. */
static void begin_section(parser *p, const char *name)
{
    const fixed_section *s;

    forget_keys(p);
    free(p->section);
    p->section = xstrdup(name);
    p->kind = SECTION_NONE;
    for (s = fixed_sections; s->name != NULL; s++)
        if (strcmp(name, s->name) == 0)
            break;
    if (s->name != NULL) {
        if (p->fixed_line[s->kind] != 0) {
            fail(p, p->line, "duplicate section [%s] (first at line %d)", name,
                 p->fixed_line[s->kind]);
            return;
        }
        p->fixed_line[s->kind] = p->line;
        p->kind = s->kind;
    } else if (strncmp(name, "plugin.", 7) == 0) {
        if (!config_valid_type_name(name + 7)) {
            fail(p, p->line, "bad plugin name '%s' in [%s]: " NAME_RULE,
                 name + 7, name);
            return;
        }
        p->kind = SECTION_PLUGIN;
        begin_plugin(p, name + 7);
    } else if (strncmp(name, "type.", 5) == 0) {
        if (!config_valid_type_name(name + 5)) {
            fail(p, p->line, "bad type name '%s' in [%s]: " NAME_RULE, name + 5,
                 name);
            return;
        }
        p->kind = SECTION_TYPE;
        begin_type(p, name + 5);
    } else {
        unknown_section(p, name);
    }
}

/* inih's handler: one `key = value` of the current line. */
static int on_key(void *user, const char *inih_section, const char *name,
                  const char *value)
{
    parser *p = user;
    const fixed_section *s;
    const key_spec *spec;
    section_kind want;
    char hint[128];

    (void)inih_section; /* inih cuts it at 49 bytes; we track our own */
    if (p->failed)
        return 0;
    if (*name == '\0') {
        fail(p, p->line, "missing key name before '='");
        return 0;
    }
    if (p->kind == SECTION_NONE) {
        fail(p, p->line, "key '%s' comes before any [section]", name);
        return 0;
    }
    for (size_t i = 0; i < p->n_keys; i++) {
        if (strcmp(p->keys[i].name, name) == 0) {
            fail(p, p->line, "duplicate key '%s' in [%s] (first at line %d)",
                 name, p->section, p->keys[i].line);
            return 0;
        }
    }
    p->keys = xrealloc(p->keys, (p->n_keys + 1) * sizeof *p->keys);
    p->keys[p->n_keys].name = xstrdup(name);
    p->keys[p->n_keys++].line = p->line;

    if (p->kind == SECTION_PLUGIN) {
        set_plugin_key(p, name, value);
        return !p->failed;
    }
    want = p->kind == SECTION_TYPE ? SECTION_DEFAULTS : p->kind;
    for (s = fixed_sections; s->kind != want; s++)
        continue;
    spec = find_key(s->keys, name);
    if (spec == NULL) {
        unknown_key_hint(name, s->keys, hint, sizeof hint);
        fail(p, p->line, "unknown key '%s' in [%s]%s", name, p->section, hint);
        return 0;
    }
    if (p->kind == SECTION_DEFAULTS) {
        set_value(p, spec, &p->cfg->defaults, value);
        p->defaults_lines[spec - policy_keys] = p->line;
    } else if (p->kind == SECTION_TYPE) {
        set_value(p, spec, &p->cfg->types[p->index].policy, value);
        p->type_lines[p->index][spec - policy_keys] = p->line;
    } else {
        set_value(p, spec, p->cfg, value);
        if (strcmp(name, "plugins_dir") == 0)
            p->cfg->plugins_dir_line = p->line;
    }
    return !p->failed;
}

/* Mirrors inih's find_chars_or_comment(): the first of `chars` in `s`
 * before an inline ';' comment (one that follows whitespace), or NULL. */
static const char *find_before_comment(const char *s, const char *chars)
{
    bool was_space = false;

    for (; *s != '\0'; s++) {
        if (strchr(chars, *s) != NULL)
            return s;
        if (was_space && *s == ';')
            return NULL;
        was_space = isspace((unsigned char)*s);
    }
    return NULL;
}

/* A `[...]` line: starts its section, or records why it cannot. */
static void read_header(parser *p, const char *text)
{
    const char *close = find_before_comment(text + 1, "]");
    const char *rest;
    char *name;

    if (close == NULL) {
        fail(p, p->line, "missing ']': expected '[section]'");
        return;
    }
    rest = close + 1 + strspn(close + 1, " \t\f\v");
    text += 1 + strspn(text + 1, " \t\f\v");
    while (close > text && isspace((unsigned char)close[-1]))
        close--;
    name = xstrndup(text, (size_t)(close - text));
    if (*rest != '\0' && *rest != ';')
        fail(p, p->line, "unexpected text '%s' after [%s]", rest, name);
    else
        begin_section(p, name);
    free(name);
}

/* inih's reader: hands over one whole line as `str`, without its leading
 * blanks (so inih never takes an indented key for a multi-line
 * continuation), and handles what inih cannot see: over-long lines, NUL
 * bytes, section headers (inih cuts names at 49 bytes and never reports a
 * section without keys), key lines without '='. NULL ends the parse. */
static char *read_line(char *str, int num, void *stream)
{
    parser *p = stream;
    ssize_t got;
    size_t len, limit = num > 2 ? (size_t)num - 2 : 0;
    char *text;

    if (p->failed || p->stream == NULL)
        return NULL;
    errno = 0;
    got = getline(&p->buf, &p->buf_cap, p->stream);
    if (got < 0) {
        if (ferror(p->stream))
            fail(p, 0, "cannot read: %s", strerror(errno));
        return NULL;
    }
    /* The size was checked at open; a file that grows while we read it
     * is held to the same bound. */
    p->bytes += (uint64_t)got;
    if (p->bytes > MANIFEST_MAX_BYTES) {
        fail(p, 0, "larger than %s: not a manifest", MANIFEST_MAX_TEXT);
        return NULL;
    }
    p->line++;
    len = (size_t)got;
    text = p->buf;
    if (memchr(text, '\0', len) != NULL) {
        fail(p, p->line, "line contains a NUL byte");
        return NULL;
    }
    if (len > 0 && text[len - 1] == '\n')
        len--;
    if (len > 0 && text[len - 1] == '\r')
        len--;
    text[len] = '\0';
    if (p->line == 1 && strncmp(text, "\xef\xbb\xbf", 3) == 0) {
        text += 3;
        len -= 3;
    }
    if (len > limit) {
        fail(p, p->line, "line is longer than %zu bytes", limit);
        return NULL;
    }
    while (isspace((unsigned char)*text))
        text++;
    if (*text == '[')
        read_header(p, text);
    else if (*text != '\0' && *text != ';' && *text != '#' &&
             find_before_comment(text, "=:") == NULL)
        fail(p, p->line, "expected 'key = value' or '[section]'");
    if (p->failed)
        return NULL;
    snprintf(str, (size_t)num, "%s\n", text);
    return str;
}

/* ---- after the last line ---- */

/* `rel` against the absolute folder `base`, with "." parts and doubled
 * slashes removed (".." is kept: it means something with symlinks).
 * The caller frees the result. */
static char *resolve_path(const char *base, const char *rel)
{
    size_t len = strlen(base) + strlen(rel) + 2;
    char *joined = xrealloc(NULL, len);
    char *out = xrealloc(NULL, len);
    const char *c = joined;
    size_t used = 0;

    if (rel[0] == '/')
        snprintf(joined, len, "%s", rel);
    else
        snprintf(joined, len, "%s/%s", base, rel);
    while (*c != '\0') {
        size_t part = strcspn(c += strspn(c, "/"), "/");

        if (part == 0 || (part == 1 && c[0] == '.')) {
            c += part;
            continue;
        }
        out[used++] = '/';
        memcpy(out + used, c, part);
        used += part;
        c += part;
    }
    if (used == 0)
        out[used++] = '/';
    out[used] = '\0';
    free(joined);
    return out;
}

static void replace_path(char **field, const char *base)
{
    char *resolved = resolve_path(base, *field);

    free(*field);
    *field = resolved;
}

static size_t policy_index(const char *key)
{
    return (size_t)(find_key(policy_keys, key) - policy_keys);
}

/* low_watermark <= high_watermark, reported at the later of the two lines
 * that set them in this section. `inherited` names where the other one
 * comes from when only one is set here. */
static void check_watermarks(parser *p, const policy *pol, const int *lines,
                             const char *section, const char *inherited)
{
    int low = lines[policy_index("low_watermark")];
    int high = lines[policy_index("high_watermark")];

    if (pol->low_watermark <= pol->high_watermark || (low == 0 && high == 0))
        return;
    fail(p, low > high ? low : high,
         "low_watermark %" PRIu64 " is above high_watermark %" PRIu64
         " in [%s]%s%s",
         pol->low_watermark, pol->high_watermark, section,
         low == 0 || high == 0 ? " (the other one is " : "",
         low == 0 || high == 0 ? inherited : "");
}

/* What can only be checked once the whole file is read: paths resolved,
 * [type.NAME] laid over [defaults] wherever it stood, the watermarks,
 * the plugin files, then the environment. Of the errors found here the
 * earliest in the file is the one kept. */
static void finish(parser *p)
{
    config *cfg = p->cfg;
    const char *env;
    char *name;

    replace_path(&cfg->plugins_dir, cfg->dir);
    replace_path(&cfg->data_dir, cfg->dir);
    cfg->console_line = p->fixed_line[SECTION_CONSOLE];
    if (cfg->console_actions && cfg->console_token == NULL)
        fail(p, cfg->console_line,
             "[console] actions = yes needs a token (token = a long random "
             "string; actions must present it)");
    check_watermarks(p, &cfg->defaults, p->defaults_lines, "defaults",
                     "the built-in default)");
    for (size_t i = 0; i < cfg->n_types; i++) {
        type_section *t = &cfg->types[i];
        policy merged = cfg->defaults;

        for (size_t k = 0; k < POLICY_KEYS; k++) {
            if (p->type_lines[i][k] != 0)
                memcpy((char *)&merged + policy_keys[k].offset,
                       (char *)&t->policy + policy_keys[k].offset,
                       policy_keys[k].size);
        }
        t->policy = merged;
        name = xrealloc(NULL, strlen(t->name) + 6);
        snprintf(name, strlen(t->name) + 6, "type.%s", t->name);
        check_watermarks(p, &t->policy, p->type_lines[i], name,
                         "from [defaults])");
        free(name);
    }
    for (size_t i = 0; i < cfg->n_plugins; i++) {
        plugin_section *section = &cfg->plugins[i];
        struct stat st;

        if (section->path == NULL) {
            section->path = xrealloc(NULL, strlen(section->name) + 4);
            snprintf(section->path, strlen(section->name) + 4, "%s.so",
                     section->name);
        }
        replace_path(&section->path, cfg->plugins_dir);
        if (p->skip_plugin_files)
            continue;
        if (stat(section->path, &st) != 0) {
            if (errno == ENOENT)
                fail(p, section->path_line,
                     "plugin file '%s' of [plugin.%s] does not exist",
                     section->path, section->name);
            else
                fail(p, section->path_line,
                     "cannot access plugin file '%s' of [plugin.%s]: %s",
                     section->path, section->name, strerror(errno));
        } else if (S_ISDIR(st.st_mode)) {
            fail(p, section->path_line,
                 "plugin file '%s' of [plugin.%s] is a directory",
                 section->path, section->name);
        }
    }
    if (p->failed)
        return;
    env = getenv("WHARF_REDIS_URL");
    if (env != NULL && *env != '\0') {
        char url_why[256];
        const char *why = check_redis_url(env, url_why, sizeof(url_why));

        if (why != NULL) {
            fail(p, -1, "WHARF_REDIS_URL: bad value '%s': %s", env, why);
            return;
        }
        store_string(&cfg->redis_url, env);
    }
    env = getenv("WHARF_REDIS_PASSWORD");
    if (env != NULL && *env != '\0')
        store_string(&cfg->redis_password, env);
}

/* The absolute, symlink-free folder of `path`, or NULL with errno set. */
static char *folder_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir, *real;

    if (slash == NULL)
        dir = xstrdup(".");
    else if (slash == path)
        dir = xstrdup("/");
    else
        dir = xstrndup(path, (size_t)(slash - path));
    real = realpath(dir, NULL);
    free(dir);
    return real;
}

static config *config_new(const char *path)
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

/* config_load and config_load_producer: the same parse, with or without
 * the check that each plugin file is there. */
static int load(const char *path, bool skip_plugin_files, config **out,
                char *err, size_t errlen)
{
    parser p;
    struct stat st;
    int rc = -1, bad_line;

    memset(&p, 0, sizeof p);
    p.skip_plugin_files = skip_plugin_files;
    if (path == NULL) {
        /* config_load_defaults: no file, no line. */
        p.cfg = config_new("");
        p.cfg->dir = folder_of("");
        goto parse;
    }
    client_quote(path, p.shown, sizeof p.shown);
    p.stream = fopen(path, "r");
    if (p.stream == NULL) {
        fail(&p, 0, "cannot open: %s", strerror(errno));
        goto done;
    }
    /* /dev/zero, a FIFO or a directory would be read without end (or fail
     * at the first line): only a regular file of sane size is a manifest. */
    if (fstat(fileno(p.stream), &st) != 0) {
        fail(&p, 0, "cannot stat: %s", strerror(errno));
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        fail(&p, 0, "not a regular file (%s)",
             S_ISDIR(st.st_mode)    ? "a directory"
             : S_ISCHR(st.st_mode)  ? "a character device"
             : S_ISBLK(st.st_mode)  ? "a block device"
             : S_ISFIFO(st.st_mode) ? "a pipe"
             : S_ISSOCK(st.st_mode) ? "a socket"
                                    : "not a file");
        goto done;
    }
    if ((uint64_t)st.st_size > MANIFEST_MAX_BYTES) {
        fail(&p, 0, "larger than %s: not a manifest", MANIFEST_MAX_TEXT);
        goto done;
    }
    p.cfg = config_new(path);
    p.cfg->dir = folder_of(path);
parse:
    if (p.cfg->dir == NULL) {
        fail(&p, 0, "cannot resolve its folder: %s", strerror(errno));
        goto done;
    }
    bad_line = ini_parse_stream(read_line, &p, on_key, &p);
    if (bad_line == -2)
        xmalloc_oom();
    /* Our reader catches bad lines first; this is a safety net in case
     * inih refuses one we let through. */
    if (bad_line > 0)
        fail(&p, bad_line, "expected 'key = value' or '[section]'");
    if (!p.failed)
        finish(&p);
    if (!p.failed) {
        *out = p.cfg;
        p.cfg = NULL;
        rc = 0;
    }
done:
    if (p.failed && err != NULL && errlen > 0)
        snprintf(err, errlen, "%s", p.err);
    if (p.stream != NULL)
        fclose(p.stream);
    free(p.buf);
    free(p.section);
    forget_keys(&p);
    free(p.type_lines);
    config_free(p.cfg);
    return rc;
}

int config_load(const char *path, config **out, char *err, size_t errlen)
{
    return load(path, false, out, err, errlen);
}

int config_load_producer(const char *path, config **out, char *err,
                         size_t errlen)
{
    return load(path, true, out, err, errlen);
}

int config_load_defaults(config **out, char *err, size_t errlen)
{
    int rc = load(NULL, true, out, err, errlen);

    if (rc == 0) {
        free((*out)->file);
        (*out)->file = NULL;
    }
    return rc;
}

void config_free(config *cfg)
{
    if (cfg == NULL)
        return;
    for (size_t i = 0; i < cfg->n_plugins; i++) {
        plugin_section *section = &cfg->plugins[i];

        free(section->name);
        free(section->path);
        for (size_t j = 0; j < count_types(section->types); j++)
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
