/* Reloads: on SIGHUP or a change in plugins_dir (watch = yes), a check
 * child loads the new manifest's plugins; when it passes, the new
 * manifest replaces the old and each worker is replaced in turn. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "log.h"
#include "notify.h"
#include "supervisor_internal.h"
#include "xmalloc.h"

int setup_watch(supervisor *s)
{
    s->watch_fd = -1;
    if (!s->cfg->watch)
        return 0;
    s->watch_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (s->watch_fd < 0 ||
        inotify_add_watch(s->watch_fd, s->cfg->plugins_dir,
                          IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM |
                              IN_DELETE | IN_CREATE) < 0) {
        log_fields(WHARF_LOG_ERROR, "cannot watch plugins_dir",
                   (log_field[]){LOG_STR("dir", s->cfg->plugins_dir),
                                 LOG_STR("error", strerror(errno))},
                   2);
        if (s->watch_fd >= 0)
            close(s->watch_fd);
        s->watch_fd = -1;
        return -1;
    }
    return 0;
}

/* Reads inotify events; a change of a *.so asks for a reload soon. */
void read_watch(supervisor *s, int64_t now)
{
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t n;

    while ((n = read(s->watch_fd, buf, sizeof(buf))) > 0) {
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            size_t len = ev->len ? strlen(ev->name) : 0;
            if (len > 3 && strcmp(ev->name + len - 3, ".so") == 0)
                s->reload_at_ms = now + WATCH_SETTLE_MS;
            p += sizeof(*ev) + ev->len;
        }
    }
}

/* A reload that cannot take effect: says why and serves as before. */
static void refuse_reload(config *next, const char *err)
{
    log_fields(WHARF_LOG_ERROR, "reload refused; serving as before",
               (log_field[]){LOG_STR("error", err)}, 1);
    config_free(next);
    notify_ready();
}

/* SIGHUP (or a watched change): re-reads the manifest and starts checking
 * its plugins in a child; the loop goes on serving while it runs, and
 * finish_reload takes the outcome. */
void start_reload(supervisor *s)
{
    char err[CONFIG_ERR_LEN];
    config *next = NULL;

    notify_reloading();
    log_fields(WHARF_LOG_INFO, "reloading",
               (log_field[]){LOG_STR("manifest", s->config_path)}, 1);
    if (s->check.running) {
        log_msg(WHARF_LOG_INFO, "reload: a check is under way; it is "
                                "started again for the latest manifest");
        plugin_check_abandon(&s->check);
        config_free(s->next_cfg);
        s->next_cfg = NULL;
    }
    if (config_load(s->config_path, &next, err, sizeof(err)) != 0 ||
        plugin_check_start(&s->check, next, next->init_timeout_ms, err,
                           sizeof(err)) != 0) {
        refuse_reload(next, err);
        return;
    }
    s->next_cfg = next;
}

/* The reload's check is over: if the plugins passed, the new manifest
 * takes effect and the workers are replaced one at a time so they load
 * the new plugins; if not, says why and keeps serving as before. */
void finish_reload(supervisor *s)
{
    char err[CONFIG_ERR_LEN];
    config *next = s->next_cfg;
    char **types = NULL;
    size_t n_types = 0;

    s->next_cfg = NULL;
    if (plugin_check_result(&s->check, next, &types, &n_types, err,
                            sizeof(err)) != 0) {
        refuse_reload(next, err);
        return;
    }
    if (next->workers != s->cfg->workers || next->watch != s->cfg->watch ||
        strcmp(next->redis_url, s->cfg->redis_url) != 0 ||
        strcmp(next->prefix, s->cfg->prefix) != 0 ||
        strcmp(next->instance, s->cfg->instance) != 0 ||
        (next->metrics_listen == NULL) != (s->cfg->metrics_listen == NULL) ||
        (next->metrics_listen &&
         strcmp(next->metrics_listen, s->cfg->metrics_listen) != 0))
        log_msg(WHARF_LOG_WARN, "reload: workers, watch, [redis] url, prefix, "
                                "instance and [metrics] listen take effect at "
                                "the next start");
    /* Those stay as they were; everything else is the new manifest's. */
    next->workers = s->cfg->workers;
    next->watch = s->cfg->watch;
    free(next->redis_url);
    next->redis_url = xstrdup(s->cfg->redis_url);
    free(next->prefix);
    next->prefix = xstrdup(s->cfg->prefix);
    free(next->instance);
    next->instance = xstrdup(s->cfg->instance);
    free(next->metrics_listen);
    next->metrics_listen =
        s->cfg->metrics_listen ? xstrdup(s->cfg->metrics_listen) : NULL;
    /* The old manifest and types are freed once the broker and the lease
     * keeper serve the new ones (setup_broker). */
    config *old_cfg = s->cfg;
    char **old_types = s->types;
    s->cfg = next;
    s->types = types;
    s->n_types = n_types;
    log_setup(s->cfg->log_level, s->cfg->log_format);
    setup_broker(s);
    start_schedules(s);
    config_free(old_cfg);
    plugin_check_free_types(old_types);
    for (size_t i = 0; i < s->n_procs; i++)
        s->procs[i].replace = true;
    log_fields(WHARF_LOG_INFO, "reload checked; replacing the workers",
               (log_field[]){LOG_INT("types", (int64_t)n_types)}, 1);
    notify_ready();
}
