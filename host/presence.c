/* Host presence; see presence.h and docs/console.md. What is read back
 * is kept as JSON text, escaped as json_out_text escapes (a host's hash
 * is written by whoever can write the keys), ready to be shown. */
#include "presence.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "json_out.h"
#include "keys.h"
#include "xmalloc.h"

/* Bytes of a host's field shown. */
#define FIELD_BYTES 4096

/* What a refresh learnt about who serves a type. */
typedef struct served_by {
    char *type;
    char *json; /* ["host:instance", ...] */
} served_by;

struct presence {
    char *hosts_json; /* [{...}, ...] from the last refresh, or NULL */
    served_by *served;
    size_t n_served;
};

presence *presence_create(void)
{
    return xcalloc(1, sizeof(presence));
}

static void forget_served(presence *pr)
{
    for (size_t i = 0; i < pr->n_served; i++) {
        free(pr->served[i].type);
        free(pr->served[i].json);
    }
    free(pr->served);
    pr->served = NULL;
    pr->n_served = 0;
}

void presence_destroy(presence *pr)
{
    if (!pr)
        return;
    forget_served(pr);
    free(pr->hosts_json);
    free(pr);
}

const char *presence_hosts_json(const presence *pr)
{
    return pr->hosts_json;
}

const char *presence_served_json(const presence *pr, const char *type)
{
    const char *served = "[]";

    for (size_t i = 0; i < pr->n_served; i++)
        if (strcmp(pr->served[i].type, type) == 0)
            served = pr->served[i].json;
    return served;
}

/* Adds the commands of a publish: this host's hash and its entry in
 * every zset, the expired entries dropped, each key's TTL set. */
static void add_publish(const presence_self *self, pipeline *p)
{
    char key[KEY_MAX], what[400], expires[24], now_text[24], types[8192];
    char started[24], workers[16], busy[16], pid[16];
    size_t used = 0;
    int64_t now = self->now_ms;

    snprintf(expires, sizeof(expires), "%" PRId64, now + PRESENCE_TTL_MS);
    snprintf(now_text, sizeof(now_text), "%" PRId64, now);
    snprintf(started, sizeof(started), "%" PRId64, self->started_ms);
    snprintf(workers, sizeof(workers), "%zu", self->workers);
    snprintf(busy, sizeof(busy), "%u", self->busy);
    snprintf(pid, sizeof(pid), "%ld", (long)getpid());
    types[0] = '\0';
    for (size_t i = 0; i < self->n_types; i++)
        used += (size_t)snprintf(
            types + used, used < sizeof(types) ? sizeof(types) - used : 0,
            "%s%s", i ? "," : "", self->types[i]);
    if (used >= sizeof(types))
        types[sizeof(types) - 1] = '\0';

    snprintf(what, sizeof(what), "host:%s", self->name);
    key_global(key, sizeof(key), self->prefix, what);
    pipeline_addf(p, key,
                  "HSET %s name %s types %s workers %s busy %s "
                  "started_at %s pid %s version %s seen_at %s",
                  key, self->name, types, workers, busy, started, pid,
                  WHARF_VERSION, now_text);
    pipeline_addf(p, key, "PEXPIRE %s %d", key, PRESENCE_TTL_MS);
    key_global(key, sizeof(key), self->prefix, "hosts");
    pipeline_addf(p, key, "ZADD %s %s %s", key, expires, self->name);
    pipeline_addf(p, key, "ZREMRANGEBYSCORE %s -inf (%s", key, now_text);
    /* Gone with the last live host, like every presence key. */
    pipeline_addf(p, key, "PEXPIRE %s %d", key, PRESENCE_TTL_MS);
    for (size_t i = 0; i < self->n_types; i++) {
        key_of_type(key, sizeof(key), self->prefix, self->types[i], "hosts");
        pipeline_addf(p, key, "ZADD %s %s %s", key, expires, self->name);
        pipeline_addf(p, key, "ZREMRANGEBYSCORE %s -inf (%s", key, now_text);
        pipeline_addf(p, key, "PEXPIRE %s %d", key, PRESENCE_TTL_MS);
    }
}

int presence_publish(const presence_self *self, pipeline *p,
                     presence_run_fn run, void *arg)
{
    int rc;

    pipeline_reset(p);
    add_publish(self, p);
    rc = run(arg, p);
    pipeline_reset(p);
    return rc;
}

/* Adds the first round of a read: the live names of <prefix>:hosts
 * (reply 0), then of each type's {T}:hosts (reply 1 + i). */
static size_t add_names(const presence_self *self, pipeline *p)
{
    char key[KEY_MAX], now_text[24];

    snprintf(now_text, sizeof(now_text), "%" PRId64, self->now_ms);
    key_global(key, sizeof(key), self->prefix, "hosts");
    pipeline_addf(p, key, "ZRANGEBYSCORE %s %s +inf LIMIT 0 %d", key, now_text,
                  PRESENCE_HOSTS_MAX);
    for (size_t i = 0; i < self->n_types; i++) {
        key_of_type(key, sizeof(key), self->prefix, self->types[i], "hosts");
        pipeline_addf(p, key, "ZRANGEBYSCORE %s %s +inf LIMIT 0 %d", key,
                      now_text, PRESENCE_HOSTS_MAX);
    }
    return 1 + self->n_types;
}

/* Keeps, per served type, the names its ZRANGEBYSCORE gave (r as
 * add_names orders the replies). */
static void keep_served(presence *pr, const presence_self *self, redisReply **r)
{
    forget_served(pr);
    pr->served = xcalloc(self->n_types, sizeof(*pr->served));
    for (size_t i = 0; i < self->n_types; i++) {
        redisReply *names = r[1 + i];
        json_out list = {0};
        json_out_puts(&list, "[");
        for (size_t k = 0;
             names && names->type == REDIS_REPLY_ARRAY && k < names->elements;
             k++) {
            if (k)
                json_out_puts(&list, ",");
            json_out_text(&list, names->element[k]->str, names->element[k]->len,
                          SIZE_MAX);
        }
        json_out_puts(&list, "]");
        pr->served[i].type = xstrdup(self->types[i]);
        pr->served[i].json = json_out_take(&list, NULL);
        pr->n_served++;
    }
}

/* The second round: each live host's hash (hosts, the names the first
 * round read), kept as hosts_json. */
static void read_hosts(presence *pr, const presence_self *self,
                       const redisReply *hosts, pipeline *p,
                       presence_run_fn run, void *arg)
{
    char key[KEY_MAX], what[400];
    json_out json = {0};

    pipeline_reset(p);
    for (size_t k = 0; k < hosts->elements; k++) {
        snprintf(what, sizeof(what), "host:%s", hosts->element[k]->str);
        key_global(key, sizeof(key), self->prefix, what);
        pipeline_addf(p, key, "HGETALL %s", key);
    }
    if (hosts->elements > 0 && run(arg, p) != 0) {
        pipeline_reset(p);
        return;
    }
    json_out_puts(&json, "[");
    for (size_t k = 0; k < hosts->elements; k++) {
        redisReply *h = pipeline_take(p, k);
        if (k)
            json_out_puts(&json, ",");
        json_out_puts(&json, "{\"name\":");
        json_out_text(&json, hosts->element[k]->str, hosts->element[k]->len,
                      SIZE_MAX);
        for (size_t f = 0;
             h && h->type == REDIS_REPLY_ARRAY && f + 1 < h->elements; f += 2) {
            if (strcmp(h->element[f]->str, "name") == 0)
                continue;
            json_out_puts(&json, ",");
            json_out_text(&json, h->element[f]->str, h->element[f]->len, 64);
            json_out_puts(&json, ":");
            json_out_text(&json, h->element[f + 1]->str, h->element[f + 1]->len,
                          FIELD_BYTES);
        }
        json_out_puts(&json, "}");
        freeReplyObject(h);
    }
    json_out_puts(&json, "]");
    free(pr->hosts_json);
    pr->hosts_json = json_out_take(&json, NULL);
}

void presence_read(presence *pr, const presence_self *self, pipeline *p,
                   presence_run_fn run, void *arg)
{
    size_t n_replies;
    redisReply **r;
    const redisReply *hosts;

    pipeline_reset(p);
    n_replies = add_names(self, p);
    r = xcalloc(n_replies, sizeof(*r));
    if (p->n != n_replies || run(arg, p) != 0) {
        pipeline_reset(p);
        goto out;
    }
    for (size_t i = 0; i < n_replies; i++)
        r[i] = pipeline_take(p, i);
    pipeline_reset(p);

    keep_served(pr, self, r);
    hosts = r[0];
    if (hosts && hosts->type == REDIS_REPLY_ARRAY)
        read_hosts(pr, self, hosts, p, run, arg);
out:
    for (size_t i = 0; i < n_replies; i++)
        freeReplyObject(r[i]);
    free(r);
}

void presence_withdraw(const presence_self *self, pipeline *p,
                       presence_run_fn run, void *arg)
{
    char key[KEY_MAX], what[400];

    pipeline_reset(p);
    snprintf(what, sizeof(what), "host:%s", self->name);
    key_global(key, sizeof(key), self->prefix, what);
    pipeline_addf(p, key, "DEL %s", key);
    key_global(key, sizeof(key), self->prefix, "hosts");
    pipeline_addf(p, key, "ZREM %s %s", key, self->name);
    for (size_t i = 0; i < self->n_types; i++) {
        key_of_type(key, sizeof(key), self->prefix, self->types[i], "hosts");
        pipeline_addf(p, key, "ZREM %s %s", key, self->name);
    }
    run(arg, p); /* best effort: the keys expire anyway */
}
