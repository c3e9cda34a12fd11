/* wharf top's drawing: lays out the console's overview (its JSON, as
 * jansson decoded it) as lines of text: the heading, a table of types,
 * one of worker slots and one of hosts. Nothing the server sends can move
 * the cursor: control bytes are dropped. */
#include "top_render.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Names for the buffers of a frame: one line before it is cut to the
 * terminal; a figure in ms; a cell (a duration, a state); the task, the
 * hosts and the restarts of a row; the clock of the title. */
#define TOP_LINE_MAX 2048
#define TOP_MS_MAX 16
#define TOP_CELL_MAX 32
#define TOP_TASK_MAX 256
#define TOP_HOSTS_MAX 256
#define TOP_RESTARTS_MAX 128
#define TOP_CLOCK_MAX 64

/* Appends one line, cut to the terminal's width, control bytes dropped
 * (nothing the server sends can move the cursor). */
static void line(top_frame *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void line(top_frame *f, const char *fmt, ...)
{
    char text[TOP_LINE_MAX];
    va_list ap;
    int cols = 0;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (f->len + sizeof(text) + 8 > f->cap) {
        char *more = realloc(f->s, f->cap = f->cap * 2 + sizeof(text) + 8);
        if (!more)
            abort();
        f->s = more;
    }
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        if (*p < 0x20 || *p == 0x7f)
            continue;
        if ((*p & 0xc0) != 0x80 && f->width > 0 && cols++ >= f->width)
            break;
        f->s[f->len++] = (char)*p;
    }
    f->s[f->len++] = '\n';
}

/* The member key of object v as a number, a string or a flag, or def
 * when v is no object or the member is missing or of another kind. */
static double num(const json_t *v, const char *key, double def)
{
    const json_t *x = json_object_get(v, key);
    return json_is_number(x) ? json_number_value(x) : def;
}

static const char *str(const json_t *v, const char *key, const char *def)
{
    const json_t *x = json_object_get(v, key);
    return json_is_string(x) ? json_string_value(x) : def;
}

static bool flag(const json_t *v, const char *key)
{
    return json_is_true(json_object_get(v, key));
}

/* The member key of v if it is an array, else NULL. */
static const json_t *array(const json_t *v, const char *key)
{
    const json_t *x = json_object_get(v, key);
    return json_is_array(x) ? x : NULL;
}

/* One duration of a histogram summary, as "12ms", "1.5s" or ">10s". */
static void fmt_ms(char *buf, size_t len, const json_t *h, const char *key)
{
    double v = num(h, key, -1);
    if (!h || num(h, "count", 0) == 0 || v < 0)
        snprintf(buf, len, "-");
    else if (v >= num(h, "top_ms", 1e300))
        snprintf(buf, len, ">%.0fs", v / 1000);
    else if (v < 10)
        snprintf(buf, len, "%.1fms", v);
    else if (v < 1000)
        snprintf(buf, len, "%.0fms", v);
    else
        snprintf(buf, len, "%.1fs", v / 1000);
}

/* "p50/p99" of a histogram summary, or "-". */
static void fmt_percentiles(char *buf, size_t len, const json_t *h)
{
    char p50[TOP_MS_MAX], p99[TOP_MS_MAX];

    fmt_ms(p50, sizeof(p50), h, "p50");
    fmt_ms(p99, sizeof(p99), h, "p99");
    if (strcmp(p50, "-") == 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%s/%s", p50, p99);
}

static void fmt_duration(char *buf, size_t len, double ms)
{
    int s = ms < 0 ? 0 : ms > 8.64e10 ? 86400000 : (int)(ms / 1000);
    if (s < 60)
        snprintf(buf, len, "%ds", s);
    else if (s < 3600)
        snprintf(buf, len, "%dm%02ds", s / 60, s % 60);
    else
        snprintf(buf, len, "%dh%02dm", s / 3600, (s % 3600) / 60);
}

/* The widest string `key` of the objects of list, between lo and hi. */
static int column_width(const json_t *list, const char *key, int lo, int hi)
{
    int width = lo;

    for (size_t i = 0; i < json_array_size(list); i++) {
        int n = (int)strlen(str(json_array_get(list, i), key, ""));
        if (n > width)
            width = n;
    }
    return width < hi ? width : hi;
}

/* rates: under a type with a rate_limit or a limit_key, a line with
 * them and the tasks this host sent back to wait for their rate turn. */
static void render_rate(top_frame *f, const json_t *t)
{
    const json_t *rate = json_object_get(t, "rate_limit");
    const json_t *key = json_object_get(t, "limit_key");
    char burst[TOP_CELL_MAX] = "";

    if (!json_is_string(rate) && !json_is_string(key))
        return;
    if (json_is_string(rate))
        snprintf(burst, sizeof(burst), ", burst %.0f", num(t, "rate_burst", 1));
    line(f, "  rate %s%s%s%s, %.0f waited for their turn here",
         json_is_string(rate) ? json_string_value(rate) : "off", burst,
         json_is_string(key) ? ", per " : "",
         json_is_string(key) ? json_string_value(key) : "",
         num(t, "rate_waits", 0));
}

static void render_types(top_frame *f, const json_t *types)
{
    int tw = column_width(types, "type", 4, 40);

    line(f, "%-*s %7s %7s %7s %7s %-5s %-6s %7s %8s %7s %13s %13s  %s", tw,
         "TYPE", "READY", "RUNNING", "DELAYED", "DEAD", "PRESS", "PAUSED",
         "OK/1m", "RETRY/1m", "DEAD/1m", "WAIT p50/p99", "RUN p50/p99",
         "HOSTS");
    for (size_t i = 0; i < json_array_size(types); i++) {
        const json_t *t = json_array_get(types, i);
        const json_t *m = json_object_get(t, "last_minute");
        const json_t *hosts = array(t, "hosts");
        char wait[TOP_CELL_MAX], run[TOP_CELL_MAX], served[TOP_HOSTS_MAX] = "";
        size_t used = 0;
        for (size_t k = 0; k < json_array_size(hosts) && used < sizeof(served);
             k++) {
            const json_t *host = json_array_get(hosts, k);
            if (json_is_string(host))
                used += (size_t)snprintf(served + used, sizeof(served) - used,
                                         "%s%s", k ? "," : "",
                                         json_string_value(host));
        }
        fmt_percentiles(wait, sizeof(wait), json_object_get(t, "wait_ms"));
        fmt_percentiles(run, sizeof(run), json_object_get(t, "run_ms"));
        line(
            f,
            "%-*s %7.0f %7.0f %7.0f %7.0f %-5s %-6s %7.0f %8.0f %7.0f %13s "
            "%13s  %s",
            tw, str(t, "type", "?"), num(t, "ready", 0), num(t, "running", 0),
            num(t, "delayed", 0), num(t, "dead", 0),
            flag(t, "pressure") ? "ON" : "off",
            flag(t, "paused") ? "YES" : "no", num(m, "ok", 0),
            num(m, "retry", 0), num(m, "dead", 0), wait, run,
            served[0] ? served : "-");
        render_rate(f, t);
    }
    if (json_array_size(types) == 0)
        line(f, "(no types served)");
}

/* A worker with threads runs several tasks: the row shows the longest
 * running, and a line under it each of the others. */
static void render_more_runs(top_frame *f, int ww, const json_t *runs)
{
    for (size_t k = 1; k < json_array_size(runs); k++) {
        const json_t *r = json_array_get(runs, k);
        char task[TOP_TASK_MAX], run_for[TOP_CELL_MAX];
        snprintf(task, sizeof(task), "%s %s", str(r, "type", ""),
                 str(r, "task", ""));
        fmt_duration(run_for, sizeof(run_for), num(r, "running_ms", 0));
        line(f, "%-4s %-*s %8s %-9s %-36s %7s", "", ww, "", "", "", task,
             run_for);
    }
}

static void render_slots(top_frame *f, const json_t *slots)
{
    int ww = column_width(slots, "worker", 6, 60);

    line(f, "%-4s %-*s %8s %-9s %-36s %7s %7s %s", "SLOT", ww, "WORKER", "PID",
         "STATE", "TASK", "FOR", "UP", "RESTARTS");
    for (size_t i = 0; i < json_array_size(slots); i++) {
        const json_t *s = json_array_get(slots, i);
        const json_t *last = json_object_get(s, "last_restart");
        char task[TOP_TASK_MAX], restarts[TOP_RESTARTS_MAX];
        char run_for[TOP_CELL_MAX] = "-", up[TOP_CELL_MAX] = "-";
        char state[TOP_CELL_MAX];
        if (json_object_get(s, "task"))
            snprintf(task, sizeof(task), "%s %s", str(s, "type", ""),
                     str(s, "task", ""));
        else
            snprintf(task, sizeof(task), "-");
        if (json_object_get(s, "running_ms"))
            fmt_duration(run_for, sizeof(run_for), num(s, "running_ms", 0));
        if (num(s, "pid", 0) > 0)
            fmt_duration(up, sizeof(up), num(s, "up_ms", 0));
        snprintf(state, sizeof(state), "%s", str(s, "state", "?"));
        snprintf(restarts, sizeof(restarts), "%.0f%s%s%s%s%s",
                 num(s, "restarts", 0), last ? " (last: " : "",
                 last ? str(last, "reason", "") : "", last ? ", " : "",
                 last ? str(last, "how", "") : "", last ? ")" : "");
        line(f, "%-4.0f %-*s %8.0f %-9s %-36s %7s %7s %s", num(s, "slot", 0),
             ww, str(s, "worker", "?"), num(s, "pid", 0), state, task, run_for,
             up, restarts);
        render_more_runs(f, ww, array(s, "running"));
    }
}

static void render_hosts(top_frame *f, const json_t *hosts)
{
    int hw = column_width(hosts, "name", 4, 60);

    line(f, "%-*s %7s %4s  %s", hw, "HOST", "WORKERS", "BUSY", "TYPES");
    for (size_t i = 0; i < json_array_size(hosts); i++) {
        const json_t *h = json_array_get(hosts, i);
        line(f, "%-*s %7s %4s  %s", hw, str(h, "name", "?"),
             str(h, "workers", "-"), str(h, "busy", "0"), str(h, "types", "-"));
    }
}

void top_render(top_frame *f, const char *url, const json_t *o)
{
    const json_t *w = json_object_get(o, "workers");
    const json_t *r = json_object_get(o, "restarts");
    char when[TOP_CLOCK_MAX];
    time_t now = (time_t)(num(o, "time_ms", 0) / 1000);
    struct tm tm;

    gmtime_r(&now, &tm);
    strftime(when, sizeof(when), "%H:%M:%S UTC", &tm);
    line(f, "wharf top  %s  host %s  wharf %s  redis %s  %s", url,
         str(o, "host", "?"), str(o, "version", "?"),
         flag(o, "redis_up") ? "up" : "DOWN", when);
    line(f,
         "workers: %.0f running, %.0f idle, %.0f stopping, %.0f down   "
         "restarts: crash %.0f, timeout %.0f, exit %.0f, reload %.0f",
         num(w, "running", 0), num(w, "idle", 0), num(w, "stopping", 0),
         num(w, "down", 0), num(r, "crash", 0), num(r, "timeout", 0),
         num(r, "exit", 0), num(r, "reload", 0));
    line(f, "%s", "");
    render_types(f, array(o, "types"));
    line(f, "%s", "");
    render_slots(f, array(o, "slots"));
    line(f, "%s", "");
    render_hosts(f, array(o, "hosts"));
}

void top_render_unreachable(top_frame *f, const char *url, const char *why)
{
    line(f, "wharf top  %s  console unreachable: %s", url, why);
}
