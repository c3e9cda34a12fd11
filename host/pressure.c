/* Backpressure and queue figures; see pressure.h. */
#include "pressure.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "lua_scripts.h"

/* A number argument of the figures call: a uint64_t in decimal. */
#define FIGURE_ARG_MAX 24

/* figures.lua answers {ready, running, delayed, dead, pressure, paused,
 * slots, held, held_oldest_ms}. */
#define FIGURES_REPLY_LEN 9

/* Adds the figures call for queue q (sdk/lua/figures.lua) to p. 0 or -1. */
static int add_figures(broker *b, const broker_queue *q)
{
    char high[FIGURE_ARG_MAX], low[FIGURE_ARG_MAX], ttl[FIGURE_ARG_MAX];
    pipeline *p = &b->pipe;

    snprintf(high, sizeof(high), "%" PRIu64, q->pol->high_watermark);
    snprintf(low, sizeof(low), "%" PRIu64, q->pol->low_watermark);
    snprintf(ttl, sizeof(ttl), "%d", PRESSURE_TTL_MS);
    if (script_figures_call(&p->cmd, b->cfg->prefix, q->type, WHARF_GROUP, high,
                            low, ttl) != 0) {
        p->err = p->cmd.err == ENOMEM ? ERROR_KIND_NOMEM : ERROR_KIND_REPLY;
        snprintf(p->errstr, sizeof(p->errstr), "building a call of %s",
                 script_figures.name);
        return -1;
    }
    return pipeline_add_command(p, -1, &p->cmd, &script_figures);
}

static int read_figures(const redisReply *r, queue_figures *f)
{
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != FIGURES_REPLY_LEN)
        return -1;
    for (size_t i = 0; i < FIGURES_REPLY_LEN; i++)
        if (r->element[i]->type != REDIS_REPLY_INTEGER)
            return -1;
    f->ready = r->element[0]->integer;
    f->running = r->element[1]->integer;
    f->delayed = r->element[2]->integer;
    f->dead = r->element[3]->integer;
    f->pressure = r->element[4]->integer != 0;
    f->paused = r->element[5]->integer != -2;
    f->paused_left_ms = f->paused ? r->element[5]->integer : 0;
    f->slots = r->element[6]->integer;
    f->held = r->element[7]->integer;
    f->held_oldest_ms = r->element[8]->integer;
    return 0;
}

int pressure_refresh(broker *b, queue_figures *out)
{
    pipeline *p = &b->pipe;

    if (!broker_connected(b))
        return -1;
    pipeline_reset(p);
    for (size_t i = 0; i < b->n_queues; i++)
        if (add_figures(b, &b->queues[i]) != 0)
            return -1;
    if (pipeline_run(p) != 0) {
        pipeline_reset(p);
        return -1;
    }
    for (size_t i = 0; i < b->n_queues; i++) {
        queue_figures f = {.type = b->queues[i].type};
        snprintf(f.node, sizeof(f.node), "%s",
                 broker_node_of(b, &b->queues[i]));
        if (read_figures(pipeline_reply(p, i), &f) != 0)
            b->redis_errors++; /* shown as zeros; the next pass tries again */
        out[i] = f;
    }
    pipeline_reset(p);
    return 0;
}
