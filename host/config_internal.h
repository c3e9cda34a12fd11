/* The inside of the manifest parser, shared by host/config*.c and by
 * nothing else (config.h is the public face). From the ground up: the
 * configuration and what it may hold (config.c), the "did you mean"
 * hints (config_hint.c), the value parsers (config_values.c), a key's
 * value into its field (config_set.c), the reader and its sections
 * (config_parse.c), the checks after the last line (config_check.c) and
 * the load that runs them (config_load.c). */
#ifndef WHARF_CONFIG_INTERNAL_H
#define WHARF_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"

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

/* ---- the configuration and what it may hold (config.c) ---- */

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
    VALUE_TOKEN, /* a secret: 16..200 printable bytes, no spaces */
    /* rates (config_rate.c) */
    VALUE_RATE,   /* COUNT/s, /min or /h into a policy_rate */
    VALUE_POINTER /* "id" or a JSON pointer into a char[size] */
} value_kind;

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
    SECTION_SCHEDULE,
    SECTION_KINDS
} section_kind;

typedef struct key_spec {
    section_kind section; /* where it is set; [defaults] for a policy key,
                             which [type.NAME] may set as well */
    const char *name;
    value_kind kind;
    size_t offset; /* of the field in config, or in policy for a policy key */
    size_t size;
    uint64_t min, max;
    const char *const *choices; /* VALUE_ENUM: index = stored value */
    const char *why_min;        /* why nothing below min will do, or NULL */
} key_spec;

/* The keys of [defaults] and [type.NAME], fields of policy, in a fixed
 * order: a key's index in config_policy_keys numbers it. */
enum { POLICY_KEYS = 26 };
extern const key_spec config_policy_keys[POLICY_KEYS + 1];

/* The most threads of one worker, [host] and [plugin.NAME] threads: far
 * above what a worker waiting on I/O gains from, low enough that a
 * typing slip does not ask a worker for a million stacks. */
#define THREADS_MAX 1024

/* `threads` of [plugin.NAME], a field of plugin_section. */
extern const key_spec config_plugin_threads_key;

/* The fixed sections [host] .. [defaults], by name, in the order "it
 * belongs in" looks through them; NULL-terminated. */
typedef struct fixed_section {
    const char *name;
    section_kind kind;
} fixed_section;
extern const fixed_section config_fixed_sections[];

/* The table that holds the keys of section: config_policy_keys for
 * SECTION_DEFAULTS, else the one of every other fixed section (each row
 * names its section). NULL-name-terminated. */
const key_spec *config_keys_of(section_kind section);

/* The fixed section named `name` ([host] .. [defaults]), or SECTION_NONE. */
section_kind config_fixed_section(const char *name);

/* The key `name` of a fixed section (SECTION_DEFAULTS for the policy
 * keys), or NULL. */
const key_spec *config_find_key(section_kind section, const char *name);

/* The index of the policy key `name` in config_policy_keys. */
size_t config_policy_index(const char *name);

/* A config with every key at its default, for the manifest at `path`
 * (cfg->dir is left NULL). Freed with config_free. */
config *config_new(const char *path);

/* How many names a NULL-terminated types list holds (0 for NULL). */
size_t config_count_types(char *const *types);

/* ---- "did you mean" (config_hint.c) ---- */

/* A hint for an unknown key of a fixed section: " (did you mean 'x'?)",
 * " (it belongs in [s])", where a key of a like name belongs and how
 * the two differ, or "" if none. Under 256 bytes. */
void config_unknown_key_hint(const char *name, section_kind section, char *hint,
                             size_t len);

/* A hint for the unknown section [name]: " (did you mean [x]?)",
 * " (expected [plugin.NAME])", or "" if none. */
void config_unknown_section_hint(const char *name, char *hint, size_t len);

/* ---- the value parsers (config_values.c) ---- */

enum { PARSE_OK = 0, PARSE_BAD = -1, PARSE_TOO_LARGE = -2 };

/* Each reads the whole of text into *out: PARSE_OK; PARSE_BAD with *why
 * saying what is wrong (a static string); PARSE_TOO_LARGE when it is too
 * large to hold. */
int config_parse_count(const char *text, uint64_t *out, const char **why);
int config_parse_duration_why(const char *text, int64_t *out_ms,
                              const char **why);
int config_parse_size_why(const char *text, uint64_t *out, const char **why);
int config_parse_ratio_why(const char *text, uint64_t *out, const char **why);

/* yes/no, true/false, on/off, 1/0 in any case: 0, or -1. */
int config_parse_bool(const char *text, bool *out);

/* A [redis] url ("embedded", or what the SDK's parser of Redis URLs
 * takes) and a [metrics] listen address (host:port): NULL if fine, else
 * why not (in why). */
const char *config_check_redis_url(const char *url, char *why, size_t len);

/* The [redis] keys that become query parameters of the url: the TLS
 * ones, then the sentinels' credentials, in the order of
 * cfg->redis_tls_lines. */
extern const char *const config_redis_tls_keys[7];
const char *config_check_listen(const char *text, char *why, size_t len);

/* An amount of `kind` in the unit a person would write it in ("30s",
 * "1MiB", "10%"). */
void config_format_amount(char *buf, size_t len, value_kind kind, uint64_t n);

/* "a or b", "a, b or c" */
void config_format_choices(char *buf, size_t len, const char *const *choices);

/* ---- a key's value into its field (config_set.c) ---- */

/* Parses `value` as `spec` says and stores it in its field of `base` (a
 * config, or a policy for a policy key): 0, or -1 with the message in
 * why and the field untouched. */
int config_set_value(const key_spec *spec, void *base, const char *value,
                     char *why, size_t len);

/* A key of section (a [plugin.NAME] of cfg), given at `line`: path,
 * types, threads, or one of the plugin's own. 0, or -1 with the message
 * in why. */
int config_set_plugin_key(config *cfg, plugin_section *section, int line,
                          const char *name, const char *value, char *why,
                          size_t len);

/* A key of the [schedule.NAME] section at `index` of cfg, given at
 * `line`. 0, or -1 with the message in why (config_schedule.c). */
int config_set_schedule_key(config *cfg, size_t index, int line,
                            const char *name, const char *value, char *why,
                            size_t len);

/* Replaces the string at field (a char * of a config) with a copy of
 * value (NULL: none), freeing the old one. */
void config_store_string(void *field, const char *value);

/* ---- the parser (config_parse.c) ---- */

typedef struct seen_key {
    char *name;
    int line;
} seen_key;

typedef struct parser {
    char shown[256]; /* the file for messages, as quote_text shows it */
    FILE *stream;
    uint64_t bytes; /* read so far (MANIFEST_MAX_BYTES) */
    char *buf;      /* getline's */
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
void config_fail(parser *p, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* inih's reader (the stream is the parser) and its handler (the user
 * pointer is the parser), for ini_parse_stream. */
char *config_read_line(char *str, int num, void *stream);
int config_on_key(void *user, const char *inih_section, const char *name,
                  const char *value);

/* Frees what the parser holds besides p->cfg and p->stream. */
void config_parser_free(parser *p);

/* ---- [schedule.NAME] (config_schedule.c) ---- */

/* Starts the section [schedule.name] at the parser's line. */
void config_begin_schedule(parser *p, const char *name);

/* What a schedule needs once its section is read: a type, one of cron
 * and every. Errors go to config_fail. */
void config_check_schedules(parser *p);

void config_free_schedules(config *cfg);

/* ---- rates (config_rate.c) ---- */

/* Checks and stores a VALUE_RATE or VALUE_POINTER value into field; 0,
 * or -1 with the one-line reason in why. */
int config_set_rate_value(const key_spec *spec, char *field,
                          const char *value, char *why, size_t len);

/* rate_burst needs a rate_limit, limit_key a rate_limit or a
 * concurrency_limit: in [defaults] (unless each [type.NAME] gives it one)
 * and in each [type.NAME] as laid over [defaults]; refused at the key's
 * line. */
void config_check_rates(parser *p);

/* ---- after the last line (config_check.c) ---- */

/* Resolves paths, lays [type.NAME] over [defaults], checks what needs the
 * whole file and applies the environment; errors go to config_fail. */
void config_finish(parser *p);

#endif /* WHARF_CONFIG_INTERNAL_H */
