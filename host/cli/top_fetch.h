/* wharf top's fetching: where the console answers (--url), and one GET
 * of its JSON over HTTP, done by libcurl and decoded by jansson. */
#ifndef WHARF_TOP_FETCH_H
#define WHARF_TOP_FETCH_H

#include <signal.h>
#include <stddef.h>

#include <jansson.h>

#include "endpoint.h"

/* The console's address, from http://HOST[:PORT][/PREFIX]. */
typedef struct top_target {
    char host[ENDPOINT_HOST_MAX]; /* without the brackets of an IPv6 address */
    int port;
    char base[512]; /* path prefix, without a trailing slash */
} top_target;

/* Parses url into *t: 0, or -1 with why in err (the URL as quote_text
 * shows it). */
int top_target_parse(const char *url, top_target *t, char *err, size_t len);

typedef struct top_fetch top_fetch;

/* A fetcher of t (copied) whose transfers give up once *stop is set (a
 * signal handler's flag): NULL with why in err. Close it with
 * top_fetch_close (NULL is fine). */
top_fetch *top_fetch_open(const top_target *t,
                          const volatile sig_atomic_t *stop, char *err,
                          size_t len);
void top_fetch_close(top_fetch *f);

/* GETs path (e.g. "/api/overview") below the target's prefix, within
 * 2 s, and decodes the JSON object it answers: the object (the caller
 * json_decref's it), or NULL with why in err: the console cannot be
 * reached, its status is not 200 ("HTTP 404 from SHOWN/api/overview",
 * shown: the URL as the user gave it), or its answer is not a JSON
 * object. */
json_t *top_fetch_json(top_fetch *f, const char *shown, const char *path,
                       char *err, size_t len);

#endif /* WHARF_TOP_FETCH_H */
