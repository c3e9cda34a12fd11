/* The service manager's notification protocol (sd_notify(3)): one
 * datagram of "KEY=VALUE" lines to the unix socket named by
 * $NOTIFY_SOCKET. Every call is a no-op when NOTIFY_SOCKET is unset (not
 * started by systemd with Type=notify), so callers never check first. */
#ifndef WHARF_NOTIFY_H
#define WHARF_NOTIFY_H

#include <stdint.h>

/* READY=1: start-up is over (Redis reached, workers running). Also sends
 * MAINPID. 0 if sent or nothing to send to, -errno if the send failed. */
int notify_ready(void);

/* RELOADING=1 with MONOTONIC_USEC=<now>: a reload (SIGHUP) began. Send
 * notify_ready() again when it is over, whether it applied or not. */
int notify_reloading(void);

/* STOPPING=1: shutdown began. With within_ms > 0 also
 * EXTEND_TIMEOUT_USEC: the stop may take that long, so a unit whose
 * TimeoutStopSec is shorter than the manifest's shutdown_timeout does not
 * SIGKILL the host while its tasks may still finish. */
int notify_stopping(int64_t within_ms);

/* WATCHDOG=1: the main loop is alive. */
int notify_watchdog(void);

/* STATUS=<text>: one line for `systemctl status`. Newlines become spaces. */
int notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Sends `state` (one or more "KEY=VALUE\n" lines) as is. */
int notify_send(const char *state);

/* How often to call notify_watchdog(): half of $WATCHDOG_USEC in ms (as
 * sd_watchdog_enabled(3) advises), or 0 when the watchdog is off (unset,
 * bad, or $WATCHDOG_PID names another process). */
int64_t notify_watchdog_interval_ms(void);

#endif /* WHARF_NOTIFY_H */
