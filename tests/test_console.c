/* The console end to end: a real wharfd after a small mixed chaos run,
 * its page rendered by headless Chromium (the DOM checked, a screenshot
 * kept under the build folder), the JSON API's reads, paging and
 * escaping, its actions (token, POST, same origin, read-only by
 * default), `wharf top` under tmux, and the [console] manifest keys. */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdbool.h>

#include <criterion/criterion.h>

#include "chromium.h"
#include "config.h"
#include "host_process.h"
#include "redis_server.h"
#include "tools.h"
#include "wharf_cli.h"

#define TOKEN "test-token-0123456789abcdef"
#define XSS_ID "xss-<script>alert(1)</script>"
#define XSS_PAYLOAD "<script>alert(1)</script>"
#define ARTEFACTS WHARF_BINARY_DIR "/tests/console"

static test_redis redis;
static test_host host;
static redisContext *rc;
static int port;
static char body[1 << 20];

static void start_redis(void)
{
    test_suite_up(&redis, 0, &rc);
}

static void stop_all(void)
{
    test_suite_down(&redis, &rc, (test_host *const[]){&host, NULL});
}

TestSuite(console, .init = start_redis, .fini = stop_all, .timeout = 180);

/* Writes the n bytes of req to fd, then reads the whole answer into raw
 * (len bytes, NUL-terminated). Its status, or -1. */
static int exchange(int fd, const char *req, size_t n, char *raw, size_t len)
{
    size_t got = 0;
    ssize_t r;
    int status;

    raw[0] = '\0';
    if (write(fd, req, n) != (ssize_t)n)
        return -1;
    while (got < len - 1 && (r = read(fd, raw + got, len - 1 - got)) > 0)
        got += (size_t)r;
    raw[got] = '\0';
    return sscanf(raw, "HTTP/%*s %d", &status) == 1 ? status : -1;
}

/* The header lines of the last answer. */
static char answer_headers[8192];

/* One HTTP/1.0 request to 127.0.0.1:port, with Host: host_name (NULL:
 * 127.0.0.1:port), extra header lines (each ending in \r\n, or NULL)
 * and, unless NULL, a form as its body. The status (body in `body`, the
 * header lines in `answer_headers`), or -1. */
static int request_form_to(const char *host_name, const char *method,
                           const char *path, const char *headers,
                           const char *form)
{
    char own[64];
    struct sockaddr_in addr;
    struct timeval tv = {30, 0}; /* a loaded machine answers late */
    char req[16384];
    int fd, status = -1, n;
    static char raw[sizeof(body)];

    body[0] = '\0';
    answer_headers[0] = '\0';
    fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert(fd >= 0);
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_port = htons((unsigned short)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0)
        goto out;
    snprintf(own, sizeof(own), "127.0.0.1:%d", port);
    n = snprintf(
        req, sizeof(req),
        "%s %s HTTP/1.0\r\nHost: %s\r\n%s%sContent-Length: "
        "%zu\r\n\r\n%s",
        method, path, host_name ? host_name : own, headers ? headers : "",
        form ? "Content-Type: application/x-www-form-urlencoded\r\n" : "",
        form ? strlen(form) : 0, form ? form : "");
    if (n < 0 || (size_t)n >= sizeof(req))
        goto out;
    status = exchange(fd, req, (size_t)n, raw, sizeof(raw));
    if (status > 0) {
        const char *start = strstr(raw, "\r\n\r\n");
        snprintf(body, sizeof(body), "%s", start ? start + 4 : "");
        snprintf(answer_headers, sizeof(answer_headers), "%.*s",
                 start ? (int)(start - raw) + 2 : 0, raw);
    }
out:
    close(fd);
    return status;
}

static int request_to(const char *host_name, const char *method,
                      const char *path, const char *headers)
{
    return request_form_to(host_name, method, path, headers, NULL);
}

static int request(const char *method, const char *path, const char *headers)
{
    return request_to(NULL, method, path, headers);
}

/* The overview answers with the types served and Redis up. */
static bool console_serves(void *unused)
{
    (void)unused;
    return request("GET", "/api/overview", NULL) == 200 &&
           strstr(body, "\"type\":\"chaos\"") &&
           strstr(body, "\"redis_up\":true");
}

/* Starts wharfd with the console on a free port; `extra` is appended to
 * its [type.chaos] section: more keys of it, then sections (a [console]
 * one), or "". Waits until the overview answers with the types served. */
static void start_host(const char *extra)
{
    char listen[64], sections[1024];

    port = test_free_port();
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
    snprintf(sections, sizeof(sections),
             "[type.chaos]\nbackoff_base = 50ms\nmax_attempts = 3\n%s", extra);
    test_host_opts o = {.metrics_listen = listen, .extra = sections};
    test_host_up(&host, &redis, &o, rc);
    cr_assert(test_wait_until(console_serves, NULL, TEST_EVENT_MS),
              "the console never answered; see %s", host.log);
}

static bool overview_holds(void *want)
{
    return request("GET", "/api/overview", NULL) == 200 && strstr(body, want);
}

/* Polls the overview until it holds `want`; fails after timeout_ms. */
static void wait_overview(const char *want, int timeout_ms)
{
    if (!test_wait_until(overview_holds, (void *)want, timeout_ms))
        cr_assert_fail("the overview never held %s; last: %.2000s", want, body);
}

/* Enqueues one task through the CLI, as a producer would. */
static void enqueue(const char *type, const char *id, const char *payload)
{
    const char *args[] = {"enqueue", type, payload, "--id", id, NULL};
    const test_cli_run *run = test_cli(redis.url, host.dir, args);

    cr_assert_eq(run->status, 0, "wharf enqueue %s %s: %s", type, id, run->err);
}

/* The small mixed chaos run, enqueued through the CLI: 6 ok, 2 fail:1
 * (retry once, then ok), 3 fatal, one <script> payload (unknown command:
 * dead), one crash (SIGSEGV at each of its 3 attempts: dead), 4 echoes.
 * Ends when the figures say so. */
static void chaos_run(void)
{
    char id[32];

    for (int i = 1; i <= 6; i++) {
        snprintf(id, sizeof(id), "ok-%d", i);
        enqueue("chaos", id, "ok");
    }
    enqueue("chaos", "retry-1", "fail:1");
    enqueue("chaos", "retry-2", "fail:1");
    for (int i = 1; i <= 3; i++) {
        snprintf(id, sizeof(id), "fatal-%d", i);
        enqueue("chaos", id, "fatal");
    }
    enqueue("chaos", XSS_ID, XSS_PAYLOAD);
    enqueue("chaos", "crash-1", "crash");
    for (int i = 1; i <= 4; i++) {
        snprintf(id, sizeof(id), "echo-%d", i);
        enqueue("echo", id, "hello");
    }
    wait_overview("\"type\":\"chaos\",\"ready\":0,\"running\":0,"
                  "\"delayed\":0,\"dead\":5,",
                  TEST_EVENT_MS);
    wait_overview("\"totals\":{\"ok\":8,\"retry\":4,\"dead\":5,",
                  TEST_EVENT_MS);
    /* At least 14 runs that returned: 6 ok, 2 x 2 fail:1, 3 fatal, 1
     * <script>. Tasks that ran in a batch before the crash, and had not
     * finished, run again (so count twice); the crashed ones never
     * returned. */
    {
        const char *chaos = strstr(body, "{\"type\":\"chaos\"");
        const char *run =
            chaos ? strstr(chaos, "\"run_ms\":{\"window_s\":") : NULL;
        const char *n = run ? strstr(run, "\"count\":") : NULL;
        cr_assert(n, "%s", body);
        cr_expect_geq(atoi(n + 8), 14, "%s", run);
        cr_expect(strstr(run, ",\"top_ms\":10000,"), "%s", run);
    }
    wait_overview("\"type\":\"echo\",\"ready\":0,\"running\":0,"
                  "\"delayed\":0,\"dead\":0,",
                  TEST_EVENT_MS);
    /* the crashes, each a restart of its slot, with the reason */
    wait_overview("\"restarts\":{\"crash\":3,", TEST_EVENT_MS);
}

Test(console, page_in_chromium_shows_counts_dead_tasks_and_escapes)
{
    char url[256], dom_path[300], shot[300];
    struct stat st;
    char *dom;

    test_need_tools((const char *const[]){"chromium", NULL});
    start_host("");
    chaos_run();
    mkdir(ARTEFACTS, 0755);
    snprintf(dom_path, sizeof(dom_path), "%s/console-dom.html", ARTEFACTS);
    snprintf(shot, sizeof(shot), "%s/console.png", ARTEFACTS);
    /* #type=..&id=.. opens that task's detail: the <script> payload. */
    snprintf(url, sizeof(url),
             "http://127.0.0.1:%d/#type=chaos&id=xss-%%3Cscript%%3Ealert(1)"
             "%%3C%%2Fscript%%3E",
             port);
    cr_assert_eq(test_chromium("--dump-dom", url, dom_path, 1400), 0,
                 "chromium failed; see %s.log", dom_path);
    dom = test_read_file(dom_path);

    /* per type, the right counts */
    cr_expect(strstr(dom, "<tr data-type=\"chaos\"><td class=\"type\">chaos"
                          "</td><td data-field=\"ready\">0</td><td "
                          "data-field=\"running\">0</td><td data-field="
                          "\"delayed\">0</td><td data-field=\"dead\" "
                          "class=\"nonzero-dead\">5</td><td data-field="
                          "\"pressure\">off</td>"),
              "chaos row wrong in %s", dom_path);
    cr_expect(strstr(dom, "<tr data-type=\"echo\"><td class=\"type\">echo"
                          "</td><td data-field=\"ready\">0</td><td "
                          "data-field=\"running\">0</td><td data-field="
                          "\"delayed\">0</td><td data-field=\"dead\">0</td>"),
              "echo row wrong in %s", dom_path);
    cr_expect(strstr(dom, "<td data-field=\"ok_last_min\">8</td><td "
                          "data-field=\"retry_last_min\">4</td><td "
                          "data-field=\"dead_last_min\">5</td>"),
              "chaos outcomes of the last minute wrong in %s", dom_path);
    /* the charts: bars of each outcome (chaos had all three, echo ok) */
    cr_expect_geq(test_count(dom, "<rect class=\"ok\""), 2, "%s", dom_path);
    cr_expect_geq(test_count(dom, "<rect class=\"retry\""), 1, "%s", dom_path);
    cr_expect_geq(test_count(dom, "<rect class=\"dead\""), 1, "%s", dom_path);
    /* the dead set: the five dead tasks, with their errors */
    for (int i = 1; i <= 3; i++) {
        char want[64];
        snprintf(want, sizeof(want), "type=\"button\">fatal-%d</button>", i);
        cr_expect(strstr(dom, want), "%s missing from %s", want, dom_path);
    }
    cr_expect_eq(test_count(dom, "fatal: asked to fail for good"), 3);
    cr_expect(strstr(dom, "type=\"button\">crash-1</button>"), "%s", dom_path);
    cr_expect(strstr(dom, "worker crashed: SIGSEGV"), "%s", dom_path);
    cr_expect(strstr(dom, "1–5 of 5, newest first"));
    /* the worker slots, and why they restarted */
    cr_expect(strstr(dom, "data-slot=\"0\""));
    cr_expect(strstr(dom, "data-slot=\"1\""));
    cr_expect(strstr(dom, "restarts on this host: crash 3,"), "%s", dom_path);
    cr_expect(strstr(dom, "crash (signal SIGSEGV) at "), "%s", dom_path);
    /* <script> in an id, a payload and an error: text, never markup */
    cr_expect(strstr(dom, "type=\"button\">xss-&lt;script&gt;alert(1)&lt;/"
                          "script&gt;</button>"));
    cr_expect(strstr(dom, "<pre id=\"payload\" class=\"preview\">&lt;script"
                          "&gt;alert(1)&lt;/script&gt;</pre>"),
              "payload preview not escaped text in %s", dom_path);
    cr_expect(strstr(dom, "unknown chaos command '&lt;script&gt;alert(1)"
                          "&lt;/script&gt;'"));
    cr_expect(strstr(dom, "<b id=\"detail-status\" class=\"status\">dead"));
    cr_expect(strstr(dom, "<p id=\"read-only\" class=\"muted\">Read-only"),
              "no word that actions are off in %s", dom_path);
    cr_expect(strstr(dom, "<th>failed_at</th><td><pre>1"), "%s", dom_path);
    cr_expect(strstr(dom, " UTC)</pre>"), "no date beside a time in %s",
              dom_path);
    /* console.js and groups.js, the page's own two. */
    cr_expect_eq(test_count(dom, "<script"), 2,
                 "an injected script element in %s", dom_path);
    cr_expect_eq(test_count(dom, "alert(1)</script>"), 0);
    free(dom);

    /* the screenshot, kept as a build artefact */
    unlink(shot);
    cr_assert_eq(test_chromium("--screenshot=", url, shot, 1400), 0,
                 "chromium screenshot failed; see %s.log", shot);
    cr_assert_eq(stat(shot, &st), 0, "no screenshot at %s", shot);
    cr_expect_gt(st.st_size, 20000, "screenshot %s is too small", shot);

    /* read-only by default: a POST with any token is refused */
    cr_expect_eq(request("POST", "/api/replay?type=chaos&id=fatal-1",
                         "Authorization: Bearer " TOKEN "\r\n"),
                 403);
    cr_expect(strstr(body, "actions are off"), "%s", body);
    cr_expect_eq(test_redis_int(rc, "ZCARD wharf:{chaos}:dead"), 5);
}

/* A dead task written as a finish script writes one. */
static void seed_dead(const char *id, const char *payload)
{
    freeReplyObject(test_redis_command(
        rc,
        "HSET wharf:{chaos}:task:%s id %s type chaos payload %s attempt 3 "
        "enqueued_at 1700000000000 trace "
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 error "
        "boom failed_at 1700000001000 worker w:0",
        id, id, payload));
    freeReplyObject(
        test_redis_command(rc, "ZADD wharf:{chaos}:dead 1700000001000 %s", id));
}

Test(console, actions_need_post_the_token_and_the_same_origin)
{
    char same[128];

    start_host("[console]\nactions = yes\ntoken = " TOKEN "\n");
    seed_dead("replay-me", "ok");
    snprintf(same, sizeof(same),
             "Authorization: Bearer " TOKEN "\r\nOrigin: http://127.0.0.1:%d"
             "\r\n",
             port);

    /* no token, a wrong token, another origin, a GET: refused */
    cr_expect_eq(request("POST", "/api/replay?type=chaos&id=replay-me", NULL),
                 403);
    cr_expect(strstr(body, "token"), "%s", body);
    cr_expect_eq(request("POST", "/api/replay?type=chaos&id=replay-me",
                         "Authorization: Bearer not-the-token-at-all\r\n"),
                 403);
    cr_expect_eq(request("POST", "/api/replay?type=chaos&id=replay-me",
                         "Authorization: Bearer " TOKEN
                         "\r\nOrigin: http://evil.example\r\n"),
                 403);
    cr_expect(strstr(body, "cross-origin"), "%s", body);
    cr_expect_eq(request("POST", "/api/replay?type=chaos&id=replay-me",
                         "Authorization: Bearer " TOKEN
                         "\r\nReferer: http://evil.example/x\r\n"),
                 403);
    cr_expect_eq(request("GET", "/api/replay?type=chaos&id=replay-me",
                         "Authorization: Bearer " TOKEN "\r\n"),
                 405);
    cr_expect_eq(test_redis_int(rc, "ZCARD wharf:{chaos}:dead"), 1,
                 "a refused replay moved the task");

    /* with the token, from the console's own page: back to the queue */
    cr_expect_eq(request("POST", "/api/replay?type=chaos&id=replay-me", same),
                 200, "%s", body);
    cr_expect_eq(test_wait_int(rc, 1, TEST_EVENT_MS,
                               "EXISTS wharf:{chaos}:result:replay-me"),
                 1, "the replayed task never ran");
    cr_expect_eq(test_redis_int(rc, "ZCARD wharf:{chaos}:dead"), 0);
    cr_expect_eq(test_host_runs(&host, "replay-me", 1), 1,
                 "the replay did not start again at attempt 1");
    cr_expect_eq(request("GET", "/api/task?type=chaos&id=replay-me", NULL),
                 200);
    cr_expect(strstr(body, "\"status\":\"done\""), "%s", body);
    cr_expect(strstr(body, "\"preview\":\"ok attempt=1\""), "%s", body);
    /* a replay of what is not dead: 404 */
    cr_expect_eq(request("POST", "/api/replay?type=chaos&id=replay-me", same),
                 404);

    /* purge one dead task */
    seed_dead("purge-me", "fatal");
    cr_expect_eq(request("POST", "/api/purge?type=chaos&id=purge-me", same),
                 200, "%s", body);
    cr_expect_eq(test_redis_int(rc, "ZCARD wharf:{chaos}:dead"), 0);
    cr_expect_eq(test_redis_int(rc, "EXISTS wharf:{chaos}:task:purge-me"), 0);

    /* cancel a delayed task (due in a day) */
    freeReplyObject(test_redis_command(
        rc, "HSET wharf:{chaos}:task:later id later type chaos payload ok "
            "attempt 1 enqueued_at 1700000000000 trace "
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
    freeReplyObject(test_redis_command(
        rc, "ZADD wharf:{chaos}:delayed 99999999999999 later"));
    cr_expect_eq(request("GET", "/api/task?id=later", NULL), 200);
    cr_expect(strstr(body, "\"status\":\"delayed\""), "%s", body);
    cr_expect_eq(request("POST", "/api/cancel?type=chaos&id=later", same), 200,
                 "%s", body);
    cr_expect_eq(test_redis_int(rc, "ZCARD wharf:{chaos}:delayed"), 0);
    cr_expect_eq(test_redis_int(rc, "EXISTS wharf:{chaos}:task:later"), 0);
    /* cancelled before: what `wharf cancel` calls "already cancelled"
     * (exit 0), not a task that is not there */
    cr_expect_eq(request("POST", "/api/cancel?type=chaos&id=later", same), 200,
                 "%s", body);
    cr_expect(strstr(body, "\"already_cancelled\":true"), "%s", body);
    /* finished (replay-me is done) or never enqueued: nothing to cancel */
    cr_expect_eq(request("POST", "/api/cancel?type=chaos&id=replay-me", same),
                 404, "%s", body);
    cr_expect(strstr(body, "no queued, delayed or running task"), "%s", body);
    cr_expect_eq(request("POST", "/api/cancel?type=chaos&id=never-was", same),
                 404, "%s", body);
    /* hosts of another protocol: refused, naming theirs, nothing done */
    freeReplyObject(test_redis_command(
        rc, "HSET wharf:{chaos}:task:other-era id other-era type chaos "
            "payload ok attempt 1 enqueued_at 1700000000000 trace "
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
    freeReplyObject(test_redis_command(
        rc, "ZADD wharf:{chaos}:delayed 99999999999999 other-era"));
    freeReplyObject(
        test_redis_command(rc, "HSET wharf:{chaos}:policy protocol 99"));
    cr_expect_eq(request("POST", "/api/cancel?type=chaos&id=other-era", same),
                 409, "%s", body);
    cr_expect(strstr(body, "speak wharf protocol 99; this host speaks 1"), "%s",
              body);
    cr_expect_eq(test_redis_int(rc, "ZCARD wharf:{chaos}:delayed"), 1,
                 "a refused cancel removed the task");
    freeReplyObject(
        test_redis_command(rc, "HSET wharf:{chaos}:policy protocol 1"));
    cr_expect_eq(request("POST", "/api/cancel?type=chaos&id=other-era", same),
                 200, "%s", body);
    cr_expect_eq(test_redis_int(rc, "ZCARD wharf:{chaos}:delayed"), 0);
    cr_expect(test_host_log_has(&host, "console action", "replay", "replay-me",
                                NULL));

    /* pause and resume a type: the same token and origin checks */
    cr_expect_eq(request("POST", "/api/pause?type=chaos", NULL), 403, "%s",
                 body);
    cr_expect_eq(test_redis_int(rc, "EXISTS wharf:{chaos}:paused"), 0,
                 "a refused pause paused");
    cr_expect_eq(request("POST", "/api/pause?type=chaos&for=never", same), 400,
                 "%s", body);
    cr_expect(strstr(body, "for: expected a duration"), "%s", body);
    cr_expect_eq(request("POST", "/api/pause?type=chaos&for=10m", same), 200,
                 "%s", body);
    cr_expect(strstr(body, "\"done\":\"pause\",\"type\":\"chaos\","
                           "\"was\":\"PAUSED\""),
              "%s", body);
    cr_expect(strstr(body, "\"left_ms\":600000}"), "%s", body);
    {
        long long ttl = test_redis_int(rc, "PTTL wharf:{chaos}:paused");
        cr_expect(ttl > 0 && ttl <= 600000, "pause TTL %lld", ttl);
    }
    wait_overview("\"paused\":true", TEST_EVENT_MS);
    cr_expect_eq(request("POST", "/api/resume?type=chaos", same), 200, "%s",
                 body);
    cr_expect(strstr(body, "\"was\":\"RESUMED\""), "%s", body);
    cr_expect_eq(test_redis_int(rc, "EXISTS wharf:{chaos}:paused"), 0);
    cr_expect(test_host_log_has(&host, "console action", "pause", "chaos",
                                NULL));

    /* a plain form: the token, type and id as fields */
    seed_dead("form-1", "fatal");
    seed_dead("form-2", "fatal");
    cr_expect_eq(request_form_to(NULL, "POST", "/api/purge", NULL,
                                 "type=chaos&id=form-1&token=wrong-token-"
                                 "0123456789"),
                 403);
    cr_expect(strstr(body, "form field token"), "%s", body);
    cr_expect_eq(request_form_to(NULL, "POST", "/api/purge",
                                 "Origin: http://evil.example\r\n",
                                 "type=chaos&id=form-1&token=" TOKEN),
                 403);
    cr_expect(strstr(body, "cross-origin"), "%s", body);
    cr_expect_eq(test_redis_int(rc, "ZCARD wharf:{chaos}:dead"), 2);
    cr_expect_eq(request_form_to(NULL, "POST", "/api/purge", NULL,
                                 "type=chaos&id=form-1&token=" TOKEN),
                 200, "%s", body);
    /* the query names the task, the form carries the token (encoded),
     * from the console's own page */
    snprintf(same, sizeof(same), "Origin: http://127.0.0.1:%d\r\n", port);
    cr_expect_eq(request_form_to(NULL, "POST",
                                 "/api/purge?type=chaos&id=form-2", same,
                                 "token=test%2Dtoken-0123456789abcdef"),
                 200, "%s", body);
    cr_expect_eq(test_redis_int(rc, "ZCARD wharf:{chaos}:dead"), 0);
    /* a body past HTTP_BODY_MAX is refused before anything runs */
    {
        static char big[6000];
        memset(big, 'a', sizeof(big) - 1);
        memcpy(big, "token=", 6);
        cr_expect_eq(request_form_to(NULL, "POST", "/api/purge?type=chaos&id=x",
                                     NULL, big),
                     413);
    }
}

Test(console, api_reads_page_find_and_escape)
{
    char *p;

    start_host("");
    for (int i = 0; i < 5; i++) {
        char id[32];
        snprintf(id, sizeof(id), "dead-%d", i);
        seed_dead(id, i == 0 ? XSS_PAYLOAD : "fatal");
    }
    test_add_entry(rc, "chaos", "done-1", "ok");
    test_add_entry(rc, "chaos", "crash-1", "crash");
    cr_assert_eq(test_wait_int(rc, 1, TEST_EVENT_MS,
                               "EXISTS wharf:{chaos}:result:done-1"),
                 1);

    /* paging: a bounded page, newest first, with the total */
    cr_expect_eq(request("GET", "/api/dead?type=chaos&limit=2", NULL), 200);
    cr_expect(strstr(body, "\"total\":5,\"offset\":0,\"limit\":2"), "%s", body);
    cr_expect_eq(test_count(body, "\"id\":"), 2, "%s", body);
    cr_expect(strstr(body, "\"attempt\":3,\"error\":\"boom\""), "%s", body);
    cr_expect_eq(request("GET", "/api/dead?type=chaos&offset=4&limit=2", NULL),
                 200);
    cr_expect_eq(test_count(body, "\"id\":"), 1, "%s", body);
    cr_expect_eq(request("GET", "/api/dead?type=chaos&limit=1000", NULL), 400);
    cr_expect_eq(request("GET", "/api/dead?type=no%20spaces", NULL), 400);

    /* one task: every field, the payload escaped in the JSON, trace id */
    cr_expect_eq(request("GET", "/api/task?type=chaos&id=dead-0", NULL), 200);
    cr_expect(strstr(body, "\"status\":\"dead\""), "%s", body);
    cr_expect(strstr(body, "\"preview\":\"\\u003cscript\\u003ealert(1)"
                           "\\u003c/script\\u003e\""),
              "%s", body);
    cr_expect(!strstr(body, "<script"), "raw markup in the JSON: %s", body);
    cr_expect(strstr(body, "\"trace_id\":\"4bf92f3577b34da6a3ce929d0e0e4736\""),
              "%s", body);
    cr_expect(strstr(body, "\"name\":\"worker\",\"value\":\"w:0\""), "%s",
              body);

    /* find by id without a type; each status */
    cr_expect_eq(request("GET", "/api/task?id=done-1", NULL), 200);
    cr_expect(strstr(body, "\"type\":\"chaos\""), "%s", body);
    cr_expect(strstr(body, "\"status\":\"done\""), "%s", body);
    cr_expect_eq(request("GET", "/api/task?id=never-enqueued", NULL), 404);
    cr_expect(strstr(body, "\"status\":\"unknown\""), "%s", body);
    cr_expect_eq(request("GET", "/api/task?id=has%20space", NULL), 400);
    cr_expect_eq(request("GET", "/api/nothing", NULL), 404);

    /* only to its own address: a rebound name gets nothing */
    cr_expect_eq(
        request_to("evil.example:80", "GET", "/api/dead?type=chaos", NULL),
        421);
    cr_expect(!strstr(body, "dead-0"), "%s", body);
    cr_expect_eq(request_to("localhost", "GET", "/api/overview", NULL), 200);
    cr_expect_eq(request_to("[::1]:1", "GET", "/api/overview", NULL), 200);

    /* hosts say which types they serve, and slots why they restarted */
    wait_overview("\"reason\":\"crash\",\"how\":\"signal SIGSEGV\"",
                  TEST_EVENT_MS);
    wait_overview("\"hosts\":[{\"name\":", TEST_EVENT_MS);
    p = strstr(body, "\"type\":\"chaos\"");
    cr_assert(p);
    cr_expect(strstr(p, "\"hosts\":[\""), "%s", body);
    /* chaos and echo, and whatever else the plugins folder autoloads
     * (coprocess, overlap, webhook, ...), in order */
    {
        const char *types = strstr(body, "\"types\":\"chaos,");
        cr_expect(types && strstr(types, ",echo"), "%s", body);
    }
    cr_expect_gt(test_redis_int(rc, "ZCARD wharf:{chaos}:hosts"), 0);
    cr_expect_gt(test_redis_int(rc, "PTTL wharf:{chaos}:hosts"), 0);

    /* the page and its assets come from the binary */
    cr_expect_eq(request("GET", "/", NULL), 200);
    cr_expect(strstr(body, "Content-Security-Policy"));
    /* ...and says so in headers too: no framing, no sniffing, no cache */
    cr_expect(strstr(answer_headers, "\r\nContent-Security-Policy: "
                                     "default-src 'none'; script-src 'self';"),
              "%s", answer_headers);
    cr_expect(strstr(answer_headers, "frame-ancestors 'none'"), "%s",
              answer_headers);
    cr_expect(strstr(answer_headers, "\r\nX-Frame-Options: DENY\r\n"), "%s",
              answer_headers);
    cr_expect(strstr(answer_headers, "\r\nX-Content-Type-Options: nosniff"),
              "%s", answer_headers);
    cr_expect_eq(request("GET", "/api/overview", NULL), 200);
    cr_expect(strstr(answer_headers, "\r\nCache-Control: no-store\r\n"), "%s",
              answer_headers);
    cr_expect_eq(request("GET", "/console/console.js", NULL), 200);
    cr_expect(strstr(body, "textContent"));
    cr_expect_eq(request("GET", "/console/nothing.js", NULL), 404);
    /* /metrics is untouched */
    cr_expect_eq(request("GET", "/metrics", NULL), 200);
    cr_expect(strstr(body, "wharf_tasks_total"));

    /* a stopped host withdraws its presence at once */
    test_host_stop(&host);
    cr_expect_eq(test_redis_int(rc, "ZCARD wharf:{chaos}:hosts"), 0);
}

/* Captures the pane of tmux server sock's session "top" into file out
 * (and *screen, malloc'd, the last capture) every 100 ms until it holds
 * every one of the NULL-terminated strings, for up to TEST_EVENT_MS. */
static bool capture_until(const char *sock, const char *out, char **screen, ...)
{
    char cmd[600];

    snprintf(cmd, sizeof(cmd), "tmux -L %s capture-pane -p -t top >%s", sock,
             out);
    for (int64_t end = test_now_ms() + TEST_EVENT_MS; test_now_ms() < end;) {
        bool all = true;
        va_list ap;
        test_sleep_ms(100);
        if (system(cmd) != 0)
            continue;
        free(*screen);
        *screen = test_read_file(out);
        va_start(ap, screen);
        for (const char *want; (want = va_arg(ap, const char *));)
            all = all && strstr(*screen, want);
        va_end(ap);
        if (all)
            return true;
    }
    return false;
}

Test(console, top_in_tmux_shows_types_and_counts)
{
    char sock[64], cmd[1024], out[300], *screen = NULL;
    bool shown = false;

    test_need_tools((const char *const[]){"tmux", NULL});
    start_host("");
    test_add_entry(rc, "chaos", "top-ok-1", "ok");
    test_add_entry(rc, "chaos", "top-ok-2", "ok");
    test_add_entry(rc, "chaos", "top-fatal", "fatal");
    test_add_entry(rc, "echo", "top-echo", "hi");
    wait_overview("\"type\":\"chaos\",\"ready\":0,\"running\":0,"
                  "\"delayed\":0,\"dead\":1,",
                  TEST_EVENT_MS);
    /* a private tmux server, never the user's */
    snprintf(sock, sizeof(sock), "wharf-test-%d", (int)getpid());
    snprintf(out, sizeof(out), "%s/pane", host.dir);
    snprintf(cmd, sizeof(cmd),
             "tmux -L %s new-session -d -s top -x 150 -y 30 "
             "'%s/wharf top --url http://127.0.0.1:%d --interval 200ms'",
             sock, WHARF_BINARY_DIR, port);
    cr_assert_eq(system(cmd), 0);
    shown = capture_until(sock, out, &screen, "TYPE", "chaos", "OK/1m", NULL);
    cr_assert(shown, "wharf top never drew its table: %s",
              screen ? screen : "");
    {
        /* chaos: ready 0, running 0, delayed 0, dead 1, off, not paused,
         * 2 ok */
        char *row = strstr(screen, "\nchaos");
        int ready = -1, running = -1, delayed = -1, dead = -1, ok = -1;
        char pressure[8], paused[8];
        cr_assert(row, "%s", screen);
        cr_expect_eq(sscanf(row, "\nchaos %d %d %d %d %7s %7s %d", &ready,
                            &running, &delayed, &dead, pressure, paused, &ok),
                     7, "%s", screen);
        cr_expect_str_eq(paused, "no");
        cr_expect_eq(ready, 0);
        cr_expect_eq(running, 0);
        cr_expect_eq(delayed, 0);
        cr_expect_eq(dead, 1);
        cr_expect_str_eq(pressure, "off");
        cr_expect_eq(ok, 2, "%s", screen);
        cr_expect(strstr(screen, "\necho "), "%s", screen);
        cr_expect(strstr(screen, "q quit"), "%s", screen);
    }
    /* A terminal too short for the frame: the view stays in place (its
     * first line on top, nothing scrolled away) and says what is cut. */
    snprintf(cmd, sizeof(cmd), "tmux -L %s resize-window -t top -x 100 -y 9",
             sock);
    cr_assert_eq(system(cmd), 0);
    shown = capture_until(sock, out, &screen, "more lines below", NULL);
    cr_expect(shown, "no word of the cut lines: %s", screen);
    cr_expect(strncmp(screen, "wharf top  http://127.0.0.1:", 28) == 0,
              "the first line scrolled away: %s", screen);
    cr_expect_eq(test_count(screen, "\n"), 9, "%s", screen);
    /* q quits: the session ends with the command */
    snprintf(cmd, sizeof(cmd), "tmux -L %s send-keys -t top q", sock);
    cr_expect_eq(system(cmd), 0);
    snprintf(cmd, sizeof(cmd),
             "for i in $(seq 600); do tmux -L %s has-session -t top "
             "2>/dev/null || exit 0; sleep 0.1; done; exit 1",
             sock);
    cr_expect_eq(system(cmd), 0, "wharf top did not quit on q");
    snprintf(cmd, sizeof(cmd), "tmux -L %s kill-server 2>/dev/null", sock);
    (void)!system(cmd);
    free(screen);
}

Test(console, top_once_over_ipv6)
{
    char listen[64], cmd[1024], out[300], *text = NULL;
    int status = -1;

    port = test_free_port();
    snprintf(listen, sizeof(listen), "[::1]:%d", port);
    test_host_opts o = {.metrics_listen = listen};
    test_host_up(&host, &redis, &o, rc);
    snprintf(out, sizeof(out), "%s/top.txt", host.dir);
    /* The Host header names [::1]:port, in brackets, as the console
     * wants it (without them it was refused with 421). */
    snprintf(cmd, sizeof(cmd),
             "%s/wharf top --once --url 'http://[::1]:%d' >%s 2>&1",
             WHARF_BINARY_DIR, port, out);
    for (int64_t end = test_now_ms() + TEST_EVENT_MS;
         status != 0 && test_now_ms() < end;) {
        status = system(cmd);
        if (status != 0)
            test_sleep_ms(100);
    }
    text = test_read_file(out);
    cr_expect_eq(status, 0, "%s", text);
    cr_expect(strstr(text, "\nchaos "), "%s", text);
    cr_expect(strstr(text, "host "), "%s", text);
    free(text);
}

static int load_manifest(const char *text, char *err, size_t len)
{
    char path[] = "/tmp/wharf-console-ini-XXXXXX";
    int fd = mkstemp(path);
    config *cfg = NULL;
    int rc_load;

    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    rc_load = config_load_producer(path, &cfg, err, len);
    if (rc_load == 0) {
        cr_expect(cfg->console_actions);
        cr_expect_str_eq(cfg->console_token, TOKEN);
    }
    config_free(cfg);
    unlink(path);
    return rc_load;
}

Test(console, manifest_keys)
{
    char err[CONFIG_ERR_LEN];

    cr_expect_eq(load_manifest("[console]\nactions = yes\ntoken = " TOKEN "\n",
                               err, sizeof(err)),
                 0, "%s", err);
    cr_expect_eq(load_manifest("[console]\nactions = yes\n", err, sizeof(err)),
                 -1);
    cr_expect(strstr(err, ":1: [console] actions = yes needs a token"), "%s",
              err);
    cr_expect_eq(load_manifest("[console]\ntoken = short\n", err, sizeof(err)),
                 -1);
    cr_expect(strstr(err, ":2: bad value for token"), "%s", err);
    cr_expect_eq(load_manifest("[console]\nactoins = yes\n", err, sizeof(err)),
                 -1);
    cr_expect(strstr(err, "unknown key 'actoins' in [console]"), "%s", err);
}

Test(console, page_replay_button_in_chromium)
{
    char cmd[1024], log[300];

    /* node presses the page's buttons */
    test_need_tools((const char *const[]){"chromium", "node", NULL});
    start_host("[console]\nactions = yes\ntoken = " TOKEN "\n");
    seed_dead("click-me", "ok");
    snprintf(log, sizeof(log), "%s/click.log", host.dir);
    snprintf(cmd, sizeof(cmd),
             "node %s/tests/console/click-replay.mjs "
             "'http://127.0.0.1:%d/#type=chaos&id=click-me' '%s' >%s 2>&1",
             WHARF_SOURCE_DIR, port, TOKEN, log);
    if (system(cmd) != 0) {
        char *text = test_read_file(log);
        cr_assert_fail("the page's replay failed: %s", text);
    }
    cr_expect_eq(test_wait_int(rc, 1, TEST_EVENT_MS,
                               "EXISTS wharf:{chaos}:result:click-me"),
                 1, "the task replayed from the page never ran");
    cr_expect_eq(test_redis_int(rc, "ZCARD wharf:{chaos}:dead"), 0);
    cr_expect(test_host_log_has(&host, "console action", "click-me", NULL));
}

/* ---- dead set search and bulk actions (api/dead/search, api/dead/...) ---- */

#define SEARCH_EACH 350 /* records of each error below */

/* Seeds 2 x SEARCH_EACH dead records, pipelined: r-N (payload ok, error
 * "connect: connection refused", 1 attempt) and t-N (payload fatal,
 * "read: timeout", 3 attempts), their times interleaved. */
static void seed_search(void)
{
    redisReply *r;

    for (int i = 0; i < SEARCH_EACH; i++) {
        redisAppendCommand(rc,
                           "HSET wharf:{chaos}:task:r-%d id r-%d type chaos "
                           "payload ok attempt 1 enqueued_at 1700000000000 "
                           "trace 00-4bf92f3577b34da6a3ce929d0e0e4736-"
                           "00f067aa0ba902b7-01 error %s",
                           i, i, "connect: connection refused");
        redisAppendCommand(rc, "ZADD wharf:{chaos}:dead %lld r-%d",
                           1700000001000LL + 2 * i, i);
        redisAppendCommand(rc,
                           "HSET wharf:{chaos}:task:t-%d id t-%d type chaos "
                           "payload fatal attempt 3 enqueued_at "
                           "1700000000000 error %s",
                           i, i, "read: timeout");
        redisAppendCommand(rc, "ZADD wharf:{chaos}:dead %lld t-%d",
                           1700000001001LL + 2 * i, i);
    }
    for (int i = 0; i < 4 * SEARCH_EACH; i++) {
        cr_assert_eq(redisGetReply(rc, (void **)&r), REDIS_OK);
        cr_assert_neq(r->type, REDIS_REPLY_ERROR, "%s", r->str);
        freeReplyObject(r);
    }
}

/* A number field of the last answer, or -1. */
static long long body_number(const char *name)
{
    char want[64];
    const char *at;

    snprintf(want, sizeof(want), "\"%s\":", name);
    at = strstr(body, want);
    return at ? strtoll(at + strlen(want), NULL, 10) : -1;
}

/* The cursor of the last answer into buf ("" when null). */
static void body_cursor(char *buf, size_t len)
{
    const char *at = strstr(body, "\"cursor\":\"");

    buf[0] = '\0';
    if (at)
        snprintf(buf, len, "%.*s", (int)strcspn(at + 10, "\""), at + 10);
}

/* Walks a search (query: its arguments) or a bulk action (method POST)
 * to its end, summing field over the answers; the number of requests
 * into *requests. */
static long long walk_all(const char *method, const char *path,
                          const char *query, const char *headers,
                          const char *field, int *requests)
{
    char url[1024], cursor[128] = "";
    long long sum = 0;

    *requests = 0;
    do {
        snprintf(url, sizeof(url), "%s?%s%s%s", path, query,
                 cursor[0] ? "&cursor=" : "", cursor);
        cr_assert_eq(request(method, url, headers), 200, "%s: %s", url, body);
        sum += body_number(field);
        body_cursor(cursor, sizeof(cursor));
        ++*requests;
        cr_assert_lt(*requests, 100, "the walk never ended: %s", body);
    } while (cursor[0]);
    return sum;
}

Test(console, dead_search_counts_pages_and_acts_in_bounded_steps)
{
    char same[128];
    int requests;

    start_host("[console]\nactions = yes\ntoken = " TOKEN "\n");
    seed_search();
    snprintf(same, sizeof(same),
             "Authorization: Bearer " TOKEN "\r\nOrigin: http://127.0.0.1:%d"
             "\r\n",
             port);

    /* a first page of matches, newest first, and a cursor to go on */
    cr_assert_eq(request("GET",
                         "/api/dead/search?type=chaos&grep=refused&list=50",
                         NULL),
                 200, "%s", body);
    cr_expect(strstr(body, "\"matches\":[{\"id\":\"r-349\",\"died_at\":"
                           "1700000001698,\"attempt\":1,\"error\":\"connect: "
                           "connection refused\"}"),
              "%s", body);
    cr_expect_eq(body_number("total"), 2 * SEARCH_EACH, "%s", body);
    cr_expect(strstr(body, "\"cursor\":\""), "%s", body);
    cr_expect(!strstr(body, "timeout"), "%s", body);
    /* the counts, a few pages a request */
    cr_expect_eq(walk_all("GET", "/api/dead/search",
                          "type=chaos&grep=refused&list=0", NULL, "matched",
                          &requests),
                 SEARCH_EACH);
    cr_expect_geq(requests, 1);
    cr_expect_eq(walk_all("GET", "/api/dead/search",
                          "type=chaos&attempts=3&list=0", NULL, "matched",
                          &requests),
                 SEARCH_EACH);
    /* r-1, r-10..r-19, r-100..r-199 */
    cr_expect_eq(walk_all("GET", "/api/dead/search",
                          "type=chaos&id_prefix=r-1&list=0", NULL, "matched",
                          &requests),
                 111);
    cr_expect_eq(walk_all("GET", "/api/dead/search",
                          "type=chaos&since=1h&list=0", NULL, "matched",
                          &requests),
                 0, "the records died in 2023");
    cr_expect_eq(walk_all("GET", "/api/dead/search",
                          "type=chaos&before=1h&grep=timeout&list=0", NULL,
                          "matched", &requests),
                 SEARCH_EACH);
    /* bad arguments */
    cr_expect_eq(request("GET", "/api/dead/search?type=chaos&since=soon",
                         NULL),
                 400);
    cr_expect_eq(request("GET", "/api/dead/search?type=chaos&cursor=x.y",
                         NULL),
                 400);
    cr_expect_eq(request("GET",
                         "/api/dead/search?type=chaos&since=1h&before=2h",
                         NULL),
                 400);
    cr_expect(strstr(body, "before is not after since"), "%s", body);

    /* bulk actions: POST, the token, the same origin */
    cr_expect_eq(request("POST", "/api/dead/replay?type=chaos&grep=refused",
                         NULL),
                 403);
    cr_expect_eq(request("GET", "/api/dead/replay?type=chaos&grep=refused",
                         same),
                 405);
    cr_expect_eq(test_redis_int(rc, "ZCARD wharf:{chaos}:dead"),
                 2 * SEARCH_EACH);
    /* replay the refused ones, a page a request: exactly those, once */
    cr_expect_eq(walk_all("POST", "/api/dead/replay", "type=chaos&grep=refused",
                          same, "acted", &requests),
                 SEARCH_EACH);
    cr_expect_geq(requests, 2 * SEARCH_EACH / 200, "a page a request");
    cr_expect_eq(test_redis_int(rc, "ZCARD wharf:{chaos}:dead"), SEARCH_EACH);
    cr_expect_eq(walk_all("GET", "/api/dead/search",
                          "type=chaos&grep=timeout&list=0", NULL, "matched",
                          &requests),
                 SEARCH_EACH, "only the refused ones left the dead set");
    cr_expect_eq(test_wait_int(rc, 1, TEST_EVENT_MS,
                               "EXISTS wharf:{chaos}:result:r-0"),
                 1);
    cr_expect_eq(test_wait_int(rc, 1, TEST_EVENT_MS,
                               "EXISTS wharf:{chaos}:result:r-349"),
                 1);
    cr_expect_eq(test_host_runs(&host, "r-17", 1), 1, "replayed once");
    cr_expect_eq(test_host_runs(&host, "t-17", 0), 0, "not replayed");
    cr_expect(test_host_log_has(&host, "console action", "\"replay\"",
                                "matching", NULL));
    /* purge the rest */
    cr_expect_eq(walk_all("POST", "/api/dead/purge", "type=chaos&grep=timeout",
                          same, "acted", &requests),
                 SEARCH_EACH);
    cr_expect_eq(test_redis_int(rc, "ZCARD wharf:{chaos}:dead"), 0);
    cr_expect_eq(test_redis_int(rc, "EXISTS wharf:{chaos}:task:t-5"), 0);
}

Test(console, dead_search_in_chromium)
{
    char url[256], dom_path[300], shot[300];
    struct stat st;
    char *dom;

    test_need_tools((const char *const[]){"chromium", NULL});
    start_host("[console]\nactions = yes\ntoken = " TOKEN "\n");
    seed_search();
    mkdir(ARTEFACTS, 0755);
    snprintf(dom_path, sizeof(dom_path), "%s/search-dom.html", ARTEFACTS);
    snprintf(shot, sizeof(shot), "%s/search.png", ARTEFACTS);
    snprintf(url, sizeof(url),
             "http://127.0.0.1:%d/#type=chaos&grep=refused&id_prefix=r-3",
             port);
    cr_assert_eq(test_chromium("--dump-dom", url, dom_path, 1400), 0,
                 "chromium failed; see %s.log", dom_path);
    dom = test_read_file(dom_path);
    /* r-3, r-30..r-39, r-300..r-349: 61 match */
    cr_expect(strstr(dom, "<span id=\"search-count\" class=\"muted\">61 "
                          "matching</span>"),
              "no count in %s", dom_path);
    /* the first page: the newest 200 records hold r-300..r-349; the
     * older matches (r-3, r-30..r-39) are on the next */
    cr_expect(strstr(dom, "type=\"button\">r-349</button>"), "%s", dom_path);
    cr_expect(strstr(dom, "type=\"button\">r-300</button>"), "%s", dom_path);
    cr_expect(!strstr(dom, "type=\"button\">r-39</button>"), "%s", dom_path);
    cr_expect_eq(test_count(dom, "<td class=\"error\">connect: connection "
                            "refused</td>"),
                 50, "%s", dom_path);
    cr_expect(strstr(dom, "50 matches shown, newest first (more older)"),
              "%s", dom_path);
    cr_expect_eq(test_count(dom, "read: timeout"), 0, "%s", dom_path);
    cr_expect(strstr(dom, "<span id=\"bulk\">"), "bulk buttons hidden in %s",
              dom_path);
    free(dom);
    unlink(shot);
    cr_assert_eq(test_chromium("--screenshot=", url, shot, 1400), 0,
                 "chromium screenshot failed; see %s.log", shot);
    cr_assert_eq(stat(shot, &st), 0, "no screenshot at %s", shot);
    cr_expect_gt(st.st_size, 20000, "screenshot %s is too small", shot);
}

/* "replay all matching" pressed in the page: the confirmation names the
 * count, and exactly the matches go back to the queue. */
Test(console, bulk_replay_button_in_chromium)
{
    char cmd[1024], log[300], *text;

    test_need_tools((const char *const[]){"chromium", "node", NULL});
    start_host("[console]\nactions = yes\ntoken = " TOKEN "\n");
    seed_search();
    snprintf(log, sizeof(log), "%s/bulk.log", host.dir);
    snprintf(cmd, sizeof(cmd),
             "node %s/tests/console/bulk-replay.mjs "
             "'http://127.0.0.1:%d/#type=chaos&grep=refused' '%s' >%s 2>&1",
             WHARF_SOURCE_DIR, port, TOKEN, log);
    if (system(cmd) != 0) {
        text = test_read_file(log);
        cr_assert_fail("the page's bulk replay failed: %s", text);
    }
    text = test_read_file(log);
    cr_expect(strstr(text, "count: 350 matching\n"), "%s", text);
    cr_expect(strstr(text, "asked: replay 350 dead tasks of chaos matching "
                           "grep refused?\n"),
              "%s", text);
    cr_expect(strstr(text, "progress: replay: 350 of 350, done"), "%s", text);
    free(text);
    cr_expect_eq(test_redis_int(rc, "ZCARD wharf:{chaos}:dead"), SEARCH_EACH);
    cr_expect_eq(test_wait_int(rc, 1, TEST_EVENT_MS,
                               "EXISTS wharf:{chaos}:result:r-200"),
                 1, "a replayed task never ran");
    cr_expect_eq(test_host_runs(&host, "t-200", 0), 0, "not a match");
}

/* A link to a task opened while Redis does not answer: the page's first
 * ask gets the console's 503, and the page must ask again by itself once
 * Redis answers (it once asked only at load, so the task never showed).
 * The script says "busy" when the page has told of the 503; only then is
 * Redis let go, so the order is certain on any machine. */
Test(console, a_task_opened_while_redis_is_paused_shows_once_it_answers)
{
    char cmd[1024], line[256], rest[4096];
    size_t got;
    FILE *page;

    test_need_tools((const char *const[]){"chromium", "node", NULL});
    start_host("[console]\nactions = yes\ntoken = " TOKEN "\n");
    seed_dead("opened-paused", "ok");
    cr_assert_eq(kill(redis.pid, SIGSTOP), 0);
    snprintf(cmd, sizeof(cmd),
             "node %s/tests/console/click-replay.mjs "
             "'http://127.0.0.1:%d/#type=chaos&id=opened-paused' '%s' "
             "busy-first 2>&1",
             WHARF_SOURCE_DIR, port, TOKEN);
    page = popen(cmd, "r");
    cr_assert_not_null(page);
    if (!fgets(line, sizeof(line), page))
        line[0] = '\0';
    kill(redis.pid, SIGCONT);
    got = fread(rest, 1, sizeof(rest) - 1, page);
    rest[got] = '\0';
    cr_assert_eq(pclose(page), 0, "the page never showed the task: %s%s",
                 line, rest);
    cr_assert_str_eq(line, "busy\n", "the page never told of the 503");
    cr_expect_eq(test_wait_int(rc, 1, TEST_EVENT_MS,
                               "EXISTS wharf:{chaos}:result:opened-paused"),
                 1, "the task replayed from the page never ran");
}

/* ---- the supervisor's loop while the API is hammered on a slow Redis ---- */

/* Below the HTTP layer's per-address limit (8) and its mark of pressure
 * (32 connections), which would close connections of their own. */
#define HAMMER_ADDRESSES 6
#define HAMMER_PER_ADDRESS 5
#define HAMMER_CLIENTS (HAMMER_ADDRESSES * HAMMER_PER_ADDRESS)

/* What hammering clients saw: 200, 503 with Retry-After, 503 without,
 * anything else (and the last such status). */
typedef struct hammer_counts {
    int ok, busy, busy_bare, other, last_other;
} hammer_counts;

static volatile sig_atomic_t hammer_stop;

static void hammer_on_term(int sig)
{
    (void)sig;
    hammer_stop = 1;
}

/* One GET of path from source address `from` (127.0.0.N, so that the
 * clients are not held to one address's connection limit); counts the
 * answer in n. */
static void hammer_one(const char *from, const char *path, hammer_counts *n)
{
    struct sockaddr_in addr, src;
    struct timeval tv = {30, 0};
    char req[512], raw[16384];
    int fd = socket(AF_INET, SOCK_STREAM, 0), status = -1;

    raw[0] = '\0';
    if (fd < 0)
        return;
    memset(&src, 0, sizeof(src));
    src.sin_family = AF_INET;
    inet_pton(AF_INET, from, &src.sin_addr);
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_port = htons((unsigned short)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (bind(fd, (struct sockaddr *)&src, sizeof(src)) != 0 ||
        connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0)
        goto out;
    snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: 127.0.0.1:%d\r\n\r\n",
             path, port);
    status = exchange(fd, req, strlen(req), raw, sizeof(raw));
out:
    close(fd);
    if (status == 200) {
        n->ok++;
    } else if (status == 503 && strstr(raw, "\r\nRetry-After: ")) {
        n->busy++;
    } else if (status == 503) {
        n->busy_bare++;
    } else if (!hammer_stop) { /* not a read cut short by the stop */
        n->other++;
        n->last_other = status;
    }
}

/* Forks a client that asks for dead-set pages (two round trips each)
 * and a task, over and over, until SIGTERM; then it writes its counts
 * to fd. */
static pid_t hammer_start(const char *from, int fd)
{
    pid_t pid = fork();

    cr_assert(pid >= 0);
    if (pid == 0) {
        hammer_counts n = {0, 0, 0, 0, 0};
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = hammer_on_term;
        sigaction(SIGTERM, &sa, NULL);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        while (!hammer_stop) {
            hammer_one(from, "/api/dead?type=chaos", &n);
            hammer_one(from, "/api/dead?type=chaos&offset=1", &n);
            hammer_one(from, "/api/task?id=long-1", &n);
        }
        _exit(write(fd, &n, sizeof(n)) == (ssize_t)sizeof(n) ? 0 : 1);
    }
    return pid;
}

/* Forks a client that keeps the test's redis-server busy (DEBUG SLEEP
 * 0.2, back to back) until killed: every command then waits up to
 * 200 ms, the console's and the supervisor's alike. */
static pid_t slow_redis_start(void)
{
    pid_t pid = fork();

    cr_assert(pid >= 0);
    if (pid == 0) {
        redisContext *c = redisConnect("127.0.0.1", redis.port);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        while (c && !c->err) {
            redisReply *r = redisCommand(c, "DEBUG SLEEP 0.2");
            if (!r)
                break;
            freeReplyObject(r);
        }
        _exit(0);
    }
    return pid;
}

/* 30 clients ask for dead-set pages as fast as they are answered while
 * Redis makes every command wait. Without a bound on the console's share
 * of the loop, each pass of the loop served all of them one after the
 * other (some 9 s a pass), the running task's lock expired and its
 * finish came back stale. */
Test(console, leases_hold_while_the_api_is_hammered_on_a_slow_redis)
{
    static const char *const debug[] = {"--enable-debug-command", "yes", NULL};
    pid_t slow, clients[HAMMER_CLIENTS];
    hammer_counts all = {0, 0, 0, 0, 0};
    long long lock_left = LLONG_MAX;
    bool finished = false;
    int fds[2];

    /* a server of this test's own that takes DEBUG SLEEP */
    redisFree(rc);
    test_redis_stop(&redis);
    test_redis_start_with(&redis, NULL, debug);
    rc = test_redis_connect(&redis);
    /* renewed every 5/3 s: a loop held up for 5 s loses the lock */
    start_host("lock_ttl = 5s\nvisibility_timeout = 5s\n");
    test_add_entry(rc, "chaos", "long-1", "sleep:12000");
    wait_overview("\"task\":\"long-1\"", TEST_EVENT_MS);

    cr_assert_eq(pipe(fds), 0);
    slow = slow_redis_start();
    for (int i = 0; i < HAMMER_CLIENTS; i++) {
        char from[32];
        snprintf(from, sizeof(from), "127.0.0.%d", 2 + i / HAMMER_PER_ADDRESS);
        clients[i] = hammer_start(from, fds[1]);
    }
    /* The run outlives its lock_ttl twice over: only renewals made while
     * the clients hammer keep its lock alive until it finishes. */
    for (int64_t end = test_now_ms() + 60000;
         !finished && test_now_ms() < end;) {
        long long left = test_redis_int(rc, "PTTL wharf:{chaos}:lock:long-1");
        /* read after the PTTL: a lock gone because the run finished is
         * not counted */
        finished = test_redis_int(rc, "EXISTS wharf:{chaos}:result:long-1");
        if (!finished && left < lock_left)
            lock_left = left;
    }
    for (int i = 0; i < HAMMER_CLIENTS; i++)
        kill(clients[i], SIGTERM);
    for (int i = 0; i < HAMMER_CLIENTS; i++) {
        hammer_counts n;
        cr_expect_eq(read(fds[0], &n, sizeof(n)), (ssize_t)sizeof(n));
        waitpid(clients[i], NULL, 0);
        all.ok += n.ok;
        all.busy += n.busy;
        all.busy_bare += n.busy_bare;
        all.other += n.other;
        if (n.other)
            all.last_other = n.last_other;
    }
    close(fds[0]);
    close(fds[1]);
    kill(slow, SIGKILL);
    waitpid(slow, NULL, 0);

    cr_log_info("the least the lock had left while it ran: %lld ms of 5000",
                lock_left);
    cr_expect(finished, "the long task never finished ok");
    cr_expect_gt(lock_left, 0, "its lock was gone while it ran");
    cr_expect_eq(test_host_runs(&host, "long-1", 0), 1,
                 "long-1 ran more than once: its lease was lost");
    cr_expect(!test_host_log_has(&host, "\"outcome\":\"stale\"", NULL),
              "a finish came back stale: its lock was lost");
    wait_overview("\"totals\":{\"ok\":1,\"retry\":0,\"dead\":0,\"cached\":0,"
                  "\"locked\":0,\"stale\":0,\"cancelled\":0,"
                  "\"rescheduled\":0,\"paused\":0,\"limited\":0}",
                  TEST_EVENT_MS);
    /* Every request was answered: with the page, or told when to come
     * back. */
    cr_expect_gt(all.busy, 0, "no request was told to come back later");
    cr_expect_eq(all.busy_bare, 0, "a 503 without Retry-After");
    cr_expect_eq(all.other, 0, "%d answers neither 200 nor 503 (last %d)",
                 all.other, all.last_other);
    /* Redis is quick again: so is the console, by itself. */
    for (int64_t end = test_now_ms() + TEST_EVENT_MS;
         request("GET", "/api/dead?type=chaos", NULL) != 200 &&
         test_now_ms() < end;)
        test_sleep_ms(50);
    cr_expect(strstr(body, "\"total\":0"), "the console did not come back: %s",
              body);
}
