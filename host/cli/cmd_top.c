/* wharf top: a live terminal view of a wharfd's console figures
 * (GET /api/overview, docs/console.md): per type ready, running, delayed,
 * dead, pressure, the last minute's outcomes, wait and run times, the
 * worker slots and the hosts. Plain ANSI, redrawn in place and cut to the
 * terminal's size; q quits. Works over SSH and in any terminal; --once
 * prints one frame without escapes. It reads the console over HTTP and
 * needs no Redis. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sysexits.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "client_ids.h"

#define HTTP_TIMEOUT_MS 2000
#define BODY_MAX (4 << 20)

/* ---- a small JSON reader, for the console's own answers ---- */

typedef enum jtype {
    J_NULL,
    J_BOOL,
    J_NUMBER,
    J_STRING,
    J_ARRAY,
    J_OBJECT
} jtype;

typedef struct jvalue {
    jtype type;
    double number;
    bool boolean;
    char *string;         /* J_STRING, NUL-terminated UTF-8 */
    struct jvalue *items; /* J_ARRAY / J_OBJECT values */
    char **keys;          /* J_OBJECT */
    size_t n;
} jvalue;

typedef struct jparser {
    const char *s, *end;
    int depth;
} jparser;

static void json_free(jvalue *v)
{
    if (!v)
        return;
    for (size_t i = 0; i < v->n; i++) {
        json_free(&v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->string);
    memset(v, 0, sizeof(*v));
}

static void skip_space(jparser *p)
{
    while (p->s < p->end &&
           (*p->s == ' ' || *p->s == '\n' || *p->s == '\r' || *p->s == '\t'))
        p->s++;
}

static int put_utf8(char *out, unsigned cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

static int parse_hex4(const char *s, unsigned *out)
{
    *out = 0;
    for (int i = 0; i < 4; i++) {
        char ch = s[i];
        *out <<= 4;
        if (ch >= '0' && ch <= '9')
            *out |= (unsigned)(ch - '0');
        else if (ch >= 'a' && ch <= 'f')
            *out |= (unsigned)(ch - 'a' + 10);
        else if (ch >= 'A' && ch <= 'F')
            *out |= (unsigned)(ch - 'A' + 10);
        else
            return -1;
    }
    return 0;
}

/* A string at p->s (past its opening quote) into a malloc'd copy. */
static char *parse_string(jparser *p)
{
    size_t cap = 16, len = 0;
    char *out = malloc(cap);

    if (!out)
        return NULL;
    while (p->s < p->end && *p->s != '"') {
        char ch = *p->s++;
        if (len + 8 > cap) {
            char *more = realloc(out, cap *= 2);
            if (!more)
                goto bad;
            out = more;
        }
        if (ch != '\\') {
            out[len++] = ch;
            continue;
        }
        if (p->s >= p->end)
            goto bad;
        ch = *p->s++;
        switch (ch) {
        case 'n':
            out[len++] = '\n';
            break;
        case 't':
            out[len++] = '\t';
            break;
        case 'r':
            out[len++] = '\r';
            break;
        case 'b':
            out[len++] = '\b';
            break;
        case 'f':
            out[len++] = '\f';
            break;
        case 'u': {
            unsigned cp, lo;
            if (p->end - p->s < 4 || parse_hex4(p->s, &cp) != 0)
                goto bad;
            p->s += 4;
            if (cp >= 0xd800 && cp <= 0xdbff && p->end - p->s >= 6 &&
                p->s[0] == '\\' && p->s[1] == 'u' &&
                parse_hex4(p->s + 2, &lo) == 0 && lo >= 0xdc00 &&
                lo <= 0xdfff) {
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                p->s += 6;
            }
            len += (size_t)put_utf8(out + len, cp);
            break;
        }
        default:
            out[len++] = ch;
            break;
        }
    }
    if (p->s >= p->end)
        goto bad;
    p->s++;
    out[len] = '\0';
    return out;
bad:
    free(out);
    return NULL;
}

static int parse_value(jparser *p, jvalue *v);

/* An array or object at p->s (past its bracket). */
static int parse_items(jparser *p, jvalue *v, char close)
{
    size_t cap = 0;

    skip_space(p);
    if (p->s < p->end && *p->s == close) {
        p->s++;
        return 0;
    }
    while (p->s < p->end) {
        if (v->n == cap) {
            size_t more = cap ? cap * 2 : 8;
            jvalue *items = realloc(v->items, more * sizeof(*items));
            if (!items)
                return -1;
            v->items = items;
            if (close == '}') {
                char **keys = realloc(v->keys, more * sizeof(*keys));
                if (!keys)
                    return -1;
                v->keys = keys;
            }
            cap = more;
        }
        memset(&v->items[v->n], 0, sizeof(v->items[v->n]));
        if (close == '}') {
            skip_space(p);
            if (p->s >= p->end || *p->s != '"')
                return -1;
            p->s++;
            v->keys[v->n] = parse_string(p);
            if (!v->keys[v->n])
                return -1;
            skip_space(p);
            if (p->s >= p->end || *p->s != ':') {
                free(v->keys[v->n]);
                return -1;
            }
            p->s++;
        }
        v->n++;
        if (parse_value(p, &v->items[v->n - 1]) != 0)
            return -1;
        skip_space(p);
        if (p->s < p->end && *p->s == ',') {
            p->s++;
            continue;
        }
        if (p->s < p->end && *p->s == close) {
            p->s++;
            return 0;
        }
        return -1;
    }
    return -1;
}

static int parse_value(jparser *p, jvalue *v)
{
    char *end;

    skip_space(p);
    if (p->s >= p->end || ++p->depth > 64)
        return -1;
    switch (*p->s) {
    case '{':
        p->s++;
        v->type = J_OBJECT;
        return parse_items(p, v, '}');
    case '[':
        p->s++;
        v->type = J_ARRAY;
        return parse_items(p, v, ']');
    case '"':
        p->s++;
        v->type = J_STRING;
        v->string = parse_string(p);
        return v->string ? 0 : -1;
    case 't':
    case 'f':
    case 'n':
        if (p->end - p->s >= 4 && strncmp(p->s, "true", 4) == 0) {
            v->type = J_BOOL, v->boolean = true, p->s += 4;
        } else if (p->end - p->s >= 5 && strncmp(p->s, "false", 5) == 0) {
            v->type = J_BOOL, p->s += 5;
        } else if (p->end - p->s >= 4 && strncmp(p->s, "null", 4) == 0) {
            v->type = J_NULL, p->s += 4;
        } else {
            return -1;
        }
        p->depth--;
        return 0;
    default:
        v->type = J_NUMBER;
        v->number = strtod(p->s, &end);
        if (end == p->s || end > p->end)
            return -1;
        p->s = end;
        p->depth--;
        return 0;
    }
}

static const jvalue *jget(const jvalue *v, const char *key)
{
    if (!v || v->type != J_OBJECT)
        return NULL;
    for (size_t i = 0; i < v->n; i++)
        if (strcmp(v->keys[i], key) == 0)
            return &v->items[i];
    return NULL;
}

static double jnum(const jvalue *v, const char *key, double def)
{
    const jvalue *x = jget(v, key);
    return x && x->type == J_NUMBER ? x->number : def;
}

static const char *jstr(const jvalue *v, const char *key, const char *def)
{
    const jvalue *x = jget(v, key);
    return x && x->type == J_STRING ? x->string : def;
}

static bool jbool(const jvalue *v, const char *key)
{
    const jvalue *x = jget(v, key);
    return x && x->type == J_BOOL && x->boolean;
}

/* ---- HTTP ---- */

typedef struct target {
    char host[256];
    char port[16];
    char base[512]; /* path prefix, without a trailing slash */
} target;

/* Parses http://host[:port][/prefix]. 0, or -1 with why. */
static int parse_target(const char *url, target *t, char *err, size_t len)
{
    if (strlen(url) > 400) {
        snprintf(err, len, "the URL is too long");
        return -1;
    }
    const char *s = url, *slash, *colon;
    char shown[420]; /* url for messages, as client_quote shows it */
    size_t n;

    client_quote(url, shown, sizeof(shown));

    if (strncmp(s, "http://", 7) != 0) {
        snprintf(err, len, "'%s': expected http://HOST:PORT", shown);
        return -1;
    }
    s += 7;
    slash = strchr(s, '/');
    n = slash ? (size_t)(slash - s) : strlen(s);
    if (n == 0 || n >= sizeof(t->host)) {
        snprintf(err, len, "'%s': no host", shown);
        return -1;
    }
    if (s[0] == '[') { /* [v6]:port */
        const char *close = memchr(s, ']', n);
        if (!close) {
            snprintf(err, len, "'%s': missing ']'", shown);
            return -1;
        }
        snprintf(t->host, sizeof(t->host), "%.*s", (int)(close - s - 1), s + 1);
        colon = close + 1 < s + n && close[1] == ':' ? close + 1 : NULL;
    } else {
        colon = memchr(s, ':', n);
        snprintf(t->host, sizeof(t->host), "%.*s",
                 (int)(colon ? (size_t)(colon - s) : n), s);
    }
    snprintf(t->port, sizeof(t->port), "%.*s",
             colon ? (int)(s + n - colon - 1) : 2, colon ? colon + 1 : "80");
    snprintf(t->base, sizeof(t->base), "%s", slash ? slash : "");
    n = strlen(t->base);
    while (n > 0 && t->base[n - 1] == '/')
        t->base[--n] = '\0';
    return 0;
}

/* Waits for fd to be ready for events, up to the deadline. */
static int wait_fd(int fd, short events, int64_t deadline)
{
    struct timespec ts;
    int64_t now;
    struct pollfd pfd = {fd, events, 0};

    clock_gettime(CLOCK_MONOTONIC, &ts);
    now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    if (now >= deadline)
        return -1;
    return poll(&pfd, 1, (int)(deadline - now)) == 1 ? 0 : -1;
}

/* A connected socket to address a of t, or -1 with why in err. */
static int connect_one(const target *t, const struct addrinfo *a,
                       int64_t deadline, char *err, size_t errlen)
{
    int fd =
        socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int so = 0;
    socklen_t sl = sizeof(so);

    if (fd < 0 ||
        (connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS)) {
        snprintf(err, errlen, "connect %s:%s: %s", t->host, t->port,
                 strerror(errno));
        goto fail;
    }
    if (wait_fd(fd, POLLOUT, deadline) != 0) {
        snprintf(err, errlen, "connect %s:%s: timed out", t->host, t->port);
        goto fail;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &sl) != 0 || so != 0) {
        snprintf(err, errlen, "connect %s:%s: %s", t->host, t->port,
                 strerror(so ? so : errno));
        goto fail;
    }
    return fd;
fail:
    if (fd >= 0)
        close(fd);
    return -1;
}

/* GETs base + path; the body (malloc'd, NUL-terminated) in *body and the
 * status, or -1 with why in err. */
static int http_get(const target *t, const char *path, char **body, char *err,
                    size_t errlen)
{
    struct addrinfo hints, *found = NULL;
    struct timespec ts;
    int64_t deadline;
    char request[1024], *buf = NULL;
    size_t got = 0, cap = 65536;
    int fd = -1, status = -1, rc;
    bool v6;
    ssize_t n;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    deadline =
        (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + HTTP_TIMEOUT_MS;
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    if ((rc = getaddrinfo(t->host, t->port, &hints, &found)) != 0) {
        snprintf(err, errlen, "%s: %s", t->host, gai_strerror(rc));
        return -1;
    }
    /* Each address in turn ("localhost" may be ::1, then 127.0.0.1). */
    for (struct addrinfo *a = found; a && fd < 0; a = a->ai_next)
        fd = connect_one(t, a, deadline, err, errlen);
    if (fd < 0)
        goto out;
    /* An IPv6 address goes in brackets, as in the URL. */
    v6 = strchr(t->host, ':') != NULL;
    n = snprintf(request, sizeof(request),
                 "GET %s%s HTTP/1.0\r\nHost: %s%s%s:%s\r\nAccept: "
                 "application/json\r\nUser-Agent: wharf-top/%s\r\n\r\n",
                 t->base, path, v6 ? "[" : "", t->host, v6 ? "]" : "", t->port,
                 WHARF_VERSION);
    if (write(fd, request, (size_t)n) != n) {
        snprintf(err, errlen, "send: %s", strerror(errno));
        goto out;
    }
    if (!(buf = malloc(cap)))
        goto out;
    while (true) {
        if (got + 1 == cap) {
            char *more = cap < BODY_MAX ? realloc(buf, cap *= 2) : NULL;
            if (!more) {
                snprintf(err, errlen, "answer too large");
                goto out;
            }
            buf = more;
        }
        if (wait_fd(fd, POLLIN, deadline) != 0) {
            snprintf(err, errlen, "no answer within %d ms", HTTP_TIMEOUT_MS);
            goto out;
        }
        n = read(fd, buf + got, cap - 1 - got);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    buf[got] = '\0';
    if (sscanf(buf, "HTTP/%*s %d", &status) != 1) {
        snprintf(err, errlen, "not an HTTP answer");
        status = -1;
        goto out;
    }
    {
        char *start = strstr(buf, "\r\n\r\n");
        start = start ? start + 4 : buf + got;
        memmove(buf, start, strlen(start) + 1);
        *body = buf;
        buf = NULL;
    }
out:
    if (fd >= 0)
        close(fd);
    freeaddrinfo(found);
    free(buf);
    return status;
}

/* ---- the frame ---- */

typedef struct frame {
    char *s;
    size_t len, cap;
    int width;
} frame;

/* Appends one line, cut to the terminal's width, control bytes dropped
 * (nothing the server sends can move the cursor). */
static void line(frame *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void line(frame *f, const char *fmt, ...)
{
    char text[2048];
    va_list ap;
    int cols = 0;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (f->len + sizeof(text) + 8 > f->cap) {
        char *more = realloc(f->s, f->cap = f->cap * 2 + sizeof(text) + 8);
        if (!more)
            abort();
        f->s = more;
    }
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        if (*p < 0x20 || *p == 0x7f)
            continue;
        if ((*p & 0xc0) != 0x80 && f->width > 0 && cols++ >= f->width)
            break;
        f->s[f->len++] = (char)*p;
    }
    f->s[f->len++] = '\n';
}

/* One duration of a histogram summary, as "12ms", "1.5s" or ">10s". */
static void fmt_ms(char *buf, size_t len, const jvalue *h, const char *key)
{
    double v = jnum(h, key, -1);
    if (!h || jnum(h, "count", 0) == 0 || v < 0)
        snprintf(buf, len, "-");
    else if (v >= jnum(h, "top_ms", 1e300))
        snprintf(buf, len, ">%.0fs", v / 1000);
    else if (v < 10)
        snprintf(buf, len, "%.1fms", v);
    else if (v < 1000)
        snprintf(buf, len, "%.0fms", v);
    else
        snprintf(buf, len, "%.1fs", v / 1000);
}

/* "p50/p99" of a histogram summary, or "-". */
static void fmt_percentiles(char *buf, size_t len, const jvalue *h)
{
    char p50[16], p99[16];

    fmt_ms(p50, sizeof(p50), h, "p50");
    fmt_ms(p99, sizeof(p99), h, "p99");
    if (strcmp(p50, "-") == 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%s/%s", p50, p99);
}

static void fmt_duration(char *buf, size_t len, double ms)
{
    int s = ms < 0 ? 0 : ms > 8.64e10 ? 86400000 : (int)(ms / 1000);
    if (s < 60)
        snprintf(buf, len, "%ds", s);
    else if (s < 3600)
        snprintf(buf, len, "%dm%02ds", s / 60, s % 60);
    else
        snprintf(buf, len, "%dh%02dm", s / 3600, (s % 3600) / 60);
}

static const jvalue *jarray(const jvalue *v, const char *key)
{
    const jvalue *x = jget(v, key);
    return x && x->type == J_ARRAY ? x : NULL;
}

/* The widest string `key` of the objects of list, between lo and hi. */
static int column_width(const jvalue *list, const char *key, int lo, int hi)
{
    int width = lo;

    for (size_t i = 0; list && i < list->n; i++) {
        int n = (int)strlen(jstr(&list->items[i], key, ""));
        if (n > width)
            width = n;
    }
    return width < hi ? width : hi;
}

static void render_types(frame *f, const jvalue *types)
{
    int tw = column_width(types, "type", 4, 40);

    line(f, "%-*s %7s %7s %7s %7s %-5s %7s %8s %7s %13s %13s  %s", tw, "TYPE",
         "READY", "RUNNING", "DELAYED", "DEAD", "PRESS", "OK/1m", "RETRY/1m",
         "DEAD/1m", "WAIT p50/p99", "RUN p50/p99", "HOSTS");
    for (size_t i = 0; types && i < types->n; i++) {
        const jvalue *t = &types->items[i], *m = jget(t, "last_minute");
        const jvalue *hosts = jarray(t, "hosts");
        char wait[32], run[32], served[256] = "";
        size_t used = 0;
        for (size_t k = 0; hosts && k < hosts->n && used < sizeof(served); k++)
            if (hosts->items[k].type == J_STRING)
                used += (size_t)snprintf(served + used, sizeof(served) - used,
                                         "%s%s", k ? "," : "",
                                         hosts->items[k].string);
        fmt_percentiles(wait, sizeof(wait), jget(t, "wait_ms"));
        fmt_percentiles(run, sizeof(run), jget(t, "run_ms"));
        line(
            f,
            "%-*s %7.0f %7.0f %7.0f %7.0f %-5s %7.0f %8.0f %7.0f %13s %13s  %s",
            tw, jstr(t, "type", "?"), jnum(t, "ready", 0),
            jnum(t, "running", 0), jnum(t, "delayed", 0), jnum(t, "dead", 0),
            jbool(t, "pressure") ? "ON" : "off", jnum(m, "ok", 0),
            jnum(m, "retry", 0), jnum(m, "dead", 0), wait, run,
            served[0] ? served : "-");
    }
    if (!types || types->n == 0)
        line(f, "(no types served)");
}

static void render_slots(frame *f, const jvalue *slots)
{
    int ww = column_width(slots, "worker", 6, 60);

    line(f, "%-4s %-*s %8s %-9s %-36s %7s %7s %s", "SLOT", ww, "WORKER", "PID",
         "STATE", "TASK", "FOR", "UP", "RESTARTS");
    for (size_t i = 0; slots && i < slots->n; i++) {
        const jvalue *s = &slots->items[i], *last = jget(s, "last_restart");
        char task[256], run_for[32] = "-", up[32] = "-", restarts[128];
        char state[32];
        if (jget(s, "task"))
            snprintf(task, sizeof(task), "%s %s", jstr(s, "type", ""),
                     jstr(s, "task", ""));
        else
            snprintf(task, sizeof(task), "-");
        if (jget(s, "running_ms"))
            fmt_duration(run_for, sizeof(run_for), jnum(s, "running_ms", 0));
        if (jnum(s, "pid", 0) > 0)
            fmt_duration(up, sizeof(up), jnum(s, "up_ms", 0));
        snprintf(state, sizeof(state), "%s", jstr(s, "state", "?"));
        snprintf(restarts, sizeof(restarts), "%.0f%s%s%s%s%s",
                 jnum(s, "restarts", 0), last ? " (last: " : "",
                 last ? jstr(last, "reason", "") : "", last ? ", " : "",
                 last ? jstr(last, "how", "") : "", last ? ")" : "");
        line(f, "%-4.0f %-*s %8.0f %-9s %-36s %7s %7s %s", jnum(s, "slot", 0),
             ww, jstr(s, "worker", "?"), jnum(s, "pid", 0), state, task,
             run_for, up, restarts);
    }
}

static void render_hosts(frame *f, const jvalue *hosts)
{
    int hw = column_width(hosts, "name", 4, 60);

    line(f, "%-*s %7s %4s  %s", hw, "HOST", "WORKERS", "BUSY", "TYPES");
    for (size_t i = 0; hosts && i < hosts->n; i++) {
        const jvalue *h = &hosts->items[i];
        line(f, "%-*s %7s %4s  %s", hw, jstr(h, "name", "?"),
             jstr(h, "workers", "-"), jstr(h, "busy", "0"),
             jstr(h, "types", "-"));
    }
}

static void render(frame *f, const char *url, const jvalue *o)
{
    const jvalue *w = jget(o, "workers"), *r = jget(o, "restarts");
    char when[64];
    time_t now = (time_t)(jnum(o, "time_ms", 0) / 1000);
    struct tm tm;

    gmtime_r(&now, &tm);
    strftime(when, sizeof(when), "%H:%M:%S UTC", &tm);
    line(f, "wharf top  %s  host %s  wharf %s  redis %s  %s", url,
         jstr(o, "host", "?"), jstr(o, "version", "?"),
         jbool(o, "redis_up") ? "up" : "DOWN", when);
    line(f,
         "workers: %.0f running, %.0f idle, %.0f stopping, %.0f down   "
         "restarts: crash %.0f, timeout %.0f, exit %.0f, reload %.0f",
         jnum(w, "running", 0), jnum(w, "idle", 0), jnum(w, "stopping", 0),
         jnum(w, "down", 0), jnum(r, "crash", 0), jnum(r, "timeout", 0),
         jnum(r, "exit", 0), jnum(r, "reload", 0));
    line(f, "%s", "");
    render_types(f, jarray(o, "types"));
    line(f, "%s", "");
    render_slots(f, jarray(o, "slots"));
    line(f, "%s", "");
    render_hosts(f, jarray(o, "hosts"));
}

/* ---- the terminal ---- */

static volatile sig_atomic_t top_stop;

/* The terminal as found and as top sets it, for the stop handler. */
static struct termios term_saved, term_raw;
static volatile sig_atomic_t term_is_raw;

#define ENTER_SCREEN "\033[?1049h\033[?25l" /* own screen, no cursor */
#define LEAVE_SCREEN "\033[?25h\033[?1049l"

/* SIGWINCH only wakes the wait, so the next frame fits the new size. */
static void on_top_signal(int sig)
{
    if (sig != SIGWINCH)
        top_stop = 1;
}

/* Ctrl-Z: give the shell its terminal back as it was, stop, and take it
 * again when continued (the wait then wakes and redraws). Only
 * async-signal-safe calls. */
static void on_suspend(int sig)
{
    sigset_t tstp;
    struct sigaction sa;
    int saved_errno = errno;

    (void)sig;
    if (write(STDOUT_FILENO, LEAVE_SCREEN, sizeof(LEAVE_SCREEN) - 1) < 0) {
        /* nothing to do about it here */
    }
    if (term_is_raw)
        tcsetattr(STDIN_FILENO, TCSANOW, &term_saved);
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTSTP, &sa, NULL);
    sigemptyset(&tstp);
    sigaddset(&tstp, SIGTSTP);
    sigprocmask(SIG_UNBLOCK, &tstp, NULL);
    raise(SIGTSTP); /* stops here until SIGCONT */
    sigprocmask(SIG_BLOCK, &tstp, NULL);
    sa.sa_handler = on_suspend;
    sigaction(SIGTSTP, &sa, NULL);
    if (term_is_raw)
        tcsetattr(STDIN_FILENO, TCSANOW, &term_raw);
    if (write(STDOUT_FILENO, ENTER_SCREEN, sizeof(ENTER_SCREEN) - 1) < 0) {
        /* the next frame says the same */
    }
    errno = saved_errno;
}

static void terminal_size(int *cols, int *rows)
{
    struct winsize ws;

    *cols = *rows = 0;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0) {
        *cols = ws.ws_col;
        *rows = ws.ws_row;
    }
}

/* Draws f over the screen from its top-left corner, in place: each line
 * then clear to its end, nothing below kept, then a blank line and the
 * footer. Within rows lines (0: as many as f has): the frame is cut to
 * fit, the footer says so, and no newline follows the bottom row, so
 * the screen never scrolls. */
static void draw(const frame *f, int cols, int rows, const char *footer)
{
    int n = 0, shown = 0, room;
    char last[256];

    for (size_t i = 0; i < f->len; i++)
        n += f->s[i] == '\n';
    room = rows > 0 ? rows - 2 : n;
    fputs("\033[H", stdout);
    for (const char *s = f->s, *nl;
         s && shown < room &&
         (nl = memchr(s, '\n', (size_t)(f->s + f->len - s)));
         s = nl + 1, shown++) {
        fwrite(s, 1, (size_t)(nl - s), stdout);
        fputs("\033[K\r\n", stdout);
    }
    if (shown < n)
        snprintf(last, sizeof(last),
                 "%s - %d more lines below: a taller terminal shows them",
                 footer, n - shown);
    else
        snprintf(last, sizeof(last), "%s", footer);
    if (cols > 0 && strlen(last) > (size_t)cols)
        last[cols] = '\0';
    if (rows != 1)
        fputs("\033[K\r\n", stdout);
    fprintf(stdout, "%s\033[K\033[J", last);
}

enum { OPT_URL, OPT_INTERVAL, OPT_ONCE };

/* The flag table's check of --interval, where it stands. */
static int check_interval(cli *ctx, const char *value)
{
    int64_t ms;

    return cli_duration(ctx, "--interval", value, &ms);
}

static int run(cli *ctx, const cli_args *args)
{
    char url[600], err[1024], footer[128];
    int64_t interval_ms = 1000;
    bool once = args->flag[OPT_ONCE] != NULL, live, keys = false;
    struct sigaction sa;
    target t;
    int code = EX_OK;

    if (ctx->config && ctx->config->metrics_listen) {
        const char *listen = ctx->config->metrics_listen;
        /* A wildcard listener is reached on loopback. */
        if (strncmp(listen, "0.0.0.0:", 8) == 0)
            snprintf(url, sizeof(url), "http://127.0.0.1:%s", listen + 8);
        else if (strncmp(listen, "[::]:", 5) == 0)
            snprintf(url, sizeof(url), "http://[::1]:%s", listen + 5);
        else
            snprintf(url, sizeof(url), "http://%s", listen);
    } else {
        snprintf(url, sizeof(url), "http://127.0.0.1:9464");
    }
    if (args->flag[OPT_URL])
        snprintf(url, sizeof(url), "%s", args->flag[OPT_URL]);
    if (args->flag[OPT_INTERVAL])
        cli_duration(ctx, "--interval", args->flag[OPT_INTERVAL], &interval_ms);
    if (interval_ms < 100)
        interval_ms = 100;
    if (parse_target(url, &t, err, sizeof(err)) != 0)
        return cli_usage(ctx, "--url %s", err);

    live = !once && isatty(STDOUT_FILENO);
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_top_signal; /* no SA_RESTART: poll wakes */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGWINCH, &sa, NULL);
    if (live && isatty(STDIN_FILENO) &&
        tcgetattr(STDIN_FILENO, &term_saved) == 0) {
        term_raw = term_saved;
        term_raw.c_lflag &= (tcflag_t) ~(ICANON | ECHO);
        term_raw.c_cc[VMIN] = 0;
        term_raw.c_cc[VTIME] = 0;
        term_is_raw = keys = tcsetattr(STDIN_FILENO, TCSANOW, &term_raw) == 0;
    }
    if (live) {
        sa.sa_handler = on_suspend;
        sigaction(SIGTSTP, &sa, NULL);
        fputs(ENTER_SCREEN, stdout);
    }
    snprintf(footer, sizeof(footer), "q quit - refreshing every %.1fs",
             (double)interval_ms / 1000);

    while (!top_stop) {
        frame f = {NULL, 0, 0, 0};
        char *body = NULL;
        int status = http_get(&t, "/api/overview", &body, err, sizeof(err));
        int cols = 0, rows = 0;
        jvalue o;
        jparser p;

        if (live)
            terminal_size(&cols, &rows);
        f.width = cols;
        memset(&o, 0, sizeof(o));
        if (status == 200) {
            p.s = body;
            p.end = body + strlen(body);
            p.depth = 0;
            if (parse_value(&p, &o) != 0 || o.type != J_OBJECT) {
                status = -1;
                snprintf(err, sizeof(err),
                         "the answer is not the JSON of "
                         "/api/overview");
            }
        } else if (status > 0) {
            snprintf(err, sizeof(err), "HTTP %d from %s/api/overview", status,
                     url);
        }
        if (status == 200)
            render(&f, url, &o);
        else
            line(&f, "wharf top  %s  console unreachable: %s", url, err);
        json_free(&o);
        free(body);
        if (live)
            draw(&f, cols, rows, footer);
        else if (f.s)
            fwrite(f.s, 1, f.len, stdout);
        free(f.s);
        fflush(stdout);
        if (!live) {
            code = status == 200 ? EX_OK : EX_UNAVAILABLE;
            if (code != EX_OK)
                cli_fail(ctx, code, "%s", err);
            break;
        }
        {
            struct pollfd in = {STDIN_FILENO, POLLIN, 0};
            if (poll(&in, keys ? 1 : 0, (int)interval_ms) == 1) {
                char typed[32];
                ssize_t n = read(STDIN_FILENO, typed, sizeof(typed));
                /* A terminal that hung up answers at once for good:
                 * stop reading it rather than spin. */
                if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
                    keys = false;
                for (ssize_t k = 0; k < n; k++)
                    if (typed[k] == 'q' || typed[k] == 'Q' || typed[k] == 3)
                        top_stop = 1;
            }
        }
    }
    if (live) {
        sa.sa_handler = SIG_DFL;
        sigaction(SIGTSTP, &sa, NULL);
        fputs(LEAVE_SCREEN, stdout);
        fflush(stdout);
    }
    if (term_is_raw)
        tcsetattr(STDIN_FILENO, TCSANOW, &term_saved);
    return code;
}

const cli_command cmd_top_entry = {
    .name = "top",
    .usage = "[--url http://HOST:PORT] [--interval DUR] [--once]",
    .help = "A live terminal view of a wharfd's console figures: per type the\n"
            "queue counts, pressure, last minute's outcomes and wait and run\n"
            "percentiles, the worker slots and the hosts, redrawn in place;\n"
            "q quits, Ctrl-Z suspends.\n"
            "  --url URL       the wharfd ([metrics] listen of the manifest)\n"
            "  --interval DUR  how often to refresh (1s)\n"
            "  --once          print one view and exit\n"
            "Exit: 0; 69 the wharfd cannot be reached.\n",
    .flags = {[OPT_URL] = {"url", true},
              [OPT_INTERVAL] = {"interval", true, check_interval},
              [OPT_ONCE] = {"once", false}},
    .run = run,
};
