/* The HTTP endpoint ([metrics] listen): libmicrohttpd driven from the
 * supervisor's own poll loop (no threads, so forking workers stays safe).
 * It serves whatever the handler answers. */
#ifndef WHARF_HTTP_H
#define WHARF_HTTP_H

#include <stdbool.h>
#include <stddef.h>

typedef struct http_server http_server;

/* Header lines a reply may carry besides Content-Type. */
#define HTTP_REPLY_HEADERS 8
/* Request bodies (a form's fields) are read up to this size; a larger
 * one is answered 413 without calling the handler. */
#define HTTP_BODY_MAX 4096

/* What a handler answers: a status, a content type, a malloc'd body that
 * the server frees, and more header lines (set with http_reply_header). */
typedef struct http_reply {
    unsigned status;
    const char *content_type;
    char *body;
    size_t len;
    const char *headers[HTTP_REPLY_HEADERS][2]; /* name, value */
    size_t n_headers;
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

/* During a handler call only: copies the value of field `name` (decoded)
 * of the request's body, when it is a form
 * (application/x-www-form-urlencoded), into out (len bytes, NUL
 * included). False when there is no such field, or its value holds a
 * NUL or does not fit once decoded (out is then untouched). */
bool http_form(const char *name, char *out, size_t len);

/* Adds the header line "name: value" to reply. Both are static strings
 * (not copied); past HTTP_REPLY_HEADERS lines, more are dropped. */
void http_reply_header(http_reply *reply, const char *name, const char *value);

/* The file descriptor to poll for input. */
int http_fd(const http_server *s);

/* Serves what is ready without blocking. Call when http_fd is readable
 * and on every tick (for deadlines and unfinished writes): a connection
 * that has not sent its whole request within 5 s of its accept or of its
 * previous answer (1 s once half the 64 slots are taken) is closed, and
 * past 64 connections newcomers wait in the kernel's queue in arrival
 * order, so no mix of clients can starve /healthz. A request line,
 * header name or pair of Host headers that is malformed is answered 400
 * without calling the handler. */
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
