/* The supervisor's children (child.h): no handler of the parent ever runs
 * in a child, a stop sent at any moment after fork waits pending for the
 * child to read it, the child dies with its parent, and it keeps no
 * descriptor of the parent's but the one it was given. */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "child.h"

static volatile sig_atomic_t parent_handler_ran;

static void parent_handler(int sig)
{
    (void)sig;
    parent_handler_ran = 1;
}

static void install_parent_handler(int sig)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = parent_handler;
    sigemptyset(&sa.sa_mask);
    cr_assert_eq(sigaction(sig, &sa, NULL), 0);
}

/* Waits for pid and returns its exit status, or 100 + signal. */
static int exit_of(pid_t pid)
{
    int status;

    cr_assert_eq(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status))
        return 100 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* A SIGTERM sent the moment fork returns, before the child has set
 * anything up: the supervisor's handler must not run in the child (it
 * would only set the supervisor's flag, and the worker would ignore the
 * stop); the signal waits, pending, and the child reads it. */
Test(child, a_stop_sent_right_after_fork_waits_pending_for_the_child)
{
    pid_t pid;

    install_parent_handler(SIGTERM);
    pid = child_fork(-1);
    cr_assert(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        sigset_t pending;
        /* Waits, every signal blocked, until the parent's kill is pending
         * (up to 60 s, for a loaded machine): then it has surely landed
         * before anything below ran. */
        for (int i = 0; i < 60000; i++) {
            if (sigpending(&pending) == 0 && sigismember(&pending, SIGTERM))
                break;
            sleep_ms(1);
        }
        child_block_stops();
        if (parent_handler_ran)
            _exit(2);
        if (sigpending(&pending) != 0 || sigismember(&pending, SIGTERM) != 1)
            _exit(3);
        _exit(0);
    }
    cr_assert_eq(kill(pid, SIGTERM), 0);
    cr_assert_eq(exit_of(pid), 0,
                 "2: the parent's handler ran in the child; 3: the stop was "
                 "not pending");
    cr_assert_eq(parent_handler_ran, 0);
}

/* Every handler is the default in the child, and the parent's signal
 * mask is as it was before the fork. */
Test(child, handlers_are_reset_and_the_parents_mask_restored)
{
    sigset_t before, after;
    pid_t pid;

    install_parent_handler(SIGUSR1);
    install_parent_handler(SIGHUP);
    cr_assert_eq(sigprocmask(SIG_SETMASK, NULL, &before), 0);
    pid = child_fork(-1);
    cr_assert(pid >= 0);
    if (pid == 0) {
        struct sigaction now;
        if (sigaction(SIGUSR1, NULL, &now) != 0 || now.sa_handler != SIG_DFL)
            _exit(2);
        if (sigaction(SIGHUP, NULL, &now) != 0 || now.sa_handler != SIG_DFL)
            _exit(3);
        _exit(0);
    }
    cr_assert_eq(sigprocmask(SIG_SETMASK, NULL, &after), 0);
    for (int sig = 1; sig < NSIG; sig++)
        cr_assert_eq(sigismember(&before, sig), sigismember(&after, sig),
                     "signal %d: the parent's mask changed", sig);
    cr_assert_eq(exit_of(pid), 0, "a parent handler survived in the child");
}

/* After child_block_stops only the stops stay blocked; SIGPIPE is
 * ignored. */
Test(child, block_stops_keeps_only_the_stops_blocked)
{
    pid_t pid = child_fork(-1);

    cr_assert(pid >= 0);
    if (pid == 0) {
        sigset_t mask;
        struct sigaction pipe_action;
        child_block_stops();
        if (sigprocmask(SIG_SETMASK, NULL, &mask) != 0)
            _exit(9);
        for (int sig = 1; sig < NSIG; sig++) {
            int stop = sig == SIGTERM || sig == SIGINT || sig == SIGHUP;
            if (sig == SIGKILL || sig == SIGSTOP || sig >= SIGRTMIN)
                continue;
            if (sigismember(&mask, sig) != stop)
                _exit(2);
        }
        if (sigaction(SIGPIPE, NULL, &pipe_action) != 0 ||
            pipe_action.sa_handler != SIG_IGN)
            _exit(3);
        _exit(0);
    }
    cr_assert_eq(exit_of(pid), 0, "2: a wrong signal mask; 3: SIGPIPE");
}

/* True once pid is gone or a zombie (its new parent may not reap it). */
static int dead(pid_t pid)
{
    char path[64], stat[256];
    FILE *f;
    const char *state;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (!f)
        return 1;
    stat[0] = '\0';
    if (!fgets(stat, sizeof(stat), f))
        stat[0] = '\0';
    fclose(f);
    state = strrchr(stat, ')');
    return !state || state[1] == '\0' || state[2] == 'Z' || state[2] == 'X';
}

/* The child asked for SIGKILL at its parent's death: a grandchild forked
 * through child_fork dies when the process that forked it does. */
Test(child, a_child_dies_with_its_parent)
{
    int ready[2], report[2];
    pid_t middle, grandchild = 0;

    cr_assert_eq(pipe(ready), 0);
    cr_assert_eq(pipe(report), 0);
    middle = fork();
    cr_assert(middle >= 0);
    if (middle == 0) {
        char c;
        pid_t pid = child_fork(ready[1]);
        if (pid == 0) {
            int sig = 0;
            if (prctl(PR_GET_PDEATHSIG, &sig) != 0 || sig != SIGKILL)
                _exit(2);
            if (write(3, "r", 1) != 1)
                _exit(3);
            for (;;)
                pause();
        }
        close(ready[1]);
        /* Ready: past its prctl, so our exit must kill it. */
        if (pid < 0 || read(ready[0], &c, 1) != 1)
            _exit(4);
        if (write(report[1], &pid, sizeof(pid)) != (ssize_t)sizeof(pid))
            _exit(5);
        _exit(0);
    }
    close(ready[1]);
    close(report[1]);
    cr_assert_eq(read(report[0], &grandchild, sizeof(grandchild)),
                 (ssize_t)sizeof(grandchild),
                 "the grandchild never said it was ready");
    cr_assert_eq(exit_of(middle), 0);
    close(ready[0]);
    close(report[0]);
    for (int i = 0; i < 6000 && !dead(grandchild); i++)
        sleep_ms(10);
    cr_assert(dead(grandchild), "the child outlived its parent by 60 s");
}

/* Only descriptors 0-2 and the one handed over (as 3) are open in the
 * child, whatever the parent had open, close-on-exec or not. */
Test(child, only_the_given_descriptor_is_kept)
{
    int given[2], stray = open("/dev/null", O_RDONLY); /* no O_CLOEXEC */
    pid_t pid;

    cr_assert(stray >= 0);
    cr_assert_eq(pipe(given), 0);
    pid = child_fork(given[1]);
    cr_assert(pid >= 0);
    if (pid == 0) {
        if (write(3, "k", 1) != 1)
            _exit(2);
        for (int fd = 4; fd < 1024; fd++)
            if (fcntl(fd, F_GETFD) != -1)
                _exit(3);
        _exit(0);
    }
    close(given[1]);
    {
        char c = 0;
        cr_assert_eq(read(given[0], &c, 1), 1);
        cr_assert_eq(c, 'k');
    }
    cr_assert_eq(exit_of(pid), 0,
                 "2: fd 3 is not the given one; 3: a stray "
                 "descriptor stayed open");
    close(given[0]);
    close(stray);
}
