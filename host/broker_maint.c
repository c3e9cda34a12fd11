/* The broker's maintenance: promoting due delayed tasks into the
 * stream and trimming the dead sets, a bounded number of ids a call. */
#include <inttypes.h>
#include <stdio.h>

#include "broker_internal.h"
#include "log.h"
#include "lua_scripts.h"

/* Runs a maintenance script (promote, trim_dead) over ids, as its
 * header states: its numbered keys of q's type, then its "then" key of
 * each id; its numbered argument lead_arg (if it has one), then the ids.
 * Returns the script's integer, or -1 on a connection error. */
static long move_ids(broker *b, const script_spec *spec, const broker_queue *q,
                     const char *lead_arg, const redisReply *ids)
{
    const script *s = spec->script;
    const char *what = spec->then_keys[0].what;
    command *cmd = &b->scratch->cmd;
    char key[KEY_MAX];
    long result = -1;
    redisReply *r;

    script_spec_keys(cmd, spec, b->cfg->prefix, q->type, NULL);
    for (size_t i = 0; i < ids->elements; i++)
        command_push_key_copy(
            cmd, key, call_task_key(q, what, ids->element[i]->str, key));
    if (spec->n_args > 0)
        call_push_str(b, lead_arg);
    for (size_t i = 0; i < ids->elements; i++)
        call_push(b, ids->element[i]->str, ids->element[i]->len);
    r = call_run(b, s);
    if (!r)
        return -1;
    if (r->type == REDIS_REPLY_INTEGER) {
        result = (long)r->integer;
    } else {
        /* The connection is fine; the ids stay where they are and the
         * next pass tries them again. */
        broker_failed(b, s->name, r);
        log_fields(WHARF_LOG_ERROR, "maintenance script failed",
                   (log_field[]){LOG_STR("type", q->type),
                                 LOG_STR("error", b->errstr)},
                   2);
        result = 0;
    }
    freeReplyObject(r);
    return result;
}

/* True if every element of r is a string (ids from ZRANGE and the like). */
static bool all_strings(const redisReply *r)
{
    for (size_t i = 0; i < r->elements; i++)
        if (r->element[i]->type != REDIS_REPLY_STRING)
            return false;
    return true;
}

long broker_promote(broker *b)
{
    long total = 0;
    char limit[16];

    if (!broker_connected(b))
        return -1;
    snprintf(limit, sizeof(limit), "%d", BROKER_MOVE_BATCH);
    for (size_t i = 0; i < b->n_queues; i++) {
        broker_queue *q = &b->queues[i];
        for (int round = 0; round < BROKER_MOVE_ROUNDS; round++) {
            pipeline *p = &b->pipe;
            redisReply *due = NULL;
            long moved;

            if (script_due_call(&p->cmd, b->cfg->prefix, q->type, limit) == 0)
                due = pipeline_call(p, &script_due, &p->cmd);
            if (!due) {
                broker_failed(b, "due", NULL);
                return -1;
            }
            if (due->type != REDIS_REPLY_ARRAY || !all_strings(due)) {
                broker_failed(b, "due", due);
                freeReplyObject(due);
                break;
            }
            if (due->elements == 0) {
                freeReplyObject(due);
                break;
            }
            moved = move_ids(b, &script_promote_spec, q, NULL, due);
            freeReplyObject(due);
            if (moved < 0)
                return -1;
            total += moved;
            if (moved < BROKER_MOVE_BATCH)
                break;
        }
    }
    return total;
}

long broker_trim_dead(broker *b)
{
    long total = 0;

    if (!broker_connected(b))
        return -1;
    for (size_t i = 0; i < b->n_queues; i++) {
        broker_queue *q = &b->queues[i];
        for (int round = 0; round < BROKER_MOVE_ROUNDS; round++) {
            long long size, excess;
            char max[24];
            redisReply *r =
                pipeline_command(&b->pipe, q->dead, "ZCARD %s", q->dead);
            long removed;

            if (!r || r->type != REDIS_REPLY_INTEGER) {
                broker_failed(b, "ZCARD", r);
                freeReplyObject(r);
                return r ? total : -1;
            }
            size = r->integer;
            freeReplyObject(r);
            excess = size - (long long)q->pol->dead_max;
            if (excess <= 0)
                break;
            if (excess > BROKER_MOVE_BATCH)
                excess = BROKER_MOVE_BATCH;
            r = pipeline_command(&b->pipe, q->dead, "ZRANGE %s 0 %lld", q->dead,
                                 excess - 1);
            if (!r || r->type != REDIS_REPLY_ARRAY || !all_strings(r)) {
                broker_failed(b, "ZRANGE", r);
                freeReplyObject(r);
                return r ? total : -1;
            }
            snprintf(max, sizeof(max), "%" PRIu64, q->pol->dead_max);
            removed = move_ids(b, &script_trim_dead_spec, q, max, r);
            freeReplyObject(r);
            if (removed < 0)
                return -1;
            total += removed;
            if (removed == 0)
                break;
        }
    }
    return total;
}

long broker_limit_wake(broker *b)
{
    long total = 0;

    if (!broker_connected(b))
        return -1;
    for (size_t i = 0; i < b->n_queues; i++) {
        const broker_queue *q = &b->queues[i];
        command *cmd = &b->scratch->cmd;
        redisReply *r;

        if (q->pol->concurrency_limit == 0)
            continue;
        script_limit_wake_keys(cmd, b->cfg->prefix, q->type);
        script_limit_wake_args(
            cmd, call_number((long long)q->pol->concurrency_limit).s);
        r = call_run(b, &script_limit_wake);
        if (!r)
            return -1;
        if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
            r->element[1]->type == REDIS_REPLY_INTEGER)
            total += (long)r->element[1]->integer;
        else /* the connection is fine: the next pass tries again */
            broker_failed(b, script_limit_wake.name, r);
        freeReplyObject(r);
    }
    return total;
}
