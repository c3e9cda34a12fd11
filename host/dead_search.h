/* Searching a type's dead set in bounded steps, for `wharf dead list /
 * replay / purge` with filters and for the console's search and bulk
 * actions alike: a walk over the records in the filter's time range, a
 * page of DEAD_SEARCH_PAGE ids at a time (a ZRANGE by rank, O(log n)),
 * each page searched in Redis by sdk/lua/dead_find.lua (error text,
 * attempts, id prefix), so only matches travel and no step holds Redis
 * for more than a page's worth of work. A walk's state is a few numbers
 * (dead_search_walk) a caller may keep between requests, so a search or
 * a bulk action can go on where it stopped. */
#ifndef WHARF_DEAD_SEARCH_H
#define WHARF_DEAD_SEARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "pipeline.h"

/* Ids per page: small enough that one dead_find call stays well under a
 * millisecond or two of Redis time. */
#define DEAD_SEARCH_PAGE 200
/* The longest grep and id prefix: an error is kept at most a few KiB, an
 * id at most 200 bytes. */
#define DEAD_SEARCH_GREP_MAX 1024
#define DEAD_SEARCH_PREFIX_MAX 200

typedef struct dead_search_filter {
    const char *grep;      /* "" for any error */
    int64_t since_ago_ms;  /* died at most this long ago, or 0 */
    int64_t before_ago_ms; /* died at least this long ago, or 0 */
    unsigned attempts;     /* at least, 0 for any */
    const char *id_prefix; /* "" for any */
} dead_search_filter;

/* Where a walk stands. The caller sets oldest_first and removes before
 * dead_search_begin; the rest is the walk's. */
typedef struct dead_search_walk {
    bool oldest_first; /* else newest first */
    bool removes;      /* the caller takes each page's matches out of the
                          set: pages step over what is left only, and
                          the walk stops at the records that died before
                          it began, so one that dies again meanwhile is
                          not visited twice */
    int64_t now_ms;    /* Redis's clock when the walk began */
    long long base;    /* rank of the range's first record from the end
                          the walk starts at */
    long long total;   /* records in the range when it began */
    long long visited; /* of them, read so far */
    long long offset;  /* rank of the next page from base */
} dead_search_walk;

/* One match: strings of the page's reply, valid until
 * dead_search_page_done. */
typedef struct dead_search_match {
    const char *id;
    int64_t died_at_ms;
    const char *attempt;
    const char *error;
    size_t error_len;
} dead_search_match;

typedef struct dead_search_page {
    redisReply *found; /* dead_find.lua's reply: the matches' strings */
    dead_search_match m[DEAD_SEARCH_PAGE];
    const char *ids[DEAD_SEARCH_PAGE]; /* the matches' ids */
    size_t n;                          /* matches */
    size_t len;                        /* ids the page held */
} dead_search_page;

/* How a walk reaches Redis: its pipeline, and what runs it (the
 * console's runs it within its pass's budget, console_redis.h). run
 * returns 0, or -1 when any command has no reply. */
typedef struct dead_search_io {
    pipeline *p;
    int (*run)(void *arg, pipeline *p);
    void *arg;
} dead_search_io;

/* What went wrong: the pipeline failed (Redis away: p->errstr says why),
 * or a reply was not what the protocol says (why says). */
#define DEAD_SEARCH_UNAVAILABLE (-1)
#define DEAD_SEARCH_BAD_REPLY (-2)

/* Why f cannot match anything or is not a filter (too long a grep, an id
 * prefix an id cannot start with, before not after since), or NULL. */
const char *dead_search_filter_check(const dead_search_filter *f);

/* Begins a walk of type's dead set (w's oldest_first and removes set):
 * reads Redis's clock and counts the range, in two round trips through
 * io. 0 or a DEAD_SEARCH_ error. */
int dead_search_begin(const dead_search_io *io, const char *prefix,
                      const char *type, const dead_search_filter *f,
                      dead_search_walk *w, char *why, size_t why_len);

/* Whether the walk has read every record of its range. */
bool dead_search_finished(const dead_search_walk *w);

/* Reads the walk's next page and its matches into *page, in two round
 * trips: 1 with a page (its matches may be none), 0 when the walk is
 * done (nothing read), or a DEAD_SEARCH_ error. */
int dead_search_next(const dead_search_io *io, const char *prefix,
                     const char *type, const dead_search_filter *f,
                     dead_search_walk *w, dead_search_page *page, char *why,
                     size_t why_len);

/* Steps the walk past page (whose matches a removing walk has taken out
 * of the set) and frees its reply. */
void dead_search_page_done(dead_search_walk *w, dead_search_page *page);

/* A walk as text ("now.base.total.visited.offset"), and back: 0, or -1
 * for text that is not one (w untouched). */
#define DEAD_SEARCH_CURSOR_MAX 120
void dead_search_cursor(const dead_search_walk *w, char *buf, size_t len);
int dead_search_resume(const char *text, dead_search_walk *w);

#endif /* WHARF_DEAD_SEARCH_H */
