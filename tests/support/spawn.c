/* Running a program from a test; see spawn.h. */
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

int test_spawn(const char *const *argv, const char *in_path,
               const char *out_path, const char *err_path, const char *env_name,
               const char *env_value)
{
    int status;
    pid_t pid = fork(), got;

    cr_assert_geq(pid, 0, "fork failed");
    if (pid == 0) {
        int i = open(in_path ? in_path : "/dev/null", O_RDONLY);
        int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

        if (i < 0 || o < 0 || e < 0 || dup2(i, STDIN_FILENO) < 0 ||
            dup2(o, STDOUT_FILENO) < 0 || dup2(e, STDERR_FILENO) < 0 ||
            (env_name && setenv(env_name, env_value, 1) != 0))
            _exit(126);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    do
        got = waitpid(pid, &status, 0);
    while (got < 0 && errno == EINTR);
    cr_assert_eq(got, pid, "waitpid failed");
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
