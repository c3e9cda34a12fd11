/* Running the wharf CLI from a test; see wharf_cli.h. */
#include "wharf_cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#define ARGS_MAX 16

/* Reads fd to its end into buf (NUL-terminated, cut at len - 1). */
static void slurp(int fd, char *buf, size_t len)
{
    size_t used = 0;
    ssize_t n;

    while (used < len - 1 && (n = read(fd, buf + used, len - 1 - used)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        cr_assert(n > 0, "read: %s", strerror(errno));
        used += (size_t)n;
    }
    buf[used] = '\0';
}

const test_cli_run *test_cli(const char *url, const char *dir,
                             const char *const *args)
{
    static test_cli_run r;
    const char *argv[ARGS_MAX + 4];
    char errpath[512];
    int out[2], errfd, argc = 0, status;
    pid_t pid;

    argv[argc++] = "wharf";
    argv[argc++] = "--redis";
    argv[argc++] = url;
    for (int i = 0; args[i]; i++) {
        cr_assert(i < ARGS_MAX);
        argv[argc++] = args[i];
    }
    argv[argc] = NULL;
    snprintf(errpath, sizeof(errpath), "%s/wharf-cli.err", dir);
    cr_assert_eq(pipe(out), 0);
    pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        errfd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (errfd < 0)
            _exit(126);
        dup2(out[1], STDOUT_FILENO);
        dup2(errfd, STDERR_FILENO);
        close(out[0]);
        execv(WHARF_BINARY_DIR "/wharf", (char *const *)argv);
        _exit(127);
    }
    close(out[1]);
    /* stdout is read to its end before waiting, so a big output cannot
     * block the child; stderr goes to a file for the same reason. */
    slurp(out[0], r.out, sizeof(r.out));
    close(out[0]);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status), "wharf did not exit");
    r.status = WEXITSTATUS(status);
    cr_assert_neq(r.status, 127, "cannot run %s", WHARF_BINARY_DIR "/wharf");
    errfd = open(errpath, O_RDONLY);
    cr_assert(errfd >= 0, "%s: %s", errpath, strerror(errno));
    slurp(errfd, r.err, sizeof(r.err));
    close(errfd);
    return &r;
}
