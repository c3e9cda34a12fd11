/* The nodes of one Redis deployment and the slot map; see nodes.h. */
#include "nodes.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"
#include "endpoint.h"
#include "sentinel.h"
#include "tls.h"

/* Sets ns->err and ns->errstr (one line, printf-style). */
static void nodes_fail(nodes *ns, error_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void nodes_fail(nodes *ns, error_kind kind, const char *fmt, ...)
{
    va_list ap;

    ns->err = kind;
    va_start(ap, fmt);
    vsnprintf(ns->errstr, sizeof(ns->errstr), fmt, ap);
    va_end(ap);
}

void nodes_init(nodes *ns, const redis_url *url, const char *password,
                int timeout_ms)
{
    memset(ns, 0, sizeof(*ns));
    ns->url = *url;
    ns->password = password;
    ns->timeout_ms = timeout_ms;
    ns->cluster = url->kind == REDIS_URL_CLUSTER;
    memset(ns->slot_node, 0xff, sizeof(ns->slot_node));
}

void nodes_set_scripts(nodes *ns, const script *const *scripts)
{
    ns->scripts = scripts;
}

bool nodes_up(const nodes *ns)
{
    return ns->n > 0;
}

void nodes_disconnect(nodes *ns)
{
    for (size_t i = 0; i < ns->n; i++)
        tls_free(ns->list[i].redis);
    ns->n = 0;
    memset(ns->slot_node, 0xff, sizeof(ns->slot_node));
}

void nodes_free(nodes *ns)
{
    nodes_disconnect(ns);
    free(ns->list);
    ns->list = NULL;
    ns->cap = 0;
}

/* The index of host:port, added if new; -1 when out of memory. */
static int node_index(nodes *ns, const char *host, size_t host_len, int port)
{
    redis_node *nd;

    for (size_t i = 0; i < ns->n; i++)
        if (ns->list[i].port == port && strlen(ns->list[i].host) == host_len &&
            memcmp(ns->list[i].host, host, host_len) == 0)
            return (int)i;
    if (host_len >= sizeof(nd->host) || ns->n >= NODES_NONE) {
        nodes_fail(ns, ERROR_KIND_REPLY, "bad node address");
        return -1;
    }
    if (ns->n == ns->cap) {
        size_t cap = ns->cap ? 2 * ns->cap : 8;
        redis_node *grown = realloc(ns->list, cap * sizeof(*grown));
        if (!grown) {
            nodes_fail(ns, ERROR_KIND_NOMEM, "out of memory");
            return -1;
        }
        ns->list = grown;
        ns->cap = cap;
    }
    nd = &ns->list[ns->n];
    memset(nd, 0, sizeof(*nd));
    memcpy(nd->host, host, host_len);
    nd->host[host_len] = '\0';
    nd->port = port;
    nd->acks = -1;
    endpoint_format(nd->name, sizeof(nd->name), nd->host, port);
    return (int)ns->n++;
}

/* The URL of node index: the deployment's own for one node, else
 * redis://host:port/db with the deployment's user and password. */
static void node_url(const nodes *ns, int index, redis_url *out)
{
    const redis_node *nd = &ns->list[index];

    *out = ns->url;
    if (ns->url.kind == REDIS_URL_UNIX || ns->url.kind == REDIS_URL_TCP)
        return;
    out->kind = REDIS_URL_TCP;
    snprintf(out->host, sizeof(out->host), "%s", nd->host);
    out->port = nd->port;
    out->n_seeds = 0;
}

/* Loads ns->scripts on c. 0, or -1 with ns->errstr set. */
static int load_scripts(nodes *ns, redisContext *c, const char *name)
{
    char err[SCRIPT_ERR_MAX];

    for (size_t i = 0; ns->scripts && ns->scripts[i]; i++) {
        if (script_load(c, ns->scripts[i], err, sizeof(err)) != 0) {
            nodes_fail(ns, ERROR_KIND_UNAVAILABLE, "%.300s: %s", name, err);
            return -1;
        }
    }
    return 0;
}

redisContext *nodes_context(nodes *ns, int index)
{
    redis_node *nd;
    redis_url url;

    if (index < 0 || (size_t)index >= ns->n) {
        nodes_fail(ns, ERROR_KIND_UNAVAILABLE, "no node serves that slot");
        return NULL;
    }
    nd = &ns->list[index];
    if (nd->redis && !nd->redis->err)
        return nd->redis;
    tls_free(nd->redis);
    node_url(ns, index, &url);
    nd->redis = redis_url_open(&url, ns->password, ns->timeout_ms, &ns->err,
                               ns->errstr, sizeof(ns->errstr));
    if (nd->redis && load_scripts(ns, nd->redis, nd->name) != 0) {
        tls_free(nd->redis);
        nd->redis = NULL;
    }
    return nd->redis;
}

redisContext *nodes_open(nodes *ns, int index)
{
    redis_url url;

    if (index < 0 || (size_t)index >= ns->n) {
        nodes_fail(ns, ERROR_KIND_UNAVAILABLE, "no node serves that slot");
        return NULL;
    }
    node_url(ns, index, &url);
    return redis_url_open(&url, ns->password, ns->timeout_ms, &ns->err,
                          ns->errstr, sizeof(ns->errstr));
}

void nodes_drop(nodes *ns, int index)
{
    if (index < 0 || (size_t)index >= ns->n)
        return;
    tls_free(ns->list[index].redis);
    ns->list[index].redis = NULL;
}

int nodes_of_slot(const nodes *ns, unsigned slot)
{
    uint16_t i;

    if (ns->n == 0)
        return -1;
    if (!ns->cluster)
        return 0;
    i = ns->slot_node[slot & (NODES_SLOTS - 1)];
    return i == NODES_NONE ? -1 : (int)i;
}

int nodes_of_key(const nodes *ns, const char *key, size_t len)
{
    return nodes_of_slot(ns, command_key_slot(key, len));
}

const char *nodes_name(const nodes *ns, int index)
{
    if (index < 0 || (size_t)index >= ns->n)
        return "";
    return ns->list[index].name;
}

const char *nodes_name_of_key(const nodes *ns, const char *key)
{
    return nodes_name(ns, nodes_of_key(ns, key, strlen(key)));
}

/* ---- the slot map ---- */

/* The value of field name in r, a RESP2 map (an array of name, value,
 * ...), or NULL. */
static const redisReply *field(const redisReply *r, const char *name)
{
    if (r->type != REDIS_REPLY_ARRAY)
        return NULL;
    for (size_t i = 0; i + 1 < r->elements; i += 2)
        if (r->element[i]->type == REDIS_REPLY_STRING &&
            strcmp(r->element[i]->str, name) == 0)
            return r->element[i + 1];
    return NULL;
}

static bool is_text(const redisReply *r, const char *text)
{
    return r && r->type == REDIS_REPLY_STRING && strcmp(r->str, text) == 0;
}

/* Points slots [from, to] at the node host:port. 0 or -1. */
static int assign(nodes *ns, long long from, long long to, const char *host,
                  size_t host_len, long long port)
{
    int index;

    if (from < 0 || to >= NODES_SLOTS || from > to || port < 1 || port > 65535)
        return -1;
    index = node_index(ns, host, host_len, (int)port);
    if (index < 0)
        return -1;
    for (long long s = from; s <= to; s++)
        ns->slot_node[s] = (uint16_t)index;
    return 0;
}

/* The address a cluster node is reached at: its endpoint (an address or a
 * name, by cluster-preferred-endpoint-type), else its ip; an empty or "?"
 * endpoint means "the address you reached me at": seed. */
static const char *endpoint_of(const redisReply *nd, const char *seed,
                               size_t *len)
{
    const redisReply *e = field(nd, "endpoint");

    if (!e || e->type != REDIS_REPLY_STRING || e->len == 0 ||
        strcmp(e->str, "?") == 0)
        e = field(nd, "ip");
    if (!e || e->type != REDIS_REPLY_STRING || e->len == 0 ||
        strcmp(e->str, "?") == 0) {
        *len = strlen(seed);
        return seed;
    }
    *len = e->len;
    return e->str;
}

/* CLUSTER SHARDS (Redis 7): each shard's slot ranges go to its master,
 * the one online if a failed one is still listed. 0 or -1. */
static int map_from_shards(nodes *ns, const redisReply *r, const char *seed)
{
    if (r->type != REDIS_REPLY_ARRAY)
        return -1;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *slots = field(r->element[i], "slots");
        const redisReply *list = field(r->element[i], "nodes");
        const redisReply *master = NULL, *port;
        const char *host;
        size_t host_len;
        if (!slots || !list || slots->type != REDIS_REPLY_ARRAY ||
            list->type != REDIS_REPLY_ARRAY)
            return -1;
        for (size_t k = 0; k < list->elements; k++) {
            const redisReply *nd = list->element[k];
            if (!is_text(field(nd, "role"), "master"))
                continue;
            if (!master || is_text(field(nd, "health"), "online"))
                master = nd;
        }
        if (!master || slots->elements == 0)
            continue; /* a shard without slots or without a master */
        /* Over TLS a node's TLS port ("port" is its plain one, if any). */
        port = ns->url.tls.enabled ? field(master, "tls-port") : NULL;
        if (!port)
            port = field(master, "port");
        if (!port || port->type != REDIS_REPLY_INTEGER)
            return -1;
        host = endpoint_of(master, seed, &host_len);
        for (size_t k = 0; k + 1 < slots->elements; k += 2) {
            if (slots->element[k]->type != REDIS_REPLY_INTEGER ||
                slots->element[k + 1]->type != REDIS_REPLY_INTEGER ||
                assign(ns, slots->element[k]->integer,
                       slots->element[k + 1]->integer, host, host_len,
                       port->integer) != 0)
                return -1;
        }
    }
    return 0;
}

/* CLUSTER SLOTS (before Redis 7): [from, to, [ip, port, ...], ...]. */
static int map_from_slots(nodes *ns, const redisReply *r, const char *seed)
{
    if (r->type != REDIS_REPLY_ARRAY)
        return -1;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i], *m;
        const char *host;
        size_t host_len;
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
            e->element[0]->type != REDIS_REPLY_INTEGER ||
            e->element[1]->type != REDIS_REPLY_INTEGER)
            return -1;
        m = e->element[2];
        if (m->type != REDIS_REPLY_ARRAY || m->elements < 2 ||
            m->element[0]->type != REDIS_REPLY_STRING ||
            m->element[1]->type != REDIS_REPLY_INTEGER)
            return -1;
        host = m->element[0]->len ? m->element[0]->str : seed;
        host_len = m->element[0]->len ? m->element[0]->len : strlen(seed);
        if (assign(ns, e->element[0]->integer, e->element[1]->integer, host,
                   host_len, m->element[1]->integer) != 0)
            return -1;
    }
    return 0;
}

/* Reads the slot map from seed s over c. 0, -1 (try the next seed) or -2
 * (not a cluster node). */
static int read_map(nodes *ns, redisContext *c, const redis_seed *s)
{
    redisReply *r = tls_command(c, "CLUSTER SHARDS");
    int rc = -1;
    bool shards = true;

    if (r && r->type == REDIS_REPLY_ERROR &&
        strstr(r->str, "cluster support disabled")) {
        nodes_fail(ns, ERROR_KIND_SETUP,
                 "%s:%d is not in cluster mode (cluster-enabled no): use "
                 "redis://%s:%d for a single Redis",
                 s->host, s->port, s->host, s->port);
        freeReplyObject(r);
        return -2;
    }
    if (r && r->type == REDIS_REPLY_ERROR) { /* before Redis 7 */
        freeReplyObject(r);
        r = tls_command(c, "CLUSTER SLOTS");
        shards = false;
    }
    if (!r) {
        nodes_fail(ns, ERROR_KIND_UNAVAILABLE, "%s:%d: %s", s->host, s->port,
                   c->errstr);
        return -1;
    }
    if (r->type == REDIS_REPLY_ERROR)
        nodes_fail(ns, ERROR_KIND_REPLY, "%s:%d: %s", s->host, s->port,
                   r->str);
    else if ((shards ? map_from_shards(ns, r, s->host)
                     : map_from_slots(ns, r, s->host)) != 0)
        nodes_fail(ns, ERROR_KIND_REPLY, "%s:%d: cannot read its %s reply",
                   s->host, s->port,
                   shards ? "CLUSTER SHARDS" : "CLUSTER SLOTS");
    else if (ns->n == 0)
        nodes_fail(ns, ERROR_KIND_UNAVAILABLE,
                   "%s:%d: the cluster serves no slot yet", s->host, s->port);
    else
        rc = 0;
    freeReplyObject(r);
    return rc;
}

static int connect_cluster(nodes *ns)
{
    char last[sizeof(ns->errstr)];
    size_t refused = 0;
    int rc = -1;

    for (size_t i = 0; i < ns->url.n_seeds; i++) {
        const redis_seed *s = &ns->url.seeds[i];
        redis_url url = ns->url;
        redisContext *c;

        url.kind = REDIS_URL_TCP;
        snprintf(url.host, sizeof(url.host), "%s", s->host);
        url.port = s->port;
        c = redis_url_open(&url, ns->password, ns->timeout_ms, &ns->err,
                           ns->errstr, sizeof(ns->errstr));
        if (!c) {
            if (ns->err == ERROR_KIND_AUTH)
                return -2;
            refused++;
            continue;
        }
        rc = read_map(ns, c, s);
        tls_free(c);
        if (rc == 0 || rc == -2)
            break;
        nodes_disconnect(ns);
    }
    if (rc != 0) {
        nodes_disconnect(ns);
        if (refused == ns->url.n_seeds) {
            /* Say that every seed was tried, not just the last. */
            char where[REDIS_URL_TEXT_MAX];
            redis_url_describe(&ns->url, where, sizeof(where));
            memcpy(last, ns->errstr, sizeof(last));
            nodes_fail(ns, ns->err,
                       "%.250s: no seed answered (tried %zu): %.280s", where,
                       ns->url.n_seeds, last);
        }
        return rc;
    }
    /* Reach one node now, so a refused password shows at once. */
    for (size_t i = 0; i < ns->n; i++) {
        if (nodes_context(ns, (int)i))
            return 0;
        if (ns->err == ERROR_KIND_AUTH) {
            nodes_disconnect(ns);
            return -2;
        }
    }
    nodes_disconnect(ns);
    return -1;
}

/* The ROLE of c: "master", "slave", ... into role (of len bytes); false
 * when c gives none. */
static bool role_of(redisContext *c, char *role, size_t len)
{
    redisReply *r = tls_command(c, "ROLE");
    bool ok = r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
              r->element[0]->type == REDIS_REPLY_STRING;

    snprintf(role, len, "%s", ok ? r->element[0]->str : "unreachable");
    freeReplyObject(r);
    return ok;
}

/* Nodes asked after a short WAIT, and how long each may take. */
#define PROBE_NODES 16
#define PROBE_TIMEOUT_MS 1000

/* What INFO replication says of a node. */
typedef struct replication {
    char role[16];    /* "master", "slave"; "" when unknown */
    char replid[48];  /* its replication id */
    char replid2[48]; /* the id it had before a promotion, or zeros */
} replication;

/* Copies the value of "name:" in info into out (len bytes). */
static void info_field(const char *info, const char *name, char *out,
                       size_t len)
{
    size_t name_len = strlen(name), n = 0;
    const char *at = info;

    out[0] = '\0';
    while ((at = strstr(at, name)) != NULL) {
        if ((at == info || at[-1] == '\n') && at[name_len] == ':')
            break;
        at += name_len;
    }
    if (!at)
        return;
    at += name_len + 1;
    while (at[n] && at[n] != '\r' && at[n] != '\n' && n + 1 < len)
        n++;
    memcpy(out, at, n);
    out[n] = '\0';
}

/* INFO replication of c into *out; false when c gives none. */
static bool replication_of(redisContext *c, replication *out)
{
    redisReply *r = tls_command(c, "INFO replication");
    bool ok = r && r->type == REDIS_REPLY_STRING;

    memset(out, 0, sizeof(*out));
    if (ok) {
        info_field(r->str, "role", out->role, sizeof(out->role));
        info_field(r->str, "master_replid", out->replid, sizeof(out->replid));
        info_field(r->str, "master_replid2", out->replid2,
                   sizeof(out->replid2));
    }
    freeReplyObject(r);
    return ok && out->role[0] && out->replid[0];
}

/* True if a node the sentinels name as master, or list as a replica, of
 * the master host:port (whose replication is ours) is a master promoted
 * from it: its previous replication id is ours. The old master of a
 * switchover still answering as one sees it; the new master, which sees
 * the old one as a master too until the sentinels demote it, does not
 * (the old one's previous id is not the new one's). ns->errstr says
 * which node. */
static bool switch_seen(nodes *ns, const char *host, int port,
                        const replication *ours)
{
    sentinel_replica peers[PROBE_NODES];
    int timeout =
        ns->timeout_ms < PROBE_TIMEOUT_MS ? ns->timeout_ms : PROBE_TIMEOUT_MS;
    size_t n =
        sentinel_candidates(&ns->url, timeout, host, port, peers, PROBE_NODES);
    char err[sizeof(ns->errstr)];

    for (size_t i = 0; i < n; i++) {
        redis_url url = ns->url;
        redisContext *c;
        replication theirs;
        bool promoted;

        url.kind = REDIS_URL_TCP;
        snprintf(url.host, sizeof(url.host), "%.255s", peers[i].host);
        url.port = peers[i].port;
        url.n_seeds = 0;
        c = redis_url_connect(&url, ns->password, timeout, err, sizeof(err));
        promoted = c && replication_of(c, &theirs) &&
                   strcmp(theirs.role, "master") == 0 &&
                   strcmp(theirs.replid2, ours->replid) == 0;
        tls_free(c);
        if (promoted) {
            nodes_fail(ns, ERROR_KIND_UNAVAILABLE,
                       "%.250s:%d was promoted from it (a switchover of "
                       "master '%.100s')",
                       peers[i].host, peers[i].port, ns->url.master);
            return true;
        }
    }
    return false;
}

int nodes_master_moved(nodes *ns, int index)
{
    redis_node *nd;
    replication ours;
    char why[sizeof(ns->errstr)];

    if (ns->url.kind != REDIS_URL_SENTINEL || index < 0 ||
        (size_t)index >= ns->n)
        return 0;
    nd = &ns->list[index];
    if (!nd->redis || nd->redis->err || !replication_of(nd->redis, &ours))
        return 0; /* a broken connection fails the run by itself */
    if (strcmp(ours.role, "master") != 0)
        nodes_fail(ns, ERROR_KIND_UNAVAILABLE, "it says it is a %s now",
                   ours.role);
    else if (!switch_seen(ns, nd->host, nd->port, &ours))
        return 0;
    memcpy(why, ns->errstr, sizeof(why));
    nodes_fail(ns, ERROR_KIND_UNAVAILABLE,
               "%.200s: the master moved after a write fewer replicas than "
               "asked acknowledged: %.300s",
               nd->name, why);
    snprintf(ns->suspect, sizeof(ns->suspect), "%s", nd->name);
    return 1;
}

/* Connects to the master the sentinels name, and checks with ROLE that
 * it is one: after a failover a sentinel may still name the old master
 * for a moment, and it comes back as a replica. A master found moved
 * (ns->suspect) is refused while the switch it saw is still visible: its
 * writes would be lost when Sentinel demotes it. */
static int connect_sentinel(nodes *ns)
{
    char host[ENDPOINT_HOST_MAX], err[sizeof(ns->errstr)], role[32];
    error_kind kind = ERROR_KIND_UNAVAILABLE;
    int port = 0, rc, index;
    redisContext *c;

    rc = sentinel_master(&ns->url, ns->timeout_ms, host, sizeof(host), &port,
                         &kind, err, sizeof(err));
    if (rc != 0) {
        nodes_fail(ns, kind, "%s", err);
        return rc;
    }
    index = node_index(ns, host, strlen(host), port);
    if (index < 0)
        return -1;
    ns->slot_node[0] = 0;
    c = nodes_context(ns, index);
    if (!c) {
        rc = ns->err == ERROR_KIND_AUTH ? -2 : -1;
        nodes_disconnect(ns);
        return rc;
    }
    if (!role_of(c, role, sizeof(role)) || strcmp(role, "master") != 0) {
        nodes_fail(ns, ERROR_KIND_UNAVAILABLE,
                   "sentinels name %s:%d as master '%s' but it says it is %s "
                   "(a failover under way?)",
                   host, port, ns->url.master, role);
        nodes_disconnect(ns);
        return -1;
    }
    if (ns->suspect[0] && strcmp(ns->suspect, ns->list[index].name) == 0) {
        replication ours;
        if (replication_of(c, &ours) && switch_seen(ns, host, port, &ours)) {
            memcpy(err, ns->errstr, sizeof(err));
            nodes_fail(ns, ERROR_KIND_UNAVAILABLE,
                       "sentinels still name %.100s:%d as master '%.60s', "
                       "which lost its replica to a switchover: %.300s",
                       host, port, ns->url.master, err);
            nodes_disconnect(ns);
            return -1;
        }
    }
    ns->suspect[0] = '\0';
    return 0;
}

int nodes_connect(nodes *ns)
{
    int rc;

    nodes_disconnect(ns);
    if (ns->url.kind == REDIS_URL_CLUSTER)
        return connect_cluster(ns);
    if (ns->url.kind == REDIS_URL_SENTINEL)
        return connect_sentinel(ns);
    rc = node_index(ns, ns->url.path[0] ? ns->url.path : ns->url.host,
                    strlen(ns->url.path[0] ? ns->url.path : ns->url.host),
                    ns->url.port);
    if (rc < 0)
        return -1;
    if (ns->url.path[0])
        snprintf(ns->list[0].name, sizeof(ns->list[0].name), "%s",
                 ns->url.path);
    if (nodes_context(ns, 0))
        return 0;
    rc = ns->err == ERROR_KIND_AUTH ? -2 : -1;
    nodes_disconnect(ns);
    return rc;
}

int nodes_redirected(nodes *ns, const redisReply *r, int *index, bool *ask)
{
    char host[ENDPOINT_HOST_MAX], why[ERROR_TEXT_MAX];
    const char *text, *addr;
    long slot;
    int port = 0;
    char *end;

    if (!r || r->type != REDIS_REPLY_ERROR)
        return 0;
    if (strncmp(r->str, "MOVED ", 6) == 0)
        *ask = false;
    else if (strncmp(r->str, "ASK ", 4) == 0)
        *ask = true;
    else
        return 0;
    /* "MOVED 3999 127.0.0.1:6381"; the address may be "::1:6381" or
     * "[::1]:6381", or ":6381" when the node does not know its own
     * address. */
    text = r->str + (*ask ? 4 : 6);
    slot = strtol(text, &end, 10);
    addr = end + (*end == ' ');
    if (end == text || *end != ' ' || slot < 0 || slot >= NODES_SLOTS ||
        endpoint_parse(addr, strlen(addr),
                       ENDPOINT_NEED_PORT | ENDPOINT_LOOSE_HOST, host, &port,
                       why, sizeof(why)) != 0)
        goto bad;
    if (host[0] == '\0')
        *index = node_index(ns, ns->url.host, strlen(ns->url.host), port);
    else
        *index = node_index(ns, host, strlen(host), port);
    if (*index < 0)
        return -1;
    if (!*ask)
        ns->slot_node[slot] = (uint16_t)*index;
    return 1;
bad:
    nodes_fail(ns, ERROR_KIND_REPLY, "cannot read redirection '%s'", r->str);
    return -1;
}
