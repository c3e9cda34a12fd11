/* wharf enqueue's per-task options; see enqueue_options.h. The bounds are
 * the client's (sdk/client/client_enqueue_call.c), checked here first so
 * the CLI says which flag was wrong. */
#include "enqueue_options.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "quote.h"
#include "zone.h"


bool enqueue_options_given(const enqueue_option_texts *t)
{
    return t->timeout || t->max_attempts || t->expire_in || t->expires;
}

/* Reads n digits at *p into *out, moving *p past them: 0, or -1. */
static int digits(const char **p, int n, int *out)
{
    int v = 0;

    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i]))
            return -1;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *out = v;
    return 0;
}

/* Moves *p past the character c: 0, or -1 when it is not there. */
static int expect(const char **p, char c)
{
    if (**p != c)
        return -1;
    (*p)++;
    return 0;
}

int enqueue_options_rfc3339(const char *text, int64_t *ms)
{
    const char *p = text;
    int y, mo, d, h, mi, s, oh = 0, om = 0, frac_ms = 0, scale = 100;
    int sign = 0;

    if (digits(&p, 4, &y) || expect(&p, '-') || digits(&p, 2, &mo) ||
        expect(&p, '-') || digits(&p, 2, &d))
        return -1;
    if (*p != 'T' && *p != 't' && *p != ' ')
        return -1;
    p++;
    if (digits(&p, 2, &h) || expect(&p, ':') || digits(&p, 2, &mi) ||
        expect(&p, ':') || digits(&p, 2, &s))
        return -1;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return -1;
        /* Beyond milliseconds the digits are read and dropped. */
        for (; isdigit((unsigned char)*p); p++, scale /= 10)
            frac_ms += (*p - '0') * scale;
    }
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        sign = *p == '+' ? 1 : -1;
        p++;
        if (digits(&p, 2, &oh) || expect(&p, ':') || digits(&p, 2, &om))
            return -1;
    } else {
        return -1;
    }
    /* A leap second (60) is taken as the next second. */
    if (*p != '\0' || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 ||
        mi > 59 || s > 60 || oh > 23 || om > 59 || y < 1970)
        return -1;
    *ms = (zone_utc_seconds(y, mo, d, h, mi, s) -
           sign * (int64_t)(oh * 3600 + om * 60)) *
              1000 +
          frac_ms;
    return 0;
}

/* A whole number 1..max (as text, a plain decimal) into *out: 0, 64 when
 * it is not a number, 65 when it is out of range. */
static int read_count(cli *ctx, const char *name, const char *text, long max,
                      unsigned *out)
{
    char quoted[CLI_QUOTE_MAX], *end;
    long n;

    quote_text(text, quoted, sizeof(quoted));
    errno = 0;
    n = isdigit((unsigned char)text[0]) ? strtol(text, &end, 10) : -1;
    if (n < 0 || errno != 0 || *end != '\0')
        return cli_usage(ctx, "%s '%s' is not a whole number", name, quoted);
    if (n < 1 || n > max)
        return cli_fail(ctx, EX_DATAERR,
                        "%s %s is out of range: use 1 up to %ld", name, quoted,
                        max);
    *out = (unsigned)n;
    return 0;
}

int enqueue_options_read(cli *ctx, const enqueue_option_texts *t,
                         int64_t now_ms, wharf_task_options *out)
{
    char quoted[CLI_QUOTE_MAX];
    int64_t ms = 0;
    int code;

    memset(out, 0, sizeof(*out));
    out->size = sizeof(*out);
    if (t->expire_in && t->expires)
        return cli_usage(ctx, "give --expire-in or --expires, not both");
    if (t->timeout) {
        if ((code = cli_duration(ctx, "--timeout", t->timeout, &ms)) != 0)
            return code;
        if (ms < 1 || ms > WHARF_TASK_TIMEOUT_MAX_MS)
            return cli_fail(ctx, EX_DATAERR,
                            "--timeout %" PRId64 " ms is out of range: use "
                            "1ms up to 30d",
                            ms);
        out->timeout_ms = ms;
    }
    if (t->max_attempts &&
        (code = read_count(ctx, "--max-attempts", t->max_attempts,
                           WHARF_TASK_MAX_ATTEMPTS_MAX, &out->max_attempts)) != 0)
        return code;
    if (t->expire_in) {
        if ((code = cli_duration(ctx, "--expire-in", t->expire_in, &ms)) != 0)
            return code;
        if (ms < 1 || ms > WHARF_TASK_EXPIRES_MAX_MS - now_ms)
            return cli_fail(ctx, EX_DATAERR,
                            "--expire-in %" PRId64 " ms is out of range: use "
                            "1ms or more, up to the year 9999",
                            ms);
        out->expires_at_ms = now_ms + ms;
    }
    if (t->expires) {
        quote_text(t->expires, quoted, sizeof(quoted));
        if (enqueue_options_rfc3339(t->expires, &ms) != 0)
            return cli_usage(ctx,
                             "--expires '%s' is not an RFC 3339 time (e.g. "
                             "2026-12-04T03:00:00Z)",
                             quoted);
        if (ms <= now_ms || ms > WHARF_TASK_EXPIRES_MAX_MS)
            return cli_fail(
                ctx, EX_DATAERR, "--expires '%s' is %s: nothing was enqueued",
                quoted, ms <= now_ms ? "in the past" : "after 9999");
        out->expires_at_ms = ms;
    }
    return 0;
}
