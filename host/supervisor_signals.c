/* The supervisor's signals: SIGTERM and SIGINT (a stop), SIGHUP (a
 * reload) and SIGCHLD, each noted in a flag and a byte on a self-pipe
 * that wakes the loop's poll. SIGPIPE is ignored. */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "supervisor_internal.h"

static int signal_pipe[2] = {-1, -1};
static volatile sig_atomic_t got_stop, got_reload, got_child;

static void on_signal(int sig)
{
    int saved = errno;
    char c = (char)sig;

    if (sig == SIGTERM || sig == SIGINT)
        got_stop = 1;
    else if (sig == SIGHUP)
        got_reload = 1;
    else if (sig == SIGCHLD)
        got_child = 1;
    if (write(signal_pipe[1], &c, 1) < 0) {
        /* the pipe is full: the loop wakes anyway */
    }
    errno = saved;
}

int signals_install(void)
{
    struct sigaction sa;

    if (pipe2(signal_pipe, O_NONBLOCK | O_CLOEXEC) != 0)
        return -1;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    if (sigaction(SIGTERM, &sa, NULL) || sigaction(SIGINT, &sa, NULL) ||
        sigaction(SIGHUP, &sa, NULL) || sigaction(SIGCHLD, &sa, NULL))
        return -1;
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

bool stop_requested(void)
{
    return got_stop;
}

bool signals_take_reload(void)
{
    if (!got_reload)
        return false;
    got_reload = 0;
    return true;
}

bool signals_take_child(void)
{
    if (!got_child)
        return false;
    got_child = 0;
    return true;
}

int signals_fd(void)
{
    return signal_pipe[0];
}

void signals_drain(void)
{
    char buf[64];
    while (read(signal_pipe[0], buf, sizeof(buf)) > 0)
        ;
}
