/* The console; see console.h and docs/console.md. This file is its
 * public API (life, the tick, the worker history) and the routing of
 * requests with the headers every answer carries: the top of the
 * console's files, which calls the pages below it (console.h says how
 * they are layered). The page's assets are compiled in
 * (console_assets.c, made from host/console/ at build time). */
#include "console.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "clock_ms.h"
#include "config.h"
#include "console_actions.h"
#include "console_dead_search.h"
#include "console_history.h"
#include "console_overview.h"
#include "console_groups.h"
#include "console_schedules.h"
#include "console_redis.h"
#include "console_reply.h"
#include "console_sample.h"
#include "console_state.h"
#include "console_tasks.h"
#include "endpoint.h"
#include "presence.h"
#include "xmalloc.h"

#define SAMPLE_EVERY_MS 1000

/* The page and its assets (console_assets.c, generated). */
typedef struct console_asset {
    const char *path;
    const char *content_type;
    const unsigned char *data;
    size_t len;
} console_asset;
extern const console_asset console_assets[];

/* ---- life ---- */

static void refresh_view(console *c)
{
    c->view_fn(c->view_arg, &c->v);
}

console *console_create(const char *name, const char *url, metrics *m,
                        size_t n_slots, console_view_fn view, void *arg)
{
    console *c = xcalloc(1, sizeof(*c));

    snprintf(c->name, sizeof(c->name), "%s", name);
    snprintf(c->redis_url, sizeof(c->redis_url), "%s", url);
    c->m = m;
    c->view_fn = view;
    c->view_arg = arg;
    c->v.n_slots = n_slots;
    c->v.slots = xcalloc(n_slots, sizeof(*c->v.slots));
    c->history = xcalloc(n_slots, sizeof(*c->history));
    c->presence = presence_create();
    c->started_wall_ms = clock_wall_ms();
    return c;
}

/* What this host says of itself in its presence (presence.h). */
static presence_self self_of(const console *c)
{
    return (presence_self){
        .prefix = console_prefix(c),
        .name = c->name,
        .types = c->v.types,
        .n_types = c->v.n_types,
        .workers = c->v.n_slots,
        .busy = c->v.workers.running,
        .started_ms = c->started_wall_ms,
        .now_ms = clock_wall_ms(),
    };
}

/* presence's round trips, within the pass's budget. */
static int run_for_presence(void *arg, pipeline *p)
{
    (void)p; /* the console's own pipeline */
    return console_run_pipe(arg);
}

void console_destroy(console *c)
{
    if (!c)
        return;
    if (c->nodes_ready) {
        pipeline_free(&c->pipe);
        nodes_free(&c->nodes);
    }
    for (size_t i = 0; i < METRICS_MAX_TYPES; i++)
        free(c->rings[i]);
    presence_destroy(c->presence);
    free(c->history);
    for (size_t i = 0; c->v.slots && i < c->v.n_slots; i++)
        free(c->v.slots[i].runs);
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
    h->last_at_ms = clock_wall_ms();
}

void console_tick(console *c, int64_t now_ms)
{
    pipeline *redis;

    if (!c)
        return;
    c->spent_us = 0; /* a new pass: a new budget */
    if (now_ms - c->last_sample_ms < SAMPLE_EVERY_MS)
        return;
    c->last_sample_ms = now_ms;
    refresh_view(c);
    console_sample(c);
    redis = console_connection(c);
    if (redis) {
        presence_self self = self_of(c);
        presence_read(c->presence, &self, redis, run_for_presence, c);
    }
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
        reply->body = xcalloc(a->len, 1);
        memcpy(reply->body, a->data, a->len);
        reply->len = a->len;
        return;
    }
    console_reply_error(reply, 404, "not found");
}

/* Whether the Host header names this console by address: an IP literal,
 * localhost, or the host of [metrics] listen. A page of another site
 * whose name was made to resolve to this address (DNS rebinding) sends
 * its own name, and is answered 421 rather than with the dead set. */
static bool host_allowed(const console *c, const char *host)
{
    char name[ENDPOINT_HOST_MAX], listen[ENDPOINT_HOST_MAX], why[128];
    unsigned char addr[sizeof(struct in6_addr)];
    int port = 0;

    if (!host || endpoint_parse(host, strlen(host), 0, name, &port, why,
                                sizeof(why)) != 0)
        return false;
    if (strchr(name, ':')) /* in brackets: checked as an IPv6 address */
        return true;
    if (strcasecmp(name, "localhost") == 0 ||
        inet_pton(AF_INET, name, addr) == 1)
        return true;
    if (c->v.cfg->metrics_listen &&
        endpoint_parse(c->v.cfg->metrics_listen,
                       strlen(c->v.cfg->metrics_listen), 0, listen, &port,
                       why, sizeof(why)) == 0)
        return strcasecmp(listen, name) == 0;
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
        console_reply_error(reply, 421,
                            "the console answers to its own address "
                            "(an IP, localhost or [metrics] listen), not "
                            "to Host '%s'; behind a proxy, see "
                            "docs/console.md",
                            http_header("Host") ? http_header("Host") : "");
        return;
    }
    if (strcmp(path, "/api/dead/replay") == 0 ||
        strcmp(path, "/api/dead/purge") == 0) {
        if (!post)
            console_reply_error(reply, 405, "%s takes POST", path);
        else
            console_dead_bulk(c, path + 10, reply);
        return;
    }
    if (strcmp(path, "/api/replay") == 0 || strcmp(path, "/api/purge") == 0 ||
        strcmp(path, "/api/cancel") == 0 || strcmp(path, "/api/pause") == 0 ||
        strcmp(path, "/api/resume") == 0) {
        if (!post)
            console_reply_error(reply, 405, "%s takes POST", path);
        else
            console_action(c, path + 5, reply);
        return;
    }
    if (!get) {
        console_reply_error(reply, 405, "%s takes GET", path);
        return;
    }
    if (strcmp(path, "/") == 0)
        asset("/console/index.html", reply);
    else if (strncmp(path, "/console/", 9) == 0)
        asset(path, reply);
    else if (strcmp(path, "/api/overview") == 0)
        console_overview(c, reply);
    else if (strcmp(path, "/api/dead") == 0)
        console_dead_page(c, reply);
    else if (strcmp(path, "/api/dead/search") == 0)
        console_dead_search(c, reply);
    else if (strcmp(path, "/api/task") == 0)
        console_task_detail(c, reply);
    else if (strcmp(path, "/api/schedules") == 0)
        console_schedules(c, reply);
    else if (strcmp(path, "/api/history") == 0)
        console_history(c, reply);
    else if (strcmp(path, "/api/group") == 0)
        console_group(c, reply);
    else
        console_reply_error(reply, 404, "no such API: see docs/console.md");
}
