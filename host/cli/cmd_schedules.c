/* wharf schedules [--json]: each [schedule.NAME] of the manifest with its
 * type, its time, its zone, its next tick (from this machine's clock),
 * its last tick (P:{T}:schedules, which every host's timer raises) and
 * where the last tick's task is now (sdk/lua/status.lua through the
 * client, as wharf status says it). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "cli.h"
#include "clock_ms.h"
#include "conn.h"
#include "cron.h"
#include "schedule_store.h"
#include "schedule_tick.h"

/* What is known of one schedule. */
typedef struct row {
    const schedule_section *s;
    char when[80];
    int64_t next, last; /* seconds; 0 / -1: none */
    const char *outcome; /* the last tick's task's state, or "-" */
} row;

/* The schedules commands need the manifest, where schedules live. */
int cli_need_schedules(cli *ctx)
{
    if (ctx->config == NULL)
        return cli_usage(ctx, "the schedules are the manifest's "
                              "[schedule.NAME] sections: give it with "
                              "wharf --config FILE");
    return 0;
}

static int64_t next_tick(const schedule_section *s, int64_t now)
{
    cron_line line;
    char why[256];
    int64_t at;

    if (s->every_s != 0)
        return cron_next_every(s->every_s, now);
    if (cron_parse(s->cron, &line, why, sizeof(why)) != 0 ||
        cron_next(&line, s->timezone, now, &at) != 0)
        return 0;
    return at;
}

/* Fills r for s: 0, or the exit code after saying why. */
static int read_row(cli *ctx, const schedule_section *s, row *r)
{
    char id[WHARF_ID_MAX + 1];
    wharf_task_info info;
    wharf_client_status status;
    int code;

    memset(r, 0, sizeof(*r));
    r->s = s;
    r->outcome = "-";
    if (s->cron)
        snprintf(r->when, sizeof(r->when), "%s", s->cron);
    else
        snprintf(r->when, sizeof(r->when), "every %" PRId64 "s", s->every_s);
    r->next = next_tick(s, clock_wall_ms() / 1000);
    ctx->type = s->type;
    if (!cli_redis(ctx, &code))
        return code;
    if (schedule_store_read(ctx->conn, ctx->prefix, s->type, s->name,
                            &r->last) != 0)
        return cli_fail(ctx, EX_UNAVAILABLE, "%s", ctx->conn->errstr);
    if (r->last < 0)
        return 0;
    if ((code = cli_connect(ctx)) != 0)
        return code;
    schedule_tick_id(id, sizeof(id), s->name, r->last);
    status = wharf_task_status(ctx->client, s->type, id, &info);
    if (status != WHARF_CLIENT_OK)
        return cli_fail(ctx, cli_exit_status(status), "%s",
                        wharf_client_errstr(ctx->client));
    r->outcome = wharf_task_state_name(info.state);
    return 0;
}

static void format_tick(int64_t seconds, char *buf, size_t len)
{
    if (seconds <= 0)
        snprintf(buf, len, "-");
    else
        schedule_format_time(buf, len, seconds);
}

static void print_text(const row *rows, size_t n)
{
    int wn = 4, wt = 4, ww = 4, wz = 8;

    for (size_t i = 0; i < n; i++) {
        int a = (int)strlen(rows[i].s->name), b = (int)strlen(rows[i].s->type);
        int c = (int)strlen(rows[i].when), d = (int)strlen(rows[i].s->timezone);

        wn = a > wn ? a : wn;
        wt = b > wt ? b : wt;
        ww = c > ww ? c : ww;
        wz = d > wz ? d : wz;
    }
    printf("%-*s  %-*s  %-*s  %-*s  %-20s  %-20s  %s\n", wn, "NAME", wt,
           "TYPE", ww, "WHEN", wz, "TIMEZONE", "NEXT", "LAST", "LAST TASK");
    for (size_t i = 0; i < n; i++) {
        char next[SCHEDULE_TIME_MAX], last[SCHEDULE_TIME_MAX];

        format_tick(rows[i].next, next, sizeof(next));
        format_tick(rows[i].last, last, sizeof(last));
        printf("%-*s  %-*s  %-*s  %-*s  %-20s  %-20s  %s\n", wn,
               rows[i].s->name, wt, rows[i].s->type, ww, rows[i].when, wz,
               rows[i].s->timezone, next, last, rows[i].outcome);
    }
}

static void print_json(const row *rows, size_t n)
{
    printf("[");
    for (size_t i = 0; i < n; i++) {
        const row *r = &rows[i];
        char next[SCHEDULE_TIME_MAX], last[SCHEDULE_TIME_MAX];

        format_tick(r->next, next, sizeof(next));
        format_tick(r->last, last, sizeof(last));
        printf("%s{\"name\": ", i ? ", " : "");
        cli_print_json_string(stdout, r->s->name);
        printf(", \"type\": ");
        cli_print_json_string(stdout, r->s->type);
        if (r->s->cron) {
            printf(", \"cron\": ");
            cli_print_json_string(stdout, r->s->cron);
        } else {
            printf(", \"every_s\": %" PRId64, r->s->every_s);
        }
        printf(", \"timezone\": ");
        cli_print_json_string(stdout, r->s->timezone);
        printf(", \"next_tick\": %" PRId64 ", \"last_tick\": %" PRId64
               ", \"last_task\": \"%s\"}",
               r->next, r->last < 0 ? (int64_t)0 : r->last,
               r->last < 0 ? "none" : r->outcome);
    }
    printf("]\n");
}

enum { OPT_JSON };

static int run(cli *ctx, const cli_args *args)
{
    const config *cfg = ctx->config;
    row *rows;
    int code;

    if ((code = cli_need_schedules(ctx)) != 0)
        return code;
    rows = calloc(cfg->n_schedules + 1, sizeof(*rows));
    if (rows == NULL)
        return cli_fail(ctx, EX_OSERR, "out of memory");
    for (size_t i = 0; i < cfg->n_schedules; i++) {
        if ((code = read_row(ctx, &cfg->schedules[i], &rows[i])) != 0) {
            free(rows);
            return code;
        }
    }
    if (args->flag[OPT_JSON])
        print_json(rows, cfg->n_schedules);
    else if (cfg->n_schedules == 0)
        printf("no schedules: the manifest has no [schedule.NAME] section\n");
    else
        print_text(rows, cfg->n_schedules);
    free(rows);
    return EX_OK;
}

const cli_command cmd_schedules_entry = {
    .name = "schedules",
    .usage = "[--json]",
    .help = "Lists the schedules of the manifest (wharf --config FILE): name, type,\n"
"cron line or period, timezone, the next tick (by this machine's clock),\n"
"the last tick any host fired, and where that tick's task is now (queued,\n"
"running, done, dead, ... as wharf status says; - for none). Times in UTC.\n"
"  --json        one JSON array (times in seconds since the epoch; 0: none)\n"
"Exit: 0; 64 no manifest; 69 Redis unavailable.\n",
    .flags = {[OPT_JSON] = {"json", false}},
    .lower = 0,
    .upper = 0,
    .run = run,
};
