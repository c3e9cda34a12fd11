/* Forking the supervisor's children (workers and the plugin check) so that
 * nothing of the supervisor leaks into them: no signal handler of its runs
 * in a child, no descriptor of its (Redis connection, self-pipe, inotify,
 * the metrics listener and its epoll) stays open there, and a child never
 * outlives the supervisor. */
#ifndef WHARF_CHILD_H
#define WHARF_CHILD_H

#include <sys/types.h>

/* Forks with every signal blocked. In the parent: restores the signal
 * mask and returns the pid, or -1 (errno set). In the child: resets every
 * handler to its default (the mask is still full, so none runs in
 * between), asks for SIGKILL when the supervisor dies (and exits at once
 * if it already has), closes every descriptor above stderr except
 * keep_fd, which it moves to descriptor 3 (-1: keep none), and returns 0
 * with every signal still blocked: the child unblocks what it wants. */
pid_t child_fork(int keep_fd);

/* In a child: unblocks every signal but SIGTERM, SIGINT and SIGHUP, which
 * stay blocked for the life of the process (and of the threads it starts),
 * so no stop or reload request interrupts a plugin's system call; the
 * child reads them with sigpending between tasks. SIGPIPE is ignored. */
void child_block_stops(void);

#endif /* WHARF_CHILD_H */
