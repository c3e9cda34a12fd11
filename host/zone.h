/* Local time in a named timezone of the system's tz database
 * (/usr/share/zoneinfo, or $TZDIR): a name checked, and the wall clock
 * of an instant read, for the schedules (cron.h). One zone at a time in
 * the process, between zone_enter and zone_leave. */
#ifndef WHARF_ZONE_H
#define WHARF_ZONE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* The longest zone name taken ("America/Argentina/ComodRivadavia" is 32). */
#define ZONE_NAME_MAX 64

/* 0 when name is a zone of the tz database (a TZif file under its
 * folder, or "UTC"); -1 with why in why (one line). */
int zone_check(const char *name, char *why, size_t len);

/* Makes name (checked with zone_check) the zone of zone_local and
 * zone_offset until zone_leave, holding the process's one zone lock:
 * the calls in between are the only ones of the process that read local
 * time. */
void zone_enter(const char *name);
void zone_leave(void);

/* The wall clock of instant (seconds since the epoch) in the entered
 * zone, and its offset from UTC in seconds (east positive). */
void zone_local(int64_t instant, struct tm *out);
int64_t zone_offset(int64_t instant);

/* The instant of the wall time y-mo-d h:mi:00 (mo 1..12) in the entered
 * zone. A wall time that happens twice (the hour a fall-back repeats) is
 * its first instant; one that never happens (the hour a spring-forward
 * skips) is the first instant after the gap, the moment of the change.
 * *gap is set to whether it never happened. */
int64_t zone_resolve(int y, int mo, int d, int h, int mi, bool *gap);

/* Seconds since the epoch of the UTC wall time y-mo-d h:mi:s. */
int64_t zone_utc_seconds(int y, int mo, int d, int h, int mi, int s);

#endif /* WHARF_ZONE_H */
