/* The supervisor's children; see child.h. */
#define _GNU_SOURCE /* close_range */
#include "child.h"

#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sysexits.h>
#include <unistd.h>

/* Only async-signal-safe calls below fork: the child of a process may not
 * rely on anything else. */
static void child_setup(pid_t parent, int keep_fd)
{
    struct sigaction dfl;

    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            (void)sigaction(sig, &dfl, NULL); /* glibc's own ones refuse */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
        _exit(EX_OSERR);
    if (keep_fd >= 0 && keep_fd != 3) {
        if (dup2(keep_fd, 3) < 0)
            _exit(EX_OSERR);
    }
    if (close_range(keep_fd >= 0 ? 4 : 3, ~0U, 0) != 0) {
        long open_max = sysconf(_SC_OPEN_MAX);
        for (long fd = keep_fd >= 0 ? 4 : 3; fd < open_max; fd++)
            close((int)fd);
    }
}

pid_t child_fork(int keep_fd)
{
    sigset_t all, old;
    pid_t parent = getpid();
    pid_t pid;

    sigfillset(&all);
    if (sigprocmask(SIG_SETMASK, &all, &old) != 0)
        return -1;
    pid = fork();
    if (pid == 0) {
        child_setup(parent, keep_fd);
        return 0;
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    return pid;
}

void child_block_stops(void)
{
    sigset_t stops;

    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&stops);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGHUP);
    sigprocmask(SIG_SETMASK, &stops, NULL);
}
