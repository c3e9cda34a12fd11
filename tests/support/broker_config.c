/* A configuration for tests that make a broker of their own, and their
 * fixture; see broker_config.h. */
#include "broker_config.h"

#include <stdio.h>

#include <criterion/criterion.h>

#include "node_scripts.h"

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

void test_broker_up(test_redis *r, redisContext **rc, config **cfg)
{
    node_scripts_check();
    test_redis_up(r, 0, rc);
    *cfg = test_config_for(r->url, r->dir);
}

void test_broker_open(broker *b, const config *cfg, const char *const *types,
                      const policy *const *policies, size_t n,
                      const char *consumer)
{
    const policy *defaults[16];

    if (!policies) {
        cr_assert(n <= sizeof(defaults) / sizeof(defaults[0]),
                  "%zu types: give their policies", n);
        for (size_t i = 0; i < n; i++)
            defaults[i] = &cfg->defaults;
        policies = defaults;
    }
    cr_assert_eq(broker_init(b, cfg, types, policies, n, consumer), 0, "%s",
                 b->errstr);
    cr_assert_eq(broker_connect(b), 0, "%s", b->errstr);
}

void test_broker_down(test_redis *r, redisContext **rc, config **cfg, broker *b)
{
    broker_destroy(b);
    config_free(*cfg);
    *cfg = NULL;
    test_redis_down(r, rc);
}
