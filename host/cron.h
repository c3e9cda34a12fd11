/* The times a schedule fires (docs/manifest.md, [schedule.NAME]): a
 * five-field cron line or an @ name, evaluated in a timezone, or a fixed
 * period. Pure functions of their arguments: no clock, no Redis. */
#ifndef WHARF_CRON_H
#define WHARF_CRON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A parsed cron line: bit n of a field set when n matches. */
typedef struct cron_line {
    uint64_t minutes;              /* 0..59 */
    uint32_t hours;                /* 0..23 */
    uint32_t days;                 /* 1..31 */
    uint32_t months;               /* 1..12 */
    uint32_t weekdays;             /* 0..6, Sunday 0 */
    bool days_star, weekdays_star; /* the field was '*' (cron's rule for
                                      day of month and weekday) */
} cron_line;

/* Parses "MIN HOUR DOM MON DOW" (numbers, *, a-b, lists, /step, and
 * jan..dec, sun..sat) or @hourly, @daily (@midnight), @weekly,
 * @monthly, @yearly (@annually). 0 and *out set, or -1 with why. */
int cron_parse(const char *text, cron_line *out, char *why, size_t len);

/* The first tick of line strictly after `after` (seconds since the
 * epoch), evaluated in zone (zone.h; checked). Each wall time the line
 * names fires once: in the hour a fall-back repeats, at its first
 * instant; in the hour a spring-forward skips, at the change (the first
 * valid time after it), where it is one tick with any other of that
 * instant. 0 and *out set, or -1 when no tick comes within 30 years
 * (a line such as "0 0 30 2 *"). */
int cron_next(const cron_line *line, const char *zone, int64_t after,
              int64_t *out);

/* The first multiple of every_s (seconds, >= 1) since the epoch
 * strictly after `after`: `every = DURATION`'s ticks, the same on every
 * host. */
int64_t cron_next_every(int64_t every_s, int64_t after);

/* The ticks in (after, until] of line in zone, or of every_s when it is
 * not 0 (line and zone are then unused): the newest of them, up to max,
 * into out, oldest first; returns how many. *older is set when there are
 * older ones in that span than out holds. Only the newest are looked
 * for, so a schedule down for years costs no more than one down for a
 * day. */
size_t cron_ticks(const cron_line *line, int64_t every_s, const char *zone,
                  int64_t after, int64_t until, int64_t *out, size_t max,
                  bool *older);

#endif /* WHARF_CRON_H */
