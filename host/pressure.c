/* Backpressure and queue figures; see pressure.h. */
#include "pressure.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "keys.h"
#include "script.h"

/* figures: KEYS stream, delayed, dead, pressure, backlog; ARGV group,
 * high, low, ttl_ms. Returns {ready, running, delayed, dead, pressure}. */
static script script_figures = {
    .name = "figures",
    .source = "local len = redis.call('XLEN', KEYS[1])\n"
              "local running = 0\n"
              "local p = redis.pcall('XPENDING', KEYS[1], ARGV[1])\n"
              "if type(p) == 'table' and p.err == nil then running = p[1] end\n"
              "local delayed = redis.call('ZCARD', KEYS[2])\n"
              "local dead = redis.call('ZCARD', KEYS[3])\n"
              "local ready = len - running\n"
              "if ready < 0 then ready = 0 end\n"
              "local backlog = ready + delayed\n"
              "redis.call('SET', KEYS[5], backlog, 'PX', ARGV[4])\n"
              "local pressure = 0\n"
              "if backlog > tonumber(ARGV[2]) then\n"
              "  redis.call('SET', KEYS[4], '1', 'PX', ARGV[4])\n"
              "  pressure = 1\n"
              "elseif backlog < tonumber(ARGV[3]) then\n"
              "  redis.call('DEL', KEYS[4])\n"
              "elseif redis.call('PEXPIRE', KEYS[4], ARGV[4]) == 1 then\n"
              "  pressure = 1\n"
              "end\n"
              "return {ready, running, delayed, dead, pressure}\n"};

/* Builds the call for queue q into the given buffers; returns argc. */
static int figures_args(const broker *b, const broker_queue *q,
                        char keys[2][KEY_MAX], char numbers[3][24],
                        const char **argv)
{
    key_of_type(keys[0], KEY_MAX, b->cfg->prefix, q->type, "pressure");
    key_of_type(keys[1], KEY_MAX, b->cfg->prefix, q->type, "backlog");
    snprintf(numbers[0], 24, "%" PRIu64, q->pol->high_watermark);
    snprintf(numbers[1], 24, "%" PRIu64, q->pol->low_watermark);
    snprintf(numbers[2], 24, "%d", PRESSURE_TTL_MS);
    argv[0] = q->stream;
    argv[1] = q->delayed;
    argv[2] = q->dead;
    argv[3] = keys[0];
    argv[4] = keys[1];
    argv[5] = WHARF_GROUP;
    argv[6] = numbers[0];
    argv[7] = numbers[1];
    argv[8] = numbers[2];
    return 9;
}

static int read_figures(const redisReply *r, queue_figures *f)
{
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 5)
        return -1;
    for (size_t i = 0; i < 5; i++)
        if (r->element[i]->type != REDIS_REPLY_INTEGER)
            return -1;
    f->ready = r->element[0]->integer;
    f->running = r->element[1]->integer;
    f->delayed = r->element[2]->integer;
    f->dead = r->element[3]->integer;
    f->pressure = r->element[4]->integer != 0;
    return 0;
}

int pressure_refresh(broker *b, queue_figures *out)
{
    char keys[2][KEY_MAX], numbers[3][24];
    const char *argv[9];
    pipeline *p = &b->pipe;
    int argc;

    if (!broker_connected(b))
        return -1;
    if (script_figures.sha[0] == '\0')
        script_init(&script_figures);
    pipeline_reset(p);
    for (size_t i = 0; i < b->n_queues; i++) {
        argc = figures_args(b, &b->queues[i], keys, numbers, argv);
        if (pipeline_add_script(p, &script_figures, 5, argc, argv, NULL) != 0)
            return -1;
    }
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
