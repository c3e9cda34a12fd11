/* A private redis-server for one test; see redis_server.h. */
#include "redis_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

/* A port the kernel just handed out for loopback, so no server of ours or
 * anyone else's is on it. The window before redis binds it is closed by
 * retrying on a new port if the start fails. */
int test_free_port(void)
{
    struct sockaddr_in addr;
    socklen_t len = sizeof(addr);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int port = -1;

    if (fd < 0)
        return -1;
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0 &&
        getsockname(fd, (struct sockaddr *)&addr, &len) == 0)
        port = ntohs(addr.sin_port);
    close(fd);
    return port;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static pid_t spawn(const test_redis *r)
{
    char port[16], log[300];
    const char *argv[64];
    int n = 0;
    pid_t pid;

    snprintf(port, sizeof(port), "%d", r->port);
    snprintf(log, sizeof(log), "%s/redis.log", r->dir);
    pid = fork();
    if (pid != 0)
        return pid;
    /* Child: die with the test process, whatever kills it. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
        dup2(devnull, STDIN_FILENO);
        dup2(devnull, STDOUT_FILENO);
    }
    {
        const char *fixed[] = {"redis-server",
                               "--port",
                               port,
                               "--bind",
                               "127.0.0.1",
                               "--save",
                               "",
                               "--appendonly",
                               r->appendonly ? "yes" : "no",
                               "--appendfsync",
                               "no",
                               "--dir",
                               r->dir,
                               "--logfile",
                               log,
                               "--daemonize",
                               "no"};
        for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
            argv[n++] = fixed[i];
    }
    if (r->password[0]) {
        argv[n++] = "--requirepass";
        argv[n++] = r->password;
    }
    for (size_t i = 0; r->args[i] && n < 62; i++)
        argv[n++] = r->args[i];
    argv[n] = NULL;
    execvp("redis-server", (char *const *)argv);
    fprintf(stderr, "cannot run redis-server: %s\n", strerror(errno));
    _exit(127);
}

/* Waits up to 30 s (a start on a loaded machine) for PING; 0 when it
 * answers, -1 if the server exited. */
static int wait_ready(test_redis *r)
{
    for (int i = 0; i < 3000; i++) {
        int status;
        if (waitpid(r->pid, &status, WNOHANG) == r->pid) {
            r->pid = 0;
            return -1;
        }
        redisContext *c = redisConnect("127.0.0.1", r->port);
        if (c && !c->err) {
            redisReply *reply;
            if (r->password[0])
                freeReplyObject(redisCommand(c, "AUTH %s", r->password));
            reply = redisCommand(c, "PING");
            int ok = reply && reply->type == REDIS_REPLY_STATUS;
            freeReplyObject(reply);
            redisFree(c);
            if (ok)
                return 0;
        } else {
            redisFree(c);
        }
        sleep_ms(10);
    }
    return -1;
}

void test_redis_start(test_redis *r, int appendonly)
{
    memset(r, 0, sizeof(*r));
    r->appendonly = appendonly;
    test_redis_start_with(r, NULL, NULL);
}

void test_redis_start_with(test_redis *r, const char *password,
                           const char *const *args)
{
    int appendonly = r->appendonly;

    memset(r, 0, sizeof(*r));
    r->appendonly = appendonly;
    if (password)
        snprintf(r->password, sizeof(r->password), "%s", password);
    for (size_t i = 0; args && args[i]; i++) {
        cr_assert(i + 1 < sizeof(r->args) / sizeof(r->args[0]),
                  "too many redis-server arguments");
        r->args[i] = args[i];
    }
    snprintf(r->dir, sizeof(r->dir), "/tmp/wharf-test-redis-XXXXXX");
    cr_assert(mkdtemp(r->dir) != NULL, "mkdtemp: %s", strerror(errno));
    for (int attempt = 0; attempt < 5; attempt++) {
        r->port = test_free_port();
        cr_assert(r->port > 0, "no free loopback port");
        r->pid = spawn(r);
        cr_assert(r->pid > 0, "fork: %s", strerror(errno));
        if (wait_ready(r) == 0) {
            snprintf(r->url, sizeof(r->url), "redis://127.0.0.1:%d/0", r->port);
            return;
        }
        test_redis_stop(r);
    }
    cr_assert_fail("redis-server did not start (see %s/redis.log)", r->dir);
}

void test_redis_restart(test_redis *r)
{
    r->pid = spawn(r);
    cr_assert(r->pid > 0, "fork: %s", strerror(errno));
    cr_assert(wait_ready(r) == 0, "redis-server did not restart on port %d",
              r->port);
}

void test_redis_stop(test_redis *r)
{
    int status;

    if (r->pid <= 0)
        return;
    kill(r->pid, SIGTERM);
    for (int i = 0; i < 300; i++) {
        if (waitpid(r->pid, &status, WNOHANG) == r->pid) {
            r->pid = 0;
            return;
        }
        sleep_ms(10);
    }
    kill(r->pid, SIGKILL);
    waitpid(r->pid, &status, 0);
    r->pid = 0;
}

redisContext *test_redis_connect(const test_redis *r)
{
    redisContext *c = redisConnect("127.0.0.1", r->port);
    cr_assert(c && !c->err, "connect to test redis on %d: %s", r->port,
              c ? c->errstr : "out of memory");
    if (r->password[0]) {
        redisReply *reply = redisCommand(c, "AUTH %s", r->password);
        cr_assert(reply && reply->type == REDIS_REPLY_STATUS,
                  "AUTH to test redis on %d failed", r->port);
        freeReplyObject(reply);
    }
    return c;
}

void test_redis_up(test_redis *r, int appendonly, redisContext **rc)
{
    test_redis_start(r, appendonly);
    *rc = test_redis_connect(r);
}

void test_redis_down(test_redis *r, redisContext **rc)
{
    if (*rc)
        redisFree(*rc);
    *rc = NULL;
    if (r->pid > 0)
        kill(r->pid, SIGCONT);
    test_redis_stop(r);
}

static redisReply *vcommand(redisContext *c, const char *fmt, va_list ap)
{
    redisReply *reply = redisvCommand(c, fmt, ap);
    cr_assert(reply != NULL, "redis: %s", c->errstr);
    return reply;
}

redisReply *test_redis_command(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *reply = vcommand(c, fmt, ap);
    va_end(ap);
    return reply;
}

long long test_redis_int(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    long long v = 0;

    va_start(ap, fmt);
    redisReply *reply = vcommand(c, fmt, ap);
    va_end(ap);
    if (reply->type == REDIS_REPLY_INTEGER)
        v = reply->integer;
    else if (reply->type == REDIS_REPLY_STRING)
        v = strtoll(reply->str, NULL, 10);
    else
        cr_assert(reply->type == REDIS_REPLY_NIL,
                  "unexpected reply type %d%s%s", reply->type,
                  reply->type == REDIS_REPLY_ERROR ? ": " : "",
                  reply->type == REDIS_REPLY_ERROR ? reply->str : "");
    freeReplyObject(reply);
    return v;
}

long long test_redis_keys(redisContext *c, const char *pattern)
{
    return test_redis_int(c, "EVAL %s 1 %s",
                          "return #redis.call('KEYS', KEYS[1])", pattern);
}
