/* A pipeline over the nodes of a deployment; see pipeline.h. */
#include "pipeline.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tls.h"

/* Redirections and resends one command may take before the run gives up
 * on it (a slot moving back and forth, a node that keeps losing its
 * scripts). */
#define SETTLE_TRIES 16
/* TRYAGAIN (a multi-key command on a slot being migrated): pauses from
 * 10 ms, doubling up to 200 ms, for at most this long in all. */
#define TRYAGAIN_FIRST_MS 10
#define TRYAGAIN_MAX_MS 200
#define TRYAGAIN_TOTAL_MS 10000

/* Sets p->err and p->errstr (one line, printf-style). */
static void pipeline_fail(pipeline *p, error_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void pipeline_fail(pipeline *p, error_kind kind, const char *fmt, ...)
{
    va_list ap;

    p->err = kind;
    va_start(ap, fmt);
    vsnprintf(p->errstr, sizeof(p->errstr), fmt, ap);
    va_end(ap);
}

/* Takes the last failure of p's nodes as p's own. */
static void take_nodes_error(pipeline *p)
{
    p->err = p->ns->err;
    memcpy(p->errstr, p->ns->errstr, sizeof(p->errstr));
}

/* What a command that could not be built failed of. */
static error_kind build_kind(int err)
{
    return err == ENOMEM ? ERROR_KIND_NOMEM : ERROR_KIND_REPLY;
}

void pipeline_init(pipeline *p, nodes *ns)
{
    memset(p, 0, sizeof(*p));
    p->ns = ns;
    p->fewest_acks = -1;
    command_init(&p->cmd);
}

void pipeline_reset(pipeline *p)
{
    for (size_t i = 0; i < p->n; i++)
        freeReplyObject(p->e[i].reply);
    p->n = 0;
    p->used = 0;
    p->wait = false;
    p->fewest_acks = -1;
}

void pipeline_free(pipeline *p)
{
    pipeline_reset(p);
    free(p->e);
    free(p->bytes);
    command_free(&p->cmd);
    p->e = NULL;
    p->bytes = NULL;
    p->cap = p->bytes_cap = 0;
}

static int add_bytes(pipeline *p, long slot, const char *data, size_t len,
                     const script *s)
{
    pipeline_entry *e;

    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 16;
        void *grown = realloc(p->e, cap * sizeof(*p->e));
        if (!grown)
            goto oom;
        p->e = grown;
        p->cap = cap;
    }
    if (p->used + len > p->bytes_cap) {
        size_t cap = p->bytes_cap ? p->bytes_cap : 4096;
        void *grown;
        while (cap < p->used + len)
            cap *= 2;
        grown = realloc(p->bytes, cap);
        if (!grown)
            goto oom;
        p->bytes = grown;
        p->bytes_cap = cap;
    }
    memcpy(p->bytes + p->used, data, len);
    e = &p->e[p->n++];
    memset(e, 0, sizeof(*e));
    e->slot = slot;
    e->off = p->used;
    e->len = len;
    e->s = s;
    e->node = -1;
    p->used += len;
    return 0;
oom:
    pipeline_fail(p, ERROR_KIND_NOMEM, "pipeline: out of memory");
    return -1;
}

int pipeline_add_command(pipeline *p, long slot, command *cmd, const script *s)
{
    if (command_encode(cmd) != 0) {
        pipeline_fail(p, build_kind(cmd->err), "building a command: %s",
                      strerror(cmd->err));
        return -1;
    }
    if (slot < 0)
        slot = command_first_key_slot(cmd);
    if (slot < 0)
        slot = PIPELINE_ANY_SLOT;
    return add_bytes(p, slot, cmd->wire, cmd->wire_len, s);
}

int pipeline_addf(pipeline *p, const char *key, const char *fmt, ...)
{
    char *wire = NULL;
    va_list ap;
    int len, rc;

    va_start(ap, fmt);
    len = redisvFormatCommand(&wire, fmt, ap);
    va_end(ap);
    if (len < 0) {
        /* hiredis: -1 out of memory, -2 a bad format */
        pipeline_fail(p, len == -1 ? ERROR_KIND_NOMEM : ERROR_KIND_REPLY,
                      "building a command failed");
        return -1;
    }
    rc = add_bytes(
        p, key ? (long)command_key_slot(key, strlen(key)) : PIPELINE_ANY_SLOT,
        wire, (size_t)len, NULL);
    free(wire);
    return rc;
}

int pipeline_add_script(pipeline *p, const script *s, int numkeys, int argc,
                        const char *const *argv, const size_t *argvlen)
{
    if (script_build(&p->cmd, s, numkeys, argc, argv, argvlen) != 0) {
        pipeline_fail(p, build_kind(p->cmd.err), "building a call of %s",
                      s->name);
        return -1;
    }
    return pipeline_add_command(p, -1, &p->cmd, s);
}

redisReply *pipeline_reply(const pipeline *p, size_t i)
{
    return i < p->n ? p->e[i].reply : NULL;
}

redisReply *pipeline_take(pipeline *p, size_t i)
{
    redisReply *r = pipeline_reply(p, i);

    if (r)
        p->e[i].reply = NULL;
    return r;
}

/* The node that serves e now, or -1 (p->errstr set). */
static int target_of(pipeline *p, const pipeline_entry *e)
{
    int index = e->slot == PIPELINE_ANY_SLOT
                    ? (nodes_up(p->ns) ? 0 : -1)
                    : nodes_of_slot(p->ns, (unsigned)e->slot);

    if (index < 0)
        pipeline_fail(p, ERROR_KIND_UNAVAILABLE,
                      nodes_up(p->ns) ? "no node serves slot %ld (is the "
                                        "cluster down?)"
                                      : "not connected",
                      e->slot);
    return index;
}

/* Why node index failed, in p->errstr. */
static void node_failed(pipeline *p, int index, const char *why)
{
    pipeline_fail(p, ERROR_KIND_UNAVAILABLE, "%.300s: %.280s",
                  nodes_name(p->ns, index), why);
    nodes_drop(p->ns, index);
}

/* Appends e (after an ASKING when asking) to the output of node index.
 * 0, or -1 with p->errstr set. */
static int append_to(pipeline *p, pipeline_entry *e, int index, bool asking)
{
    redisContext *c = nodes_context(p->ns, index);

    e->node = -1;
    if (!c) {
        take_nodes_error(p);
        return -1;
    }
    if ((asking && redisAppendCommand(c, "ASKING") != REDIS_OK) ||
        redisAppendFormattedCommand(c, p->bytes + e->off, e->len) != REDIS_OK) {
        node_failed(p, index, c->errstr);
        return -1;
    }
    e->node = index;
    e->asking = asking;
    p->ns->list[index].sent = true;
    p->ns->list[index].unwaited = true;
    return 0;
}

/* Writes out what node index has buffered, so every node works at once. */
static int flush(pipeline *p, int index)
{
    redisContext *c = p->ns->list[index].redis;
    int done = 0;

    while (c && !done)
        if (tls_write(c, &done) != REDIS_OK) {
            node_failed(p, index, c->errstr);
            return -1;
        }
    return c ? 0 : -1;
}

/* Reads e's reply (and that of its ASKING first). 0 or -1. */
static int read_reply(pipeline *p, pipeline_entry *e)
{
    redisContext *c;
    void *r = NULL;

    if (e->node < 0 || !(c = p->ns->list[e->node].redis))
        return -1;
    if (e->asking) {
        if (tls_get_reply(c, &r) != REDIS_OK) {
            node_failed(p, e->node, c->errstr);
            return -1;
        }
        freeReplyObject(r);
        r = NULL;
    }
    if (tls_get_reply(c, &r) != REDIS_OK) {
        node_failed(p, e->node, c->errstr);
        return -1;
    }
    e->reply = r;
    return 0;
}

/* Sends e alone to node index and reads its reply. 0 or -1. */
static int resend(pipeline *p, pipeline_entry *e, int index, bool asking)
{
    freeReplyObject(e->reply);
    e->reply = NULL;
    p->round_trips++;
    if (append_to(p, e, index, asking) != 0 || flush(p, index) != 0)
        return -1;
    return read_reply(p, e);
}

static bool error_is(const redisReply *r, const char *code)
{
    size_t n = strlen(code);

    return r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, code, n) == 0 &&
           (r->str[n] == ' ' || r->str[n] == '\0');
}

/* A node refused e for now without running it. */
static bool refused_for_now(const redisReply *r)
{
    return error_is(r, "CLUSTERDOWN") || error_is(r, "READONLY") ||
           error_is(r, "MASTERDOWN") || error_is(r, "LOADING");
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

bool pipeline_must_settle(const redisReply *r)
{
    return error_is(r, "MOVED") || error_is(r, "ASK") ||
           error_is(r, "TRYAGAIN") || script_is_noscript(r) ||
           refused_for_now(r);
}

/* Follows e's redirections and resends until its reply is its answer.
 * 0, or -1 (p->errstr set; e has no reply). */
static int settle(pipeline *p, pipeline_entry *e)
{
    int slept = 0, pause = TRYAGAIN_FIRST_MS;

    for (int tries = 0; tries < SETTLE_TRIES; tries++) {
        redisReply *r = e->reply;
        int index;
        bool ask;
        int moved = nodes_redirected(p->ns, r, &index, &ask);

        if (moved < 0) {
            take_nodes_error(p);
            break;
        }
        if (moved > 0) {
            if (resend(p, e, index, ask) != 0)
                return -1;
            continue;
        }
        if (error_is(r, "TRYAGAIN")) {
            if (slept >= TRYAGAIN_TOTAL_MS) {
                pipeline_fail(p, ERROR_KIND_UNAVAILABLE,
                              "%s: still TRYAGAIN after %d ms (a slot "
                              "migration under way)",
                              nodes_name(p->ns, e->node), slept);
                break;
            }
            sleep_ms(pause);
            slept += pause;
            pause = pause * 2 > TRYAGAIN_MAX_MS ? TRYAGAIN_MAX_MS : pause * 2;
            tries--; /* pauses are bounded by time, not by tries */
            if ((index = target_of(p, e)) < 0 || resend(p, e, index, false))
                return -1;
            continue;
        }
        if (script_is_noscript(r) && e->s) {
            /* The node lost its scripts (restarted, SCRIPT FLUSH). */
            redisContext *c = nodes_context(p->ns, e->node);
            char err[SCRIPT_ERR_MAX];
            index = e->node;
            p->round_trips++;
            if (!c || (script_load(c, e->s, err, sizeof(err)) != 0 && c->err)) {
                node_failed(p, index, c ? c->errstr : p->ns->errstr);
                goto unanswered;
            }
            if (resend(p, e, index, e->asking) != 0)
                return -1;
            continue;
        }
        if (refused_for_now(r)) {
            pipeline_fail(p, ERROR_KIND_UNAVAILABLE, "%.300s: %.280s",
                          nodes_name(p->ns, e->node), r->str);
            break;
        }
        return 0;
    }
    if (e->reply && !p->errstr[0])
        pipeline_fail(p, ERROR_KIND_UNAVAILABLE,
                      "%s: redirected more than %d times",
                      nodes_name(p->ns, e->node), SETTLE_TRIES);
unanswered:
    freeReplyObject(e->reply);
    e->reply = NULL;
    return -1;
}

/* Reads node index's WAIT reply: its count into the node's acks and
 * p->fewest_acks (0 for a reply that is not a count). */
static void read_wait(pipeline *p, int index)
{
    redis_node *nd = &p->ns->list[index];
    redisContext *c = nd->redis;
    void *r = NULL;

    if (!c)
        return;
    if (tls_get_reply(c, &r) != REDIS_OK) {
        node_failed(p, index, c->errstr);
        nd->acks = p->fewest_acks = 0;
        return;
    }
    nd->unwaited = false;
    nd->acks = ((redisReply *)r)->type == REDIS_REPLY_INTEGER
                   ? (int)((redisReply *)r)->integer
                   : 0;
    if (p->fewest_acks < 0 || nd->acks < p->fewest_acks)
        p->fewest_acks = nd->acks;
    freeReplyObject(r);
}

/* After the WAITs: a node whose WAIT came back short and whose master
 * moved (nodes_master_moved: a Sentinel switchover, the old master still
 * answering as one) took writes that will be thrown away, so what went
 * there has no answer, as if its connection had broken: the caller
 * reconnects (to the new master) and sends it again. -1 when one did. */
static int check_moved(pipeline *p)
{
    nodes *ns = p->ns;
    int rc = 0;

    for (size_t i = 0; i < ns->n; i++) {
        redis_node *nd = &ns->list[i];
        if (!nd->redis || nd->acks < 0 || nd->acks >= p->min_replicas ||
            !nodes_master_moved(ns, (int)i))
            continue;
        take_nodes_error(p);
        for (size_t k = 0; k < p->n; k++) {
            if (p->e[k].node != (int)i)
                continue;
            freeReplyObject(p->e[k].reply);
            p->e[k].reply = NULL;
        }
        nodes_drop(ns, (int)i);
        rc = -1;
    }
    return rc;
}

static int append_wait(pipeline *p, int index)
{
    redisContext *c = p->ns->list[index].redis;

    if (c && redisAppendCommand(c, "WAIT %d %d", p->min_replicas,
                                p->wait_timeout_ms) == REDIS_OK)
        return 0;
    if (c)
        node_failed(p, index, c->errstr);
    return -1;
}

/* A run (or a WAIT of every node) begins: no error, no node sent to or
 * waited on yet. */
static void start_run(pipeline *p)
{
    nodes *ns = p->ns;

    p->err = ERROR_KIND_NONE;
    p->errstr[0] = '\0';
    p->fewest_acks = -1;
    for (size_t i = 0; i < ns->n; i++) {
        ns->list[i].sent = ns->list[i].unwaited = false;
        ns->list[i].acks = -1;
    }
}

int pipeline_run(pipeline *p)
{
    nodes *ns = p->ns;
    int rc = 0;

    start_run(p);
    for (size_t i = 0; i < p->n; i++) {
        pipeline_entry *e = &p->e[i];
        int index = target_of(p, e);
        if (index < 0 || append_to(p, e, index, false) != 0)
            rc = -1;
    }
    for (size_t i = 0; i < ns->n; i++)
        if (ns->list[i].sent && p->wait && append_wait(p, (int)i) != 0)
            rc = -1;
    p->round_trips++;
    for (size_t i = 0; i < ns->n; i++)
        if (ns->list[i].sent && flush(p, (int)i) != 0)
            rc = -1;
    for (size_t i = 0; i < p->n; i++)
        if (p->e[i].node >= 0 && read_reply(p, &p->e[i]) != 0)
            rc = -1;
    for (size_t i = 0; p->wait && i < ns->n; i++)
        if (ns->list[i].sent)
            read_wait(p, (int)i);
    for (size_t i = 0; i < p->n; i++)
        if (p->e[i].reply && settle(p, &p->e[i]) != 0)
            rc = -1;
    /* Resends went to nodes WAIT has not covered yet. */
    for (size_t i = 0; p->wait && i < ns->n; i++) {
        if (!ns->list[i].unwaited || !ns->list[i].redis)
            continue;
        p->round_trips++;
        if (append_wait(p, (int)i) == 0 && flush(p, (int)i) == 0)
            read_wait(p, (int)i);
    }
    if (p->wait && p->fewest_acks < p->min_replicas && check_moved(p) != 0)
        rc = -1;
    for (size_t i = 0; i < p->n; i++)
        if (!p->e[i].reply)
            rc = -1;
    if (rc != 0 && !p->errstr[0])
        pipeline_fail(p, ERROR_KIND_UNAVAILABLE, "connection lost");
    return rc;
}

int pipeline_wait_all(pipeline *p)
{
    nodes *ns = p->ns;
    int rc = 0;

    start_run(p);
    for (size_t i = 0; i < ns->n; i++) {
        redis_node *nd = &ns->list[i];
        nd->sent = nd->redis != NULL;
        if (nd->sent && append_wait(p, (int)i) != 0) {
            nd->sent = false;
            rc = -1;
        }
    }
    p->round_trips++;
    for (size_t i = 0; i < ns->n; i++)
        if (ns->list[i].sent && flush(p, (int)i) != 0)
            rc = -1;
    for (size_t i = 0; i < ns->n; i++)
        if (ns->list[i].sent)
            read_wait(p, (int)i);
    if (p->fewest_acks >= 0 && p->fewest_acks < p->min_replicas &&
        check_moved(p) != 0)
        rc = -1;
    if (rc != 0 && !p->errstr[0])
        pipeline_fail(p, ERROR_KIND_UNAVAILABLE, "connection lost");
    return rc;
}

redisReply *pipeline_script(pipeline *p, const script *s, int numkeys, int argc,
                            const char *const *argv, const size_t *argvlen)
{
    pipeline_reset(p);
    if (pipeline_add_script(p, s, numkeys, argc, argv, argvlen) != 0 ||
        pipeline_run(p) != 0)
        return NULL;
    return pipeline_take(p, 0);
}

redisReply *pipeline_call(pipeline *p, const script *s, command *cmd)
{
    pipeline_reset(p);
    if (pipeline_add_command(p, -1, cmd, s) != 0 || pipeline_run(p) != 0)
        return NULL;
    return pipeline_take(p, 0);
}

redisReply *pipeline_command(pipeline *p, const char *key, const char *fmt, ...)
{
    char *wire = NULL;
    va_list ap;
    int len, rc;

    pipeline_reset(p);
    va_start(ap, fmt);
    len = redisvFormatCommand(&wire, fmt, ap);
    va_end(ap);
    if (len < 0) {
        /* hiredis: -1 out of memory, -2 a bad format */
        pipeline_fail(p, len == -1 ? ERROR_KIND_NOMEM : ERROR_KIND_REPLY,
                      "building a command failed");
        return NULL;
    }
    rc = add_bytes(
        p, key ? (long)command_key_slot(key, strlen(key)) : PIPELINE_ANY_SLOT,
        wire, (size_t)len, NULL);
    free(wire);
    if (rc != 0 || pipeline_run(p) != 0)
        return NULL;
    return pipeline_take(p, 0);
}
