/* wharf stats [--json]: per type of the types set, ready (stream length
 * less pending), running (pending), delayed, dead, pressure, whether it
 * is paused (and for how long more), whether a
 * live host serves it (its presence key <prefix>:{T}:hosts, which every
 * live host serving T refreshes), and the Redis node that serves it. O(1)
 * commands per type, all types in one pipelined round trip (to every node
 * at once on a cluster). */
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "cli.h"
#include "conn.h"
#include "known_types.h"
#include "history_read.h"
#include "stats_history.h"

/* Commands sent per type: the figures' (as /metrics reads them for the
 * types its host does not serve), then whether a host serves it. */
enum { Q_SERVED = KNOWN_COMMANDS, Q_RATE, Q_RATE_HELD, Q_COUNT };

/* rates: a type's rate keys as its hosts published them (policy), and
 * the turns reserved in its bucket: tasks waiting for their turn (of a
 * type without a limit_key; one with keeps a bucket per value). */
typedef struct rate_stats {
    char limit[32]; /* "50/s", or "" when none is published */
    long long burst;
    char key[128];     /* limit_key, or "" */
    long long waiting; /* -1: not known (a limit_key's) */
} rate_stats;

typedef struct type_stats {
    queue_figures f; /* f.type points into the SMEMBERS reply */
    int served;      /* a live host serves it */
    rate_stats rate;
} type_stats;

static int by_name(const void *a, const void *b)
{
    return strcmp(((const type_stats *)a)->f.type,
                  ((const type_stats *)b)->f.type);
}

/* rates: adds Q_RATE and Q_RATE_HELD of type. 0, or -1. */
static int append_rate_queries(cli *ctx, pipeline *p, const char *type)
{
    char policy_key[KEY_MAX], bucket[KEY_MAX];

    cli_key(ctx, policy_key, type, "policy");
    cli_key(ctx, bucket, type, "rate");
    if (pipeline_addf(p, policy_key, "HMGET %s rate_limit rate_burst limit_key",
                      policy_key) != 0 ||
        pipeline_addf(p, bucket, "HLEN %s", bucket) != 0)
        return -1;
    return 0;
}

/* rates: stores the reply of Q_RATE or Q_RATE_HELD into s; -1 for a reply
 * of another shape. */
static int take_rate(int q, const redisReply *r, type_stats *s)
{
    rate_stats *rs = &s->rate;

    if (q == Q_RATE_HELD && r->type == REDIS_REPLY_INTEGER) {
        /* Its fields but tat are the turns reserved. */
        rs->waiting = r->integer > 0 ? r->integer - 1 : 0;
        return 0;
    }
    if (q != Q_RATE || r->type != REDIS_REPLY_ARRAY || r->elements != 3)
        return -1;
    for (size_t i = 0; i < 3; i++)
        if (r->element[i]->type != REDIS_REPLY_STRING &&
            r->element[i]->type != REDIS_REPLY_NIL)
            return -1;
    if (r->element[0]->type == REDIS_REPLY_STRING &&
        strcmp(r->element[0]->str, "off") != 0)
        snprintf(rs->limit, sizeof(rs->limit), "%s", r->element[0]->str);
    if (r->element[1]->type == REDIS_REPLY_STRING)
        rs->burst = atoll(r->element[1]->str);
    if (r->element[2]->type == REDIS_REPLY_STRING &&
        strcmp(r->element[2]->str, "off") != 0)
        snprintf(rs->key, sizeof(rs->key), "%s", r->element[2]->str);
    return 0;
}

/* Adds the Q_COUNT queries of type, each to the node of its key. 0, or
 * -1 when out of memory. */
static int append_queries(cli *ctx, pipeline *p, const char *type)
{
    char hosts[KEY_MAX];

    cli_key(ctx, hosts, type, "hosts");
    if (known_types_add_queries(p, ctx->prefix, type) != 0 ||
        pipeline_addf(p, hosts, "EXISTS %s", hosts) != 0)
        return -1;
    return append_rate_queries(ctx, p, type);
}

/* Stores reply number q of a type into s. 0 or an exit code: unlike
 * /metrics, which counts it 0, stats fails on an error or a reply of
 * another shape, but for NOGROUP. */
static int take(cli *ctx, int q, const redisReply *r, type_stats *s)
{
    int code;

    if (q == KNOWN_PENDING && r->type == REDIS_REPLY_ERROR &&
        strncmp(r->str, "NOGROUP", 7) == 0) {
        s->f.running = 0; /* no group yet: nothing was ever claimed */
        return 0;
    }
    code = cli_reply_check(ctx, r, "stats");
    if (code != 0)
        return code;
    if (q == Q_SERVED && r->type == REDIS_REPLY_INTEGER) {
        s->served = r->integer != 0;
        return 0;
    }
    if ((q == Q_RATE || q == Q_RATE_HELD) && take_rate(q, r, s) == 0)
        return 0;
    if (q < KNOWN_COMMANDS && known_types_take(q, r, &s->f) == 0)
        return 0;
    if (q == KNOWN_PENDING)
        return cli_fail(ctx, EX_SOFTWARE,
                        "stats: XPENDING of '%s' gave "
                        "an unexpected reply",
                        s->f.type);
    return cli_fail(ctx, EX_SOFTWARE, "stats: unexpected reply for '%s'",
                    s->f.type);
}

/* rates: "rate_limit": "50/s", "rate_burst": 5, "limit_key": null,
 * "rate_waiting": 3, (nulls when none; rate_waiting null with a
 * limit_key), then a space; nothing for a type with neither, whose
 * object stays as it was. */
static void print_rate_json(const rate_stats *r)
{
    if (!r->limit[0] && !r->key[0])
        return;
    if (!r->limit[0]) {
        printf("\"rate_limit\": null, \"rate_burst\": null, ");
    } else {
        printf("\"rate_limit\": ");
        cli_print_json_string(stdout, r->limit);
        printf(", \"rate_burst\": %lld, ", r->burst);
    }
    printf("\"limit_key\": ");
    if (r->key[0])
        cli_print_json_string(stdout, r->key);
    else
        printf("null");
    if (r->limit[0] && !r->key[0])
        printf(", \"rate_waiting\": %lld, ", r->waiting);
    else
        printf(", \"rate_waiting\": null, ");
}

/* rates: one line per type with a rate_limit or a limit_key, after the
 * table: its rate, burst, key and the tasks waiting for their turn. */
static void print_rate_lines(const type_stats *stats, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const rate_stats *r = &stats[i].rate;
        if (!r->limit[0] && !r->key[0])
            continue;
        printf("%s: rate_limit %s", stats[i].f.type,
               r->limit[0] ? r->limit : "off");
        if (r->limit[0])
            printf(", burst %lld", r->burst);
        if (r->key[0])
            printf(", per limit_key %s", r->key);
        else if (r->limit[0])
            printf(", %lld waiting for their turn", r->waiting);
        putchar('\n');
    }
}

static void print_json(const type_stats *stats, size_t n)
{
    printf("{\"types\": {");
    for (size_t i = 0; i < n; i++) {
        const queue_figures *f = &stats[i].f;
        printf("%s", i ? ", " : "");
        cli_print_json_string(stdout, f->type);
        printf(": {\"ready\": %lld, \"running\": %lld, \"delayed\": %lld, "
               "\"dead\": %lld, \"pressure\": %s, \"paused\": %s, ",
               f->ready, f->running, f->delayed, f->dead,
               f->pressure ? "true" : "false", f->paused ? "true" : "false");
        if (f->paused && f->paused_left_ms >= 0)
            printf("\"paused_left_ms\": %lld, ", f->paused_left_ms);
        printf("\"slots\": %lld, ", f->slots);
        print_rate_json(&stats[i].rate);
        printf("\"served\": %s, \"node\": ",
               stats[i].served ? "true" : "false");
        cli_print_json_string(stdout, f->node);
        putchar('}');
    }
    printf("}}\n");
}

/* "no", "yes" (until resumed) or "yes, 42s" (the time left). */
static const char *paused_text(const queue_figures *f, char *buf, size_t len)
{
    if (!f->paused)
        return "no";
    if (f->paused_left_ms < 0)
        return "yes";
    snprintf(buf, len, "yes, %llds", (f->paused_left_ms + 999) / 1000);
    return buf;
}

static void print_table(const type_stats *stats, size_t n)
{
    char paused[32];
    int width = 4;

    for (size_t i = 0; i < n; i++)
        if ((int)strlen(stats[i].f.type) > width)
            width = (int)strlen(stats[i].f.type);
    printf("%-*s %10s %10s %10s %10s  %-8s  %-10s  %-21s  %s\n", width, "TYPE",
           "READY", "RUNNING", "DELAYED", "DEAD", "PRESSURE", "PAUSED", "NODE",
           "SERVED");
    for (size_t i = 0; i < n; i++) {
        const queue_figures *f = &stats[i].f;
        printf("%-*s %10lld %10lld %10lld %10lld  %-8s  %-10s  %-21s  %s\n",
               width, f->type, f->ready, f->running, f->delayed, f->dead,
               f->pressure ? "yes" : "no",
               paused_text(f, paused, sizeof(paused)), f->node,
               stats[i].served ? "yes" : "NO (no live host)");
    }
}

/* Reads every type's figures into stats. 0 or an exit code. */
static int collect(cli *ctx, const redisReply *types, type_stats *stats)
{
    pipeline *p = &ctx->conn->pipe;
    int code = 0;

    pipeline_reset(p);
    for (size_t i = 0; i < types->elements; i++) {
        stats[i].f.type = types->element[i]->str;
        if (append_queries(ctx, p, stats[i].f.type) != 0)
            return cli_fail(ctx, EX_OSERR, "stats: %s", p->errstr);
    }
    if (pipeline_run(p) != 0) {
        code = cli_reply_check(ctx, NULL, "stats");
        conn_drop(ctx->conn);
        return code;
    }
    for (size_t i = 0; i < types->elements; i++) {
        for (int q = 0; q < Q_COUNT && code == 0; q++)
            code = take(ctx, q, pipeline_reply(p, i * Q_COUNT + (size_t)q),
                        &stats[i]);
        snprintf(stats[i].f.node, sizeof(stats[i].f.node), "%s",
                 nodes_name(p->ns, p->e[i * Q_COUNT].node));
        known_types_settle(&stats[i].f);
    }
    pipeline_reset(p);
    return code;
}

enum { OPT_JSON, OPT_HISTORY, OPT_TYPE, OPT_LAST, OPT_HOST };

/* ---- --history (stats_history.c) ---- */

/* How far back --history reads without --last, and at most. */
#define HISTORY_LAST_DEFAULT_MS (3600LL * 1000)
#define HISTORY_LAST_MAX_MS (7LL * 24 * 3600 * 1000)

static int by_string(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* wharf stats --history [--type T] [--last DUR]: the types are T, or
 * every type of the set (types, sorted). 0 or an exit code. */
static int run_history(cli *ctx, const cli_args *args, const redisReply *types)
{
    const char *one = args->flag[OPT_TYPE];
    int64_t last_ms = HISTORY_LAST_DEFAULT_MS;
    const char **names;
    size_t n = one ? 1 : types->elements;
    int code;

    if (args->flag[OPT_LAST] &&
        (code = cli_duration(ctx, "--last", args->flag[OPT_LAST], &last_ms)) !=
            0)
        return code;
    if (last_ms <= 0 || last_ms > HISTORY_LAST_MAX_MS)
        return cli_usage(ctx, "--last must be more than 0 and at most 7d");
    names = calloc(n + 1, sizeof(*names));
    if (!names)
        return cli_fail(ctx, EX_OSERR, "out of memory");
    for (size_t i = 0; i < n; i++)
        names[i] = one ? one : types->element[i]->str;
    if (n > 0)
        qsort(names, n, sizeof(*names), by_string);
    code = stats_history(ctx, names, n, last_ms, args->flag[OPT_HOST],
                         args->flag[OPT_JSON] != NULL);
    free(names);
    return code;
}

/* --type, --last and --host are --history's. */
static int check_history(cli *ctx, const cli_args *args)
{
    const char *host = args->flag[OPT_HOST];

    if (!args->flag[OPT_HISTORY] &&
        (args->flag[OPT_TYPE] || args->flag[OPT_LAST] || host))
        return cli_usage(ctx, "--type, --last and --host go with --history");
    if (host && (!host[0] || strlen(host) >= HISTORY_HOST_MAX ||
                 !cli_printable(host, strlen(host))))
        return cli_usage(ctx, "--host needs a host's name, "
                              "<hostname>:<instance>, as --json lists them");
    if (args->flag[OPT_TYPE])
        return cli_check_type(ctx, args->flag[OPT_TYPE]);
    return 0;
}

/* ---- end of --history ---- */

static int run(cli *ctx, const cli_args *args)
{
    char key[KEY_MAX];
    redisReply *types = NULL;
    type_stats *stats = NULL;
    int json = args->flag[OPT_JSON] != NULL, code = 0;

    key_global(key, sizeof(key), ctx->prefix, "types");
    types = cli_run(ctx, &code, "stats", "SMEMBERS %s", key);
    if (!types)
        return code;
    if (types->type != REDIS_REPLY_ARRAY) {
        code = cli_fail(ctx, EX_SOFTWARE, "stats: %s is not a set", key);
        goto out;
    }
    for (size_t i = 0; i < types->elements; i++) {
        if (types->element[i]->type != REDIS_REPLY_STRING) {
            code =
                cli_fail(ctx, EX_SOFTWARE, "stats: %s holds a non-string", key);
            goto out;
        }
    }
    if (args->flag[OPT_HISTORY]) {
        code = run_history(ctx, args, types);
        goto out;
    }
    stats = calloc(types->elements + 1, sizeof(*stats));
    if (!stats) {
        code = cli_fail(ctx, EX_OSERR, "out of memory");
        goto out;
    }
    code = collect(ctx, types, stats);
    if (code != 0)
        goto out;
    qsort(stats, types->elements, sizeof(*stats), by_name);
    if (json)
        print_json(stats, types->elements);
    else
        print_table(stats, types->elements);
    if (!json) /* rates */
        print_rate_lines(stats, types->elements);
out:
    free(stats);
    freeReplyObject(types);
    return code;
}

const cli_command cmd_stats_entry = {
    .name = "stats",
    .usage = "[--json] [--history [--type T] [--last DUR] [--host H]]",
    .help =
        "Per type: ready, running, delayed and dead tasks, pressure, whether\n"
        "it is paused (wharf pause; \"yes, 42s\": that long more), whether\n"
        "a live host serves it (SERVED \"NO\": its tasks wait for nobody),\n"
        "and the Redis node that serves it (on a cluster, the primary owning\n"
        "its slot). Then a line per type with a rate_limit or limit_key:\n"
        "its rate, burst and tasks waiting for their turn.\n"
        "  --json        one JSON object: {\"types\": {\"T\": {...}}}\n"
        "  --history     the fleet's history instead (every host's figures,\n"
        "                summed): per minute with anything in it, tasks ok,\n"
        "                retried, dead and cancelled, and the wait and run\n"
        "                times' p50 and p95 (bucket bounds), then the total\n"
        "                (a type with nothing in it is left out)\n"
        "  --type T      only type T's history\n"
        "  --last DUR    the minutes of the last DUR (default 1h, at most 7d)\n"
        "  --host H      only what host H (<hostname>:<instance>) counted\n"
        "Exit: 0; 69 Redis unavailable.\n",
    .flags = {[OPT_JSON] = {"json", false},
              [OPT_HISTORY] = {"history", false},
              [OPT_TYPE] = {"type", true},
              [OPT_LAST] = {"last", true},
              [OPT_HOST] = {"host", true}},
    .check = check_history,
    .run = run,
};
