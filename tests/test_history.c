/* The fleet's history (host/history.h) end to end: two real wharfd on one
 * Redis run a mix of chaos tasks; once both have stopped (a stop writes
 * the minute under way), the history's minutes hold, per host and summed,
 * exactly what their /metrics counted, whatever minutes the run crossed.
 * A host started again adds its new run beside the old one (no double
 * count, nothing lost), `wharf stats --history` shows the sum, and
 * `[metrics] history = 0` writes nothing. Totals are compared, never
 * timings: no test waits for a minute to pass. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "history.h"
#include "host_process.h"
#include "http_get.h"
#include "redis_cluster.h"
#include "redis_server.h"
#include "spawn.h"
#include "wharf_cli.h"

static test_redis redis;
static test_host host_a, host_b;
static redisContext *rc;
static int port_a, port_b;
static char body[1 << 20];

static void start_redis(void)
{
    test_suite_up(&redis, 0, &rc);
}

static void stop_all(void)
{
    test_suite_down(&redis, &rc, (test_host *const[]){&host_a, &host_b, NULL});
}

TestSuite(history, .init = start_redis, .fini = stop_all, .timeout = 240);

/* What a host's /metrics counted of chaos, in history's order (only the
 * outcome counts and the two histograms' counts are compared). */
typedef struct counted {
    uint64_t ok, retry, dead, cancelled, runs, waits;
} counted;

static double sample(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *line = text; line && *line;) {
        if (strncmp(line, name, n) == 0 && line[n] == ' ')
            return strtod(line + n + 1, NULL);
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    return -1;
}

static counted scrape(int port)
{
    counted c;

    cr_assert_eq(test_http_get(port, "/metrics", body, sizeof(body)), 200);
#define S(name) (uint64_t) sample(body, name)
    c.ok = S("wharf_tasks_total{type=\"chaos\",outcome=\"ok\"}");
    c.retry = S("wharf_tasks_total{type=\"chaos\",outcome=\"retry\"}");
    c.dead = S("wharf_tasks_total{type=\"chaos\",outcome=\"dead\"}");
    c.cancelled = S("wharf_tasks_total{type=\"chaos\",outcome=\"cancelled\"}");
    c.runs = S("wharf_task_duration_seconds_count{type=\"chaos\"}");
    c.waits = S("wharf_task_wait_seconds_count{type=\"chaos\"}");
#undef S
    return c;
}

static void add_counted(counted *a, const counted *b)
{
    a->ok += b->ok;
    a->retry += b->retry;
    a->dead += b->dead;
    a->cancelled += b->cancelled;
    a->runs += b->runs;
    a->waits += b->waits;
}

static counted of_figures(const history_figures *f)
{
    counted c = {f->v[HISTORY_OK],
                 f->v[HISTORY_RETRY],
                 f->v[HISTORY_DEAD],
                 f->v[HISTORY_CANCELLED],
                 0,
                 0};

    for (size_t b = 0; b < METRICS_BUCKETS; b++) {
        c.runs += f->v[HISTORY_RUN_BUCKETS + b];
        c.waits += f->v[HISTORY_WAIT_BUCKETS + b];
    }
    return c;
}

static void expect_counted(const counted *got, const counted *want,
                           const char *who)
{
    cr_expect_eq(got->ok, want->ok, "%s: ok %lu, /metrics %lu", who,
                 (unsigned long)got->ok, (unsigned long)want->ok);
    cr_expect_eq(got->retry, want->retry, "%s: retry", who);
    cr_expect_eq(got->dead, want->dead, "%s: dead", who);
    cr_expect_eq(got->cancelled, want->cancelled, "%s: cancelled", who);
    cr_expect_eq(got->runs, want->runs, "%s: runs %lu, /metrics %lu", who,
                 (unsigned long)got->runs, (unsigned long)want->runs);
    cr_expect_eq(got->waits, want->waits, "%s: waits", who);
}

/* Sums chaos's history from Redis: over every host (fleet), and over the
 * fields of the host whose name ends in ":<instance>" (a, b); *minutes
 * gets how many minute keys there are, *fields how many fields. */
static void read_history(counted *fleet, counted *a, counted *b,
                         size_t *minutes, size_t *fields)
{
    redisReply *keys = test_redis_command(rc, "KEYS wharf:{chaos}:history:*");
    history_figures all = {{0}}, fa = {{0}}, fb = {{0}};

    *fields = 0;
    cr_assert_eq(keys->type, REDIS_REPLY_ARRAY);
    *minutes = keys->elements;
    for (size_t k = 0; k < keys->elements; k++) {
        redisReply *h =
            test_redis_command(rc, "HGETALL %s", keys->element[k]->str);
        redisReply *ttl =
            test_redis_command(rc, "TTL %s", keys->element[k]->str);
        /* Kept the default 24 h after its minute, never for ever. */
        cr_expect(ttl->integer > 23 * 3600 && ttl->integer <= 24 * 3600 + 60,
                  "%s: TTL %lld", keys->element[k]->str, ttl->integer);
        freeReplyObject(ttl);
        cr_assert_eq(h->type, REDIS_REPLY_ARRAY);
        for (size_t i = 0; i + 1 < h->elements; i += 2) {
            const char *field = h->element[i]->str;
            size_t host = history_host_len(field, strlen(field));
            history_figures f;
            cr_assert_eq(history_parse(h->element[i + 1]->str,
                                       h->element[i + 1]->len, &f),
                         0, "%s: %s", field, h->element[i + 1]->str);
            history_add(&all, &f);
            if (host >= 2 && strncmp(field + host - 2, ":a", 2) == 0)
                history_add(&fa, &f);
            else if (host >= 2 && strncmp(field + host - 2, ":b", 2) == 0)
                history_add(&fb, &f);
            else
                cr_assert_fail("a field of no host of the test: %s", field);
            ++*fields;
        }
        freeReplyObject(h);
    }
    freeReplyObject(keys);
    *fleet = of_figures(&all);
    *a = of_figures(&fa);
    *b = of_figures(&fb);
}

static int start_host(test_host *h, const char *instance, const char *more)
{
    char listen[128], host_keys[64];
    int port = test_free_port();

    snprintf(listen, sizeof(listen), "127.0.0.1:%d%s", port, more ? more : "");
    snprintf(host_keys, sizeof(host_keys), "instance = %s\nworkers = 2\n",
             instance);
    test_host_opts o = {.host_keys = host_keys,
                        .metrics_listen = listen,
                        .extra = "[type.chaos]\nmax_attempts = 2\n"
                                 "backoff_base = 10ms\n"};
    test_host_up(h, &redis, &o, rc);
    return port;
}

/* Polls both hosts' /metrics until their chaos outcomes add up to want
 * (ok, retry, dead, cancelled). */
typedef struct settle {
    counted want;
    int ports[2];
    size_t n_ports;
} settle;

static bool settled(void *arg)
{
    settle *s = arg;
    counted sum = {0};

    for (size_t i = 0; i < s->n_ports; i++) {
        counted c = scrape(s->ports[i]);
        add_counted(&sum, &c);
    }
    return sum.ok == s->want.ok && sum.retry == s->want.retry &&
           sum.dead == s->want.dead && sum.cancelled == s->want.cancelled;
}

static void enqueue(const char *id, const char *payload)
{
    test_add_entry(rc, "chaos", id, payload);
}

Test(history, two_hosts_sum_to_their_metrics)
{
    char id[32], runs_a[64];
    settle s = {.want = {.ok = 40, .retry = 10, .dead = 5, .cancelled = 1}};
    counted ma, mb, sum = {0}, fleet, ha, hb;
    size_t minutes, fields;
    const test_cli_run *run;
    char want[256];

    port_a = start_host(&host_a, "a", NULL);
    port_b = start_host(&host_b, "b", NULL);
    for (int i = 0; i < 30; i++) {
        snprintf(id, sizeof(id), "ok%d", i);
        enqueue(id, "ok");
    }
    for (int i = 0; i < 10; i++) {
        snprintf(id, sizeof(id), "retry%d", i);
        enqueue(id, "fail:1");
    }
    for (int i = 0; i < 5; i++) {
        snprintf(id, sizeof(id), "dead%d", i);
        enqueue(id, "fatal");
    }
    /* One run cancelled while it runs (polite ends on wharf_cancelled). */
    enqueue("cancel", "polite:600000");
    snprintf(runs_a, sizeof(runs_a), "cancel");
    {
        int64_t deadline = test_now_ms() + TEST_EVENT_MS;
        while (test_host_runs(&host_a, "cancel", 0) +
                       test_host_runs(&host_b, "cancel", 0) ==
                   0 &&
               test_now_ms() < deadline)
            test_sleep_ms(20);
    }
    run = test_cli(redis.url, host_a.dir,
                   (const char *[]){"cancel", "chaos", "cancel", NULL});
    cr_assert_eq(run->status, 0, "wharf cancel: %s", run->err);
    s.ports[0] = port_a;
    s.ports[1] = port_b;
    s.n_ports = 2;
    cr_assert(test_wait_until(settled, &s, TEST_EVENT_MS),
              "the mix never finished; see %s and %s", host_a.log, host_b.log);
    ma = scrape(port_a);
    mb = scrape(port_b);
    add_counted(&sum, &ma);
    add_counted(&sum, &mb);
    cr_assert(ma.ok + ma.retry + ma.dead > 0 && mb.ok + mb.retry + mb.dead > 0,
              "both hosts must have run some of the mix");
    cr_assert_eq(test_host_stop(&host_a), 0);
    cr_assert_eq(test_host_stop(&host_b), 0);

    read_history(&fleet, &ha, &hb, &minutes, &fields);
    cr_assert_geq(minutes, 1);
    expect_counted(&ha, &ma, "host a");
    expect_counted(&hb, &mb, "host b");
    expect_counted(&fleet, &sum, "both hosts");
    /* One field per host per minute it worked in, at most. */
    cr_expect_leq(fields, 2 * minutes);

    run = test_cli(redis.url, host_a.dir,
                   (const char *[]){"stats", "--history", "--type", "chaos",
                                    "--last", "2h", "--json", NULL});
    cr_assert_eq(run->status, 0, "stats --history: %s", run->err);
    snprintf(want, sizeof(want),
             "\"total\": {\"ok\": %lu, \"retry\": %lu, \"dead\": %lu, "
             "\"cancelled\": %lu,",
             (unsigned long)sum.ok, (unsigned long)sum.retry,
             (unsigned long)sum.dead, (unsigned long)sum.cancelled);
    cr_expect(strstr(run->out, want) != NULL, "want %s in %s", want, run->out);
    cr_expect(strstr(run->out, ":a\"") && strstr(run->out, ":b\""),
              "both hosts named: %s", run->out);
    /* one host alone: what its /metrics counted */
    {
        char name[300], hostname[256];
        cr_assert_eq(gethostname(hostname, sizeof(hostname)), 0);
        snprintf(name, sizeof(name), "%s:b", hostname);
        run = test_cli(redis.url, host_a.dir,
                       (const char *[]){"stats", "--history", "--type", "chaos",
                                        "--host", name, "--json", NULL});
        cr_assert_eq(run->status, 0, "stats --history --host: %s", run->err);
        snprintf(want, sizeof(want),
                 "\"total\": {\"ok\": %lu, \"retry\": %lu, \"dead\": %lu, "
                 "\"cancelled\": %lu,",
                 (unsigned long)mb.ok, (unsigned long)mb.retry,
                 (unsigned long)mb.dead, (unsigned long)mb.cancelled);
        cr_expect(strstr(run->out, want) != NULL, "want %s in %s", want,
                  run->out);
    }
    run = test_cli(redis.url, host_a.dir,
                   (const char *[]){"stats", "--history", NULL});
    cr_assert_eq(run->status, 0, "stats --history: %s", run->err);
    cr_expect(strstr(run->out, "WAIT_P95") && strstr(run->out, "total"), "%s",
              run->out);
    run = test_cli(redis.url, host_a.dir,
                   (const char *[]){"stats", "--last", "1h", NULL});
    cr_expect_eq(run->status, 64, "--last without --history: %d", run->status);
}

Test(history, a_host_started_again_neither_loses_nor_counts_twice)
{
    settle s = {.n_ports = 1};
    counted first, second, fleet, ha, hb;
    size_t minutes, fields;
    char id[32];

    port_a = start_host(&host_a, "a", NULL);
    for (int i = 0; i < 5; i++) {
        snprintf(id, sizeof(id), "first%d", i);
        enqueue(id, "ok");
    }
    s.ports[0] = port_a;
    s.want.ok = 5;
    cr_assert(test_wait_until(settled, &s, TEST_EVENT_MS), "see %s",
              host_a.log);
    first = scrape(port_a);
    cr_assert_eq(test_host_stop(&host_a), 0);

    port_a = start_host(&host_a, "a", NULL);
    for (int i = 0; i < 3; i++) {
        snprintf(id, sizeof(id), "second%d", i);
        enqueue(id, "ok");
    }
    s.ports[0] = port_a;
    s.want.ok = 3; /* the new process counts from 0 */
    cr_assert(test_wait_until(settled, &s, TEST_EVENT_MS), "see %s",
              host_a.log);
    second = scrape(port_a);
    cr_assert_eq(test_host_stop(&host_a), 0);

    read_history(&fleet, &ha, &hb, &minutes, &fields);
    add_counted(&first, &second);
    expect_counted(&ha, &first, "host a, both runs");
    cr_expect_eq(hb.ok, 0);
    /* Each run has a field of its own, even in the same minute. */
    cr_expect_geq(fields, 2);
}

Test(history, history_0_writes_nothing)
{
    settle s = {.n_ports = 1, .want = {.ok = 3}};
    redisReply *keys;
    char id[32];

    port_a = start_host(&host_a, "a", "\nhistory = 0");
    for (int i = 0; i < 3; i++) {
        snprintf(id, sizeof(id), "off%d", i);
        enqueue(id, "ok");
    }
    s.ports[0] = port_a;
    cr_assert(test_wait_until(settled, &s, TEST_EVENT_MS), "see %s",
              host_a.log);
    cr_assert_eq(test_host_stop(&host_a), 0);
    keys = test_redis_command(rc, "KEYS wharf:{chaos}:history:*");
    cr_expect_eq(keys->elements, 0, "history = 0 wrote %zu keys",
                 keys->elements);
    freeReplyObject(keys);
}

/* wharfd --check of [metrics] history: the file's line and why, exit 78. */
static int check_history(const char *value, char *err, size_t len)
{
    char listen[64], out[400], err_path[400];
    test_host h;
    FILE *f;
    size_t n;
    int status;

    snprintf(listen, sizeof(listen), "off\nhistory = %s", value);
    test_host_opts o = {.metrics_listen = listen};
    test_host_manifest_opts(&h, &redis, &o);
    snprintf(out, sizeof(out), "%s/check.out", h.dir);
    snprintf(err_path, sizeof(err_path), "%s/check.err", h.dir);
    status = test_spawn((const char *const[]){WHARFD_PATH, "--config",
                                              h.manifest, "--check", NULL},
                        NULL, out, err_path, NULL, NULL);
    f = fopen(err_path, "r");
    cr_assert_not_null(f);
    n = fread(err, 1, len - 1, f);
    err[n] = '\0';
    fclose(f);
    return status;
}

Test(history, check_names_a_bad_history_at_its_line)
{
    char err[1024];

    cr_expect_eq(check_history("2h", err, sizeof(err)), 0, "%s", err);
    cr_expect_eq(check_history("0", err, sizeof(err)), 0, "%s", err);
    cr_expect_eq(check_history("8d", err, sizeof(err)), 78);
    cr_expect(strstr(err, "wharf.ini:") &&
                  strstr(err, ": history = 8d is out of range 0s..7d"),
              "%s", err);
    cr_expect_eq(check_history("soon", err, sizeof(err)), 78);
    cr_expect(strstr(err, "bad value 'soon' for history"), "%s", err);
}

/* The total of type in `stats --history --json` output: its text from
 * "total" on, or NULL. */
static const char *total_of(const char *out, const char *type)
{
    char name[64];
    const char *at;

    snprintf(name, sizeof(name), "\"%s\": {\"minutes\"", type);
    at = strstr(out, name);
    return at ? strstr(at, "\"total\": ") : NULL;
}

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

typedef struct outcomes_wait {
    int port;
    const char *name; /* a sample of /metrics */
    double want;
} outcomes_wait;

static bool sample_is(void *arg)
{
    outcomes_wait *w = arg;

    return test_http_get(w->port, "/metrics", body, sizeof(body)) == 200 &&
           sample(body, w->name) == w->want;
}

/* On a Cluster each type's minutes live on the node that serves the type
 * (its hash slot), and the CLI reads them there. */
Test(history, on_a_cluster_each_type_on_its_node)
{
    test_cluster cl;
    int chaos_at, echo_at, port;
    redisContext *chaos_rc, *echo_rc;
    const test_cli_run *run;
    const char *total;
    redisReply *keys;
    char id[32];

    test_cluster_start(&cl, 3, 0);
    chaos_at = test_cluster_owner(
        &cl, test_cluster_slot(&cl, "wharf:{chaos}:history:1"));
    echo_at = test_cluster_owner(
        &cl, test_cluster_slot(&cl, "wharf:{echo}:history:1"));
    cr_assert(chaos_at >= 0 && echo_at >= 0);
    chaos_rc = test_cluster_connect(&cl, chaos_at);
    echo_rc = test_cluster_connect(&cl, echo_at);
    {
        char listen[64];
        port = test_free_port();
        snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
        test_host_opts o = {.redis_url = cl.url,
                            .metrics_listen = listen,
                            .host_keys = "instance = a\n"};
        test_host_up(&host_a, &redis, &o, chaos_rc);
    }
    for (int i = 0; i < 5; i++) {
        snprintf(id, sizeof(id), "c%d", i);
        test_add_entry(chaos_rc, "chaos", id, i < 2 ? "fatal" : "ok");
        snprintf(id, sizeof(id), "e%d", i);
        test_add_entry(echo_rc, "echo", id, "hello");
    }
    outcomes_wait waits[] = {
        {port, "wharf_tasks_total{type=\"chaos\",outcome=\"ok\"}", 3},
        {port, "wharf_tasks_total{type=\"chaos\",outcome=\"dead\"}", 2},
        {port, "wharf_tasks_total{type=\"echo\",outcome=\"ok\"}", 5}};
    for (size_t i = 0; i < 3; i++)
        cr_assert(test_wait_until(sample_is, &waits[i], TEST_EVENT_MS),
                  "%s never %g; see %s", waits[i].name, waits[i].want,
                  host_a.log);
    cr_assert_eq(test_host_stop(&host_a), 0);

    keys = test_redis_command(chaos_rc, "KEYS wharf:{chaos}:history:*");
    cr_expect_geq(keys->elements, 1, "chaos's minutes not on its node");
    freeReplyObject(keys);
    keys = test_redis_command(echo_rc, "KEYS wharf:{echo}:history:*");
    cr_expect_geq(keys->elements, 1, "echo's minutes not on its node");
    freeReplyObject(keys);
    run = test_cli(cl.url, host_a.dir,
                   (const char *[]){"stats", "--history", "--json", NULL});
    cr_assert_eq(run->status, 0, "stats --history: %s", run->err);
    total = total_of(run->out, "chaos");
    cr_expect(total &&
                  starts_with(total, "\"total\": {\"ok\": 3, \"retry\": 0, "
                                     "\"dead\": 2, \"cancelled\": 0,"),
              "%s", run->out);
    total = total_of(run->out, "echo");
    cr_expect(total &&
                  starts_with(total, "\"total\": {\"ok\": 5, \"retry\": 0, "
                                     "\"dead\": 0, \"cancelled\": 0,"),
              "%s", run->out);
    redisFree(chaos_rc);
    redisFree(echo_rc);
    test_cluster_stop(&cl);
}
