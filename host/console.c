/* The console; see console.h and docs/console.md. The page's assets are
 * compiled in (console_assets.c, made from host/console/ at build time),
 * the JSON is written here, and every byte of task data leaves as JSON
 * text with <, > and & escaped, for the page to set as textContent. */
#include "console.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "protocol_version.h" /* CLIENT_PROTOCOLS */
#include "keys.h"
#include "log.h"
#include "lua_sources.h"
#include "nodes.h"
#include "pipeline.h"
#include "redis_url.h"
#include "script.h"

/* Retry a lost console connection no sooner than this. */
#define RECONNECT_EVERY_MS 2000
#define SAMPLE_EVERY_MS 1000
/* Charts: CHART_POINTS steps of CHART_STEP_S seconds. */
#define CHART_POINTS 60
#define CHART_STEP_S 5
/* Hosts listed per type and in all. */
#define HOSTS_MAX 32
/* Bytes of a payload or result preview, and of an error in a list. */
#define PREVIEW_BYTES 2048
#define PREVIEW_TEXT "2048" /* PREVIEW_BYTES, for the script */
#define LIST_TEXT_BYTES 300
#define FIELD_BYTES 4096

/* The page and its assets (console_assets.c, generated). */
typedef struct console_asset {
    const char *path;
    const char *content_type;
    const unsigned char *data;
    size_t len;
} console_asset;
extern const console_asset console_assets[];

/* The outcomes charted, and their names in the API. */
static const task_outcome charted[] = {OUTCOME_OK, OUTCOME_RETRY, OUTCOME_DEAD};
#define N_CHARTED (sizeof(charted) / sizeof(charted[0]))

/* A histogram's buckets and sum at one moment (cumulative). */
typedef struct histogram_copy {
    uint64_t buckets[METRICS_BUCKETS];
    uint64_t sum_us;
} histogram_copy;

/* Histogram copies are kept every CHART_STEP_S seconds, this many: the
 * percentiles cover the last CHART_POINTS steps. */
#define HISTOGRAM_COPIES (CHART_POINTS + 1)

typedef struct type_ring {
    uint64_t counts[CONSOLE_SAMPLES][N_CHARTED]; /* cumulative */
    histogram_copy wait[HISTOGRAM_COPIES], run[HISTOGRAM_COPIES];
} type_ring;

typedef struct slot_history {
    unsigned restarts;
    restart_reason last_why;
    char last_how[64];
    int64_t last_at_ms; /* wall clock; 0 = never */
} slot_history;

/* What a tick learnt about who serves a type. */
typedef struct served_by {
    char type[METRICS_TYPE_LEN];
    char *json; /* ["host:instance", ...] */
} served_by;

struct console {
    char name[300];
    char redis_url[600];
    metrics *m;
    console_view_fn view_fn;
    void *view_arg;
    console_view v;
    nodes nodes;         /* its own connections (nodes.h); up or not */
    pipeline pipe;       /* every command it sends */
    bool nodes_ready;    /* nodes_init done */
    int64_t retry_at_ms; /* monotonic: no connect attempt before */
    int64_t spent_us;    /* Redis waits in this pass (console.h) */
    int64_t last_sample_ms;
    int64_t started_wall_ms;
    /* the ring: sample i was taken at sample_wall[i] */
    type_ring *rings[METRICS_MAX_TYPES];
    int64_t sample_wall[CONSOLE_SAMPLES];
    size_t head; /* the latest sample */
    size_t samples;
    uint64_t ticks; /* samples ever taken */
    /* histogram copies: the latest at copy_head, taken at copy_wall[] */
    int64_t copy_wall[HISTOGRAM_COPIES];
    size_t copy_head, copies;
    slot_history *history;
    char *hosts_json; /* [{...}, ...] from the last tick, or NULL */
    served_by *served;
    size_t n_served;
    bool said_down;
};

/* ---- JSON out ---- */

typedef struct jbuf {
    char *s;
    size_t len, cap;
} jbuf;

static void out_of_memory(void)
{
    log_msg(WHARF_LOG_ERROR, "console: out of memory");
    abort();
}

static void jb_put(jbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + n + 1)
            cap *= 2;
        b->s = realloc(b->s, cap);
        if (!b->s)
            out_of_memory();
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void jb_printf(jbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void jb_printf(jbuf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof(small)) {
        jb_put(b, small, (size_t)n);
        return;
    }
    {
        char *big = malloc((size_t)n + 1);
        if (!big)
            out_of_memory();
        va_start(ap, fmt);
        vsnprintf(big, (size_t)n + 1, fmt, ap);
        va_end(ap);
        jb_put(b, big, (size_t)n);
        free(big);
    }
}

/* Length of the valid UTF-8 sequence at s (of n bytes), or 0. */
static size_t utf8_length(const unsigned char *s, size_t n)
{
    size_t need;
    unsigned lo = 0x80, hi = 0xbf;

    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        need = 2;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        need = 3;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        need = 4;
    else
        return 0;
    if (n < need)
        return 0;
    if (s[0] == 0xe0)
        lo = 0xa0;
    else if (s[0] == 0xed)
        hi = 0x9f; /* no surrogates */
    else if (s[0] == 0xf0)
        lo = 0x90;
    else if (s[0] == 0xf4)
        hi = 0x8f;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < need; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return need;
}

/* Writes the first max bytes of s (len bytes, any bytes) as a JSON string
 * that is safe to show: valid UTF-8 passes, every other byte that is not
 * printable becomes the text \xNN (as the CLI shows it), and <, >, & and
 * ' are \u-escaped so the JSON is inert even if a browser took it for
 * HTML. */
static void jb_text(jbuf *b, const char *text, size_t len, size_t max)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t n = len < max ? len : max;

    jb_put(b, "\"", 1);
    for (size_t i = 0; i < n;) {
        unsigned char ch = s[i];
        size_t run;
        if (ch == '"' || ch == '\\') {
            jb_put(b, "\\", 1);
            jb_put(b, (const char *)&s[i], 1);
            i++;
        } else if (ch == '<' || ch == '>' || ch == '&' || ch == '\'') {
            jb_printf(b, "\\u%04x", ch);
            i++;
        } else if (ch == '\n') {
            jb_put(b, "\\n", 2);
            i++;
        } else if (ch == '\t') {
            jb_put(b, "\\t", 2);
            i++;
        } else if (ch >= 0x20 && ch < 0x7f) {
            jb_put(b, (const char *)&s[i], 1);
            i++;
        } else if (ch >= 0x80 && (run = utf8_length(s + i, n - i)) > 0) {
            jb_put(b, (const char *)&s[i], run);
            i += run;
        } else {
            jb_printf(b, "\\\\x%02x", ch);
            i++;
        }
    }
    jb_put(b, "\"", 1);
}

static void jb_str(jbuf *b, const char *s)
{
    jb_text(b, s, strlen(s), SIZE_MAX);
}

static void json_reply(http_reply *reply, unsigned status, jbuf *b)
{
    jb_put(b, "\n", 1);
    reply->status = status;
    reply->content_type = "application/json; charset=utf-8";
    reply->body = b->s;
    reply->len = b->len;
}

static void json_error(http_reply *reply, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void json_error(http_reply *reply, unsigned status, const char *fmt, ...)
{
    char why[512];
    jbuf b = {0};
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    jb_put(&b, "{\"error\":", 9);
    jb_str(&b, why);
    jb_put(&b, "}", 1);
    json_reply(reply, status, &b);
}

/* ---- clocks, keys, the connection ---- */

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *prefix_of(const console *c)
{
    return c->v.cfg->prefix;
}

/* The keys that may hold a dead task's envelope, in the order to read
 * them: dead:<id> first (where dead envelopes are kept), then task:<id>
 * (where they were kept before, and where a delayed task's is). */
static void dead_envelope_keys(const console *c, const char *type,
                               const char *id, char keys[2][KEY_MAX])
{
    key_of_task(keys[0], KEY_MAX, prefix_of(c), type, "dead", id);
    key_of_task(keys[1], KEY_MAX, prefix_of(c), type, "task", id);
}

static void refresh_view(console *c)
{
    c->view_fn(c->view_arg, &c->v);
}

/* What is left of this pass's budget, in microseconds (0 when none). */
static int64_t budget_left_us(const console *c)
{
    int64_t left = (int64_t)CONSOLE_PASS_BUDGET_MS * 1000 - c->spent_us;
    return left > 0 ? left : 0;
}

/* Says once, until Redis answers again, that the console lost it. */
static void say_down(console *c, const char *what, const char *why)
{
    if (c->said_down)
        return;
    log_fields(WHARF_LOG_WARN, what, (log_field[]){LOG_STR("error", why)}, 1);
    c->said_down = true;
}

/* The console's pipeline, reset, with its nodes found if due and if the
 * budget allows: NULL while Redis is away. Connecting and its first
 * command each wait at most half of what is left of the budget. */
static pipeline *connection(console *c)
{
    int64_t now = slots_now_ms(), start = slots_now_us();
    int timeout_ms = (int)(budget_left_us(c) / 2000);
    redis_url url;
    char err[512];

    if (c->nodes_ready)
        pipeline_reset(&c->pipe);
    if (nodes_up(&c->nodes))
        return &c->pipe;
    if (now < c->retry_at_ms || timeout_ms < 1)
        return NULL;
    c->retry_at_ms = now + RECONNECT_EVERY_MS;
    if (!c->nodes_ready) {
        if (redis_url_parse(c->redis_url, &url, err, sizeof(err)) != 0)
            return NULL;
        nodes_init(&c->nodes, &url, c->v.cfg->redis_password, timeout_ms);
        pipeline_init(&c->pipe, &c->nodes);
        c->nodes_ready = true;
    }
    c->nodes.timeout_ms = timeout_ms;
    if (nodes_connect(&c->nodes) != 0) {
        c->spent_us += slots_now_us() - start;
        say_down(c, "console: redis unreachable", c->nodes.errstr);
        return NULL;
    }
    c->spent_us += slots_now_us() - start;
    return &c->pipe;
}

/* Drops the connections after an error or a wait that outran the budget
 * (the next use connects again, no sooner than RECONNECT_EVERY_MS). */
static void lost(console *c, const char *why)
{
    if (nodes_up(&c->nodes)) {
        say_down(c, "console: redis command failed", why);
        nodes_disconnect(&c->nodes);
        c->retry_at_ms = slots_now_ms() + RECONNECT_EVERY_MS;
    }
}

/* Runs the pipeline, every node's waits within what is left of the
 * budget. 0, or -1 after dropping the connections. */
static int run_pipe(console *c)
{
    int64_t left = budget_left_us(c), start = slots_now_us();
    struct timeval tv = {(time_t)(left / 1000000),
                         (suseconds_t)(left % 1000000)};
    int rc;

    if (left == 0) {
        lost(c, "the console's time for redis in this turn of the loop "
                "ran out");
        return -1;
    }
    for (size_t i = 0; i < c->nodes.n; i++)
        if (c->nodes.list[i].redis &&
            redisSetTimeout(c->nodes.list[i].redis, tv) != REDIS_OK) {
            lost(c, "cannot set the timeout");
            return -1;
        }
    c->nodes.timeout_ms = left / 1000 > 0 ? (int)(left / 1000) : 1;
    rc = pipeline_run(&c->pipe);
    c->spent_us += slots_now_us() - start;
    if (rc != 0) {
        lost(c, c->pipe.errstr[0] ? c->pipe.errstr : "no reply");
        return -1;
    }
    c->said_down = false;
    return 0;
}

/* Runs the pipeline and takes its n replies into r (NULL-filled on
 * failure). 0, or -1 after dropping the connections. */
static int read_replies(console *c, redisReply **r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        r[i] = NULL;
    if (c->pipe.n != n || run_pipe(c) != 0) {
        pipeline_reset(&c->pipe);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        r[i] = pipeline_take(&c->pipe, i);
    pipeline_reset(&c->pipe);
    return 0;
}

static void free_replies(redisReply **r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        freeReplyObject(r[i]);
}

/* Runs s with EVALSHA (the pipeline loads it where a node has forgotten
 * it), every wait within the budget. The reply (caller frees), or NULL
 * after dropping the connections. */
static redisReply *run_script(console *c, script *s, int numkeys, int argc,
                              const char *const *argv)
{
    redisReply *r = NULL;

    if (s->sha[0] == '\0')
        script_init(s);
    pipeline_reset(&c->pipe);
    if (pipeline_add_script(&c->pipe, s, numkeys, argc, argv, NULL) != 0)
        out_of_memory();
    if (read_replies(c, &r, 1) != 0)
        return NULL;
    return r;
}

/* 503 with Retry-After: Redis is away or slow; come back in a while. */
static void unavailable(http_reply *reply, const char *retry_s, const char *why)
{
    http_reply_header(reply, "Retry-After", retry_s);
    json_error(reply, 503, "%s", why);
}

/* The connection for one request, or NULL after answering 503: while
 * Redis is away, or once this pass has spent CONSOLE_PASS_BUSY_MS of its
 * budget (Redis is slow, and the loop's own work comes first). */
static pipeline *redis_for(console *c, http_reply *reply)
{
    if (c->spent_us >= (int64_t)CONSOLE_PASS_BUSY_MS * 1000) {
        unavailable(reply, "1",
                    "redis is slow: the console waits for it only so long "
                    "in each turn of the host's loop; try again in a "
                    "second");
        return NULL;
    }
    if (!connection(c)) {
        unavailable(reply, "2", "redis unreachable");
        return NULL;
    }
    return &c->pipe;
}

/* ---- life ---- */

console *console_create(const char *name, const char *url, metrics *m,
                        size_t n_slots, console_view_fn view, void *arg)
{
    console *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    snprintf(c->name, sizeof(c->name), "%s", name);
    snprintf(c->redis_url, sizeof(c->redis_url), "%s", url);
    c->m = m;
    c->view_fn = view;
    c->view_arg = arg;
    c->v.n_slots = n_slots;
    c->v.slots = calloc(n_slots ? n_slots : 1, sizeof(*c->v.slots));
    c->history = calloc(n_slots ? n_slots : 1, sizeof(*c->history));
    if (!c->v.slots || !c->history) {
        free(c->v.slots);
        free(c->history);
        free(c);
        return NULL;
    }
    c->started_wall_ms = wall_ms();
    return c;
}

static void forget_served(console *c)
{
    for (size_t i = 0; i < c->n_served; i++)
        free(c->served[i].json);
    free(c->served);
    c->served = NULL;
    c->n_served = 0;
}

void console_destroy(console *c)
{
    if (!c)
        return;
    refresh_view(c); /* a reload may have moved what the last view held */
    if (nodes_up(&c->nodes) && c->v.cfg) {
        /* Withdraw this host's presence so it leaves the lists at once
         * (the loop is over: no budget, a timeout of its own). */
        pipeline *p = &c->pipe;
        char key[KEY_MAX], what[400];
        c->spent_us = 0;
        pipeline_reset(p);
        snprintf(what, sizeof(what), "host:%s", c->name);
        key_global(key, sizeof(key), prefix_of(c), what);
        pipeline_addf(p, key, "DEL %s", key);
        key_global(key, sizeof(key), prefix_of(c), "hosts");
        pipeline_addf(p, key, "ZREM %s %s", key, c->name);
        for (size_t i = 0; i < c->v.n_types; i++) {
            key_of_type(key, sizeof(key), prefix_of(c), c->v.types[i], "hosts");
            pipeline_addf(p, key, "ZREM %s %s", key, c->name);
        }
        run_pipe(c); /* best effort: the keys expire anyway */
    }
    if (c->nodes_ready) {
        pipeline_free(&c->pipe);
        nodes_free(&c->nodes);
    }
    for (size_t i = 0; i < METRICS_MAX_TYPES; i++)
        free(c->rings[i]);
    forget_served(c);
    free(c->hosts_json);
    free(c->history);
    free(c->v.slots);
    free(c);
}

void console_worker_exited(console *c, size_t index, restart_reason why,
                           const char *how)
{
    slot_history *h;

    if (!c || index >= c->v.n_slots)
        return;
    h = &c->history[index];
    h->restarts++;
    h->last_why = why;
    snprintf(h->last_how, sizeof(h->last_how), "%s", how);
    h->last_at_ms = wall_ms();
}

/* ---- the per-second tick ---- */

static void copy_histogram(histogram_copy *out, const histogram *h)
{
    for (size_t b = 0; b < METRICS_BUCKETS; b++)
        out->buckets[b] = atomic_load(&h->buckets[b]);
    out->sum_us = atomic_load(&h->sum_us);
}

static void sample(console *c)
{
    uint32_t n = atomic_load(&c->m->n_types);
    size_t at = c->samples == 0 ? 0 : (c->head + 1) % CONSOLE_SAMPLES;
    bool copy = c->ticks++ % CHART_STEP_S == 0;
    size_t copy_at = c->copies == 0 ? 0 : (c->copy_head + 1) % HISTOGRAM_COPIES;

    for (uint32_t ti = 0; ti < n && ti < METRICS_MAX_TYPES; ti++) {
        type_ring *ring = c->rings[ti];
        uint64_t now[N_CHARTED];
        for (size_t k = 0; k < N_CHARTED; k++)
            now[k] = atomic_load(&c->m->types[ti].outcomes[charted[k]]);
        if (!ring) {
            /* New type: its past is flat, not a jump from zero. */
            ring = c->rings[ti] = malloc(sizeof(*ring));
            if (!ring)
                out_of_memory();
            for (size_t i = 0; i < CONSOLE_SAMPLES; i++)
                memcpy(ring->counts[i], now, sizeof(now));
            for (size_t i = 0; i < HISTOGRAM_COPIES; i++) {
                copy_histogram(&ring->wait[i], &c->m->types[ti].wait);
                copy_histogram(&ring->run[i], &c->m->types[ti].duration);
            }
        }
        memcpy(ring->counts[at], now, sizeof(now));
        if (copy) {
            copy_histogram(&ring->wait[copy_at], &c->m->types[ti].wait);
            copy_histogram(&ring->run[copy_at], &c->m->types[ti].duration);
        }
    }
    if (copy) {
        c->copy_wall[copy_at] = wall_ms();
        c->copy_head = copy_at;
        if (c->copies < HISTOGRAM_COPIES)
            c->copies++;
    }
    c->sample_wall[at] = wall_ms();
    c->head = at;
    if (c->samples < CONSOLE_SAMPLES)
        c->samples++;
}

/* Publishes this host's presence and reads everyone's, in two round
 * trips: per served type one ZADD, one ZREMRANGEBYSCORE, one PEXPIRE and
 * one ZRANGEBYSCORE of at most HOSTS_MAX names; then one HGETALL per
 * live host (at most HOSTS_MAX). */
static void presence(console *c)
{
    pipeline *redis = connection(c);
    const console_view *v = &c->v;
    char key[KEY_MAX], what[400], expires[24], now_text[24], types[8192];
    char started[24], workers[16], busy[16], pid[16];
    size_t used = 0, n_replies;
    redisReply **r = NULL, *hosts;
    int64_t now = wall_ms();
    jbuf json = {0};

    if (!redis)
        return;
    snprintf(expires, sizeof(expires), "%" PRId64,
             now + CONSOLE_PRESENCE_TTL_MS);
    snprintf(now_text, sizeof(now_text), "%" PRId64, now);
    snprintf(started, sizeof(started), "%" PRId64, c->started_wall_ms);
    snprintf(workers, sizeof(workers), "%zu", v->n_slots);
    snprintf(busy, sizeof(busy), "%u", v->workers.running);
    snprintf(pid, sizeof(pid), "%ld", (long)getpid());
    types[0] = '\0';
    for (size_t i = 0; i < v->n_types; i++)
        used += (size_t)snprintf(
            types + used, used < sizeof(types) ? sizeof(types) - used : 0,
            "%s%s", i ? "," : "", v->types[i]);
    if (used >= sizeof(types))
        types[sizeof(types) - 1] = '\0';

    snprintf(what, sizeof(what), "host:%s", c->name);
    key_global(key, sizeof(key), prefix_of(c), what);
    pipeline_addf(redis, key,
                  "HSET %s name %s types %s workers %s busy %s "
                  "started_at %s pid %s version %s seen_at %s",
                  key, c->name, types, workers, busy, started, pid,
                  WHARF_VERSION, now_text);
    pipeline_addf(redis, key, "PEXPIRE %s %d", key, CONSOLE_PRESENCE_TTL_MS);
    key_global(key, sizeof(key), prefix_of(c), "hosts");
    pipeline_addf(redis, key, "ZADD %s %s %s", key, expires, c->name);
    pipeline_addf(redis, key, "ZREMRANGEBYSCORE %s -inf (%s", key, now_text);
    pipeline_addf(redis, key, "ZRANGEBYSCORE %s %s +inf LIMIT 0 %d", key,
                  now_text, HOSTS_MAX);
    /* Gone with the last live host, like every presence key. */
    pipeline_addf(redis, key, "PEXPIRE %s %d", key, CONSOLE_PRESENCE_TTL_MS);
    for (size_t i = 0; i < v->n_types; i++) {
        key_of_type(key, sizeof(key), prefix_of(c), v->types[i], "hosts");
        pipeline_addf(redis, key, "ZADD %s %s %s", key, expires, c->name);
        pipeline_addf(redis, key, "ZREMRANGEBYSCORE %s -inf (%s", key,
                      now_text);
        pipeline_addf(redis, key, "PEXPIRE %s %d", key,
                      CONSOLE_PRESENCE_TTL_MS);
        pipeline_addf(redis, key, "ZRANGEBYSCORE %s %s +inf LIMIT 0 %d", key,
                      now_text, HOSTS_MAX);
    }
    n_replies = 6 + 4 * v->n_types;
    r = calloc(n_replies, sizeof(*r));
    if (!r)
        out_of_memory();
    if (read_replies(c, r, n_replies) != 0)
        goto out;

    forget_served(c);
    c->served = calloc(v->n_types ? v->n_types : 1, sizeof(*c->served));
    if (!c->served)
        out_of_memory();
    for (size_t i = 0; i < v->n_types; i++) {
        redisReply *names = r[6 + 4 * i + 3];
        jbuf list = {0};
        jb_put(&list, "[", 1);
        for (size_t k = 0;
             names && names->type == REDIS_REPLY_ARRAY && k < names->elements;
             k++) {
            if (k)
                jb_put(&list, ",", 1);
            jb_text(&list, names->element[k]->str, names->element[k]->len,
                    SIZE_MAX);
        }
        jb_put(&list, "]", 1);
        snprintf(c->served[i].type, sizeof(c->served[i].type), "%s",
                 v->types[i]);
        c->served[i].json = list.s;
        c->n_served++;
    }

    hosts = r[4];
    if (!hosts || hosts->type != REDIS_REPLY_ARRAY)
        goto out;
    pipeline_reset(redis);
    for (size_t k = 0; k < hosts->elements; k++) {
        snprintf(what, sizeof(what), "host:%s", hosts->element[k]->str);
        key_global(key, sizeof(key), prefix_of(c), what);
        pipeline_addf(redis, key, "HGETALL %s", key);
    }
    if (hosts->elements > 0 && run_pipe(c) != 0) {
        pipeline_reset(redis);
        goto out;
    }
    jb_put(&json, "[", 1);
    for (size_t k = 0; k < hosts->elements; k++) {
        redisReply *h = pipeline_take(redis, k);
        if (k)
            jb_put(&json, ",", 1);
        jb_put(&json, "{\"name\":", 8);
        jb_text(&json, hosts->element[k]->str, hosts->element[k]->len,
                SIZE_MAX);
        for (size_t f = 0;
             h && h->type == REDIS_REPLY_ARRAY && f + 1 < h->elements; f += 2) {
            if (strcmp(h->element[f]->str, "name") == 0)
                continue;
            jb_put(&json, ",", 1);
            jb_text(&json, h->element[f]->str, h->element[f]->len, 64);
            jb_put(&json, ":", 1);
            jb_text(&json, h->element[f + 1]->str, h->element[f + 1]->len,
                    FIELD_BYTES);
        }
        jb_put(&json, "}", 1);
        freeReplyObject(h);
    }
    jb_put(&json, "]", 1);
    free(c->hosts_json);
    c->hosts_json = json.s;
out:
    if (r)
        free_replies(r, n_replies);
    free(r);
}

void console_tick(console *c, int64_t now_ms)
{
    if (!c)
        return;
    c->spent_us = 0; /* a new pass: a new budget */
    if (now_ms - c->last_sample_ms < SAMPLE_EVERY_MS)
        return;
    c->last_sample_ms = now_ms;
    refresh_view(c);
    sample(c);
    presence(c);
}

/* ---- GET /api/overview ---- */

/* Counter k of type ti, `ago` samples before the latest (clamped to the
 * oldest kept). */
static uint64_t sample_at(const console *c, size_t ti, size_t ago, size_t k)
{
    if (ago >= c->samples)
        ago = c->samples - 1;
    return c->rings[ti]
        ->counts[(c->head + CONSOLE_SAMPLES - ago) % CONSOLE_SAMPLES][k];
}

/* The q-quantile (0..1) of bucket counts in milliseconds, interpolated
 * within its bucket (as Prometheus' histogram_quantile); -1 when empty. */
static double percentile_ms(const uint64_t *counts, double q)
{
    uint64_t total = 0, seen = 0;
    double want;

    for (size_t b = 0; b < METRICS_BUCKETS; b++)
        total += counts[b];
    if (total == 0)
        return -1;
    want = q * (double)total;
    for (size_t b = 0; b < METRICS_BUCKETS; b++) {
        double lo = b ? (double)metrics_bucket_bound_us(b - 1) : 0;
        double hi = (double)metrics_bucket_bound_us(b);
        if (counts[b] == 0 || (double)(seen + counts[b]) < want) {
            seen += counts[b];
            continue;
        }
        if (hi < 0) /* +Inf: the lower bound is all we know */
            return lo / 1000.0;
        return (lo + (hi - lo) * ((want - (double)seen) / (double)counts[b])) /
               1000.0;
    }
    return -1;
}

/* The runs of the window: now (h) less the oldest copy kept (from). */
static void jb_histogram(jbuf *b, const console *c, const char *name,
                         const histogram *h, const histogram_copy *from)
{
    histogram_copy now;
    uint64_t count = 0;
    int64_t window_ms =
        wall_ms() -
        c->copy_wall[(c->copy_head + HISTOGRAM_COPIES - (c->copies - 1)) %
                     HISTOGRAM_COPIES];

    copy_histogram(&now, h);
    for (size_t k = 0; k < METRICS_BUCKETS; k++) {
        now.buckets[k] -= from->buckets[k];
        count += now.buckets[k];
    }
    now.sum_us -= from->sum_us;
    /* top_ms: the last finite bound; a percentile there means "more". */
    jb_printf(b,
              "\"%s\":{\"window_s\":%" PRId64 ",\"count\":%" PRIu64
              ",\"top_ms\":%.0f",
              name, (window_ms + 500) / 1000, count,
              (double)metrics_bucket_bound_us(METRICS_BUCKETS - 2) / 1000.0);
    if (count) {
        jb_printf(b, ",\"avg\":%.3f,\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f",
                  (double)now.sum_us / (double)count / 1000.0,
                  percentile_ms(now.buckets, 0.5),
                  percentile_ms(now.buckets, 0.9),
                  percentile_ms(now.buckets, 0.99));
    }
    jb_put(b, "}", 1);
}

static void jb_type(jbuf *b, const console *c, const queue_figures *f)
{
    int ti = metrics_type_find(c->m, f->type);
    const char *served = "[]";

    for (size_t i = 0; i < c->n_served; i++)
        if (strcmp(c->served[i].type, f->type) == 0)
            served = c->served[i].json;
    jb_put(b, "{\"type\":", 8);
    jb_str(b, f->type);
    jb_printf(b,
              ",\"ready\":%lld,\"running\":%lld,\"delayed\":%lld,"
              "\"dead\":%lld,\"pressure\":%s,\"hosts\":%s",
              f->ready, f->running, f->delayed, f->dead,
              f->pressure ? "true" : "false", served);
    if (ti < 0 || !c->rings[ti] || c->samples == 0) {
        jb_put(b, "}", 1);
        return;
    }
    jb_put(b, ",\"totals\":{", 11);
    for (int o = 0; o < OUTCOME_COUNT; o++)
        jb_printf(b, "%s\"%s\":%" PRIu64, o ? "," : "",
                  task_outcome_name((task_outcome)o),
                  atomic_load(&c->m->types[ti].outcomes[o]));
    /* Tasks finished in the last minute (or since start, if sooner). */
    jb_put(b, "},\"last_minute\":{", 17);
    {
        size_t span = c->samples > 60 ? 60 : c->samples - 1;
        for (size_t k = 0; k < N_CHARTED; k++)
            jb_printf(b, "%s\"%s\":%" PRIu64, k ? "," : "",
                      task_outcome_name(charted[k]),
                      sample_at(c, (size_t)ti, 0, k) -
                          sample_at(c, (size_t)ti, span, k));
    }
    jb_printf(b, "},\"series\":{\"step_s\":%d", CHART_STEP_S);
    for (size_t k = 0; k < N_CHARTED; k++) {
        jb_printf(b, ",\"%s\":[", task_outcome_name(charted[k]));
        for (size_t p = 0; p < CHART_POINTS; p++) {
            size_t newer = (CHART_POINTS - 1 - p) * CHART_STEP_S;
            uint64_t d = sample_at(c, (size_t)ti, newer, k) -
                         sample_at(c, (size_t)ti, newer + CHART_STEP_S, k);
            jb_printf(b, "%s%" PRIu64, p ? "," : "", d);
        }
        jb_put(b, "]", 1);
    }
    jb_put(b, "},", 2);
    {
        /* the oldest histogram copy kept: the window's start */
        size_t oldest = (c->copy_head + HISTOGRAM_COPIES - (c->copies - 1)) %
                        HISTOGRAM_COPIES;
        jb_histogram(b, c, "wait_ms", &c->m->types[ti].wait,
                     &c->rings[ti]->wait[oldest]);
        jb_put(b, ",", 1);
        jb_histogram(b, c, "run_ms", &c->m->types[ti].duration,
                     &c->rings[ti]->run[oldest]);
    }
    jb_put(b, "}", 1);
}

static const char *state_name(int state)
{
    switch (state) {
    case SLOT_EMPTY:
        return "starting";
    case SLOT_IDLE:
        return "idle";
    case SLOT_RUNNING:
        return "running";
    case SLOT_STOPPING:
        return "stopping";
    default:
        return "down";
    }
}

static void jb_slots(jbuf *b, const console *c)
{
    jb_put(b, "\"slots\":[", 9);
    for (size_t i = 0; i < c->v.n_slots; i++) {
        const console_slot *s = &c->v.slots[i];
        const slot_history *h = &c->history[i];
        jb_printf(b, "%s{\"slot\":%zu,\"worker\":", i ? "," : "", i);
        jb_str(b, s->consumer ? s->consumer : "");
        jb_printf(b,
                  ",\"pid\":%ld,\"state\":\"%s\",\"up_ms\":%" PRId64
                  ",\"batch\":%" PRIu32,
                  (long)s->pid, state_name(s->state), s->up_ms, s->batch_n);
        if (s->id[0]) {
            jb_put(b, ",\"type\":", 8);
            jb_str(b, s->type);
            jb_put(b, ",\"task\":", 8);
            jb_str(b, s->id);
            jb_printf(b, ",\"running_ms\":%" PRId64, s->running_ms);
        }
        if (s->restart_in_ms)
            jb_printf(b, ",\"restart_in_ms\":%" PRId64, s->restart_in_ms);
        jb_printf(b, ",\"restarts\":%u", h->restarts);
        if (h->restarts) {
            jb_printf(b, ",\"last_restart\":{\"reason\":\"%s\",\"how\":",
                      metrics_restart_name(h->last_why));
            jb_str(b, h->last_how);
            jb_printf(b, ",\"at_ms\":%" PRId64 "}", h->last_at_ms);
        }
        jb_put(b, "}", 1);
    }
    jb_put(b, "]", 1);
}

static void overview(console *c, http_reply *reply)
{
    const console_view *v = &c->v;
    jbuf b = {0};

    jb_put(&b, "{\"api\":1,\"host\":", 16);
    jb_str(&b, c->name);
    jb_printf(&b,
              ",\"version\":\"%s\",\"time_ms\":%" PRId64
              ",\"started_ms\":%" PRId64
              ",\"redis_up\":%s,\"figures_ok\":%s,\"actions\":%s",
              WHARF_VERSION, wall_ms(), c->started_wall_ms,
              v->redis_up ? "true" : "false", v->figures_ok ? "true" : "false",
              v->cfg->console_actions ? "true" : "false");
    jb_put(&b, ",\"types\":[", 10);
    for (size_t i = 0; i < v->n_types; i++) {
        if (i)
            jb_put(&b, ",", 1);
        queue_figures f = {.type = v->types[i]};
        /* Zeros until the supervisor's first refresh. */
        if (v->figures[i].type && strcmp(v->figures[i].type, f.type) == 0)
            f = v->figures[i];
        jb_type(&b, c, &f);
    }
    jb_printf(&b,
              "],\"workers\":{\"idle\":%u,\"running\":%u,\"stopping\":%u,"
              "\"down\":%u},",
              v->workers.idle, v->workers.running, v->workers.stopping,
              v->workers.down);
    jb_slots(&b, c);
    jb_put(&b, ",\"restarts\":{", 13);
    for (int r = 0; r < RESTART_REASON_COUNT; r++)
        jb_printf(&b, "%s\"%s\":%" PRIu64, r ? "," : "",
                  metrics_restart_name((restart_reason)r),
                  atomic_load(&c->m->restarts[r]));
    jb_printf(&b, "},\"hosts\":%s}", c->hosts_json ? c->hosts_json : "[]");
    json_reply(reply, 200, &b);
}

/* ---- GET /api/dead ---- */

/* A number query argument in lo..hi, or def when absent; -1 when bad. */
static long query_number(const char *name, long def, long lo, long hi)
{
    const char *text = http_query(name);
    char *end;
    long n;

    if (!text || !*text)
        return def;
    n = strtol(text, &end, 10);
    if (*end || n < lo || n > hi)
        return -1;
    return n;
}

/* A type argument: type itself when valid, NULL when absent and not
 * required, or "" after answering 400. */
static const char *type_arg(http_reply *reply, const char *type, bool required)
{
    if ((!type || !*type) && !required)
        return NULL;
    if (!type || !config_valid_type_name(type)) {
        json_error(reply, 400, "type: expected 1-100 bytes of [A-Za-z0-9._-]");
        return "";
    }
    return type;
}

/* The type argument of the query (as type_arg). */
static const char *query_type(http_reply *reply, bool required)
{
    return type_arg(reply, http_query("type"), required);
}

static void dead_page(console *c, http_reply *reply)
{
    const char *type = query_type(reply, true);
    long offset = query_number("offset", 0, 0, 1L << 40);
    long limit = query_number("limit", 50, 1, CONSOLE_PAGE_MAX);
    char key[KEY_MAX], keys[2][KEY_MAX];
    pipeline *redis;
    redisReply *head[2], **items = NULL, *ids;
    size_t n = 0;
    jbuf b = {0};

    if (!*type)
        return;
    if (offset < 0 || limit < 0) {
        json_error(reply, 400, "offset: 0 or more; limit: 1..%d",
                   CONSOLE_PAGE_MAX);
        return;
    }
    if (!(redis = redis_for(c, reply)))
        return;
    key_of_type(key, sizeof(key), prefix_of(c), type, "dead");
    pipeline_addf(redis, key, "ZCARD %s", key);
    pipeline_addf(redis, key, "ZREVRANGE %s %ld %ld WITHSCORES", key, offset,
                  offset + limit - 1);
    if (read_replies(c, head, 2) != 0) {
        unavailable(reply, "2", "redis: the dead set could not be read");
        return;
    }
    ids = head[1];
    if (head[0]->type != REDIS_REPLY_INTEGER ||
        ids->type != REDIS_REPLY_ARRAY) {
        json_error(reply, 502, "redis: unexpected reply to ZREVRANGE");
        goto out;
    }
    n = ids->elements / 2;
    for (size_t i = 0; i < n; i++) {
        dead_envelope_keys(c, type, ids->element[2 * i]->str, keys);
        pipeline_addf(redis, keys[0], "HMGET %s attempt error", keys[0]);
        pipeline_addf(redis, keys[1], "HMGET %s attempt error", keys[1]);
    }
    items = calloc(2 * n + 1, sizeof(*items));
    if (!items)
        out_of_memory();
    if (read_replies(c, items, 2 * n) != 0) {
        unavailable(reply, "2", "redis: the dead set could not be read");
        goto out;
    }
    jb_put(&b, "{\"type\":", 8);
    jb_str(&b, type);
    jb_printf(&b, ",\"total\":%lld,\"offset\":%ld,\"limit\":%ld,\"items\":[",
              head[0]->integer, offset, limit);
    for (size_t i = 0; i < n; i++) {
        const redisReply *id = ids->element[2 * i];
        /* dead:<id> first; task:<id> when it holds nothing */
        const redisReply *env = items[2 * i];
        if (!env || env->type != REDIS_REPLY_ARRAY || env->elements != 2 ||
            (env->element[0]->type != REDIS_REPLY_STRING &&
             env->element[1]->type != REDIS_REPLY_STRING))
            env = items[2 * i + 1];
        jb_put(&b, i ? ",{\"id\":" : "{\"id\":", i ? 7 : 6);
        jb_text(&b, id->str, id->len, SIZE_MAX);
        jb_printf(&b, ",\"died_at\":%lld",
                  (long long)strtod(ids->element[2 * i + 1]->str, NULL));
        if (env && env->type == REDIS_REPLY_ARRAY && env->elements == 2) {
            if (env->element[0]->type == REDIS_REPLY_STRING)
                jb_printf(&b, ",\"attempt\":%ld",
                          strtol(env->element[0]->str, NULL, 10));
            if (env->element[1]->type == REDIS_REPLY_STRING) {
                jb_put(&b, ",\"error\":", 9);
                jb_text(&b, env->element[1]->str, env->element[1]->len,
                        LIST_TEXT_BYTES);
            }
        }
        jb_put(&b, "}", 1);
    }
    jb_put(&b, "]}", 2);
    json_reply(reply, 200, &b);
out:
    free_replies(head, 2);
    if (items)
        free_replies(items, 2 * n);
    free(items);
}

/* ---- GET /api/task ---- */

/* One task's status and detail, atomically. KEYS: 1 dead zset, 2 dead:<id>,
 * 3 task:<id>, 4 delayed zset, 5 lock:<id>, 6 result:<id>, 7 seen:<id>.
 * ARGV: 1 id, 2 preview bytes. Returns {status, fields (flat, the payload
 * cut to the preview), payload length, died at, due at, lock ms left,
 * result length, result preview}. Status: the first that holds of dead,
 * delayed, running (its lock is held), done (a result is cached), queued
 * (its enqueue marker lives), else unknown. Bounded: two small hashes and
 * a few O(1) or O(log n) reads, previews cut in the script. */
static const char task_lua[] =
    "local id, cut = ARGV[1], tonumber(ARGV[2])\n"
    "local died = redis.call('ZSCORE', KEYS[1], id)\n"
    "local due = redis.call('ZSCORE', KEYS[4], id)\n"
    "local lock = redis.call('PTTL', KEYS[5])\n"
    "local rlen = redis.call('STRLEN', KEYS[6])\n"
    "local rexists = redis.call('EXISTS', KEYS[6])\n"
    "local seen = redis.call('EXISTS', KEYS[7])\n"
    "local h = redis.call('HGETALL', KEYS[2])\n"
    "if #h == 0 then h = redis.call('HGETALL', KEYS[3]) end\n"
    "local plen = 0\n"
    "for i = 1, #h, 2 do\n"
    "  if h[i] == 'payload' then\n"
    "    plen = #h[i + 1]; h[i + 1] = string.sub(h[i + 1], 1, cut)\n"
    "  end\n"
    "end\n"
    "local status = 'unknown'\n"
    "if died then status = 'dead'\n"
    "elseif due then status = 'delayed'\n"
    "elseif lock > 0 or lock == -1 then status = 'running'\n"
    "elseif rexists == 1 then status = 'done'\n"
    "elseif seen == 1 then status = 'queued' end\n"
    "local preview = ''\n"
    "if rexists == 1 then preview = redis.call('GETRANGE', KEYS[6], 0,\n"
    "  cut - 1) end\n"
    "return {status, h, plen, died or '', due or '', lock, rlen, preview}\n";

static script task_script = {.name = "console task", .source = task_lua};

static void task_args(const console *c, const char *type, const char *id,
                      char keys[7][KEY_MAX], const char *argv[9])
{
    char env[2][KEY_MAX];

    dead_envelope_keys(c, type, id, env);
    key_of_type(keys[0], KEY_MAX, prefix_of(c), type, "dead");
    memcpy(keys[1], env[0], KEY_MAX);
    memcpy(keys[2], env[1], KEY_MAX);
    key_of_type(keys[3], KEY_MAX, prefix_of(c), type, "delayed");
    key_of_task(keys[4], KEY_MAX, prefix_of(c), type, "lock", id);
    key_of_task(keys[5], KEY_MAX, prefix_of(c), type, "result", id);
    key_of_task(keys[6], KEY_MAX, prefix_of(c), type, "seen", id);
    for (int i = 0; i < 7; i++)
        argv[i] = keys[i];
    argv[7] = id;
    argv[8] = PREVIEW_TEXT;
}

static bool task_reply_ok(const redisReply *r)
{
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 8 ||
        r->element[0]->type != REDIS_REPLY_STRING ||
        r->element[1]->type != REDIS_REPLY_ARRAY)
        return false;
    for (size_t i = 0; i < r->element[1]->elements; i++)
        if (r->element[1]->element[i]->type != REDIS_REPLY_STRING)
            return false;
    return true;
}

/* The trace id (32 hex digits) of a W3C traceparent, or "". */
static void trace_id_of(const char *tp, size_t len, char out[33])
{
    out[0] = '\0';
    if (len >= 55 && tp[2] == '-' && tp[35] == '-') {
        for (int i = 0; i < 32; i++) {
            char ch = tp[3 + i];
            if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')))
                return;
        }
        memcpy(out, tp + 3, 32);
        out[32] = '\0';
    }
}

/* Where the running task runs, if on this host: its slot's worker. */
static const console_slot *slot_running(const console *c, const char *type,
                                        const char *id)
{
    for (size_t i = 0; i < c->v.n_slots; i++)
        if (strcmp(c->v.slots[i].id, id) == 0 &&
            strcmp(c->v.slots[i].type, type) == 0)
            return &c->v.slots[i];
    return NULL;
}

static void jb_task(jbuf *b, console *c, const char *type, const char *id,
                    const redisReply *r)
{
    const redisReply *h = r->element[1];
    const console_slot *where;
    char trace_id[33] = "";

    jb_put(b, "{\"type\":", 8);
    jb_str(b, type);
    jb_put(b, ",\"id\":", 6);
    jb_str(b, id);
    jb_put(b, ",\"status\":", 10);
    jb_text(b, r->element[0]->str, r->element[0]->len, 32);
    jb_put(b, ",\"fields\":[", 11);
    for (size_t i = 0; i + 1 < h->elements; i += 2) {
        const redisReply *name = h->element[i], *value = h->element[i + 1];
        jb_put(b, i ? ",{\"name\":" : "{\"name\":", i ? 9 : 8);
        jb_text(b, name->str, name->len, 200);
        jb_put(b, ",\"value\":", 9);
        jb_text(b, value->str, value->len,
                strcmp(name->str, "payload") == 0 ? PREVIEW_BYTES
                                                  : FIELD_BYTES);
        if (value->len > FIELD_BYTES && strcmp(name->str, "payload") != 0)
            jb_printf(b, ",\"cut_at\":%d", FIELD_BYTES);
        jb_put(b, "}", 1);
        if (strcmp(name->str, "trace") == 0)
            trace_id_of(value->str, value->len, trace_id);
    }
    jb_put(b, "]", 1);
    for (size_t i = 0; i + 1 < h->elements; i += 2) {
        const redisReply *value = h->element[i + 1];
        if (strcmp(h->element[i]->str, "payload") == 0) {
            jb_printf(b, ",\"payload\":{\"bytes\":%lld,\"preview\":",
                      r->element[2]->integer);
            jb_text(b, value->str, value->len, PREVIEW_BYTES);
            jb_printf(b, ",\"cut\":%s}",
                      r->element[2]->integer > (long long)value->len ? "true"
                                                                     : "false");
        }
        if (strcmp(h->element[i]->str, "trace") == 0) {
            jb_put(b, ",\"trace\":", 9);
            jb_text(b, value->str, value->len, 200);
        }
    }
    if (trace_id[0])
        jb_printf(b, ",\"trace_id\":\"%s\"", trace_id);
    if (r->element[3]->type == REDIS_REPLY_STRING && r->element[3]->len)
        jb_printf(b, ",\"died_at\":%lld",
                  (long long)strtod(r->element[3]->str, NULL));
    if (r->element[4]->type == REDIS_REPLY_STRING && r->element[4]->len)
        jb_printf(b, ",\"due_at\":%lld",
                  (long long)strtod(r->element[4]->str, NULL));
    if (r->element[5]->type == REDIS_REPLY_INTEGER &&
        r->element[5]->integer > 0)
        jb_printf(b, ",\"lock_ms_left\":%lld", r->element[5]->integer);
    if (strcmp(r->element[0]->str, "done") == 0 &&
        r->element[7]->type == REDIS_REPLY_STRING) {
        jb_printf(b, ",\"result\":{\"bytes\":%lld,\"preview\":",
                  r->element[6]->integer);
        jb_text(b, r->element[7]->str, r->element[7]->len, PREVIEW_BYTES);
        jb_put(b, "}", 1);
    }
    where = slot_running(c, type, id);
    if (where) {
        jb_put(b, ",\"worker\":", 10);
        jb_str(b, where->consumer);
        jb_printf(b, ",\"running_ms\":%" PRId64, where->running_ms);
    }
    jb_put(b, "}", 1);
}

/* GET /api/task?id=ID[&type=T]: without a type, every served type is
 * looked at (one pipelined round trip) and the first that knows the id
 * answers. */
static void task_detail(console *c, http_reply *reply)
{
    const char *id = http_query("id");
    const char *type = query_type(reply, false);
    const char *types[METRICS_MAX_TYPES];
    size_t n_types = 0, found = SIZE_MAX;
    char keys[7][KEY_MAX];
    const char *argv[9];
    redisReply **r = NULL;
    pipeline *redis;
    jbuf b = {0};

    if (type && !*type)
        return;
    if (!id || !config_valid_task_id(id, strlen(id))) {
        json_error(reply, 400,
                   "id: expected 1-200 printable bytes without "
                   "spaces");
        return;
    }
    if (type) {
        types[n_types++] = type;
    } else {
        for (size_t i = 0; i < c->v.n_types && i < METRICS_MAX_TYPES; i++)
            types[n_types++] = c->v.types[i];
    }
    if (!(redis = redis_for(c, reply)))
        return;
    if (task_script.sha[0] == '\0')
        script_init(&task_script);
    for (size_t i = 0; i < n_types; i++) {
        task_args(c, types[i], id, keys, argv);
        pipeline_add_script(redis, &task_script, 7, 9, argv, NULL);
    }
    r = calloc(n_types + 1, sizeof(*r));
    if (!r)
        out_of_memory();
    if (read_replies(c, r, n_types) != 0) {
        unavailable(reply, "2", "redis: the task could not be read");
        free(r);
        return;
    }
    for (size_t i = 0; i < n_types; i++) {
        if (!task_reply_ok(r[i])) {
            json_error(reply, 502, "redis: unexpected reply: %s",
                       r[i]->type == REDIS_REPLY_ERROR ? r[i]->str : "?");
            goto out;
        }
        if (found == SIZE_MAX && strcmp(r[i]->element[0]->str, "unknown"))
            found = i;
    }
    if (found == SIZE_MAX) {
        jb_put(&b, "{\"id\":", 6);
        jb_str(&b, id);
        if (type) {
            jb_put(&b, ",\"type\":", 8);
            jb_str(&b, type);
        }
        jb_put(&b, ",\"status\":\"unknown\"}", 20);
        json_reply(reply, 404, &b);
        goto out;
    }
    jb_task(&b, c, types[found], id, r[found]);
    json_reply(reply, 200, &b);
out:
    free_replies(r, n_types);
    free(r);
}

/* ---- POST /api/replay, /api/purge, /api/cancel ---- */

/* The one cancel of every producer, sdk/lua/cancel.lua (KEYS and ARGV:
 * its header): a queued or delayed task is removed, a running one's host
 * asks it to end. Its reply {word, detail} is read by cancel_word. */

static script replay_script = {.name = "dead_replay",
                               .source = wharf_lua_dead_replay};
static script purge_script = {.name = "dead_purge",
                              .source = wharf_lua_dead_purge};
static script cancel_script = {.name = "cancel", .source = wharf_lua_cancel};

/* Each action's script and its keys, in the order of the script's header
 * (sdk/lua): a name ending in ':' is a key of the task (":<id>"), any
 * other a key of the type. The same scripts as `wharf dead replay`,
 * `wharf dead purge` and `wharf cancel`. */
typedef struct action_spec {
    const char *name;
    script *s;
    const char *keys[9];
} action_spec;

static const action_spec action_specs[] = {
    {"cancel",
     &cancel_script,
     {"policy", "entries", "stream", "delayed",
      "task:", "seen:", "cancel:", "result:", "dead"}},
    {"replay",
     &replay_script,
     {"dead", "dead:", "stream", "task:", "delayed", "entries"}},
    {"purge", &purge_script, {"dead", "dead:", "task:", "delayed"}},
};

/* The word of a cancel.lua reply {word, detail}, as action answers it:
 * REMOVED and CANCELLING did it (OK); CANCELLED had been done before
 * (ALREADY, as `wharf cancel` says "already cancelled"); FINISHED and
 * UNKNOWN found nothing to cancel (NOT_FOUND); PROTOCOL did nothing. NULL
 * for any other reply. */
static const char *cancel_word(const redisReply *r)
{
    static const char *const words[][2] = {
        {"REMOVED", "OK"},        {"CANCELLING", "OK"},
        {"CANCELLED", "ALREADY"}, {"FINISHED", "NOT_FOUND"},
        {"UNKNOWN", "NOT_FOUND"}, {"PROTOCOL", "PROTOCOL"}};

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING ||
        r->element[1]->type != REDIS_REPLY_STRING)
        return NULL;
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (strcmp(r->element[0]->str, words[i][0]) == 0)
            return words[i][1];
    return NULL;
}

/* "host[:port]" of an Origin or Referer URL ("scheme://host[:port]/..."),
 * into out; false if it has none. */
static bool url_authority(const char *url, char *out, size_t len)
{
    const char *start = strstr(url, "://");
    size_t n;

    if (!start)
        return false;
    start += 3;
    n = strcspn(start, "/?#");
    if (n == 0 || n >= len)
        return false;
    memcpy(out, start, n);
    out[n] = '\0';
    return true;
}

/* Equal, in time that does not depend on where they differ. */
static bool same_secret(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char diff = la != lb;

    for (size_t i = 0; i < la; i++)
        diff |= (unsigned char)(a[i] ^ b[i % (lb ? lb : 1)]);
    return diff == 0;
}

/* Whether an action may run: actions on, same origin, the token. Answers
 * 403 with why when not. */
static bool action_allowed(console *c, http_reply *reply)
{
    const char *host = http_header("Host");
    const char *origin = http_header("Origin");
    const char *referer = http_header("Referer");
    const char *auth = http_header("Authorization");
    char from[300], token[256];

    if (!c->v.cfg->console_actions || !c->v.cfg->console_token) {
        json_error(reply, 403,
                   "actions are off: the manifest needs "
                   "[console] actions = yes and a token");
        return false;
    }
    /* A browser names the page a request comes from; another site's page
     * must not act with this console's authority. Clients that are not
     * browsers send neither header and are held to the token alone. */
    if ((origin && strcmp(origin, "null") == 0) ||
        ((origin || referer) &&
         (!url_authority(origin ? origin : referer, from, sizeof(from)) ||
          !host || strcasecmp(from, host) != 0))) {
        json_error(reply, 403,
                   "cross-origin request refused: Origin %s is "
                   "not this console (Host %s)",
                   origin    ? origin
                   : referer ? referer
                             : "?",
                   host ? host : "?");
        return false;
    }
    /* The header, else a form's field "token" (never the query: a URL
     * ends up in logs and histories). */
    if (auth && strncasecmp(auth, "Bearer ", 7) == 0)
        snprintf(token, sizeof(token), "%s", auth + 7);
    else if (!http_form("token", token, sizeof(token)))
        token[0] = '\0';
    if (!token[0] || !same_secret(token, c->v.cfg->console_token)) {
        json_error(reply, 403,
                   "a valid token is needed: header Authorization: "
                   "Bearer <[console] token>, or form field token");
        return false;
    }
    return true;
}

/* An action's argument: from the query, else from the form (a plain
 * HTML form posts its fields). */
static const char *action_arg(const char *name, char *buf, size_t len)
{
    const char *v = http_query(name);

    if (v)
        return v;
    return http_form(name, buf, len) ? buf : NULL;
}

static void action(console *c, const char *what, http_reply *reply)
{
    char type_buf[128], id_buf[256];
    const char *type;
    const char *id = action_arg("id", id_buf, sizeof(id_buf));
    char keys[9][KEY_MAX];
    const char *argv[12], *word = NULL;
    const action_spec *spec;
    script *s;
    int numkeys, argc;
    redisReply *r;
    jbuf b = {0};

    if (!action_allowed(c, reply))
        return;
    type =
        type_arg(reply, action_arg("type", type_buf, sizeof(type_buf)), true);
    if (!*type)
        return;
    if (!id || !config_valid_task_id(id, strlen(id))) {
        json_error(reply, 400,
                   "id: expected 1-200 printable bytes without "
                   "spaces");
        return;
    }
    spec = &action_specs[0];
    for (size_t i = 0; i < sizeof(action_specs) / sizeof(action_specs[0]); i++)
        if (strcmp(action_specs[i].name, what) == 0)
            spec = &action_specs[i];
    s = spec->s;
    for (numkeys = 0; numkeys < 9 && spec->keys[numkeys]; numkeys++) {
        const char *k = spec->keys[numkeys];
        size_t n = strlen(k);
        if (k[n - 1] == ':') {
            char w[16];
            snprintf(w, sizeof(w), "%.*s", (int)(n - 1), k);
            key_of_task(keys[numkeys], KEY_MAX, prefix_of(c), type, w, id);
        } else {
            key_of_type(keys[numkeys], KEY_MAX, prefix_of(c), type, k);
        }
        argv[numkeys] = keys[numkeys];
    }
    argc = numkeys;
    argv[argc++] = id;
    if (s == &cancel_script) {
        argv[argc++] = WHARF_GROUP;
        argv[argc++] = CLIENT_PROTOCOLS;
    } else if (s == &replay_script) {
        argv[argc++] = type;
    }
    if (!redis_for(c, reply))
        return;
    r = run_script(c, s, numkeys, argc, argv);
    if (!r) {
        unavailable(reply, "2", "redis: the action may not have gone through");
        return;
    }
    if (s == &cancel_script)
        word = cancel_word(r);
    else if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)
        word = r->str;
    else if (s == &purge_script && r->type == REDIS_REPLY_INTEGER)
        word = r->integer == 1 ? "OK" : "NOT_FOUND"; /* dead_purge.lua */
    if (!word) {
        json_error(reply, 502, "redis: %s",
                   r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    } else if (strcmp(word, "OK") == 0 || strcmp(word, "ALREADY") == 0) {
        bool already = strcmp(word, "ALREADY") == 0;
        if (!already) /* nothing was done for one cancelled before */
            log_fields(WHARF_LOG_INFO, "console action",
                       (log_field[]){LOG_STR("action", what),
                                     LOG_STR("type", type),
                                     LOG_STR("task", id)},
                       3);
        jb_printf(&b, "{\"done\":\"%s\",\"type\":", what);
        jb_str(&b, type);
        jb_put(&b, ",\"id\":", 6);
        jb_str(&b, id);
        if (already)
            jb_put(&b, ",\"already_cancelled\":true", 25);
        jb_put(&b, "}", 1);
        json_reply(reply, 200, &b);
    } else if (strcmp(word, "PROTOCOL") == 0) {
        json_error(reply, 409,
                   "the hosts serving '%s' speak wharf protocol %.40s; this "
                   "host speaks " CLIENT_PROTOCOLS ": nothing done",
                   type, r->element[1]->str);
    } else if (strcmp(word, "MISSING") == 0) {
        json_error(reply, 410,
                   "dead task '%s' had no envelope: dropped it "
                   "from the dead set",
                   id);
    } else {
        json_error(reply, 404, "no %s task '%s' of type '%s'",
                   s == &cancel_script ? "queued, delayed or running" : "dead",
                   id, type);
    }
    freeReplyObject(r);
}

/* ---- routing ---- */

/* The page's own script, style and fetches only, and no framing. */
#define CONSOLE_CSP                                                            \
    "default-src 'none'; script-src 'self'; style-src 'self'; "                \
    "connect-src 'self'; img-src 'self' data:; base-uri 'none'; "              \
    "form-action 'none'; frame-ancestors 'none'"

bool console_handles(const char *path)
{
    return strcmp(path, "/") == 0 || strncmp(path, "/api/", 5) == 0 ||
           strncmp(path, "/console/", 9) == 0;
}

static void asset(const char *path, http_reply *reply)
{
    for (const console_asset *a = console_assets; a->path; a++) {
        if (strcmp(a->path, path) != 0)
            continue;
        reply->status = 200;
        reply->content_type = a->content_type;
        reply->body = malloc(a->len ? a->len : 1);
        if (reply->body)
            memcpy(reply->body, a->data, a->len);
        reply->len = a->len;
        return;
    }
    json_error(reply, 404, "not found");
}

/* Whether the Host header names this console by address: an IP literal,
 * localhost, or the host of [metrics] listen. A page of another site
 * whose name was made to resolve to this address (DNS rebinding) sends
 * its own name, and is answered 421 rather than with the dead set. */
static bool host_allowed(const console *c, const char *host)
{
    char name[300], listen[300];
    unsigned char addr[sizeof(struct in6_addr)];
    const char *colon;
    size_t n;

    if (!host || !*host || strlen(host) >= sizeof(name))
        return false;
    if (host[0] == '[') {
        const char *close = strchr(host, ']');
        if (!close)
            return false;
        n = (size_t)(close - host - 1);
        memcpy(name, host + 1, n);
        name[n] = '\0';
        return inet_pton(AF_INET6, name, addr) == 1;
    }
    colon = strrchr(host, ':');
    n = colon ? (size_t)(colon - host) : strlen(host);
    memcpy(name, host, n);
    name[n] = '\0';
    if (strcasecmp(name, "localhost") == 0 ||
        inet_pton(AF_INET, name, addr) == 1)
        return true;
    if (c->v.cfg->metrics_listen) {
        snprintf(listen, sizeof(listen), "%s", c->v.cfg->metrics_listen);
        colon = strrchr(listen, ':');
        if (colon)
            listen[colon - listen] = '\0';
        return strcasecmp(listen, name) == 0;
    }
    return false;
}

void console_http(console *c, const char *method, const char *path,
                  http_reply *reply)
{
    bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    bool post = strcmp(method, "POST") == 0;

    refresh_view(c);
    /* Nothing here is to be cached, sniffed into another type, framed by
     * another page, or run but the page's own script (the page's meta
     * tag says the same, for a copy saved to disk). */
    http_reply_header(reply, "Cache-Control", "no-store");
    http_reply_header(reply, "X-Content-Type-Options", "nosniff");
    http_reply_header(reply, "X-Frame-Options", "DENY");
    http_reply_header(reply, "Referrer-Policy", "same-origin");
    http_reply_header(reply, "Content-Security-Policy", CONSOLE_CSP);
    if (!host_allowed(c, http_header("Host"))) {
        json_error(reply, 421,
                   "the console answers to its own address "
                   "(an IP, localhost or [metrics] listen), not "
                   "to Host '%s'; behind a proxy, see "
                   "docs/console.md",
                   http_header("Host") ? http_header("Host") : "");
        return;
    }
    if (strcmp(path, "/api/replay") == 0 || strcmp(path, "/api/purge") == 0 ||
        strcmp(path, "/api/cancel") == 0) {
        if (!post)
            json_error(reply, 405, "%s takes POST", path);
        else
            action(c, path + 5, reply);
        return;
    }
    if (!get) {
        json_error(reply, 405, "%s takes GET", path);
        return;
    }
    if (strcmp(path, "/") == 0)
        asset("/console/index.html", reply);
    else if (strncmp(path, "/console/", 9) == 0)
        asset(path, reply);
    else if (strcmp(path, "/api/overview") == 0)
        overview(c, reply);
    else if (strcmp(path, "/api/dead") == 0)
        dead_page(c, reply);
    else if (strcmp(path, "/api/task") == 0)
        task_detail(c, reply);
    else
        json_error(reply, 404, "no such API: see docs/console.md");
}
