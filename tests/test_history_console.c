/* The fleet's history in the console: GET /api/history sums what every
 * host wrote (here one host's whole run, written at its stop, read by
 * another host's console) and takes one host's alone, and the page draws
 * it in headless Chromium (the DOM checked, a screenshot kept under the
 * build folder as the console's own test keeps its). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "host_process.h"
#include "chromium.h"
#include "http_get.h"
#include "redis_server.h"
#include "tools.h"

#define ARTEFACTS WHARF_BINARY_DIR "/tests/console"

static test_redis redis;
static test_host worker_host, console_host;
static redisContext *rc;
static char body[1 << 20];

static void start_redis(void)
{
    test_suite_up(&redis, 0, &rc);
}

static void stop_all(void)
{
    test_suite_down(&redis, &rc,
                    (test_host *const[]){&worker_host, &console_host, NULL});
}

TestSuite(history_console, .init = start_redis, .fini = stop_all,
          .timeout = 180);

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

static int start_host(test_host *h, const char *instance)
{
    char listen[64], host_keys[64];
    int port = test_free_port();

    snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
    snprintf(host_keys, sizeof(host_keys), "instance = %s\n", instance);
    test_host_opts o = {.host_keys = host_keys,
                        .metrics_listen = listen,
                        .extra = "[type.chaos]\nmax_attempts = 2\n"
                                 "backoff_base = 10ms\n"};
    test_host_up(h, &redis, &o, rc);
    return port;
}

typedef struct done_count {
    int port;
    double ok, dead;
} done_count;

static bool all_done(void *arg)
{
    done_count *d = arg;

    if (test_http_get(d->port, "/metrics", body, sizeof(body)) != 200)
        return false;
    return sample(body, "wharf_tasks_total{type=\"chaos\",outcome=\"ok\"}") ==
               d->ok &&
           sample(body, "wharf_tasks_total{type=\"chaos\",outcome=\"dead\"}") ==
               d->dead;
}

/* Runs 6 ok, 2 retried once (then ok) and 3 dead on a host of its own,
 * and stops it: its stop writes the whole run into the history. Returns
 * the host's name, "<hostname>:a", into name. */
static void run_and_stop(char *name, size_t len)
{
    done_count d = {.ok = 8, .dead = 3};
    char id[32], hostname[256];

    d.port = start_host(&worker_host, "a");
    for (int i = 0; i < 6; i++) {
        snprintf(id, sizeof(id), "ok-%d", i);
        test_add_entry(rc, "chaos", id, "ok");
    }
    for (int i = 0; i < 2; i++) {
        snprintf(id, sizeof(id), "retry-%d", i);
        test_add_entry(rc, "chaos", id, "fail:1");
    }
    for (int i = 0; i < 3; i++) {
        snprintf(id, sizeof(id), "fatal-%d", i);
        test_add_entry(rc, "chaos", id, "fatal");
    }
    cr_assert(test_wait_until(all_done, &d, TEST_EVENT_MS),
              "the run never finished; see %s", worker_host.log);
    cr_assert_eq(test_host_stop(&worker_host), 0);
    cr_assert_eq(gethostname(hostname, sizeof(hostname)), 0);
    snprintf(name, len, "%s:a", hostname);
}

Test(history_console, api_sums_the_fleet_and_takes_one_host)
{
    char name[300], path[512];
    int port;

    run_and_stop(name, sizeof(name));
    port = start_host(&console_host, "b");
    cr_assert_eq(test_http_get(port, "/api/history?minutes=60&type=chaos", body,
                               sizeof(body)),
                 200, "%s", body);
    cr_expect(strstr(body, "\"total\":{\"ok\":8,\"retry\":2,\"dead\":3,"
                           "\"cancelled\":0,"),
              "%s", body);
    cr_expect(strstr(body, "\"minutes\":60"), "%s", body);
    snprintf(path, sizeof(path), "\"hosts\":[\"%s\"]", name);
    cr_expect(strstr(body, path), "want %s in %s", path, body);
    /* one host: the one that ran it, then one that did not */
    snprintf(path, sizeof(path), "/api/history?minutes=60&host=%s", name);
    cr_assert_eq(test_http_get(port, path, body, sizeof(body)), 200, "%s",
                 body);
    cr_expect(strstr(body, "\"total\":{\"ok\":8,\"retry\":2,\"dead\":3,"), "%s",
              body);
    cr_assert_eq(test_http_get(port, "/api/history?minutes=60&host=nobody:x",
                               body, sizeof(body)),
                 200, "%s", body);
    cr_expect(strstr(body, "\"total\":{\"ok\":0,\"retry\":0,\"dead\":0,"), "%s",
              body);
    /* no type named: every type of the fleet, summed */
    cr_assert_eq(
        test_http_get(port, "/api/history?minutes=60", body, sizeof(body)), 200,
        "%s", body);
    cr_expect(strstr(body, "\"total\":{\"ok\":8,\"retry\":2,\"dead\":3,"), "%s",
              body);
    cr_expect(strstr(body, "\"types\":[\"chaos\","), "%s", body);
    cr_expect_eq(
        test_http_get(port, "/api/history?minutes=2000", body, sizeof(body)),
        400, "%s", body);
    /* a fleet of many types: 24 h of all of them is too much at once */
    for (int i = 0; i < 40; i++)
        freeReplyObject(test_redis_command(rc, "SADD wharf:types t%02d", i));
    cr_expect_eq(
        test_http_get(port, "/api/history?minutes=1440", body, sizeof(body)),
        413, "%s", body);
    cr_expect(strstr(body, "choose a type or a shorter range"), "%s", body);
    cr_expect_eq(
        test_http_get(port, "/api/history?minutes=60", body, sizeof(body)), 200,
        "%s", body);
    cr_expect_eq(test_http_get(port, "/api/history?minutes=1440&type=chaos",
                               body, sizeof(body)),
                 200, "%s", body);
    freeReplyObject(test_redis_command(rc, "DEL wharf:types"));
    cr_expect_eq(
        test_http_get(port, "/api/history?minutes=1440", body, sizeof(body)),
        200, "%s", body);
}

Test(history_console, page_draws_the_history_in_chromium)
{
    char name[300], url[128], dom_path[300], shot[300];
    struct stat st;
    char *dom;
    int port;

    test_need_tools((const char *const[]){"chromium", NULL});
    run_and_stop(name, sizeof(name));
    port = start_host(&console_host, "b");
    mkdir(ARTEFACTS, 0755);
    snprintf(dom_path, sizeof(dom_path), "%s/history-dom.html", ARTEFACTS);
    snprintf(shot, sizeof(shot), "%s/history.png", ARTEFACTS);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", port);
    cr_assert_eq(test_chromium("--dump-dom", url, dom_path, 1000), 0,
                 "chromium failed; see %s.log", dom_path);
    dom = test_read_file(dom_path);
    cr_expect(strstr(dom, "<svg class=\"history\""), "no chart in %s",
              dom_path);
    /* the run's minute (or two): bars of ok, retry and dead */
    cr_expect_geq(test_count(dom, "<rect class=\"ok\" x="), 1, "%s", dom_path);
    cr_expect_geq(test_count(dom, "<rect class=\"retry\" x="), 1, "%s", dom_path);
    cr_expect_geq(test_count(dom, "<rect class=\"dead\" x="), 1, "%s", dom_path);
    cr_expect(strstr(dom, "last 1 h on all hosts: ok 8, retry 2, dead 3, "
                          "cancelled 0"),
              "history totals wrong in %s", dom_path);
    /* the host that wrote it is offered alone */
    {
        char want[700];
        snprintf(want, sizeof(want), "<option value=\"%s\">%s</option>", name,
                 name);
        cr_expect(strstr(dom, want), "want %s in %s", want, dom_path);
    }
    free(dom);
    unlink(shot);
    cr_assert_eq(test_chromium("--screenshot=", url, shot, 1000), 0,
                 "chromium screenshot failed; see %s.log", shot);
    cr_assert_eq(stat(shot, &st), 0, "no screenshot at %s", shot);
    cr_expect_gt(st.st_size, 20000, "screenshot %s is too small", shot);
}
