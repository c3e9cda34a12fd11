/* The HTTP endpoint ([metrics] listen): libmicrohttpd driven from the
 * supervisor's own poll loop (no threads, so forking workers stays safe).
 * It serves whatever the handler answers. */
#ifndef WHARF_HTTP_H
#define WHARF_HTTP_H

#include <stddef.h>

typedef struct http_server http_server;

/* What a handler answers: a status, a content type and a malloc'd body
 * that the server frees. */
typedef struct http_reply {
    unsigned status;
    const char *content_type;
    char *body;
    size_t len;
} http_reply;

typedef void (*http_handler)(void *arg, const char *method, const char *path,
                             http_reply *reply);

/* Listens on "host:port" (IPv4 name or address, or [IPv6]:port). NULL
 * with "cannot listen on ...: why" in err on failure. */
http_server *http_start(const char *listen, http_handler handler, void *arg,
                        char *err, size_t errlen);

/* During a handler call only: the value of the request's header `name`
 * (any case), or of its query argument `name` (decoded), or NULL. Owned
 * by the server; valid until the handler returns. */
const char *http_header(const char *name);
const char *http_query(const char *name);

/* The file descriptor to poll for input. */
int http_fd(const http_server *s);

/* Serves what is ready without blocking. Call when http_fd is readable
 * and on every tick (for timeouts and unfinished writes): idle
 * connections are closed after a few seconds, within about one under
 * pressure, so idle clients cannot starve /healthz. */
void http_run(http_server *s);

/* In a child just forked from the process that runs s: closes the
 * listening socket, the epoll fd and every client connection the child
 * inherited, touching nothing else, so no worker (nor anything a plugin
 * forks) keeps the port or a client waiting. The child must not use s
 * afterwards, not even http_stop; the parent's server is unaffected.
 * Accepts NULL. (Every one of these descriptors is close-on-exec too.) */
void http_close_in_child(http_server *s);

/* Stops listening and frees. Accepts NULL. */
void http_stop(http_server *s);

#endif /* WHARF_HTTP_H */
