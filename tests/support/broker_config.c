/* A configuration for tests that make a broker of their own; see
 * broker_config.h. */
#include "broker_config.h"

#include <stdio.h>

#include <criterion/criterion.h>

config *test_config_for(const char *url, const char *dir)
{
    char path[300], err[CONFIG_ERR_LEN];
    config *cfg = NULL;
    FILE *f;

    snprintf(path, sizeof(path), "%s/wharf.ini", dir);
    f = fopen(path, "w");
    cr_assert(f != NULL, "%s", path);
    fprintf(f, "[redis]\nurl = %s\n[metrics]\nlisten = off\n", url);
    cr_assert_eq(fclose(f), 0);
    cr_assert_eq(config_load_producer(path, &cfg, err, sizeof(err)), 0, "%s",
                 err);
    return cfg;
}
