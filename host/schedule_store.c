/* The last tick of each schedule (schedule_store.h). */
#include "schedule_store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "error_set.h"
#include "keys.h"

/* Runs the one command in cn's pipeline: its reply (owned by the
 * pipeline until its next reset), or NULL with cn's error set and the
 * connection dropped. */
static redisReply *run_one(conn *cn, const char *what)
{
    redisReply *reply;

    if (conn_connect(cn) != 0)
        return NULL;
    if (pipeline_run(&cn->pipe) != 0) {
        conn_reply_error(cn, NULL, what);
        conn_drop(cn);
        return NULL;
    }
    reply = cn->pipe.e[0].reply;
    if (conn_reply_error(cn, reply, what) != ERROR_KIND_NONE) {
        conn_drop(cn);
        return NULL;
    }
    return reply;
}

int schedule_store_read(conn *cn, const char *prefix, const char *type,
                        const char *name, int64_t *out)
{
    char key[KEY_MAX];
    redisReply *reply;
    int rc = -1;

    key_of_type(key, sizeof(key), prefix, type, "schedules");
    pipeline_reset(&cn->pipe);
    if (pipeline_addf(&cn->pipe, key, "ZSCORE %s %s", key, name) != 0) {
        error_set(cn->errstr, sizeof(cn->errstr), "%s", cn->pipe.errstr);
        cn->err = cn->pipe.err;
        return -1;
    }
    reply = run_one(cn, "reading the last tick");
    if (reply == NULL)
        goto out;
    if (reply->type == REDIS_REPLY_NIL) {
        *out = -1;
        rc = 0;
    } else if (reply->type == REDIS_REPLY_STRING) {
        *out = (int64_t)strtod(reply->str, NULL);
        rc = 0;
    } else {
        cn->err = ERROR_KIND_REPLY;
        error_set(cn->errstr, sizeof(cn->errstr),
                  "unexpected reply to ZSCORE %s", key);
    }
out:
    pipeline_reset(&cn->pipe);
    return rc;
}

int schedule_store_mark(conn *cn, const char *prefix, const char *type,
                        const char *name, int64_t tick)
{
    char key[KEY_MAX], score[24];
    int rc;

    key_of_type(key, sizeof(key), prefix, type, "schedules");
    snprintf(score, sizeof(score), "%" PRId64, tick);
    pipeline_reset(&cn->pipe);
    if (pipeline_addf(&cn->pipe, key, "ZADD %s GT %s %s", key, score, name) !=
        0) {
        error_set(cn->errstr, sizeof(cn->errstr), "%s", cn->pipe.errstr);
        cn->err = cn->pipe.err;
        return -1;
    }
    rc = run_one(cn, "recording the last tick") != NULL ? 0 : -1;
    pipeline_reset(&cn->pipe);
    return rc;
}
