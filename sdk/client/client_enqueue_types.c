/* <prefix>:types: the types a connection has added, and the SADD of
 * those it has not, after their tasks are in. See
 * client_enqueue_types.h. */
#include "client_enqueue_types.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"
#include "keys.h"

void client_enqueue_types_init(enqueue_types *added)
{
    added->names = NULL;
    added->n = 0;
    added->cap = 0;
    added->conn = NULL;
}

void client_enqueue_types_free(enqueue_types *added)
{
    free(added->names);
    client_enqueue_types_init(added);
}

/* Makes the list the one of connection redis (a new connection starts
 * over). */
static void types_of(enqueue_types *added, const redisContext *redis)
{
    if (added->conn != redis) {
        added->conn = redis;
        added->n = 0;
    }
}

/* True if type still has to be added to the types set. */
static int type_unknown(const enqueue_types *added, const char *type)
{
    for (size_t i = 0; i < added->n; i++)
        if (strcmp(added->names[i], type) == 0)
            return 0;
    return 1;
}

/* Remembers that type was added on this connection. Out of memory only
 * means it is added again next time. */
static void type_added(enqueue_types *added, const char *type)
{
    if (added->n == added->cap) {
        size_t cap = added->cap ? 2 * added->cap : 8;
        void *grown = realloc(added->names, cap * sizeof(*added->names));
        if (!grown)
            return;
        added->names = grown;
        added->cap = cap;
    }
    snprintf(added->names[added->n++], sizeof(*added->names), "%s", type);
}

wharf_client_status client_enqueue_add_types(wharf_client *c,
                                             enqueue_types *added,
                                             const wharf_enqueue_opts *tasks,
                                             const size_t *index, size_t count,
                                             const wharf_enqueue_reply *replies)
{
    wharf_client_status status = WHARF_CLIENT_OK;
    pipeline *p = &c->pipe;
    redisContext *redis;
    size_t first, sent = 0;
    char key[KEY_MAX];

    key_global(key, sizeof(key), c->prefix, "types");
    if (!(redis = client_redis_of(c, key)))
        return c->connect_status;
    types_of(added, redis);
    first = added->n;
    pipeline_reset(p);
    for (size_t i = 0; i < count; i++) {
        size_t t = index ? index[i] : i;
        const char *type = tasks[t].type;
        if (replies[t].status != WHARF_CLIENT_OK || !type_unknown(added, type))
            continue;
        if (pipeline_addf(p, key, "SADD %s %s", key, type) != 0)
            return client_reply_status(c, NULL, "enqueue");
        type_added(added, type);
        sent++;
    }
    if (sent > 0 && pipeline_run(p) != 0)
        status = client_reply_status(c, NULL, "enqueue");
    for (size_t i = 0; i < sent && status == WHARF_CLIENT_OK; i++)
        status = client_reply_status(c, pipeline_reply(p, i),
                                     "enqueue: adding the type");
    pipeline_reset(p);
    /* Not added: forget them, so the next enqueue tries again. */
    if (status != WHARF_CLIENT_OK && added->n > first)
        added->n = first;
    return status;
}
