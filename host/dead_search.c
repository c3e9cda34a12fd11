/* Searching a dead set in bounded steps; see dead_search.h. */
#include "dead_search.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error_set.h"
#include "keys.h"
#include "lua_scripts.h"

const char *dead_search_filter_check(const dead_search_filter *f)
{
    size_t n = strlen(f->id_prefix);

    if (strlen(f->grep) > DEAD_SEARCH_GREP_MAX)
        return "grep: at most 1024 bytes";
    if (n > DEAD_SEARCH_PREFIX_MAX)
        return "id prefix: at most 200 bytes, as an id";
    for (size_t i = 0; i < n; i++)
        if (f->id_prefix[i] <= ' ' || f->id_prefix[i] > '~')
            return "id prefix: printable bytes without spaces, as an id";
    if (f->since_ago_ms && f->before_ago_ms &&
        f->before_ago_ms >= f->since_ago_ms)
        return "before is not after since: no task can have died in "
               "between";
    return NULL;
}

/* The range's bounds in ZCOUNT's and ZRANGEBYSCORE's forms. */
static void bounds(const dead_search_filter *f, const dead_search_walk *w,
                   char lo[32], char hi[32])
{
    snprintf(lo, 32, f->since_ago_ms ? "%" PRId64 : "-inf",
             w->now_ms - f->since_ago_ms);
    if (f->before_ago_ms || w->removes)
        snprintf(hi, 32, "%" PRId64, w->now_ms - f->before_ago_ms);
    else
        snprintf(hi, 32, "+inf");
}

/* Runs what p holds through io: 0, or DEAD_SEARCH_UNAVAILABLE (p
 * reset). */
static int run(const dead_search_io *io)
{
    if (io->run(io->arg, io->p) == 0)
        return 0;
    pipeline_reset(io->p);
    return DEAD_SEARCH_UNAVAILABLE;
}

/* One command for key, run: its reply (caller frees), or NULL. */
static redisReply *one_command(const dead_search_io *io, const char *key,
                               const char *fmt, const char *a, const char *b,
                               const char *c)
{
    redisReply *r;

    pipeline_reset(io->p);
    if (pipeline_addf(io->p, key, fmt, a, b, c) != 0 || run(io) != 0)
        return NULL;
    r = pipeline_take(io->p, 0);
    pipeline_reset(io->p);
    return r;
}

/* An integer reply's value into *n: 0, or DEAD_SEARCH_BAD_REPLY. */
static int integer_of(redisReply *r, const char *what, long long *n, char *why,
                      size_t why_len)
{
    int rc = 0;

    if (r->type == REDIS_REPLY_INTEGER)
        *n = r->integer;
    else {
        error_set(why, why_len, "%s gave %s", what,
                  r->type == REDIS_REPLY_ERROR ? r->str
                                               : "an unexpected reply");
        rc = DEAD_SEARCH_BAD_REPLY;
    }
    freeReplyObject(r);
    return rc;
}

int dead_search_begin(const dead_search_io *io, const char *prefix,
                      const char *type, const dead_search_filter *f,
                      dead_search_walk *w, char *why, size_t why_len)
{
    char dead[KEY_MAX], lo[32], hi[32], outside[40];
    redisReply *r;
    pipeline *p;
    int rc = 0;

    if (key_of_type(dead, sizeof(dead), prefix, type, "dead") < 0) {
        error_set(why, why_len, "the type's name is too long for a key");
        return DEAD_SEARCH_BAD_REPLY;
    }
    /* Redis's clock: the dead set's scores are on it. */
    r = one_command(io, dead, "TIME", NULL, NULL, NULL);
    if (!r)
        return DEAD_SEARCH_UNAVAILABLE;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING ||
        r->element[1]->type != REDIS_REPLY_STRING) {
        error_set(why, why_len, "TIME gave an unexpected reply");
        freeReplyObject(r);
        return DEAD_SEARCH_BAD_REPLY;
    }
    w->now_ms = strtoll(r->element[0]->str, NULL, 10) * 1000 +
                strtoll(r->element[1]->str, NULL, 10) / 1000;
    freeReplyObject(r);
    w->base = w->total = w->visited = w->offset = 0;
    bounds(f, w, lo, hi);
    /* Pages go by rank (O(log n) each), not by LIMIT's offset (O(offset),
     * which took 13 ms at 20,000): base is the rank of the range's first
     * record from the end the walk starts at. */
    pipeline_reset(p = io->p);
    if (w->oldest_first && f->since_ago_ms)
        snprintf(outside, sizeof(outside), "(%s", lo);
    else if (!w->oldest_first && strcmp(hi, "+inf") != 0)
        snprintf(outside, sizeof(outside), "(%s", hi);
    else
        outside[0] = '\0';
    if ((outside[0] &&
         pipeline_addf(p, dead, "ZCOUNT %s %s %s", dead,
                       w->oldest_first ? "-inf" : outside,
                       w->oldest_first ? outside : "+inf") != 0) ||
        pipeline_addf(p, dead, "ZCOUNT %s %s %s", dead, lo, hi) != 0 ||
        run(io) != 0) {
        pipeline_reset(p);
        return DEAD_SEARCH_UNAVAILABLE;
    }
    if (outside[0])
        rc = integer_of(pipeline_take(p, 0), "ZCOUNT", &w->base, why, why_len);
    if (rc == 0)
        rc = integer_of(pipeline_take(p, outside[0] ? 1 : 0), "ZCOUNT",
                        &w->total, why, why_len);
    pipeline_reset(p);
    return rc;
}

bool dead_search_finished(const dead_search_walk *w)
{
    return w->visited >= w->total;
}

/* dead_find.lua over the ids of page (strings): its reply, checked, or
 * NULL with *rc set. */
static redisReply *find_in_page(const dead_search_io *io, const char *prefix,
                                const char *type, const dead_search_filter *f,
                                const redisReply *ids, int *rc, char *why,
                                size_t why_len)
{
    char key[KEY_MAX], attempts[16];
    command *cmd = &io->p->cmd;
    redisReply *r = NULL;

    snprintf(attempts, sizeof(attempts), "%u", f->attempts);
    command_reset(cmd);
    script_dead_find_keys(cmd, prefix, type);
    for (const char *what = "dead"; what;
         what = strcmp(what, "dead") == 0 ? "task" : NULL)
        for (size_t i = 0; i < ids->elements; i++) {
            key_of_task(key, sizeof(key), prefix, type, what,
                        ids->element[i]->str);
            command_push_key_copy(cmd, key, strlen(key));
        }
    script_dead_find_args(cmd, f->grep, attempts, f->id_prefix);
    for (size_t i = 0; i < ids->elements; i++)
        command_push(cmd, ids->element[i]->str, ids->element[i]->len);
    pipeline_reset(io->p);
    if (pipeline_add_command(io->p, -1, cmd, &script_dead_find) == 0 &&
        run(io) == 0)
        r = pipeline_take(io->p, 0);
    pipeline_reset(io->p);
    if (!r) {
        *rc = DEAD_SEARCH_UNAVAILABLE;
        return NULL;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements % 4 != 0) {
        error_set(why, why_len, "the search gave %s",
                  r->type == REDIS_REPLY_ERROR ? r->str
                                               : "an unexpected reply");
        freeReplyObject(r);
        *rc = DEAD_SEARCH_BAD_REPLY;
        return NULL;
    }
    for (size_t i = 0; i < r->elements; i++)
        if (r->element[i]->type != REDIS_REPLY_STRING) {
            error_set(why, why_len, "the search gave a non-string");
            freeReplyObject(r);
            *rc = DEAD_SEARCH_BAD_REPLY;
            return NULL;
        }
    return r;
}

int dead_search_next(const dead_search_io *io, const char *prefix,
                     const char *type, const dead_search_filter *f,
                     dead_search_walk *w, dead_search_page *page, char *why,
                     size_t why_len)
{
    char dead[KEY_MAX], from[24], to[24];
    long long first = w->base + w->offset, last;
    redisReply *ids;
    int rc = 0;

    page->found = NULL;
    page->n = page->len = 0;
    if (dead_search_finished(w))
        return 0;
    last = first + DEAD_SEARCH_PAGE - 1;
    if (last >= first + (w->total - w->visited))
        last = first + (w->total - w->visited) - 1;
    key_of_type(dead, sizeof(dead), prefix, type, "dead");
    snprintf(from, sizeof(from), "%lld", first);
    snprintf(to, sizeof(to), "%lld", last);
    ids = one_command(
        io, dead, w->oldest_first ? "ZRANGE %s %s %s" : "ZREVRANGE %s %s %s",
        dead, from, to);
    if (!ids)
        return DEAD_SEARCH_UNAVAILABLE;
    page->len = ids->type == REDIS_REPLY_ARRAY ? ids->elements : 0;
    for (size_t i = 0; i < page->len; i++)
        if (ids->element[i]->type != REDIS_REPLY_STRING)
            page->len = 0;
    if (page->len == 0) {
        /* The set shrank under the walk: nothing more to read. */
        freeReplyObject(ids);
        w->visited = w->total;
        return 0;
    }
    page->found = find_in_page(io, prefix, type, f, ids, &rc, why, why_len);
    freeReplyObject(ids);
    if (!page->found)
        return rc;
    for (size_t i = 0; i < page->found->elements / 4; i++) {
        redisReply *const *e = page->found->element + 4 * i;
        int64_t died = (int64_t)strtod(e[1]->str, NULL);
        /* Pages go by rank, and ranks move when records come and go
         * beside the walk (a bulk action resumed from an older cursor, a
         * trim): a record outside the range is not the walk's. */
        if ((f->since_ago_ms && died < w->now_ms - f->since_ago_ms) ||
            ((f->before_ago_ms || w->removes) &&
             died > w->now_ms - f->before_ago_ms))
            continue;
        page->m[page->n] = (dead_search_match){e[0]->str, died, e[2]->str,
                                               e[3]->str, e[3]->len};
        page->ids[page->n++] = e[0]->str;
    }
    return 1;
}

void dead_search_page_done(dead_search_walk *w, dead_search_page *page)
{
    w->offset += (long long)(w->removes ? page->len - page->n : page->len);
    w->visited += (long long)page->len;
    freeReplyObject(page->found);
    page->found = NULL;
    page->n = page->len = 0;
}

void dead_search_cursor(const dead_search_walk *w, char *buf, size_t len)
{
    snprintf(buf, len, "%" PRId64 ".%lld.%lld.%lld.%lld", w->now_ms, w->base,
             w->total, w->visited, w->offset);
}

int dead_search_resume(const char *text, dead_search_walk *w)
{
    long long v[5];
    const char *at = text;
    char *end;

    for (size_t i = 0; i < 5; i++) {
        if (*at < '0' || *at > '9')
            return -1;
        v[i] = strtoll(at, &end, 10);
        if (*end != (i < 4 ? '.' : '\0'))
            return -1;
        at = end + 1;
    }
    if (v[3] > v[2] || v[4] > v[3] + v[1] + v[2])
        return -1;
    w->now_ms = v[0];
    w->base = v[1];
    w->total = v[2];
    w->visited = v[3];
    w->offset = v[4];
    return 0;
}
