/* The console's dead-set search and bulk actions; see
 * console_dead_search.h and docs/console.md. The steps are the CLI's
 * (dead_search.h): a search reads up to CONSOLE_SEARCH_PAGES pages a
 * request, a bulk action one page, then replays or purges that page's
 * matches with the scripts `wharf dead replay` and `purge` send
 * (sdk/lua/dead_replay.lua, dead_purge.lua), pipelined. The page loops
 * on the cursor, so no request holds the loop or Redis for long, and an
 * interrupted bulk action goes on from where it stopped. */
#include "console_dead_search.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "console_actions.h"
#include "console_redis.h"
#include "console_reply.h"
#include "dead_search.h"
#include "json_out.h"
#include "log.h"
#include "lua_scripts.h"
#include "xmalloc.h"

/* Bytes of an error in a match listed. */
#define MATCH_ERROR_BYTES 300

/* A request's filter, its strings copied out of the query or form. */
typedef struct search_args {
    char type_buf[128], grep[DEAD_SEARCH_GREP_MAX + 2],
        prefix[DEAD_SEARCH_PREFIX_MAX + 2], since[64], before[64], attempts[32],
        cursor[DEAD_SEARCH_CURSOR_MAX];
    const char *type;
    dead_search_filter f;
    bool resumed; /* a cursor was given: w holds it */
} search_args;

/* The walk's round trips, within the pass's budget. */
static int run_in_budget(void *arg, pipeline *p)
{
    (void)p; /* the console's own pipeline */
    return console_run_pipe(arg);
}

/* Reads the filter (and cursor) of a request into a: true, or false after
 * answering 400. */
static bool read_args(http_reply *reply, search_args *a, dead_search_walk *w)
{
    const char *grep = console_action_arg("grep", a->grep, sizeof(a->grep));
    const char *prefix =
        console_action_arg("id_prefix", a->prefix, sizeof(a->prefix));
    const char *since = console_action_arg("since", a->since, sizeof(a->since));
    const char *before =
        console_action_arg("before", a->before, sizeof(a->before));
    const char *attempts =
        console_action_arg("attempts", a->attempts, sizeof(a->attempts));
    const char *cursor =
        console_action_arg("cursor", a->cursor, sizeof(a->cursor));
    const char *bad;

    a->type = console_type_arg(
        reply, console_action_arg("type", a->type_buf, sizeof(a->type_buf)),
        true);
    if (!*a->type)
        return false;
    memset(&a->f, 0, sizeof(a->f));
    a->f.grep = grep ? grep : "";
    a->f.id_prefix = prefix ? prefix : "";
    if ((since && *since &&
         (config_parse_duration(since, &a->f.since_ago_ms) != 0 ||
          a->f.since_ago_ms <= 0)) ||
        (before && *before &&
         (config_parse_duration(before, &a->f.before_ago_ms) != 0 ||
          a->f.before_ago_ms <= 0))) {
        console_reply_error(reply, 400,
                            "since, before: a duration (e.g. 2h), more "
                            "than 0");
        return false;
    }
    if (attempts && *attempts) {
        char *end;
        unsigned long n = strtoul(attempts, &end, 10);
        if (*attempts < '0' || *attempts > '9' || *end || n < 1 ||
            n > 1000000) {
            console_reply_error(reply, 400, "attempts: a count, 1..1000000");
            return false;
        }
        a->f.attempts = (unsigned)n;
    }
    if ((bad = dead_search_filter_check(&a->f))) {
        console_reply_error(reply, 400, "%s", bad);
        return false;
    }
    a->resumed = cursor && *cursor;
    if (a->resumed && dead_search_resume(cursor, w) != 0) {
        console_reply_error(reply, 400,
                            "cursor: give back the one an answer gave");
        return false;
    }
    return true;
}

/* Begins the walk unless a cursor resumed it: true, or false after
 * answering. */
static bool begin_walk(console *c, const dead_search_io *io,
                       const search_args *a, dead_search_walk *w,
                       http_reply *reply)
{
    char why[256];
    int rc;

    if (a->resumed)
        return true;
    rc = dead_search_begin(io, console_prefix(c), a->type, &a->f, w, why,
                           sizeof(why));
    if (rc == DEAD_SEARCH_UNAVAILABLE) {
        console_unavailable(reply, "2",
                            "redis: the dead set could not be read");
        return false;
    }
    if (rc != 0) {
        console_reply_error(reply, 502, "redis: %s", why);
        return false;
    }
    return true;
}

/* Answers a step's error rc (dead_search.h). */
static void step_failed(int rc, const char *why, http_reply *reply)
{
    if (rc == DEAD_SEARCH_UNAVAILABLE)
        console_unavailable(reply, "2",
                            "redis: the dead set could not be read");
    else
        console_reply_error(reply, 502, "redis: %s", why);
}

/* The walk's figures and cursor (null when it is done). */
static void put_walk(json_out *b, const dead_search_walk *w)
{
    char cursor[DEAD_SEARCH_CURSOR_MAX];

    json_out_printf(b,
                    ",\"scanned\":%lld,\"total\":%lld,\"cursor\":", w->visited,
                    w->total);
    if (dead_search_finished(w)) {
        json_out_puts(b, "null");
        return;
    }
    dead_search_cursor(w, cursor, sizeof(cursor));
    json_out_str(b, cursor);
}

/* GET /api/dead/search?type=T[&grep=..][&since=..][&before=..]
 * [&attempts=N][&id_prefix=..][&list=N][&cursor=C]: up to
 * CONSOLE_SEARCH_PAGES pages, newest first, stopping sooner once list
 * matches are in hand (list 0: a count only). */
void console_dead_search(console *c, http_reply *reply)
{
    long list = console_query_number("list", 50, 0, DEAD_SEARCH_PAGE);
    dead_search_walk w = {.oldest_first = false, .removes = false};
    search_args *a = xcalloc(1, sizeof(*a));
    dead_search_page page;
    json_out b = {0};
    long matched = 0, shown = 0;
    dead_search_io io = {NULL, run_in_budget, c};
    char why[256];
    int rc = 0;

    if (list < 0) {
        console_reply_error(reply, 400, "list: 0..%d", DEAD_SEARCH_PAGE);
        goto out;
    }
    if (!read_args(reply, a, &w) || !(io.p = console_redis_for(c, reply)) ||
        !begin_walk(c, &io, a, &w, reply))
        goto out;
    json_out_puts(&b, "{\"type\":");
    json_out_str(&b, a->type);
    json_out_puts(&b, ",\"matches\":[");
    for (int pages = 0;
         pages < CONSOLE_SEARCH_PAGES && (list == 0 || shown < list); pages++) {
        rc = dead_search_next(&io, console_prefix(c), a->type, &a->f, &w, &page,
                              why, sizeof(why));
        if (rc != 1)
            break;
        matched += (long)page.n;
        for (size_t i = 0; list > 0 && i < page.n; i++, shown++) {
            const dead_search_match *m = &page.m[i];
            json_out_puts(&b, shown ? ",{\"id\":" : "{\"id\":");
            json_out_str(&b, m->id);
            json_out_printf(&b, ",\"died_at\":%" PRId64 ",\"attempt\":%ld",
                            m->died_at_ms, strtol(m->attempt, NULL, 10));
            json_out_puts(&b, ",\"error\":");
            json_out_text(&b, m->error, m->error_len, MATCH_ERROR_BYTES);
            json_out_puts(&b, "}");
        }
        dead_search_page_done(&w, &page);
    }
    if (rc < 0) {
        json_out_free(&b);
        step_failed(rc, why, reply);
        goto out;
    }
    json_out_printf(&b, "],\"matched\":%ld", matched);
    put_walk(&b, &w);
    json_out_puts(&b, "}");
    console_reply_json(reply, 200, &b);
out:
    free(a);
}

/* Adds the replay or purge of each id to p (the scripts the CLI sends). */
static void add_removals(console *c, pipeline *p, bool replay, const char *type,
                         const char *const *ids, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        command *cmd = &p->cmd;
        command_reset(cmd);
        if ((replay
                 ? script_dead_replay_call(cmd, console_prefix(c), type, ids[i])
                 : script_dead_purge_call(cmd, console_prefix(c), type,
                                          ids[i])) != 0 ||
            pipeline_add_command(p, -1, cmd,
                                 replay ? &script_dead_replay
                                        : &script_dead_purge) != 0)
            xmalloc_oom(); /* an id of the dead set always fits a key */
    }
}

/* Whether reply r of a replay or a purge did it. */
static bool removed(bool replay, const redisReply *r)
{
    if (!r)
        return false;
    if (replay)
        return (r->type == REDIS_REPLY_STRING ||
                r->type == REDIS_REPLY_STATUS) &&
               script_dead_replay_word_of(r->str) == SCRIPT_DEAD_REPLAY_OK;
    return r->type == REDIS_REPLY_INTEGER && r->integer == 1;
}

/* POST /api/dead/replay or /api/dead/purge with a search's arguments:
 * one page of the walk, oldest first, its matches replayed or purged.
 * Answers {"done", "type", "acted", "matched", "scanned", "total",
 * "cursor"}: the page asks again with the cursor until it is null. */
void console_dead_bulk(console *c, const char *what, http_reply *reply)
{
    bool replay = strcmp(what, "replay") == 0;
    dead_search_walk w = {.oldest_first = true, .removes = true};
    search_args *a = xcalloc(1, sizeof(*a));
    dead_search_page page;
    json_out b = {0};
    long acted = 0;
    dead_search_io io = {NULL, run_in_budget, c};
    char why[256];
    pipeline *p;
    int rc;

    if (!console_action_allowed(c, reply) || !read_args(reply, a, &w) ||
        !(io.p = p = console_redis_for(c, reply)) ||
        !begin_walk(c, &io, a, &w, reply))
        goto out;
    rc = dead_search_next(&io, console_prefix(c), a->type, &a->f, &w, &page,
                          why, sizeof(why));
    if (rc < 0) {
        step_failed(rc, why, reply);
        goto out;
    }
    if (rc == 1 && page.n > 0) {
        pipeline_reset(p);
        add_removals(c, p, replay, a->type, page.ids, page.n);
        if (console_run_pipe(c) != 0) {
            dead_search_page_done(&w, &page);
            console_unavailable(reply, "2",
                                "redis: the action may not have gone "
                                "through; ask again with the same cursor");
            goto out;
        }
        for (size_t i = 0; i < page.n; i++)
            acted += removed(replay, pipeline_reply(p, i));
        pipeline_reset(p);
        log_fields(WHARF_LOG_INFO, "console action",
                   (log_field[]){LOG_STR("action", what),
                                 LOG_STR("type", a->type),
                                 LOG_INT("matching", (int64_t)acted)},
                   3);
    }
    json_out_printf(&b, "{\"done\":\"%s\",\"type\":", what);
    json_out_str(&b, a->type);
    json_out_printf(&b, ",\"acted\":%ld,\"matched\":%zu", acted,
                    rc == 1 ? page.n : 0);
    if (rc == 1)
        dead_search_page_done(&w, &page);
    put_walk(&b, &w);
    json_out_puts(&b, "}");
    console_reply_json(reply, 200, &b);
out:
    free(a);
}
