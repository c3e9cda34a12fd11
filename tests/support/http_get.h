/* A minimal HTTP/1.0 GET against 127.0.0.1, for tests of wharfd's
 * /metrics, /healthz and /readyz. */
#ifndef WHARF_TEST_HTTP_GET_H
#define WHARF_TEST_HTTP_GET_H

#include <stddef.h>

/* GETs path from 127.0.0.1:port. Returns the status code (body, up to
 * len - 1 bytes, NUL-terminated, in body), or -1 if nothing answered. */
int test_http_get(int port, const char *path, char *body, size_t len);

/* test_http_get, waiting up to `seconds` for each read (5 above). */
int test_http_get_within(int port, const char *path, char *body, size_t len,
                         int seconds);

#endif /* WHARF_TEST_HTTP_GET_H */
