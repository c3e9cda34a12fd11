/* A configuration for tests that make a broker of their own (no wharfd):
 * the manifest a producer would have, [redis] url and no metrics, read
 * by the real manifest reader; and the fixture of such a test, a broker
 * on a private redis-server. */
#ifndef WHARF_TEST_BROKER_CONFIG_H
#define WHARF_TEST_BROKER_CONFIG_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include "broker.h"
#include "config.h"
#include "redis_server.h"

/* Writes dir/wharf.ini naming url and loads it; aborts the test on
 * failure. Caller frees with config_free. */
config *test_config_for(const char *url, const char *dir);

/* Step one of a broker test's fixture (TestSuite .init): loads the
 * scripts, starts r (no append-only file), opens *rc, the test's own
 * connection, to it and loads *cfg, a manifest naming it
 * (test_config_for). Aborts the test on failure. */
void test_broker_up(test_redis *r, redisContext **rc, config **cfg);

/* Step two: inits b for the n types of types, as consumer, with
 * policies[i] for types[i] (NULL: cfg->defaults for every one), and
 * connects it. Aborts the test, with b's errstr, on failure. */
void test_broker_open(broker *b, const config *cfg, const char *const *types,
                      const policy *const *policies, size_t n,
                      const char *consumer);

/* The .fini: destroys b (NULL for none; one never opened is fine), frees
 * *cfg, then test_redis_down (closes *rc, stops r). */
void test_broker_down(test_redis *r, redisContext **rc, config **cfg,
                      broker *b);

#endif /* WHARF_TEST_BROKER_CONFIG_H */
