/* The manifest's value parsers: whole numbers, durations, sizes, ratios
 * and booleans, each with the reason a bad one is refused; the name rules
 * and the Redis URL and listen address checks, all the SDK's own; and the
 * amounts and choices as messages print them. */

#include "config_internal.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "client_ids.h"
#include "endpoint.h"
#include "redis_url.h"

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
int config_parse_count(const char *text, uint64_t *out, const char **why)
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

int config_parse_duration_why(const char *text, int64_t *out_ms,
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

int config_parse_size_why(const char *text, uint64_t *out, const char **why)
{
    int rc = parse_with_unit(text, size_units, UINT64_MAX, out);

    if (rc == PARSE_BAD)
        *why = "expected a whole number of B, KiB, MiB or GiB (e.g. 1MiB)";
    return rc;
}

int config_parse_ratio_why(const char *text, uint64_t *out, const char **why)
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

int config_parse_bool(const char *text, bool *out)
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

    if (text == NULL || config_parse_duration_why(text, &ms, &why) != PARSE_OK)
        return -1;
    *out_ms = ms;
    return 0;
}

int config_parse_size(const char *text, uint64_t *out_bytes)
{
    const char *why = NULL;
    uint64_t bytes = 0;

    if (text == NULL || config_parse_size_why(text, &bytes, &why) != PARSE_OK)
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
const char *config_check_redis_url(const char *url, char *why, size_t len)
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
const char *config_check_listen(const char *text, char *why, size_t len)
{
    static const char usage[] = "expected host:port (port 1..65535) or off";
    char host[ENDPOINT_HOST_MAX], reason[128];
    int port = 0;

    if (endpoint_parse(text, strlen(text), 0, host, &port, reason,
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

/* An amount in the unit a person would write it in. */
void config_format_amount(char *buf, size_t len, value_kind kind, uint64_t n)
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
void config_format_choices(char *buf, size_t len, const char *const *choices)
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
