/* A client: its connection to Redis, its last error, and the status
 * vocabulary; see <wharf/client.h> and client_internal.h. */
#include "client_internal.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_ids.h"
#include "conn.h"
#include "lua_scripts.h"
#include "served.h"

#define DEFAULT_URL "redis://127.0.0.1:6379"
#define DEFAULT_PREFIX "wharf"

void client_error(wharf_client *c, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(c->errstr, sizeof(c->errstr), fmt, ap);
    va_end(ap);
}

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (!err || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

int client_connect(wharf_client *c)
{
    int rc;

    if (nodes_up(&c->nodes))
        return 0;
    rc = nodes_connect(&c->nodes);
    if (rc == 0)
        return 0;
    client_error(c, "%s", c->nodes.errstr);
    c->connect_status = c->nodes.err == ERROR_KIND_AUTH ? WHARF_CLIENT_AUTH
                        : rc == -2 ? WHARF_CLIENT_BAD_INPUT
                                   : WHARF_CLIENT_UNAVAILABLE;
    return -1;
}

redisContext *client_redis_of(wharf_client *c, const char *key)
{
    redisContext *redis;

    if (client_connect(c) != 0)
        return NULL;
    redis = nodes_context(&c->nodes, nodes_of_key(&c->nodes, key, strlen(key)));
    if (!redis) {
        client_error(c, "%s", c->nodes.errstr);
        c->connect_status = c->nodes.err == ERROR_KIND_AUTH
                                ? WHARF_CLIENT_AUTH
                                : WHARF_CLIENT_UNAVAILABLE;
        client_drop(c);
    }
    return redis;
}

void client_drop(wharf_client *c)
{
    pipeline_reset(&c->pipe);
    nodes_disconnect(&c->nodes);
}

void client_unserved_message(wharf_client *c, const char *type, char *buf,
                             size_t len)
{
    bool connected = client_connect(c) == 0;

    served_message(&c->pipe, connected, c->prefix, type, buf, len);
}

void wharf_client_require_replicas(wharf_client *client, int min_replicas,
                                   int64_t timeout_ms)
{
    if (!client)
        return;
    client->min_replicas = min_replicas > 0 ? min_replicas : 0;
    client->replicas_timeout_ms = timeout_ms <= 0          ? 1
                                  : timeout_ms > INT32_MAX ? INT32_MAX
                                                           : (int)timeout_ms;
}

wharf_client_status
client_reply_status(wharf_client *c, const redisReply *reply, const char *what)
{
    switch (redis_url_reply_error(&c->url, reply, c->pipe.errstr, what,
                                  c->errstr, sizeof(c->errstr))) {
    case ERROR_KIND_NONE:
        return WHARF_CLIENT_OK;
    case ERROR_KIND_UNAVAILABLE:
        return WHARF_CLIENT_UNAVAILABLE;
    case ERROR_KIND_FULL:
        return WHARF_CLIENT_FULL;
    case ERROR_KIND_AUTH:
        return WHARF_CLIENT_AUTH;
    case ERROR_KIND_SETUP:
    case ERROR_KIND_REPLY:
    case ERROR_KIND_NOMEM:
        break;
    }
    return WHARF_CLIENT_ERROR;
}

wharf_client_status wharf_client_open(wharf_client **out, const char *url,
                                      const char *password, const char *prefix,
                                      char *err, size_t errlen)
{
    wharf_client *c = NULL;
    wharf_client_status status = WHARF_CLIENT_ERROR;
    char why[512];

    if (!url)
        url = DEFAULT_URL;
    if (!prefix)
        prefix = DEFAULT_PREFIX;
    if (!out) {
        set_err(err, errlen, "no place to put the client");
        return WHARF_CLIENT_BAD_INPUT;
    }
    if (!client_valid_prefix(prefix)) {
        set_err(err, errlen,
                "key prefix '%.120s' is not valid: use 1-100 printable "
                "ASCII characters, no spaces or braces",
                prefix);
        return WHARF_CLIENT_BAD_INPUT;
    }
    c = calloc(1, sizeof(*c));
    if (!c) {
        set_err(err, errlen, "out of memory");
        goto fail;
    }
    if (redis_url_parse(url, &c->url, why, sizeof(why)) != 0) {
        set_err(err, errlen, "bad Redis URL '%s': %s", url, why);
        status = WHARF_CLIENT_BAD_INPUT;
        goto fail;
    }
    snprintf(c->prefix, sizeof(c->prefix), "%s", prefix);
    if (password && !(c->password = strdup(password))) {
        set_err(err, errlen, "out of memory");
        goto fail;
    }
    c->sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
    c->digest = EVP_MD_CTX_new();
    if (!c->sha256 || !c->digest) {
        set_err(err, errlen, "libcrypto: cannot set up SHA-256");
        goto fail;
    }
    c->scripts[0] = &script_enqueue;
    c->scripts[1] = NULL;
    nodes_init(&c->nodes, &c->url, c->password, CONN_TIMEOUT_MS);
    nodes_set_scripts(&c->nodes, c->scripts);
    pipeline_init(&c->pipe, &c->nodes);
    if (client_connect(c) != 0) {
        set_err(err, errlen, "%s", c->errstr);
        status = c->connect_status;
        goto fail;
    }
    *out = c;
    return WHARF_CLIENT_OK;
fail:
    wharf_client_close(c);
    return status;
}

void wharf_client_close(wharf_client *client)
{
    if (!client)
        return;
    pipeline_free(&client->pipe);
    nodes_free(&client->nodes);
    client_enqueue_free(client);
    EVP_MD_CTX_free(client->digest);
    EVP_MD_free(client->sha256);
    if (client->password) {
        /* Do not leave the secret in freed memory. */
        memset(client->password, 0, strlen(client->password));
        free(client->password);
    }
    memset(&client->url, 0, sizeof(client->url));
    free(client);
}

const char *wharf_client_errstr(const wharf_client *client)
{
    return client ? client->errstr : "";
}

const char *wharf_client_status_name(wharf_client_status s)
{
    switch (s) {
    case WHARF_CLIENT_OK:
        return "ok";
    case WHARF_CLIENT_DUPLICATE:
        return "duplicate";
    case WHARF_CLIENT_NOT_FOUND:
        return "not_found";
    case WHARF_CLIENT_BAD_INPUT:
        return "bad_input";
    case WHARF_CLIENT_TOO_LARGE:
        return "too_large";
    case WHARF_CLIENT_BACKPRESSURE:
        return "backpressure";
    case WHARF_CLIENT_UNAVAILABLE:
        return "unavailable";
    case WHARF_CLIENT_TIMEOUT:
        return "timeout";
    case WHARF_CLIENT_ERROR:
        return "error";
    case WHARF_CLIENT_AUTH:
        return "auth";
    case WHARF_CLIENT_FULL:
        return "full";
    case WHARF_CLIENT_DEAD:
        return "dead";
    case WHARF_CLIENT_CANCELLED:
        return "cancelled";
    case WHARF_CLIENT_PROTOCOL:
        return "protocol";
    case WHARF_CLIENT_UNSERVED:
        return "unserved";
    }
    return "unknown";
}

void wharf_free(void *p)
{
    free(p);
}
