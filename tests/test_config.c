/* The manifest parser (host/config*.c): every key of docs/manifest.md, the
 * defaults, and each configuration error with its line and message. Each
 * test writes its manifests into a fresh temporary folder. */

#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"

#include <wharf/plugin.h>

static char dir[PATH_MAX];           /* the test's folder, symlink-free */
static char manifest[PATH_MAX + 16]; /* dir/wharf.ini */

static void make_dir(void)
{
    char tmpl[] = "/tmp/wharf-test-config-XXXXXX";

    cr_assert_not_null(mkdtemp(tmpl), "mkdtemp: %s", strerror(errno));
    cr_assert_not_null(realpath(tmpl, dir), "realpath: %s", strerror(errno));
    snprintf(manifest, sizeof manifest, "%s/wharf.ini", dir);
    /* The environment overrides are tested on purpose, nowhere else. */
    unsetenv("WHARF_REDIS_URL");
    unsetenv("WHARF_REDIS_PASSWORD");
}

static void remove_tree(const char *path)
{
    struct stat st;
    DIR *d;
    struct dirent *e;
    char child[PATH_MAX * 2];

    if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        d = opendir(path);
        while (d != NULL && (e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            snprintf(child, sizeof child, "%s/%s", path, e->d_name);
            remove_tree(child);
        }
        if (d != NULL)
            closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

static void remove_dir(void)
{
    if (dir[0] != '\0')
        remove_tree(dir);
}

TestSuite(config, .init = make_dir, .fini = remove_dir);

/* Writes `text` to dir/name, making the folders on the way. */
static void write_file(const char *name, const char *text)
{
    char path[PATH_MAX * 2];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    for (char *slash = strchr(path + strlen(dir) + 1, '/'); slash != NULL;
         slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        mkdir(path, 0755);
        *slash = '/';
    }
    f = fopen(path, "w");
    cr_assert_not_null(f, "cannot write %s: %s", path, strerror(errno));
    fputs(text, f);
    fclose(f);
}

/* An empty plugin file: the parser only checks that it exists. */
static void touch(const char *name)
{
    write_file(name, "");
}

static config *load_file(const char *path)
{
    config *cfg = NULL;
    char err[CONFIG_ERR_LEN] = "";
    int rc = config_load(path, &cfg, err, sizeof err);

    cr_assert_eq(rc, 0, "config_load failed: %s", err);
    cr_assert_not_null(cfg, "no config");
    return cfg;
}

static config *load(const char *text)
{
    write_file("wharf.ini", text);
    return load_file(manifest);
}

/* Loads `text`, which must fail with "MANIFEST:LINE: ..." containing
 * `what`; returns the message for further checks. */
static const char *fails_at(const char *text, int line, const char *what)
{
    static char err[CONFIG_ERR_LEN];
    char prefix[PATH_MAX + 32];
    config *cfg = NULL;
    int rc;

    write_file("wharf.ini", text);
    strcpy(err, "untouched");
    rc = config_load(manifest, &cfg, err, sizeof err);
    cr_assert_eq(rc, -1, "expected an error at line %d, got none", line);
    cr_assert_null(cfg, "*out was set on failure");
    snprintf(prefix, sizeof prefix, "%s:%d: ", manifest, line);
    cr_assert(strncmp(err, prefix, strlen(prefix)) == 0,
              "error '%s' is not at line %d", err, line);
    cr_assert_not_null(strstr(err, what), "error '%s' does not say '%s'", err,
                       what);
    cr_assert_null(strchr(err, '\n'), "error is not one line: '%s'", err);
    return err + strlen(prefix);
}

/* ---- a valid manifest ---- */

static const char full_manifest[] =
    "; every key of docs/manifest.md, none at its default\n"
    "[type.echo]                ; before [defaults] on purpose\n"
    "max_attempts = 3\n"
    "backoff = exponential\n"
    "\n"
    "[host]\n"
    "plugins_dir = lib/plugins  ; relative to this file\n"
    "autoload = no\n"
    "watch = yes\n"
    "insecure_plugins = true\n"
    "workers = 8\n"
    "threads = 16\n"
    "shutdown_timeout = 1m\n"
    "instance = node-1.a_b\n"
    "[redis]\n"
    "url = redis://user:secret@redis.example:6380/2\n"
    "prefix = jobs\n"
    "data_dir = state/redis\n"
    "allow_eviction = on\n"
    "[metrics]\n"
    "listen = 0.0.0.0:9100\n"
    "[log]\n"
    "level = debug\n"
    "format = text\n"
    "[defaults]\n"
    "max_attempts = 7\n"
    "backoff = linear\n"
    "backoff_base = 250ms\n"
    "backoff_max = 2h\n"
    "jitter = 25%\n"
    "lock_ttl = 90s\n"
    "lock_retry = 2s\n"
    "result_ttl = 1d\n"
    "idempotency = none\n"
    "idempotency_ttl = 12h\n"
    "timeout = 45s\n"
    "visibility_timeout = 15m\n"
    "prefetch = 64\n"
    "max_payload = 256KiB\n"
    "high_watermark = 20000\n"
    "low_watermark = 15000\n"
    "max_backlog = 100000\n"
    "dead_max = 500\n"
    "dead_ttl = 30d\n"
    "concurrency = 4\n"
    "[plugin.echo]\n"
    "path = echo.so\n"
    "types = echo, shout   whisper\n"
    "threads = 8   ; the host's key, not the plugin's\n"
    "greeting = hello world ; a plugin's own key\n"
    "mode = fast\n"
    "[plugin.reverse]\n"
    "types = reverse\n"
    "[type.reverse]\n"
    "timeout = 2m\n"
    "concurrency = 2\n";

Test(config, full_manifest_gives_every_value)
{
    config *cfg;
    const policy *d, *echo, *reverse;
    const plugin_section *ps;
    char want[PATH_MAX * 2];

    touch("lib/plugins/echo.so");
    touch("lib/plugins/reverse.so");
    cfg = load(full_manifest);

    cr_assert_str_eq(cfg->file, manifest);
    cr_assert_str_eq(cfg->dir, dir);
    snprintf(want, sizeof want, "%s/lib/plugins", dir);
    cr_assert_str_eq(cfg->plugins_dir, want);
    cr_assert_eq(cfg->plugins_dir_line, 7);
    cr_assert_eq(cfg->autoload, false);
    cr_assert_eq(cfg->watch, true);
    cr_assert_eq(cfg->insecure_plugins, true);
    cr_assert_eq(cfg->workers, 8);
    cr_assert_eq(cfg->threads, 16);
    cr_assert_eq(cfg->threads_line, 12);
    cr_assert_eq(cfg->shutdown_timeout_ms, 60000);
    cr_assert_str_eq(cfg->instance, "node-1.a_b");

    cr_assert_str_eq(cfg->redis_url,
                     "redis://user:secret@redis.example:6380/2");
    cr_assert_null(cfg->redis_password);
    cr_assert_str_eq(cfg->prefix, "jobs");
    snprintf(want, sizeof want, "%s/state/redis", dir);
    cr_assert_str_eq(cfg->data_dir, want);
    cr_assert_eq(cfg->allow_eviction, true);
    cr_assert_str_eq(cfg->metrics_listen, "0.0.0.0:9100");
    cr_assert_eq(cfg->log_level, WHARF_LOG_DEBUG);
    cr_assert_eq(cfg->log_format, LOG_FORMAT_TEXT);

    d = &cfg->defaults;
    cr_assert_eq(d->max_attempts, 7);
    cr_assert_eq(d->backoff, BACKOFF_LINEAR);
    cr_assert_eq(d->backoff_base_ms, 250);
    cr_assert_eq(d->backoff_max_ms, 2 * 3600 * 1000);
    cr_assert_eq(d->jitter_pct, 25);
    cr_assert_eq(d->lock_ttl_ms, 90000);
    cr_assert_eq(d->lock_retry_ms, 2000);
    cr_assert_eq(d->result_ttl_ms, 86400000);
    cr_assert_eq(d->idempotency, IDEMPOTENCY_NONE);
    cr_assert_eq(d->idempotency_ttl_ms, 12 * 3600 * 1000);
    cr_assert_eq(d->timeout_ms, 45000);
    cr_assert_eq(d->visibility_timeout_ms, 15 * 60 * 1000);
    cr_assert_eq(d->prefetch, 64);
    cr_assert_eq(d->max_payload, 256 * 1024);
    cr_assert_eq(d->high_watermark, 20000);
    cr_assert_eq(d->low_watermark, 15000);
    cr_assert_eq(d->max_backlog, 100000);
    cr_assert_eq(d->dead_max, 500);
    cr_assert_eq(d->dead_ttl_ms, INT64_C(30) * 86400000);
    cr_assert_eq(d->concurrency, 4);

    /* [type.echo] came before [defaults]: its two keys win, the rest is
     * [defaults], not the built-in defaults. */
    cr_assert_eq(cfg->n_types, 2);
    echo = config_policy(cfg, "echo");
    cr_assert_eq(echo, &cfg->types[0].policy);
    cr_assert_str_eq(cfg->types[0].name, "echo");
    cr_assert_eq(cfg->types[0].line, 2);
    cr_assert_eq(echo->max_attempts, 3);
    cr_assert_eq(echo->backoff, BACKOFF_EXPONENTIAL);
    cr_assert_eq(echo->backoff_base_ms, 250);
    cr_assert_eq(echo->idempotency, IDEMPOTENCY_NONE);
    cr_assert_eq(echo->prefetch, 64);
    cr_assert_eq(echo->dead_ttl_ms, INT64_C(30) * 86400000);
    cr_assert_eq(echo->concurrency, 4, "inherited from [defaults]");
    reverse = config_policy(cfg, "reverse");
    cr_assert_eq(reverse->timeout_ms, 120000);
    cr_assert_eq(reverse->concurrency, 2);
    cr_assert_eq(reverse->max_attempts, 7);
    cr_assert_eq(config_policy(cfg, "shout"), &cfg->defaults);
    cr_assert_eq(config_policy(cfg, "nobody"), &cfg->defaults);

    cr_assert_eq(cfg->n_plugins, 2);
    ps = config_plugin(cfg, "echo");
    cr_assert_not_null(ps);
    cr_assert_eq(ps->line, 46);
    cr_assert_eq(ps->path_line, 47);
    cr_assert_eq(ps->types_line, 48);
    cr_assert_eq(ps->threads, 8);
    cr_assert_eq(ps->threads_line, 49);
    snprintf(want, sizeof want, "%s/lib/plugins/echo.so", dir);
    cr_assert_str_eq(ps->path, want);
    cr_assert_not_null(ps->types);
    cr_assert_str_eq(ps->types[0], "echo");
    cr_assert_str_eq(ps->types[1], "shout");
    cr_assert_str_eq(ps->types[2], "whisper");
    cr_assert_null(ps->types[3]);
    cr_assert_eq(ps->n_extra, 2);
    cr_assert_str_eq(config_plugin_value(ps, "greeting"), "hello world");
    cr_assert_str_eq(config_plugin_value(ps, "mode"), "fast");
    cr_assert_null(config_plugin_value(ps, "path"));
    cr_assert_null(config_plugin_value(ps, "threads"));
    cr_assert_null(config_plugin_value(ps, "absent"));

    /* No `path`: NAME.so in plugins_dir, found at the header line. */
    ps = config_plugin(cfg, "reverse");
    cr_assert_not_null(ps);
    snprintf(want, sizeof want, "%s/lib/plugins/reverse.so", dir);
    cr_assert_str_eq(ps->path, want);
    cr_assert_eq(ps->path_line, ps->line);
    cr_assert_eq(ps->line, 52);
    cr_assert_eq(ps->threads, 0, "not set");
    cr_assert_eq(ps->threads_line, 0);
    cr_assert_str_eq(ps->types[0], "reverse");
    cr_assert_null(ps->types[1]);
    cr_assert_eq(ps->n_extra, 0);
    cr_assert_null(config_plugin(cfg, "nobody"));

    config_free(cfg);
}

Test(config, empty_manifest_gives_the_defaults)
{
    config *cfg = load("; nothing but a comment\n");
    const policy *d = &cfg->defaults;
    char want[PATH_MAX * 2];

    snprintf(want, sizeof want, "%s/plugins", dir);
    cr_assert_str_eq(cfg->plugins_dir, want);
    cr_assert_eq(cfg->plugins_dir_line, 0);
    cr_assert_eq(cfg->autoload, true);
    cr_assert_eq(cfg->watch, false);
    cr_assert_eq(cfg->insecure_plugins, false);
    cr_assert_eq(cfg->workers, 2);
    cr_assert_eq(cfg->threads, 1);
    cr_assert_eq(cfg->threads_line, 0);
    cr_assert_eq(cfg->shutdown_timeout_ms, 30000);
    cr_assert_str_eq(cfg->instance, "default");
    cr_assert_str_eq(cfg->redis_url, "redis://127.0.0.1:6379/0");
    cr_assert_null(cfg->redis_password);
    cr_assert_str_eq(cfg->prefix, "wharf");
    snprintf(want, sizeof want, "%s/data", dir);
    cr_assert_str_eq(cfg->data_dir, want);
    cr_assert_eq(cfg->allow_eviction, false);
    cr_assert_str_eq(cfg->metrics_listen, "127.0.0.1:9464");
    cr_assert_eq(cfg->log_level, WHARF_LOG_INFO);
    cr_assert_eq(cfg->log_format, LOG_FORMAT_JSON);

    cr_assert_eq(d->max_attempts, 5);
    cr_assert_eq(d->backoff, BACKOFF_LINEAR);
    cr_assert_eq(d->backoff_base_ms, 1000);
    cr_assert_eq(d->backoff_max_ms, 600000);
    cr_assert_eq(d->jitter_pct, 10);
    cr_assert_eq(d->lock_ttl_ms, 60000);
    cr_assert_eq(d->lock_retry_ms, 500);
    cr_assert_eq(d->result_ttl_ms, 300000);
    cr_assert_eq(d->idempotency, IDEMPOTENCY_PAYLOAD);
    cr_assert_eq(d->idempotency_ttl_ms, 300000);
    cr_assert_eq(d->timeout_ms, 30000);
    cr_assert_eq(d->visibility_timeout_ms, 300000);
    cr_assert_eq(d->prefetch, 16);
    cr_assert_eq(d->max_payload, 1024 * 1024);
    cr_assert_eq(d->high_watermark, 10000);
    cr_assert_eq(d->low_watermark, 5000);
    cr_assert_eq(d->max_backlog, 0);
    cr_assert_eq(d->dead_max, 10000);
    cr_assert_eq(d->dead_ttl_ms, INT64_C(90) * 86400000);
    cr_assert_eq(d->concurrency, 0, "no cap");
    cr_assert_eq(cfg->n_plugins, 0);
    cr_assert_eq(cfg->n_types, 0);
    cr_assert_null(cfg->plugins);
    cr_assert_null(cfg->types);
    config_free(cfg);
}

Test(config, example_manifest_is_valid)
{
    char path[PATH_MAX * 2], text[8192];
    FILE *f = fopen(WHARF_SOURCE_DIR "/etc/wharf.ini", "r");
    size_t n;
    config *cfg;

    cr_assert_not_null(f, "cannot open etc/wharf.ini: %s", strerror(errno));
    n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    /* Same layout as the source tree: etc/ next to build/plugins/. */
    write_file("etc/wharf.ini", text);
    touch("build/plugins/echo.so");
    snprintf(path, sizeof path, "%s/etc/wharf.ini", dir);
    cfg = load_file(path);
    cr_assert_not_null(config_plugin(cfg, "echo"));
    config_free(cfg);
}

Test(config, type_section_after_defaults_overrides_too)
{
    config *cfg = load("[defaults]\n"
                       "max_attempts = 9\n"
                       "jitter = 0%\n"
                       "[type.slow]\n"
                       "max_attempts = 2\n"
                       "timeout = 10m\n");
    const policy *slow = config_policy(cfg, "slow");

    cr_assert_eq(slow->max_attempts, 2);
    cr_assert_eq(slow->timeout_ms, 600000);
    cr_assert_eq(slow->jitter_pct, 0);
    cr_assert_eq(cfg->defaults.max_attempts, 9);
    cr_assert_eq(cfg->defaults.timeout_ms, 30000);
    config_free(cfg);
}

Test(config, lenient_syntax)
{
    /* Indented keys are keys (not inih continuation lines), values may
     * carry inline comments, booleans and enums ignore case, ':' works. */
    config *cfg = load("\xef\xbb\xbf[host]\r\n"
                       "workers = 4\r\n"
                       "    autoload = No      ; indented\n"
                       "\twatch: TRUE\n"
                       "  [ log ]\n"
                       "  level = WARN\n"
                       "# a hash comment\n"
                       "[metrics]\n"
                       "listen = off\n");

    cr_assert_eq(cfg->workers, 4);
    cr_assert_eq(cfg->autoload, false);
    cr_assert_eq(cfg->watch, true);
    cr_assert_eq(cfg->log_level, WHARF_LOG_WARN);
    cr_assert_null(cfg->metrics_listen);
    config_free(cfg);
}

Test(config, long_names_are_not_cut)
{
    /* inih keeps only 49 bytes of a section name; ours are up to 100. */
    char name[101], text[512];
    config *cfg;

    memset(name, 'x', 100);
    name[100] = '\0';
    snprintf(text, sizeof text, "[type.%s]\nprefetch = 3\n", name);
    cfg = load(text);
    cr_assert_eq(cfg->n_types, 1);
    cr_assert_str_eq(cfg->types[0].name, name);
    cr_assert_eq(config_policy(cfg, name)->prefetch, 3);
    config_free(cfg);

    snprintf(text, sizeof text, "[host]\n[type.%sy]\n", name);
    fails_at(text, 2, "bad type name");
}

Test(config, listen_and_url_forms)
{
    static const char *const urls[] = {"redis://localhost",
                                       "redis://127.0.0.1:6379",
                                       "redis://h/0",
                                       "redis://h:1/15",
                                       "redis://:pw@h",
                                       "redis://u:pw@h:6379/3",
                                       "redis://secret@h",
                                       "redis://[::1]:6379/1",
                                       "redis://h/",
                                       "unix:///run/redis.sock",
                                       "unix:///run/redis.sock?db=2",
                                       "embedded",
                                       NULL};
    static const char *const listens[] = {"127.0.0.1:9464", "localhost:1",
                                          "[::1]:65535", "0.0.0.0:80", NULL};
    char text[512];
    config *cfg;

    for (size_t i = 0; urls[i] != NULL; i++) {
        snprintf(text, sizeof text, "[redis]\nurl = %s\n", urls[i]);
        cfg = load(text);
        cr_assert_str_eq(cfg->redis_url, urls[i]);
        config_free(cfg);
    }
    for (size_t i = 0; listens[i] != NULL; i++) {
        snprintf(text, sizeof text, "[metrics]\nlisten = %s\n", listens[i]);
        cfg = load(text);
        cr_assert_str_eq(cfg->metrics_listen, listens[i]);
        config_free(cfg);
    }
}

Test(config, relative_paths)
{
    char want[PATH_MAX * 2], cwd[PATH_MAX];
    config *cfg;

    /* A relative manifest path, plugins_dir climbing out of its folder,
     * an absolute data_dir and an absolute plugin path. */
    touch("lib/a.so");
    touch("elsewhere/b.so");
    snprintf(want, sizeof want,
             "[host]\nplugins_dir = ../lib/\n[redis]\ndata_dir = /var/x//y/.\n"
             "[plugin.a]\n[plugin.b]\npath = %s/elsewhere/./b.so\n",
             dir);
    write_file("conf/wharf.ini", want);
    cr_assert_not_null(getcwd(cwd, sizeof cwd));
    cr_assert_eq(chdir(dir), 0);
    cfg = load_file("conf/wharf.ini");

    cr_assert_str_eq(cfg->file, "conf/wharf.ini");
    snprintf(want, sizeof want, "%s/conf", dir);
    cr_assert_str_eq(cfg->dir, want);
    snprintf(want, sizeof want, "%s/conf/../lib", dir);
    cr_assert_str_eq(cfg->plugins_dir, want);
    cr_assert_str_eq(cfg->data_dir, "/var/x/y");
    snprintf(want, sizeof want, "%s/conf/../lib/a.so", dir);
    cr_assert_str_eq(config_plugin(cfg, "a")->path, want);
    snprintf(want, sizeof want, "%s/elsewhere/b.so", dir);
    cr_assert_str_eq(config_plugin(cfg, "b")->path, want);
    config_free(cfg);
    cr_assert_eq(chdir(cwd), 0);
}

Test(config, errors_name_the_file_as_given)
{
    char err[CONFIG_ERR_LEN];
    config *cfg = NULL;

    write_file("wharf.ini", "[host]\n\nwokers = 2\n");
    cr_assert_eq(chdir(dir), 0);
    cr_assert_eq(config_load("./wharf.ini", &cfg, err, sizeof err), -1);
    cr_assert_null(cfg);
    cr_assert_str_eq(err, "./wharf.ini:3: unknown key 'wokers' in [host] "
                          "(did you mean 'workers'?)");
}

Test(config, environment_overrides)
{
    config *cfg;

    setenv("WHARF_REDIS_URL", "redis://other:7000/4", 1);
    setenv("WHARF_REDIS_PASSWORD", "s3cret", 1);
    cfg = load("[redis]\nurl = redis://127.0.0.1:6379/0\n");
    cr_assert_str_eq(cfg->redis_url, "redis://other:7000/4");
    cr_assert_str_eq(cfg->redis_password, "s3cret");
    config_free(cfg);
}

Test(config, bad_environment_url)
{
    char err[CONFIG_ERR_LEN];
    config *cfg = NULL;

    setenv("WHARF_REDIS_URL", "http://x", 1);
    write_file("wharf.ini", "");
    cr_assert_eq(config_load(manifest, &cfg, err, sizeof err), -1);
    cr_assert_null(cfg);
    cr_assert_not_null(strstr(err, "WHARF_REDIS_URL: bad value 'http://x'"),
                       "%s", err);
}

Test(config, missing_file)
{
    char err[CONFIG_ERR_LEN], want[PATH_MAX + 64];
    config *cfg = NULL;

    snprintf(want, sizeof want, "%s/nope.ini", dir);
    cr_assert_eq(config_load(want, &cfg, err, sizeof err), -1);
    cr_assert_null(cfg);
    snprintf(want, sizeof want,
             "%s/nope.ini: cannot open: No such file or directory", dir);
    cr_assert_str_eq(err, want);

    /* A folder, a device or a pipe is no manifest: refused at once (a
     * read of /dev/zero would never end). */
    cr_assert_eq(config_load(dir, &cfg, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: not a regular file (a directory)", dir);
    cr_assert_str_eq(err, want);
    cr_assert_eq(config_load("/dev/zero", &cfg, err, sizeof err), -1);
    cr_assert_str_eq(err, "/dev/zero: not a regular file (a character "
                          "device)");
    cr_assert_null(cfg);
}

/* Over 1 MiB is no manifest either (docs/manifest.md states the bound);
 * 1 MiB itself is read. */
Test(config, a_manifest_over_1_MiB_is_refused)
{
    char err[CONFIG_ERR_LEN], want[PATH_MAX + 64];
    size_t size = 1024 * 1024;
    char *text = malloc(size + 2);
    config *cfg = NULL;

    cr_assert_not_null(text);
    memset(text, ';', size);
    text[size - 1] = '\n';
    for (size_t i = 100; i < size; i += 100)
        text[i] = '\n'; /* comment lines of 99 bytes */
    text[size] = '\0';
    write_file("wharf.ini", text);
    cr_assert_eq(config_load(manifest, &cfg, err, sizeof err), 0, "%s", err);
    config_free(cfg);
    cfg = NULL;
    text[size] = '\n';
    text[size + 1] = '\0';
    write_file("wharf.ini", text);
    cr_assert_eq(config_load(manifest, &cfg, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: larger than 1 MiB: not a manifest",
             manifest);
    cr_assert_str_eq(err, want);
    cr_assert_null(cfg);
    free(text);
}

/* The manifest's path is shown as quote_text shows what a user typed:
 * no control character of it reaches the terminal. */
Test(config, a_path_with_control_characters_is_quoted)
{
    char err[CONFIG_ERR_LEN], path[PATH_MAX + 16], want[PATH_MAX + 64];
    config *cfg = NULL;

    snprintf(path, sizeof path, "%s/a\033[2J.ini", dir);
    cr_assert_eq(config_load(path, &cfg, err, sizeof err), -1);
    snprintf(want, sizeof want,
             "%s/a?[2J.ini: cannot open: No such file or directory", dir);
    cr_assert_str_eq(err, want);
}

/* ---- one error each, at its line ---- */

Test(config, unknown_section)
{
    cr_assert_str_eq(fails_at("[host]\nworkers = 2\n[hots]\n", 3, ""),
                     "unknown section [hots] (did you mean [host]?)");
    fails_at("[host]\n[plugin]\n", 2,
             "unknown section [plugin] "
             "(expected [plugin.NAME])");
    fails_at("[plugins.echo]\n", 1, "did you mean [plugin.echo]?");
    fails_at("[logging]\nlevel = info\n", 1, "unknown section [logging]");
}

Test(config, unknown_key)
{
    cr_assert_str_eq(fails_at("[host]\nworkers = 2\nwokers = 2\n", 3, ""),
                     "unknown key 'wokers' in [host] "
                     "(did you mean 'workers'?)");
    fails_at("[type.echo]\nretries = 3\n", 2,
             "unknown key 'retries' in [type.echo]");
    fails_at("[host]\nmax_attempts = 3\n", 2,
             "(it belongs in [defaults] or [type.NAME])");
    fails_at("[redis]\nlisten = 1.2.3.4:5\n", 2, "(it belongs in [metrics])");
    fails_at("workers = 2\n", 1, "key 'workers' comes before any [section]");
    fails_at("[host]\n = 2\n", 2, "missing key name");
}

/* The fixed sections' keys share one table: each key is taken in its own
 * section only, "did you mean" looks in the section it is in, and "it
 * belongs in" names the one that has it. */
Test(config, each_key_only_in_its_section)
{
    static const struct {
        const char *text, *said;
    } cases[] = {
        {"[log]\nstrict = yes\n",
         "unknown key 'strict' in [log] (it belongs in [producer])"},
        {"[redis]\nstrict = yes\n",
         "unknown key 'strict' in [redis] (it belongs in [producer])"},
        {"[metrics]\ntoken = abcdefghijklmnopqrstu\n",
         "unknown key 'token' in [metrics] (it belongs in [console])"},
        {"[console]\nlevel = info\n",
         "unknown key 'level' in [console] (it belongs in [log])"},
        {"[producer]\nurl = embedded\n",
         "unknown key 'url' in [producer] (it belongs in [redis])"},
        {"[defaults]\nworkers = 2\n",
         "unknown key 'workers' in [defaults] (it belongs in [host])"},
        {"[type.echo]\nlisten = off\n",
         "unknown key 'listen' in [type.echo] (it belongs in [metrics])"},
        {"[host]\ntimeout = 1s\n", "unknown key 'timeout' in [host] "
                                   "(it belongs in [defaults] or [type.NAME])"},
        {"[log]\nformt = text\n",
         "unknown key 'formt' in [log] (did you mean 'format'?)"},
        {"[console]\ntokn = x\n",
         "unknown key 'tokn' in [console] (did you mean 'token'?)"},
        {"[metrics]\nlisen = off\n",
         "unknown key 'lisen' in [metrics] (did you mean 'listen'?)"},
        {"[defaults]\nprefech = 1\n",
         "unknown key 'prefech' in [defaults] (did you mean 'prefetch'?)"},
        /* Keys of a like meaning in another section: where each belongs
         * and how they differ. */
        {"[type.echo]\nthreads = 4\n",
         "unknown key 'threads' in [type.echo] (it belongs in [host] or "
         "[plugin.NAME]; a type's cap in one worker is concurrency)"},
        {"[defaults]\nthreads = 4\n",
         "unknown key 'threads' in [defaults] (it belongs in [host] or "
         "[plugin.NAME]; a type's cap in one worker is concurrency)"},
        {"[host]\nconcurrency = 4\n",
         "unknown key 'concurrency' in [host] (it belongs in [defaults] or "
         "[type.NAME]: the most tasks of a type at once in one worker, where "
         "concurrency_limit caps them across every host; a worker's threads "
         "are [host] threads)"},
        {"[defaults]\nconcurency = 4\n",
         "unknown key 'concurency' in [defaults] (did you mean "
         "'concurrency'?)"},
        {"[host]\nthread = 4\n",
         "unknown key 'thread' in [host] (did you mean 'threads'?)"},
    };

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_assert_str_eq(fails_at(cases[i].text, 2, ""), cases[i].said);
}

Test(config, bad_duration)
{
    cr_assert_str_eq(fails_at("[defaults]\ntimeout = 30\n", 2, ""),
                     "bad value '30' for timeout: a duration needs a unit: "
                     "ms, s, m, h or d (e.g. 30s)");
    fails_at("[host]\nshutdown_timeout = 1.5s\n", 2,
             "bad value '1.5s' for shutdown_timeout");
    fails_at("[defaults]\nlock_ttl = 10 s\n", 2, "bad value '10 s'");
    fails_at("[defaults]\nlock_ttl = 1w\n", 2, "bad value '1w' for lock_ttl");
    fails_at("[defaults]\nlock_ttl = -1s\n", 2, "bad value '-1s'");
    fails_at("[defaults]\nlock_ttl =\n", 2, "lock_ttl has no value");
}

Test(config, bad_size)
{
    cr_assert_str_eq(fails_at("[defaults]\nmax_payload = 1MB\n", 2, ""),
                     "bad value '1MB' for max_payload: expected a whole "
                     "number of B, KiB, MiB or GiB (e.g. 1MiB)");
    fails_at("[defaults]\nmax_payload = 1GiB\n", 2,
             "max_payload = 1GiB is out of range 1B..512MiB");
    fails_at("[defaults]\nmax_payload = 0\n", 2, "out of range 1B..512MiB");
}

Test(config, bad_ratio)
{
    fails_at("[defaults]\njitter = 10\n", 2,
             "bad value '10' for jitter: a ratio needs a '%'");
    fails_at("[defaults]\njitter = ten%\n", 2, "bad value 'ten%' for jitter");
    fails_at("[defaults]\njitter = 101%\n", 2,
             "jitter = 101% is out of range 0%..100%");
}

Test(config, bad_bool)
{
    fails_at("[host]\nautoload = maybe\n", 2,
             "bad value 'maybe' for autoload: expected yes, no");
    fails_at("[redis]\nallow_eviction = 2\n", 2, "for allow_eviction");
}

Test(config, bad_enum)
{
    cr_assert_str_eq(fails_at("[defaults]\nbackoff = fast\n", 2, ""),
                     "bad value 'fast' for backoff: expected linear or "
                     "exponential");
    fails_at("[type.x]\nidempotency = always\n", 2, "expected payload or none");
    fails_at("[log]\nlevel = verbose\n", 2,
             "bad value 'verbose' for level: expected debug, info, warn or "
             "error");
    fails_at("[log]\nformat = xml\n", 2, "expected json or text");
}

Test(config, out_of_range)
{
    cr_assert_str_eq(fails_at("[host]\nworkers = 0\n", 2, ""),
                     "workers = 0 is out of range 1..1024");
    fails_at("[host]\nworkers = 1025\n", 2, "1025 is out of range 1..1024");
    fails_at("[defaults]\nmax_attempts = 0\n", 2, "out of range 1..1000");
    fails_at("[defaults]\nprefetch = 10001\n", 2, "out of range 1..10000");
    fails_at("[defaults]\nlock_ttl = 0ms\n", 2,
             "lock_ttl = 0ms is out of range 1s..30d: below 1s a lease "
             "cannot be renewed in time");
    fails_at("[host]\nshutdown_timeout = 25h\n", 2, "out of range 0s..1d");
    fails_at("[host]\nworkers = -1\n", 2,
             "bad value '-1' for workers: expected a whole number");
}

/* [host] order and a type's priority: their defaults (weighted, 1, so a
 * manifest without them claims as before), their values, and bad ones
 * refused at their own lines. */
Test(config, order_and_priority)
{
    config *cfg;

    cfg = load("");
    cr_assert_eq(cfg->order, ORDER_WEIGHTED);
    cr_assert_eq(cfg->defaults.priority, 1);
    config_free(cfg);

    cfg = load("[host]\norder = strict\n"
               "[defaults]\npriority = 2\n"
               "[type.urgent]\npriority = 1000\n"
               "[type.bulk]\nprefetch = 8\n");
    cr_assert_eq(cfg->order, ORDER_STRICT);
    cr_assert_eq(config_policy(cfg, "urgent")->priority, 1000);
    cr_assert_eq(config_policy(cfg, "bulk")->priority, 2,
                 "inherited from [defaults]");
    cr_assert_eq(config_policy(cfg, "other")->priority, 2);
    config_free(cfg);
    cfg = load("[host]\norder = Weighted\n");
    cr_assert_eq(cfg->order, ORDER_WEIGHTED);
    config_free(cfg);

    cr_assert_str_eq(fails_at("[host]\norder = fifo\n", 2, ""),
                     "bad value 'fifo' for order: expected weighted or "
                     "strict");
    cr_assert_str_eq(fails_at("[type.t]\npriority = 0\n", 2, ""),
                     "priority = 0 is out of range 1..1000");
    cr_assert_str_eq(
        fails_at("[defaults]\nprefetch = 2\npriority = 1001\n", 3, ""),
        "priority = 1001 is out of range 1..1000");
    cr_assert_str_eq(fails_at("[type.t]\npriority = high\n", 2, ""),
                     "bad value 'high' for priority: expected a whole "
                     "number");
    cr_assert_str_eq(fails_at("[type.t]\npriority = -1\n", 2, ""),
                     "bad value '-1' for priority: expected a whole number");
    cr_assert_str_eq(fails_at("[host]\npriority = 2\n", 2, ""),
                     "unknown key 'priority' in [host] (it belongs in "
                     "[defaults] or [type.NAME])");
    cr_assert_str_eq(fails_at("[type.t]\norder = strict\n", 2, ""),
                     "unknown key 'order' in [type.t] (it belongs in "
                     "[host])");
    cr_assert_str_eq(fails_at("[type.t]\npriorty = 2\n", 2, ""),
                     "unknown key 'priorty' in [type.t] (did you mean "
                     "'priority'?)");
}

/* [host] threads, [plugin.NAME] threads and a type's concurrency: their
 * ranges, and bad values at their own lines. Whether a plugin may have
 * more than one thread is the loader's to say (test_loader.c). */
Test(config, threads_and_concurrency_ranges)
{
    config *cfg;
    const plugin_section *ps;

    touch("plugins/a.so");
    cfg = load("[host]\nthreads = 1024\n"
               "[plugin.a]\nthreads = 1\n"
               "[defaults]\nconcurrency = 100000\n"
               "[type.t]\nconcurrency = 0\n");
    cr_assert_eq(cfg->threads, 1024);
    ps = config_plugin(cfg, "a");
    cr_assert_eq(ps->threads, 1);
    cr_assert_eq(ps->threads_line, 4);
    cr_assert_eq(ps->n_extra, 0, "threads is not one of the plugin's keys");
    cr_assert_eq(cfg->defaults.concurrency, 100000);
    cr_assert_eq(config_policy(cfg, "t")->concurrency, 0, "0 lifts the cap");
    config_free(cfg);

    cr_assert_str_eq(fails_at("[host]\nthreads = 0\n", 2, ""),
                     "threads = 0 is out of range 1..1024");
    cr_assert_str_eq(fails_at("[host]\nthreads = 1025\n", 2, ""),
                     "threads = 1025 is out of range 1..1024");
    cr_assert_str_eq(fails_at("[host]\nthreads = many\n", 2, ""),
                     "bad value 'many' for threads: expected a whole number");
    cr_assert_str_eq(fails_at("[plugin.a]\npath = a.so\nthreads = 0\n", 3, ""),
                     "threads = 0 is out of range 1..1024");
    cr_assert_str_eq(fails_at("[plugin.a]\nthreads = 2000\n", 2, ""),
                     "threads = 2000 is out of range 1..1024");
    cr_assert_str_eq(fails_at("[plugin.a]\nthreads = -1\n", 2, ""),
                     "bad value '-1' for threads: expected a whole number");
    cr_assert_str_eq(fails_at("[plugin.a]\nthreads =\n", 2, ""),
                     "threads has no value");
    cr_assert_str_eq(fails_at("[plugin.a]\nthreads = 2\nthreads = 3\n", 3, ""),
                     "duplicate key 'threads' in [plugin.a] (first at line 2)");
    cr_assert_str_eq(fails_at("[defaults]\nconcurrency = 100001\n", 2, ""),
                     "concurrency = 100001 is out of range 0..100000");
    cr_assert_str_eq(fails_at("[type.t]\nconcurrency = 1.5\n", 2, ""),
                     "bad value '1.5' for concurrency: expected a whole "
                     "number");
    fails_at("[host]\nthreads = 99999999999999999999999\n", 2,
             "is out of range 1..1024");
}

Test(config, overflow)
{
    fails_at("[host]\nworkers = 99999999999999999999999\n", 2,
             "workers = 99999999999999999999999 is out of range 1..1024");
    fails_at("[defaults]\ndead_ttl = 9999999999999999d\n", 2,
             "out of range 1ms..3650d");
    fails_at("[defaults]\nmax_payload = 18446744073709551616\n", 2,
             "out of range");
    fails_at("[defaults]\nmax_backlog = 18446744073709551615\n", 2,
             "out of range 0..1000000000000");
}

Test(config, bad_url)
{
    fails_at("[redis]\nurl = http://localhost\n", 2,
             "bad value 'http://localhost' for url: expected redis://");
    fails_at("[redis]\nurl = redis://h:70000\n", 2, "bad port");
    fails_at("[redis]\nurl = redis://h:0/1\n", 2, "bad port");
    fails_at("[redis]\nurl = redis://\n", 2, "host");
    fails_at("[redis]\nurl = redis://h/x\n", 2, "bad database");
    fails_at("[redis]\nurl = unix://run/redis.sock\n", 2, "absolute path");
    fails_at("[redis]\nurl = redis://a b\n", 2, "for url");
}

/* A lease the supervisor cannot renew in time is refused, with why: a
 * healthy host would take over its own running task (1 s is the floor:
 * renewals every third of it, each allowed a Redis timeout and a retry). */
Test(config, leases_below_the_floor_are_refused)
{
    static const char *const keys[] = {"lock_ttl", "visibility_timeout"};
    static const char *const short_ones[] = {"1ms", "10ms", "30ms", "999ms"};
    char text[128], want[128];
    config *cfg;

    for (size_t k = 0; k < 2; k++) {
        for (size_t v = 0; v < 4; v++) {
            snprintf(text, sizeof text, "[defaults]\n%s = %s\n", keys[k],
                     short_ones[v]);
            snprintf(want, sizeof want,
                     "%s = %s is out of range 1s..30d: below 1s a lease "
                     "cannot be renewed in time",
                     keys[k], short_ones[v]);
            fails_at(text, 2, want);
            snprintf(text, sizeof text, "[type.x]\n%s = %s\n", keys[k],
                     short_ones[v]);
            fails_at(text, 2, want);
        }
        snprintf(text, sizeof text, "[defaults]\n%s = 1s\n", keys[k]);
        cfg = load(text);
        cr_assert_eq(k == 0 ? cfg->defaults.lock_ttl_ms
                            : cfg->defaults.visibility_timeout_ms,
                     1000);
        config_free(cfg);
    }
}

Test(config, bad_listen)
{
    /* Checked whole when read, so --check fails where the start would. */
    fails_at("[metrics]\nlisten = 256.0.0.1:9464\n", 2,
             "bad value '256.0.0.1:9464' for listen: expected host:port");
    fails_at("[metrics]\nlisten = 1.2.3:9464\n", 2, "for listen");
    fails_at("[metrics]\nlisten = [::1::2]:9464\n", 2, "for listen");
    fails_at("[metrics]\nlisten = a..b:9464\n", 2, "for listen");
    fails_at("[metrics]\nlisten = 127.0.0.1:65536\n", 2, "for listen");
    fails_at("[redis]\nurl = redis://256.0.0.1:6379\n", 2,
             "bad value 'redis://256.0.0.1:6379' for url");
    fails_at("[redis]\nurl = redis+cluster://10.0.0.1:7000,10.0.0.300:7001\n",
             2, "for url");
    fails_at("[metrics]\nlisten = 9464\n", 2,
             "bad value '9464' for listen: expected host:port "
             "(port 1..65535) or off");
    fails_at("[metrics]\nlisten = localhost:0\n", 2, "for listen");
    fails_at("[metrics]\nlisten = :9464\n", 2, "for listen");
    fails_at("[metrics]\nlisten = a:b:1\n", 2, "for listen");
}

Test(config, bad_names)
{
    char text[256];

    fails_at("[host]\ninstance = my host\n", 2,
             "bad value 'my host' for instance: expected 1-100 bytes of "
             "A-Z a-z 0-9 . _ -");
    fails_at("[redis]\nprefix = wharf:x\n", 2,
             "bad value 'wharf:x' for prefix");
    memset(text, 0, sizeof text);
    strcpy(text, "[host]\ninstance = ");
    memset(text + strlen(text), 'i', 101);
    strcat(text, "\n");
    fails_at(text, 2, "for instance");
    fails_at("[plugin.a/b]\n", 1, "bad plugin name 'a/b' in [plugin.a/b]");
    fails_at("[type.]\n", 1, "bad type name '' in [type.]");
    fails_at("[plugin.a]\ntypes = echo, bad/name\n", 2,
             "bad type name 'bad/name' in types");
    fails_at("[plugin.a]\ntypes = echo,echo\n", 2,
             "type 'echo' is listed twice");
    fails_at("[plugin.a]\ntypes = , ,\n", 2, "types lists no type name");
}

Test(config, watermarks)
{
    cr_assert_str_eq(
        fails_at("[defaults]\nhigh_watermark = 100\nlow_watermark = 200\n", 3,
                 ""),
        "low_watermark 200 is above high_watermark 100 in [defaults]");
    fails_at("[defaults]\nlow_watermark = 20000\n", 2,
             "low_watermark 20000 is above high_watermark 10000 in "
             "[defaults] (the other one is the built-in default)");
    /* The type's own high mark is below the [defaults] low mark that
     * comes later in the file; [type.x] is wrong too, but later. */
    fails_at("[type.echo]\nhigh_watermark = 100\n[defaults]\n"
             "low_watermark = 500\n[type.x]\nlow_watermark = 20000\n",
             2, "low_watermark 500 is above high_watermark 100 in [type.echo]");
}

Test(config, watermarks_type_inherits)
{
    fails_at("[type.echo]\nhigh_watermark = 100\n", 2,
             "low_watermark 5000 is above high_watermark 100 in [type.echo] "
             "(the other one is from [defaults])");
}

Test(config, type_served_twice)
{
    touch("plugins/a.so");
    touch("plugins/b.so");
    cr_assert_str_eq(fails_at("[plugin.a]\n"
                              "path = a.so\n"
                              "types = echo\n"
                              "[plugin.b]\n"
                              "types = x, echo\n",
                              5, ""),
                     "type 'echo' is served by both plugin 'a' (line 3) and "
                     "plugin 'b'");
}

Test(config, missing_plugin_file)
{
    char want[PATH_MAX * 2];

    touch("plugins/there.so");
    snprintf(want, sizeof want,
             "plugin file '%s/plugins/gone.so' of [plugin.x] does not exist",
             dir);
    cr_assert_str_eq(fails_at("[plugin.ok]\npath = there.so\n"
                              "[plugin.x]\nmode = 1\npath = gone.so\n",
                              5, ""),
                     want);
    /* Without `path`: NAME.so, reported at the section header. */
    fails_at("[host]\nworkers = 3\n[plugin.echo]\nmode = 1\n", 3,
             "/plugins/echo.so' of [plugin.echo] does not exist");
    fails_at("[plugin.dir]\npath = .\n", 2, "is a directory");
}

Test(config, duplicates)
{
    cr_assert_str_eq(fails_at("[host]\nworkers = 2\n\nworkers = 3\n", 4, ""),
                     "duplicate key 'workers' in [host] (first at line 2)");
    fails_at("[plugin.a]\nmode = x\nmode = y\n", 3,
             "duplicate key 'mode' in [plugin.a] (first at line 2)");
    fails_at("[host]\n[redis]\n[host]\n", 3,
             "duplicate section [host] (first at line 1)");
    fails_at("[type.a]\n[type.b]\n[type.a]\n", 3,
             "duplicate section [type.a] (first at line 1)");
    /* Repeating a key under the same name in another section is fine. */
    touch("plugins/a.so");
    touch("plugins/b.so");
    config_free(load("[plugin.a]\nmode = 1\n[plugin.b]\nmode = 2\n"));
}

Test(config, syntax_errors)
{
    cr_assert_str_eq(fails_at("[host]\nworkers = 2\nworkers\n", 3, ""),
                     "expected 'key = value' or '[section]'");
    fails_at("[host\nworkers = 2\n", 1, "missing ']'");
    fails_at("[host ; comment]\n", 1, "missing ']'");
    fails_at("[host] workers = 2\n", 1,
             "unexpected text 'workers = 2' after "
             "[host]");
    fails_at("[host]\nautoload ; = yes\n", 2, "expected 'key = value'");
}

/* A line of exactly `len` bytes (without its newline): `key = vvv...`. */
static void long_line(char *buf, size_t len)
{
    strcpy(buf, "note = ");
    memset(buf + 7, 'v', len - 7);
    buf[len] = '\0';
}

Test(config, over_long_line)
{
    char line[300], text[512];
    config *cfg;

    touch("plugins/p.so");
    /* 198 bytes is the most inih holds: accepted, value intact, with LF,
     * CRLF or no newline at the end of the file. */
    long_line(line, 198);
    snprintf(text, sizeof text, "[plugin.p]\n%s\n[host]\n", line);
    cfg = load(text);
    cr_assert_eq(strlen(config_plugin_value(config_plugin(cfg, "p"), "note")),
                 198 - 7);
    config_free(cfg);
    snprintf(text, sizeof text, "[plugin.p]\r\n%s\r\n", line);
    cfg = load(text);
    cr_assert_eq(strlen(config_plugin_value(config_plugin(cfg, "p"), "note")),
                 198 - 7);
    config_free(cfg);
    snprintf(text, sizeof text, "[plugin.p]\n%s", line);
    config_free(load(text));

    /* 199 bytes: an error at its own line, not the next one. */
    long_line(line, 199);
    snprintf(text, sizeof text, "[plugin.p]\n\n%s\nbad line\n", line);
    cr_assert_str_eq(fails_at(text, 3, ""), "line is longer than 198 bytes");
    snprintf(text, sizeof text, "[plugin.p]\n%s", line);
    fails_at(text, 2, "line is longer than 198 bytes");
    /* A comment counts too: inih would read its tail as a key line. */
    memset(line, ';', 250);
    line[250] = '\0';
    snprintf(text, sizeof text, "[host]\n%s\nworkers = 2\n", line);
    fails_at(text, 2, "line is longer than 198 bytes");
}

Test(config, first_error_in_file_order)
{
    /* Two line errors: the parse stops at the first. */
    fails_at("[host]\nworkers = 0\n[bogus]\n", 2, "workers = 0");
    /* A missing plugin file (found after the whole file is read) comes
     * before a later bad value... */
    fails_at("[plugin.gone]\n[defaults]\nlow_watermark = 20000\n", 1,
             "does not exist");
    /* ...and after an earlier one, even one found only at the end. */
    fails_at("[defaults]\nlow_watermark = 20000\n[plugin.gone]\n", 2,
             "low_watermark 20000");
    /* A syntax error is reported before a later bad value. */
    fails_at("[host]\noops\nworkers = 0\n", 2, "expected 'key = value'");
}

Test(config, nul_byte)
{
    char err[CONFIG_ERR_LEN];
    config *cfg = NULL;
    FILE *f = fopen(manifest, "w");

    cr_assert_not_null(f);
    fwrite("[host]\nworkers = 2\0\n", 1, 20, f);
    fclose(f);
    cr_assert_eq(config_load(manifest, &cfg, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, ":2: line contains a NUL byte"), "%s", err);
}

Test(config, free_accepts_null)
{
    config_free(NULL);
}

/* ---- value parsers ---- */

Test(config, parse_duration)
{
    static const struct {
        const char *text;
        int64_t ms;
    } good[] = {
        {"500ms", 500},
        {"30s", 30000},
        {"10m", 600000},
        {"1h", 3600000},
        {"90d", INT64_C(90) * 86400000},
        {"0s", 0},
        {"0ms", 0},
        {"9223372036854775807ms", INT64_MAX},
        {"106751991167d", INT64_C(106751991167) * 86400000},
    };
    static const char *const bad[] = {"30",
                                      "0",
                                      "",
                                      "s",
                                      "1.5s",
                                      "-1s",
                                      "+1s",
                                      "30 s",
                                      " 30s",
                                      "30s ",
                                      "30S",
                                      "1w",
                                      "1h30m",
                                      "9223372036854775808ms",
                                      "106751991168d",
                                      "99999999999999999999999s",
                                      NULL};
    int64_t ms;

    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        ms = -1;
        cr_assert_eq(config_parse_duration(good[i].text, &ms), 0, "%s",
                     good[i].text);
        cr_assert_eq(ms, good[i].ms, "%s", good[i].text);
    }
    for (size_t i = 0; bad[i] != NULL; i++) {
        ms = 42;
        cr_assert_eq(config_parse_duration(bad[i], &ms), -1, "'%s'", bad[i]);
        cr_assert_eq(ms, 42, "out written on failure for '%s'", bad[i]);
    }
    cr_assert_eq(config_parse_duration(NULL, &ms), -1);
}

Test(config, parse_size)
{
    static const struct {
        const char *text;
        uint64_t bytes;
    } good[] = {
        {"0", 0},
        {"512", 512},
        {"10B", 10},
        {"4KiB", 4096},
        {"1MiB", 1048576},
        {"2GiB", UINT64_C(2147483648)},
        {"18446744073709551615", UINT64_MAX},
    };
    static const char *const bad[] = {"",
                                      "1MB",
                                      "1 MiB",
                                      "KiB",
                                      "1kib",
                                      "1.5MiB",
                                      "-1",
                                      "1K",
                                      "18446744073709551616",
                                      "17179869184GiB",
                                      NULL};
    uint64_t bytes;

    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        bytes = 7;
        cr_assert_eq(config_parse_size(good[i].text, &bytes), 0, "%s",
                     good[i].text);
        cr_assert_eq(bytes, good[i].bytes, "%s", good[i].text);
    }
    for (size_t i = 0; bad[i] != NULL; i++) {
        bytes = 7;
        cr_assert_eq(config_parse_size(bad[i], &bytes), -1, "'%s'", bad[i]);
        cr_assert_eq(bytes, 7, "out written on failure for '%s'", bad[i]);
    }
}

Test(config, valid_type_name)
{
    char name[102];

    cr_assert(config_valid_type_name("echo"));
    cr_assert(config_valid_type_name("a.b_c-D9"));
    cr_assert(config_valid_type_name("x"));
    memset(name, 'n', 100);
    name[100] = '\0';
    cr_assert(config_valid_type_name(name));
    name[100] = 'n';
    name[101] = '\0';
    cr_assert_not(config_valid_type_name(name));
    cr_assert_not(config_valid_type_name(""));
    cr_assert_not(config_valid_type_name(NULL));
    cr_assert_not(config_valid_type_name("a b"));
    cr_assert_not(config_valid_type_name("a:b"));
    cr_assert_not(config_valid_type_name("{x}"));
    cr_assert_not(config_valid_type_name("a/b"));
    cr_assert_not(config_valid_type_name("caf\xc3\xa9"));
}

Test(config, valid_task_id)
{
    char id[202];

    cr_assert(config_valid_task_id("abc", 3));
    cr_assert(config_valid_task_id("!~{}:/", 6));
    for (int i = 0; i < 200; i++)
        id[i] = (char)(0x21 + i % (0x7e - 0x21 + 1));
    cr_assert(config_valid_task_id(id, 200));
    cr_assert_not(config_valid_task_id(id, 201));
    cr_assert_not(config_valid_task_id(id, 0));
    cr_assert_not(config_valid_task_id(NULL, 3));
    cr_assert_not(config_valid_task_id("a b", 3));
    cr_assert_not(config_valid_task_id("a\tb", 3));
    cr_assert_not(config_valid_task_id("a\x7f", 2));
    cr_assert_not(config_valid_task_id("a\0b", 3));
    cr_assert_not(config_valid_task_id("caf\xc3\xa9", 5));
}

Test(config, producer_load_does_not_need_the_plugin_files)
{
    static const char text[] = "[redis]\nurl = redis://queue.example:6380/1\n"
                               "[plugin.far]\npath = far.so\n";
    char err[CONFIG_ERR_LEN] = "";
    config *cfg = NULL;

    fails_at(text, 4, "does not exist");
    cr_assert_eq(config_load_producer(manifest, &cfg, err, sizeof err), 0,
                 "config_load_producer: %s", err);
    cr_assert_str_eq(cfg->redis_url, "redis://queue.example:6380/1");
    config_free(cfg);
    /* Everything else is still checked. */
    write_file("wharf.ini", "[redis]\nurl = nope\n");
    cr_assert_eq(config_load_producer(manifest, &cfg, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "wharf.ini:2: bad value 'nope' for url"),
                       "%s", err);
}

/* wharf run without a manifest: every key at its default, no file (the
 * null device, once used for it, is no regular file). */
Test(config, defaults_need_no_file)
{
    char err[CONFIG_ERR_LEN];
    config *cfg = NULL;

    cr_assert_eq(config_load_defaults(&cfg, err, sizeof err), 0, "%s", err);
    cr_assert_null(cfg->file);
    cr_assert_eq(cfg->workers, 2);
    cr_assert_eq(cfg->defaults.lock_ttl_ms, 60000);
    cr_assert_eq(cfg->n_plugins, 0);
    config_free(cfg);
}

/* ---- [schedule.NAME] ---- */

Test(config, schedule_sections)
{
    config *cfg = load("[schedule.nightly-report]\n"
                       "type = report\n"
                       "cron = 0 3 * * *   ; at three\n"
                       "timezone = Europe/Berlin\n"
                       "payload = {\"kind\":\"nightly\",\"at\":\"{{tick}}\"}\n"
                       "catch_up = all\n"
                       "[schedule.beat]\n"
                       "type = ping\n"
                       "every = 30s\n");
    const schedule_section *s = config_schedule(cfg, "nightly-report");

    cr_assert_eq(cfg->n_schedules, 2);
    cr_assert_not_null(s);
    cr_assert_str_eq(s->type, "report");
    cr_assert_str_eq(s->cron, "0 3 * * *");
    cr_assert_eq(s->every_s, 0);
    cr_assert_str_eq(s->timezone, "Europe/Berlin");
    cr_assert_str_eq(s->payload, "{\"kind\":\"nightly\",\"at\":\"{{tick}}\"}");
    cr_assert_eq(s->catch_up, CATCH_UP_ALL);
    s = config_schedule(cfg, "beat");
    cr_assert_null(s->cron);
    cr_assert_eq(s->every_s, 30);
    cr_assert_str_eq(s->timezone, "UTC", "the default zone");
    cr_assert_str_eq(s->payload, "");
    cr_assert_eq(s->catch_up, CATCH_UP_LAST, "the default catch_up");
    cr_assert_null(config_schedule(cfg, "other"));
    config_free(cfg);
}

Test(config, schedule_errors)
{
    fails_at("[schedule.x]\ntype = t\ncron = 0 3 * *\n", 3,
             "bad cron '0 3 * *': expected five fields");
    fails_at("[schedule.x]\ntype = t\ncron = 0 25 * * *\n", 3,
             "hour field '25' is out of range 0-23");
    fails_at("[schedule.x]\ntype = t\ncron = @sometimes\n", 3,
             "unknown '@sometimes'");
    fails_at("[schedule.x]\ntype = t\ncron = 0 0 31 4 *\n", 3,
             "cron '0 0 31 4 *' never fires");
    fails_at("[schedule.x]\ntype = t\ncron = 0 3 * * *\n"
             "timezone = Europe/Atlantis\n",
             4, "bad timezone 'Europe/Atlantis': no zone 'Europe/Atlantis'");
    fails_at("[schedule.x]\ntype = t\ncron = 0 3 * * *\n"
             "timezone = ../../etc/passwd\n",
             4, "bad timezone");
    fails_at("[schedule.x]\ntype = t\ncron = 0 3 * * *\nevery = 1m\n", 4,
             "has both cron and every (line 3): give one");
    fails_at("[schedule.x]\ntype = t\nevery = 1500ms\n", 3,
             "expected whole seconds from 1s to 366d");
    fails_at("[schedule.x]\ntype = t\nevery = 10\n", 3,
             "a duration needs a unit");
    fails_at("[schedule.x]\ntype = t\nevery = 1s\ntimezone = UTC\n", 4,
             "timezone has no effect with every");
    fails_at("[schedule.x]\ntype = t\nevery = 1s\ncatch_up = some\n", 4,
             "bad value 'some' for catch_up: expected none, last or all");
    fails_at("[schedule.x]\ntype = t\nevery = 1s\ncolor = red\n", 4,
             "unknown key 'color' in [schedule.x] (expected type, cron");
    fails_at("[schedule.x]\ntype = bad type\nevery = 1s\n", 2,
             "bad type name 'bad type'");
    fails_at("\n[schedule.x]\nevery = 1s\n", 2, "[schedule.x] needs type");
    fails_at("[schedule.x]\ntype = t\n", 1, "[schedule.x] needs cron");
    fails_at("[schedule.x]\ntype = t\nevery = 1s\n[schedule.x]\n", 4,
             "duplicate section [schedule.x] (first at line 1)");
    fails_at("[schedule.a b]\n", 1, "bad schedule name 'a b'");
    fails_at("[schedule]\n", 1, "(expected [schedule.NAME])");
    fails_at("[schedul.x]\n", 1, "(did you mean [schedule.x]?)");
}

Test(config, at_most_256_schedules)
{
    static char text[256 * 64 + 64];
    size_t used = 0;

    for (int i = 0; i <= 256; i++)
        used += (size_t)snprintf(text + used, sizeof(text) - used,
                                 "[schedule.s%d]\ntype = t\nevery = 1s\n", i);
    fails_at(text, 256 * 3 + 1, "more than 256 [schedule.NAME] sections");
}
