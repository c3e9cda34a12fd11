/* The figures of types this host does not serve; see known_types.h. */
#include "known_types.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_ids.h"
#include "keys.h"
#include "xmalloc.h"

void known_types_free(known_types *k)
{
    for (size_t i = 0; k->names && i < k->n; i++)
        free(k->names[i]);
    free(k->names);
    k->names = NULL;
    k->n = 0;
}

int known_types_add_queries(pipeline *p, const char *prefix, const char *type)
{
    char stream[KEY_MAX], delayed[KEY_MAX], dead[KEY_MAX], pressure[KEY_MAX];
    char paused[KEY_MAX], running[KEY_MAX];

    key_of_type(stream, sizeof(stream), prefix, type, "stream");
    key_of_type(delayed, sizeof(delayed), prefix, type, "delayed");
    key_of_type(dead, sizeof(dead), prefix, type, "dead");
    key_of_type(pressure, sizeof(pressure), prefix, type, "pressure");
    key_of_type(paused, sizeof(paused), prefix, type, "paused");
    key_of_type(running, sizeof(running), prefix, type, "running");
    if (pipeline_addf(p, stream, "XLEN %s", stream) != 0 ||
        pipeline_addf(p, stream, "XPENDING %s %s", stream, WHARF_GROUP) != 0 ||
        pipeline_addf(p, delayed, "ZCARD %s", delayed) != 0 ||
        pipeline_addf(p, dead, "ZCARD %s", dead) != 0 ||
        pipeline_addf(p, pressure, "EXISTS %s", pressure) != 0 ||
        pipeline_addf(p, paused, "PTTL %s", paused) != 0 ||
        pipeline_addf(p, running, "ZCARD %s", running) != 0)
        return -1;
    return 0;
}

int known_types_take(int q, const redisReply *r, queue_figures *f)
{
    if (q == KNOWN_PENDING) {
        /* [count, first id, last id, consumers] */
        if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
            r->element[0]->type != REDIS_REPLY_INTEGER)
            return -1;
        f->running = r->element[0]->integer;
        return 0;
    }
    if (r->type != REDIS_REPLY_INTEGER)
        return -1;
    if (q == KNOWN_XLEN)
        f->ready = r->integer;
    else if (q == KNOWN_DELAYED)
        f->delayed = r->integer;
    else if (q == KNOWN_DEAD)
        f->dead = r->integer;
    else if (q == KNOWN_PRESSURE)
        f->pressure = r->integer != 0;
    else if (q == KNOWN_PAUSED) {
        f->paused = r->integer != -2; /* PTTL: -2 is no key */
        f->paused_left_ms = f->paused ? r->integer : 0;
    } else {
        f->slots = r->integer;
    }
    return 0;
}

void known_types_settle(queue_figures *f)
{
    f->ready -= f->running;
    if (f->ready < 0)
        f->ready = 0;
}

int known_types_refresh(broker *b, known_types *k, queue_figures *out)
{
    known_types next = {NULL, 0};
    char key[KEY_MAX];
    redisReply *types;
    int rc = -2;

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
    next.names = xcalloc(types->elements + 1, sizeof(*next.names));
    for (size_t i = 0; i < types->elements && next.n < KNOWN_TYPES_MAX; i++) {
        const char *type = types->element[i]->str;
        if (types->element[i]->type != REDIS_REPLY_STRING ||
            !client_valid_type(type) || broker_queue_of(b, type))
            continue;
        next.names[next.n++] = xstrdup(type);
        if (known_types_add_queries(&b->pipe, b->cfg->prefix, type) != 0)
            goto out;
    }
    if (next.n > 0 && pipeline_run(&b->pipe) != 0) {
        snprintf(b->errstr, sizeof(b->errstr),
                 "reading figures of unserved types: %s", b->pipe.errstr);
        rc = -1;
        goto out;
    }
    known_types_free(k);
    *k = next;
    next.names = NULL;
    next.n = 0;
    for (size_t i = 0; i < k->n; i++) {
        queue_figures f = {.type = k->names[i]};
        /* A reply of another shape leaves its figure at 0. */
        for (int q = 0; q < KNOWN_COMMANDS; q++)
            known_types_take(
                q, pipeline_reply(&b->pipe, i * KNOWN_COMMANDS + (size_t)q),
                &f);
        known_types_settle(&f);
        snprintf(f.node, sizeof(f.node), "%s",
                 nodes_name(&b->nodes, b->pipe.e[i * KNOWN_COMMANDS].node));
        out[i] = f;
    }
    rc = 0;
out:
    pipeline_reset(&b->pipe);
    known_types_free(&next);
    freeReplyObject(types);
    return rc;
}
