/* The figures of types this host does not serve; see known_types.h. */
#include "known_types.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_ids.h"
#include "keys.h"

/* Commands per type, in this order. */
enum { K_XLEN, K_PENDING, K_DELAYED, K_DEAD, K_PRESSURE, K_COUNT };

void known_types_free(known_types *k)
{
    for (size_t i = 0; k->names && i < k->n; i++)
        free(k->names[i]);
    free(k->names);
    free(k->figures);
    k->names = NULL;
    k->figures = NULL;
    k->n = 0;
}

/* Adds the K_COUNT commands of type, each to its key's node. */
static void append_queries(broker *b, const char *type)
{
    char key[KEY_MAX];
    const char *prefix = b->cfg->prefix;
    pipeline *p = &b->pipe;

    key_of_type(key, sizeof(key), prefix, type, "stream");
    pipeline_addf(p, key, "XLEN %s", key);
    pipeline_addf(p, key, "XPENDING %s %s", key, WHARF_GROUP);
    key_of_type(key, sizeof(key), prefix, type, "delayed");
    pipeline_addf(p, key, "ZCARD %s", key);
    key_of_type(key, sizeof(key), prefix, type, "dead");
    pipeline_addf(p, key, "ZCARD %s", key);
    key_of_type(key, sizeof(key), prefix, type, "pressure");
    pipeline_addf(p, key, "EXISTS %s", key);
}

/* Stores reply q of a type into f (an error reply, such as NOGROUP, or a
 * reply of another shape counts as 0). */
static void take(int q, const redisReply *r, queue_figures *f)
{
    long long v = 0;

    if (q == K_PENDING && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
        r->element[0]->type == REDIS_REPLY_INTEGER)
        v = r->element[0]->integer;
    else if (r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    if (q == K_XLEN)
        f->ready = v;
    else if (q == K_PENDING)
        f->running = v;
    else if (q == K_DELAYED)
        f->delayed = v;
    else if (q == K_DEAD)
        f->dead = v;
    else
        f->pressure = v != 0;
}

int known_types_refresh(broker *b, known_types *k)
{
    known_types next = {NULL, NULL, 0};
    char key[KEY_MAX];
    redisReply *types;
    int rc = -1;

    if (!broker_connected(b))
        return -1;
    key_global(key, sizeof(key), b->cfg->prefix, "types");
    types = pipeline_command(&b->pipe, key, "SMEMBERS %s", key);
    if (!types) {
        snprintf(b->errstr, sizeof(b->errstr), "SMEMBERS %.400s: %.590s", key,
                 b->pipe.errstr);
        return -1;
    }
    if (types->type != REDIS_REPLY_ARRAY) {
        rc = 0; /* not a set: nothing to show */
        goto out;
    }
    pipeline_reset(&b->pipe);
    next.names = calloc(types->elements + 1, sizeof(*next.names));
    next.figures = calloc(types->elements + 1, sizeof(*next.figures));
    if (!next.names || !next.figures)
        goto out;
    for (size_t i = 0; i < types->elements && next.n < KNOWN_TYPES_MAX; i++) {
        const char *type = types->element[i]->str;
        if (types->element[i]->type != REDIS_REPLY_STRING ||
            !client_valid_type(type) || broker_queue_of(b, type))
            continue;
        if (!(next.names[next.n] = strdup(type)))
            goto out;
        next.figures[next.n].type = next.names[next.n];
        append_queries(b, type);
        next.n++;
    }
    if (next.n > 0 && pipeline_run(&b->pipe) != 0) {
        snprintf(b->errstr, sizeof(b->errstr),
                 "reading figures of unserved types: %s", b->pipe.errstr);
        goto out;
    }
    for (size_t i = 0; i < next.n; i++) {
        for (int q = 0; q < K_COUNT; q++)
            take(q, pipeline_reply(&b->pipe, i * K_COUNT + (size_t)q),
                 &next.figures[i]);
        snprintf(next.figures[i].node, sizeof(next.figures[i].node), "%s",
                 nodes_name(&b->nodes, b->pipe.e[i * K_COUNT].node));
        /* Entries pending are in the stream too, but not ready. */
        next.figures[i].ready -= next.figures[i].running;
        if (next.figures[i].ready < 0)
            next.figures[i].ready = 0;
    }
    known_types_free(k);
    *k = next;
    next.names = NULL;
    next.figures = NULL;
    next.n = 0;
    rc = 0;
out:
    pipeline_reset(&b->pipe);
    known_types_free(&next);
    freeReplyObject(types);
    return rc;
}
