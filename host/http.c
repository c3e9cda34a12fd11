/* The HTTP endpoint; see http.h. libmicrohttpd (a well-kept embeddable
 * server from Debian) does the HTTP; this file only binds it to our loop
 * and our handler. */
#include "http.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <errno.h>
#include <unistd.h>

#include <microhttpd.h>

struct http_server {
    struct MHD_Daemon *daemon;
    http_handler handler;
    void *arg;
    int fd;
};

/* The request a handler is answering, for http_header and http_query
 * (one loop, one request at a time). */
static struct MHD_Connection *current_request;

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_size, void **req_cls)
{
    http_server *s = cls;
    http_reply reply = {500, "text/plain; charset=utf-8", NULL, 0};
    struct MHD_Response *response;
    enum MHD_Result rc;

    (void)version;
    (void)upload;
    if (*req_cls == NULL) { /* first call: headers only */
        *req_cls = s;
        return MHD_YES;
    }
    if (*upload_size != 0) { /* no request bodies here: drop them */
        *upload_size = 0;
        return MHD_YES;
    }
    current_request = conn;
    s->handler(s->arg, method, url, &reply);
    current_request = NULL;
    if (!reply.body) {
        reply.status = 500;
        reply.body = strdup("out of memory\n");
        reply.len = reply.body ? strlen(reply.body) : 0;
    }
    response = MHD_create_response_from_buffer(reply.len, reply.body,
                                               MHD_RESPMEM_MUST_FREE);
    if (!response) {
        free(reply.body);
        return MHD_NO;
    }
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE,
                            reply.content_type);
    rc = MHD_queue_response(conn, reply.status, response);
    MHD_destroy_response(response);
    return rc;
}

/* Parses "host:port" or "[v6]:port" into addr. 0, or -1 with why. */
static int parse_listen(const char *listen, struct sockaddr_storage *addr,
                        char *err, size_t errlen)
{
    char host[256];
    const char *colon = strrchr(listen, ':');
    struct addrinfo hints, *found = NULL;
    size_t n;
    int rc;

    if (!colon || colon == listen) {
        snprintf(err, errlen, "cannot listen on '%s': expected host:port",
                 listen);
        return -1;
    }
    n = (size_t)(colon - listen);
    if (listen[0] == '[' && n >= 2 && listen[n - 1] == ']') {
        listen++;
        n -= 2;
    }
    if (n >= sizeof(host)) {
        snprintf(err, errlen, "cannot listen on '%s': host too long", listen);
        return -1;
    }
    memcpy(host, listen, n);
    host[n] = '\0';
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
    rc = getaddrinfo(host, colon + 1, &hints, &found);
    if (rc != 0 || !found) {
        snprintf(err, errlen, "cannot listen on '%s': %s", listen,
                 gai_strerror(rc));
        return -1;
    }
    memcpy(addr, found->ai_addr, found->ai_addrlen);
    freeaddrinfo(found);
    return 0;
}

http_server *http_start(const char *listen, http_handler handler, void *arg,
                        char *err, size_t errlen)
{
    struct sockaddr_storage addr;
    const union MHD_DaemonInfo *info;
    http_server *s = NULL;
    unsigned flags = MHD_USE_EPOLL;

    memset(&addr, 0, sizeof(addr));
    if (parse_listen(listen, &addr, err, errlen) != 0)
        return NULL;
    s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "cannot listen on '%s': out of memory", listen);
        return NULL;
    }
    s->handler = handler;
    s->arg = arg;
    if (addr.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    /* libmicrohttpd says only that it failed; a bind of our own first
     * gives the reason (address in use, not this host's, ...). */
    {
        int probe = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int one = 1;
        socklen_t alen = addr.ss_family == AF_INET6
                             ? sizeof(struct sockaddr_in6)
                             : sizeof(struct sockaddr_in);
        if (probe >= 0) {
            setsockopt(probe, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
            if (bind(probe, (struct sockaddr *)&addr, alen) != 0) {
                snprintf(err, errlen, "cannot listen on '%s': %s", listen,
                         strerror(errno));
                close(probe);
                free(s);
                return NULL;
            }
            close(probe);
        }
    }
    s->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s,
                                 MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                                 MHD_OPTION_CONNECTION_LIMIT, 64u,
                                 MHD_OPTION_CONNECTION_TIMEOUT, 10u,
                                 MHD_OPTION_END);
    if (!s->daemon) {
        snprintf(err, errlen,
                 "cannot listen on '%s': the address is in use or not "
                 "this host's",
                 listen);
        free(s);
        return NULL;
    }
    info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_EPOLL_FD);
    s->fd = info ? info->epoll_fd : -1;
    return s;
}

const char *http_header(const char *name)
{
    return current_request ? MHD_lookup_connection_value(
                                 current_request, MHD_HEADER_KIND, name)
                           : NULL;
}

const char *http_query(const char *name)
{
    return current_request
               ? MHD_lookup_connection_value(current_request,
                                             MHD_GET_ARGUMENT_KIND, name)
               : NULL;
}

int http_fd(const http_server *s)
{
    return s ? s->fd : -1;
}

void http_run(http_server *s)
{
    if (s)
        MHD_run(s->daemon);
}

void http_stop(http_server *s)
{
    if (!s)
        return;
    MHD_stop_daemon(s->daemon);
    free(s);
}
