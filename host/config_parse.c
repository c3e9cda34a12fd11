/* The manifest's reader: its state, its one error (the first in file
 * order), and what inih is handed. We feed inih one whole line at a time
 * through our own reader, so we know every line's number, catch lines
 * too long for inih and track section headers ourselves; inih splits the
 * key = value lines, and the handler sets each key of its section. */

#include "config_internal.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "xmalloc.h"

/* Records an error at `line` (0: the file has no line for it, -1: not about
 * the file at all) unless one earlier in the file is already recorded. */
void config_fail(parser *p, int line, const char *fmt, ...)
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
    char hint[160];

    config_unknown_section_hint(name, hint, sizeof hint);
    config_fail(p, p->line, "unknown section [%s]%s", name, hint);
}

static void begin_plugin(parser *p, const char *name)
{
    config *cfg = p->cfg;
    plugin_section *section;

    for (size_t i = 0; i < cfg->n_plugins; i++) {
        if (strcmp(cfg->plugins[i].name, name) == 0) {
            config_fail(p, p->line,
                        "duplicate section [plugin.%s] (first at line %d)",
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
            config_fail(p, p->line,
                        "duplicate section [type.%s] (first at line %d)", name,
                        cfg->types[i].line);
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
    section_kind fixed = config_fixed_section(name);

    forget_keys(p);
    free(p->section);
    p->section = xstrdup(name);
    p->kind = SECTION_NONE;
    if (fixed != SECTION_NONE) {
        if (p->fixed_line[fixed] != 0) {
            config_fail(p, p->line, "duplicate section [%s] (first at line %d)",
                        name, p->fixed_line[fixed]);
            return;
        }
        p->fixed_line[fixed] = p->line;
        p->kind = fixed;
    } else if (strncmp(name, "plugin.", 7) == 0) {
        if (!config_valid_type_name(name + 7)) {
            config_fail(p, p->line, "bad plugin name '%s' in [%s]: " NAME_RULE,
                        name + 7, name);
            return;
        }
        p->kind = SECTION_PLUGIN;
        begin_plugin(p, name + 7);
    } else if (strncmp(name, "type.", 5) == 0) {
        if (!config_valid_type_name(name + 5)) {
            config_fail(p, p->line, "bad type name '%s' in [%s]: " NAME_RULE,
                        name + 5, name);
            return;
        }
        p->kind = SECTION_TYPE;
        begin_type(p, name + 5);
    } else if (strncmp(name, "schedule.", 9) == 0) {
        if (!config_valid_type_name(name + 9)) {
            config_fail(p, p->line,
                        "bad schedule name '%s' in [%s]: " NAME_RULE, name + 9,
                        name);
            return;
        }
        p->kind = SECTION_SCHEDULE;
        config_begin_schedule(p, name + 9);
    } else {
        unknown_section(p, name);
    }
}

/* inih's handler: one `key = value` of the current line. */
int config_on_key(void *user, const char *inih_section, const char *name,
                  const char *value)
{
    parser *p = user;
    const key_spec *spec;
    section_kind want;
    char hint[256], why[CONFIG_ERR_LEN];
    int rc;

    (void)inih_section; /* inih cuts it at 49 bytes; we track our own */
    if (p->failed)
        return 0;
    if (*name == '\0') {
        config_fail(p, p->line, "missing key name before '='");
        return 0;
    }
    if (p->kind == SECTION_NONE) {
        config_fail(p, p->line, "key '%s' comes before any [section]", name);
        return 0;
    }
    for (size_t i = 0; i < p->n_keys; i++) {
        if (strcmp(p->keys[i].name, name) == 0) {
            config_fail(p, p->line,
                        "duplicate key '%s' in [%s] (first at line %d)", name,
                        p->section, p->keys[i].line);
            return 0;
        }
    }
    p->keys = xrealloc(p->keys, (p->n_keys + 1) * sizeof *p->keys);
    p->keys[p->n_keys].name = xstrdup(name);
    p->keys[p->n_keys++].line = p->line;

    if (p->kind == SECTION_PLUGIN) {
        rc = config_set_plugin_key(p->cfg, &p->cfg->plugins[p->index], p->line,
                                   name, value, why, sizeof why);
    } else if (p->kind == SECTION_SCHEDULE) {
        rc = config_set_schedule_key(p->cfg, p->index, p->line, name, value,
                                     why, sizeof why);
    } else {
        want = p->kind == SECTION_TYPE ? SECTION_DEFAULTS : p->kind;
        spec = config_find_key(want, name);
        if (spec == NULL) {
            config_unknown_key_hint(name, want, hint, sizeof hint);
            config_fail(p, p->line, "unknown key '%s' in [%s]%s", name,
                        p->section, hint);
            return 0;
        }
        if (p->kind == SECTION_DEFAULTS) {
            rc = config_set_value(spec, &p->cfg->defaults, value, why,
                                  sizeof why);
            p->defaults_lines[spec - config_policy_keys] = p->line;
        } else if (p->kind == SECTION_TYPE) {
            rc = config_set_value(spec, &p->cfg->types[p->index].policy, value,
                                  why, sizeof why);
            p->type_lines[p->index][spec - config_policy_keys] = p->line;
        } else {
            rc = config_set_value(spec, p->cfg, value, why, sizeof why);
            if (strcmp(name, "plugins_dir") == 0)
                p->cfg->plugins_dir_line = p->line;
            if (strcmp(name, "threads") == 0)
                p->cfg->threads_line = p->line;
            if (strcmp(name, "password_file") == 0)
                p->cfg->redis_password_file_line = p->line;
            if (strcmp(name, "sentinel_password_file") == 0)
                p->cfg->redis_sentinel_password_file_line = p->line;
            for (size_t i = 0; i < 7; i++)
                if (p->kind == SECTION_REDIS &&
                    strcmp(name, config_redis_tls_keys[i]) == 0)
                    p->cfg->redis_tls_lines[i] = p->line;
        }
    }
    if (rc != 0)
        config_fail(p, p->line, "%s", why);
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
        config_fail(p, p->line, "missing ']': expected '[section]'");
        return;
    }
    rest = close + 1 + strspn(close + 1, " \t\f\v");
    text += 1 + strspn(text + 1, " \t\f\v");
    while (close > text && isspace((unsigned char)close[-1]))
        close--;
    name = xstrndup(text, (size_t)(close - text));
    if (*rest != '\0' && *rest != ';')
        config_fail(p, p->line, "unexpected text '%s' after [%s]", rest, name);
    else
        begin_section(p, name);
    free(name);
}

/* inih's reader: hands over one whole line as `str`, without its leading
 * blanks (so inih never takes an indented key for a multi-line
 * continuation), and handles what inih cannot see: over-long lines, NUL
 * bytes, section headers (inih cuts names at 49 bytes and never reports a
 * section without keys), key lines without '='. NULL ends the parse. */
char *config_read_line(char *str, int num, void *stream)
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
            config_fail(p, 0, "cannot read: %s", strerror(errno));
        return NULL;
    }
    /* The size was checked at open; a file that grows while we read it
     * is held to the same bound. */
    p->bytes += (uint64_t)got;
    if (p->bytes > MANIFEST_MAX_BYTES) {
        config_fail(p, 0, "larger than %s: not a manifest", MANIFEST_MAX_TEXT);
        return NULL;
    }
    p->line++;
    len = (size_t)got;
    text = p->buf;
    if (memchr(text, '\0', len) != NULL) {
        config_fail(p, p->line, "line contains a NUL byte");
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
        config_fail(p, p->line, "line is longer than %zu bytes", limit);
        return NULL;
    }
    while (isspace((unsigned char)*text))
        text++;
    if (*text == '[')
        read_header(p, text);
    else if (*text != '\0' && *text != ';' && *text != '#' &&
             find_before_comment(text, "=:") == NULL)
        config_fail(p, p->line, "expected 'key = value' or '[section]'");
    if (p->failed)
        return NULL;
    snprintf(str, (size_t)num, "%s\n", text);
    return str;
}

void config_parser_free(parser *p)
{
    free(p->buf);
    free(p->section);
    forget_keys(p);
    free(p->type_lines);
}
