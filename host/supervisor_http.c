/* The supervisor's HTTP endpoint: /metrics, /healthz, /readyz, and the
 * console's requests, answered from the loop's last figures. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock_ms.h"
#include "supervisor_internal.h"
#include "xmalloc.h"

/* Orders runs by how long they have run, longest first. */
static int longest_first(const void *a, const void *b)
{
    int64_t x = ((const console_run *)a)->running_ms;
    int64_t y = ((const console_run *)b)->running_ms;

    return (x < y) - (x > y);
}

/* What the console shows, from what the loop already knows. */
void console_view_of(void *arg, console_view *v)
{
    supervisor *s = arg;
    int64_t now = clock_ms();

    v->cfg = s->cfg;
    v->types = (const char *const *)s->types;
    v->n_types = s->b.n_queues;
    v->figures = s->figures;
    v->figures_ok = s->figures_ok;
    v->redis_up = broker_connected(&s->b);
    v->workers = count_workers(s);
    for (size_t i = 0; i < v->n_slots && i < s->n_procs; i++) {
        worker_proc *p = &s->procs[i];
        console_slot *out = &v->slots[i];
        const slot *snap;
        out->consumer = p->consumer;
        out->pid = p->pid > 0 ? p->pid : 0;
        out->state = -1;
        out->n_runs = 0;
        out->up_ms = 0;
        out->batch_n = 0;
        out->restart_in_ms = p->restart_at_ms ? p->restart_at_ms - now : 0;
        if (p->pid <= 0 || read_slot(p) != 0)
            continue;
        snap = p->snap;
        out->state = snap->state;
        out->up_ms = now - p->forked_ms;
        out->batch_n = 0;
        for (uint32_t e = 0; e < snap->batch_n; e++)
            out->batch_n += snap->batch[e].type[0] != '\0';
        if (out->runs_room < snap->n_running) {
            out->runs_room = snap->n_running;
            out->runs = xrealloc(out->runs, out->runs_room * sizeof(*out->runs));
        }
        for (uint32_t e = 0; e < snap->batch_n && out->n_runs < out->runs_room;
             e++) {
            console_run *r;
            if (!slot_task_running(snap, e))
                continue;
            r = &out->runs[out->n_runs++];
            snprintf(r->type, sizeof(r->type), "%s", snap->batch[e].type);
            snprintf(r->id, sizeof(r->id), "%s", snap->batch[e].id);
            r->running_ms = now - snap->batch[e].started_ms;
        }
        if (out->n_runs > 1) /* runs is NULL before the first */
            qsort(out->runs, out->n_runs, sizeof(*out->runs), longest_first);
    }
}

static void text_reply(http_reply *reply, unsigned status, const char *body)
{
    reply->status = status;
    reply->content_type = "text/plain; charset=utf-8";
    reply->body = xstrdup(body);
    reply->len = strlen(reply->body);
}

/* /metrics, /healthz, /readyz. Answered from what the loop already knows
 * (the queue figures it refreshes every second, the connection's state),
 * never by a Redis call of its own: a slow Redis must not hold the loop
 * that enforces timeouts and renews leases. */
void on_http(void *arg, const char *method, const char *path, http_reply *reply)
{
    supervisor *s = arg;
    worker_figures workers;

    if (s->console && console_handles(path)) {
        console_http(s->console, method, path, reply);
        return;
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        text_reply(reply, 405, "only GET\n");
        return;
    }
    if (strcmp(path, "/healthz") == 0) {
        text_reply(reply, 200, "ok\n");
        return;
    }
    workers = count_workers(s);
    if (strcmp(path, "/readyz") == 0) {
        bool up = broker_connected(&s->b);
        if (!up)
            text_reply(reply, 503, "not ready: redis unreachable\n");
        else if (workers.idle + workers.running == 0)
            text_reply(reply, 503, "not ready: no worker up\n");
        else
            text_reply(reply, 200, "ready\n");
        return;
    }
    if (strcmp(path, "/metrics") == 0) {
        count_redis(s);
        reply->status = 200;
        reply->content_type = "text/plain; version=0.0.4; charset=utf-8";
        /* The served types first, then every other known type: one
         * array, as refresh_figures keeps it. */
        reply->body = metrics_render(
            s->m, s->figures, s->b.n_queues + s->known.n, &workers,
            broker_connected(&s->b) && s->figures_ok, &reply->len);
        return;
    }
    text_reply(reply, 404, "not found: try /metrics, /healthz, /readyz\n");
}
