/* wharf_enqueue_batch: the tasks planned into rounds of calls of
 * enqueue.lua (client_enqueue_call.c), each round pipelined to the nodes
 * of its types while the next is built; a call Redis could not answer
 * (NOSCRIPT, a redirection) runs again alone (client_enqueue.c). */
#include "client_enqueue.h"

#include <stdio.h>
#include <string.h>

#include "client_internal.h"
#include "tls.h"

/* True if b may join the call a is in: same type, both ready or both
 * delayed. */
static int same_call(const wharf_enqueue_opts *a, const wharf_enqueue_opts *b)
{
    return (a->delay_ms > 0) == (b->delay_ms > 0) &&
           strcmp(a->type, b->type) == 0;
}

/* Plans a round from tasks[start ..]: checks tasks (a bad one gets its
 * BAD_INPUT reply now) until ROUND_TASKS are taken, and groups them into
 * calls (see same_call). Returns how many tasks it went through. */
static size_t plan_round(wharf_client *c, const wharf_enqueue_opts *tasks,
                         size_t start, size_t n, wharf_enqueue_reply *replies,
                         enqueue_round *round)
{
    size_t i = start, bytes = 0;

    round->n_members = 0;
    round->n_calls = 0;
    for (; i < n && round->n_members < ROUND_TASKS; i++) {
        const wharf_enqueue_opts *t = &tasks[i];
        call_plan *last =
            round->n_calls ? &round->calls[round->n_calls - 1] : NULL;
        memset(&replies[i], 0, sizeof(replies[i]));
        replies[i].status = client_enqueue_check(c, t);
        if (replies[i].status != WHARF_CLIENT_OK)
            continue;
        if (!last || last->count == CALL_TASKS ||
            bytes + t->payload_len > CALL_BYTES ||
            !same_call(&tasks[round->members[last->first]], t)) {
            last = &round->calls[round->n_calls++];
            last->first = round->n_members;
            last->count = 0;
            last->state = CALL_PENDING;
            bytes = 0;
        }
        round->members[round->n_members++] = i;
        last->count++;
        bytes += t->payload_len;
    }
    return i - start;
}

/* Flushes the output buffer of each node of round to Redis, so they work
 * on what was appended while we build the next round. REDIS_OK or
 * REDIS_ERR (c->pipe.errstr set). */
static int flush_output(wharf_client *c, const enqueue_round *round)
{
    for (size_t k = 0; k < round->n_nodes; k++) {
        redisContext *redis = c->nodes.list[round->nodes[k]].redis;
        int done = 0;
        while (redis && !done)
            if (tls_write(redis, &done) != REDIS_OK) {
                snprintf(c->pipe.errstr, sizeof(c->pipe.errstr), "%s",
                         redis->errstr);
                return REDIS_ERR;
            }
        if (!redis)
            return REDIS_ERR;
    }
    return REDIS_OK;
}

/* The live connection of node index for a round, or NULL with
 * c->pipe.errstr set. */
static redisContext *round_redis(wharf_client *c, int index)
{
    redisContext *redis = nodes_context(&c->nodes, index);

    if (!redis)
        memcpy(c->pipe.errstr, c->nodes.errstr, sizeof(c->pipe.errstr));
    return redis;
}

/* Notes that round sent a call to node index. */
static void round_uses(enqueue_round *round, int index)
{
    for (size_t k = 0; k < round->n_nodes; k++)
        if (round->nodes[k] == index)
            return;
    round->nodes[round->n_nodes] = index;
    round->acks[round->n_nodes++] = -1;
}

/* Builds and sends every call of a planned round, each to the node of
 * its type, without waiting for the replies; with min_replicas, a WAIT
 * follows each node's calls. */
static wharf_client_status send_round(wharf_client *c, enqueue_call *call,
                                      const wharf_enqueue_opts *tasks,
                                      enqueue_round *round)
{
    wharf_client_status status =
        client_connect(c) == 0 ? WHARF_CLIENT_OK : c->connect_status;

    round->n_nodes = 0;
    c->pipe.errstr[0] = '\0';
    for (size_t i = 0; i < round->n_calls && status == WHARF_CLIENT_OK; i++) {
        call_plan *p = &round->calls[i];
        redisContext *redis;
        status = client_enqueue_build(c, call, tasks, &round->members[p->first],
                                      p->count);
        if (status != WHARF_CLIENT_OK)
            break;
        /* Every key of the call has the type's hash tag. */
        p->node = nodes_of_slot(&c->nodes,
                                (unsigned)command_first_key_slot(&call->cmd));
        if (!(redis = round_redis(c, p->node))) {
            status = client_reply_status(c, NULL, "enqueue");
        } else if (command_append(&call->cmd, redis) == 0) {
            p->state = CALL_SENT;
            round_uses(round, p->node);
        } else if (call->cmd.err) {
            client_error(c, "enqueue: encoding the script call: %s",
                         strerror(call->cmd.err));
            status = WHARF_CLIENT_ERROR;
        } else {
            snprintf(c->pipe.errstr, sizeof(c->pipe.errstr), "%s",
                     redis->errstr);
            status = client_reply_status(c, NULL, "enqueue");
        }
    }
    for (size_t k = 0; k < round->n_nodes && c->min_replicas > 0; k++)
        if (status == WHARF_CLIENT_OK &&
            redisAppendCommand(c->nodes.list[round->nodes[k]].redis,
                               "WAIT %d %d", c->min_replicas,
                               c->replicas_timeout_ms) != REDIS_OK)
            status = client_reply_status(c, NULL, "enqueue");
    if (status == WHARF_CLIENT_OK && flush_output(c, round) != REDIS_OK)
        status = client_reply_status(c, NULL, "enqueue");
    return status;
}

/* Reads the replies of a sent round. A call whose reply is not the
 * script's answer (NOSCRIPT, a redirection, a slot being migrated) is
 * marked CALL_AGAIN and *again set: it runs again alone once nothing is
 * in flight. Then reads the round's WAITs, if any. */
static wharf_client_status read_round(wharf_client *c,
                                      const wharf_enqueue_opts *tasks,
                                      wharf_enqueue_reply *replies,
                                      enqueue_round *round, int *again)
{
    for (size_t i = 0; i < round->n_calls; i++) {
        call_plan *p = &round->calls[i];
        redisContext *redis = c->nodes.list[p->node].redis;
        redisReply *r = NULL;
        if (p->state != CALL_SENT)
            continue;
        if (!redis || tls_get_reply(redis, (void **)&r) != REDIS_OK) {
            snprintf(c->pipe.errstr, sizeof(c->pipe.errstr), "%s",
                     redis ? redis->errstr : "connection lost");
            return client_reply_status(c, NULL, "enqueue");
        }
        if (pipeline_must_settle(r)) {
            p->state = CALL_AGAIN;
            *again = 1;
        } else {
            p->state = CALL_ANSWERED;
            client_enqueue_parse(c, r, tasks, &round->members[p->first],
                                 p->count, replies);
        }
        freeReplyObject(r);
    }
    for (size_t k = 0; k < round->n_nodes && c->min_replicas > 0; k++) {
        redisContext *redis = c->nodes.list[round->nodes[k]].redis;
        redisReply *r = NULL;
        if (!redis || tls_get_reply(redis, (void **)&r) != REDIS_OK) {
            snprintf(c->pipe.errstr, sizeof(c->pipe.errstr), "%s",
                     redis ? redis->errstr : "connection lost");
            return client_reply_status(c, NULL, "enqueue");
        }
        round->acks[k] = r->type == REDIS_REPLY_INTEGER ? (int)r->integer : 0;
        freeReplyObject(r);
    }
    for (size_t i = 0; i < round->n_calls && c->min_replicas > 0; i++) {
        const call_plan *p = &round->calls[i];
        for (size_t k = 0; k < round->n_nodes; k++)
            if (p->state == CALL_ANSWERED && round->nodes[k] == p->node)
                client_enqueue_check_replicas(
                    c, round->acks[k], nodes_name(&c->nodes, p->node),
                    &round->members[p->first], p->count, replies);
    }
    return WHARF_CLIENT_OK;
}

/* Runs the calls of a read round marked CALL_AGAIN again, one by one. */
static wharf_client_status rerun_round(wharf_client *c, enqueue_call *call,
                                       const wharf_enqueue_opts *tasks,
                                       wharf_enqueue_reply *replies,
                                       enqueue_round *round)
{
    wharf_client_status status = WHARF_CLIENT_OK;

    for (size_t i = 0; i < round->n_calls && status == WHARF_CLIENT_OK; i++) {
        call_plan *p = &round->calls[i];
        if (p->state != CALL_AGAIN)
            continue;
        status = client_enqueue_alone(c, call, tasks, &round->members[p->first],
                                      p->count, replies);
        if (status == WHARF_CLIENT_OK)
            p->state = CALL_ANSWERED;
    }
    return status;
}

/* After a failure: the tasks of every call of round without an answer get
 * status (some of them may have been enqueued). */
static void fail_round(enqueue_round *round, wharf_enqueue_reply *replies,
                       wharf_client_status status)
{
    for (size_t i = 0; i < round->n_calls; i++) {
        const call_plan *p = &round->calls[i];
        if (p->state == CALL_ANSWERED)
            continue;
        for (size_t m = 0; m < p->count; m++)
            replies[round->members[p->first + m]].status = status;
    }
}

/* Rounds go out back to back: round k + 1 is built and sent while Redis
 * works on round k, whose replies are read after. */
wharf_client_status wharf_enqueue_batch(wharf_client *client,
                                        const wharf_enqueue_opts *tasks,
                                        size_t n, wharf_enqueue_reply *replies)
{
    return wharf_enqueue_batch_with(client, tasks, n, NULL, replies);
}

wharf_client_status wharf_enqueue_batch_with(wharf_client *client,
                                             const wharf_enqueue_opts *tasks,
                                             size_t n,
                                             const wharf_task_options *options,
                                             wharf_enqueue_reply *replies)
{
    wharf_client_status status = WHARF_CLIENT_OK;
    enqueue_round *sent = NULL, *next = NULL;
    struct enqueue_buffers *b;
    size_t done = 0;
    int which = 0;

    if (!client)
        return WHARF_CLIENT_BAD_INPUT;
    if (n == 0)
        return WHARF_CLIENT_OK;
    if (!tasks || !replies) {
        client_error(client, "enqueue: no tasks or no room for replies");
        return WHARF_CLIENT_BAD_INPUT;
    }
    if (!(b = client_enqueue_buffers(client)))
        status = WHARF_CLIENT_ERROR;
    else /* every call of the batch carries the same options, "" for none */
        status = client_enqueue_options(client, &b->call, options);
    if (status == WHARF_CLIENT_BAD_INPUT) {
        for (size_t i = 0; i < n; i++) {
            memset(&replies[i], 0, sizeof(replies[i]));
            replies[i].status = status;
        }
        return status;
    }
    while (status == WHARF_CLIENT_OK && (done < n || sent)) {
        int again = 0;
        next = NULL;
        if (done < n) {
            next = &b->rounds[which];
            which ^= 1;
            done += plan_round(client, tasks, done, n, replies, next);
            status = send_round(client, &b->call, tasks, next);
        }
        if (sent && status == WHARF_CLIENT_OK)
            status = read_round(client, tasks, replies, sent, &again);
        /* A call to run again: drain the pipeline before anything runs alone.
         */
        if (again && next && status == WHARF_CLIENT_OK)
            status = read_round(client, tasks, replies, next, &again);
        if (again && status == WHARF_CLIENT_OK)
            status = rerun_round(client, &b->call, tasks, replies, sent);
        if (again && next && status == WHARF_CLIENT_OK)
            status = rerun_round(client, &b->call, tasks, replies, next);
        if (status != WHARF_CLIENT_OK)
            break;
        sent = again ? NULL : next;
    }
    if (status != WHARF_CLIENT_OK) {
        if (sent)
            fail_round(sent, replies, status);
        if (next)
            fail_round(next, replies, status);
        /* Unsent commands or unread replies may be left in them. */
        client_drop(client);
    }
    for (; done < n; done++) {
        memset(&replies[done], 0, sizeof(replies[done]));
        replies[done].status = status;
    }
    /* Every round is read: nothing is in flight. */
    if (status == WHARF_CLIENT_OK)
        status = client_enqueue_add_types(client, &b->added, tasks, NULL, n,
                                          replies);
    for (size_t i = 0; status == WHARF_CLIENT_OK && i < n; i++)
        if (replies[i].status == WHARF_CLIENT_UNSERVED) {
            client_enqueue_say_unserved(client, tasks[i].type);
            break;
        }
    return status;
}
