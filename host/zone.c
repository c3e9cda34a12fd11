/* Local time in a named zone (zone.h), read through the C library and the
 * system's tz database: no table of our own, and the zones the system
 * updates are the ones used.
 *
 * The C library knows one zone per process: TZ. Changing it is not
 * thread-safe in general (setenv may move the environment while another
 * thread's getenv reads it, and localtime_r in any thread would see the
 * borrowed zone), so this is what we chose, and why it holds in wharfd:
 *  - every use of a zone is between zone_enter and zone_leave, under one
 *    mutex, so two schedules never see each other's zone;
 *  - TZ is put in the environment once, before the first zone is
 *    entered (zone_enter on the supervisor's thread, from
 *    schedule_timer_start, before the timer's thread exists); from then on
 *    setenv only replaces the value of an existing variable, which glibc
 *    does by swapping one pointer and never freeing the old string, so a
 *    getenv elsewhere reads one value or the other, never freed memory;
 *  - no other code of the supervisor reads local time (the log uses
 *    gmtime_r), so the borrowed zone is seen by no one else;
 *  - the schedule thread enters a zone only inside the fork gate
 *    (fork_gate.h) and zone_leave puts TZ back, so no worker is forked
 *    with a schedule's zone in its environment.
 * A zone-aware library (tzalloc, localtime_rz) is not in Debian 12's C
 * library, and a TZif reader of our own would be a second copy of
 * glibc's. */

#include "zone.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xmalloc.h"

static pthread_mutex_t zone_lock = PTHREAD_MUTEX_INITIALIZER;
static bool zone_saved;
static char *zone_original; /* TZ as the process started, in TZ= form */

int zone_check(const char *name, char *why, size_t len)
{
    const char *dir = getenv("TZDIR");
    char path[512], magic[4];
    FILE *f;
    size_t n = strlen(name);

    if (strcmp(name, "UTC") == 0)
        return 0;
    if (n == 0 || n > ZONE_NAME_MAX || name[0] == '/' ||
        strstr(name, "..") != NULL ||
        name[strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstu"
                          "vwxyz0123456789/_+-")] != '\0') {
        snprintf(why, len,
                 "expected a zone name of the tz database, such as "
                 "Europe/Berlin or UTC");
        return -1;
    }
    if (dir == NULL || *dir == '\0')
        dir = "/usr/share/zoneinfo";
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "re");
    if (f == NULL) {
        snprintf(why, len, "no zone '%s' in the tz database (%s)", name, dir);
        return -1;
    }
    n = fread(magic, 1, sizeof(magic), f);
    fclose(f);
    if (n != sizeof(magic) || memcmp(magic, "TZif", 4) != 0) {
        snprintf(why, len, "'%s' in %s is not a zone file", name, dir);
        return -1;
    }
    return 0;
}

void zone_enter(const char *name)
{
    char value[ZONE_NAME_MAX + 2];

    pthread_mutex_lock(&zone_lock);
    if (!zone_saved) {
        const char *tz = getenv("TZ");

        /* Unset means /etc/localtime, which ":/etc/localtime" says too:
         * the variable then exists for good, and is never unset (unsetenv
         * moves the environment's entries). */
        zone_original = xstrdup(tz != NULL ? tz : ":/etc/localtime");
        zone_saved = true;
    }
    snprintf(value, sizeof(value), ":%s", name);
    if (setenv("TZ", value, 1) != 0)
        xmalloc_oom();
    tzset();
}

void zone_leave(void)
{
    if (setenv("TZ", zone_original, 1) != 0)
        xmalloc_oom();
    tzset();
    pthread_mutex_unlock(&zone_lock);
}

void zone_local(int64_t instant, struct tm *out)
{
    time_t t = (time_t)instant;

    if (localtime_r(&t, out) == NULL)
        memset(out, 0, sizeof(*out));
}

int64_t zone_offset(int64_t instant)
{
    struct tm tm;

    zone_local(instant, &tm);
    return (int64_t)tm.tm_gmtoff;
}

int64_t zone_utc_seconds(int y, int mo, int d, int h, int mi, int s)
{
    struct tm tm;

    memset(&tm, 0, sizeof(tm));
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = s;
    return (int64_t)timegm(&tm);
}

/* Whether instant shows exactly that wall time (to the minute). */
static bool shows(int64_t instant, int y, int mo, int d, int h, int mi)
{
    struct tm tm;

    zone_local(instant, &tm);
    return tm.tm_year == y - 1900 && tm.tm_mon == mo - 1 && tm.tm_mday == d &&
           tm.tm_hour == h && tm.tm_min == mi && tm.tm_sec == 0;
}

/* No mktime: with tm_isdst = -1 it picks either instant of a repeated
 * hour and moves a skipped one by the change in either direction,
 * depending on the C library. The offsets a day before and a day after
 * are the ones that can apply (zones change at most once in two days),
 * so the wall time, read as UTC, less each of them gives its candidates. */
int64_t zone_resolve(int y, int mo, int d, int h, int mi, bool *gap)
{
    int64_t as_utc = zone_utc_seconds(y, mo, d, h, mi, 0);
    int64_t before = as_utc - zone_offset(as_utc - 86400);
    int64_t after = as_utc - zone_offset(as_utc + 86400);
    bool have_before = shows(before, y, mo, d, h, mi);
    bool have_after = shows(after, y, mo, d, h, mi);
    int64_t lo, hi;

    *gap = false;
    if (have_before && have_after)
        return before < after ? before : after;
    if (have_before)
        return before;
    if (have_after)
        return after;
    /* A gap: the change is between the two candidates (the wall time
     * read with the offset after it is still before it, and the other
     * way round); the first instant with the new offset is the change. */
    *gap = true;
    lo = before < after ? before : after;
    hi = before < after ? after : before;
    {
        int64_t new_offset = zone_offset(hi);

        while (hi - lo > 1) {
            int64_t mid = lo + (hi - lo) / 2;

            if (zone_offset(mid) == new_offset)
                hi = mid;
            else
                lo = mid;
        }
    }
    return hi;
}
