/* wharf top: a live terminal view of a wharfd's console figures
 * (GET /api/overview, docs/console.md): per type ready, running, delayed,
 * dead, pressure, the last minute's outcomes, wait and run times, the
 * worker slots and the hosts. Plain ANSI, redrawn in place and cut to the
 * terminal's size; q quits. Works over SSH and in any terminal; --once
 * prints one frame without escapes. It reads the console over HTTP and
 * needs no Redis. This file is the command and its loop; top_fetch.c
 * reads the console, top_render.c lays out a frame and top_term.c puts
 * it on the terminal. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "cli.h"
#include "endpoint.h"
#include "top_fetch.h"
#include "top_render.h"
#include "top_term.h"

/* Why a fetch failed (it may name the URL and a path); the footer line;
 * why a listen address was refused. */
#define TOP_ERR_MAX 1024
#define TOP_FOOTER_MAX 128
#define TOP_WHY_MAX 128

enum { OPT_URL, OPT_INTERVAL, OPT_ONCE };

/* The flag table's check of --interval, where it stands. */
static int check_interval(cli *ctx, const char *value)
{
    int64_t ms;

    return cli_duration(ctx, "--interval", value, &ms);
}

/* The console's URL without --url: the manifest's [metrics] listen (a
 * wildcard listener is reached on loopback), else the default port on
 * loopback. */
static void default_url(const cli *ctx, char *url, size_t len)
{
    const char *listen = ctx->config ? ctx->config->metrics_listen : NULL;
    char host[ENDPOINT_HOST_MAX], why[TOP_WHY_MAX], where[ENDPOINT_TEXT_MAX];
    int port = 0;

    /* The manifest's check let through only what endpoint_parse takes. */
    if (!listen || endpoint_parse(listen, strlen(listen), ENDPOINT_NEED_PORT,
                                  host, &port, why, sizeof(why)) != 0) {
        snprintf(url, len, "http://127.0.0.1:9464");
        return;
    }
    endpoint_format(where, sizeof(where),
                    strcmp(host, "0.0.0.0") == 0 ? "127.0.0.1"
                    : strcmp(host, "::") == 0    ? "::1"
                                                 : host,
                    port);
    snprintf(url, len, "http://%s", where);
}

/* Reads the console once and shows what it says, or why it cannot be
 * read (why also in err): drawn in place when live, else printed.
 * Returns whether the console answered. */
static bool show_frame(top_fetch *fetch, const char *url, bool live,
                       const char *footer, char *err, size_t len)
{
    json_t *overview = top_fetch_json(fetch, url, "/api/overview", err, len);
    top_frame f = {NULL, 0, 0, 0};
    int cols = 0, rows = 0;

    if (live)
        top_term_size(&cols, &rows);
    f.width = cols;
    if (overview)
        top_render(&f, url, overview);
    else
        top_render_unreachable(&f, url, err);
    json_decref(overview);
    if (live)
        top_term_draw(&f, cols, rows, footer);
    else if (f.s)
        fwrite(f.s, 1, f.len, stdout);
    free(f.s);
    fflush(stdout);
    return overview != NULL;
}

static int run(cli *ctx, const cli_args *args)
{
    char url[CLI_URL_MAX], err[TOP_ERR_MAX], footer[TOP_FOOTER_MAX];
    int64_t interval_ms = 1000;
    bool once = args->flag[OPT_ONCE] != NULL, live, keys = false;
    top_fetch *fetch;
    top_target t;
    int code = EX_OK;

    default_url(ctx, url, sizeof(url));
    if (args->flag[OPT_URL])
        snprintf(url, sizeof(url), "%s", args->flag[OPT_URL]);
    if (args->flag[OPT_INTERVAL])
        cli_duration(ctx, "--interval", args->flag[OPT_INTERVAL], &interval_ms);
    if (interval_ms < 100)
        interval_ms = 100;
    if (top_target_parse(url, &t, err, sizeof(err)) != 0)
        return cli_usage(ctx, "--url %s", err);
    if (!(fetch = top_fetch_open(&t, &top_stop, err, sizeof(err))))
        return cli_fail(ctx, EX_SOFTWARE, "%s", err);

    live = !once && isatty(STDOUT_FILENO);
    top_term_catch_signals();
    if (live)
        keys = top_term_enter();
    snprintf(footer, sizeof(footer), "q quit - refreshing every %.1fs",
             (double)interval_ms / 1000);
    while (!top_stop) {
        bool answered = show_frame(fetch, url, live, footer, err, sizeof(err));
        if (!live) {
            code = answered ? EX_OK : EX_UNAVAILABLE;
            if (code != EX_OK)
                cli_fail(ctx, code, "%s", err);
            break;
        }
        top_term_wait(&keys, (int)interval_ms);
    }
    if (live)
        top_term_leave();
    top_fetch_close(fetch);
    return code;
}

const cli_command cmd_top_entry = {
    .name = "top",
    .usage = "[--url http://HOST:PORT] [--interval DUR] [--once]",
    .help = "A live terminal view of a wharfd's console figures: per type the\n"
            "queue counts, pressure, last minute's outcomes and wait and run\n"
            "percentiles, the worker slots and the hosts, redrawn in place;\n"
            "q quits, Ctrl-Z suspends.\n"
            "  --url URL       the wharfd ([metrics] listen of the manifest)\n"
            "  --interval DUR  how often to refresh (1s)\n"
            "  --once          print one view and exit\n"
            "Exit: 0; 69 the wharfd cannot be reached.\n",
    .flags = {[OPT_URL] = {"url", true},
              [OPT_INTERVAL] = {"interval", true, check_interval},
              [OPT_ONCE] = {"once", false}},
    .run = run,
};
