/* wharf stats --history; see stats_history.h. Every type's minutes are
 * read in one pipelined round trip (history_read.h); only the minutes
 * with something in them are printed, then each type's total. */
#include "stats_history.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "clock_ms.h"
#include "conn.h"
#include "history_read.h"

/* The quantiles shown. */
static const double quantiles[] = {0.5, 0.95, 0.99};
static const char *const quantile_names[] = {"p50", "p95", "p99"};
#define N_QUANTILES 3

/* A quantile as text: "-" (nothing ran), ">10s" (past the last bound),
 * else the bucket's bound ("2.5ms", "1s"). */
static const char *quantile_text(const history_figures *f, int wait, double q,
                                 char *buf, size_t len)
{
    int64_t us = history_quantile_us(f, wait, q);

    if (us == -2)
        return "-";
    if (us == -1) {
        snprintf(buf, len, ">%" PRId64 "s",
                 metrics_bucket_bound_us(METRICS_BUCKETS - 2) / 1000000);
        return buf;
    }
    if (us < 1000000)
        snprintf(buf, len, "%gms", (double)us / 1000.0);
    else
        snprintf(buf, len, "%gs", (double)us / 1e6);
    return buf;
}

/* A quantile in JSON: milliseconds, or null past the last bound or when
 * nothing ran. */
static void print_quantiles_json(const history_figures *f, int wait)
{
    printf("{");
    for (size_t q = 0; q < N_QUANTILES; q++) {
        int64_t us = history_quantile_us(f, wait, quantiles[q]);
        printf("%s\"%s\": ", q ? ", " : "", quantile_names[q]);
        if (us < 0)
            printf("null");
        else
            printf("%g", (double)us / 1000.0);
    }
    printf("}");
}

static void print_figures_json(const history_figures *f)
{
    printf("\"ok\": %" PRIu64 ", \"retry\": %" PRIu64 ", \"dead\": %" PRIu64
           ", \"cancelled\": %" PRIu64 ", \"wait_ms\": ",
           f->v[HISTORY_OK], f->v[HISTORY_RETRY], f->v[HISTORY_DEAD],
           f->v[HISTORY_CANCELLED]);
    print_quantiles_json(f, 1);
    printf(", \"run_ms\": ");
    print_quantiles_json(f, 0);
}

static void print_type_json(const char *type, int64_t from,
                            const history_figures *minutes, size_t n,
                            bool first)
{
    history_figures total = {{0}};
    bool any = false;

    printf("%s", first ? "" : ", ");
    cli_print_json_string(stdout, type);
    printf(": {\"minutes\": [");
    for (size_t i = 0; i < n; i++) {
        if (history_empty(&minutes[i]))
            continue;
        history_add(&total, &minutes[i]);
        printf("%s{\"at_ms\": %" PRId64 ", ", any ? ", " : "",
               (from + (int64_t)i) * HISTORY_MINUTE_MS);
        print_figures_json(&minutes[i]);
        printf("}");
        any = true;
    }
    printf("], \"total\": {");
    print_figures_json(&total);
    printf("}}");
}

static void print_row(const char *type, int width, const char *at,
                      const history_figures *f)
{
    char w50[32], w95[32], r50[32], r95[32];

    printf("%-*s %-17s %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %9" PRIu64
           "  %8s %8s  %8s %8s\n",
           width, type, at, f->v[HISTORY_OK], f->v[HISTORY_RETRY],
           f->v[HISTORY_DEAD], f->v[HISTORY_CANCELLED],
           quantile_text(f, 1, 0.5, w50, sizeof(w50)),
           quantile_text(f, 1, 0.95, w95, sizeof(w95)),
           quantile_text(f, 0, 0.5, r50, sizeof(r50)),
           quantile_text(f, 0, 0.95, r95, sizeof(r95)));
}

/* The rows of a type with anything in its minutes; false (nothing
 * printed) for one without. */
static bool print_type_table(const char *type, int width, int64_t from,
                             const history_figures *minutes, size_t n)
{
    history_figures total = {{0}};
    char at[CLI_TIME_MAX];
    bool any = false;

    for (size_t i = 0; i < n && !any; i++)
        any = !history_empty(&minutes[i]);
    if (!any)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (history_empty(&minutes[i]))
            continue;
        history_add(&total, &minutes[i]);
        cli_iso_time((from + (int64_t)i) * HISTORY_MINUTE_MS, at, sizeof(at));
        at[16] = '\0'; /* "2024-01-31T12:00": the minute */
        print_row(type, width, at, &minutes[i]);
    }
    print_row(type, width, "total", &total);
    return true;
}

int stats_history(cli *ctx, const char *const *types, size_t n, int64_t last_ms,
                  const char *host, bool json)
{
    size_t per = history_minutes_in(last_ms);
    int64_t from = history_minute_of(clock_wall_ms()) - (int64_t)per + 1;
    history_figures *minutes = NULL;
    history_hosts *hosts = NULL;
    char why[256];
    pipeline *p;
    int code = 0, width = 4, shown = 0;

    if (!cli_redis(ctx, &code))
        return code;
    p = &ctx->conn->pipe;
    pipeline_reset(p);
    for (size_t t = 0; t < n; t++)
        if (history_read_add(p, ctx->prefix, types[t], from, per) != 0)
            return cli_fail(ctx, EX_SOFTWARE, "stats: %s", p->errstr);
    if (pipeline_run(p) != 0) {
        code = cli_reply_check(ctx, NULL, "stats --history");
        conn_drop(ctx->conn);
        return code;
    }
    minutes = calloc(per, sizeof(*minutes));
    hosts = calloc(1, sizeof(*hosts));
    if (!minutes || !hosts) {
        code = cli_fail(ctx, EX_OSERR, "out of memory");
        goto out;
    }
    for (size_t t = 0; t < n; t++)
        if ((int)strlen(types[t]) > width)
            width = (int)strlen(types[t]);
    if (json)
        printf("{\"minute_ms\": %d, \"from_ms\": %" PRId64 ", \"types\": {",
               HISTORY_MINUTE_MS, from * HISTORY_MINUTE_MS);
    else
        printf("%-*s %-17s %8s %8s %8s %9s  %8s %8s  %8s %8s\n", width, "TYPE",
               "MINUTE (UTC)", "OK", "RETRY", "DEAD", "CANCELLED", "WAIT_P50",
               "WAIT_P95", "RUN_P50", "RUN_P95");
    for (size_t t = 0; t < n; t++) {
        if (history_read_take(p, t * per, per, host, minutes, hosts, why,
                              sizeof(why)) != 0) {
            if (json)
                printf("}}\n");
            code = cli_fail(ctx, EX_SOFTWARE, "stats --history: '%s': %s",
                            types[t], why);
            goto out;
        }
        if (json)
            print_type_json(types[t], from, minutes, per, t == 0);
        else
            shown += print_type_table(types[t], width, from, minutes, per);
    }
    if (!json && shown == 0)
        printf("(nothing in the last %zu minutes: hosts write each minute "
               "when it ends, and at a stop)\n",
               per);
    if (json) {
        printf("}, \"hosts\": [");
        for (size_t h = 0; h < hosts->n; h++) {
            printf("%s", h ? ", " : "");
            cli_print_json_string(stdout, hosts->name[h]);
        }
        printf("]}\n");
    }
out:
    pipeline_reset(p);
    free(minutes);
    free(hosts);
    return code;
}
