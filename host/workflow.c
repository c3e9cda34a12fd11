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
                        "300000", "1", "0");
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

/* Tells the held child "<type> <id>" (in target) that `from` ended. */
static int workflow_tell_child(broker *b, const char *target, const char *from,
                               const char *state, const char *result,
                               size_t result_len, int depth)
{
    char type[128], id[256], ttl[24];
    const broker_queue *q;
    command cmd;
    redisReply *r;
    const char *word;
    int rc = -1;

    if (sscanf(target, "%127s %255s", type, id) != 2)
        return 0; /* not ours to read: dropped with its entry */
    q = broker_queue_of(b, type);
    snprintf(ttl, sizeof(ttl), "%lld",
             q ? (long long)q->pol->dead_ttl_ms : DEFAULT_DEAD_TTL_MS);
    command_init(&cmd);
    script_wf_notify_keys(&cmd, b->cfg->prefix, type, id);
    script_wf_notify_args(&cmd, id, from, state, ttl);
    command_push(&cmd, result, result_len);
    r = pipeline_call(&b->pipe, &script_wf_notify, &cmd);
    word = workflow_word(r);
    if (script_spec_word(&script_wf_notify_spec, word) < 0) {
        workflow_failed(b, "notice to a held child", r);
    } else {
        rc = 0;
        if (strcmp(word, "CASCADE") == 0 && depth < DRAIN_DEPTH)
            (void)workflow_drain_at(b, type, NULL, depth + 1);
    }
    freeReplyObject(r);
    command_free(&cmd);
    return rc;
}

/* Counts `from` in group (target "<G>"), enqueueing the callback once
 * the group is complete. */
static int workflow_tell_group(broker *b, const char *group, const char *from,
                               const char *state)
{
    command cmd;
    redisReply *r;
    const char *word;
    int rc = -1;

    workflow_die_if_asked("WHARF_TEST_DIE_BEFORE_COUNT");
    command_init(&cmd);
    script_wf_group_count_call(&cmd, b->cfg->prefix, group, from, state);
    r = pipeline_call(&b->pipe, &script_wf_group_count, &cmd);
    word = workflow_word(r);
    if (strcmp(word, "FIRE") == 0 && r->elements == 4)
        rc = workflow_fire(b, group, r);
    else if (word[0] != '\0' && strcmp(word, "FIRE") != 0)
        rc = 0; /* COUNTED, AGAIN, CONFIRMED, CANCELLED, STRAY, UNKNOWN */
    else
        workflow_failed(b, "count of a group member", r);
    freeReplyObject(r);
    command_free(&cmd);
    return rc;
}

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

/* Delivers one outbox entry to each dependent its `to` names, one a
 * line: "child <type> <id>" or "group <G>". 0 when every one has it. */
static int workflow_deliver(broker *b, const redisReply *fields, int depth)
{
    const redisReply *from = workflow_field(fields, "from");
    const redisReply *state = workflow_field(fields, "state");
    const redisReply *result = workflow_field(fields, "result");
    const redisReply *to = workflow_field(fields, "to");
    char *list, *line, *save = NULL;
    int rc = 0;

    if (!from || !state || !to)
        return 0; /* a malformed entry: nobody can deliver it */
    list = strndup(to->str, to->len);
    if (!list)
        return -1;
    for (line = strtok_r(list, "\n", &save); line && rc == 0;
         line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "child ", 6) == 0)
            rc = workflow_tell_child(b, line + 6, from->str, state->str,
                                     result ? result->str : "",
                                     result ? result->len : 0, depth);
        else if (strncmp(line, "group ", 6) == 0)
            rc = workflow_tell_group(b, line + 6, from->str, state->str);
    }
    free(list);
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
        if (!r || r->type != REDIS_REPLY_ARRAY) {
            workflow_failed(b, "reading an outbox", r);
            freeReplyObject(r);
            return -1;
        }
        n = r->elements;
        for (size_t i = 0; i < n; i++) {
            const redisReply *e = r->element[i];
            redisReply *d;
            if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
                e->element[1]->type != REDIS_REPLY_ARRAY)
                continue;
            if (workflow_deliver(b, e->element[1], depth) != 0) {
                freeReplyObject(r);
                return -1;
            }
            d = pipeline_command(&b->pipe, outbox, "XDEL %s %s", outbox,
                                 e->element[0]->str);
            if (!d || d->type != REDIS_REPLY_INTEGER) {
                workflow_failed(b, "deleting an outbox entry", d);
                freeReplyObject(d);
                freeReplyObject(r);
                return -1;
            }
            freeReplyObject(d);
            drained++;
        }
        freeReplyObject(r);
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

    if (key_of_task(key, sizeof(key), b->cfg->prefix, type, "parents", id) < 0)
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
