/* [redis] url = embedded: wharfd runs its own redis-server, on a unix
 * socket and an append-only file under [redis] data_dir, supervises it, and
 * stops it on exit. Call these from the supervisor's main thread only. */
#ifndef WHARF_EMBEDDED_H
#define WHARF_EMBEDDED_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

/* The embedded server. All zero (pid 0) when it is not running. */
typedef struct embedded_redis {
    pid_t pid;          /* 0 when not running */
    char dir[PATH_MAX]; /* data_dir, absolute */
    char socket[108];   /* <dir>/redis.sock (sun_path limit) */
    char url[128 + 8];  /* "unix://<socket>" */
    char log[PATH_MAX]; /* <dir>/redis.log */
    pid_t owner;        /* the process that started it (not a forked copy) */
} embedded_redis;

/* Starts redis-server for data_dir and returns 0 once it answers PING.
 *
 * data_dir (relative paths are taken from the working directory) and its
 * missing parents are made with mode 0700. The server listens on
 * <dir>/redis.sock only (--port 0, --unixsocketperm 700), keeps an
 * append-only file there (everysec, no RDB snapshots), never evicts, logs
 * to <dir>/redis.log (its stderr too), runs in its own session so a
 * terminal's Ctrl-C does not reach it, and gets SIGTERM if the calling
 * thread dies, so a crashed wharfd leaves no server behind (SIGTERM makes
 * redis write its append-only file and exit). A socket file nobody answers
 * on is removed first. Waits up to 10 s for PING, and checks that the
 * server answering is the one it started.
 *
 * Returns -1 with one line in err (may be NULL) and e all zero when
 * redis-server is not installed, data_dir cannot be made or is not a
 * writable directory, the socket path is too long for a unix socket,
 * another server already answers on the socket, or the server exited or
 * did not answer in time (with the last line of redis.log). Refuses, and
 * leaves e alone, if e already runs a server. The caller owns e and must
 * call embedded_stop before it goes. */
int embedded_start(embedded_redis *e, const char *data_dir, char *err,
                   size_t errlen);

/* For a supervisor that reaps its children with waitpid(-1, ...): returns 1
 * if pid (with its wait status) was the embedded server, which is now
 * recorded as stopped (e->pid = 0) with what happened in err; else 0 and
 * e and err are untouched. */
int embedded_reaped(embedded_redis *e, pid_t pid, int status, char *err,
                    size_t errlen);

/* Non-blocking: 0 if the server still runs; -1 if it is not running (it
 * exited and is now reaped, e->pid = 0), with what happened in err. The
 * supervisor then calls embedded_start again. */
int embedded_check(embedded_redis *e, char *err, size_t errlen);

/* Stops the server: SHUTDOWN over its socket (which writes the append-only
 * file), else SIGTERM; waits up to 10 s, then SIGKILL; reaps it and sets
 * e->pid = 0. Accepts NULL and a stopped server. In a forked copy of the
 * process that started it (a worker) it only sets e->pid = 0: the server
 * is not the copy's to stop. */
void embedded_stop(embedded_redis *e);

#endif /* WHARF_EMBEDDED_H */
