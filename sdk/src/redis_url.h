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
 * (password overrides the URL's when not NULL) and SELECT. Returns the
 * context, or NULL with "redis://...: why" in err. */
redisContext *redis_url_connect(const redis_url *url, const char *password,
                                int timeout_ms, char *err, size_t errlen);

/* The address without the password, for messages. */
void redis_url_describe(const redis_url *url, char *buf, size_t len);

#endif /* WHARF_REDIS_URL_H */
