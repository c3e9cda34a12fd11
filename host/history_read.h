/* Reading the fleet's history (history.h) for `wharf stats --history`
 * and the console: a type's minutes are read with one HGETALL each, all
 * in one pipelined round trip (to the type's node on a cluster), and
 * summed over the hosts that wrote them, or taken from one host. */
#ifndef WHARF_HISTORY_READ_H
#define WHARF_HISTORY_READ_H

#include <stddef.h>
#include <stdint.h>

#include "history.h"
#include "pipeline.h"

/* Most hosts a read names (history_hosts); more are summed, not named. */
#define HISTORY_HOSTS_MAX 64
#define HISTORY_HOST_MAX 300

/* The hosts that wrote any minute read: "<hostname>:<instance>". */
typedef struct history_hosts {
    char name[HISTORY_HOSTS_MAX][HISTORY_HOST_MAX];
    size_t n;
} history_hosts;

/* Adds the n reads of type's minutes from, from + 1, ... to p. 0, or -1
 * with p->errstr set. */
int history_read_add(pipeline *p, const char *prefix, const char *type,
                     int64_t from, size_t n);

/* Takes the n replies of p from index first (as history_read_add added
 * them) into out[0..n): each minute's figures summed over its hosts, or
 * only host's when host is not NULL; the hosts seen join *hosts (when not
 * NULL). A field of another format is passed over. 0, or -1 when a reply
 * is missing or not a hash's (an error reply, say): its text in why. */
int history_read_take(const pipeline *p, size_t first, size_t n,
                      const char *host, history_figures *out,
                      history_hosts *hosts, char *why, size_t why_len);

/* The minute now_wall_ms falls in, and the first of the `last_ms` that
 * end with it (at least that one). */
int64_t history_minute_of(int64_t now_wall_ms);
size_t history_minutes_in(int64_t last_ms);

#endif /* WHARF_HISTORY_READ_H */
