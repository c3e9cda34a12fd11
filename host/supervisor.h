/* The supervisor: wharfd's main process. It forks `workers` worker
 * processes (each loads the plugins itself, so a crash in plugin code kills
 * one worker, never the host), restarts them, records the failure of a
 * task whose worker died or ran past its timeout, renews the leases of
 * running tasks, takes over the tasks of silent hosts, promotes delayed
 * tasks, holds the instance's heartbeat key, reloads on SIGHUP (or when a
 * plugin file changes, with watch = yes) and stops gracefully on SIGTERM.
 * It runs no plugin code itself. */
#ifndef WHARF_SUPERVISOR_H
#define WHARF_SUPERVISOR_H

#include "config.h"

/* Serves until SIGTERM or SIGINT. Takes ownership of cfg (a reload
 * replaces it). Returns the process exit code: 0 after a requested stop,
 * 78 for a configuration problem found at start (plugins that do not load,
 * an evicting Redis, an instance name held by another live host), 69 when
 * the embedded Redis cannot be started. */
int supervisor_run(const char *config_path, config *cfg);

#endif /* WHARF_SUPERVISOR_H */
