/* The plugin loader: checks each plugin file's owner and mode, dlopens it,
 * checks its descriptor (abi first), and builds the sorted type -> plugin
 * route table that the worker looks tasks up in. */
#include "loader.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "context.h"
#include "log.h"
#include "quote.h"
#include "xmalloc.h"

#define LOADER_SYMBOL "wharf_plugin_v1"

/* Longest piece of plugin-supplied text (a name, a type) quoted in an
 * error message. */
#define LOADER_QUOTE_LEN 64

/* A failure's reason before the file and line are put in front of it,
 * and the reason of a check of a plugin file's owner and mode. */
#define LOADER_REASON_MAX 768
#define LOADER_OWNER_REASON_MAX 256

/* Writes "FILE:LINE: PATH: reason" into err ("FILE: PATH: reason" when the
 * line is unknown, "PATH: reason" when the config has no file name). */
static WHARF_PRINTF(6, 7) void loader_fail(char *err, size_t errlen,
                                           const config *cfg, int line,
                                           const char *path, const char *fmt,
                                           ...)
{
    char reason[LOADER_REASON_MAX];
    va_list ap;

    if (err == NULL || errlen == 0)
        return;
    va_start(ap, fmt);
    if (vsnprintf(reason, sizeof reason, fmt, ap) < 0)
        reason[0] = '\0';
    va_end(ap);
    if (cfg->file == NULL)
        snprintf(err, errlen, "%s: %s", path, reason);
    else if (line > 0)
        snprintf(err, errlen, "%s:%d: %s: %s", cfg->file, line, path, reason);
    else
        snprintf(err, errlen, "%s: %s: %s", cfg->file, path, reason);
}

/* Plugin-supplied text in buf as the one quoting rule shows it
 * (quote.h), for use inside a message's arguments. */
static const char *loader_quote(char *buf, size_t size, const char *text)
{
    quote_text(text, buf, size);
    return buf;
}

/* The manifest line a plugin's errors point at. */
static int loader_line(const config *cfg, const plugin_section *section)
{
    return section ? section->path_line : cfg->plugins_dir_line;
}

int loader_check_owner(const char *path, char *err, size_t errlen)
{
    struct stat st;
    uid_t euid = geteuid();

    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "not accessible: %s", strerror(errno));
        return -1;
    }
    /* A shared folder such as /tmp is fine with the sticky bit: others may
     * add files there but not rename or remove ours. */
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) &&
        !(S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX))) {
        snprintf(err, errlen, "writable by group or others%s (mode %04o)",
                 S_ISDIR(st.st_mode) ? " without the sticky bit" : "",
                 (unsigned)(st.st_mode & 07777));
        return -1;
    }
    if (st.st_uid != 0 && st.st_uid != euid) {
        snprintf(err, errlen, "owned by uid %lu, not root or %lu",
                 (unsigned long)st.st_uid, (unsigned long)euid);
        return -1;
    }
    return 0;
}

/* Checks the folder `dir` (a realpath) and every folder above it up to
 * `/`, as sshd's StrictModes does: whoever can write to any of them can
 * rename a folder of their own into the path. 0 if all are fine, else -1
 * with "folder F is why" in err. */
static int loader_check_folders(const char *dir, char *err, size_t errlen)
{
    char walk[PATH_MAX];
    char reason[LOADER_OWNER_REASON_MAX];
    char *slash;

    if (snprintf(walk, sizeof walk, "%s", dir) >= (int)sizeof walk) {
        snprintf(err, errlen, "folder path too long");
        return -1;
    }
    for (;;) {
        if (loader_check_owner(walk, reason, sizeof reason) != 0) {
            snprintf(err, errlen, "folder %s is %s", walk, reason);
            return -1;
        }
        slash = strrchr(walk, '/');
        if (slash == NULL || strcmp(walk, "/") == 0)
            return 0;
        if (slash == walk)
            slash[1] = '\0';
        else
            *slash = '\0';
    }
}

/* True if `folder` is `dir` or a folder above it (both realpaths), so
 * loader_check_folders(dir) has checked it already. */
static bool loader_folder_within(const char *dir, const char *folder)
{
    size_t n = strlen(folder);

    if (strcmp(folder, "/") == 0)
        return true;
    return strncmp(dir, folder, n) == 0 && (dir[n] == '/' || dir[n] == '\0');
}

/* Checks the file at `real` (a realpath), every folder above it, and every
 * folder above each folder of `path` as the manifest gave it (resolved in
 * turn), so that a link is as safe as what it points to and as the
 * folder holding it: whoever can write to any of them can swap the code
 * we are about to run. */
static int loader_check_files(const config *cfg, int line, const char *path,
                              const char *real, char *err, size_t errlen)
{
    char reason[PATH_MAX + 300];
    char dir[PATH_MAX];
    char given[PATH_MAX];
    char resolved[PATH_MAX];
    char *slash;
    int rc = -1;

    if (loader_check_owner(real, reason, sizeof reason) != 0) {
        loader_fail(err, errlen, cfg, line, path, "%s", reason);
        goto out;
    }
    snprintf(dir, sizeof dir, "%s", real);
    slash = strrchr(dir, '/');
    if (slash == dir)
        slash[1] = '\0';
    else if (slash != NULL)
        *slash = '\0';
    if (loader_check_folders(dir, reason, sizeof reason) != 0) {
        loader_fail(err, errlen, cfg, line, path, "%s", reason);
        goto out;
    }
    /* Each folder the given path names, from its own up: a link among
     * them lives in a folder of its own. */
    snprintf(given, sizeof given, "%s", path);
    while ((slash = strrchr(given, '/')) != NULL && slash != given) {
        *slash = '\0';
        if (realpath(given, resolved) == NULL) {
            loader_fail(err, errlen, cfg, line, path,
                        "folder %s is not accessible: %s", given,
                        strerror(errno));
            goto out;
        }
        if (!loader_folder_within(dir, resolved) &&
            loader_check_folders(resolved, reason, sizeof reason) != 0) {
            loader_fail(err, errlen, cfg, line, path, "%s", reason);
            goto out;
        }
    }
    rc = 0;
out:
    return rc;
}

/* Checks a descriptor whose abi matched; the types it would serve are
 * `types`. 0 if fine, else -1 with the reason in err. */
static int loader_check_desc(const config *cfg, int line, const char *path,
                             const plugin_section *section,
                             const wharf_plugin *desc, const char *const *types,
                             char *err, size_t errlen)
{
    char quoted[LOADER_QUOTE_LEN];
    size_t i;

    if (desc->process_business == NULL) {
        loader_fail(err, errlen, cfg, line, path,
                    "process_business is NULL: not a usable plugin");
        return -1;
    }
    if (desc->name == NULL || desc->name[0] == '\0') {
        loader_fail(err, errlen, cfg, line, path, "the descriptor has no name");
        return -1;
    }
    if (types == NULL || types[0] == NULL) {
        loader_fail(err, errlen, cfg, line, path,
                    section ? "serves no type: list them in `types` of "
                              "[plugin.%s] or in the descriptor's .types"
                            : "serves no type: an autoloaded plugin needs "
                              "the descriptor's .types%s",
                    section ? section->name : "");
        return -1;
    }
    for (i = 0; types[i] != NULL; i++) {
        if (!config_valid_type_name(types[i])) {
            loader_fail(err, errlen, cfg, line, path,
                        "invalid type name \"%s\" (1-100 bytes of "
                        "[A-Za-z0-9._-])",
                        loader_quote(quoted, sizeof quoted, types[i]));
            return -1;
        }
    }
    return 0;
}

/* How the host names a plugin: its manifest section ([plugin.NAME]), so
 * two sections that load one file are told apart; the descriptor's name
 * for an autoloaded plugin, which has no section. */
static const char *loader_plugin_label(const loaded_plugin *plugin)
{
    return plugin->section ? plugin->section->name : plugin->name;
}

/* Adds a route for `type` to `plugin`, refusing a type that an earlier
 * plugin (or this one) already serves. */
static int loader_add_route(loader *ld, loaded_plugin *plugin, const char *type,
                            size_t *cap, char *err, size_t errlen)
{
    const config *cfg = ld->cfg;
    int line = loader_line(cfg, plugin->section);
    char quoted[LOADER_QUOTE_LEN];
    char other_quoted[LOADER_QUOTE_LEN];
    size_t i;

    for (i = 0; i < ld->n_routes; i++) {
        const loaded_plugin *other = ld->routes[i].plugin;

        if (strcmp(ld->routes[i].type, type) != 0)
            continue;
        if (other == plugin)
            loader_fail(err, errlen, cfg, line, plugin->path,
                        "type \"%s\" is listed twice", type);
        else
            loader_fail(err, errlen, cfg, line, plugin->path,
                        "type \"%s\" of plugin \"%s\" is already served by "
                        "plugin \"%s\" (%s)",
                        type,
                        loader_quote(quoted, sizeof quoted,
                                     loader_plugin_label(plugin)),
                        loader_quote(other_quoted, sizeof other_quoted,
                                     loader_plugin_label(other)),
                        other->path);
        return -1;
    }
    if (ld->n_routes == *cap) {
        size_t grown_cap = *cap ? *cap * 2 : 8;
        ld->routes = xrealloc(ld->routes, grown_cap * sizeof *ld->routes);
        *cap = grown_cap;
    }
    ld->routes[ld->n_routes].type = xstrdup(type);
    ld->routes[ld->n_routes].plugin = plugin;
    ld->routes[ld->n_routes].policy = config_policy(cfg, type);
    ld->n_routes++;
    return 0;
}

/* The threads of a plugin of `section` (NULL: autoloaded) into *out: what
 * its section's `threads` says, else [host] threads for a plugin that
 * opted in, else 1. More than one for a plugin that has not opted in is
 * refused at the line of `threads`: its calls would race on its state. */
static int loader_plugin_threads(const config *cfg, const char *path,
                                 const plugin_section *section,
                                 bool thread_safe, unsigned *out, char *err,
                                 size_t errlen)
{
    if (section != NULL && section->threads > 1 && !thread_safe) {
        loader_fail(err, errlen, cfg, section->threads_line, path,
                    "[plugin.%s] threads = %u, but the plugin has not opted "
                    "in to threads (.thread_safe = 1 in its WHARF_PLUGIN); "
                    "set threads = 1 or leave it out",
                    section->name, section->threads);
        return -1;
    }
    if (section != NULL && section->threads > 0)
        *out = section->threads;
    else if (thread_safe && cfg->threads > 1)
        *out = cfg->threads;
    else
        *out = 1;
    return 0;
}

/* Opens the plugin at `path` (real path `real`) into the next free slot of
 * ld->plugins (the caller sized it) and adds its routes. */
static int loader_open_one(loader *ld, const char *path, const char *real,
                           const plugin_section *section, size_t *route_cap,
                           char *err, size_t errlen)
{
    const config *cfg = ld->cfg;
    int line = loader_line(cfg, section);
    loaded_plugin *plugin = &ld->plugins[ld->n_plugins];
    const wharf_plugin *desc;
    const char *const *types;
    const char *dl_reason;
    void *handle = NULL;
    void *symbol;
    bool thread_safe;
    unsigned threads;
    size_t i;
    int rc = -1;

    /* Before dlopen: dlopen already runs the file's constructors. */
    if (!cfg->insecure_plugins &&
        loader_check_files(cfg, line, path, real, err, errlen) != 0)
        goto out;

    dlerror();
    handle = dlopen(real, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        dl_reason = dlerror();
        if (dl_reason == NULL)
            dl_reason = "unknown dlopen error";
        /* glibc starts with the path, which the message already names. */
        if (strncmp(dl_reason, real, strlen(real)) == 0 &&
            strncmp(dl_reason + strlen(real), ": ", 2) == 0)
            dl_reason += strlen(real) + 2;
        loader_fail(err, errlen, cfg, line, path, "not loadable: %s",
                    dl_reason);
        goto out;
    }
    dlerror();
    symbol = dlsym(handle, LOADER_SYMBOL);
    if (symbol == NULL) {
        loader_fail(err, errlen, cfg, line, path,
                    "no " LOADER_SYMBOL " symbol: not a wharf plugin");
        goto out;
    }
    /* Only abi is read until it matches: the rest of the layout is the
     * ABI's to define. */
    desc = symbol;
    if (desc->abi < WHARF_PLUGIN_ABI_OLDEST || desc->abi > WHARF_PLUGIN_ABI) {
        loader_fail(err, errlen, cfg, line, path,
                    "ABI %lu, not one of %d to %d this host loads: built "
                    "against another <wharf/plugin.h>; rebuild it against "
                    "this wharf's SDK",
                    (unsigned long)desc->abi, WHARF_PLUGIN_ABI_OLDEST,
                    WHARF_PLUGIN_ABI);
        goto out;
    }
    types = section && section->types ? (const char *const *)section->types
                                      : desc->types;
    if (loader_check_desc(cfg, line, path, section, desc, types, err, errlen) !=
        0)
        goto out;

    /* Appended in ABI 3: an ABI 2 descriptor ends before it. */
    thread_safe = desc->abi >= 3 && desc->thread_safe != 0;
    if (loader_plugin_threads(cfg, path, section, thread_safe, &threads, err,
                              errlen) != 0)
        goto out;

    plugin->name = xstrdup(desc->name);
    plugin->path = xstrdup(real);
    plugin->section = section;
    plugin->handle = handle;
    plugin->desc = desc;
    plugin->state = NULL;
    plugin->initialized = false;
    plugin->thread_safe = thread_safe;
    plugin->threads = threads;
    snprintf(plugin->threads_text, sizeof(plugin->threads_text), "%u", threads);
    ld->n_plugins++;
    handle = NULL; /* the slot owns it now */
    for (i = 0; types[i] != NULL; i++)
        if (loader_add_route(ld, plugin, types[i], route_cap, err, errlen))
            goto out;
    rc = 0;
out:
    if (handle != NULL)
        dlclose(handle);
    return rc;
}

static int loader_compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void loader_free_names(char **names, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* Lists the *.so file names in plugins_dir, sorted so that the load order
 * (and so which of two clashing files is blamed) does not depend on the
 * file system. Hidden files are skipped, as the shell's *.so would. */
static int loader_scan(const config *cfg, char ***out, size_t *out_n, char *err,
                       size_t errlen)
{
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *entry;
    DIR *dir;
    int rc = -1;

    dir = opendir(cfg->plugins_dir);
    if (dir == NULL && errno == ENOENT && cfg->plugins_dir_line == 0) {
        /* The default folder, never asked for: nothing to autoload. A
         * plugins_dir the manifest names must exist. */
        *out = NULL;
        *out_n = 0;
        rc = 0;
        goto out;
    }
    if (dir == NULL) {
        loader_fail(err, errlen, cfg, cfg->plugins_dir_line, cfg->plugins_dir,
                    "cannot list plugins_dir for autoload: %s",
                    strerror(errno));
        goto out;
    }
    while ((entry = readdir(dir)) != NULL) {
        size_t len = strlen(entry->d_name);

        if (entry->d_name[0] == '.' || len <= 3 ||
            strcmp(entry->d_name + len - 3, ".so") != 0)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            names = xrealloc(names, cap * sizeof *names);
        }
        names[n++] = xstrdup(entry->d_name);
    }
    closedir(dir);
    if (n > 0)
        qsort(names, n, sizeof *names, loader_compare_names);
    *out = names;
    *out_n = n;
    names = NULL;
    n = 0;
    rc = 0;
out:
    loader_free_names(names, n);
    return rc;
}

/* True if a plugin already in ld was loaded from the file `real`. */
static bool loader_has_file(const loader *ld, const char *real)
{
    size_t i;

    for (i = 0; i < ld->n_plugins; i++)
        if (strcmp(ld->plugins[i].path, real) == 0)
            return true;
    return false;
}

static int loader_compare_routes(const void *a, const void *b)
{
    const route *left = a, *right = b;

    return strcmp(left->type, right->type);
}

static int loader_compare_key(const void *key, const void *element)
{
    const route *r = element;

    return strcmp(key, r->type);
}

int loader_open(const config *cfg, loader **out, char *err, size_t errlen)
{
    char **names = NULL;
    size_t n_names = 0;
    size_t route_cap = 0;
    char real[PATH_MAX];
    char path[PATH_MAX];
    loader *ld;
    size_t i;
    int rc = -1;

    ld = xcalloc(1, sizeof *ld);
    ld->cfg = cfg;
    if (cfg->autoload && loader_scan(cfg, &names, &n_names, err, errlen) != 0)
        goto out;
    /* Sized once, so routes can point into it. */
    ld->plugins = xcalloc(cfg->n_plugins + n_names, sizeof *ld->plugins);

    for (i = 0; i < cfg->n_plugins; i++) {
        const plugin_section *section = &cfg->plugins[i];

        if (realpath(section->path, real) == NULL) {
            loader_fail(err, errlen, cfg, section->path_line, section->path,
                        "not loadable: %s", strerror(errno));
            goto out;
        }
        if (loader_open_one(ld, section->path, real, section, &route_cap, err,
                            errlen) != 0)
            goto out;
    }
    for (i = 0; i < n_names; i++) {
        if (snprintf(path, sizeof path, "%s/%s", cfg->plugins_dir, names[i]) >=
            (int)sizeof path) {
            loader_fail(err, errlen, cfg, cfg->plugins_dir_line, names[i],
                        "path too long");
            goto out;
        }
        if (realpath(path, real) == NULL) {
            loader_fail(err, errlen, cfg, cfg->plugins_dir_line, path,
                        "not loadable: %s", strerror(errno));
            goto out;
        }
        /* Named by a section (or a second link to a file already loaded):
         * loading it again could only clash with itself. */
        if (loader_has_file(ld, real))
            continue;
        if (loader_open_one(ld, path, real, NULL, &route_cap, err, errlen))
            goto out;
    }
    if (ld->n_routes > 0)
        qsort(ld->routes, ld->n_routes, sizeof *ld->routes,
              loader_compare_routes);
    *out = ld;
    ld = NULL;
    rc = 0;
out:
    loader_free_names(names, n_names);
    loader_close(ld);
    return rc;
}

int loader_init(loader *ld, char *err, size_t errlen)
{
    const config *cfg = ld->cfg;
    context ctx;
    size_t i;
    int rc = -1;

    for (i = 0; i < ld->n_plugins; i++) {
        loaded_plugin *plugin = &ld->plugins[i];
        void *state = NULL;
        int status;

        if (plugin->initialized)
            continue;
        if (plugin->desc->init == NULL) {
            plugin->state = NULL;
            plugin->initialized = true;
            continue;
        }
        context_init(&ctx, plugin, 0);
        ctx.phase = ld->phase;
        status = plugin->desc->init(&ctx.base, &state);
        if (status != 0) {
            const char *path =
                plugin->section ? plugin->section->path : plugin->path;

            loader_fail(err, errlen, cfg, loader_line(cfg, plugin->section),
                        path, "init returned %d%s%s", status,
                        ctx.error[0] ? ": " : "", ctx.error);
            context_destroy(&ctx);
            loader_fini(ld);
            goto out;
        }
        context_destroy(&ctx);
        plugin->state = state;
        plugin->initialized = true;
    }
    rc = 0;
out:
    return rc;
}

void loader_fini(loader *ld)
{
    size_t i;

    if (ld == NULL)
        return;
    /* Reverse order: a later plugin may rely on an earlier one. */
    for (i = ld->n_plugins; i-- > 0;) {
        loaded_plugin *plugin = &ld->plugins[i];

        if (!plugin->initialized)
            continue;
        if (plugin->desc->fini != NULL) {
            context ctx;
            context_init(&ctx, plugin, 0);
            ctx.phase = ld->phase;
            plugin->desc->fini(&ctx.base, plugin->state);
            context_destroy(&ctx);
        }
        plugin->state = NULL;
        plugin->initialized = false;
    }
}

void loader_close(loader *ld)
{
    size_t i;

    if (ld == NULL)
        return;
    loader_fini(ld);
    for (i = 0; i < ld->n_plugins; i++) {
        dlclose(ld->plugins[i].handle);
        free(ld->plugins[i].name);
        free(ld->plugins[i].path);
    }
    for (i = 0; i < ld->n_routes; i++)
        free((char *)ld->routes[i].type);
    free(ld->routes);
    free(ld->plugins);
    free(ld);
}

const route *loader_route(const loader *ld, const char *type)
{
    if (ld == NULL || type == NULL || ld->n_routes == 0)
        return NULL;
    return bsearch(type, ld->routes, ld->n_routes, sizeof *ld->routes,
                   loader_compare_key);
}

unsigned loader_threads(const loader *ld)
{
    unsigned most = 1;

    for (size_t i = 0; ld != NULL && i < ld->n_routes; i++)
        if (ld->routes[i].plugin->threads > most)
            most = ld->routes[i].plugin->threads;
    return most;
}

unsigned loader_route_cap(const route *r)
{
    unsigned cap = r->plugin->threads;

    if (r->policy != NULL && r->policy->concurrency > 0 &&
        r->policy->concurrency < cap)
        cap = r->policy->concurrency;
    return cap > 0 ? cap : 1;
}

bool loader_single_threaded(const loader *ld, const loaded_plugin *plugin)
{
    return ld->cfg->threads > 1 && !plugin->thread_safe &&
           (plugin->section == NULL || plugin->section->threads == 0);
}
