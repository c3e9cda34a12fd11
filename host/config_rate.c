/* The rate keys of [defaults] and [type.NAME]: rate_limit = COUNT/s,
 * /min or /h (or off), rate_burst = N (which needs a rate_limit) and
 * limit_key = id or a JSON pointer (RFC 6901) into the payload. */

#include "config_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "error_set.h"

/* The most starts per period: 100000/s is one every 10 us, past what
 * one Redis can begin. */
#define RATE_COUNT_MAX UINT64_C(100000)

static const struct {
    const char *name;
    int64_t ms;
} rate_periods[] = {{"s", MS_SECOND}, {"min", MS_MINUTE}, {"h", MS_HOUR}};

/* "COUNT/PERIOD" into *rate; NULL, or why not (a static string). */
static const char *parse_rate(const char *value, policy_rate *rate)
{
    const char *slash = strchr(value, '/');
    char count[32];
    uint64_t n = 0;
    const char *why = NULL;

    if (strcmp(value, "off") == 0) { /* a type without [defaults]' rate */
        rate->count = 0;
        rate->period_ms = 0;
        return NULL;
    }
    if (!slash || (size_t)(slash - value) >= sizeof(count))
        return "expected COUNT/s, COUNT/min or COUNT/h (e.g. 100/s), or off";
    memcpy(count, value, (size_t)(slash - value));
    count[slash - value] = '\0';
    if (config_parse_count(count, &n, &why) != PARSE_OK || n == 0 ||
        n > RATE_COUNT_MAX)
        return "COUNT must be a whole number from 1 to 100000";
    for (size_t i = 0; i < sizeof rate_periods / sizeof rate_periods[0]; i++) {
        if (strcmp(slash + 1, rate_periods[i].name) == 0) {
            rate->count = n;
            rate->period_ms = rate_periods[i].ms;
            return NULL;
        }
    }
    return "the period is s, min or h (e.g. 100/s, 30/min, 500/h)";
}

/* NULL if value is "id" or a JSON pointer, else why not. */
static const char *check_pointer(const char *value)
{
    if (strcmp(value, "id") == 0)
        return NULL;
    if (value[0] != '/')
        return "expected id (the task id) or a JSON pointer into the "
               "payload, starting with / (e.g. /customer_id)";
    if (strlen(value) >= LIMIT_KEY_MAX)
        return "a JSON pointer of at most 127 bytes";
    for (const char *c = value; *c != '\0'; c++)
        if (*c == '~' && c[1] != '0' && c[1] != '1')
            return "in a JSON pointer ~ is followed by 0 (~) or 1 (/)";
    return NULL;
}

int config_set_rate_value(const key_spec *spec, char *field, const char *value,
                          char *why, size_t len)
{
    const char *bad;
    policy_rate rate = {0, 0};

    if (spec->kind == VALUE_RATE) {
        bad = parse_rate(value, &rate);
        if (!bad)
            memcpy(field, &rate, sizeof rate);
    } else {
        bad = check_pointer(value);
        if (!bad)
            snprintf(field, spec->size, "%s", value);
    }
    if (bad) {
        error_set(why, len, "bad value '%s' for %s: %s", value, spec->name,
                  bad);
        return -1;
    }
    return 0;
}

/* True if pol has what `what` (rate_burst: a rate; limit_key: a rate
 * or a concurrency_limit) needs. */
static bool rates_served(const policy *pol, bool key)
{
    return pol->rate_limit.count != 0 || (key && pol->concurrency_limit);
}

/* One of the checks of config_check_rates: the key `name` (rate_burst
 * or limit_key) is refused where what it needs is missing. */
static void check_needs(parser *p, const char *name, const char *why)
{
    const config *cfg = p->cfg;
    size_t k = config_policy_index(name);
    bool key = strcmp(name, "limit_key") == 0;
    int inherited = p->defaults_lines[k];
    /* [defaults]'s is wrong when some type takes it without what it
     * needs (or there is no type to give it that). */
    bool unserved = inherited != 0 && !rates_served(&cfg->defaults, key) &&
                    cfg->n_types == 0;

    for (size_t i = 0; i < cfg->n_types; i++) {
        const type_section *t = &cfg->types[i];
        int line = p->type_lines[i][k];

        if (rates_served(&t->policy, key))
            continue;
        if (line != 0)
            config_fail(p, line, "%s without %s in [type.%s]: %s", name,
                        key ? "a rate_limit or a concurrency_limit"
                            : "a rate_limit",
                        t->name, why);
        else
            unserved = unserved || inherited != 0;
    }
    if (unserved)
        config_fail(
            p, inherited, "%s without %s in [defaults]: %s", name,
            key ? "a rate_limit or a concurrency_limit" : "a rate_limit", why);
}

void config_check_rates(parser *p)
{
    check_needs(p, "rate_burst",
                "a burst is of a rate (set rate_limit = COUNT/s)");
    check_needs(p, "limit_key",
                "it limits nothing by itself (set rate_limit or "
                "concurrency_limit)");
}

void config_format_rate(const policy_rate *rate, char *buf, size_t len)
{
    const char *per = rate->period_ms == MS_HOUR     ? "h"
                      : rate->period_ms == MS_MINUTE ? "min"
                                                     : "s";

    if (rate->count == 0)
        snprintf(buf, len, "off");
    else
        snprintf(buf, len, "%" PRIu64 "/%s", rate->count, per);
}
