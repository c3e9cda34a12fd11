/* A key's value into its field: parsed as its key_spec says, checked
 * against its range and stored, or refused with the one-line reason the
 * parser reports at the key's line; and the keys of a [plugin.NAME]
 * section (path, types, threads, the plugin's own). */

#include "config_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "error_set.h"
#include "redis_url.h"
#include "xmalloc.h"

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

void config_store_string(void *field, const char *value)
{
    char *old;
    char *copy = value != NULL ? xstrdup(value) : NULL;

    memcpy(&old, field, sizeof old);
    free(old);
    memcpy(field, &copy, sizeof copy);
}

/* A value of a kind that is a string: checked and stored. */
static int set_string(const key_spec *spec, char *field, const char *value,
                      char *why, size_t len)
{
    char reason[256];
    const char *bad = NULL;

    switch (spec->kind) {
    case VALUE_NAME:
        if (!config_valid_type_name(value)) {
            error_set(why, len, "bad value '%s' for %s: " NAME_RULE, value,
                      spec->name);
            return -1;
        }
        break;
    case VALUE_URL:
        bad = config_check_redis_url(value, reason, sizeof(reason));
        break;
    case VALUE_LISTEN:
        if (strcasecmp(value, "off") == 0) {
            config_store_string(field, NULL);
            return 0;
        }
        bad = config_check_listen(value, reason, sizeof(reason));
        break;
    case VALUE_TOKEN:
        if (strlen(value) < 16 || strlen(value) > 200) {
            error_set(why, len,
                      "bad value for %s: it must be 16 to 200 bytes "
                      "long (a long random string)",
                      spec->name);
            return -1;
        }
        if (value[strcspn(value, " \t\"'\\")] != '\0') {
            error_set(why, len,
                      "bad value for %s: no spaces, quotes or "
                      "backslashes",
                      spec->name);
            return -1;
        }
        break;
    default: /* VALUE_PATH: any text */
        break;
    }
    if (bad != NULL) {
        char shown[REDIS_URL_TEXT_MAX];

        /* A URL may hold a password: never echoed. */
        if (spec->kind == VALUE_URL)
            redis_url_redact(value, shown, sizeof(shown));
        else
            snprintf(shown, sizeof(shown), "%s", value);
        error_set(why, len, "bad value '%s' for %s: %s", shown, spec->name,
                  bad);
        return -1;
    }
    config_store_string(field, value);
    return 0;
}

/* A value of a kind that is a number: parsed, range-checked and stored. */
static int set_number(const key_spec *spec, char *field, const char *value,
                      char *why, size_t len)
{
    const char *bad = NULL;
    uint64_t number = 0;
    int64_t ms = 0;
    int rc = PARSE_OK;
    char lo[32], hi[32];

    switch (spec->kind) {
    case VALUE_DURATION:
        /* Where 0 is allowed ([metrics] history = 0: off), a bare 0 needs
         * no unit: zero is zero in any. */
        if (spec->min == 0 && strcmp(value, "0") == 0)
            break;
        rc = config_parse_duration_why(value, &ms, &bad);
        number = (uint64_t)ms;
        break;
    case VALUE_SIZE:
        rc = config_parse_size_why(value, &number, &bad);
        break;
    case VALUE_RATIO:
        rc = config_parse_ratio_why(value, &number, &bad);
        break;
    default: /* VALUE_NUMBER */
        rc = config_parse_count(value, &number, &bad);
        break;
    }
    if (rc == PARSE_BAD) {
        error_set(why, len, "bad value '%s' for %s: %s", value, spec->name,
                  bad);
        return -1;
    }
    if (rc == PARSE_TOO_LARGE || number < spec->min || number > spec->max) {
        config_format_amount(lo, sizeof lo, spec->kind, spec->min);
        config_format_amount(hi, sizeof hi, spec->kind, spec->max);
        if (rc != PARSE_TOO_LARGE && number < spec->min && spec->why_min)
            error_set(why, len, "%s = %s is out of range %s..%s: %s",
                      spec->name, value, lo, hi, spec->why_min);
        else
            error_set(why, len, "%s = %s is out of range %s..%s", spec->name,
                      value, lo, hi);
        return -1;
    }
    store_number(field, spec->size, spec->kind, number);
    return 0;
}

int config_set_value(const key_spec *spec, void *base, const char *value,
                     char *why, size_t len)
{
    char *field = (char *)base + spec->offset;
    bool flag = false;
    char choices[128];

    if (*value == '\0') {
        error_set(why, len, "%s has no value", spec->name);
        return -1;
    }
    switch (spec->kind) {
    case VALUE_BOOL:
        if (config_parse_bool(value, &flag) < 0) {
            error_set(why, len,
                      "bad value '%s' for %s: expected yes, no, true, false, "
                      "on, off, 1 or 0",
                      value, spec->name);
            return -1;
        }
        memcpy(field, &flag, sizeof flag);
        return 0;
    case VALUE_ENUM:
        for (size_t i = 0; spec->choices[i] != NULL; i++) {
            if (strcasecmp(value, spec->choices[i]) == 0) {
                store_number(field, spec->size, spec->kind, i);
                return 0;
            }
        }
        config_format_choices(choices, sizeof choices, spec->choices);
        error_set(why, len, "bad value '%s' for %s: expected %s", value,
                  spec->name, choices);
        return -1;
    case VALUE_NAME:
    case VALUE_PATH:
    case VALUE_URL:
    case VALUE_LISTEN:
    case VALUE_TOKEN:
        return set_string(spec, field, value, why, len);
    case VALUE_NUMBER:
    case VALUE_DURATION:
    case VALUE_SIZE:
    case VALUE_RATIO:
        break;
    case VALUE_RATE: /* rates (config_rate.c) */
    case VALUE_POINTER:
        return config_set_rate_value(spec, field, value, why, len);
    }
    return set_number(spec, field, value, why, len);
}

/* ---- [plugin.NAME] ---- */

/* `types = a, b c`: each a valid type name, none listed twice, none served
 * by an earlier plugin section. */
static int set_plugin_types(config *cfg, plugin_section *section, int line,
                            const char *value, char *why, size_t len)
{
    static const char separators[] = ", \t";
    const char *c = value;

    section->types = xcalloc(1, sizeof *section->types);
    section->types_line = line;
    while (*(c += strspn(c, separators)) != '\0') {
        size_t name_len = strcspn(c, separators);
        size_t n = config_count_types(section->types);
        char *name = xstrndup(c, name_len);

        c += name_len;
        section->types =
            xrealloc(section->types, (n + 2) * sizeof *section->types);
        section->types[n] = name;
        section->types[n + 1] = NULL;
        if (!config_valid_type_name(name)) {
            error_set(why, len, "bad type name '%s' in types: " NAME_RULE,
                      name);
            return -1;
        }
        for (size_t i = 0; i < n; i++) {
            if (strcmp(section->types[i], name) == 0) {
                error_set(why, len, "type '%s' is listed twice in types", name);
                return -1;
            }
        }
        for (size_t i = 0; i < cfg->n_plugins; i++) {
            const plugin_section *other = &cfg->plugins[i];

            if (other == section)
                continue;
            for (size_t j = 0; j < config_count_types(other->types); j++) {
                if (strcmp(other->types[j], name) == 0) {
                    error_set(why, len,
                              "type '%s' is served by both plugin '%s' (line "
                              "%d) and plugin '%s'",
                              name, other->name, other->types_line,
                              section->name);
                    return -1;
                }
            }
        }
    }
    if (section->types[0] == NULL) {
        error_set(why, len, "types lists no type name");
        return -1;
    }
    return 0;
}

int config_set_plugin_key(config *cfg, plugin_section *section, int line,
                          const char *name, const char *value, char *why,
                          size_t len)
{
    config_kv *kv;

    if (strcmp(name, "path") == 0) {
        if (*value == '\0') {
            error_set(why, len, "path has no value");
            return -1;
        }
        free(section->path);
        section->path = xstrdup(value);
        section->path_line = line;
    } else if (strcmp(name, "types") == 0) {
        if (*value == '\0') {
            error_set(why, len, "types has no value");
            return -1;
        }
        return set_plugin_types(cfg, section, line, value, why, len);
    } else if (strcmp(name, "threads") == 0) {
        /* The host's, not the plugin's: the loader sizes the worker's
         * threads by it and refuses it for a plugin that has not opted
         * in (loader.c). */
        section->threads_line = line;
        return config_set_value(&config_plugin_threads_key, section, value, why,
                                len);
    } else {
        section->extra = xrealloc(section->extra, (section->n_extra + 1) *
                                                      sizeof *section->extra);
        kv = &section->extra[section->n_extra++];
        kv->key = xstrdup(name);
        kv->value = xstrdup(value);
    }
    return 0;
}
