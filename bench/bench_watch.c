/* The processing run's stopwatch, read from Redis alone so it needs
 * nothing from wharfd: it resets INFO commandstats, says it is ready,
 * then polls every millisecond. The first claim is the first poll that
 * finds the group's last-delivered-id moved from 0-0; the last result is
 * the first poll that finds the stream empty (the finish script stores
 * the result and deletes the entry in one atomic step) with the type's
 * delayed set empty too (a task waiting for its rate turn is there).
 * Each is seen at most one poll late. It then prints the elapsed time,
 * the Redis CPU time spent meanwhile (INFO cpu) and every command's
 * calls from INFO commandstats, less its own polls. */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define POLL_US 1000

int bench_free_port(int argc, char **argv)
{
    struct sockaddr_in addr = {.sin_family = AF_INET};
    socklen_t len = sizeof(addr);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int port = -1;

    (void)argc;
    (void)argv;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && bind(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0 &&
        getsockname(fd, (struct sockaddr *)&addr, &len) == 0)
        port = ntohs(addr.sin_port);
    if (fd >= 0)
        close(fd);
    if (port < 0) {
        fprintf(stderr, "wharf-bench: no free port: %s\n", strerror(errno));
        return 1;
    }
    printf("%d\n", port);
    return 0;
}

/* The commands this watcher sent, to take out of the counts. */
typedef struct own_counts {
    long long xlen, xinfo, info, config;
    long long zcard; /* rates: the delayed set's, once the stream is empty */
} own_counts;

static redisReply *command(redisContext *c, const char *fmt, const char *arg)
{
    redisReply *r = redisCommand(c, fmt, arg);

    if (!r || r->type == REDIS_REPLY_ERROR) {
        fprintf(stderr, "wharf-bench: %s: %s\n", fmt, r ? r->str : c->errstr);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

static double redis_cpu(redisContext *c, own_counts *own)
{
    own->info++;
    return bench_redis_cpu(c);
}

/* 1 if the group "wharf" of stream has delivered anything, 0 if not (or
 * it does not exist yet), -1 on a connection error. */
static int claimed(redisContext *c, const char *stream, own_counts *own)
{
    redisReply *r = redisCommand(c, "XINFO GROUPS %s", stream);
    int found = 0;

    own->xinfo++;
    if (!r)
        return -1;
    for (size_t g = 0; r->type == REDIS_REPLY_ARRAY && g < r->elements; g++) {
        const redisReply *f = r->element[g];
        int ours = 0;
        for (size_t i = 0; f->type == REDIS_REPLY_ARRAY && i + 1 < f->elements;
             i += 2) {
            const redisReply *k = f->element[i], *v = f->element[i + 1];
            if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
                continue;
            if (strcmp(k->str, "name") == 0)
                ours = strcmp(v->str, "wharf") == 0;
            if (ours && strcmp(k->str, "last-delivered-id") == 0)
                found = strcmp(v->str, "0-0") != 0;
        }
    }
    freeReplyObject(r);
    return found;
}

static long long stream_length(redisContext *c, const char *stream,
                               own_counts *own)
{
    redisReply *r = redisCommand(c, "XLEN %s", stream);
    long long n = -1;

    own->xlen++;
    if (r && r->type == REDIS_REPLY_INTEGER)
        n = r->integer;
    freeReplyObject(r);
    return n;
}

/* rates: the tasks in the delayed set beside stream ("...:stream" ->
 * "...:delayed"): tasks waiting for their rate turn are there, not in
 * the stream, so a run is over only once both are empty. -1 on an
 * error. */
static long long delayed_length(redisContext *c, const char *stream,
                                own_counts *own)
{
    char key[512];
    size_t len = strlen(stream);
    redisReply *r;
    long long n = -1;

    if (len < 7 || len - 7 + 9 >= sizeof(key) ||
        strcmp(stream + len - 7, ":stream") != 0)
        return 0;
    snprintf(key, sizeof(key), "%.*s:delayed", (int)(len - 7), stream);
    r = redisCommand(c, "ZCARD %s", key);
    own->zcard++;
    if (r && r->type == REDIS_REPLY_INTEGER)
        n = r->integer;
    freeReplyObject(r);
    return n;
}

static void sleep_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

/* Prints "cmd NAME CALLS USEC" per command of INFO commandstats, less
 * this watcher's own. */
static int print_commandstats(redisContext *c, const own_counts *own)
{
    redisReply *r = command(c, "INFO %s", "commandstats");
    char *line, *save = NULL;

    if (!r)
        return -1;
    for (line = strtok_r(r->str, "\r\n", &save); line;
         line = strtok_r(NULL, "\r\n", &save)) {
        char name[128];
        long long calls, usec;
        if (sscanf(line, "cmdstat_%127[^:]:calls=%lld,usec=%lld", name, &calls,
                   &usec) != 3)
            continue;
        if (strcmp(name, "info") == 0 || strcmp(name, "config|resetstat") == 0)
            continue;
        if (strcmp(name, "xlen") == 0)
            calls -= own->xlen;
        if (strcmp(name, "xinfo|groups") == 0)
            calls -= own->xinfo;
        if (strcmp(name, "zcard") == 0)
            calls -= own->zcard;
        if (calls > 0)
            printf("cmd %s %lld %lld\n", name, calls, usec);
    }
    freeReplyObject(r);
    return 0;
}

int bench_watch(int argc, char **argv)
{
    own_counts own = {0, 0, 0, 0, 0};
    redisContext *c = NULL;
    redisReply *r;
    long long n, timeout_s;
    int64_t ready, start = 0, end = 0;
    double cpu_start, cpu_end;
    int fd, rc = 1, got;

    if (argc != 6 || (n = bench_number(argv[3])) <= 0 ||
        (timeout_s = bench_number(argv[5])) <= 0) {
        fprintf(stderr, "usage: wharf-bench watch PORT STREAM N READY_FILE "
                        "TIMEOUT_S\n");
        return 64;
    }
    if (!(c = bench_connect(argv[1])))
        return 1;
    if (!(r = command(c, "CONFIG %s", "RESETSTAT")))
        goto out;
    freeReplyObject(r);
    own.config++;
    fd = open(argv[4], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || close(fd) != 0) {
        fprintf(stderr, "wharf-bench: %s: %s\n", argv[4], strerror(errno));
        goto out;
    }
    ready = bench_mono_us();
    while ((got = claimed(c, argv[2], &own)) == 0 &&
           bench_mono_us() - ready < timeout_s * 1000000)
        sleep_us(POLL_US);
    start = bench_mono_us();
    if (got != 1 || (cpu_start = redis_cpu(c, &own)) < 0) {
        fprintf(stderr, "wharf-bench: no claim on %s within %lld s\n", argv[2],
                timeout_s);
        goto out;
    }
    for (;;) {
        long long left = stream_length(c, argv[2], &own);
        if (left == 0) /* rates: and none waiting for its turn */
            left = delayed_length(c, argv[2], &own);
        got = left == 0;
        if (left <= 0 || bench_mono_us() - start >= timeout_s * 1000000)
            break;
        sleep_us(POLL_US);
    }
    end = bench_mono_us();
    if (!got || (cpu_end = redis_cpu(c, &own)) < 0) {
        fprintf(stderr, "wharf-bench: %s not drained within %lld s\n", argv[2],
                timeout_s);
        goto out;
    }
    printf("startup_s %.6f\nseconds %.6f\nrate %.0f\nredis_cpu_s %.6f\n",
           (start - ready) / 1e6, (end - start) / 1e6,
           end > start ? n * 1e6 / (double)(end - start) : 0.0,
           cpu_end - cpu_start);
    if (print_commandstats(c, &own) == 0)
        rc = 0;
out:
    redisFree(c);
    return rc;
}
