/* Cron lines and ticks (host/cron.c, host/zone.c): the parser, the next
 * tick in UTC and in Europe/Berlin and America/New_York across both
 * daylight-saving changes (no tick lost or doubled), and `every`. */
#include <criterion/criterion.h>
#include <string.h>

#include "cron.h"
#include "zone.h"

/* Seconds since the epoch of a UTC time. */
static int64_t utc(int y, int mo, int d, int h, int mi)
{
    return zone_utc_seconds(y, mo, d, h, mi, 0);
}

static cron_line parse(const char *text)
{
    cron_line line;
    char why[256] = "";

    cr_assert_eq(cron_parse(text, &line, why, sizeof(why)), 0, "%s: %s", text,
                 why);
    return line;
}

/* The ticks of text in zone strictly after `from`, up to n of them. */
static void ticks(const char *text, const char *zone, int64_t from,
                  int64_t *out, size_t n)
{
    cron_line line = parse(text);

    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(cron_next(&line, zone, from, &out[i]), 0);
        from = out[i];
    }
}

Test(cron, parses_fields_lists_ranges_steps_and_names)
{
    cron_line l = parse("*/15 9-17 1,15 jan-mar,DEC mon-fri");

    cr_assert_eq(l.minutes, (UINT64_C(1) << 0) | (UINT64_C(1) << 15) |
                                (UINT64_C(1) << 30) | (UINT64_C(1) << 45));
    cr_assert_eq(l.hours, 0x3fe00u); /* 9..17 */
    cr_assert_eq(l.days, (1u << 1) | (1u << 15));
    cr_assert_eq(l.months, (1u << 1) | (1u << 2) | (1u << 3) | (1u << 12));
    cr_assert_eq(l.weekdays, 0x3eu);
    cr_assert(!l.days_star);
    l = parse("5/20 0 * * 7");
    cr_assert_eq(l.minutes, (UINT64_C(1) << 5) | (UINT64_C(1) << 25) |
                                (UINT64_C(1) << 45));
    cr_assert_eq(l.weekdays, 1u, "7 is Sunday");
    cr_assert(l.days_star);
}

Test(cron, at_names_are_their_lines)
{
    cron_line a = parse("@daily"), b = parse("0 0 * * *");

    cr_assert_eq(memcmp(&a, &b, sizeof(a)), 0);
    a = parse("@hourly");
    b = parse("0 * * * *");
    cr_assert_eq(memcmp(&a, &b, sizeof(a)), 0);
    a = parse("@weekly");
    cr_assert_eq(a.weekdays, 1u);
    a = parse("@monthly");
    cr_assert_eq(a.days, 2u);
    a = parse("@yearly");
    cr_assert_eq(a.months, 2u);
}

Test(cron, refuses_bad_lines_with_the_reason)
{
    static const struct {
        const char *line, *why;
    } bad[] = {
        {"0 3 * *", "expected five fields"},
        {"0 3 * * * *", "expected five fields"},
        {"60 3 * * *", "minute field '60' is out of range 0-59"},
        {"0 24 * * *", "hour field '24' is out of range 0-23"},
        {"0 3 0 * *", "day of month field '0' is out of range 1-31"},
        {"0 3 * 13 *", "month field '13' is out of range 1-12"},
        {"0 3 * * 8", "day of week field '8' is out of range 0-7"},
        {"0 3 * * fri-mon", "out of range"},
        {"*/0 * * * *", "bad step /0"},
        {"x * * * *", "bad minute field 'x'"},
        {"1,,2 * * * *", "bad minute field"},
        {"@often", "unknown '@often'"},
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cron_line l;
        char why[256] = "";

        cr_assert_eq(cron_parse(bad[i].line, &l, why, sizeof(why)), -1, "%s",
                     bad[i].line);
        cr_assert(strstr(why, bad[i].why) != NULL, "%s: %s", bad[i].line, why);
    }
}

Test(cron, next_tick_in_utc)
{
    int64_t t[3];

    ticks("0 3 * * *", "UTC", utc(2026, 12, 3, 3, 0), t, 2);
    cr_assert_eq(t[0], utc(2026, 12, 4, 3, 0), "strictly after");
    cr_assert_eq(t[1], utc(2026, 12, 5, 3, 0));
    ticks("*/20 * * * *", "UTC", utc(2026, 12, 31, 23, 50), t, 3);
    cr_assert_eq(t[0], utc(2027, 1, 1, 0, 0));
    cr_assert_eq(t[2], utc(2027, 1, 1, 0, 40));
    ticks("0 0 29 2 *", "UTC", utc(2026, 1, 1, 0, 0), t, 1);
    cr_assert_eq(t[0], utc(2028, 2, 29, 0, 0), "the next leap day");
}

Test(cron, day_of_month_or_weekday_when_both_are_set)
{
    int64_t t[2];

    /* 2026-12-01 is a Tuesday: the 13th or any Friday. */
    ticks("0 0 13 * fri", "UTC", utc(2026, 12, 1, 0, 0), t, 2);
    cr_assert_eq(t[0], utc(2026, 12, 4, 0, 0), "Friday the 4th");
    cr_assert_eq(t[1], utc(2026, 12, 11, 0, 0));
    ticks("0 0 13 * *", "UTC", utc(2026, 12, 1, 0, 0), t, 1);
    cr_assert_eq(t[0], utc(2026, 12, 13, 0, 0));
}

Test(cron, a_line_that_never_fires_has_no_next_tick)
{
    cron_line l = parse("0 0 30 2 *");
    int64_t t = 0;

    cr_assert_eq(cron_next(&l, "UTC", utc(2026, 1, 1, 0, 0), &t), -1);
}

/* Berlin springs forward on 2026-03-29 at 01:00 UTC (02:00 CET becomes
 * 03:00 CEST): 02:30 never happens and fires once at 03:00 CEST. */
Test(cron, spring_forward_gap_fires_once_at_the_change)
{
    int64_t t[3];

    ticks("30 2 * * *", "Europe/Berlin", utc(2026, 3, 27, 12, 0), t, 3);
    cr_assert_eq(t[0], utc(2026, 3, 28, 1, 30), "02:30 CET");
    cr_assert_eq(t[1], utc(2026, 3, 29, 1, 0), "03:00 CEST, the change");
    cr_assert_eq(t[2], utc(2026, 3, 30, 0, 30), "02:30 CEST");
}

Test(cron, spring_forward_ticks_in_the_gap_are_one_tick)
{
    int64_t t[4];

    /* 01:30 CET, then 02:00, 02:30 and 03:00 are all 01:00 UTC. */
    ticks("*/30 * * * *", "Europe/Berlin", utc(2026, 3, 29, 0, 0), t, 4);
    cr_assert_eq(t[0], utc(2026, 3, 29, 0, 30));
    cr_assert_eq(t[1], utc(2026, 3, 29, 1, 0));
    cr_assert_eq(t[2], utc(2026, 3, 29, 1, 30), "03:30 CEST: none doubled");
    cr_assert_eq(t[3], utc(2026, 3, 29, 2, 0));
}

/* Berlin falls back on 2026-10-25 at 01:00 UTC (03:00 CEST becomes
 * 02:00 CET): 02:30 happens twice and fires at the first. */
Test(cron, fall_back_overlap_fires_once)
{
    int64_t t[3];

    ticks("30 2 * * *", "Europe/Berlin", utc(2026, 10, 24, 12, 0), t, 3);
    cr_assert_eq(t[0], utc(2026, 10, 25, 0, 30), "02:30 CEST");
    cr_assert_eq(t[1], utc(2026, 10, 26, 1, 30), "the next day, 02:30 CET");
    cr_assert_eq(t[2], utc(2026, 10, 27, 1, 30));
}

Test(cron, fall_back_hour_is_not_repeated)
{
    int64_t t[4];

    ticks("*/30 * * * *", "Europe/Berlin", utc(2026, 10, 24, 23, 45), t, 4);
    cr_assert_eq(t[0], utc(2026, 10, 25, 0, 0), "02:00 CEST");
    cr_assert_eq(t[1], utc(2026, 10, 25, 0, 30), "02:30 CEST");
    cr_assert_eq(t[2], utc(2026, 10, 25, 2, 0), "03:00 CET");
    cr_assert_eq(t[3], utc(2026, 10, 25, 2, 30));
}

/* New York: 2026-03-08 02:00 EST becomes 03:00 EDT (07:00 UTC), and
 * 2026-11-01 02:00 EDT becomes 01:00 EST (06:00 UTC). A daily tick at a
 * local time lands on that local time every day, each day once. */
Test(cron, new_york_daily_tick_each_day_once)
{
    int64_t t[3];

    ticks("0 9 * * *", "America/New_York", utc(2026, 3, 7, 15, 0), t, 3);
    cr_assert_eq(t[0], utc(2026, 3, 8, 13, 0), "09:00 EDT");
    cr_assert_eq(t[1], utc(2026, 3, 9, 13, 0));
    ticks("30 1 * * *", "America/New_York", utc(2026, 10, 31, 12, 0), t, 3);
    cr_assert_eq(t[0], utc(2026, 11, 1, 5, 30), "01:30 EDT, once");
    cr_assert_eq(t[1], utc(2026, 11, 2, 6, 30), "01:30 EST");
    cr_assert_eq(t[2], utc(2026, 11, 3, 6, 30));
}

Test(cron, every_ticks_at_multiples_of_the_period)
{
    cr_assert_eq(cron_next_every(1, 100), 101);
    cr_assert_eq(cron_next_every(30, 100), 120);
    cr_assert_eq(cron_next_every(30, 120), 150, "strictly after");
    cr_assert_eq(cron_next_every(3600, utc(2026, 12, 3, 3, 59)),
                 utc(2026, 12, 3, 4, 0));
}

Test(cron, zone_names_come_from_the_tz_database)
{
    char why[256];

    cr_assert_eq(zone_check("UTC", why, sizeof(why)), 0);
    cr_assert_eq(zone_check("Europe/Berlin", why, sizeof(why)), 0);
    cr_assert_eq(zone_check("Europe/Nowhere", why, sizeof(why)), -1);
    cr_assert(strstr(why, "no zone 'Europe/Nowhere'") != NULL, "%s", why);
    cr_assert_eq(zone_check("../etc/passwd", why, sizeof(why)), -1);
    cr_assert_eq(zone_check("/etc/localtime", why, sizeof(why)), -1);
    cr_assert_eq(zone_check("", why, sizeof(why)), -1);
}

Test(cron, the_process_zone_is_put_back)
{
    const char *before;

    setenv("TZ", "America/New_York", 1);
    tzset();
    zone_enter("Europe/Berlin");
    cr_assert_eq(zone_offset(utc(2026, 7, 1, 0, 0)), 7200);
    zone_leave();
    before = getenv("TZ");
    cr_assert_str_eq(before, "America/New_York");
}

Test(cron, ticks_between_keep_the_newest)
{
    int64_t out[5];
    bool older = true;
    cron_line hourly = parse("@hourly");
    int64_t t0 = utc(2026, 12, 3, 0, 30);

    /* Five hours down: 01:00 .. 05:00. */
    cr_assert_eq(cron_ticks(&hourly, 0, "UTC", t0, utc(2026, 12, 3, 5, 30), out,
                            5, &older),
                 5);
    cr_assert(!older);
    cr_assert_eq(out[0], utc(2026, 12, 3, 1, 0));
    cr_assert_eq(out[4], utc(2026, 12, 3, 5, 0));
    /* Ten hours down, three kept: the newest. */
    cr_assert_eq(cron_ticks(&hourly, 0, "UTC", t0, utc(2026, 12, 3, 10, 0), out,
                            3, &older),
                 3);
    cr_assert(older);
    cr_assert_eq(out[0], utc(2026, 12, 3, 8, 0));
    cr_assert_eq(out[2], utc(2026, 12, 3, 10, 0), "until is included");
    /* Years down, a minute's line: still only the newest few. */
    cr_assert_eq(cron_ticks(&hourly, 0, "UTC", utc(2020, 1, 1, 0, 0),
                            utc(2026, 12, 3, 10, 0), out, 2, &older),
                 2);
    cr_assert(older);
    cr_assert_eq(out[1], utc(2026, 12, 3, 10, 0));
    cr_assert_eq(cron_ticks(&hourly, 0, "UTC", t0, t0 + 60, out, 5, &older), 0);
    /* every: the same by arithmetic. */
    cr_assert_eq(cron_ticks(NULL, 10, NULL, 100, 145, out, 5, &older), 4);
    cr_assert(!older);
    cr_assert_eq(out[0], 110);
    cr_assert_eq(out[3], 140);
    cr_assert_eq(cron_ticks(NULL, 10, NULL, 100, 1000, out, 2, &older), 2);
    cr_assert(older);
    cr_assert_eq(out[0], 990);
    cr_assert_eq(out[1], 1000);
}
