/* wharf_enqueue_after, wharf_enqueue_group and the group's reads and
 * cancel: the producer's steps of a workflow (docs/protocol.md,
 * "Workflows"), each one script in one slot: wf_register.lua at each
 * parent, wf_enqueue.lua in the child's or member's slot, wf_notify.lua
 * for the parents that had already finished, wf_group_create.lua and
 * wf_group_count.lua in the group's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wharf/client_workflow.h>

#include "client_ids.h"
#include "client_internal.h"
#include "keys.h"
#include "lua_scripts.h"

/* The default dead_ttl (a producer does not know the hosts'). */
#define WORKFLOW_DEAD_TTL "604800000"
/* Members per pipelined round trip. */
#define WORKFLOW_PIPE 500

/* The word of element 0 of r, or "". */
static const char *word_of(const redisReply *r)
{
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
        r->element[0]->type == REDIS_REPLY_STRING)
        return r->element[0]->str;
    return "";
}

/* Runs the call built in p->cmd; its reply (caller frees) or NULL with
 * *status set (and the connection dropped when it broke). */
static redisReply *run(wharf_client *c, const script *s, const char *what,
                       wharf_client_status *status)
{
    redisReply *r = pipeline_call(&c->pipe, s, &c->pipe.cmd);

    if (!r)
        client_drop(c);
    *status = client_reply_status(c, r, what);
    if (*status != WHARF_CLIENT_OK) {
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

/* The trace to send: the given one, or a new one in buf. */
static const char *trace_of(wharf_client *c, const char *given,
                            char buf[CLIENT_TRACE_SIZE],
                            wharf_client_status *status)
{
    unsigned char bytes[CLIENT_TRACE_BYTES];

    if (given) {
        if (!client_valid_trace(given)) {
            client_error(c, "bad trace '%.60s'", given);
            *status = WHARF_CLIENT_BAD_INPUT;
            return NULL;
        }
        return given;
    }
    if (client_random_bytes(bytes, sizeof(bytes)) != 0) {
        client_error(c, "no randomness for a trace");
        *status = WHARF_CLIENT_ERROR;
        return NULL;
    }
    client_new_trace(bytes, buf);
    return buf;
}

/* Adds type to <prefix>:types (a key of its own slot, so a command of
 * its own); a failure only leaves the type out of wharf stats until a
 * host serves it. */
static void add_type(wharf_client *c, const char *type)
{
    char key[KEY_MAX];

    if (key_global(key, sizeof(key), c->prefix, "types") >= 0)
        freeReplyObject(
            pipeline_command(&c->pipe, key, "SADD %s %s", key, type));
}

/* Checks a child's names and parents. */
static wharf_client_status
check_after(wharf_client *c, const wharf_after_opts *o, const char *id)
{
    wharf_client_status st = client_check_names(c, o->type, id);

    if (st != WHARF_CLIENT_OK)
        return st;
    if (!o->parents || o->n_parents == 0) {
        client_error(c, "a task enqueued after others needs a parent");
        return WHARF_CLIENT_BAD_INPUT;
    }
    for (size_t i = 0; i < o->n_parents; i++) {
        const wharf_parent *p = &o->parents[i];
        st = client_check_names(c, p->type, p->id);
        if (st != WHARF_CLIENT_OK)
            return st;
        if (strchr(p->id, ',')) {
            client_error(c, "parent id '%s' holds a ',': not allowed", p->id);
            return WHARF_CLIENT_BAD_INPUT;
        }
        if (strcmp(p->type, o->type) == 0 && strcmp(p->id, id) == 0) {
            client_error(c, "task %s:%s cannot be its own parent", o->type, id);
            return WHARF_CLIENT_BAD_INPUT;
        }
    }
    return WHARF_CLIENT_OK;
}

/* Tells the held child id of type that parent ended (state "o" with its
 * result, "d"), or asks it to count ("check"). */
static wharf_client_status notify(wharf_client *c, const char *type,
                                  const char *id, const char *sender,
                                  const char *state, const redisReply *result)
{
    wharf_client_status st;
    redisReply *r;
    command *cmd = &c->pipe.cmd;

    if (script_wf_notify_keys(cmd, c->prefix, type, id) != 0 ||
        script_wf_notify_args(cmd, id, sender, state, WORKFLOW_DEAD_TTL) != 0 ||
        command_push(cmd, result ? result->str : "",
                     result ? result->len : 0) != 0) {
        client_error(c, "notice: a key does not fit");
        return WHARF_CLIENT_ERROR;
    }
    r = run(c, &script_wf_notify, "notice to a held task", &st);
    if (r && script_spec_word(&script_wf_notify_spec, word_of(r)) < 0) {
        client_error(c, "notice: unexpected reply '%.40s'", word_of(r));
        st = WHARF_CLIENT_ERROR;
    }
    freeReplyObject(r);
    return st;
}

wharf_client_status wharf_enqueue_after(wharf_client *client,
                                        const wharf_after_opts *o,
                                        wharf_enqueue_reply *out)
{
    char id_buf[CLIENT_RANDOM_ID_SIZE], trace_buf[CLIENT_TRACE_SIZE];
    char child[WHARF_TYPE_MAX + WHARF_ID_MAX + 16], *parents = NULL;
    unsigned char bytes[CLIENT_RANDOM_ID_BYTES];
    redisReply **answers = NULL, *r = NULL;
    const char *id, *trace, *word;
    wharf_client_status st;
    size_t list_len = 0;

    if (!client || !o)
        return WHARF_CLIENT_BAD_INPUT;
    id = o->id;
    if (!id) {
        if (client_random_bytes(bytes, sizeof(bytes)) != 0) {
            client_error(client, "no randomness for an id");
            return WHARF_CLIENT_ERROR;
        }
        client_random_id(bytes, id_buf);
        id = id_buf;
    }
    if ((st = check_after(client, o, id)) != WHARF_CLIENT_OK)
        return st;
    if (!(trace = trace_of(client, o->trace, trace_buf, &st)))
        return st;
    if (client_connect(client) != 0)
        return client->connect_status;
    answers = calloc(o->n_parents, sizeof(*answers));
    for (size_t i = 0; i < o->n_parents; i++)
        list_len += strlen(o->parents[i].type) + strlen(o->parents[i].id) + 2;
    parents = calloc(1, list_len + 1);
    if (!answers || !parents) {
        client_error(client, "out of memory");
        st = WHARF_CLIENT_ERROR;
        goto out;
    }
    for (size_t i = 0; i < o->n_parents; i++) {
        if (i)
            strcat(parents, ",");
        strcat(parents, o->parents[i].type);
        strcat(parents, ":");
        strcat(parents, o->parents[i].id);
    }
    /* 1. Noted at each parent first: a parent that ends after this tells
     * the child through its outbox, whenever the child comes. */
    snprintf(child, sizeof(child), "child %s %s", o->type, id);
    for (size_t i = 0; i < o->n_parents; i++) {
        const wharf_parent *p = &o->parents[i];
        script_wf_register_call(&client->pipe.cmd, client->prefix, p->type,
                                p->id, child);
        answers[i] = run(client, &script_wf_register, "register", &st);
        if (!answers[i])
            goto out;
        if (strcmp(word_of(answers[i]), "UNKNOWN") == 0) {
            client_error(client,
                         "parent %s:%s is unknown (not queued, running, "
                         "delayed, held, done with its result cached, or "
                         "dead)",
                         p->type, p->id);
            st = WHARF_CLIENT_BAD_INPUT;
            goto out;
        }
        if (answers[i]->elements != 2) {
            client_error(client, "register: unexpected reply");
            st = WHARF_CLIENT_ERROR;
            goto out;
        }
    }
    /* 2. The child, held. */
    if (script_wf_enqueue_keys(&client->pipe.cmd, client->prefix, o->type,
                               id) != 0 ||
        script_wf_enqueue_args(&client->pipe.cmd, o->type, id, trace,
                               CLIENT_PROTOCOLS, "held", "", parents,
                               o->run_if_parent_dead ? "run" : "dead",
                               "1048576", "300000") != 0 ||
        command_push(&client->pipe.cmd, o->payload ? o->payload : "",
                     o->payload_len) != 0) {
        client_error(client, "enqueue: a key does not fit");
        st = WHARF_CLIENT_ERROR;
        goto out;
    }
    if (!(r = run(client, &script_wf_enqueue, "enqueue", &st)))
        goto out;
    word = word_of(r);
    if (out) {
        memset(out, 0, sizeof(*out));
        snprintf(out->id, sizeof(out->id), "%s", id);
    }
    if (strcmp(word, "DUPLICATE") == 0) {
        st = WHARF_CLIENT_DUPLICATE;
        if (out)
            out->duplicate = 1;
        goto out;
    } else if (strcmp(word, "PROTOCOL") == 0) {
        st = client_protocol_error(client, o->type, "another");
        goto out;
    } else if (strcmp(word, "TOO_LARGE") == 0) {
        client_error(client, "payload too large for type '%s'", o->type);
        st = WHARF_CLIENT_TOO_LARGE;
        goto out;
    } else if (strcmp(word, "HELD") != 0) {
        client_error(client, "enqueue: unexpected reply '%.40s'", word);
        st = WHARF_CLIENT_ERROR;
        goto out;
    }
    /* 3. The parents that had ended already, then a count. */
    for (size_t i = 0; i < o->n_parents && st == WHARF_CLIENT_OK; i++) {
        const char *w = word_of(answers[i]);
        char sender[WHARF_TYPE_MAX + WHARF_ID_MAX + 2];
        if (strcmp(w, "WAITING") == 0)
            continue;
        snprintf(sender, sizeof(sender), "%s:%s", o->parents[i].type,
                 o->parents[i].id);
        st = notify(client, o->type, id, sender,
                    strcmp(w, "DONE") == 0 ? "o" : "d", answers[i]->element[1]);
    }
    if (st == WHARF_CLIENT_OK)
        st = notify(client, o->type, id, "", "check", NULL);
    if (st == WHARF_CLIENT_OK)
        add_type(client, o->type);
out:
    if (answers)
        for (size_t i = 0; i < o->n_parents; i++)
            freeReplyObject(answers[i]);
    free(answers);
    free(parents);
    freeReplyObject(r);
    return st;
}

/* The member id of member i: its own, or "<group>:<i + 1>". */
static const char *member_id(const wharf_group_opts *o, size_t i,
                             char buf[WHARF_ID_MAX + 1])
{
    if (o->members[i].id)
        return o->members[i].id;
    snprintf(buf, WHARF_ID_MAX + 1, "%s:%zu", o->group, i + 1);
    return buf;
}

static wharf_client_status check_group(wharf_client *c,
                                       const wharf_group_opts *o)
{
    char id[WHARF_ID_MAX + 1];
    wharf_client_status st;

    if (!o->group || !client_valid_type(o->group)) {
        client_error(c, "bad group name '%.100s' (1-100 of A-Z a-z 0-9 . _ -)",
                     o->group ? o->group : "");
        return WHARF_CLIENT_BAD_INPUT;
    }
    if (!o->members || o->n_members == 0) {
        client_error(c,
                     "group '%s' has no members: nothing would ever end "
                     "it",
                     o->group);
        return WHARF_CLIENT_BAD_INPUT;
    }
    if ((st = client_check_names(c, o->then_type, "group:x")) !=
        WHARF_CLIENT_OK)
        return st;
    for (size_t i = 0; i < o->n_members; i++) {
        const wharf_enqueue_opts *m = &o->members[i];
        if ((st = client_check_names(c, m->type, member_id(o, i, id))) !=
            WHARF_CLIENT_OK)
            return st;
        if (m->delay_ms != 0) {
            client_error(c, "group member %zu has a delay: not allowed", i + 1);
            return WHARF_CLIENT_BAD_INPUT;
        }
        if (m->trace && !client_valid_trace(m->trace)) {
            client_error(c, "bad trace '%.60s'", m->trace);
            return WHARF_CLIENT_BAD_INPUT;
        }
    }
    return WHARF_CLIENT_OK;
}

/* Creates the group (wf_group_create.lua, with every member's name). */
static wharf_client_status create_group(wharf_client *c,
                                        const wharf_group_opts *o)
{
    char n[24], id[WHARF_ID_MAX + 1], name[WHARF_TYPE_MAX + WHARF_ID_MAX + 2];
    command *cmd = &c->pipe.cmd;
    wharf_client_status st;
    redisReply *r;

    snprintf(n, sizeof(n), "%zu", o->n_members);
    script_wf_group_create_keys(cmd, c->prefix, o->group);
    script_wf_group_create_args(cmd, n, o->then_type,
                                o->then_payload ? o->then_payload : "");
    for (size_t i = 0; i < o->n_members; i++) {
        snprintf(name, sizeof(name), "%s:%s", o->members[i].type,
                 member_id(o, i, id));
        command_push_copy(cmd, name, strlen(name));
    }
    if (!(r = run(c, &script_wf_group_create, "group create", &st)))
        return st;
    if (strcmp(word_of(r), "CONFLICT") == 0) {
        client_error(c,
                     "group '%s' exists with other members or another "
                     "callback",
                     o->group);
        st = WHARF_CLIENT_BAD_INPUT;
    } else if (strcmp(word_of(r), "CREATED") != 0 &&
               strcmp(word_of(r), "EXISTS") != 0) {
        client_error(c, "group create: unexpected reply '%.40s'", word_of(r));
        st = WHARF_CLIENT_ERROR;
    }
    freeReplyObject(r);
    return st;
}

/* Counts a refused member as dead in its group; with the group complete
 * the producer enqueues the callback itself, as a host would. */
static wharf_client_status count_refused(wharf_client *c, const char *group,
                                         const char *member)
{
    wharf_client_status st;
    redisReply *r, *e = NULL;

    script_wf_group_count_call(&c->pipe.cmd, c->prefix, group, member, "d");
    if (!(r = run(c, &script_wf_group_count, "group count", &st)))
        return st;
    if (strcmp(word_of(r), "FIRE") == 0 && r->elements == 4) {
        wharf_enqueue_opts cb = {.type = r->element[1]->str,
                                 .id = r->element[2]->str,
                                 .payload = r->element[3]->str,
                                 .payload_len = r->element[3]->len};
        st = wharf_enqueue(c, &cb, NULL);
        if (st == WHARF_CLIENT_OK || st == WHARF_CLIENT_DUPLICATE) {
            script_wf_group_count_call(&c->pipe.cmd, c->prefix, group, "",
                                       "confirm");
            e = run(c, &script_wf_group_count, "group confirm", &st);
        }
    }
    freeReplyObject(e);
    freeReplyObject(r);
    return st;
}

wharf_client_status wharf_enqueue_group(wharf_client *client,
                                        const wharf_group_opts *o,
                                        wharf_enqueue_reply *replies)
{
    char dependent[WHARF_TYPE_MAX + 8], id[WHARF_ID_MAX + 1];
    char trace_buf[CLIENT_TRACE_SIZE], name[WHARF_TYPE_MAX + WHARF_ID_MAX + 2];
    pipeline *p;
    wharf_client_status st;

    if (!client || !o)
        return WHARF_CLIENT_BAD_INPUT;
    if ((st = check_group(client, o)) != WHARF_CLIENT_OK)
        return st;
    if (client_connect(client) != 0)
        return client->connect_status;
    if ((st = create_group(client, o)) != WHARF_CLIENT_OK)
        return st;
    snprintf(dependent, sizeof(dependent), "group %s", o->group);
    p = &client->pipe;
    for (size_t from = 0; from < o->n_members; from += WORKFLOW_PIPE) {
        size_t to = from + WORKFLOW_PIPE < o->n_members ? from + WORKFLOW_PIPE
                                                        : o->n_members;
        pipeline_reset(p);
        for (size_t i = from; i < to; i++) {
            const wharf_enqueue_opts *m = &o->members[i];
            const char *trace = trace_of(client, m->trace, trace_buf, &st);
            if (!trace)
                return st;
            script_wf_enqueue_keys(&p->cmd, client->prefix, m->type,
                                   member_id(o, i, id));
            script_wf_enqueue_args(&p->cmd, m->type, member_id(o, i, id), trace,
                                   CLIENT_PROTOCOLS, "member", dependent, "",
                                   "", "1048576", "300000");
            command_push(&p->cmd, m->payload ? m->payload : "", m->payload_len);
            if (pipeline_add_command(p, -1, &p->cmd, &script_wf_enqueue) != 0) {
                client_error(client, "group: %s", p->errstr);
                return WHARF_CLIENT_ERROR;
            }
        }
        if (pipeline_run(p) != 0) {
            client_drop(client);
            client_error(client, "group: %s", p->errstr);
            return WHARF_CLIENT_UNAVAILABLE;
        }
        /* The answers are read before any other call resets the pipe. */
        {
            size_t refused_n = 0;
            size_t *refused = calloc(to - from, sizeof(*refused));
            if (!refused) {
                client_error(client, "out of memory");
                return WHARF_CLIENT_ERROR;
            }
            for (size_t i = from; i < to; i++) {
                const redisReply *r = pipeline_reply(p, i - from);
                const char *w = word_of(r);
                wharf_client_status ms =
                    strcmp(w, "OK") == 0          ? WHARF_CLIENT_OK
                    : strcmp(w, "DUPLICATE") == 0 ? WHARF_CLIENT_DUPLICATE
                    : strcmp(w, "TOO_LARGE") == 0 ? WHARF_CLIENT_TOO_LARGE
                    : strcmp(w, "PROTOCOL") == 0  ? WHARF_CLIENT_PROTOCOL
                                                  : WHARF_CLIENT_ERROR;
                if (ms == WHARF_CLIENT_ERROR) {
                    client_reply_status(client, r, "group member");
                    free(refused);
                    return WHARF_CLIENT_ERROR;
                }
                if (ms == WHARF_CLIENT_TOO_LARGE || ms == WHARF_CLIENT_PROTOCOL)
                    refused[refused_n++] = i;
                if (replies) {
                    memset(&replies[i], 0, sizeof(replies[i]));
                    replies[i].status = ms;
                    replies[i].duplicate = ms == WHARF_CLIENT_DUPLICATE;
                    snprintf(replies[i].id, sizeof(replies[i].id), "%s",
                             member_id(o, i, id));
                }
            }
            for (size_t k = 0; k < refused_n && st == WHARF_CLIENT_OK; k++) {
                size_t i = refused[k];
                snprintf(name, sizeof(name), "%s:%s", o->members[i].type,
                         member_id(o, i, id));
                st = count_refused(client, o->group, name);
            }
            free(refused);
            if (st != WHARF_CLIENT_OK)
                return st;
        }
    }
    for (size_t i = 0; i < o->n_members; i++)
        if (i == 0 || strcmp(o->members[i].type, o->members[i - 1].type) != 0)
            add_type(client, o->members[i].type);
    return WHARF_CLIENT_OK;
}

/* A field of a group hash reply [name, value, ...], or NULL. */
static const char *hash_field(const redisReply *r, const char *name)
{
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements;
         i += 2)
        if (strcmp(r->element[i]->str, name) == 0)
            return r->element[i + 1]->str;
    return NULL;
}

wharf_client_status wharf_group_get(wharf_client *client, const char *group,
                                    wharf_group_info *out)
{
    char key[KEY_MAX], done[KEY_MAX];
    redisReply *g = NULL, *d = NULL;
    wharf_client_status st = WHARF_CLIENT_OK;
    wharf_group_info info;
    const char *v;

    if (!client || !group || !client_valid_type(group)) {
        if (client)
            client_error(client, "bad group name");
        return WHARF_CLIENT_BAD_INPUT;
    }
    if (client_connect(client) != 0)
        return client->connect_status;
    key_of_type(key, sizeof(key), client->prefix, group, "group");
    key_of_type(done, sizeof(done), client->prefix, group, "group_done");
    g = pipeline_command(&client->pipe, key, "HGETALL %s", key);
    if ((st = client_reply_status(client, g, "group")) != WHARF_CLIENT_OK)
        goto out;
    if (g->type != REDIS_REPLY_ARRAY || g->elements == 0) {
        client_error(client, "no group '%s'", group);
        st = WHARF_CLIENT_NOT_FOUND;
        goto out;
    }
    d = pipeline_command(&client->pipe, done, "HGETALL %s", done);
    if ((st = client_reply_status(client, d, "group")) != WHARF_CLIENT_OK)
        goto out;
    memset(&info, 0, sizeof(info));
    v = hash_field(g, "n");
    info.n = v ? strtoul(v, NULL, 10) : 0;
    v = hash_field(g, "type");
    snprintf(info.then_type, sizeof(info.then_type), "%s", v ? v : "");
    info.fired = hash_field(g, "fired") != NULL;
    info.enqueued = hash_field(g, "enqueued") != NULL;
    info.cancelled = hash_field(g, "cancelled") != NULL;
    for (size_t i = 0; d->type == REDIS_REPLY_ARRAY && i + 1 < d->elements;
         i += 2) {
        if (strcmp(d->element[i + 1]->str, "o") == 0)
            info.ok++;
        else
            info.dead++;
    }
    if (out)
        *out = info;
out:
    freeReplyObject(g);
    freeReplyObject(d);
    return st;
}

wharf_client_status wharf_group_cancel(wharf_client *client, const char *group,
                                       size_t *cancelled)
{
    char key[KEY_MAX], members[KEY_MAX];
    redisReply *g = NULL, *m = NULL;
    wharf_client_status st;
    size_t n = 0;

    if ((st = wharf_group_get(client, group, NULL)) != WHARF_CLIENT_OK)
        return st;
    key_of_type(key, sizeof(key), client->prefix, group, "group");
    key_of_type(members, sizeof(members), client->prefix, group,
                "group_members");
    /* Marked first: a member that ends meanwhile finds the group
     * cancelled and fires nothing. */
    g = pipeline_command(&client->pipe, key, "HSET %s cancelled 1", key);
    if ((st = client_reply_status(client, g, "group cancel")) !=
        WHARF_CLIENT_OK)
        goto out;
    m = pipeline_command(&client->pipe, members, "SMEMBERS %s", members);
    if ((st = client_reply_status(client, m, "group cancel")) !=
        WHARF_CLIENT_OK)
        goto out;
    for (size_t i = 0; m->type == REDIS_REPLY_ARRAY && i < m->elements; i++) {
        char type[WHARF_TYPE_MAX + 1];
        const char *name = m->element[i]->str, *colon = strchr(name, ':');
        wharf_cancel_reply reply;
        if (!colon || (size_t)(colon - name) > WHARF_TYPE_MAX)
            continue;
        memcpy(type, name, (size_t)(colon - name));
        type[colon - name] = '\0';
        st = wharf_cancel(client, type, colon + 1, &reply);
        if (st == WHARF_CLIENT_OK)
            n++;
        else if (st != WHARF_CLIENT_NOT_FOUND)
            goto out;
        st = WHARF_CLIENT_OK;
    }
    if (cancelled)
        *cancelled = n;
out:
    freeReplyObject(g);
    freeReplyObject(m);
    return st;
}

wharf_client_status wharf_group_members(
    wharf_client *client, const char *group,
    void (*each)(const char *member, const char *state, void *arg), void *arg)
{
    char members[KEY_MAX], done[KEY_MAX];
    redisReply *m = NULL, *d = NULL;
    wharf_client_status st;

    if ((st = wharf_group_get(client, group, NULL)) != WHARF_CLIENT_OK)
        return st;
    key_of_type(members, sizeof(members), client->prefix, group,
                "group_members");
    key_of_type(done, sizeof(done), client->prefix, group, "group_done");
    m = pipeline_command(&client->pipe, members, "SMEMBERS %s", members);
    if ((st = client_reply_status(client, m, "group")) != WHARF_CLIENT_OK)
        goto out;
    d = pipeline_command(&client->pipe, done, "HGETALL %s", done);
    if ((st = client_reply_status(client, d, "group")) != WHARF_CLIENT_OK)
        goto out;
    for (size_t i = 0; m->type == REDIS_REPLY_ARRAY && i < m->elements; i++) {
        const char *state = hash_field(d, m->element[i]->str);
        each(m->element[i]->str,
             !state                    ? "pending"
             : strcmp(state, "o") == 0 ? "ok"
                                       : "dead",
             arg);
    }
out:
    freeReplyObject(m);
    freeReplyObject(d);
    return st;
}
