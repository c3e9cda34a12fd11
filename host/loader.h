/* The plugin loader: dlopen each plugin of the manifest (and, with
 * autoload, every other *.so in plugins_dir), check it, and build the
 * type -> plugin route table. */
#ifndef WHARF_LOADER_H
#define WHARF_LOADER_H

#include <stdbool.h>
#include <stddef.h>

#include <wharf/plugin.h>

#include "config.h"

typedef struct loaded_plugin {
    char *name;                    /* the descriptor's name */
    char *path;                    /* absolute path of the .so */
    const plugin_section *section; /* NULL for an autoloaded plugin */
    void *handle;                  /* from dlopen */
    const wharf_plugin *desc;
    void *state;                   /* what init stored */
    bool initialized;              /* init ran and returned 0 */
    bool thread_safe;              /* the descriptor's .thread_safe (ABI 3) */
    unsigned threads;              /* tasks of it at once in one worker: its
                                      section's threads, else [host] threads
                                      if thread_safe, else 1 */
    char threads_text[12];         /* the same as text: wharf_config's
                                      answer for "threads" */
} loaded_plugin;

typedef struct route {
    const char *type;       /* owned by the loader */
    loaded_plugin *plugin;
    const policy *policy;   /* owned by the config */
} route;

typedef struct loader {
    const config *cfg;
    loaded_plugin *plugins;
    size_t n_plugins;
    route *routes;          /* sorted by type */
    size_t n_routes;
    int phase;              /* WHARF_PHASE_* for init and fini (set by the
                               caller; loader_open leaves WORKER) */
} loader;

/* Opens every plugin and builds the routes; runs no plugin code but the
 * constructors dlopen runs. On failure returns -1, closes what it opened,
 * leaves *out untouched and writes one line naming the manifest line, the
 * plugin file and the reason into err:
 *   "FILE:LINE: PATH: ABI 1, not one of 2 to 3 this host loads: ...".
 * A [plugin.NAME] threads above 1 for a plugin that has not opted in
 * (.thread_safe) is such a failure, at the line of `threads`. */
int loader_open(const config *cfg, loader **out, char *err, size_t errlen);

/* Runs each plugin's init (in this process). On failure returns -1, runs
 * fini of those already initialized and writes the reason into err
 * ("FILE:LINE: PATH: init returned 3"). */
int loader_init(loader *ld, char *err, size_t errlen);

/* Runs fini of every initialized plugin. */
void loader_fini(loader *ld);

/* loader_fini, dlclose and free. Accepts NULL. */
void loader_close(loader *ld);

/* The route of `type`, or NULL if no plugin serves it. */
const route *loader_route(const loader *ld, const char *type);

/* The most threads of a plugin that serves a route (at least 1): how many
 * tasks one worker may run at once, the size of its thread pool. */
unsigned loader_threads(const loader *ld);

/* How many tasks of r's type one worker may run at once (at least 1): its
 * plugin's threads, lowered to the type's concurrency when that is set. */
unsigned loader_route_cap(const route *r);

/* True if `plugin` runs 1 thread only because it has not opted in, where
 * [host] threads asked for more (a note of --check, not an error). */
bool loader_single_threaded(const loader *ld, const loaded_plugin *plugin);

/* Checks that `path` (a plugin file or one folder) is not writable by
 * group or others (a folder may be, with the sticky bit, as /tmp) and is
 * owned by root or the effective user. 0 if fine, else -1 with the reason
 * in err. The loader runs it on the file and on every folder above it up
 * to `/`, for the resolved path and for the one the manifest gave. */
int loader_check_owner(const char *path, char *err, size_t errlen);

#endif /* WHARF_LOADER_H */
