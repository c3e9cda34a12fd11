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

#include "endpoint.h"
#include "error_kind.h"
#include "tls.h"

/* At most this many seeds (cluster nodes or sentinels) in one URL. */
#define REDIS_URL_MAX_SEEDS 16

/* The longest socket path, user name, password and master name a URL
 * may hold; and an address as redis_url_describe writes it, for
 * messages. */
#define REDIS_URL_PATH_MAX 256
#define REDIS_URL_USER_MAX 128
#define REDIS_URL_PASSWORD_MAX 256
#define REDIS_URL_MASTER_MAX 128
#define REDIS_URL_TEXT_MAX 600

typedef enum redis_url_kind {
    REDIS_URL_TCP = 0, /* redis:// */
    REDIS_URL_UNIX,    /* unix:// */
    REDIS_URL_CLUSTER, /* redis+cluster:// */
    REDIS_URL_SENTINEL /* redis+sentinel:// */
} redis_url_kind;

typedef struct redis_seed {
    char host[ENDPOINT_HOST_MAX];
    int port;
} redis_seed;

typedef struct redis_url {
    redis_url_kind kind;
    char host[ENDPOINT_HOST_MAX]; /* "" for a unix socket; the first seed
                                     otherwise */
    int port;
    char path[REDIS_URL_PATH_MAX]; /* unix socket path, "" for TCP */
    char user[REDIS_URL_USER_MAX];
    char password[REDIS_URL_PASSWORD_MAX];
    int db;
    redis_seed seeds[REDIS_URL_MAX_SEEDS]; /* cluster and sentinel */
    size_t n_seeds;
    char master[REDIS_URL_MASTER_MAX]; /* sentinel: the name of the master */
    tls_options tls; /* rediss://, rediss+cluster://, rediss+sentinel://:
                        every node (and sentinel) over TLS */
    char sentinel_user[REDIS_URL_USER_MAX]; /* the sentinels' own */
    char sentinel_password[REDIS_URL_PASSWORD_MAX];
} redis_url;

/* Parses text into *out. 0 on success; -1 with the reason alone in err
 * ("bad port: expected 1..65535"), for the caller to say which URL. The
 * one parser of Redis addresses: the manifest, the CLI and the client
 * library all use it. "rediss" in place of "redis" in the three TCP
 * forms means TLS, with query parameters tls_ca, tls_cert, tls_key,
 * tls_sni and tls_verify (yes/no), percent-decoded, each at most once:
 * "rediss://h:6380/0?tls_ca=/etc/ca.pem&tls_sni=redis.example". A
 * sentinel URL (either) also takes sentinel_user and sentinel_password,
 * the sentinels' own credentials (those in the userinfo are the
 * master's). */
int redis_url_parse(const char *text, redis_url *out, char *err, size_t errlen);

/* Connects to the one node of a redis://, rediss:// or unix:// url (for the others,
 * nodes.h makes one of each node they name) with a connect/command timeout (0 =
 * none), sends AUTH (password overrides the URL's when not NULL) and SELECT, or
 * else a PING, so a Redis that refuses us says so now. Returns the context, or
 * NULL with "redis://...: why" in err and, when kind is not NULL, *kind
 * saying what failed: AUTH (which retrying cannot fix), UNAVAILABLE (no
 * connection, no answer), TLS (the handshake, or TLS on one side only),
 * REPLY (another error reply to AUTH, SELECT or PING) or NOMEM. The
 * context's I/O goes through tls.h; free it with tls_free. */
redisContext *redis_url_open(const redis_url *url, const char *password,
                             int timeout_ms, error_kind *kind, char *err,
                             size_t errlen);

/* Connects to host:port as url says (TLS or not, with the same options,
 * close-on-exec, the timeout set), sending nothing: for a node the URL
 * does not name itself (a cluster node, a sentinel's master) and for the
 * sentinels. NULL with "host:port: why" in err and *kind (UNAVAILABLE,
 * TLS, NOMEM) when kind is not NULL. */
redisContext *redis_url_dial(const redis_url *url, const char *host, int port,
                             int timeout_ms, error_kind *kind, char *err,
                             size_t errlen);

/* redis_url_open for a caller that needs no kind. */
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

/* True if err, a message redis_url_open or redis_url_explain wrote, is
 * one of their authentication lines ("...: authentication required: ..."
 * / "...: authentication failed: ..."). Only for text that has already
 * left the core as a string (a test reading wharf_client_open's err):
 * code decides by the error_kind, never by the message. */
int redis_url_auth_refused(const char *err);

/* Writes into err one line for the error reply reply_text that Redis at
 * url gave to a command about `what`: the authentication lines above for
 * NOAUTH, WRONGPASS and their kin, else "redis://...: what: reply_text". */
void redis_url_explain(const redis_url *url, const char *what,
                       const char *reply_text, char *err, size_t errlen);

/* What reply, the answer Redis at url gave to a command about `what`,
 * means. ERROR_KIND_NONE for any reply that is not an error (err is left
 * alone). Otherwise one line in err, and: UNAVAILABLE for no reply (NULL:
 * lost says why, NULL or "" for "connection lost") and for LOADING, BUSY,
 * MASTERDOWN, TRYAGAIN, READONLY, CLUSTERDOWN, MOVED and ASK; FULL for
 * OOM (Redis at maxmemory refused the first write: nothing was written);
 * AUTH for NOAUTH and WRONGPASS (redis_url_explain's lines); else
 * REPLY. Does not free reply. */
error_kind redis_url_reply_error(const redis_url *url, const redisReply *reply,
                                 const char *lost, const char *what, char *err,
                                 size_t errlen);

/* Appends the query parameter name=value to the URL in url (of size len),
 * after "?" or "&", the value percent-encoded but for the bytes a path or
 * a name is made of: how the [redis] tls_* keys and wharf's --tls-*
 * options become part of the URL the one parser reads. 0, or -1 if it
 * does not fit (url unchanged). */
int redis_url_append_param(char *url, size_t len, const char *name,
                           const char *value);

/* The address without the password, for messages. */
void redis_url_describe(const redis_url *url, char *buf, size_t len);

/* Copies text, a Redis URL that may not parse, into buf for a message:
 * quoted as quote_text does, with whatever could be a password (the
 * userinfo after the user name, up to the last '@') shown as "***". The
 * one way a URL a user typed reaches an error line or a log. */
void redis_url_redact(const char *text, char *buf, size_t len);

#endif /* WHARF_REDIS_URL_H */
