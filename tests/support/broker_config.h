/* A configuration for tests that make a broker of their own (no wharfd):
 * the manifest a producer would have, [redis] url and no metrics, read
 * by the real manifest reader. */
#ifndef WHARF_TEST_BROKER_CONFIG_H
#define WHARF_TEST_BROKER_CONFIG_H

#include "config.h"

/* Writes dir/wharf.ini naming url and loads it; aborts the test on
 * failure. Caller frees with config_free. */
config *test_config_for(const char *url, const char *dir);

#endif /* WHARF_TEST_BROKER_CONFIG_H */
