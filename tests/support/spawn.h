/* Runs a program from a test with its stdin from a file and its stdout
 * and stderr into files, and waits for it: the one fork-and-exec of the
 * tests that run wharf, wharfd --check or a handler as a whole process. */
#ifndef WHARF_TEST_SPAWN_H
#define WHARF_TEST_SPAWN_H

/* Runs argv (argv[0] a path, NULL-terminated) with stdin from in_path
 * (NULL: /dev/null), stdout into out_path and stderr into err_path
 * (created or truncated), and env_name set to env_value in the child
 * when env_name is not NULL. Returns its exit code, or 128 + the signal
 * that killed it; 126 when the child could not be set up, 127 when argv[0]
 * could not be run. Aborts the test if it cannot fork. */
int test_spawn(const char *const *argv, const char *in_path,
               const char *out_path, const char *err_path, const char *env_name,
               const char *env_value);

#endif /* WHARF_TEST_SPAWN_H */
