/* Runs the wharf CLI of the build tree against a test's redis-server and
 * keeps its exit status, stdout and stderr. */
#ifndef WHARF_TEST_WHARF_CLI_H
#define WHARF_TEST_WHARF_CLI_H

#define TEST_CLI_OUTPUT 8192

typedef struct test_cli_run {
    int status; /* the exit status */
    char out[TEST_CLI_OUTPUT], err[TEST_CLI_OUTPUT];
} test_cli_run;

/* Runs `wharf --redis url args...` (args NULL-terminated) with stderr in a
 * file under dir, and waits for it. The result lives until the next call.
 * Aborts the test if it cannot run or does not exit. */
const test_cli_run *test_cli(const char *url, const char *dir,
                             const char *const *args);

#endif /* WHARF_TEST_WHARF_CLI_H */
