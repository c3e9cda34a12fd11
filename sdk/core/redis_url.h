/* Redis addresses: "redis://[user[:password]@]host[:port][/db]",
 * "unix:///path[?db=N]", "redis+cluster://host:port[,host:port...]" (any
 * nodes of a Redis Cluster, as seeds) and
 * "redis+sentinel://host:port[,host:port...]/MASTER[/db]" (the sentinels
 * that watch MASTER), and the connection to one node (AUTH and SELECT
 * done). Shared by the client library, the CLI and the host; nodes.h
 * turns a cluster or sentinel address into connections. */
#ifndef WHARF_REDIS_URL_H
#define WHARF_REDIS_URL_H

#include <stddef.h>

#include <hiredis/hiredis.h>

/* At most this many seeds (cluster nodes or sentinels) in one URL. */
#define REDIS_URL_MAX_SEEDS 16

typedef enum redis_url_kind {
    REDIS_URL_TCP = 0, /* redis:// */
    REDIS_URL_UNIX,    /* unix:// */
    REDIS_URL_CLUSTER, /* redis+cluster:// */
    REDIS_URL_SENTINEL /* redis+sentinel:// */
} redis_url_kind;

typedef struct redis_seed {
    char host[256];
    int port;
} redis_seed;

typedef struct redis_url {
    redis_url_kind kind;
    char host[256]; /* "" for a unix socket; the first seed otherwise */
    int port;
    char path[256]; /* unix socket path, "" for TCP */
    char user[128];
    char password[256];
    int db;
    redis_seed seeds[REDIS_URL_MAX_SEEDS]; /* cluster and sentinel */
    size_t n_seeds;
    char master[128]; /* sentinel: the name of the master */
} redis_url;

/* Parses text into *out. 0 on success; -1 with the reason alone in err
 * ("bad port: expected 1..65535"), for the caller to say which URL. The
 * one parser of Redis addresses: the manifest, the CLI and the client
 * library all use it. */
int redis_url_parse(const char *text, redis_url *out, char *err, size_t errlen);

/* Parses the address "host[:port]" or "[v6]:port" of text[0..n) into
 * host (of 256 bytes) and *port (left as it is when none is given). A
 * host is a name, a dotted IPv4 address or a bracketed IPv6 address,
 * checked whole; a port is 1..65535. 0, or -1 with why in err. The one
 * parser of host:port: Redis URLs and the manifest's [metrics] listen. */
int redis_address_parse(const char *text, size_t n, char *host, int *port,
                        char *err, size_t errlen);

/* Connects to the one node of a redis:// or unix:// url (for the others,
 * nodes.h makes one of each node they name) with a connect/command timeout (0 =
 * none), sends AUTH (password overrides the URL's when not NULL) and SELECT, or
 * else a PING, so a Redis that refuses us says so now. Returns the context, or
 * NULL with "redis://...: why" in err; redis_url_auth_refused(err) tells an
 * authentication failure (which retrying cannot fix) from the rest. */
redisContext *redis_url_connect(const redis_url *url, const char *password,
                                int timeout_ms, char *err, size_t errlen);

/* Sets close-on-exec on c's socket, so no program exec'd by this process
 * (or a child of it) inherits the connection. redis_url_connect does it
 * for every connection it makes; call it on a context made otherwise. 0,
 * or -1 with errno set. */
int redis_url_close_on_exec(const redisContext *c);

/* Writes into buf why a command on c got no reply: "Redis did not answer
 * in 5 s" when it timed out (c->err is REDIS_ERR_IO and saved_errno, errno
 * right after the failed call, is EAGAIN; timeout_ms is c's timeout),
 * else c->errstr. */
void redis_url_io_error(const redisContext *c, int saved_errno, int timeout_ms,
                        char *buf, size_t len);

/* True if err, as redis_url_connect or redis_url_explain wrote it, says
 * Redis wants a password we did not give, or refused the one we gave
 * ("...: authentication required: ..." / "...: authentication failed:
 * ..."). wharfd exits 78 on it rather than retrying, and the CLI too. */
int redis_url_auth_refused(const char *err);

/* Writes into err one line for the error reply reply_text that Redis at
 * url gave to a command about `what`: the authentication lines above for
 * NOAUTH, WRONGPASS and their kin, else "redis://...: what: reply_text". */
void redis_url_explain(const redis_url *url, const char *what,
                       const char *reply_text, char *err, size_t errlen);

/* The address without the password, for messages. */
void redis_url_describe(const redis_url *url, char *buf, size_t len);

#endif /* WHARF_REDIS_URL_H */
