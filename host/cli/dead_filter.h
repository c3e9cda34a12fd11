/* Searching a type's dead set (wharf dead list, replay and purge with
 * --grep, --since, --before, --attempts, --id-prefix): the flags, and a
 * walk of the matching records in bounded steps (sdk/lua/dead_find.lua
 * over pages of ids in the time range), so a search of a large dead set
 * never holds Redis for more than a page's worth of work at a time. */
#ifndef WHARF_CLI_DEAD_FILTER_H
#define WHARF_CLI_DEAD_FILTER_H

#include <stdbool.h>
#include <stdint.h>

#include "cli.h"
#include "dead_pages.h"
#include "dead_search.h"
#include "script.h"

/* The filter flags, as a command declares them in its flags table from
 * index first on: DEAD_FILTER_FLAGS of them. */
#define DEAD_FILTER_FLAGS 5
#define DEAD_FILTER_FLAG_TABLE                                                 \
    {"grep", true, NULL}, {"since", true, NULL}, {"before", true, NULL},       \
        {"attempts", true, NULL},                                              \
    {                                                                          \
        "id-prefix", true, NULL                                                \
    }

typedef struct dead_filter {
    bool any;              /* a filter flag was given */
    const char *grep;      /* "" for any error */
    int64_t since_ago_ms;  /* died at most this long ago, or 0 */
    int64_t before_ago_ms; /* died at least this long ago, or 0 */
    unsigned attempts;     /* at least, 0 for any */
    const char *id_prefix;
} dead_filter;

/* Reads the filter flags of args (from flag index first) into f: 0, or 64
 * after saying why. */
int dead_filter_parse(cli *ctx, const cli_args *args, int first,
                      dead_filter *f);

/* One match: strings of the reply, valid during the call. */
typedef dead_search_match dead_match;

/* Handles the matches of one page (n of them); 0 or an exit code. */
typedef int (*dead_match_fn)(cli *ctx, redisContext *redis, const char *type,
                             const dead_match *m, size_t n, void *arg);

/* What a walk does with the matches of each page. */
typedef struct dead_walk {
    bool oldest_first;    /* else newest first */
    dead_match_fn shown;  /* given the matches whole (a listing), or NULL */
    dead_page_fn removed; /* given their ids, and takes them out of the
                             set (a replay, a purge), or NULL */
    const script *s;      /* the script `removed` sends pipelined, loaded
                             first, or NULL */
    void *arg;            /* for shown or removed */
    long matched;         /* out: how many matched */
} dead_walk;

/* Walks the records of type's dead set that f matches, a page of
 * DEAD_FILTER_PAGE ids at a time, counting them in w->matched and handing
 * each page's matches to w->shown or w->removed (neither: a count). A walk
 * that removes steps over the rest only, and stops at the records that
 * died before it started, so a task that dies again meanwhile is not
 * visited twice. what names the command in errors. 0 or an exit code. */
int dead_each_match(cli *ctx, const char *what, const char *type,
                    const dead_filter *f, dead_walk *w);

/* Ids per page (dead_search.h). */
#define DEAD_FILTER_PAGE DEAD_SEARCH_PAGE

#endif /* WHARF_CLI_DEAD_FILTER_H */
