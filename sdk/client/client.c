/* A client's base: its connection to Redis, its last error and the
 * errors every call shares (a reply's status, bad names, a protocol the
 * hosts do not share), and the status vocabulary; see <wharf/client.h>.
 * The bottom of sdk/client: it calls none of the other files
 * (client_internal.h says the layers). */
#include "client_internal.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_ids.h"
#include "served.h"
#include "quote.h"

void client_error(wharf_client *c, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(c->errstr, sizeof(c->errstr), fmt, ap);
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
    /* A failed TLS handshake is the two sides refusing each other's
     * credentials, as a refused password is: AUTH. */
    c->connect_status =
        c->nodes.err == ERROR_KIND_AUTH || c->nodes.err == ERROR_KIND_TLS
            ? WHARF_CLIENT_AUTH
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
        c->connect_status =
            c->nodes.err == ERROR_KIND_AUTH || c->nodes.err == ERROR_KIND_TLS
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

wharf_client_status client_check_names(wharf_client *c, const char *type,
                                       const char *id)
{
    char quoted[120];

    if (!client_valid_type(type)) {
        quote_text(type ? type : "", quoted, sizeof(quoted));
        client_error(c, "type '%s' is not valid: " CLIENT_TYPE_RULE, quoted);
        return WHARF_CLIENT_BAD_INPUT;
    }
    if (!client_valid_id(id)) {
        quote_text(id ? id : "", quoted, sizeof(quoted));
        client_error(c, "task id '%s' is not valid: " CLIENT_ID_RULE, quoted);
        return WHARF_CLIENT_BAD_INPUT;
    }
    return WHARF_CLIENT_OK;
}

wharf_client_status client_protocol_error(wharf_client *c, const char *type,
                                          const char *host)
{
    char quoted[40];

    quote_text(host, quoted, sizeof(quoted));
    client_error(c,
                 "the hosts serving '%s' speak wharf protocol %s; this "
                 "client speaks " CLIENT_PROTOCOLS ": upgrade it",
                 type, quoted);
    return WHARF_CLIENT_PROTOCOL;
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
    case ERROR_KIND_TLS:
    case ERROR_KIND_REPLY:
    case ERROR_KIND_NOMEM:
        break;
    }
    return WHARF_CLIENT_ERROR;
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
