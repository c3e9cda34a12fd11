/* Redis addresses: "redis://[user[:password]@]host[:port][/db]" and
 * "unix:///path[?db=N]", and the connection they describe (AUTH and
 * SELECT done). Shared by the client library, the CLI and the host. */
#ifndef WHARF_REDIS_URL_H
#define WHARF_REDIS_URL_H

#include <stddef.h>

#include <hiredis/hiredis.h>

typedef struct redis_url {
    char host[256]; /* "" for a unix socket */
    int port;
    char path[256]; /* unix socket path, "" for TCP */
    char user[128];
    char password[256];
    int db;
} redis_url;

/* Parses text into *out. 0 on success; -1 with the reason alone in err
 * ("bad port: expected 1..65535"), for the caller to say which URL. The
 * one parser of Redis addresses: the manifest, the CLI and the client
 * library all use it. */
int redis_url_parse(const char *text, redis_url *out, char *err,
                    size_t errlen);

/* Connects to url with a connect/command timeout (0 = none), sends AUTH
 * (password overrides the URL's when not NULL) and SELECT, or else a PING,
 * so a Redis that refuses us says so now. Returns the context, or NULL
 * with "redis://...: why" in err; redis_url_auth_refused(err) tells an
 * authentication failure (which retrying cannot fix) from the rest. */
redisContext *redis_url_connect(const redis_url *url, const char *password,
                                int timeout_ms, char *err, size_t errlen);

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
