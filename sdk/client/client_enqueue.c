/* Enqueue (docs/protocol.md, enqueue.lua): one atomic Lua script enforces the
 * type's policy in Redis, deduplicates by id and adds the task to the
 * stream, or to the delayed set when it has a delay. One call of the
 * script takes a run of tasks of one type, each handled exactly as if it
 * were alone, so a batch pays the script's fixed costs (policy, TIME,
 * pressure, EVALSHA itself) once per run instead of once per task.
 *
 * This file: wharf_enqueue (one task, one call), the client's enqueue
 * buffers, and a call run alone. The call itself is client_enqueue_call.c,
 * <prefix>:types client_enqueue_types.c, wharf_enqueue_batch
 * client_enqueue_batch.c. */
#include "client_enqueue.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"

void wharf_client_set_strict(wharf_client *client, int strict)
{
    if (client)
        client->strict = strict != 0;
}

void client_enqueue_free(wharf_client *c)
{
    if (c->enqueue_buffers) {
        command_free(&c->enqueue_buffers->call.cmd);
        client_enqueue_types_free(&c->enqueue_buffers->added);
    }
    free(c->enqueue_buffers);
    c->enqueue_buffers = NULL;
}

struct enqueue_buffers *client_enqueue_buffers(wharf_client *c)
{
    if (!c->enqueue_buffers) {
        c->enqueue_buffers = malloc(sizeof(*c->enqueue_buffers));
        if (c->enqueue_buffers) {
            command_init(&c->enqueue_buffers->call.cmd);
            client_enqueue_types_init(&c->enqueue_buffers->added);
        } else
            client_error(c, "enqueue: out of memory");
    }
    return c->enqueue_buffers;
}

wharf_client_status client_enqueue_alone(wharf_client *c, enqueue_call *call,
                                         const wharf_enqueue_opts *tasks,
                                         const size_t *index, size_t count,
                                         wharf_enqueue_reply *replies)
{
    pipeline *p = &c->pipe;
    wharf_client_status status;

    if (client_connect(c) != 0)
        return c->connect_status;
    status = client_enqueue_build(c, call, tasks, index, count);
    if (status != WHARF_CLIENT_OK)
        return status;
    pipeline_reset(p);
    p->wait = c->min_replicas > 0;
    p->min_replicas = c->min_replicas;
    p->wait_timeout_ms = c->replicas_timeout_ms;
    if (pipeline_add_command(p, -1, &call->cmd, &script_enqueue) != 0) {
        client_error(c, "enqueue: encoding the script call: %s", p->errstr);
        return WHARF_CLIENT_ERROR;
    }
    /* Redirections and NOSCRIPT are followed in there (pipeline.h). */
    if (pipeline_run(p) != 0)
        client_drop(c);
    status = client_enqueue_parse(c, pipeline_reply(p, 0), tasks, index, count,
                                  replies);
    if (status == WHARF_CLIENT_OK && p->wait)
        client_enqueue_check_replicas(c, p->fewest_acks,
                                      nodes_name(&c->nodes, p->e[0].node),
                                      index, count, replies);
    pipeline_reset(p);
    if (status == WHARF_CLIENT_OK)
        status = client_enqueue_add_types(c, &c->enqueue_buffers->added, tasks,
                                          index, count, replies);
    return status;
}

wharf_client_status wharf_enqueue(wharf_client *client,
                                  const wharf_enqueue_opts *opts,
                                  wharf_enqueue_reply *out)
{
    return wharf_enqueue_with(client, opts, NULL, out);
}

wharf_client_status wharf_enqueue_with(wharf_client *client,
                                       const wharf_enqueue_opts *opts,
                                       const wharf_task_options *options,
                                       wharf_enqueue_reply *out)
{
    struct enqueue_buffers *b;
    wharf_enqueue_reply answer;
    wharf_client_status status;
    size_t only = 0;

    if (!client)
        return WHARF_CLIENT_BAD_INPUT;
    status = client_enqueue_check(client, opts);
    if (status != WHARF_CLIENT_OK)
        return status;
    if (!(b = client_enqueue_buffers(client)))
        return WHARF_CLIENT_ERROR;
    status = client_enqueue_options(client, &b->call, options);
    if (status != WHARF_CLIENT_OK)
        return status;
    memset(&answer, 0, sizeof(answer));
    status = client_enqueue_alone(client, &b->call, opts, &only, 1, &answer);
    if (status == WHARF_CLIENT_OK)
        status = answer.status;
    if (status == WHARF_CLIENT_UNSERVED)
        client_enqueue_say_unserved(client, opts->type);
    if (out &&
        (status == WHARF_CLIENT_OK || status == WHARF_CLIENT_DUPLICATE ||
         status == WHARF_CLIENT_TOO_LARGE ||
         status == WHARF_CLIENT_BACKPRESSURE ||
         status == WHARF_CLIENT_UNSERVED || status == WHARF_CLIENT_PROTOCOL))
        *out = answer;
    return status;
}

void client_enqueue_say_unserved(wharf_client *c, const char *type)
{
    char message[sizeof(c->errstr) - 32];

    client_unserved_message(c, type, message, sizeof(message));
    client_error(c, "%s; refused (strict)", message);
}
