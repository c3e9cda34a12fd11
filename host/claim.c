/* Claims on one Redis and on a cluster; see claim.h. */
#include "claim.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tls.h"

/* XREADGROUP's arguments before the streams and their ids. */
#define CLAIM_ARGS 10
/* A wait's poll ends this long after its BLOCK should have: a node that
 * does not answer by then is treated as lost. */
#define WAIT_GRACE_MS 2000

/* One type's blocking connection (cluster only). */
typedef struct waiter {
    redisContext *redis; /* NULL until the first wait */
    long long id;        /* its CLIENT ID, for CLIENT UNBLOCK */
    int node;            /* the node it is connected to */
    bool sent;           /* this wait was sent (its queue is not paused) */
    bool answered;       /* this wait's reply is readable */
} waiter;

struct claim_state {
    const char **argv; /* claim_all's, sized for every queue */
    waiter *waiters;   /* one per queue */
    struct pollfd *fds;
    size_t *order; /* queue indices, highest priority first, in their
                      own order among equals; set at the first claim */
    bool ordered;
    unsigned *counts; /* a sweep's COUNT per queue; 0: not read */
    uint64_t *credit; /* weighted: each queue's share carried over, in
                         units of 1 / the top priority of the claim */
};

claim_state *claim_create(size_t n)
{
    claim_state *cs = calloc(1, sizeof(*cs));

    if (!cs)
        return NULL;
    cs->argv = calloc(CLAIM_ARGS + 2 * n, sizeof(*cs->argv));
    cs->waiters = calloc(n ? n : 1, sizeof(*cs->waiters));
    cs->fds = calloc(n ? n : 1, sizeof(*cs->fds));
    cs->order = calloc(n ? n : 1, sizeof(*cs->order));
    cs->counts = calloc(n ? n : 1, sizeof(*cs->counts));
    cs->credit = calloc(n ? n : 1, sizeof(*cs->credit));
    if (!cs->argv || !cs->waiters || !cs->fds || !cs->order || !cs->counts ||
        !cs->credit) {
        claim_destroy(cs, 0);
        return NULL;
    }
    return cs;
}

void claim_drop(claim_state *cs, size_t n)
{
    for (size_t i = 0; cs && i < n; i++) {
        tls_free(cs->waiters[i].redis);
        cs->waiters[i].redis = NULL;
    }
}

void claim_destroy(claim_state *cs, size_t n)
{
    if (!cs)
        return;
    claim_drop(cs, n);
    free(cs->argv);
    free(cs->waiters);
    free(cs->fds);
    free(cs->order);
    free(cs->counts);
    free(cs->credit);
    free(cs);
}

static bool history_pending(const broker *b)
{
    for (size_t i = 0; i < b->n_queues; i++)
        if (!b->queues[i].history_done && !b->queues[i].paused)
            return true;
    return false;
}

/* Sets the claim order once: the queues by priority, highest first, in a
 * stable sort so that equals keep their order (without priorities it is
 * the queues' own). A claim reply lists its streams in this order, so a
 * batch, run in the order of its reply, runs higher priorities first. */
static void order_queues(broker *b)
{
    size_t *order = b->claims->order;

    for (size_t i = 0; i < b->n_queues; i++) {
        size_t k = i;
        while (k > 0 &&
               b->queues[order[k - 1]].priority < b->queues[i].priority) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = i;
    }
    b->claims->ordered = true;
}

/* True if two queues this claim reads differ in priority: only then does
 * the order matter, and a claim goes as it would without priorities
 * otherwise (the same commands, the same counts). */
static bool priorities_differ(const broker *b)
{
    const broker_queue *first = NULL;

    for (size_t i = 0; i < b->n_queues; i++) {
        const broker_queue *q = &b->queues[i];
        if (q->paused)
            continue;
        if (first && q->priority != first->priority)
            return true;
        if (!first)
            first = q;
    }
    return false;
}

/* One XREADGROUP over the stream of every queue not paused (at least one)
 * of a single Redis, blocking up to block_ms once their own pending
 * entries are read. */
static redisReply *claim_all(broker *b, unsigned count, int block_ms)
{
    size_t n = b->n_queues, argc = 0;
    const char **argv = b->claims->argv;
    char count_text[16], block_text[16];
    redisContext *c = nodes_context(&b->nodes, 0);
    redisReply *r;

    if (!c) {
        memcpy(b->pipe.errstr, b->nodes.errstr, sizeof(b->pipe.errstr));
        broker_failed(b, "XREADGROUP", NULL);
        return NULL;
    }
    snprintf(count_text, sizeof(count_text), "%u", count ? count : 1);
    snprintf(block_text, sizeof(block_text), "%d", block_ms);
    argv[argc++] = "XREADGROUP";
    argv[argc++] = "GROUP";
    argv[argc++] = WHARF_GROUP;
    argv[argc++] = b->consumer;
    argv[argc++] = "COUNT";
    argv[argc++] = count_text;
    if (!history_pending(b) && block_ms > 0) {
        argv[argc++] = "BLOCK";
        argv[argc++] = block_text;
    }
    argv[argc++] = "STREAMS";
    for (size_t k = 0; k < n; k++) {
        const broker_queue *q = &b->queues[b->claims->order[k]];
        if (!q->paused)
            argv[argc++] = q->stream;
    }
    for (size_t k = 0; k < n; k++) {
        const broker_queue *q = &b->queues[b->claims->order[k]];
        if (!q->paused)
            argv[argc++] = q->history_done ? ">" : q->history_from;
    }
    r = tls_command_argv(c, (int)argc, argv, NULL);
    b->round_trips++;
    if (!r || r->type == REDIS_REPLY_ERROR) {
        snprintf(b->pipe.errstr, sizeof(b->pipe.errstr), "%s",
                 r ? r->str : c->errstr);
        broker_failed(b, "XREADGROUP", r);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

/* An empty claim reply with room for every queue's [stream, entries]. */
static redisReply *new_claim(broker *b)
{
    redisReply *all = calloc(1, sizeof(*all));

    if (all)
        all->element =
            calloc(b->n_queues ? b->n_queues : 1, sizeof(*all->element));
    if (!all || !all->element) {
        free(all);
        snprintf(b->errstr, sizeof(b->errstr), "claim: out of memory");
        return NULL;
    }
    all->type = REDIS_REPLY_ARRAY;
    return all;
}

/* Moves the [stream, entries] of one type's XREADGROUP reply r (nil when
 * nothing came) into all; true if it held an entry. */
static bool gather(redisReply *all, redisReply *r)
{
    redisReply *s;

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 1)
        return false;
    s = r->element[0];
    all->element[all->elements++] = s;
    r->element[0] = NULL;
    r->elements = 0;
    return s->type == REDIS_REPLY_ARRAY && s->elements == 2 &&
           s->element[1]->type == REDIS_REPLY_ARRAY &&
           s->element[1]->elements > 0;
}

/* One XREADGROUP without BLOCK per queue with a count (b->claims->counts,
 * 0: not read), in claim order, every node at once, gathered into *all;
 * *got set when any entry came. 0, or -1 on an error. */
static int sweep(broker *b, redisReply *all, bool *got)
{
    pipeline *p = &b->pipe;
    int rc = 0;

    pipeline_reset(p);
    for (size_t k = 0; k < b->n_queues; k++) {
        size_t i = b->claims->order[k];
        const broker_queue *q = &b->queues[i];
        if (b->claims->counts[i] == 0)
            continue;
        pipeline_addf(p, q->stream,
                      "XREADGROUP GROUP %s %s COUNT %u STREAMS %s %s",
                      WHARF_GROUP, b->consumer, b->claims->counts[i], q->stream,
                      q->history_done ? ">" : q->history_from);
    }
    if (pipeline_run(p) != 0) {
        broker_failed(b, "XREADGROUP", NULL);
        rc = -1;
    }
    for (size_t i = 0; rc == 0 && i < p->n; i++) {
        redisReply *r = pipeline_reply(p, i);
        if (r->type == REDIS_REPLY_ERROR) {
            broker_failed(b, "XREADGROUP", r);
            rc = -1;
        } else if (gather(all, r)) {
            *got = true;
        }
    }
    pipeline_reset(p);
    return rc;
}

/* Queue i's waiter, connected to the node that serves it now; NULL
 * (b->errstr set) when that node cannot be reached. */
static redisContext *waiter_of(broker *b, size_t i)
{
    waiter *w = &b->claims->waiters[i];
    int node = nodes_of_slot(&b->nodes, b->queues[i].hash_slot);
    redisReply *r;

    if (w->redis && (w->node != node || w->redis->err)) {
        tls_free(w->redis); /* the hash slot moved, or it broke */
        w->redis = NULL;
    }
    if (w->redis)
        return w->redis;
    w->redis = nodes_open(&b->nodes, node);
    b->round_trips++;
    r = w->redis ? tls_command(w->redis, "CLIENT ID") : NULL;
    if (!r || r->type != REDIS_REPLY_INTEGER) {
        snprintf(b->pipe.errstr, sizeof(b->pipe.errstr), "%s",
                 w->redis ? (r ? r->str : w->redis->errstr) : b->nodes.errstr);
        broker_failed(b, "connecting a waiter", NULL);
        freeReplyObject(r);
        tls_free(w->redis);
        w->redis = NULL;
        return NULL;
    }
    w->id = r->integer;
    w->node = node;
    freeReplyObject(r);
    return w->redis;
}

static void drop_waiter(broker *b, size_t i)
{
    tls_free(b->claims->waiters[i].redis);
    b->claims->waiters[i].redis = NULL;
}

/* Sends the blocking XREADGROUP of every queue not paused on its waiter.
 * 0 or -1. */
static int send_waits(broker *b, unsigned count, int block_ms)
{
    for (size_t i = 0; i < b->n_queues; i++)
        b->claims->waiters[i].sent = b->claims->waiters[i].answered = false;
    for (size_t i = 0; i < b->n_queues; i++) {
        redisContext *c;
        int done = 0;
        if (b->queues[i].paused)
            continue;
        if (!(c = waiter_of(b, i)))
            return -1;
        b->claims->waiters[i].sent = true;
        if (redisAppendCommand(c,
                               "XREADGROUP GROUP %s %s COUNT %u BLOCK %d "
                               "STREAMS %s >",
                               WHARF_GROUP, b->consumer, count ? count : 1,
                               block_ms, b->queues[i].stream) != REDIS_OK)
            goto broke;
        while (!done)
            if (tls_write(c, &done) != REDIS_OK)
                goto broke;
        continue;
    broke:
        snprintf(b->pipe.errstr, sizeof(b->pipe.errstr), "%s", c->errstr);
        broker_failed(b, "XREADGROUP", NULL);
        drop_waiter(b, i);
        return -1;
    }
    return 0;
}

/* Waits until a waiter has an answer (or every BLOCK is long over) and
 * marks the waiters that have one. */
static void first_answer(broker *b, int block_ms)
{
    claim_state *cs = b->claims;
    bool held = false;
    int ready;

    /* A TLS session may hold a reply already decrypted, which the socket
     * no longer shows: then only a look, no wait. */
    for (size_t i = 0; i < b->n_queues; i++) {
        const waiter *w = &cs->waiters[i];
        cs->fds[i] = (struct pollfd){w->sent ? w->redis->fd : -1, POLLIN, 0};
        held = held || (w->sent && tls_pending(w->redis));
    }
    do
        ready = poll(cs->fds, b->n_queues, held ? 0 : block_ms + WAIT_GRACE_MS);
    while (ready < 0 && errno == EINTR);
    for (size_t i = 0; i < b->n_queues; i++)
        cs->waiters[i].answered =
            cs->waiters[i].sent && (tls_pending(cs->waiters[i].redis) ||
                                    (ready > 0 && cs->fds[i].revents != 0));
}

/* Releases the waiters without an answer with CLIENT UNBLOCK, sent over
 * the nodes' shared connections, every node at once. One that fails only
 * means that waiter's BLOCK runs out by itself. */
static void release_others(broker *b)
{
    claim_state *cs = b->claims;
    pipeline *p = &b->pipe;

    pipeline_reset(p);
    for (size_t i = 0; i < b->n_queues; i++)
        if (cs->waiters[i].sent && !cs->waiters[i].answered)
            pipeline_addf(p, b->queues[i].stream, "CLIENT UNBLOCK %lld",
                          cs->waiters[i].id);
    if (p->n > 0)
        pipeline_run(p);
    pipeline_reset(p);
}

/* Reads the reply of every waiter whose `answered` is want into all; *got
 * set when any entry came. 0, or -1 when a waiter broke or Redis refused
 * a read. */
static int read_waits(broker *b, bool want, redisReply *all, bool *got)
{
    int rc = 0;

    b->round_trips++;
    for (size_t i = 0; i < b->n_queues; i++) {
        redisContext *c = b->claims->waiters[i].redis;
        redisReply *r = NULL;
        int index;
        bool ask;
        if (!b->claims->waiters[i].sent ||
            b->claims->waiters[i].answered != want)
            continue;
        if (!c || tls_get_reply(c, (void **)&r) != REDIS_OK) {
            snprintf(b->pipe.errstr, sizeof(b->pipe.errstr), "%s",
                     c ? c->errstr : "connection lost");
            broker_failed(b, "XREADGROUP", NULL);
            drop_waiter(b, i);
            rc = -1;
            continue;
        }
        if (nodes_redirected(&b->nodes, r, &index, &ask) != 0) {
            /* The hash slot moves: the next sweep follows it. */
            drop_waiter(b, i);
        } else if (r->type == REDIS_REPLY_ERROR) {
            broker_failed(b, "XREADGROUP", r);
            drop_waiter(b, i);
            rc = -1;
        } else if (gather(all, r)) {
            *got = true;
        }
        freeReplyObject(r);
    }
    return rc;
}

/* A wait on every type at once, gathered into all (empty so far). 0, or
 * -1 on an error. */
static int wait_all(broker *b, unsigned count, int block_ms, redisReply *all)
{
    bool got = false;

    if (send_waits(b, count, block_ms) != 0)
        return -1;
    first_answer(b, block_ms);
    if (read_waits(b, true, all, &got) != 0) {
        read_waits(b, false, all, &got); /* nothing left unread */
        return -1;
    }
    /* Entries came: the rest are released now. Only timeouts came: the
     * rest, sent at the same moment, time out within a moment too. */
    if (got)
        release_others(b);
    return read_waits(b, false, all, &got);
}

/* Every queue not paused gets count in this claim's sweep. */
static void count_all(broker *b, unsigned count)
{
    for (size_t i = 0; i < b->n_queues; i++)
        b->claims->counts[i] = b->queues[i].paused ? 0 : (count ? count : 1);
}

/* A sweep, then, if it found nothing and no type re-reads its own
 * pending entries, a wait on every type at once. */
static redisReply *claim_cluster(broker *b, unsigned count, int block_ms)
{
    redisReply *all = new_claim(b);
    bool got = false;

    if (!all)
        return NULL;
    count_all(b, count);
    if (sweep(b, all, &got) != 0)
        goto fail;
    if (got || history_pending(b) || block_ms <= 0 || b->n_queues == 0)
        return all;
    if (wait_all(b, count, block_ms, all) != 0)
        goto fail;
    return all;
fail:
    freeReplyObject(all);
    return NULL;
}

/* strict: one sweep per priority, highest first, until one finds
 * entries; so a lower priority is read only while every higher one is
 * empty, at the cost of a round trip per priority level tried. (One
 * pipeline reading every level at once would claim the lower levels'
 * entries too, and they would run between the higher ones of the next
 * claims.) */
static int sweep_strict(broker *b, unsigned count, redisReply *all, bool *got)
{
    claim_state *cs = b->claims;
    size_t k = 0;

    while (k < b->n_queues && !*got) {
        unsigned level = b->queues[cs->order[k]].priority;
        bool any = false;
        memset(cs->counts, 0, b->n_queues * sizeof(*cs->counts));
        for (; k < b->n_queues && b->queues[cs->order[k]].priority == level;
             k++) {
            size_t i = cs->order[k];
            if (b->queues[i].paused)
                continue;
            cs->counts[i] = count ? count : 1;
            any = true;
        }
        if (any && sweep(b, all, got) != 0)
            return -1;
    }
    return 0;
}

/* weighted: one sweep of every queue, each with its own COUNT: the top
 * priority among them gets count, another count * priority / top, the
 * fraction carried over to the next claim (a credit below one entry), so
 * that over many claims with a backlog everywhere each type gets its
 * exact share, FIFO within it, in the round trip of one claim. A queue
 * that had fewer entries than its count loses what it did not use: it
 * had no backlog to share. No count exceeds count, so a worker's bounds
 * on what it holds stay as they were. */
static int sweep_weighted(broker *b, unsigned count, redisReply *all, bool *got)
{
    claim_state *cs = b->claims;
    unsigned top = 1;

    for (size_t i = 0; i < b->n_queues; i++)
        if (!b->queues[i].paused && b->queues[i].priority > top)
            top = b->queues[i].priority;
    for (size_t i = 0; i < b->n_queues; i++) {
        uint64_t due;
        cs->counts[i] = 0;
        if (b->queues[i].paused)
            continue;
        due = cs->credit[i] +
              (uint64_t)(count ? count : 1) * b->queues[i].priority;
        cs->counts[i] = (unsigned)(due / top);
        cs->credit[i] = due % top;
    }
    return sweep(b, all, got);
}

/* Types of unlike priority (claim.h): the sweep of the order, and if it
 * found nothing, the claim over every type as without priorities, which
 * blocks while all are empty. A type's own pending entries, read again
 * after a reconnect, are claimed as without priorities: reading some
 * types and not others would take an unread one's history as done
 * (broker_jobs). */
static redisReply *claim_ranked(broker *b, unsigned count, int block_ms)
{
    redisReply *all = new_claim(b);
    bool got = false;
    int rc;

    if (!all)
        return NULL;
    rc = b->cfg->order == ORDER_STRICT ? sweep_strict(b, count, all, &got)
                                       : sweep_weighted(b, count, all, &got);
    if (rc != 0)
        goto fail;
    if (got || block_ms <= 0)
        return all;
    if (!b->nodes.cluster) {
        freeReplyObject(all);
        return claim_all(b, count, block_ms);
    }
    if (wait_all(b, count, block_ms, all) != 0)
        goto fail;
    return all;
fail:
    freeReplyObject(all);
    return NULL;
}

redisReply *claim_next(broker *b, unsigned count, int block_ms)
{
    if (broker_claimable(b) == 0)
        return new_claim(b); /* every type paused: nothing to read */
    if (!b->claims->ordered)
        order_queues(b);
    if (priorities_differ(b) && !history_pending(b))
        return claim_ranked(b, count, block_ms);
    if (b->nodes.cluster)
        return claim_cluster(b, count, block_ms);
    return claim_all(b, count, block_ms);
}
