/* A real wharfd for one test; see host_process.h. */
#include "host_process.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#define TEST_TRACE "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

void test_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

void test_host_manifest(test_host *h, const test_redis *r, const char *extra)
{
    test_host_manifest_redis(h, r, NULL, extra);
}

void test_host_manifest_redis(test_host *h, const test_redis *r,
                              const char *redis_keys, const char *extra)
{
    test_host_opts o = {.redis_keys = redis_keys, .extra = extra};
    test_host_manifest_opts(h, r, &o);
}

/* Writes h->manifest from h's paths and o. */
static void write_manifest(const test_host *h, const test_redis *r,
                           const test_host_opts *o)
{
    char tmp[320];
    FILE *f;

    /* Renamed into place: a reload never reads half a file. */
    snprintf(tmp, sizeof(tmp), "%s.tmp", h->manifest);
    f = fopen(tmp, "w");
    cr_assert(f != NULL, "%s: %s", tmp, strerror(errno));
    fprintf(f,
            "[host]\nplugins_dir = %s\nshutdown_timeout = 10s\n%s"
            "[redis]\nurl = %s\n%s"
            "[metrics]\nlisten = %s\n"
            "[log]\nlevel = %s\n"
            "[plugin.chaos]\npath = chaos.so\nruns_file = %s\n"
            "done_file = %s\n%s"
            "%s\n",
            o->plugins_dir ? o->plugins_dir : WHARF_PLUGIN_DIR,
            o->host_keys ? o->host_keys : "",
            o->redis_url ? o->redis_url : r->url,
            o->redis_keys ? o->redis_keys : "",
            o->metrics_listen ? o->metrics_listen : "off",
            o->log_level ? o->log_level : "debug", h->runs, h->done,
            o->chaos_keys ? o->chaos_keys : "", o->extra ? o->extra : "");
    cr_assert_eq(fclose(f), 0);
    cr_assert_eq(rename(tmp, h->manifest), 0, "%s: %s", h->manifest,
                 strerror(errno));
}

void test_host_manifest_opts(test_host *h, const test_redis *r,
                             const test_host_opts *o)
{
    memset(h, 0, sizeof(*h));
    snprintf(h->dir, sizeof(h->dir), "/tmp/wharf-test-host-XXXXXX");
    cr_assert(mkdtemp(h->dir) != NULL, "mkdtemp: %s", strerror(errno));
    snprintf(h->manifest, sizeof(h->manifest), "%s/wharf.ini", h->dir);
    snprintf(h->log, sizeof(h->log), "%s/wharfd.log", h->dir);
    snprintf(h->runs, sizeof(h->runs), "%s/runs", h->dir);
    snprintf(h->done, sizeof(h->done), "%s/done", h->dir);
    write_manifest(h, r, o);
}

void test_host_rewrite(const test_host *h, const test_redis *r,
                       const test_host_opts *o)
{
    write_manifest(h, r, o);
}

void test_host_start(test_host *h)
{
    h->pid = fork();
    cr_assert(h->pid >= 0, "fork: %s", strerror(errno));
    if (h->pid == 0) {
        int fd = open(h->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (fd >= 0)
            dup2(fd, STDERR_FILENO);
        /* make test-tsan runs these tests against a ThreadSanitizer
         * wharfd (criterion itself cannot run under TSan). */
        const char *wharfd = getenv("WHARF_TEST_WHARFD");
        if (!wharfd || !wharfd[0])
            wharfd = WHARFD_PATH;
        execl(wharfd, "wharfd", "--config", h->manifest, (char *)NULL);
        fprintf(stderr, "exec %s: %s\n", wharfd, strerror(errno));
        _exit(127);
    }
}

int test_host_stop(test_host *h)
{
    int status = 0;

    if (h->pid <= 0)
        return -1;
    kill(h->pid, SIGTERM);
    for (int64_t end = test_now_ms() + 30000; test_now_ms() < end;) {
        if (waitpid(h->pid, &status, WNOHANG) == h->pid)
            goto done;
        test_sleep_ms(10);
    }
    kill(h->pid, SIGKILL);
    waitpid(h->pid, &status, 0);
done:
    h->pid = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int test_host_wait_exit(test_host *h, int timeout_ms)
{
    int status;

    if (h->pid <= 0)
        return -1;
    for (int waited = 0; waited <= timeout_ms; waited += 10) {
        if (waitpid(h->pid, &status, WNOHANG) == h->pid) {
            h->pid = 0;
            return WIFEXITED(status) ? WEXITSTATUS(status)
                                     : 128 + WTERMSIG(status);
        }
        test_sleep_ms(10);
    }
    return -1;
}

int test_host_done(const test_host *h, const char *id)
{
    FILE *f = fopen(h->done, "r");
    char line[512];
    size_t idlen = strlen(id);
    int n = 0;

    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, id, idlen) == 0 && line[idlen] == '\n')
            n++;
    fclose(f);
    return n;
}

int test_host_runs(const test_host *h, const char *id, unsigned attempt)
{
    FILE *f = fopen(h->runs, "r");
    char line[512], want[300];
    size_t idlen = strlen(id);
    int n = 0;

    if (!f)
        return 0;
    snprintf(want, sizeof(want), "%s %u\n", id, attempt);
    while (fgets(line, sizeof(line), f)) {
        if (attempt == 0 ? (strncmp(line, id, idlen) == 0 && line[idlen] == ' ')
                         : strcmp(line, want) == 0)
            n++;
    }
    fclose(f);
    return n;
}

bool test_host_log_has(const test_host *h, ...)
{
    FILE *f = fopen(h->log, "r");
    char line[8192];
    bool found = false;

    if (!f)
        return false;
    while (!found && fgets(line, sizeof(line), f)) {
        va_list ap;
        const char *s;
        bool all = true;
        va_start(ap, h);
        while ((s = va_arg(ap, const char *)) != NULL)
            if (!strstr(line, s))
                all = false;
        va_end(ap);
        found = all;
    }
    fclose(f);
    return found;
}

int test_host_log_count(const test_host *h, const char *const *parts)
{
    FILE *f = fopen(h->log, "r");
    char line[8192];
    int n = 0;

    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f)) {
        bool all = true;
        for (size_t i = 0; parts[i] && all; i++)
            all = strstr(line, parts[i]) != NULL;
        n += all;
    }
    fclose(f);
    return n;
}

bool test_host_wait_log(const test_host *h, int timeout_ms,
                        const char *const *parts)
{
    int64_t deadline = test_now_ms() + timeout_ms;

    while (test_host_log_count(h, parts) == 0) {
        if (test_now_ms() >= deadline)
            return false;
        test_sleep_ms(10);
    }
    return true;
}

void test_fifo_make(const char *path)
{
    cr_assert(mkfifo(path, 0600) == 0, "mkfifo %s: %s", path, strerror(errno));
}

bool test_fifo_feed(const char *path, int timeout_ms)
{
    int64_t deadline = test_now_ms() + timeout_ms;

    for (;;) {
        /* ENXIO until a reader has the fifo open. */
        int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd >= 0) {
            bool ok = write(fd, "x", 1) == 1;
            close(fd);
            return ok;
        }
        if (errno != ENXIO || test_now_ms() >= deadline)
            return false;
        test_sleep_ms(10);
    }
}

int64_t test_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void test_add_entry(redisContext *c, const char *type, const char *id,
                    const char *payload)
{
    char stream[300];
    redisReply *r;

    snprintf(stream, sizeof(stream), "wharf:{%s}:stream", type);
    r = test_redis_command(c,
                           "XADD %s * id %s type %s payload %s attempt 1 "
                           "enqueued_at 1700000000000 trace %s",
                           stream, id, type, payload, TEST_TRACE);
    cr_assert(r->type == REDIS_REPLY_STRING, "XADD failed");
    freeReplyObject(r);
}

long long test_wait_int(redisContext *c, long long want, int timeout_ms,
                        const char *fmt, ...)
{
    long long v = 0;

    for (int waited = 0; waited <= timeout_ms; waited += 10) {
        va_list ap;
        redisReply *r;
        va_start(ap, fmt);
        r = redisvCommand(c, fmt, ap);
        va_end(ap);
        cr_assert(r != NULL, "redis: %s", c->errstr);
        v = r->type == REDIS_REPLY_INTEGER  ? r->integer
            : r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10)
                                            : 0;
        freeReplyObject(r);
        if (v == want)
            break;
        test_sleep_ms(10);
    }
    return v;
}

bool test_wait_until(bool (*ready)(void *arg), void *arg, int timeout_ms)
{
    int64_t deadline = test_now_ms() + timeout_ms;

    while (!ready(arg)) {
        if (test_now_ms() >= deadline)
            return ready(arg);
        test_sleep_ms(10);
    }
    return true;
}

int test_host_wait_runs(const test_host *h, const char *id, int want,
                        int timeout_ms)
{
    int64_t deadline = test_now_ms() + timeout_ms;
    int n;

    while ((n = test_host_runs(h, id, 0)) < want && test_now_ms() < deadline)
        test_sleep_ms(10);
    return n;
}

/* What test_host_launch waits for. */
typedef struct serving {
    const test_host *h;
    redisContext *rc;
} serving;

static bool host_serves(void *arg)
{
    const serving *s = arg;
    redisReply *r;
    bool group;

    if (!test_host_log_has(s->h, "\"msg\":\"worker serving\"", NULL))
        return false;
    if (!s->rc)
        return true;
    r = test_redis_command(s->rc, "XINFO GROUPS wharf:{chaos}:stream");
    group = r->type == REDIS_REPLY_ARRAY && r->elements > 0;
    freeReplyObject(r);
    return group;
}

void test_host_launch(test_host *h, redisContext *rc)
{
    serving s = {h, rc};

    test_host_start(h);
    cr_assert(test_wait_until(host_serves, &s, TEST_EVENT_MS),
              "wharfd did not start serving; see %s", h->log);
}

void test_host_up(test_host *h, const test_redis *r, const test_host_opts *o,
                  redisContext *rc)
{
    test_host_manifest_opts(h, r, o ? o : &(test_host_opts){0});
    test_host_launch(h, rc);
}

void test_suite_up(test_redis *r, int appendonly, redisContext **rc)
{
    test_redis_up(r, appendonly, rc);
}

void test_suite_down(test_redis *r, redisContext **rc, test_host *const *hosts)
{
    for (size_t i = 0; hosts && hosts[i]; i++)
        test_host_stop(hosts[i]);
    test_redis_down(r, rc);
}
