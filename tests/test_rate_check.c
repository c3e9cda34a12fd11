/* The rate keys under `wharfd --check`: a bad rate, a burst without a
 * rate and a limit_key that is neither id nor a JSON pointer are each
 * one line "FILE:LINE: what and why" and exit 78; good ones pass. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <criterion/criterion.h>

#include "spawn.h"

static char dir[64];
static char err[4096];

static void make_dir(void)
{
    snprintf(dir, sizeof(dir), "/tmp/wharf-test-rate-check-XXXXXX");
    cr_assert(mkdtemp(dir) != NULL);
}

static void remove_dir(void)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

TestSuite(rate_check, .init = make_dir, .fini = remove_dir, .timeout = 60);

/* Writes dir/wharf.ini, the echo plugin serving type `api` with the
 * [type.api] keys `keys` (line 4 on), runs wharfd --check on it and
 * returns its exit code; its stderr is in err. */
static int check(const char *defaults, const char *keys)
{
    char path[128], out_path[128], err_path[128];
    FILE *f;
    size_t n;
    int code;

    snprintf(path, sizeof(path), "%s/wharf.ini", dir);
    snprintf(out_path, sizeof(out_path), "%s/out", dir);
    snprintf(err_path, sizeof(err_path), "%s/err", dir);
    f = fopen(path, "w");
    cr_assert(f != NULL);
    fprintf(f,
            "[host]\nplugins_dir = %s\n[plugin.echo]\ntypes = api\n"
            "[defaults]\n%s[type.api]\n%s",
            WHARF_PLUGIN_DIR, defaults, keys);
    fclose(f);
    code = test_spawn(
        (const char *const[]){WHARFD_PATH, "--config", path, "--check", NULL},
        NULL, out_path, err_path, NULL, NULL);
    f = fopen(err_path, "r");
    n = f ? fread(err, 1, sizeof(err) - 1, f) : 0;
    err[n] = '\0';
    if (f)
        fclose(f);
    return code;
}

/* The line of dir/wharf.ini an error names. */
static void expect_error(int line, const char *what)
{
    char want[128];

    snprintf(want, sizeof(want), "%s/wharf.ini:%d: ", dir, line);
    cr_expect(strstr(err, want) != NULL, "no %s in: %s", want, err);
    cr_expect(strstr(err, what) != NULL, "no '%s' in: %s", what, err);
    cr_expect(strchr(err, '\n') == err + strlen(err) - 1, "not one line: %s",
              err);
}

Test(rate_check, good_rates_and_keys_pass)
{
    cr_expect_eq(check("", "rate_limit = 100/s\nrate_burst = 10\n"
                           "limit_key = /customer_id\n"),
                 0, "%s", err);
    cr_expect_eq(check("rate_limit = 30/min\n", "rate_burst = 3\n"), 0, "%s",
                 err);
    cr_expect_eq(check("", "rate_limit = 500/h\nlimit_key = id\n"), 0, "%s",
                 err);
    cr_expect_eq(check("rate_burst = 4\n", "rate_limit = 2/s\n"), 0, "%s", err);
    cr_expect_eq(check("", "rate_limit = 1/s\nlimit_key = /a~1b/~0c/0\n"), 0,
                 "%s", err);
}

Test(rate_check, a_rate_of_an_unknown_period_is_refused)
{
    cr_assert_eq(check("", "rate_limit = 100/fortnight\n"), 78);
    expect_error(7, "bad value '100/fortnight' for rate_limit: the period is "
                    "s, min or h");
    cr_assert_eq(check("", "rate_limit = 100\n"), 78);
    expect_error(7, "expected COUNT/s, COUNT/min or COUNT/h");
    cr_assert_eq(check("", "rate_limit = 100/m\n"), 78);
    expect_error(7, "the period is s, min or h");
    cr_assert_eq(check("", "rate_limit = 0/s\n"), 78);
    expect_error(7, "COUNT must be a whole number from 1 to 100000");
    cr_assert_eq(check("", "rate_limit = many/s\n"), 78);
    expect_error(7, "COUNT must be a whole number");
}

Test(rate_check, a_burst_without_a_rate_is_refused)
{
    cr_assert_eq(check("", "rate_burst = 10\n"), 78);
    expect_error(7, "rate_burst without a rate_limit in [type.api]");
    cr_assert_eq(check("rate_burst = 10\n", ""), 78);
    expect_error(6, "rate_burst without a rate_limit in [defaults]");
    cr_assert_eq(check("", "rate_limit = 5/s\nrate_burst = 0\n"), 78);
    expect_error(8, "rate_burst = 0 is out of range");
}

Test(rate_check, a_limit_key_without_a_limit_is_refused)
{
    cr_assert_eq(check("", "limit_key = /customer\n"), 78);
    expect_error(7, "limit_key without a rate_limit or a concurrency_limit "
                    "in [type.api]: it limits nothing by itself");
    cr_assert_eq(check("limit_key = id\n", ""), 78);
    expect_error(6, "limit_key without a rate_limit or a concurrency_limit "
                    "in [defaults]");
    cr_expect_eq(check("", "concurrency_limit = 1\nlimit_key = /c\n"), 0, "%s",
                 err);
    cr_expect_eq(check("limit_key = /c\n", "concurrency_limit = 1\n"), 0, "%s",
                 err);
}

Test(rate_check, a_limit_key_that_is_not_a_pointer_is_refused)
{
    cr_assert_eq(check("", "rate_limit = 5/s\nlimit_key = customer_id\n"), 78);
    expect_error(8, "bad value 'customer_id' for limit_key: expected id (the "
                    "task id) or a JSON pointer");
    cr_assert_eq(check("", "rate_limit = 5/s\nlimit_key = /a~2\n"), 78);
    expect_error(8, "~ is followed by 0 (~) or 1 (/)");
}
