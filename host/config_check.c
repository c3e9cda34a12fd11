/* What can only be checked once the whole manifest is read: paths
 * resolved against the manifest's folder and plugins_dir, [type.NAME]
 * laid over [defaults], the watermarks and the console's token, the
 * plugin files, [redis] password_file, then the environment
 * (WHARF_REDIS_URL, WHARF_REDIS_PASSWORD). */

#include "config_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "redis_url.h"
#include "xmalloc.h"

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

/* low_watermark <= high_watermark, reported at the later of the two lines
 * that set them in this section. `inherited` names where the other one
 * comes from when only one is set here. */
static void check_watermarks(parser *p, const policy *pol, const int *lines,
                             const char *section, const char *inherited)
{
    int low = lines[config_policy_index("low_watermark")];
    int high = lines[config_policy_index("high_watermark")];

    if (pol->low_watermark <= pol->high_watermark || (low == 0 && high == 0))
        return;
    config_fail(p, low > high ? low : high,
                "low_watermark %" PRIu64 " is above high_watermark %" PRIu64
                " in [%s]%s%s",
                pol->low_watermark, pol->high_watermark, section,
                low == 0 || high == 0 ? " (the other one is " : "",
                low == 0 || high == 0 ? inherited : "");
}

/* Reads a password from the file `path` that the key `key` at `line`
 * names: its first line, without the line end (as systemd's
 * LoadCredential= or a secrets mount writes it), stored in *out. A file
 * that cannot be read, is not a regular file, is empty or holds a NUL
 * byte or a longer password than a URL may is an error at the key's
 * line; its content is never quoted. */
static void read_password_file(parser *p, const char *key, const char *path,
                               int line_no, char **out)
{
    char buf[REDIS_URL_PASSWORD_MAX + 2];
    struct stat st;
    size_t n, line;
    FILE *f;

    f = fopen(path, "re");
    if (!f) {
        config_fail(p, line_no, "cannot read %s '%s': %s", key, path,
                    strerror(errno));
        return;
    }
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        config_fail(p, line_no, "%s '%s' is not a regular file", key, path);
        fclose(f);
        return;
    }
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    line = strcspn(buf, "\r\n"); /* stops at a NUL byte too */
    if (line < n && buf[line] == '\0') {
        config_fail(p, line_no, "%s '%s' holds a NUL byte", key, path);
        memset(buf, 0, sizeof(buf));
        return;
    }
    buf[line] = '\0';
    if (buf[0] == '\0')
        config_fail(p, line_no,
                    "%s '%s' is empty: its first line is the password", key,
                    path);
    else if (strlen(buf) >= REDIS_URL_PASSWORD_MAX)
        config_fail(p, line_no,
                    "the password in %s '%s' is longer than %d bytes", key,
                    path, REDIS_URL_PASSWORD_MAX - 1);
    else
        config_store_string(out, buf);
    memset(buf, 0, sizeof(buf));
}

/* Appends "&name=value" (or "?..." first) to *url (redis_url.h). */
static void append_param(char **url, const char *name, const char *value)
{
    size_t len = strlen(*url) + strlen(name) + 3 * strlen(value) + 3;
    char *out = xrealloc(NULL, len);

    snprintf(out, len, "%s", *url);
    if (redis_url_append_param(out, len, name, value) != 0)
        abort(); /* sized for the worst case above */
    free(*url);
    *url = out;
}

/* True if the query of url has the parameter `name`. */
static bool url_has_param(const char *url, const char *name)
{
    size_t n = strlen(name);

    for (const char *q = strchr(url, '?'); q; q = strchr(q + 1, '&'))
        if (strncmp(q + 1, name, n) == 0 && q[1 + n] == '=')
            return true;
    return false;
}

static bool is_sentinel_url(const char *url)
{
    return strncmp(url, "redis+sentinel://", 17) == 0 ||
           strncmp(url, "rediss+sentinel://", 18) == 0;
}

/* [redis] sentinel_password_file: its first line becomes the
 * sentinel_password key's value (which apply_tls_keys then makes a query
 * parameter of the URL), so one of the two, never both. */
static void read_sentinel_password_file(parser *p)
{
    config *cfg = p->cfg;
    int line = cfg->redis_sentinel_password_file_line;

    if (!cfg->redis_sentinel_password_file)
        return;
    if (cfg->redis_tls_lines[6] != 0) {
        config_fail(p, line,
                    "sentinel_password_file and sentinel_password: give only "
                    "one");
        return;
    }
    if (!is_sentinel_url(cfg->redis_url)) {
        config_fail(p, line,
                    "sentinel_password_file needs a Sentinel url "
                    "(redis+sentinel:// or rediss+sentinel://)");
        return;
    }
    if (url_has_param(cfg->redis_url, "sentinel_password")) {
        config_fail(p, line,
                    "sentinel_password_file and a sentinel_password in url: "
                    "give only one");
        return;
    }
    replace_path(&cfg->redis_sentinel_password_file, cfg->dir);
    read_password_file(p, "sentinel_password_file",
                       cfg->redis_sentinel_password_file, line,
                       &cfg->redis_sentinel_password);
    if (!p->failed)
        cfg->redis_tls_lines[6] = line;
}

/* The [redis] tls_* keys, sentinel_user and sentinel_password made query
 * parameters of the URL (paths resolved against the manifest's folder),
 * so wharfd, the CLI with this manifest and the console read them
 * through the one parser of Redis URLs. A TLS key needs a rediss URL, a
 * sentinel one a Sentinel URL, and none may be in the URL already. */
static void apply_tls_keys(parser *p)
{
    config *cfg = p->cfg;
    char **values[7] = {&cfg->redis_tls_ca,        &cfg->redis_tls_cert,
                        &cfg->redis_tls_key,       &cfg->redis_tls_sni,
                        NULL,                      &cfg->redis_sentinel_user,
                        &cfg->redis_sentinel_password};
    char why[256];
    redis_url parsed;

    for (size_t i = 0; i < 7; i++) {
        int line = cfg->redis_tls_lines[i];
        const char *key = config_redis_tls_keys[i];

        if (line == 0)
            continue;
        if (i >= 5 && !is_sentinel_url(cfg->redis_url)) {
            config_fail(p, line,
                        "%s needs a Sentinel url (redis+sentinel:// or "
                        "rediss+sentinel://)",
                        key);
            return;
        }
        if (i < 5 && strncmp(cfg->redis_url, "rediss", 6) != 0) {
            config_fail(p, line,
                        "%s needs a TLS url (rediss://, rediss+cluster:// or "
                        "rediss+sentinel://)",
                        key);
            return;
        }
        if (url_has_param(cfg->redis_url, key)) {
            config_fail(p, line, "%s is in url too: give it once", key);
            return;
        }
        if (i < 3) {
            replace_path(values[i], cfg->dir);
            if (access(*values[i], R_OK) != 0) {
                config_fail(p, line, "cannot read %s '%s': %s", key, *values[i],
                            strerror(errno));
                return;
            }
        }
        append_param(&cfg->redis_url, key,
                     i != 4                  ? *values[i]
                     : cfg->redis_tls_verify ? "yes"
                                             : "no");
        if (redis_url_parse(cfg->redis_url, &parsed, why, sizeof(why)) != 0) {
            config_fail(p, line, "bad value for %s: %s", key, why);
            return;
        }
        memset(&parsed, 0, sizeof(parsed));
    }
}

/* What can only be checked once the whole file is read: paths resolved,
 * [type.NAME] laid over [defaults] wherever it stood, the watermarks,
 * the plugin files, then the environment. Of the errors found here the
 * earliest in the file is the one kept. */
void config_finish(parser *p)
{
    config *cfg = p->cfg;
    const char *env;
    char *name;

    replace_path(&cfg->plugins_dir, cfg->dir);
    replace_path(&cfg->data_dir, cfg->dir);
    cfg->console_line = p->fixed_line[SECTION_CONSOLE];
    if (cfg->console_actions && cfg->console_token == NULL)
        config_fail(
            p, cfg->console_line,
            "[console] actions = yes needs a token (token = a long random "
            "string; actions must present it)");
    check_watermarks(p, &cfg->defaults, p->defaults_lines, "defaults",
                     "the built-in default)");
    for (size_t i = 0; i < cfg->n_types; i++) {
        type_section *t = &cfg->types[i];
        policy merged = cfg->defaults;

        for (size_t k = 0; k < POLICY_KEYS; k++) {
            if (p->type_lines[i][k] != 0)
                memcpy((char *)&merged + config_policy_keys[k].offset,
                       (char *)&t->policy + config_policy_keys[k].offset,
                       config_policy_keys[k].size);
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
                config_fail(p, section->path_line,
                            "plugin file '%s' of [plugin.%s] does not exist",
                            section->path, section->name);
            else
                config_fail(p, section->path_line,
                            "cannot access plugin file '%s' of [plugin.%s]: %s",
                            section->path, section->name, strerror(errno));
        } else if (S_ISDIR(st.st_mode)) {
            config_fail(p, section->path_line,
                        "plugin file '%s' of [plugin.%s] is a directory",
                        section->path, section->name);
        }
    }
    config_check_schedules(p);
    config_check_rates(p);
    if (cfg->redis_password_file) {
        redis_url parsed;
        char why[256];

        /* Two passwords would be taken one way by wharfd and the other
         * by the CLI: refused, so both always use the same. */
        if (redis_url_parse(cfg->redis_url, &parsed, why, sizeof(why)) == 0 &&
            parsed.password[0])
            config_fail(p, cfg->redis_password_file_line,
                        "password_file and a password in url: give only one");
        memset(&parsed, 0, sizeof(parsed));
        replace_path(&cfg->redis_password_file, cfg->dir);
        read_password_file(p, "password_file", cfg->redis_password_file,
                           cfg->redis_password_file_line, &cfg->redis_password);
    }
    if (p->failed)
        return;
    env = getenv("WHARF_REDIS_URL");
    if (env != NULL && *env != '\0') {
        char url_why[256];
        const char *why = config_check_redis_url(env, url_why, sizeof(url_why));

        if (why != NULL) {
            char shown[REDIS_URL_TEXT_MAX];

            redis_url_redact(env, shown, sizeof(shown));
            config_fail(p, -1, "WHARF_REDIS_URL: bad value '%s': %s", shown,
                        why);
            return;
        }
        config_store_string(&cfg->redis_url, env);
    }
    read_sentinel_password_file(p);
    if (p->failed)
        return;
    apply_tls_keys(p);
    env = getenv("WHARF_REDIS_PASSWORD");
    if (env != NULL && *env != '\0')
        config_store_string(&cfg->redis_password, env);
}
