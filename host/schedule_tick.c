/* A tick's task id and payload (schedule_tick.h). */
#include "schedule_tick.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "xmalloc.h"

void schedule_format_time(char *buf, size_t len, int64_t seconds)
{
    time_t t = (time_t)seconds;
    struct tm tm;

    if (gmtime_r(&t, &tm) == NULL ||
        strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(buf, len, "%" PRId64, seconds);
}

void schedule_tick_id(char *buf, size_t len, const char *name, int64_t tick)
{
    char at[SCHEDULE_TIME_MAX];

    schedule_format_time(at, sizeof(at), tick);
    snprintf(buf, len, "sched:%s:%s", name, at);
}

void schedule_manual_id(char *buf, size_t len, const char *name, int64_t now_ms)
{
    char at[SCHEDULE_TIME_MAX];
    time_t t = (time_t)(now_ms / 1000);
    struct tm tm;

    if (gmtime_r(&t, &tm) == NULL ||
        strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
        snprintf(at, sizeof(at), "%" PRId64, now_ms / 1000);
    snprintf(buf, len, "sched:%s:manual:%s.%03dZ", name, at,
             (int)(now_ms % 1000));
}

char *schedule_payload(const char *payload, int64_t tick, size_t *len)
{
    char text[SCHEDULE_TIME_MAX], unix_text[24];
    size_t n = strlen(payload), cap = n + 1, used = 0;
    char *out;

    schedule_format_time(text, sizeof(text), tick);
    snprintf(unix_text, sizeof(unix_text), "%" PRId64, tick);
    /* Each placeholder is longer than neither of its texts by more than
     * this, so one pass sized by the count of '{' is enough. */
    for (const char *c = payload; (c = strchr(c, '{')) != NULL; c++)
        cap += sizeof(text);
    out = xrealloc(NULL, cap);
    for (const char *c = payload; *c != '\0';) {
        const char *with = NULL;
        size_t skip = 0;

        if (strncmp(c, SCHEDULE_TICK_TEXT, strlen(SCHEDULE_TICK_TEXT)) == 0) {
            with = text;
            skip = strlen(SCHEDULE_TICK_TEXT);
        } else if (strncmp(c, SCHEDULE_TICK_UNIX, strlen(SCHEDULE_TICK_UNIX)) ==
                   0) {
            with = unix_text;
            skip = strlen(SCHEDULE_TICK_UNIX);
        }
        if (with != NULL) {
            memcpy(out + used, with, strlen(with));
            used += strlen(with);
            c += skip;
        } else {
            out[used++] = *c++;
        }
    }
    out[used] = '\0';
    *len = used;
    return out;
}
