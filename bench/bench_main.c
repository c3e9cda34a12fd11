/* wharf-bench: one binary, a table of subcommands (see bench.h). */
#include "bench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct bench_command {
    const char *name;
    const char *usage;
    int (*run)(int argc, char **argv);
} bench_command;

static const bench_command commands[] = {
    {"free-port", "", bench_free_port},
    {"enqueue", "PORT TYPE N single|bulk", bench_enqueue},
    {"steady", "PORT TYPE RATE SECONDS", bench_steady},
    {"watch", "PORT STREAM N READY_FILE TIMEOUT_S", bench_watch},
    {"percentiles", "FILE", bench_percentiles},
    {"scrape", "METRICS_PORT METRIC", bench_scrape},
};

int64_t bench_mono_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t bench_real_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

long long bench_number(const char *text)
{
    char *end;
    long long n;

    errno = 0;
    n = strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || n < 0)
        return -1;
    return n;
}

redisContext *bench_connect(const char *port)
{
    long long p = bench_number(port);
    redisContext *c;

    if (p <= 0 || p > 65535) {
        fprintf(stderr, "wharf-bench: bad port '%s'\n", port);
        return NULL;
    }
    c = redisConnect("127.0.0.1", (int)p);
    if (!c || c->err) {
        fprintf(stderr, "wharf-bench: 127.0.0.1:%lld: %s\n", p,
                c ? c->errstr : "out of memory");
        redisFree(c);
        return NULL;
    }
    return c;
}

double bench_redis_cpu(redisContext *c)
{
    redisReply *r = redisCommand(c, "INFO cpu");
    double total = -1;
    const char *s, *u;

    if (r && r->type == REDIS_REPLY_STRING) {
        s = strstr(r->str, "used_cpu_sys:");
        u = strstr(r->str, "used_cpu_user:");
        if (s && u)
            total = atof(s + 13) + atof(u + 14);
    }
    if (total < 0)
        fprintf(stderr, "wharf-bench: INFO cpu: %s\n",
                r ? "unexpected reply" : c->errstr);
    freeReplyObject(r);
    return total;
}

static void usage(void)
{
    fprintf(stderr, "usage:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(stderr, "  wharf-bench %s %s\n", commands[i].name,
                commands[i].usage);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage();
        return 64;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    usage();
    return 64;
}
