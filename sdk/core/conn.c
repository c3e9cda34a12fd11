/* A connection to one wharf deployment; see conn.h. */
#include "conn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

conn *conn_open(const char *url, const char *password, int timeout_ms,
                error_kind *kind, char *err, size_t errlen)
{
    conn *cn = calloc(1, sizeof(*cn));
    char why[512], shown[REDIS_URL_TEXT_MAX];

    if (!cn || (password && !(cn->password = strdup(password)))) {
        snprintf(err, errlen, "out of memory");
        *kind = ERROR_KIND_NOMEM;
        conn_close(cn);
        return NULL;
    }
    if (redis_url_parse(url, &cn->url, why, sizeof(why)) != 0) {
        redis_url_redact(url, shown, sizeof(shown));
        snprintf(err, errlen, "bad Redis URL '%s': %s", shown, why);
        *kind = ERROR_KIND_SETUP;
        conn_close(cn);
        return NULL;
    }
    nodes_init(&cn->nodes, &cn->url, cn->password, timeout_ms);
    pipeline_init(&cn->pipe, &cn->nodes);
    return cn;
}

/* Copies the nodes' last failure into cn (cut to fit, as the client's
 * message is). */
static void take_nodes_error(conn *cn)
{
    size_t n = strnlen(cn->nodes.errstr, sizeof(cn->errstr) - 1);

    cn->err = cn->nodes.err;
    memcpy(cn->errstr, cn->nodes.errstr, n);
    cn->errstr[n] = '\0';
}

int conn_connect(conn *cn)
{
    int rc;

    if (nodes_up(&cn->nodes))
        return 0;
    rc = nodes_connect(&cn->nodes);
    if (rc != 0)
        take_nodes_error(cn);
    return rc;
}

redisContext *conn_redis_of(conn *cn, const char *key)
{
    redisContext *redis;

    if (conn_connect(cn) != 0)
        return NULL;
    redis = nodes_context(&cn->nodes,
                          nodes_of_key(&cn->nodes, key, strlen(key)));
    if (!redis) {
        take_nodes_error(cn);
        conn_drop(cn);
    }
    return redis;
}

void conn_no_reply(conn *cn, const redisContext *redis, int saved_errno)
{
    redis_url_io_error(redis, saved_errno, cn->nodes.timeout_ms,
                       cn->pipe.errstr, sizeof(cn->pipe.errstr));
}

error_kind conn_reply_error(conn *cn, const redisReply *reply,
                            const char *what)
{
    error_kind kind = redis_url_reply_error(&cn->url, reply, cn->pipe.errstr,
                                            what, cn->errstr,
                                            sizeof(cn->errstr));

    if (kind != ERROR_KIND_NONE)
        cn->err = kind;
    return kind;
}

void conn_drop(conn *cn)
{
    pipeline_reset(&cn->pipe);
    nodes_disconnect(&cn->nodes);
}

void conn_close(conn *cn)
{
    if (!cn)
        return;
    pipeline_free(&cn->pipe);
    nodes_free(&cn->nodes);
    if (cn->password) {
        /* Do not leave the secret in freed memory. */
        memset(cn->password, 0, strlen(cn->password));
        free(cn->password);
    }
    memset(&cn->url, 0, sizeof(cn->url));
    free(cn);
}
