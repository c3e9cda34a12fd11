/* The times a schedule fires (cron.h): cron lines parsed into bit sets,
 * and the next tick found by walking the wall calendar of the zone day
 * by day, each matching wall time turned into its instant by
 * zone_resolve (which decides the repeated and the skipped hour). */
#include "cron.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "zone.h"

typedef struct field {
    const char *name;
    int lo, hi;
    const char *const *names; /* index + lo is the value, or NULL */
} field;

static const char *const month_names[] = {"jan", "feb", "mar", "apr", "may",
                                          "jun", "jul", "aug", "sep", "oct",
                                          "nov", "dec", NULL};
static const char *const weekday_names[] = {"sun", "mon", "tue", "wed",
                                            "thu", "fri", "sat", NULL};

static const field fields[5] = {
    {"minute", 0, 59, NULL},
    {"hour", 0, 23, NULL},
    {"day of month", 1, 31, NULL},
    {"month", 1, 12, month_names},
    /* 7 is Sunday too, as in every cron. */
    {"day of week", 0, 7, weekday_names},
};

static const struct {
    const char *name, *line;
} at_names[] = {
    {"@hourly", "0 * * * *"},   {"@daily", "0 0 * * *"},
    {"@midnight", "0 0 * * *"}, {"@weekly", "0 0 * * 0"},
    {"@monthly", "0 0 1 * *"},  {"@yearly", "0 0 1 1 *"},
    {"@annually", "0 0 1 1 *"}, {NULL, NULL},
};

/* A number or a name of f at *p: its value, p moved past it; -1 if
 * neither. */
static int read_value(const field *f, const char **p)
{
    const char *s = *p;
    long v = 0;

    if (isdigit((unsigned char)*s)) {
        while (isdigit((unsigned char)*s) && v <= 1000)
            v = v * 10 + (*s++ - '0');
        *p = s;
        return (int)v;
    }
    for (size_t i = 0; f->names != NULL && f->names[i] != NULL; i++) {
        if (strncasecmp(s, f->names[i], 3) == 0 &&
            !isalpha((unsigned char)s[3])) {
            *p = s + 3;
            return (int)i + f->lo;
        }
    }
    return -1;
}

/* One field's text (no blanks) into bits. 0, or -1 with why. */
static int parse_field(const field *f, const char *text, uint64_t *bits,
                       bool *star, char *why, size_t len)
{
    const char *p = text;

    *bits = 0;
    *star = strcmp(text, "*") == 0;
    while (true) {
        int lo, hi, step = 1;
        bool range = false;

        if (*p == '*') {
            lo = f->lo;
            hi = f->hi;
            range = true;
            p++;
        } else {
            lo = read_value(f, &p);
            if (lo < 0)
                goto bad;
            hi = lo;
            if (*p == '-') {
                p++;
                hi = read_value(f, &p);
                if (hi < 0)
                    goto bad;
                range = true;
            }
        }
        if (*p == '/') {
            p++;
            if (!isdigit((unsigned char)*p))
                goto bad;
            step = read_value(f, &p);
            if (step < 1 || step > f->hi) {
                snprintf(why, len, "bad step /%d in the %s field '%s'", step,
                         f->name, text);
                return -1;
            }
            if (!range)
                hi = f->hi; /* "5/15": from 5 to the end */
        }
        if (lo < f->lo || hi > f->hi || lo > hi) {
            snprintf(why, len, "%s field '%s' is out of range %d-%d", f->name,
                     text, f->lo, f->hi);
            return -1;
        }
        for (int v = lo; v <= hi; v += step)
            *bits |= UINT64_C(1) << v;
        if (*p == '\0')
            return 0;
        if (*p++ != ',')
            goto bad;
    }
bad:
    snprintf(why, len,
             "bad %s field '%s': expected a number, a name, *, a-b, a list "
             "(a,b) or a step (*/n)",
             f->name, text);
    return -1;
}

int cron_parse(const char *text, cron_line *out, char *why, size_t len)
{
    char copy[256], *words[6], *save = NULL;
    uint64_t bits[5];
    bool stars[5];
    int n = 0;

    while (isspace((unsigned char)*text))
        text++;
    if (*text == '@') {
        for (size_t i = 0; at_names[i].name != NULL; i++)
            if (strcasecmp(text, at_names[i].name) == 0)
                return cron_parse(at_names[i].line, out, why, len);
        snprintf(why, len,
                 "unknown '%.40s': expected @hourly, @daily, @weekly, "
                 "@monthly or @yearly",
                 text);
        return -1;
    }
    if (strlen(text) >= sizeof(copy)) {
        snprintf(why, len, "cron line is too long");
        return -1;
    }
    snprintf(copy, sizeof(copy), "%s", text);
    for (char *w = strtok_r(copy, " \t", &save); w != NULL;
         w = strtok_r(NULL, " \t", &save)) {
        if (n == 6)
            break;
        words[n++] = w;
    }
    if (n != 5) {
        snprintf(why, len,
                 "expected five fields (minute hour day-of-month month "
                 "day-of-week), got %d",
                 n);
        return -1;
    }
    for (int i = 0; i < 5; i++)
        if (parse_field(&fields[i], words[i], &bits[i], &stars[i], why, len) !=
            0)
            return -1;
    memset(out, 0, sizeof(*out));
    out->minutes = bits[0];
    out->hours = (uint32_t)bits[1];
    out->days = (uint32_t)bits[2];
    out->months = (uint32_t)bits[3];
    out->weekdays = (uint32_t)((bits[4] | (bits[4] >> 7)) & 0x7f);
    out->days_star = stars[2];
    out->weekdays_star = stars[4];
    return 0;
}

static int days_in_month(int y, int mo)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

    return mo == 2 && leap ? 29 : days[mo - 1];
}

/* Cron's day rule: with both day fields restricted, either may match. */
static bool day_matches(const cron_line *line, int mo, int d, int weekday)
{
    bool dom = (line->days >> d) & 1;
    bool dow = (line->weekdays >> weekday) & 1;

    if (!((line->months >> mo) & 1))
        return false;
    if (line->days_star || line->weekdays_star)
        return dom && dow;
    return dom || dow;
}

/* The next calendar day after y-mo-d. */
static void next_day(int *y, int *mo, int *d)
{
    if (++*d > days_in_month(*y, *mo)) {
        *d = 1;
        if (++*mo > 12) {
            *mo = 1;
            ++*y;
        }
    }
}

/* cron_next with the zone entered. */
static int next_in_zone(const cron_line *line, int64_t after, int64_t *out)
{
    struct tm tm;
    int y, mo, d;
    int rc = -1;

    /* From the day before the wall date of `after`: an instant of the
     * day before can still come after it when a fall-back at midnight
     * repeats its last hour. */
    zone_local(after - 86400, &tm);
    y = tm.tm_year + 1900;
    mo = tm.tm_mon + 1;
    d = tm.tm_mday;
    for (int day = 0; day < 366 * 30 && rc != 0; day++, next_day(&y, &mo, &d)) {
        int weekday =
            (int)(((zone_utc_seconds(y, mo, d, 0, 0, 0) / 86400) % 7 + 4 + 7) %
                  7); /* 1970-01-01 was a Thursday */
        int ny = y, nmo = mo, nd = d;
        bool gap;

        if (!day_matches(line, mo, d, weekday))
            continue;
        /* A day whose end is not after `after` has no tick after it. */
        next_day(&ny, &nmo, &nd);
        if (zone_resolve(ny, nmo, nd, 0, 0, &gap) <= after)
            continue;
        for (int h = 0; h < 24 && rc != 0; h++) {
            if (!((line->hours >> h) & 1))
                continue;
            for (int mi = 0; mi < 60; mi++) {
                int64_t at;

                if (!((line->minutes >> mi) & 1))
                    continue;
                at = zone_resolve(y, mo, d, h, mi, &gap);
                if (at > after) {
                    *out = at;
                    rc = 0;
                    break;
                }
            }
        }
    }
    return rc;
}

int cron_next(const cron_line *line, const char *zone, int64_t after,
              int64_t *out)
{
    int rc;

    zone_enter(zone);
    rc = next_in_zone(line, after, out);
    zone_leave();
    return rc;
}

int64_t cron_next_every(int64_t every_s, int64_t after)
{
    int64_t k = after / every_s;

    if (after < 0 && after % every_s != 0)
        k--; /* floor, for the tests' early times */
    return (k + 1) * every_s;
}

/* The ticks of every_s in (after, until]: arithmetic. */
static size_t every_ticks(int64_t every_s, int64_t after, int64_t until,
                          int64_t *out, size_t max, bool *older)
{
    int64_t first = cron_next_every(every_s, after);
    int64_t newest = cron_next_every(every_s, until) - every_s;
    uint64_t n;

    *older = false;
    if (max == 0 || first > until)
        return 0;
    n = (uint64_t)((newest - first) / every_s) + 1;
    if (n > max) {
        *older = true;
        n = max;
    }
    for (uint64_t i = 0; i < n; i++)
        out[i] = newest - (int64_t)(n - 1 - i) * every_s;
    return (size_t)n;
}

size_t cron_ticks(const cron_line *line, int64_t every_s, const char *zone,
                  int64_t after, int64_t until, int64_t *out, size_t max,
                  bool *older)
{
    /* Spans looked through, each from `until` back: the newest ticks are
     * in the shortest one that holds max of them, or reaches `after`. */
    static const int64_t spans[] = {86400, 31 * 86400, 366 * 86400,
                                    30 * 366 * 86400};
    size_t kept = 0;

    if (every_s != 0)
        return every_ticks(every_s, after, until, out, max, older);
    *older = false;
    if (max == 0 || until <= after)
        return 0;
    zone_enter(zone);
    for (size_t i = 0; i < sizeof(spans) / sizeof(spans[0]); i++) {
        int64_t from = until - spans[i] > after ? until - spans[i] : after;
        int64_t at = from;
        uint64_t seen = 0;

        kept = 0;
        /* A ring of the newest max, oldest at out[seen % max] once full. */
        while (next_in_zone(line, at, &at) == 0 && at <= until) {
            out[seen % max] = at;
            seen++;
        }
        if (seen > max) {
            size_t start = (size_t)(seen % max);

            /* Rotate the ring so the oldest comes first. */
            for (size_t r = 0; r < start; r++) {
                int64_t first = out[0];

                memmove(out, out + 1, (max - 1) * sizeof(*out));
                out[max - 1] = first;
            }
            *older = true;
            kept = max;
            break;
        }
        kept = (size_t)seen;
        if (from == after || seen == max) {
            *older = seen == max && from != after;
            break;
        }
    }
    zone_leave();
    return kept;
}
