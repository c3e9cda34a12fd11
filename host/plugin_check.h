/* The plugin check: the manifest's plugins loaded in a short-lived child
 * (open, init, fini: what --check does), so no plugin code ever runs in
 * the supervisor. The child is a pollable descriptor with a deadline: a
 * plugin whose init hangs makes the check fail with a reason, and the
 * supervisor's loop goes on serving meanwhile. */
#ifndef WHARF_PLUGIN_CHECK_H
#define WHARF_PLUGIN_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"

typedef struct plugin_check {
    pid_t pid;           /* the child, 0 once reaped */
    int fd;              /* its report, -1 once read to the end */
    int64_t deadline_ms; /* clock_ms() clock */
    int64_t timeout_ms;
    int status; /* waitpid status, once reaped */
    char *buf;  /* what the child reported so far */
    size_t len, cap;
    bool running; /* started and not yet concluded */
} plugin_check;

/* Starts checking cfg's plugins, allowing timeout_ms for all of it. 0, or
 * -1 with the reason in err. */
int plugin_check_start(plugin_check *c, const config *cfg, int64_t timeout_ms,
                       char *err, size_t errlen);

/* Reads what the child wrote so far (without blocking) and reaps it if it
 * exited; kills it once the deadline passes. True when the check is over
 * (read plugin_check_result), false while it goes on. */
bool plugin_check_step(plugin_check *c, int64_t now_ms);

/* For a caller that reaps children itself (waitpid(-1)): true if pid was
 * the check's child, whose status is then kept. */
bool plugin_check_reaped(plugin_check *c, pid_t pid, int status);

/* The outcome of a check that is over: 0 with the served types
 * (NULL-terminated; free with plugin_check_free_types) and their count, or -1
 * with the reason in err. Frees the check's buffers either way. */
int plugin_check_result(plugin_check *c, const config *cfg, char ***types,
                        size_t *n, char *err, size_t errlen);

/* Kills and reaps a check under way, if any, and frees it. */
void plugin_check_abandon(plugin_check *c);

/* Runs a whole check, waiting for it (at start-up). As plugin_check_result. */
int plugin_check_run(const config *cfg, int64_t timeout_ms, char ***types,
                     size_t *n, char *err, size_t errlen);

/* Frees a NULL-terminated types array. Accepts NULL. */
void plugin_check_free_types(char **types);

#endif /* WHARF_PLUGIN_CHECK_H */
