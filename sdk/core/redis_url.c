/* Redis addresses and connecting to them; see redis_url.h. */
#include "redis_url.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "endpoint.h"
#include "quote.h"

/* Copies n bytes of src into a dst of size len; -1 if it does not fit. */
static int copy_part(char *dst, size_t len, const char *src, size_t n)
{
    if (n >= len)
        return -1;
    memcpy(dst, src, n);
    dst[n] = '\0';
    return 0;
}

static int parse_number(const char *text, size_t n, long min, long max,
                        long *out)
{
    char buf[32];
    char *end;
    long v;

    if (n == 0 || n >= sizeof(buf))
        return -1;
    memcpy(buf, text, n);
    buf[n] = '\0';
    errno = 0;
    v = strtol(buf, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static int parse_unix(const char *text, redis_url *u, char *err, size_t errlen)
{
    u->kind = REDIS_URL_UNIX;
    const char *path = text + strlen("unix://");
    const char *query = strchr(path, '?');
    size_t n = query ? (size_t)(query - path) : strlen(path);
    long db;

    if (n == 0 || path[0] != '/') {
        snprintf(err, errlen,
                 "a unix socket URL needs an absolute path "
                 "(unix:///path/to/redis.sock[?db=N])");
        return -1;
    }
    if (copy_part(u->path, sizeof(u->path), path, n) != 0) {
        snprintf(err, errlen, "the socket path is too long");
        return -1;
    }
    if (query) {
        if (strncmp(query, "?db=", 4) != 0 ||
            parse_number(query + 4, strlen(query + 4), 0, INT_MAX, &db) != 0) {
            snprintf(err, errlen, "expected ?db=N after the socket path");
            return -1;
        }
        u->db = (int)db;
    }
    return 0;
}

static int hex_value(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* Copies n bytes of src into dst (of size len), decoding each %XX as RFC
 * 3986 says a userinfo is encoded (a password with '@', ':' or '/' must
 * be written so). 0, or -1 with why in err (`what` names the part). */
static int decode_part(char *dst, size_t len, const char *src, size_t n,
                       const char *what, char *err, size_t errlen)
{
    size_t out = 0;

    for (size_t i = 0; i < n; i++) {
        char ch = src[i];
        if (ch == '%') {
            if (n - i < 3 || hex_value(src[i + 1]) < 0 ||
                hex_value(src[i + 2]) < 0) {
                snprintf(err, errlen,
                         "bad percent-encoding in the %s: '%%' must be "
                         "followed by two hex digits (write '%%' as %%25)",
                         what);
                return -1;
            }
            ch = (char)(hex_value(src[i + 1]) * 16 + hex_value(src[i + 2]));
            if (ch == '\0') {
                snprintf(err, errlen, "the %s holds %%00, a NUL byte", what);
                return -1;
            }
            i += 2;
        }
        if (out + 1 >= len) {
            snprintf(err, errlen, "the %s is too long", what);
            return -1;
        }
        dst[out++] = ch;
    }
    dst[out] = '\0';
    return 0;
}

/* Parses "[user[:password]@]" at the start of *p and advances *p. 0, or
 * -1 with why in err. */
static int parse_userinfo(const char **p, redis_url *u, char *err,
                          size_t errlen)
{
    const char *at = strchr(*p, '@');
    const char *colon;
    const char *slash = strchr(*p, '/');

    if (!at || (slash && slash < at))
        return 0;
    colon = memchr(*p, ':', (size_t)(at - *p));
    if (colon) {
        if (decode_part(u->user, sizeof(u->user), *p, (size_t)(colon - *p),
                        "user", err, errlen) ||
            decode_part(u->password, sizeof(u->password), colon + 1,
                        (size_t)(at - colon - 1), "password", err, errlen))
            return -1;
    } else if (decode_part(u->password, sizeof(u->password), *p,
                           (size_t)(at - *p), "password", err, errlen)) {
        /* "redis://secret@host" is a password alone, as redis-cli takes it */
        return -1;
    }
    *p = at + 1;
    return 0;
}

/* Parses "/N" (the database) at path, if any. 0, or -1 with why in err. */
static int parse_db(const char *path, int *db, char *err, size_t errlen)
{
    long v;

    if (!path || path[0] == '\0' || path[1] == '\0')
        return 0;
    if (parse_number(path + 1, strlen(path + 1), 0, INT_MAX, &v) != 0) {
        snprintf(err, errlen, "bad database: expected a number after the '/'");
        return -1;
    }
    *db = (int)v;
    return 0;
}

static int parse_tcp(const char *text, redis_url *u, char *err, size_t errlen)
{
    const char *p = text + strlen("redis://");
    const char *path;

    if (parse_userinfo(&p, u, err, errlen) != 0)
        return -1;
    path = strchr(p, '/');
    if (endpoint_parse(p, path ? (size_t)(path - p) : strlen(p), 0, u->host,
                       &u->port, err, errlen) != 0)
        return -1;
    return parse_db(path, &u->db, err, errlen);
}

/* Parses the seed list "h1:p1,h2:p2" of text[0..n) into u->seeds, each
 * with default_port unless it names one; the first is u->host too. */
static int parse_seeds(const char *p, size_t n, int default_port, redis_url *u,
                       char *err, size_t errlen)
{
    const char *end = p + n;

    if (n == 0) {
        snprintf(err, errlen, "expected host:port[,host:port...]");
        return -1;
    }
    while (p <= end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        size_t len = comma ? (size_t)(comma - p) : (size_t)(end - p);
        redis_seed *seed;
        if (u->n_seeds == REDIS_URL_MAX_SEEDS) {
            snprintf(err, errlen, "more than %d addresses",
                     REDIS_URL_MAX_SEEDS);
            return -1;
        }
        seed = &u->seeds[u->n_seeds];
        seed->port = default_port;
        if (len == 0) {
            snprintf(err, errlen, "an empty address in the list");
            return -1;
        }
        if (endpoint_parse(p, len, 0, seed->host, &seed->port, err,
                           errlen) != 0)
            return -1;
        u->n_seeds++;
        if (!comma)
            break;
        p = comma + 1;
    }
    snprintf(u->host, sizeof(u->host), "%s", u->seeds[0].host);
    u->port = u->seeds[0].port;
    return 0;
}

/* "redis+cluster://[user[:password]@]h1:p1[,h2:p2...][/0]": any node of
 * the cluster will do as a seed; a cluster has database 0 only. */
static int parse_cluster(const char *text, redis_url *u, char *err,
                         size_t errlen)
{
    const char *p = text + strlen("redis+cluster://");
    const char *path;

    u->kind = REDIS_URL_CLUSTER;
    if (parse_userinfo(&p, u, err, errlen) != 0)
        return -1;
    path = strchr(p, '/');
    if (parse_seeds(p, path ? (size_t)(path - p) : strlen(p), 6379, u, err,
                    errlen) != 0 ||
        parse_db(path, &u->db, err, errlen) != 0)
        return -1;
    if (u->db != 0) {
        snprintf(err, errlen, "a Redis Cluster has database 0 only");
        return -1;
    }
    return 0;
}

/* "redis+sentinel://[user[:password]@]s1:p1[,s2:p2...]/MASTER[/db]": the
 * sentinels to ask (port 26379 unless given) and the name of the master
 * they watch; the user and password are the master's. */
static int parse_sentinel(const char *text, redis_url *u, char *err,
                          size_t errlen)
{
    const char *p = text + strlen("redis+sentinel://");
    const char *path, *name, *db;
    size_t len;

    u->kind = REDIS_URL_SENTINEL;
    if (parse_userinfo(&p, u, err, errlen) != 0)
        return -1;
    path = strchr(p, '/');
    if (parse_seeds(p, path ? (size_t)(path - p) : strlen(p), 26379, u, err,
                    errlen) != 0)
        return -1;
    name = path ? path + 1 : "";
    db = strchr(name, '/');
    len = db ? (size_t)(db - name) : strlen(name);
    if (len == 0) {
        snprintf(err, errlen,
                 "expected the master's name after the sentinels "
                 "(redis+sentinel://host:port[,host:port...]/MASTER[/db])");
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)name[i];
        if (!isalnum(ch) && ch != '.' && ch != '_' && ch != '-') {
            snprintf(err, errlen,
                     "bad master name: use letters, digits, '.', '_', '-'");
            return -1;
        }
    }
    if (copy_part(u->master, sizeof(u->master), name, len) != 0) {
        snprintf(err, errlen, "the master name is too long");
        return -1;
    }
    return parse_db(db, &u->db, err, errlen);
}

/* The query parameters: the TLS ones (rediss URLs only), then the
 * sentinels' credentials (sentinel URLs only), in the order messages list
 * them. */
static const char *const query_params[] = {
    "tls_ca",  "tls_cert",      "tls_key",          "tls_sni",
    "tls_verify", "sentinel_user", "sentinel_password"};
#define QUERY_PARAMS 7
#define TLS_PARAMS 5

/* Stores one query parameter (name n bytes, value v of vn bytes, still
 * percent-encoded) into q; seen marks those given so far. 0, or -1 with
 * why in err. */
static int set_query_param(redis_url *q, const char *n, size_t nn,
                           const char *v, size_t vn, bool seen[QUERY_PARAMS],
                           char *err, size_t errlen)
{
    char value[REDIS_URL_PASSWORD_MAX], shown[64];
    tls_options *o = &q->tls;
    size_t i;

    for (i = 0; i < QUERY_PARAMS; i++)
        if (strlen(query_params[i]) == nn &&
            memcmp(query_params[i], n, nn) == 0)
            break;
    if (i == QUERY_PARAMS) {
        char name[64];

        snprintf(name, sizeof(name), "%.*s", (int)(nn < 60 ? nn : 60), n);
        quote_text(name, shown, sizeof(shown));
        snprintf(err, errlen,
                 "unknown query parameter '%s' (known: tls_ca, tls_cert, "
                 "tls_key, tls_sni, tls_verify, sentinel_user, "
                 "sentinel_password)",
                 shown);
        return -1;
    }
    if (seen[i]) {
        snprintf(err, errlen, "%s is given twice", query_params[i]);
        return -1;
    }
    seen[i] = true;
    if (decode_part(value, i < TLS_PARAMS ? TLS_PATH_MAX : sizeof(value), v,
                    vn, query_params[i], err, errlen) != 0)
        return -1;
    if (i == 4) {
        if (strcmp(value, "yes") == 0 || strcmp(value, "true") == 0 ||
            strcmp(value, "1") == 0)
            o->no_verify = false;
        else if (strcmp(value, "no") == 0 || strcmp(value, "false") == 0 ||
                 strcmp(value, "0") == 0)
            o->no_verify = true;
        else {
            snprintf(err, errlen, "tls_verify: expected yes or no");
            return -1;
        }
        return 0;
    }
    if (value[0] == '\0') {
        snprintf(err, errlen, "%s is empty", query_params[i]);
        return -1;
    }
    if (i == 5)
        return copy_part(q->sentinel_user, sizeof(q->sentinel_user), value,
                         strlen(value)) == 0
                   ? 0
                   : (snprintf(err, errlen, "sentinel_user is too long"), -1);
    if (i == 6) {
        snprintf(q->sentinel_password, sizeof(q->sentinel_password), "%s",
                 value);
        memset(value, 0, sizeof(value));
        return 0;
    }
    snprintf(i == 0   ? o->ca
             : i == 1 ? o->cert
             : i == 2 ? o->key
                      : o->sni,
             i == 3 ? sizeof(o->sni) : TLS_PATH_MAX, "%s", value);
    return 0;
}

/* Parses a URL's query ("tls_ca=...&tls_verify=no") into q; *tls_given
 * says whether a TLS parameter was among them. 0, or -1 with why in err. */
static int parse_query(const char *query, redis_url *q, bool *tls_given,
                       char *err, size_t errlen)
{
    bool seen[QUERY_PARAMS] = {false};

    while (*query) {
        size_t len = strcspn(query, "&");
        const char *eq = memchr(query, '=', len);

        if (!eq) {
            snprintf(err, errlen,
                     "expected name=value in the query (tls_ca=/path/ca.pem)");
            return -1;
        }
        if (set_query_param(q, query, (size_t)(eq - query), eq + 1,
                            len - (size_t)(eq + 1 - query), seen, err,
                            errlen) != 0)
            return -1;
        query += len;
        if (*query == '&')
            query++;
    }
    *tls_given = false;
    for (size_t i = 0; i < TLS_PARAMS; i++)
        *tls_given = *tls_given || seen[i];
    if (q->tls.key[0] && !q->tls.cert[0]) {
        snprintf(err, errlen, "tls_key needs tls_cert");
        return -1;
    }
    return 0;
}

/* A URL with a query, or a rediss one (tls): the query parsed, and the
 * rest parsed as the same form without it ("rediss+cluster://" as
 * "redis+cluster://"). */
static int parse_with_query(const char *text, bool tls, redis_url *u,
                            char *err, size_t errlen)
{
    char plain[2048];
    const char *query = strchr(text, '?');
    size_t n = query ? (size_t)(query - text) : strlen(text);
    bool tls_given = false;
    redis_url q;
    int rc = -1;

    memset(&q, 0, sizeof(q));
    q.tls.enabled = tls;
    if (n >= sizeof(plain)) {
        snprintf(err, errlen, "the URL is too long");
        return -1;
    }
    /* "rediss" less its second s. */
    if (tls)
        snprintf(plain, sizeof(plain), "redis%.*s", (int)(n - 6), text + 6);
    else
        snprintf(plain, sizeof(plain), "%.*s", (int)n, text);
    if (query && parse_query(query + 1, &q, &tls_given, err, errlen) != 0)
        goto out;
    if (tls_given && !tls) {
        snprintf(err, errlen,
                 "query parameters tls_* need rediss://, a TLS address");
        goto out;
    }
    if (redis_url_parse(plain, u, err, errlen) != 0)
        goto out;
    if ((q.sentinel_user[0] || q.sentinel_password[0]) &&
        u->kind != REDIS_URL_SENTINEL) {
        snprintf(err, errlen,
                 "sentinel_user and sentinel_password are for "
                 "redis+sentinel:// (or rediss+sentinel://) only");
        goto out;
    }
    u->tls = q.tls;
    memcpy(u->sentinel_user, q.sentinel_user, sizeof(u->sentinel_user));
    memcpy(u->sentinel_password, q.sentinel_password,
           sizeof(u->sentinel_password));
    rc = 0;
out:
    memset(&q, 0, sizeof(q));
    return rc;
}

int redis_url_parse(const char *text, redis_url *out, char *err, size_t errlen)
{
    redis_url u;
    int rc;

    memset(&u, 0, sizeof(u));
    u.port = 6379;
    if (strncmp(text, "rediss://", 9) == 0 ||
        strncmp(text, "rediss+cluster://", 17) == 0 ||
        strncmp(text, "rediss+sentinel://", 18) == 0 ||
        (strchr(text, '?') && strncmp(text, "unix://", 7) != 0)) {
        rc = parse_with_query(text, strncmp(text, "rediss", 6) == 0, &u, err,
                              errlen);
        if (rc == 0)
            *out = u;
        memset(&u, 0, sizeof(u));
        return rc;
    }
    if (strncmp(text, "redis://", 8) == 0)
        rc = parse_tcp(text, &u, err, errlen);
    else if (strncmp(text, "unix://", 7) == 0)
        rc = parse_unix(text, &u, err, errlen);
    else if (strncmp(text, "redis+cluster://", 16) == 0)
        rc = parse_cluster(text, &u, err, errlen);
    else if (strncmp(text, "redis+sentinel://", 17) == 0)
        rc = parse_sentinel(text, &u, err, errlen);
    else {
        snprintf(err, errlen,
                 "expected redis://[user[:password]@]host[:port][/db], "
                 "unix:///absolute/path, redis+cluster://host:port[,...] or "
                 "redis+sentinel://host:port[,...]/MASTER (rediss for TLS)");
        rc = -1;
    }
    if (rc == 0)
        *out = u;
    return rc;
}

int redis_url_append_param(char *url, size_t len, const char *name,
                           const char *value)
{
    static const char plain[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopq"
                                "rstuvwxyz0123456789/._-~";
    size_t start = strlen(url), used = start;
    int n = snprintf(url + used, len > used ? len - used : 0, "%c%s=",
                     strchr(url, '?') ? '&' : '?', name);

    if (n < 0 || (size_t)n >= len - used)
        goto full;
    used += (size_t)n;
    for (const char *v = value; *v; v++) {
        n = snprintf(url + used, len - used,
                     strchr(plain, *v) ? "%c" : "%%%02X", (unsigned char)*v);
        if (n < 0 || (size_t)n >= len - used)
            goto full;
        used += (size_t)n;
    }
    return 0;
full:
    url[start] = '\0';
    return -1;
}

void redis_url_redact(const char *text, char *buf, size_t len)
{
    static const char secret_param[] = "sentinel_password=";
    const char *scheme = strstr(text, "://");
    const char *start = scheme ? scheme + 3 : text;
    const char *query = strchr(start, '?');
    const char *at, *colon, *p;
    size_t used = 0, keep;
    /* Each "***" replaces a part at least as long as the "@" or
     * "sentinel_password=" beside it, less 3: twice the text is room. */
    char *joined = malloc(2 * strlen(text) + 8);

    if (!joined) {
        quote_text("(a Redis URL)", buf, len);
        return;
    }
    /* A URL that did not parse may hold '@' or ':' anywhere: everything
     * between the user name and the last '@' before the query is taken
     * for the password, so a secret is hidden even where the parser gave
     * up. */
    at = NULL;
    for (p = start; *p && (!query || p < query); p++)
        if (*p == '@')
            at = p;
    if (at) {
        colon = memchr(start, ':', (size_t)(at - start));
        keep = colon ? (size_t)(colon + 1 - text) : (size_t)(start - text);
        memcpy(joined, text, keep);
        used = keep;
        memcpy(joined + used, "***", 3);
        used += 3;
        p = at;
    } else {
        p = text;
    }
    /* And the sentinels' password in the query. */
    while (*p) {
        if (p > text && (p[-1] == '?' || p[-1] == '&') &&
            strncmp(p, secret_param, strlen(secret_param)) == 0) {
            memcpy(joined + used, secret_param, strlen(secret_param));
            used += strlen(secret_param);
            memcpy(joined + used, "***", 3);
            used += 3;
            p += strlen(secret_param);
            p += strcspn(p, "&");
            continue;
        }
        joined[used++] = *p++;
    }
    joined[used] = '\0';
    quote_text(joined, buf, len);
    memset(joined, 0, used);
    free(joined);
}

/* Appends "host:port" (brackets around an IPv6 address) to buf. */
static size_t describe_address(char *buf, size_t len, size_t used,
                               const char *host, int port)
{
    int n =
        endpoint_format(buf + used, used < len ? len - used : 0, host, port);
    return used + (n > 0 ? (size_t)n : 0);
}

void redis_url_describe(const redis_url *url, char *buf, size_t len)
{
    size_t used;

    if (url->kind == REDIS_URL_CLUSTER || url->kind == REDIS_URL_SENTINEL) {
        used = (size_t)snprintf(
            buf, len, "%s%s%s", url->tls.enabled ? "rediss" : "redis",
            url->kind == REDIS_URL_CLUSTER ? "+cluster" : "+sentinel", "://");
        for (size_t i = 0; i < url->n_seeds && used < len; i++) {
            if (i > 0)
                used += (size_t)snprintf(buf + used, len - used, ",");
            if (used < len)
                used = describe_address(buf, len, used, url->seeds[i].host,
                                        url->seeds[i].port);
        }
        if (url->kind == REDIS_URL_SENTINEL && used < len)
            snprintf(buf + used, len - used, "/%s/%d", url->master, url->db);
        return;
    }
    if (url->path[0]) {
        snprintf(buf, len, "unix://%s", url->path);
        return;
    }
    used = (size_t)snprintf(buf, len, "%s",
                            url->tls.enabled ? "rediss://" : "redis://");
    used = describe_address(buf, len, used, url->host, url->port);
    if (used < len)
        snprintf(buf + used, len - used, "/%d", url->db);
}

/* The words of an authentication failure's message (redis_url_auth_refused
 * reads them back). They follow the address, which holds no ": ". */
#define AUTH_REQUIRED ": authentication required: "
#define AUTH_FAILED ": authentication failed: "

/* Writes into err what an error reply `text` to the first command on a
 * connection to `where` means, and returns its kind: AUTH for a refusal of
 * credentials, with one line that says what to change
 * (url_can_hold_password: the address is redis://, so the URL can carry
 * the password), else REPLY. */
static error_kind explain_error(const char *where, const char *what,
                                const char *text, int url_can_hold_password,
                                char *err, size_t errlen)
{
    const char *set_it = url_can_hold_password ? "set a password in the URL "
                                                 "(redis://:PASSWORD@host) or "
                                                 "WHARF_REDIS_PASSWORD"
                                               : "set WHARF_REDIS_PASSWORD";

    /* Redis's own words: an error reply carries no code but its text. */
    if (strncmp(text, "NOAUTH", 6) == 0 ||
        strstr(text, "unauthenticated") != NULL)
        snprintf(err, errlen, "%s" AUTH_REQUIRED "%s", where, set_it);
    else if (strncmp(text, "WRONGPASS", 9) == 0 ||
             strncmp(text, "ERR invalid password", 20) == 0 ||
             strncmp(text, "ERR invalid username-password", 29) == 0)
        snprintf(err, errlen,
                 "%s" AUTH_FAILED "wrong user or password (WRONGPASS); fix "
                 "it in the URL or WHARF_REDIS_PASSWORD",
                 where);
    else if (strncmp(text, "ERR AUTH", 8) == 0 &&
             strstr(text, "without any password configured") != NULL)
        snprintf(err, errlen,
                 "%s" AUTH_FAILED "a password was given but this Redis has "
                 "none (no requirepass); remove it from the URL and "
                 "WHARF_REDIS_PASSWORD",
                 where);
    else {
        snprintf(err, errlen, "%s: %s: %s", where, what, text);
        return ERROR_KIND_REPLY;
    }
    return ERROR_KIND_AUTH;
}

void redis_url_io_error(const redisContext *c, int saved_errno, int timeout_ms,
                        char *buf, size_t len)
{
    /* hiredis reports a read or write past the socket's timeout as
     * strerror(EAGAIN), "Resource temporarily unavailable", which says
     * nothing of what happened. */
    if (c->err == REDIS_ERR_IO &&
        (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK) &&
        timeout_ms > 0) {
        if (timeout_ms % 1000 == 0)
            snprintf(buf, len, "Redis did not answer in %d s",
                     timeout_ms / 1000);
        else
            snprintf(buf, len, "Redis did not answer in %d ms", timeout_ms);
        return;
    }
    snprintf(buf, len, "%s", c->errstr[0] ? c->errstr : "connection lost");
}

/* Checks the reply of a command that opens a connection (AUTH, SELECT,
 * PING), sent with timeout_ms; saved_errno is errno right after it.
 * ERROR_KIND_NONE, or the failure's kind (UNAVAILABLE for no reply, AUTH,
 * REPLY) with what it means in err. Frees reply. */
static error_kind expect_ok(redisContext *c, redisReply *reply,
                            int saved_errno, int timeout_ms, const char *what,
                            const redis_url *url, const char *where, char *err,
                            size_t errlen)
{
    char why[160];
    error_kind kind = ERROR_KIND_NONE;

    if (!reply && tls_failed(c)) {
        /* The server's alert after the handshake: most often a client
         * certificate it wants and did not get, or refuses. */
        snprintf(err, errlen, "%s: %s: %s", where, what, c->errstr);
        kind = ERROR_KIND_TLS;
    } else if (!reply && !url->tls.enabled && !url->path[0] &&
               (c->err == REDIS_ERR_EOF ||
                (c->err == REDIS_ERR_IO && saved_errno == ECONNRESET))) {
        /* A TLS port drops a plain client's first bytes at once, where a
         * plain Redis always answers, even an error. */
        snprintf(err, errlen,
                 "%s: %s: %s (is this a TLS port? use rediss://)", where,
                 what, c->errstr);
        kind = ERROR_KIND_TLS;
    } else if (!reply) {
        redis_url_io_error(c, saved_errno, timeout_ms, why, sizeof(why));
        snprintf(err, errlen, "%s: %s: %s", where, what, why);
        kind = ERROR_KIND_UNAVAILABLE;
    } else if (reply->type == REDIS_REPLY_ERROR)
        kind = explain_error(where, what, reply->str, url->path[0] == '\0',
                             err, errlen);
    freeReplyObject(reply);
    return kind;
}

int redis_url_auth_refused(const char *err)
{
    return err && (strstr(err, AUTH_REQUIRED) || strstr(err, AUTH_FAILED));
}

void redis_url_explain(const redis_url *url, const char *what,
                       const char *reply_text, char *err, size_t errlen)
{
    char where[REDIS_URL_TEXT_MAX];

    redis_url_describe(url, where, sizeof(where));
    explain_error(where, what, reply_text, url->path[0] == '\0', err, errlen);
}

/* Error replies that mean "this Redis cannot serve now", not "you asked
 * for something wrong". */
static int unavailable_error(const char *text)
{
    /* MOVED and ASK reach here only where a command was not sent through
     * a pipeline (the CLI's operator commands): a slot on the move. */
    static const char *const codes[] = {"LOADING",  "BUSY",     "MASTERDOWN",
                                        "TRYAGAIN", "READONLY", "CLUSTERDOWN",
                                        "MOVED",    "ASK"};

    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        size_t n = strlen(codes[i]);
        if (strncmp(text, codes[i], n) == 0 &&
            (text[n] == ' ' || text[n] == '\0'))
            return 1;
    }
    return 0;
}

error_kind redis_url_reply_error(const redis_url *url, const redisReply *reply,
                                 const char *lost, const char *what, char *err,
                                 size_t errlen)
{
    char where[300], why[600];

    if (reply && reply->type != REDIS_REPLY_ERROR)
        return ERROR_KIND_NONE;
    redis_url_describe(url, where, sizeof(where));
    if (!reply) {
        /* The pipeline's message names the node; a one-node one does not
         * need the address twice. (A copy: lost may be err.) */
        snprintf(why, sizeof(why), "%s",
                 lost && lost[0] ? lost : "connection lost");
        snprintf(err, errlen, "%s: %s: %s", what, where, why);
        return ERROR_KIND_UNAVAILABLE;
    }
    if (strncmp(reply->str, "OOM ", 4) == 0) {
        /* The raw text names a line of our script; what matters is that
         * Redis refused the first write, so the command wrote nothing. */
        snprintf(err, errlen, "%s: Redis is out of memory (maxmemory reached)",
                 where);
        return ERROR_KIND_FULL;
    }
    if (strncmp(reply->str, "NOAUTH", 6) == 0 ||
        strncmp(reply->str, "WRONGPASS", 9) == 0) {
        redis_url_explain(url, what, reply->str, err, errlen);
        return ERROR_KIND_AUTH;
    }
    snprintf(err, errlen, "%s: redis answered: %s", what, reply->str);
    return unavailable_error(reply->str) ? ERROR_KIND_UNAVAILABLE
                                         : ERROR_KIND_REPLY;
}

int redis_url_close_on_exec(const redisContext *c)
{
    int flags = fcntl(c->fd, F_GETFD);

    if (flags < 0 || fcntl(c->fd, F_SETFD, flags | FD_CLOEXEC) < 0)
        return -1;
    return 0;
}

redisContext *redis_url_connect(const redis_url *url, const char *password,
                                int timeout_ms, char *err, size_t errlen)
{
    return redis_url_open(url, password, timeout_ms, NULL, err, errlen);
}

/* Connects to the unix socket path, or to host:port (over TLS as url
 * says), close-on-exec and with the timeout set; nothing sent. NULL with
 * "where: why" in err and *why_kind set. */
static redisContext *dial(const redis_url *url, const char *path,
                          const char *host, int port, int timeout_ms,
                          const char *where, error_kind *why_kind, char *err,
                          size_t errlen)
{
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    char why[300];
    redisContext *c;

    *why_kind = ERROR_KIND_UNAVAILABLE;
    if (path[0])
        c = timeout_ms > 0 ? redisConnectUnixWithTimeout(path, tv)
                           : redisConnectUnix(path);
    else
        c = timeout_ms > 0 ? redisConnectWithTimeout(host, port, tv)
                           : redisConnect(host, port);
    if (!c) {
        snprintf(err, errlen, "%s: out of memory", where);
        *why_kind = ERROR_KIND_NOMEM;
        return NULL;
    }
    if (c->err) {
        snprintf(err, errlen, "%s: %s", where, c->errstr);
        goto fail;
    }
    /* A program a plugin starts with exec must not inherit our Redis
     * connection (it would hold it open past our end, and could write to
     * it). hiredis 0.14 opens its socket without SOCK_CLOEXEC, so the flag
     * is set here, before any command. */
    if (redis_url_close_on_exec(c) != 0) {
        snprintf(err, errlen, "%s: cannot set close-on-exec: %s", where,
                 strerror(errno));
        goto fail;
    }
    if (timeout_ms > 0 && redisSetTimeout(c, tv) != REDIS_OK) {
        snprintf(err, errlen, "%s: cannot set timeout", where);
        goto fail;
    }
    if (url->tls.enabled && !path[0] &&
        tls_start(c, &url->tls, host, why, sizeof(why)) != 0) {
        snprintf(err, errlen, "%s: %s", where, why);
        *why_kind = ERROR_KIND_TLS;
        goto fail;
    }
    return c;
fail:
    tls_free(c);
    return NULL;
}

redisContext *redis_url_dial(const redis_url *url, const char *host, int port,
                             int timeout_ms, error_kind *kind, char *err,
                             size_t errlen)
{
    char where[ENDPOINT_HOST_MAX + 16];
    error_kind why;
    redisContext *c;

    endpoint_format(where, sizeof(where), host, port);
    c = dial(url, "", host, port, timeout_ms, where, &why, err, errlen);
    if (!c && kind)
        *kind = why;
    return c;
}

redisContext *redis_url_open(const redis_url *url, const char *password,
                             int timeout_ms, error_kind *kind, char *err,
                             size_t errlen)
{
    error_kind why = ERROR_KIND_UNAVAILABLE;
    redisReply *r;
    char where[REDIS_URL_TEXT_MAX];
    redisContext *c;
    const char *pass = password ? password : url->password;

    redis_url_describe(url, where, sizeof(where));
    c = dial(url, url->path, url->host, url->port, timeout_ms, where, &why,
             err, errlen);
    if (!c) {
        if (kind)
            *kind = why;
        return NULL;
    }
    if (pass && pass[0]) {
        r = url->user[0] ? tls_command(c, "AUTH %s %s", url->user, pass)
                         : tls_command(c, "AUTH %s", pass);
        if ((why = expect_ok(c, r, errno, timeout_ms, "AUTH", url, where,
                             err, errlen)) != ERROR_KIND_NONE)
            goto fail;
    }
    if (url->db != 0) {
        r = tls_command(c, "SELECT %d", url->db);
        if ((why = expect_ok(c, r, errno, timeout_ms, "SELECT", url, where,
                             err, errlen)) != ERROR_KIND_NONE)
            goto fail;
    } else if (!(pass && pass[0])) {
        /* A Redis that wants a password answers the first command with
         * NOAUTH, or drops a long one as a "Protocol error": ask it now,
         * so the caller hears "authentication required" at connect. */
        r = tls_command(c, "PING");
        if ((why = expect_ok(c, r, errno, timeout_ms, "PING", url, where,
                             err, errlen)) != ERROR_KIND_NONE)
            goto fail;
    }
    return c;
fail:
    if (kind)
        *kind = why;
    tls_free(c);
    return NULL;
}
