/* A client: its connection to Redis, its last error, and the status
 * vocabulary; see <wharf/client.h> and client_internal.h. */
#include "client_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client_ids.h"

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
    c->connect_status = redis_url_auth_refused(c->nodes.errstr)
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
        c->connect_status = redis_url_auth_refused(c->nodes.errstr)
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

wharf_client_status
client_reply_status(wharf_client *c, const redisReply *reply, const char *what)
{
    if (!reply) {
        char why[sizeof(c->pipe.errstr)];
        /* The pipeline's message names the node; a one-node one does not
         * need the address twice. */
        snprintf(why, sizeof(why), "%s",
                 c->pipe.errstr[0] ? c->pipe.errstr : "connection lost");
        client_error(c, "%s: %s: %s", what, c->where, why);
        return WHARF_CLIENT_UNAVAILABLE;
    }
    if (reply->type != REDIS_REPLY_ERROR)
        return WHARF_CLIENT_OK;
    if (strncmp(reply->str, "OOM ", 4) == 0) {
        /* The raw text names a line of our script; what matters is that
         * Redis refused the first write, so the command wrote nothing. */
        client_error(c, "%s: Redis is out of memory (maxmemory reached)",
                     c->where);
        return WHARF_CLIENT_FULL;
    }
    if (strncmp(reply->str, "NOAUTH", 6) == 0 ||
        strncmp(reply->str, "WRONGPASS", 9) == 0) {
        char err[sizeof(c->errstr)];
        redis_url_explain(&c->url, what, reply->str, err, sizeof(err));
        client_error(c, "%s", err);
        return WHARF_CLIENT_AUTH;
    }
    client_error(c, "%s: redis answered: %s", what, reply->str);
    return unavailable_error(reply->str) ? WHARF_CLIENT_UNAVAILABLE
                                         : WHARF_CLIENT_ERROR;
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
    redis_url_describe(&c->url, c->where, sizeof(c->where));
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
    client_enqueue_init(c);
    client_status_init(c);
    c->scripts[0] = &c->enqueue;
    c->scripts[1] = NULL;
    nodes_init(&c->nodes, &c->url, c->password, CLIENT_TIMEOUT_MS);
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

void client_sleep_ms(int64_t ms)
{
    struct timespec ts;

    if (ms <= 0)
        return;
    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int64_t client_monotonic_ms(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return 0;
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
