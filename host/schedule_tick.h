/* The task of a schedule's tick (docs/manifest.md, [schedule.NAME]): its
 * id, made of the schedule's name and the tick's time so every host that
 * fires the tick enqueues the same task (a duplicate is a no-op), and its
 * payload with the tick's time in place of the placeholders. Shared by
 * wharfd's timer and `wharf schedule run`. */
#ifndef WHARF_SCHEDULE_TICK_H
#define WHARF_SCHEDULE_TICK_H

#include <stddef.h>
#include <stdint.h>

/* "2026-12-03T03:00:00Z" and "2026-12-03T03:00:00.123Z" fit. */
#define SCHEDULE_TIME_MAX 32

/* The placeholders of a payload: the tick's time in UTC (ISO 8601, as
 * in the id) and in seconds since the epoch. */
#define SCHEDULE_TICK_TEXT "{{tick}}"
#define SCHEDULE_TICK_UNIX "{{tick_unix}}"

/* seconds as "2026-12-03T03:00:00Z". */
void schedule_format_time(char *buf, size_t len, int64_t seconds);

/* The id of the tick at `tick` (seconds) of schedule name:
 * "sched:NAME:2026-12-03T03:00:00Z". A name of the type name rule keeps
 * it a valid task id (1-200 bytes of 0x21..0x7e). */
void schedule_tick_id(char *buf, size_t len, const char *name, int64_t tick);

/* The id of a tick fired by hand at now_ms:
 * "sched:NAME:manual:2026-12-03T03:00:00.123Z", never one of a
 * scheduled tick. */
void schedule_manual_id(char *buf, size_t len, const char *name,
                        int64_t now_ms);

/* payload with each placeholder replaced by the time of the tick at
 * `tick` (seconds). malloc'd (the caller frees), its length in *len. */
char *schedule_payload(const char *payload, int64_t tick, size_t *len);

#endif /* WHARF_SCHEDULE_TICK_H */
