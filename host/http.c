/* The HTTP endpoint; see http.h. libmicrohttpd (a well-kept embeddable
 * server from Debian) does the HTTP; this file binds it to our loop and
 * our handler, keeps any mix of clients from starving a health check,
 * and refuses with a 400 what the library would take or drop silently. */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "clock_ms.h"
#include "endpoint.h"
#include "xmalloc.h"

/* Why these limits. A health check must be answered whatever other
 * clients do, and two kinds of client defeat the obvious schemes:
 *
 * - Clients that reconnect as soon as they are closed. Evicting an old
 *   connection to make room for a new one lets each eviction bring a
 *   reconnect that evicts the next, a chain that reaches the health
 *   check in microseconds; refusing an address past a per-address limit
 *   refuses the health checker on that same address (127.0.0.1 for both
 *   on most hosts). So nobody is evicted for a newcomer and no address
 *   is refused.
 * - Clients that send a byte now and then. An idle timeout restarts with
 *   every byte, so such a client holds its slot for ever.
 *
 * What holds: every connection has a deadline for its WHOLE request
 * (request line, headers and body), counted from its accept, or on
 * keep-alive from the end of the previous answer: HTTP_HEAD_DEADLINE_S,
 * and HTTP_BUSY_DEADLINE_S once HTTP_BUSY_MARK connections are open. An
 * answer too gets that long to be sent once the handler returned. Time
 * that is ours is not charged to the client: a handler's own time, and a
 * request that came while the loop was busy and waits unread. A
 * connection past its deadline is cut (shutdown, so libmicrohttpd closes
 * it on its next run). At HTTP_CONNECTION_LIMIT connections
 * libmicrohttpd 0.9.75 stops accepting (it takes the listening socket
 * out of its epoll set; the tests see newcomers wait, not closed) and new
 * connections wait in the kernel's accept queue, first come first
 * served, HTTP_LISTEN_BACKLOG deep. Under pressure every slot turns over
 * within about HTTP_BUSY_DEADLINE_S plus a tick, so a health check waits
 * behind at most the connections queued before it, served 64 a turn:
 * with 100 clients that hold and reconnect (64 in the slots, 36 queued),
 * one turn, about 1.1 s measured (tests/test_http.c). A scrape takes
 * milliseconds; Prometheus opens a new connection when its keep-alive
 * one was closed. libmicrohttpd's own idle timeout stays as a backstop
 * only (HTTP_BACKSTOP_TIMEOUT_S), longer than our deadlines. */
#define HTTP_CONNECTION_LIMIT 64u
#define HTTP_HEAD_DEADLINE_S 5
#define HTTP_BUSY_DEADLINE_S 1
#define HTTP_BUSY_MARK (HTTP_CONNECTION_LIMIT / 2)
#define HTTP_LISTEN_BACKLOG 1024u
#define HTTP_BACKSTOP_TIMEOUT_S 10u

/* Where a connection is in its current request. */
typedef enum http_phase {
    HTTP_READING,  /* reading a request, under the deadline */
    HTTP_ANSWERING /* the handler answered; sending, under the deadline */
} http_phase;

/* One open connection, as the notify callback saw it start. */
typedef struct http_conn {
    struct MHD_Connection *conn; /* NULL: a free entry */
    int fd;
    http_phase phase;
    int64_t since_ms; /* when the current phase began (monotonic) */
    bool line_seen;   /* libmicrohttpd parsed this request's first line */
    bool line_judged; /* we checked the start of the first request */
    bool refused;     /* answered 400 by http_judge_line, closing */
    bool cut;         /* past its deadline: shut down, closing */
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

/* The entry of conn in s->conns, or NULL. */
static http_conn *http_slot(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

    return info ? info->socket_context : NULL;
}

/* A new request may start on c: its deadline counts from now. */
static void http_reading(http_conn *c)
{
    c->phase = HTTP_READING;
    c->since_ms = clock_ms();
    c->line_seen = false;
}

/* True if ch may be in a method or header name (a token, RFC 9110 5.6.2). */
static bool http_tchar(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
           (ch >= '0' && ch <= '9') ||
           (ch && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

static bool http_token(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!http_tchar((unsigned char)*s))
            return false;
    return true;
}

/* The longest method we wait for before calling a line garbage. */
#define HTTP_METHOD_MAX 31

/* A 400 we write ourselves: the status line, its headers and the body. */
#define HTTP_REFUSAL_MAX 256

/* Why a listen address is refused (endpoint_parse's words), and its port
 * as getaddrinfo reads it. */
#define HTTP_WHY_MAX 128
#define HTTP_PORT_TEXT 8

/* The first bytes of a connection: 1 if they start "METHOD " (a token
 * then a space; the empty lines RFC 9112 2.2 lets a client send first
 * skipped), -1 if they cannot, 0 if too few came to tell. */
static int http_line_start(const char *buf, size_t n)
{
    size_t i = 0, start;

    while (i < n && (buf[i] == '\r' || buf[i] == '\n'))
        i++;
    start = i;
    while (i < n && http_tchar((unsigned char)buf[i]))
        i++;
    if (i == n)
        return i - start > HTTP_METHOD_MAX ? -1 : 0;
    return buf[i] == ' ' && i > start ? 1 : -1;
}

/* libmicrohttpd closes a connection whose first line has no space (or
 * starts with one) without a word, and reads nothing of a line that
 * never ends. So, while the library has read nothing of a connection
 * (TCP_INFO's bytes received all still queued), we look at what the
 * kernel holds; if it cannot be a request line, we answer 400 ourselves
 * and shut our side, and the library then closes the connection. Once
 * the library has read a byte the start is no longer in view, and it
 * has the last word: for a line on a kept-alive connection, and for one
 * that lands in the microseconds between our look (before every MHD_run)
 * and the library's read, closed without an answer as before. */
static void http_judge_line(http_conn *c)
{
    static const char body[] = "bad request: this is not an HTTP request\n";
    char refusal[HTTP_REFUSAL_MAX];
    struct tcp_info ti;
    socklen_t len = sizeof(ti);
    char buf[HTTP_METHOD_MAX + 1];
    ssize_t n;
    int queued, verdict;

    if (c->line_judged || c->line_seen || c->cut || c->fd < 0)
        return;
    memset(&ti, 0, sizeof(ti));
    if (getsockopt(c->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
        len < offsetof(struct tcp_info, tcpi_bytes_received) +
                  sizeof(ti.tcpi_bytes_received) ||
        ioctl(c->fd, SIOCINQ, &queued) != 0 || queued < 0 ||
        ti.tcpi_bytes_received != (uint64_t)queued) {
        c->line_judged = true; /* cannot tell, or the library read some */
        return;
    }
    n = recv(c->fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
    if (n <= 0)
        return; /* nothing yet; or closed, which the library will see */
    verdict = http_line_start(buf, (size_t)n);
    if (verdict == 0)
        return;
    c->line_judged = true;
    if (verdict > 0)
        return;
    /* A small answer into an empty send buffer; if it does not go, the
     * close alone says no. */
    n = snprintf(refusal, sizeof(refusal),
                 "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n"
                 "Content-Type: text/plain; charset=utf-8\r\n"
                 "Content-Length: %zu\r\n\r\n%s",
                 sizeof(body) - 1, body);
    (void)send(c->fd, refusal, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)shutdown(c->fd, SHUT_WR);
    c->refused = true;
}

/* Keeps s->conns in step with MHD's connections: their fds (for
 * http_close_in_child), phases and deadlines (for http_run). */
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
    http_reading(slot);
    info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (info) {
        slot->fd = info->connect_fd;
        /* MHD accepts with SOCK_CLOEXEC where it can; make sure. */
        (void)http_cloexec(slot->fd);
    }
    s->open++;
    /* Before MHD reads from it: what came with the connect is in view. */
    http_judge_line(slot);
}

/* Called by MHD when it has parsed a request's first line. */
static void *on_request_line(void *cls, const char *uri,
                             struct MHD_Connection *conn)
{
    http_conn *c = http_slot(conn);

    (void)cls;
    (void)uri;
    if (c)
        c->line_seen = true;
    return NULL; /* what on_request's *req_cls starts as */
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

/* A request ended (answered, or the connection closed): on keep-alive,
 * the next one's deadline counts from now. */
static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode why)
{
    http_conn *c = http_slot(conn);

    (void)cls;
    (void)why;
    if (*req_cls != &no_body)
        free(*req_cls);
    *req_cls = NULL;
    if (c)
        http_reading(c);
}

/* What the header scan found. */
typedef struct http_head_check {
    unsigned hosts;
    bool bad_name;
} http_head_check;

static enum MHD_Result http_check_header(void *cls, enum MHD_ValueKind kind,
                                         const char *key, const char *value)
{
    http_head_check *check = cls;

    (void)kind;
    (void)value;
    if (!key || !http_token(key))
        check->bad_name = true;
    else if (strcasecmp(key, MHD_HTTP_HEADER_HOST) == 0)
        check->hosts++;
    return MHD_YES;
}

/* libmicrohttpd 0.9.75 takes a header name with a space in it (or any
 * byte a name may not hold) and keeps the first of two Host headers;
 * both let a request mean one thing to us and another to a proxy before
 * us, so both are refused. The reason, or NULL if the headers are sound. */
static const char *http_bad_head(struct MHD_Connection *conn)
{
    http_head_check check = {0, false};

    MHD_get_connection_values(conn, MHD_HEADER_KIND, http_check_header, &check);
    if (check.bad_name)
        return "bad request: a header name that is not a token\n";
    if (check.hosts > 1)
        return "bad request: more than one Host header\n";
    return NULL;
}

/* Queues reply (its body freed here, in every case) as conn's answer,
 * whose sending is now under the deadline. */
static enum MHD_Result http_answer(struct MHD_Connection *conn,
                                   http_reply *reply)
{
    struct MHD_Response *response;
    enum MHD_Result rc;
    http_conn *c = http_slot(conn);

    /* A handler that made no body has a bug (allocation cannot fail:
     * xmalloc aborts); say so rather than guess at a cause. */
    if (!reply->body) {
        reply->status = 500;
        reply->n_headers = 0;
        reply->content_type = "text/plain; charset=utf-8";
        reply->body = xstrdup("internal error: no answer was made for this "
                              "request\n");
        reply->len = strlen(reply->body);
    }
    response = MHD_create_response_from_buffer(reply->len, reply->body,
                                               MHD_RESPMEM_MUST_FREE);
    if (!response) {
        free(reply->body);
        return MHD_NO;
    }
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE,
                            reply->content_type);
    for (size_t i = 0; i < reply->n_headers; i++)
        MHD_add_response_header(response, reply->headers[i][0],
                                reply->headers[i][1]);
    rc = MHD_queue_response(conn, reply->status, response);
    MHD_destroy_response(response);
    if (c) {
        c->phase = HTTP_ANSWERING;
        c->since_ms = clock_ms();
    }
    return rc;
}

/* A plain-text reply of status with a static message. */
static void http_plain(http_reply *reply, unsigned status, const char *text)
{
    reply->status = status;
    reply->body = xstrdup(text);
    reply->len = strlen(reply->body);
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
    const char *bad;

    (void)version;
    if (!*req_cls) { /* first call: headers only */
        http_conn *c = http_slot(conn);
        /* MHD may still make a request of what we refused (a method it
         * takes, we do not): it is not one. */
        if (c && c->refused)
            return MHD_NO;
        *req_cls = &no_body;
        if ((bad = http_bad_head(conn)) == NULL)
            return MHD_YES;
        http_plain(&reply, 400, bad);
        http_reply_header(&reply, MHD_HTTP_HEADER_CONNECTION, "close");
        return http_answer(conn, &reply);
    }
    if (*upload_size != 0) { /* a piece of the body */
        if (!req) {
            req = xcalloc(1, sizeof(*req));
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
        http_plain(&reply, 413, "request body too large\n");
    } else {
        current_request = conn;
        current_body = req;
        s->handler(s->arg, method, url, &reply);
        current_request = NULL;
        current_body = NULL;
    }
    return http_answer(conn, &reply);
}

/* Parses "host:port" or "[v6]:port" (endpoint.h; a host name is
 * resolved) into addr. 0, or -1 with why. */
static int parse_listen(const char *listen, struct sockaddr_storage *addr,
                        char *err, size_t errlen)
{
    char host[ENDPOINT_HOST_MAX], why[HTTP_WHY_MAX], service[HTTP_PORT_TEXT];
    struct addrinfo hints, *found = NULL;
    int port = 0, rc;

    if (endpoint_parse(listen, strlen(listen), ENDPOINT_NEED_PORT, host, &port,
                       why, sizeof(why)) != 0) {
        snprintf(err, errlen, "cannot listen on '%s': %s", listen, why);
        return -1;
    }
    snprintf(service, sizeof(service), "%d", port);
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
    rc = getaddrinfo(host, service, &hints, &found);
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
    s = xcalloc(1, sizeof(*s));
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
        HTTP_CONNECTION_LIMIT, MHD_OPTION_LISTEN_BACKLOG_SIZE,
        HTTP_LISTEN_BACKLOG, MHD_OPTION_CONNECTION_TIMEOUT,
        HTTP_BACKSTOP_TIMEOUT_S, MHD_OPTION_URI_LOG_CALLBACK, on_request_line,
        s, MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
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

#define FORM_TYPE "application/x-www-form-urlencoded"

bool http_form(const char *name, char *out, size_t len)
{
    static char value[HTTP_BODY_MAX + 1]; /* one loop, one request */
    const char *type = http_header(MHD_HTTP_HEADER_CONTENT_TYPE);
    size_t name_len = strlen(name);

    /* A request that sent no body has no fields (current_body NULL). */
    if (!current_body || !type ||
        strncasecmp(type, FORM_TYPE, sizeof(FORM_TYPE) - 1) != 0 ||
        (type[sizeof(FORM_TYPE) - 1] != '\0' &&
         type[sizeof(FORM_TYPE) - 1] != ';'))
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

/* Cuts every connection past its deadline (see the top of this file);
 * how many it cut. Runs between MHD_run calls, never inside a callback.
 * A shutdown makes the socket readable at EOF, so MHD's next run closes
 * it and frees the slot. */
static unsigned http_enforce_deadlines(http_server *s)
{
    int64_t now = clock_ms();
    int64_t limit_ms = (s->open >= HTTP_BUSY_MARK ? HTTP_BUSY_DEADLINE_S
                                                  : HTTP_HEAD_DEADLINE_S) *
                       1000;
    unsigned cut = 0;

    for (size_t i = 0; i < HTTP_CONNECTION_LIMIT; i++) {
        http_conn *c = &s->conns[i];
        int queued = 0;
        if (!c->conn || c->cut || c->fd < 0 || now - c->since_ms < limit_ms)
            continue;
        /* Bytes of a request that came while the loop was busy (a slow
         * handler, a stall) and are not read yet: the delay is ours, not
         * the client's; MHD reads them on its next run. */
        if (c->phase == HTTP_READING && ioctl(c->fd, SIOCINQ, &queued) == 0 &&
            queued > 0)
            continue;
        (void)shutdown(c->fd, SHUT_RDWR);
        c->cut = true;
        cut++;
    }
    return cut;
}

void http_run(http_server *s)
{
    if (!s)
        return;
    /* New bytes on a connection MHD has read nothing of yet are looked
     * at before MHD reads them. */
    for (size_t i = 0; i < HTTP_CONNECTION_LIMIT; i++)
        if (s->conns[i].conn)
            http_judge_line(&s->conns[i]);
    MHD_run(s->daemon);
    /* Run again at once for what was cut, so its slot takes the next
     * queued connection now rather than a tick later. */
    if (http_enforce_deadlines(s) > 0)
        MHD_run(s->daemon);
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
