/* The HTTP endpoint; see http.h. libmicrohttpd (a well-kept embeddable
 * server from Debian) does the HTTP; this file binds it to our loop and
 * our handler, and keeps idle clients from starving it. */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

/* Why these limits. With an external loop, libmicrohttpd stops accepting
 * once it holds its connection limit and leaves new connections in the
 * kernel's accept queue, first come first served. Idle clients (a port
 * scanner, a stuck scraper, a client that opens and never asks) then hold
 * every slot for the whole idle timeout, and a health check queues behind
 * all of them: with 100 idle connections, 64 slots and a 10 s timeout,
 * /healthz took 10 s, and a client that keeps reconnecting starves it for
 * good. So: one address may hold only HTTP_PER_IP_LIMIT connections (the
 * rest are closed at once rather than queued), an idle connection lives
 * HTTP_IDLE_TIMEOUT_S, and under pressure (an address at its limit, or
 * half of all slots taken) the connections concerned get
 * HTTP_BUSY_TIMEOUT_S, so slots free up within about a second. A scrape
 * takes milliseconds; Prometheus opens a new connection when its
 * keep-alive one was closed. */
#define HTTP_CONNECTION_LIMIT 64u
#define HTTP_PER_IP_LIMIT 8u
#define HTTP_IDLE_TIMEOUT_S 5u
#define HTTP_BUSY_TIMEOUT_S 1u
#define HTTP_BUSY_MARK (HTTP_CONNECTION_LIMIT / 2)

/* One open connection, as the notify callback saw it start. */
typedef struct http_conn {
    struct MHD_Connection *conn; /* NULL: a free entry */
    int fd;
    struct sockaddr_storage peer; /* address (port ignored) */
    bool squeezed;                /* given HTTP_BUSY_TIMEOUT_S already */
} http_conn;

struct http_server {
    struct MHD_Daemon *daemon;
    http_handler handler;
    void *arg;
    int fd;        /* MHD's epoll fd: what the caller polls */
    int listen_fd; /* MHD's listening socket */
    /* MHD never holds more than HTTP_CONNECTION_LIMIT connections. */
    http_conn conns[HTTP_CONNECTION_LIMIT];
    unsigned open;
};

/* Sets FD_CLOEXEC on fd, so no program a worker or plugin execs keeps our
 * port or a client's connection. 0, or -1 with errno. */
static int http_cloexec(int fd)
{
    int flags = fcntl(fd, F_GETFD);

    if (flags < 0)
        return -1;
    if (flags & FD_CLOEXEC)
        return 0;
    return fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

/* True if a and b are the same host (the port does not count). */
static bool http_same_peer(const struct sockaddr_storage *a,
                           const struct sockaddr_storage *b)
{
    if (a->ss_family != b->ss_family)
        return false;
    if (a->ss_family == AF_INET)
        return memcmp(&((const struct sockaddr_in *)a)->sin_addr,
                      &((const struct sockaddr_in *)b)->sin_addr,
                      sizeof(struct in_addr)) == 0;
    if (a->ss_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                      &((const struct sockaddr_in6 *)b)->sin6_addr,
                      sizeof(struct in6_addr)) == 0;
    return false;
}

/* Keeps s->conns in step with MHD's connections: their fds (for
 * http_close_in_child) and peers (for the pressure check in http_run). */
static void on_connection(void *cls, struct MHD_Connection *conn,
                          void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    http_server *s = cls;
    const union MHD_ConnectionInfo *info;
    http_conn *slot = NULL;

    if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        slot = *socket_context;
        if (slot) {
            memset(slot, 0, sizeof(*slot));
            s->open--;
        }
        *socket_context = NULL;
        return;
    }
    for (size_t i = 0; i < HTTP_CONNECTION_LIMIT && !slot; i++)
        if (!s->conns[i].conn)
            slot = &s->conns[i];
    *socket_context = slot;
    if (!slot) /* cannot happen: MHD keeps to the limit */
        return;
    memset(slot, 0, sizeof(*slot));
    slot->conn = conn;
    slot->fd = -1;
    info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (info) {
        slot->fd = info->connect_fd;
        /* MHD accepts with SOCK_CLOEXEC where it can; make sure. */
        (void)http_cloexec(slot->fd);
    }
    info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info && info->client_addr) {
        socklen_t len = info->client_addr->sa_family == AF_INET6
                            ? sizeof(struct sockaddr_in6)
                            : sizeof(struct sockaddr_in);
        memcpy(&slot->peer, info->client_addr, len);
    }
    s->open++;
}

/* One request being read: its body, kept up to HTTP_BODY_MAX. */
typedef struct http_request {
    size_t len;
    bool too_large;
    char body[HTTP_BODY_MAX + 1];
} http_request;

/* What *req_cls holds for a request whose headers were read and no body
 * came yet: most requests (a scrape, a console poll) have none, so its
 * http_request is allocated only with the first piece of a body. */
static char no_body;

/* The request a handler is answering, for http_header, http_query and
 * http_form (one loop, one request at a time). */
static struct MHD_Connection *current_request;
static const http_request *current_body;

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode why)
{
    (void)cls;
    (void)conn;
    (void)why;
    if (*req_cls != &no_body)
        free(*req_cls);
    *req_cls = NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_size, void **req_cls)
{
    http_server *s = cls;
    http_reply reply = {.status = 500,
                        .content_type = "text/plain; charset=utf-8"};
    http_request *req = *req_cls == &no_body ? NULL : *req_cls;
    struct MHD_Response *response;
    enum MHD_Result rc;

    (void)version;
    if (!*req_cls) { /* first call: headers only */
        *req_cls = &no_body;
        return MHD_YES;
    }
    if (*upload_size != 0) { /* a piece of the body */
        if (!req) {
            req = calloc(1, sizeof(*req));
            if (!req)
                return MHD_NO;
            *req_cls = req;
        }
        if (req->len + *upload_size > HTTP_BODY_MAX) {
            req->too_large = true;
        } else {
            memcpy(req->body + req->len, upload, *upload_size);
            req->len += *upload_size;
            req->body[req->len] = '\0';
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (req && req->too_large) {
        reply.status = 413;
        reply.body = strdup("request body too large\n");
        reply.len = reply.body ? strlen(reply.body) : 0;
    } else {
        current_request = conn;
        current_body = req;
        s->handler(s->arg, method, url, &reply);
        current_request = NULL;
        current_body = NULL;
    }
    if (!reply.body) {
        reply.status = 500;
        reply.n_headers = 0;
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
    for (size_t i = 0; i < reply.n_headers; i++)
        MHD_add_response_header(response, reply.headers[i][0],
                                reply.headers[i][1]);
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
    s->fd = -1;
    s->listen_fd = -1;
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
    s->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *)&addr, MHD_OPTION_CONNECTION_LIMIT,
        HTTP_CONNECTION_LIMIT, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        HTTP_PER_IP_LIMIT, MHD_OPTION_CONNECTION_TIMEOUT, HTTP_IDLE_TIMEOUT_S,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_END);
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
    info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_LISTEN_FD);
    s->listen_fd = info ? info->listen_fd : -1;
    /* MHD opens both close-on-exec where the system can; a port that a
     * plugin's exec'd helper kept would make the next start fail with
     * "Address already in use", so make sure. */
    if (s->fd < 0 || s->listen_fd < 0 || http_cloexec(s->fd) != 0 ||
        http_cloexec(s->listen_fd) != 0) {
        snprintf(err, errlen, "cannot listen on '%s': %s", listen,
                 s->fd < 0 || s->listen_fd < 0
                     ? "libmicrohttpd gave no descriptor to poll"
                     : strerror(errno));
        MHD_stop_daemon(s->daemon);
        free(s);
        return NULL;
    }
    return s;
}

const char *http_header(const char *name)
{
    return current_request ? MHD_lookup_connection_value(current_request,
                                                         MHD_HEADER_KIND, name)
                           : NULL;
}

const char *http_query(const char *name)
{
    return current_request ? MHD_lookup_connection_value(
                                 current_request, MHD_GET_ARGUMENT_KIND, name)
                           : NULL;
}

bool http_form(const char *name, char *out, size_t len)
{
    static char value[HTTP_BODY_MAX + 1]; /* one loop, one request */
    const char *type = http_header(MHD_HTTP_HEADER_CONTENT_TYPE);
    size_t name_len = strlen(name);

    /* A request that sent no body has no fields (current_body NULL). */
    if (!current_body || !type ||
        strncasecmp(type, "application/x-www-form-urlencoded", 33) != 0 ||
        (type[33] != '\0' && type[33] != ';'))
        return false;
    for (const char *p = current_body->body; *p;) {
        size_t field = strcspn(p, "&"), n;
        if (strncmp(p, name, name_len) != 0 || p[name_len] != '=') {
            p += field + (p[field] == '&');
            continue;
        }
        n = field - name_len - 1;
        memcpy(value, p + name_len + 1, n);
        value[n] = '\0';
        /* '+' is a space; then %XX, by libmicrohttpd (so %2B stays +) */
        for (size_t i = 0; i < n; i++)
            if (value[i] == '+')
                value[i] = ' ';
        n = MHD_http_unescape(value);
        if (strlen(value) != n || n >= len) /* a NUL inside, or too long */
            return false;
        memcpy(out, value, n + 1);
        return true;
    }
    return false;
}

void http_reply_header(http_reply *reply, const char *name, const char *value)
{
    if (reply->n_headers >= HTTP_REPLY_HEADERS)
        return;
    reply->headers[reply->n_headers][0] = name;
    reply->headers[reply->n_headers][1] = value;
    reply->n_headers++;
}

int http_fd(const http_server *s)
{
    return s ? s->fd : -1;
}

/* Connections from the address of c, c included. */
static unsigned http_peer_count(const http_server *s, const http_conn *c)
{
    unsigned n = 0;

    for (size_t i = 0; i < HTTP_CONNECTION_LIMIT; i++)
        if (s->conns[i].conn && http_same_peer(&s->conns[i].peer, &c->peer))
            n++;
    return n;
}

/* Under pressure, gives the connections concerned the short idle timeout
 * (see the top of this file). Runs between MHD_run calls, never inside a
 * callback, as MHD allows changing a connection there. */
static void http_squeeze(http_server *s)
{
    bool all = s->open >= HTTP_BUSY_MARK;

    for (size_t i = 0; i < HTTP_CONNECTION_LIMIT; i++) {
        http_conn *c = &s->conns[i];
        if (!c->conn || c->squeezed)
            continue;
        if (!all && http_peer_count(s, c) < HTTP_PER_IP_LIMIT)
            continue;
        /* The timer keeps counting from the last activity, so a
         * connection idle that long is closed by the next MHD_run. */
        if (MHD_set_connection_option(c->conn, MHD_CONNECTION_OPTION_TIMEOUT,
                                      HTTP_BUSY_TIMEOUT_S) == MHD_YES)
            c->squeezed = true;
    }
}

void http_run(http_server *s)
{
    if (!s)
        return;
    MHD_run(s->daemon);
    http_squeeze(s);
}

void http_close_in_child(http_server *s)
{
    if (!s)
        return;
    /* close() only: MHD's state belongs to the parent's copy, and the
     * child never runs or stops this server. */
    if (s->listen_fd >= 0)
        close(s->listen_fd);
    if (s->fd >= 0)
        close(s->fd);
    for (size_t i = 0; i < HTTP_CONNECTION_LIMIT; i++)
        if (s->conns[i].conn && s->conns[i].fd >= 0)
            close(s->conns[i].fd);
}

void http_stop(http_server *s)
{
    if (!s)
        return;
    MHD_stop_daemon(s->daemon);
    free(s);
}
