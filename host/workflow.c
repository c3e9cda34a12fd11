/* workflow: the host's half of workflows (workflow.h). Every step here is
 * idempotent in the slot it writes (wf_notify.lua, wf_group_count.lua,
 * enqueue.lua with the callback's fixed id), and an outbox entry is
 * deleted only once each of its dependents has it, so a host killed at
 * any point leaves an entry that the next drain or sweep delivers again
 * without counting anything twice. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "client_ids.h"
#include "command.h"
#include "keys.h"
#include "log.h"
#include "lua_scripts.h"
#include "pipeline.h"
#include "workflow.h"

/* Entries read per XRANGE, and XRANGEs per drain: a drain ends in well
 * under a second; what is left is the next drain's or the sweep's. */
#define DRAIN_COUNT 50
#define DRAIN_ROUNDS 20
/* A dead child tells its own children (CASCADE): drains nest this deep
 * at most, the rest waits for the sweep. */
#define DRAIN_DEPTH 8
/* The dead_ttl of a child's type this host does not serve. */
#define DEFAULT_DEAD_TTL_MS 604800000LL

/* A test hook: with the variable env naming PATH, the first process that
 * creates PATH dies with SIGKILL here, as a host killed -9 at that step
 * would (the tests then kill the whole host and start another). */
static void workflow_die_if_asked(const char *env)
{
    const char *path = getenv(env);
    int fd;

    if (!path)
        return;
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    (void)close(fd);
    raise(SIGKILL);
}

/* Records Redis's failure about `what` in b->errstr. */
static int workflow_failed(broker *b, const char *what, const redisReply *r)
{
    broker_failed(b, what, r);
    return -1;
}

/* The word of reply element 0, or "". */
static const char *workflow_word(const redisReply *r)
{
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
        r->element[0]->type == REDIS_REPLY_STRING)
        return r->element[0]->str;
    return "";
}

/* Enqueues the callback of a group whose members have all ended (the
 * FIRE reply r: word, type, id, payload) and confirms it. The callback's
 * id is fixed, so a second enqueue (a re-drive after a crash between the
 * two) is a DUPLICATE: it runs once. 0, or -1. */
static int workflow_fire(broker *b, const char *group, const redisReply *r)
{
    const char *prefix = b->cfg->prefix;
    const char *type = r->element[1]->str, *id = r->element[2]->str;
    char seen[KEY_MAX], task[KEY_MAX], offset[24], trace[CLIENT_TRACE_SIZE];
    unsigned char bytes[CLIENT_TRACE_BYTES];
    command cmd;
    redisReply *e = NULL, *c = NULL;
    const char *word;
    int rc = -1;

    workflow_die_if_asked("WHARF_TEST_DIE_BEFORE_CALLBACK");
    command_init(&cmd);
    if (key_of_task(seen, sizeof(seen), prefix, type, "seen", id) < 0 ||
        key_of_task(task, sizeof(task), prefix, type, "task", id) < 0 ||
        client_random_bytes(bytes, sizeof(bytes)) != 0) {
        snprintf(b->errstr, sizeof(b->errstr),
                 "group %s: cannot make the callback's keys", group);
        goto out;
    }
    client_new_trace(bytes, trace);
    snprintf(offset, sizeof(offset), "%zu", strlen(seen) - strlen(id));
    script_enqueue_keys(&cmd, prefix, type);
    command_push_key(&cmd, seen, strlen(seen));
    command_push_key(&cmd, seen, strlen(seen));
    command_push_key(&cmd, task, strlen(task));
    command_push_key(&cmd, task, strlen(task));
    script_enqueue_args(&cmd, type, offset, "0", "1048576", "0", "payload",
                        "300000", "1", "0", "");
    command_push(&cmd, r->element[3]->str, r->element[3]->len);
    command_push_str(&cmd, trace);
    e = pipeline_call(&b->pipe, &script_enqueue, &cmd);
    if (!e || e->type != REDIS_REPLY_ARRAY || e->elements < 4 ||
        e->element[1]->type != REDIS_REPLY_STRING) {
        workflow_failed(b, "enqueue of a group's callback", e);
        goto out;
    }
    word = e->element[1]->str;
    if (strcmp(word, "OK") != 0 && strcmp(word, "DUPLICATE") != 0) {
        snprintf(b->errstr, sizeof(b->errstr),
                 "group %s: its callback %s:%s was refused: %s", group, type,
                 id, word);
        goto out;
    }
    command_reset(&cmd);
    script_wf_group_count_call(&cmd, prefix, group, "", "confirm");
    c = pipeline_call(&b->pipe, &script_wf_group_count, &cmd);
    if (strcmp(workflow_word(c), "CONFIRMED") != 0) {
        workflow_failed(b, "confirm of a group's callback", c);
        goto out;
    }
    log_fields(WHARF_LOG_INFO, "group callback enqueued",
               (log_field[]){LOG_STR("group", group), LOG_STR("type", type),
                             LOG_STR("task", id)},
               3);
    rc = 0;
out:
    freeReplyObject(e);
    freeReplyObject(c);
    command_free(&cmd);
    return rc;
}

static int workflow_drain_at(broker *b, const char *type, const char *max_id,
                             int depth);

/* The value of field name in an entry's [name, value, ...], or NULL. */
static const redisReply *workflow_field(const redisReply *fields,
                                        const char *name)
{
    for (size_t i = 0; i + 1 < fields->elements; i += 2)
        if (fields->element[i]->type == REDIS_REPLY_STRING &&
            strcmp(fields->element[i]->str, name) == 0)
            return fields->element[i + 1];
    return NULL;
}

/* One delivery of a drain: which entry, and to what. */
typedef struct delivery {
    size_t entry;     /* index in the XRANGE reply */
    bool group;       /* a group count (else a notice to a child) */
    char target[128]; /* the group, or the child's type */
    const redisReply *from, *state;
} delivery;

/* Adds the delivery of one dependent line of an entry to the pipeline:
 * "child <type> <id>" (wf_notify.lua) or "group <G>" (wf_group_count).
 * 0, 1 for a line that is not ours to read (dropped with its entry), or
 * -1 when the call cannot be built. */
static int workflow_add(broker *b, command *cmd, const char *line,
                        const redisReply *fields, delivery *d)
{
    const redisReply *result = workflow_field(fields, "result");
    char id[256], ttl[24];
    const broker_queue *q;

    if (strncmp(line, "group ", 6) == 0) {
        d->group = true;
        snprintf(d->target, sizeof(d->target), "%s", line + 6);
        if (script_wf_group_count_call(cmd, b->cfg->prefix, d->target,
                                       d->from->str, d->state->str) != 0)
            return -1;
        return pipeline_add_command(&b->pipe, -1, cmd,
                                    &script_wf_group_count) == 0
                   ? 0
                   : -1;
    }
    if (strncmp(line, "child ", 6) != 0 ||
        sscanf(line + 6, "%127s %255s", d->target, id) != 2)
        return 1;
    d->group = false;
    q = broker_queue_of(b, d->target);
    snprintf(ttl, sizeof(ttl), "%lld",
             q ? (long long)q->pol->dead_ttl_ms : DEFAULT_DEAD_TTL_MS);
    if (script_wf_notify_keys(cmd, b->cfg->prefix, d->target, id) != 0 ||
        script_wf_notify_args(cmd, id, d->from->str, d->state->str, ttl) != 0 ||
        command_push(cmd, result ? result->str : "",
                     result ? result->len : 0) != 0)
        return -1;
    return pipeline_add_command(&b->pipe, -1, cmd, &script_wf_notify) == 0 ? 0
                                                                           : -1;
}

/* Reads the answer of delivery d: 0 when the dependent has it. A group
 * whose count completed it (FIRE) gets its callback here; a child that
 * died of its parent and has dependents (CASCADE) gets its own type's
 * outbox drained. */
static int workflow_answer(broker *b, const delivery *d, redisReply *r,
                           int depth)
{
    const char *word = workflow_word(r);

    if (d->group) {
        if (strcmp(word, "FIRE") == 0 && r->elements == 4)
            return workflow_fire(b, d->target, r);
        if (word[0] == '\0' || strcmp(word, "FIRE") == 0)
            return workflow_failed(b, "count of a group member", r);
        return 0; /* COUNTED, AGAIN, CONFIRMED, CANCELLED, STRAY, UNKNOWN */
    }
    if (script_spec_word(&script_wf_notify_spec, word) < 0)
        return workflow_failed(b, "notice to a held child", r);
    if (strcmp(word, "CASCADE") == 0 && depth < DRAIN_DEPTH)
        (void)workflow_drain_at(b, d->target, NULL, depth + 1);
    return 0;
}

/* Delivers the entries of one XRANGE reply: every delivery in one
 * pipelined round trip, then one XDEL of the entries whose dependents all
 * have it. The number deleted, or -1. */
static int workflow_deliver_page(broker *b, const char *outbox,
                                 const redisReply *page, int depth)
{
    delivery *ds = NULL;
    bool *failed = NULL;
    redisReply **answers = NULL, *del = NULL;
    size_t nd = 0, cap = 0, deleted = 0;
    command cmd, xdel;
    int rc = -1;

    command_init(&cmd);
    command_init(&xdel);
    failed = calloc(page->elements, sizeof(*failed));
    if (!failed)
        goto out;
    pipeline_reset(&b->pipe);
    for (size_t i = 0; i < page->elements; i++) {
        const redisReply *e = page->element[i], *fields, *to;
        char *list, *line, *save = NULL;
        if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
            e->element[1]->type != REDIS_REPLY_ARRAY)
            continue;
        fields = e->element[1];
        to = workflow_field(fields, "to");
        if (!to || !workflow_field(fields, "from") ||
            !workflow_field(fields, "state"))
            continue; /* malformed: nobody can deliver it; deleted */
        if (!(list = strndup(to->str, to->len)))
            goto out;
        for (line = strtok_r(list, "\n", &save); line;
             line = strtok_r(NULL, "\n", &save)) {
            delivery *grown;
            int added;
            if (nd == cap) {
                cap = cap ? cap * 2 : 64;
                grown = realloc(ds, cap * sizeof(*ds));
                if (!grown) {
                    free(list);
                    goto out;
                }
                ds = grown;
            }
            ds[nd].entry = i;
            ds[nd].from = workflow_field(fields, "from");
            ds[nd].state = workflow_field(fields, "state");
            command_reset(&cmd);
            added = workflow_add(b, &cmd, line, fields, &ds[nd]);
            if (added < 0) {
                free(list);
                goto out;
            }
            if (added == 0)
                nd++;
        }
        free(list);
    }
    if (nd > 0) {
        bool counts = false;
        for (size_t k = 0; k < nd; k++)
            counts = counts || ds[k].group;
        if (counts)
            workflow_die_if_asked("WHARF_TEST_DIE_BEFORE_COUNT");
        if (pipeline_run(&b->pipe) != 0) {
            snprintf(b->errstr, sizeof(b->errstr), "%s", b->pipe.errstr);
            goto out;
        }
        if (!(answers = calloc(nd, sizeof(*answers))))
            goto out;
        /* Taken before any FIRE makes calls of its own on the pipe. */
        for (size_t k = 0; k < nd; k++)
            answers[k] = pipeline_take(&b->pipe, k);
        for (size_t k = 0; k < nd; k++)
            if (workflow_answer(b, &ds[k], answers[k], depth) != 0)
                failed[ds[k].entry] = true;
    }
    command_push_str(&xdel, "XDEL");
    command_push_key(&xdel, outbox, strlen(outbox));
    for (size_t i = 0; i < page->elements; i++) {
        if (failed[i] || page->element[i]->type != REDIS_REPLY_ARRAY ||
            page->element[i]->elements < 1)
            continue;
        command_push_str(&xdel, page->element[i]->element[0]->str);
        deleted++;
    }
    if (deleted > 0) {
        del = pipeline_call(&b->pipe, NULL, &xdel);
        if (!del || del->type != REDIS_REPLY_INTEGER) {
            workflow_failed(b, "deleting outbox entries", del);
            goto out;
        }
    }
    rc = (int)deleted;
    for (size_t i = 0; i < page->elements; i++)
        if (failed[i])
            rc = -1; /* left for the next drain or the sweep */
out:
    if (answers)
        for (size_t k = 0; k < nd; k++)
            freeReplyObject(answers[k]);
    free(answers);
    freeReplyObject(del);
    free(failed);
    free(ds);
    command_free(&cmd);
    command_free(&xdel);
    return rc;
}

static int workflow_drain_at(broker *b, const char *type, const char *max_id,
                             int depth)
{
    char outbox[KEY_MAX];
    int drained = 0;

    if (key_of_type(outbox, sizeof(outbox), b->cfg->prefix, type, "outbox") < 0)
        return -1;
    for (int round = 0; round < DRAIN_ROUNDS; round++) {
        redisReply *r =
            pipeline_command(&b->pipe, outbox, "XRANGE %s - %s COUNT %d",
                             outbox, max_id ? max_id : "+", DRAIN_COUNT);
        size_t n;
        int got;
        if (!r || r->type != REDIS_REPLY_ARRAY) {
            workflow_failed(b, "reading an outbox", r);
            freeReplyObject(r);
            return -1;
        }
        n = r->elements;
        got = n > 0 ? workflow_deliver_page(b, outbox, r, depth) : 0;
        freeReplyObject(r);
        if (got < 0)
            return -1;
        drained += got;
        if (n < DRAIN_COUNT)
            break;
    }
    return drained;
}

int workflow_drain(broker *b, const char *type, const char *max_id)
{
    int rc = workflow_drain_at(b, type, max_id, 0);

    if (rc < 0)
        log_fields(
            WHARF_LOG_WARN, "outbox left to the sweep",
            (log_field[]){LOG_STR("type", type), LOG_STR("error", b->errstr)},
            2);
    return rc;
}

redisReply *workflow_parent_results(broker *b, const char *type, const char *id)
{
    char key[KEY_MAX];
    redisReply *r;

    if (key_of_task(key, sizeof(key), b->cfg->prefix, type, "parent_results",
                    id) < 0)
        return NULL;
    r = pipeline_command(&b->pipe, key, "HGETALL %s", key);
    if (r && r->type != REDIS_REPLY_ARRAY) {
        freeReplyObject(r);
        r = NULL;
    }
    return r;
}

void workflow_sweep_tick(broker *b, int64_t now_ms)
{
    static int64_t last_ms = -WORKFLOW_SWEEP_EVERY_MS;
    struct timespec ts;
    char max_id[32];

    if (now_ms - last_ms < WORKFLOW_SWEEP_EVERY_MS || !broker_connected(b))
        return;
    last_ms = now_ms;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return;
    /* Stream ids are Redis's clock in ms; a host's clock off by more than
     * the age only makes the sweep early (harmless) or late. */
    snprintf(max_id, sizeof(max_id), "%lld",
             (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 -
                 WORKFLOW_SWEEP_AGE_MS);
    for (size_t i = 0; i < b->n_queues; i++)
        (void)workflow_drain(b, b->queues[i].type, max_id);
}
