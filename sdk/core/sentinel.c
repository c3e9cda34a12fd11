/* Finding the master through Redis Sentinel; see sentinel.h. */
#include "sentinel.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "tls.h"

/* The address list for messages (redis_url_describe), and one sentinel's
 * reason. */
#define SENTINEL_WHERE_MAX REDIS_URL_TEXT_MAX
#define SENTINEL_WHY_MAX 400

/* True if an error reply to a sentinel means it wants credentials we did
 * not give, or refuses ours. */
static bool auth_error(const redisReply *r)
{
    return r && r->type == REDIS_REPLY_ERROR &&
           (strncmp(r->str, "NOAUTH", 6) == 0 ||
            strncmp(r->str, "WRONGPASS", 9) == 0 ||
            strncmp(r->str, "ERR invalid password", 20) == 0);
}

redisContext *sentinel_open(const redis_url *url, const redis_seed *s,
                            int timeout_ms, bool *refused, char *err,
                            size_t errlen)
{
    redisContext *c =
        redis_url_dial(url, s->host, s->port, timeout_ms, NULL, err, errlen);
    redisReply *r;

    if (refused)
        *refused = false;
    if (!c || !url->sentinel_password[0])
        return c;
    /* The sentinels' own credentials (requirepass or an ACL user of the
     * sentinel), never the master's. */
    r = url->sentinel_user[0]
            ? tls_command(c, "AUTH %s %s", url->sentinel_user,
                          url->sentinel_password)
            : tls_command(c, "AUTH %s", url->sentinel_password);
    if (r && r->type != REDIS_REPLY_ERROR) {
        freeReplyObject(r);
        return c;
    }
    if (auth_error(r) || (r && strncmp(r->str, "ERR AUTH", 8) == 0)) {
        snprintf(err, errlen,
                 "%s:%d: the sentinel refused sentinel_user / "
                 "sentinel_password: %.200s",
                 s->host, s->port, r->str);
        if (refused)
            *refused = true;
    } else {
        snprintf(err, errlen, "%s:%d: AUTH: %.200s", s->host, s->port,
                 r ? r->str : c->errstr);
    }
    freeReplyObject(r);
    tls_free(c);
    return NULL;
}

/* True if r is get-master-addr-by-name's [host, port]. */
static bool is_address(const redisReply *r)
{
    return r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
           r->element[0]->type == REDIS_REPLY_STRING &&
           r->element[1]->type == REDIS_REPLY_STRING;
}

int sentinel_master(const redis_url *url, int timeout_ms, char *host,
                    size_t hostlen, int *port, error_kind *kind, char *err,
                    size_t errlen)
{
    size_t answered = 0, unknown = 0, refused = 0, auth_refused = 0;
    char where[SENTINEL_WHERE_MAX];
    char last[SENTINEL_WHY_MAX] = "no sentinel given";

    redis_url_describe(url, where, sizeof(where));
    for (size_t i = 0; i < url->n_seeds; i++) {
        const redis_seed *s = &url->seeds[i];
        bool auth = false;
        redisContext *c =
            sentinel_open(url, s, timeout_ms, &auth, last, sizeof(last));
        redisReply *r = NULL;

        if (!c) {
            refused++;
            auth_refused += auth;
            continue;
        }
        r = tls_command(c, "SENTINEL get-master-addr-by-name %s", url->master);
        if (!r) {
            refused++;
            snprintf(last, sizeof(last), "%s:%d: %s", s->host, s->port,
                     c->errstr);
        } else if (auth_error(r)) {
            refused++;
            auth_refused++;
            snprintf(last, sizeof(last),
                     "%s:%d: the sentinel wants a password: set "
                     "sentinel_password (and sentinel_user)",
                     s->host, s->port);
        } else if (r->type == REDIS_REPLY_ERROR) {
            /* A plain Redis says "unknown command": a wrong port. */
            snprintf(last, sizeof(last), "%s:%d: %s (is it a sentinel?)",
                     s->host, s->port, r->str);
        } else if (r->type == REDIS_REPLY_NIL) {
            answered++;
            unknown++;
        } else if (is_address(r) && r->element[0]->len < hostlen) {
            int p = atoi(r->element[1]->str);
            answered++;
            if (p > 0 && p <= 65535) {
                memcpy(host, r->element[0]->str, r->element[0]->len + 1);
                *port = p;
                freeReplyObject(r);
                tls_free(c);
                return 0;
            }
            snprintf(last, sizeof(last), "%s:%d: names no valid address",
                     s->host, s->port);
        } else {
            snprintf(last, sizeof(last), "%s:%d: unexpected reply", s->host,
                     s->port);
        }
        freeReplyObject(r);
        tls_free(c);
    }
    if (answered > 0 && unknown == answered) {
        snprintf(err, errlen,
                 "%s: no sentinel of %zu that answered knows a master named "
                 "'%s' (see SENTINEL MASTERS)",
                 where, answered, url->master);
        if (kind)
            *kind = ERROR_KIND_SETUP;
        return -2;
    }
    if (auth_refused > 0 && auth_refused == refused && answered == 0) {
        /* Every sentinel that answered refused us: retrying cannot fix
         * it. */
        snprintf(err, errlen, "%s: authentication failed: %s", where, last);
        if (kind)
            *kind = ERROR_KIND_AUTH;
        return -2;
    }
    if (kind)
        *kind = ERROR_KIND_UNAVAILABLE;
    if (refused == url->n_seeds)
        snprintf(err, errlen, "%s: no sentinel answered (tried %zu): %s", where,
                 url->n_seeds, last);
    else
        snprintf(err, errlen,
                 "%s: no sentinel names master '%s' (tried %zu): %s", where,
                 url->master, url->n_seeds, last);
    return -1;
}

/* The value of field name in r, a RESP2 map (name, value, ...), or
 * NULL. */
static const redisReply *field(const redisReply *r, const char *name)
{
    if (r->type != REDIS_REPLY_ARRAY)
        return NULL;
    for (size_t i = 0; i + 1 < r->elements; i += 2)
        if (r->element[i]->type == REDIS_REPLY_STRING &&
            r->element[i + 1]->type == REDIS_REPLY_STRING &&
            strcmp(r->element[i]->str, name) == 0)
            return r->element[i + 1];
    return NULL;
}

/* Adds host:port (len bytes of host) to out unless there, or it is
 * not_host:not_port, or out is full. */
static void add_candidate(sentinel_replica *out, size_t max, size_t *n,
                          const char *host, size_t len, int port,
                          const char *not_host, int not_port)
{
    if (*n == max || len >= sizeof(out->host) || port <= 0 || port > 65535 ||
        (port == not_port && strlen(not_host) == len &&
         memcmp(host, not_host, len) == 0))
        return;
    for (size_t i = 0; i < *n; i++)
        if (out[i].port == port && strlen(out[i].host) == len &&
            memcmp(out[i].host, host, len) == 0)
            return;
    memcpy(out[*n].host, host, len);
    out[*n].host[len] = '\0';
    out[*n].port = port;
    (*n)++;
}

/* Adds the replicas of SENTINEL REPLICAS' reply r that are not down;
 * true if r listed any. */
static bool add_replicas(const redisReply *r, sentinel_replica *out, size_t max,
                         size_t *n, const char *host, int port)
{
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements == 0)
        return false;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *ip = field(r->element[i], "ip");
        const redisReply *p = field(r->element[i], "port");
        const redisReply *flags = field(r->element[i], "flags");
        if (!ip || !p ||
            (flags && (strstr(flags->str, "s_down") ||
                       strstr(flags->str, "disconnected"))))
            continue;
        add_candidate(out, max, n, ip->str, ip->len, atoi(p->str), host, port);
    }
    return true;
}

size_t sentinel_candidates(const redis_url *url, int timeout_ms,
                           const char *host, int port, sentinel_replica *out,
                           size_t max)
{
    bool listed = false;
    char err[SENTINEL_WHY_MAX];
    size_t n = 0;

    for (size_t i = 0; i < url->n_seeds; i++) {
        redisContext *c =
            sentinel_open(url, &url->seeds[i], timeout_ms, NULL, err,
                          sizeof(err));
        redisReply *r;

        if (!c)
            continue;
        r = tls_command(c, "SENTINEL get-master-addr-by-name %s", url->master);
        if (is_address(r))
            add_candidate(out, max, &n, r->element[0]->str, r->element[0]->len,
                          atoi(r->element[1]->str), host, port);
        freeReplyObject(r);
        if (!listed) {
            r = tls_command(c, "SENTINEL REPLICAS %s", url->master);
            listed = add_replicas(r, out, max, &n, host, port);
            freeReplyObject(r);
        }
        tls_free(c);
    }
    return n;
}
