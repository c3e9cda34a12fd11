/* The HTTP endpoint (host/http.c) on its own: a handler that answers
 * /healthz, driven by a loop like the supervisor's (poll on http_fd, then
 * http_run every tick) in a thread of the test. No mix of other clients
 * (idle, reconnecting, dripping their heads) may starve a health check, a
 * malformed request is answered 400, and no descriptor of it may outlive
 * an exec or, after http_close_in_child, a fork. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "http.h"
#include "host_process.h"
#include "http_get.h"
#include "redis_server.h"

/* Longer than the server's deadline for a request (5 s). */
#define SLOW_HANDLER_S 6

/* The supervisor's tick: how long its poll waits at most. */
#define LOOP_TICK_MS 100

static http_server *server;
static pthread_t loop_thread;
static atomic_int loop_stop;
static atomic_int served;
static int port;

static void on_request(void *arg, const char *method, const char *path,
                       http_reply *reply)
{
    (void)arg;
    (void)method;
    atomic_fetch_add(&served, 1);
    /* As /readyz and /metrics may while Redis stalls: block a while. */
    if (strcmp(path, "/slow") == 0)
        sleep(SLOW_HANDLER_S);
    /* The form's fields a and b, and a header of the handler's own. */
    if (strcmp(path, "/form") == 0) {
        char a[16] = "-", b[16] = "-", text[64];
        if (!http_form("a", a, sizeof(a)))
            snprintf(a, sizeof(a), "(none)");
        if (!http_form("b", b, sizeof(b)))
            snprintf(b, sizeof(b), "(none)");
        snprintf(text, sizeof(text), "a=[%s] b=[%s]\n", a, b);
        http_reply_header(reply, "X-Test", "yes");
        reply->content_type = "text/plain; charset=utf-8";
        reply->status = 200;
        reply->body = strdup(text);
        reply->len = reply->body ? strlen(reply->body) : 0;
        return;
    }
    reply->content_type = "text/plain; charset=utf-8";
    reply->status =
        strcmp(path, "/healthz") == 0 || strcmp(path, "/slow") == 0 ? 200 : 404;
    reply->body = strdup(reply->status == 200 ? "ok\n" : "not found\n");
    reply->len = reply->body ? strlen(reply->body) : 0;
}

static void *loop(void *arg)
{
    (void)arg;
    while (!atomic_load(&loop_stop)) {
        struct pollfd pfd = {http_fd(server), POLLIN, 0};
        poll(&pfd, 1, LOOP_TICK_MS);
        http_run(server);
    }
    return NULL;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void start_server(void)
{
    char listen[64], err[256];

    port = test_free_port();
    cr_assert(port > 0);
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
    server = http_start(listen, on_request, NULL, err, sizeof(err));
    cr_assert_not_null(server, "%s", err);
}

static void start_loop(void)
{
    atomic_store(&loop_stop, 0);
    cr_assert_eq(pthread_create(&loop_thread, NULL, loop, NULL), 0);
}

static void setup(void)
{
    signal(SIGPIPE, SIG_IGN);
    start_server();
    start_loop();
}

static void teardown(void)
{
    if (!atomic_load(&loop_stop)) {
        atomic_store(&loop_stop, 1);
        pthread_join(loop_thread, NULL);
    }
    http_stop(server); /* accepts NULL */
    server = NULL;
}

/* Room for 25 health checks of up to HEALTH_BOUND_S each in one test. The
 * suites of this file share one timeout: with two values, criterion
 * 2.4.1's parallel runner leaks 48 bytes, which the sanitizer build
 * reports as a failure. */
TestSuite(http, .init = setup, .fini = teardown, .timeout = 300);

/* A TCP connection from source address `from` (NULL: any) to the server
 * that sends nothing; -1 if refused. */
static int idle_connection_from(const char *from)
{
    struct sockaddr_in addr;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    cr_assert(fd >= 0, "socket: %s", strerror(errno));
    if (from) {
        memset(&addr, 0, sizeof(addr));
        addr.sin_family = AF_INET;
        cr_assert_eq(inet_pton(AF_INET, from, &addr.sin_addr), 1);
        cr_assert_eq(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0,
                     "bind %s: %s", from, strerror(errno));
    }
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_port = htons((unsigned short)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* How many of fds the server has closed (EOF or reset), without waiting. */
static int closed_by_server(const int *fds, int n)
{
    int closed = 0;

    for (int i = 0; i < n; i++) {
        char byte;
        ssize_t got;
        if (fds[i] < 0) {
            closed++;
            continue;
        }
        got = recv(fds[i], &byte, 1, MSG_DONTWAIT);
        if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
            closed++;
    }
    return closed;
}

/* GETs /healthz until it answers 200 or deadline_ms pass; returns the ms
 * it took, or -1. */
static int64_t healthz_within(int64_t deadline_ms)
{
    char body[256];
    int64_t start = now_ms();

    while (now_ms() - start < deadline_ms) {
        if (test_http_get(port, "/healthz", body, sizeof(body)) == 200)
            return now_ms() - start;
        usleep(20 * 1000);
    }
    return -1;
}

/* POSTs body (with content type `type`) to path; the whole raw answer
 * into out. */
static void post_raw(const char *path, const char *type, const char *body,
                     char *out, size_t len)
{
    char req[8192];
    size_t got = 0;
    ssize_t r;
    int fd = idle_connection_from(NULL), n;

    cr_assert(fd >= 0);
    n = snprintf(req, sizeof(req),
                 "POST %s HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: "
                 "%s\r\nContent-Length: %zu\r\n\r\n%s",
                 path, type, strlen(body), body);
    cr_assert(n > 0 && (size_t)n < sizeof(req));
    cr_assert_eq(write(fd, req, (size_t)n), n);
    while (got < len - 1 && (r = read(fd, out + got, len - 1 - got)) > 0)
        got += (size_t)r;
    out[got] = '\0';
    close(fd);
}

Test(http, a_form_body_reaches_the_handler_decoded)
{
    static char big[HTTP_BODY_MAX + 100];
    char out[4096];
    const char *form = "application/x-www-form-urlencoded";

    post_raw("/form", form, "b=x%2By+z&a=1%262", out, sizeof(out));
    cr_expect(strstr(out, "a=[1&2] b=[x+y z]"), "%s", out);
    cr_expect(strstr(out, "\r\nX-Test: yes\r\n"), "%s", out);
    /* a field that does not fit, holds a NUL, or is not there */
    post_raw("/form", form, "a=0123456789abcdefghij&b=%00", out, sizeof(out));
    cr_expect(strstr(out, "a=[(none)] b=[(none)]"), "%s", out);
    /* what must fit is the value, not its encoding */
    post_raw("/form", form, "a=%2F%2F%2F%2F%2F%2F%2F%2F%2F%2F%2F%2F%2F%2F%2F",
             out, sizeof(out));
    cr_expect(strstr(out, "a=[///////////////]"), "%s", out);
    post_raw("/form", "application/x-www-form-urlencoded; charset=utf-8",
             "aa=1&a=ok", out, sizeof(out));
    cr_expect(strstr(out, "a=[ok] b=[(none)]"), "%s", out);
    /* only a form is a form */
    post_raw("/form", "application/json", "a=1", out, sizeof(out));
    cr_expect(strstr(out, "a=[(none)]"), "%s", out);
    /* a form with no body has no fields */
    post_raw("/form", form, "", out, sizeof(out));
    cr_expect(strstr(out, "a=[(none)] b=[(none)]"), "%s", out);
    /* a body past HTTP_BODY_MAX never reaches the handler */
    memset(big, 'a', sizeof(big) - 1);
    memcpy(big, "a=", 2);
    post_raw("/form", form, big, out, sizeof(out));
    cr_expect(strncmp(out, "HTTP/1.0 413", 12) == 0 ||
                  strncmp(out, "HTTP/1.1 413", 12) == 0,
              "%.200s", out);
}

/* Waits up to deadline_ms for the server to close all n of fds; how many
 * it closed. */
static int all_closed_within(const int *fds, int n, int64_t deadline_ms)
{
    int64_t start = now_ms();
    int closed;

    while ((closed = closed_by_server(fds, n)) < n &&
           now_ms() - start < deadline_ms)
        usleep(50 * 1000);
    return closed;
}

Test(http, healthz_answers_while_100_idle_connections_are_open)
{
    enum { IDLE = 100 };
    int fds[IDLE];
    int64_t took;
    int closed;

    for (int i = 0; i < IDLE; i++)
        fds[i] = idle_connection_from(NULL);
    /* 64 are taken, 36 wait in the accept queue, and /healthz behind
     * them. Before the deadlines it waited until each had sat out the
     * whole idle timeout. */
    took = healthz_within(30000);
    cr_assert(took >= 0, "/healthz never answered with %d idle connections",
              IDLE);
    /* Not by luck of timing: a connection that sends no request is cut
     * at its deadline, so every one of them is closed in a few seconds
     * (at most 5 s each once taken; 60 s is the loaded machine's room). */
    closed = all_closed_within(fds, IDLE, 60000);
    cr_assert_eq(closed, IDLE, "only %d of %d idle connections closed", closed,
                 IDLE);
    cr_log_info("healthz answered after %lld ms; %d idle connections "
                "closed",
                (long long)took, closed);
    for (int i = 0; i < IDLE; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

/* Clients that hold their connections, as an attack on the health check
 * would: from[i % n_from] is the source address of connection i; a
 * connection the server closes is opened again at once; with drip, each
 * sends one byte of a request head that never ends every DRIP_MS. Run by
 * a thread of the test until stop is set. */
#define DRIP_MS 500
typedef struct holders {
    int n;
    const char *const *from;
    int n_from;
    bool drip;
    atomic_int stop;
    atomic_int connected;  /* connections open at once, at most n */
    atomic_int reconnects; /* how many the server closed and came back */
    pthread_t thread;
} holders;

/* A connection from `from` to the server, or -1 (no asserts: a thread). */
static int connect_from(const char *from)
{
    struct sockaddr_in addr;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -1;
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    if (inet_pton(AF_INET, from, &addr.sin_addr) != 1 ||
        bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0)
        goto fail;
    addr.sin_port = htons((unsigned short)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0)
        goto fail;
    return fd;
fail:
    close(fd);
    return -1;
}

static void *hold(void *arg)
{
    static const char head[] = "GET /healthz HTTP/1.1\r\nX-Drip: ";
    holders *h = arg;
    int *fds = calloc((size_t)h->n, sizeof(int));
    size_t *sent = calloc((size_t)h->n, sizeof(size_t));
    struct pollfd *pfds = calloc((size_t)h->n, sizeof(struct pollfd));
    int64_t next_drip = now_ms() + DRIP_MS;

    if (!fds || !sent || !pfds)
        goto out;
    for (int i = 0; i < h->n; i++)
        fds[i] = -1;
    while (!atomic_load(&h->stop)) {
        int open = 0;
        for (int i = 0; i < h->n; i++) {
            if (fds[i] < 0) {
                fds[i] = connect_from(h->from[i % h->n_from]);
                sent[i] = 0;
            }
            open += fds[i] >= 0;
            pfds[i].fd = fds[i];
            pfds[i].events = POLLIN;
            pfds[i].revents = 0;
        }
        atomic_store(&h->connected, open);
        poll(pfds, (nfds_t)h->n, 50);
        for (int i = 0; i < h->n; i++) {
            char buf[512];
            ssize_t got;
            if (fds[i] < 0 || !(pfds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            got = recv(fds[i], buf, sizeof(buf), MSG_DONTWAIT);
            if (got == 0 ||
                (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
                close(fds[i]);
                fds[i] = -1;
                atomic_fetch_add(&h->reconnects, 1);
            }
        }
        if (h->drip && now_ms() >= next_drip) {
            next_drip += DRIP_MS;
            for (int i = 0; i < h->n; i++) {
                char byte = sent[i] < sizeof(head) - 1 ? head[sent[i]] : 'a';
                if (fds[i] < 0)
                    continue;
                if (send(fds[i], &byte, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1) {
                    sent[i]++;
                } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
                    close(fds[i]);
                    fds[i] = -1;
                    atomic_fetch_add(&h->reconnects, 1);
                }
            }
        }
    }
out:
    if (fds)
        for (int i = 0; i < h->n; i++)
            if (fds[i] >= 0)
                close(fds[i]);
    free(fds);
    free(sent);
    free(pfds);
    return NULL;
}

/* Starts h's thread and waits (up to 30 s) until all its connections are
 * open. */
static void holders_start(holders *h)
{
    int64_t start = now_ms();

    cr_assert_eq(pthread_create(&h->thread, NULL, hold, h), 0);
    while (atomic_load(&h->connected) < h->n && now_ms() - start < 30000)
        usleep(20 * 1000);
    cr_assert_eq(atomic_load(&h->connected), h->n,
                 "only %d of %d holding connections opened",
                 atomic_load(&h->connected), h->n);
}

static void holders_stop(holders *h)
{
    atomic_store(&h->stop, 1);
    pthread_join(h->thread, NULL);
}

/* One GET /healthz from 127.0.0.1 with `seconds` to answer; the ms it
 * took, or -1 if it was not answered 200. */
static int64_t healthz_once(int seconds)
{
    char body[256];
    int64_t start = now_ms();

    if (test_http_get_within(port, "/healthz", body, sizeof(body), seconds) !=
        200)
        return -1;
    return now_ms() - start;
}

/* Each of `checks` health checks answered within HEALTH_BOUND_S while h
 * holds the server; the slowest, in ms. */
#define HEALTH_BOUND_S 10
static int64_t healthz_each_answered(int checks, const char *what)
{
    int64_t slowest = 0;

    for (int i = 0; i < checks; i++) {
        int64_t took = healthz_once(HEALTH_BOUND_S);
        cr_assert(took >= 0 && took < HEALTH_BOUND_S * 1000,
                  "health check %d of %d not answered within %d s with %s",
                  i + 1, checks, HEALTH_BOUND_S, what);
        if (took > slowest)
            slowest = took;
    }
    return slowest;
}

Test(http, healthz_answers_while_clients_on_its_address_reconnect_at_once)
{
    static const char *const local[] = {"127.0.0.1"};
    holders h = {.n = 100, .from = local, .n_from = 1};
    int64_t slowest;

    /* 100 idle clients from the health checker's own address, each back
     * as soon as it is closed: 64 hold every slot, the rest wait in the
     * accept queue. Each check waits behind at most the ~36 queued
     * before it, and under pressure every slot turns over within its
     * 1 s deadline: measured, the slowest of 25 took about 1.1 s
     * (bound 10 s: a margin of about 9x for a loaded machine). Before,
     * 0 of 25 were answered. */
    holders_start(&h);
    slowest = healthz_each_answered(25, "100 reconnecting idle clients");
    /* The pressure was real: the server cut idle ones, and they came back. */
    cr_assert(atomic_load(&h.reconnects) > 0, "no idle client was ever closed");
    cr_log_info("slowest of 25 health checks: %lld ms; %d reconnects",
                (long long)slowest, atomic_load(&h.reconnects));
    holders_stop(&h);
}

Test(http, healthz_answers_while_64_clients_drip_their_heads)
{
    static const char *const eight[] = {"127.0.0.1", "127.0.0.2", "127.0.0.3",
                                        "127.0.0.4", "127.0.0.5", "127.0.0.6",
                                        "127.0.0.7", "127.0.0.8"};
    holders h = {.n = 64, .from = eight, .n_from = 8, .drip = true};
    int64_t slowest;

    /* 64 connections over 8 addresses, each sending one header byte every
     * 0.5 s (so an idle timeout never fires) and back at once when
     * closed. The whole head has a deadline, 1 s under pressure, so
     * none keeps a slot: measured, the slowest of 10 checks took about
     * 1.1 s (bound 10 s). Before, 1 was answered and 5 failed in 18 s. */
    holders_start(&h);
    slowest = healthz_each_answered(10, "64 clients dripping their heads");
    cr_assert(atomic_load(&h.reconnects) > 0, "no dripping client was cut");
    cr_log_info("slowest of 10 health checks: %lld ms; %d reconnects",
                (long long)slowest, atomic_load(&h.reconnects));
    holders_stop(&h);
}

/* Sends raw (len bytes) on a new connection and reads the whole answer
 * into out (until the server closes, 30 s at most). */
static void raw_exchange(const char *raw, size_t len, char *out, size_t outlen)
{
    struct timeval tv = {30, 0};
    size_t got = 0;
    ssize_t r;
    int fd = idle_connection_from(NULL);

    cr_assert(fd >= 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    cr_assert_eq(write(fd, raw, len), (ssize_t)len);
    while (got < outlen - 1 && (r = read(fd, out + got, outlen - 1 - got)) > 0)
        got += (size_t)r;
    out[got] = '\0';
    close(fd);
}

#define RAW(s) s, sizeof(s) - 1

Test(http, malformed_requests_are_answered_400)
{
    char out[4096];
    int before;

    /* Two Host headers: the library kept the first; a proxy may keep the
     * second. */
    before = atomic_load(&served);
    raw_exchange(RAW("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     "Host: evil.example\r\n\r\n"),
                 out, sizeof(out));
    cr_expect(strncmp(out, "HTTP/1.1 400 ", 13) == 0, "%s", out);
    cr_expect(strstr(out, "more than one Host header"), "%s", out);
    /* A header name with a space in it (and one with a space before the
     * colon, which the library took as a name ending in a space). */
    raw_exchange(RAW("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     "Bad Name: x\r\n\r\n"),
                 out, sizeof(out));
    cr_expect(strncmp(out, "HTTP/1.1 400 ", 13) == 0, "%s", out);
    cr_expect(strstr(out, "header name that is not a token"), "%s", out);
    raw_exchange(RAW("GET /healthz HTTP/1.1\r\nHost : 127.0.0.1\r\n\r\n"), out,
                 sizeof(out));
    cr_expect(strncmp(out, "HTTP/1.1 400 ", 13) == 0, "%s", out);
    /* A request line with no space, which the library closed without a
     * word; and bytes that are no HTTP at all (a TLS hello), which it
     * waited on until its timeout. */
    raw_exchange(RAW("GARBAGE\r\n\r\n"), out, sizeof(out));
    cr_expect(strncmp(out, "HTTP/1.1 400 ", 13) == 0, "%s", out);
    cr_expect(strstr(out, "not an HTTP request"), "%s", out);
    raw_exchange(RAW("\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03"), out,
                 sizeof(out));
    cr_expect(strncmp(out, "HTTP/1.1 400 ", 13) == 0, "%s", out);
    /* A method that is no token: the library would take it. */
    raw_exchange(RAW("G@T /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"), out,
                 sizeof(out));
    cr_expect(strncmp(out, "HTTP/1.1 400 ", 13) == 0, "%s", out);
    cr_expect_eq(atomic_load(&served), before,
                 "a malformed request reached the handler");
    /* Sound requests still pass: empty lines first, and a name with the
     * punctuation a token may hold. */
    raw_exchange(RAW("\r\nGET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     "X-Fine_Name.1: a\r\nConnection: close\r\n\r\n"),
                 out, sizeof(out));
    cr_expect(strncmp(out, "HTTP/1.1 200 ", 13) == 0, "%s", out);
}

Test(http, a_handler_slower_than_the_idle_timeout_still_answers)
{
    char body[256];

    /* The time the handler takes is the server's, not the client's: the
     * deadline must not close the connection before the answer. */
    cr_assert_eq(test_http_get_within(port, "/slow", body, sizeof(body), 60),
                 200, "the answer of a slow handler was dropped");
    cr_assert_str_eq(body, "ok\n");
}

Test(http, healthz_answers_while_idle_clients_from_many_addresses_fill_it)
{
    enum { ADDRESSES = 20, EACH = 5, IDLE = ADDRESSES * EACH };
    int fds[IDLE];
    char from[32];
    int64_t took;

    /* 100 connections, few per address: past the total limit, so the
     * kernel queues the rest, and /healthz behind them. */
    for (int i = 0; i < IDLE; i++) {
        snprintf(from, sizeof(from), "127.0.1.%d", 1 + i / EACH);
        fds[i] = idle_connection_from(from);
    }
    took = healthz_within(30000);
    cr_assert(took >= 0,
              "/healthz never answered with %d idle connections "
              "from %d addresses",
              IDLE, ADDRESSES);
    cr_log_info("healthz answered after %lld ms", (long long)took);
    for (int i = 0; i < IDLE; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

/* The descriptors this process has open, as a bitmap of fds below 1024. */
static void open_fds(unsigned char *map)
{
    memset(map, 0, 1024);
    for (int fd = 0; fd < 1024; fd++)
        if (fcntl(fd, F_GETFD) >= 0)
            map[fd] = 1;
}

/* Stops the loop thread, so the server's state is still while we fork. */
static void stop_loop(void)
{
    atomic_store(&loop_stop, 1);
    pthread_join(loop_thread, NULL);
}

/* True if the server's port can be bound again (nobody holds it). */
static int port_is_free(void)
{
    struct sockaddr_in addr;
    int one = 1, ok;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    cr_assert(fd >= 0);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_port = htons((unsigned short)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ok = bind(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0 &&
         listen(fd, 1) == 0;
    close(fd);
    return ok;
}

/* A keep-alive connection that has had one answer, so the server holds
 * it open: the connection a worker must not inherit. */
static int served_keep_alive_connection(void)
{
    static const char request[] =
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    struct timeval tv = {30, 0};
    char buf[512];
    int fd = idle_connection_from(NULL);
    ssize_t got;

    cr_assert(fd >= 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    cr_assert_eq(write(fd, request, sizeof(request) - 1),
                 (ssize_t)sizeof(request) - 1);
    got = read(fd, buf, sizeof(buf) - 1);
    cr_assert(got > 0, "no answer on the keep-alive connection");
    buf[got] = '\0';
    cr_assert(strstr(buf, " 200 ") != NULL, "%s", buf);
    return fd;
}

Test(http, every_descriptor_is_close_on_exec)
{
    unsigned char before[1024], after[1024];
    int client;

    /* The fixture's server is running; start another and compare. */
    http_server *first = server;
    char listen[64], err[256];

    stop_loop();
    open_fds(before);
    port = test_free_port();
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
    server = http_start(listen, on_request, NULL, err, sizeof(err));
    cr_assert_not_null(server, "%s", err);
    start_loop();
    client = served_keep_alive_connection();
    open_fds(after);
    for (int fd = 0; fd < 1024; fd++)
        if (after[fd] && !before[fd] && fd != client)
            cr_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC,
                      "descriptor %d of the server is not close-on-exec", fd);
    close(client);
    http_stop(first);
}

Test(http, an_execd_child_does_not_keep_the_port)
{
    pid_t child;
    int status;

    stop_loop();
    child = fork();
    cr_assert(child >= 0);
    if (child == 0) {
        execlp("sleep", "sleep", "600", (char *)NULL);
        _exit(127);
    }
    http_stop(server);
    server = NULL;
    /* sleep has exec'd or is about to; either way, once it runs, no
     * descriptor of ours may be left in it. Wait until it has exec'd. */
    for (int i = 0; i < 3000; i++) {
        char exe[64], target[256];
        ssize_t n;
        snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)child);
        n = readlink(exe, target, sizeof(target) - 1);
        if (n > 0) {
            target[n] = '\0';
            if (strstr(target, "sleep"))
                break;
        }
        usleep(10 * 1000);
    }
    /* The kernel names the new program in /proc before it closes the
     * close-on-exec descriptors, and the last close of a socket runs on
     * the way back to user space: a loaded machine can show "sleep"
     * while the port is still bound. Wait for the port, 20 s at most;
     * a descriptor without close-on-exec keeps it for sleep's 600 s. */
    int free_now = 0;
    for (int i = 0; i < 2000 && !(free_now = port_is_free()); i++)
        usleep(10 * 1000);
    cr_assert(free_now, "the exec'd child keeps port %d", port);
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
}

Test(http, a_child_that_closes_its_copy_keeps_neither_port_nor_clients)
{
    int ready[2], client, status;
    char byte;
    pid_t child;
    ssize_t got;

    client = served_keep_alive_connection();
    stop_loop();
    cr_assert_eq(pipe(ready), 0);
    child = fork();
    cr_assert(child >= 0);
    if (child == 0) {
        /* As a worker would, right after fork; then it lives on. */
        http_close_in_child(server);
        close(ready[0]);
        if (write(ready[1], "x", 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    close(ready[1]);
    cr_assert_eq(read(ready[0], &byte, 1), 1, "the child did not start");
    close(ready[0]);
    http_stop(server);
    server = NULL;
    cr_assert(port_is_free(), "the child keeps port %d", port);
    /* The client's connection is gone with the parent's copy: EOF. */
    got = read(client, &byte, 1);
    cr_assert_eq(got, 0,
                 "the client's connection outlived the server "
                 "(read gave %zd)",
                 got);
    close(client);
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
}

/* ---- the same against a real wharfd, whose supervisor loop drives it */

static test_redis host_redis;
static test_host host;

static void host_fini(void)
{
    test_host_stop(&host);
    test_redis_stop(&host_redis);
}

/* The timeout of the http suite (see there). */
TestSuite(http_host, .fini = host_fini, .timeout = 300);

Test(http_host, wharfd_healthz_answers_while_100_idle_connections_are_open)
{
    enum { IDLE = 100 };
    int fds[IDLE];
    char cmd[600], body[256];
    int64_t took;
    int status = -1;

    test_redis_start(&host_redis, 0);
    port = test_free_port();
    test_host_manifest_opts(&host, &host_redis, &(test_host_opts){0});
    /* The harness writes listen = off (sections may not repeat). */
    snprintf(cmd, sizeof(cmd),
             "sed -i 's/^listen = off$/listen = 127.0.0.1:%d/' %s", port,
             host.manifest);
    cr_assert_eq(system(cmd), 0);
    test_host_start(&host);
    for (int i = 0; i < 3000 && status != 200; i++) {
        status = test_http_get(port, "/healthz", body, sizeof(body));
        if (status != 200)
            usleep(10 * 1000);
    }
    cr_assert_eq(status, 200, "wharfd never answered; see %s", host.log);
    for (int i = 0; i < IDLE; i++)
        fds[i] = idle_connection_from(NULL);
    took = healthz_within(30000);
    cr_assert(took >= 0,
              "wharfd's /healthz never answered with %d idle "
              "connections; see %s",
              IDLE, host.log);
    cr_assert_eq(all_closed_within(fds, IDLE, 60000), IDLE,
                 "wharfd kept an idle connection open; see %s", host.log);
    cr_log_info("wharfd's healthz answered after %lld ms", (long long)took);
    for (int i = 0; i < IDLE; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    cr_assert_eq(test_host_stop(&host), 0);
}

/* The inode of the socket listening on 127.0.0.1:port, from
 * /proc/net/tcp; 0 if none. */
static unsigned long listening_inode(int on_port)
{
    FILE *f = fopen("/proc/net/tcp", "r");
    char line[512];
    unsigned long inode = 0;

    cr_assert_not_null(f);
    while (!inode && fgets(line, sizeof(line), f)) {
        unsigned local_port, state;
        unsigned long node;
        if (sscanf(line,
                   " %*d: %*x:%x %*x:%*x %x %*x:%*x %*x:%*x %*x %*u %*u %lu",
                   &local_port, &state, &node) == 3 &&
            (int)local_port == on_port && state == 0x0A)
            inode = node;
    }
    fclose(f);
    return inode;
}

/* How many processes whose parent is `parent` hold socket `inode`, and
 * how many children there are at all (in *children). */
static int children_holding(pid_t parent, unsigned long inode, int *children)
{
    char want[64], path[300], target[128];
    struct dirent *proc;
    DIR *dir = opendir("/proc");
    int holding = 0;

    cr_assert_not_null(dir);
    snprintf(want, sizeof(want), "socket:[%lu]", inode);
    *children = 0;
    while ((proc = readdir(dir)) != NULL) {
        int pid = atoi(proc->d_name), ppid = 0;
        char stat[512];
        FILE *f;
        DIR *fds;
        struct dirent *fd;
        if (pid <= 0)
            continue;
        snprintf(path, sizeof(path), "/proc/%d/stat", pid);
        if (!(f = fopen(path, "r")))
            continue;
        if (fgets(stat, sizeof(stat), f)) {
            const char *after = strrchr(stat, ')');
            if (after)
                sscanf(after, ") %*c %d", &ppid);
        }
        fclose(f);
        if (ppid != parent)
            continue;
        (*children)++;
        snprintf(path, sizeof(path), "/proc/%d/fd", pid);
        if (!(fds = opendir(path)))
            continue;
        while ((fd = readdir(fds)) != NULL) {
            char link[400];
            ssize_t n;
            snprintf(link, sizeof(link), "/proc/%d/fd/%s", pid, fd->d_name);
            n = readlink(link, target, sizeof(target) - 1);
            if (n > 0) {
                target[n] = '\0';
                if (strcmp(target, want) == 0)
                    holding++;
            }
        }
        closedir(fds);
    }
    closedir(dir);
    return holding;
}

/* Needs the supervisor to call http_close_in_child(s->http) in each
 * child it forks (its owner enables this test with that call): until
 * then every worker, and anything a plugin forks, keeps the metrics
 * port, so the next wharfd cannot bind it while they live. */
Test(http_host, workers_do_not_hold_the_listening_socket)
{
    char cmd[600], body[256];
    unsigned long inode;
    int children = 0, holding, status = -1;

    test_redis_start(&host_redis, 0);
    port = test_free_port();
    test_host_manifest_opts(&host, &host_redis,
                            &(test_host_opts){.host_keys = "workers = 2\n"});
    snprintf(cmd, sizeof(cmd),
             "sed -i 's/^listen = off$/listen = 127.0.0.1:%d/' %s", port,
             host.manifest);
    cr_assert_eq(system(cmd), 0);
    test_host_start(&host);
    /* /readyz is 200 once a worker is up. */
    for (int i = 0; i < 3000 && status != 200; i++) {
        status = test_http_get(port, "/readyz", body, sizeof(body));
        if (status != 200)
            usleep(10 * 1000);
    }
    cr_assert_eq(status, 200, "wharfd never ready; see %s", host.log);
    inode = listening_inode(port);
    cr_assert(inode != 0, "nothing listens on %d", port);
    holding = children_holding(host.pid, inode, &children);
    cr_assert(children >= 2, "%d worker processes", children);
    cr_assert_eq(holding, 0, "%d of %d workers hold the metrics port", holding,
                 children);
    cr_assert_eq(test_host_stop(&host), 0);
}
