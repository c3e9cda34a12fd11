/* Producers: enqueue rate through libwharf-client, one task a call
 * (wharf_enqueue) or in bulk (wharf_enqueue_batch); and the steady
 * producer of the latency run, whose payload is its send time. */
#include "bench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <wharf/client.h>

/* Tasks per wharf_enqueue_batch call. */
#define BULK_CHUNK 1000

static wharf_client *open_client(const char *port)
{
    char url[64], err[256];
    wharf_client *c = NULL;

    snprintf(url, sizeof(url), "redis://127.0.0.1:%s/0", port);
    if (wharf_client_open(&c, url, NULL, NULL, err, sizeof(err)) !=
        WHARF_CLIENT_OK) {
        fprintf(stderr, "wharf-bench: %s\n", err);
        return NULL;
    }
    return c;
}

/* Payloads are unique per run (a time tag), so no task is a duplicate. */
typedef struct payloads {
    char text[BULK_CHUNK][40];
    int64_t tag;
} payloads;

static void payload_fill(payloads *p, size_t slot, long long i,
                         wharf_enqueue_opts *o, const char *type)
{
    int n = snprintf(p->text[slot], sizeof(p->text[slot]), "%lld-%lld",
                     (long long)p->tag, i);
    memset(o, 0, sizeof(*o));
    o->type = type;
    o->payload = p->text[slot];
    o->payload_len = (size_t)n;
}

static int enqueue_single(wharf_client *c, const char *type, long long n,
                          payloads *p)
{
    for (long long i = 0; i < n; i++) {
        wharf_enqueue_opts o;
        wharf_client_status s;
        payload_fill(p, 0, i, &o, type);
        s = wharf_enqueue(c, &o, NULL);
        if (s != WHARF_CLIENT_OK) {
            fprintf(stderr, "wharf-bench: enqueue: %s: %s\n",
                    wharf_client_status_name(s), wharf_client_errstr(c));
            return -1;
        }
    }
    return 0;
}

static int enqueue_bulk(wharf_client *c, const char *type, long long n,
                        payloads *p)
{
    static wharf_enqueue_opts tasks[BULK_CHUNK];
    static wharf_enqueue_reply replies[BULK_CHUNK];

    for (long long done = 0; done < n;) {
        size_t k = n - done > BULK_CHUNK ? BULK_CHUNK : (size_t)(n - done);
        wharf_client_status s;
        for (size_t i = 0; i < k; i++)
            payload_fill(p, i, done + (long long)i, &tasks[i], type);
        s = wharf_enqueue_batch(c, tasks, k, replies);
        for (size_t i = 0; s == WHARF_CLIENT_OK && i < k; i++)
            s = replies[i].status;
        if (s != WHARF_CLIENT_OK) {
            fprintf(stderr, "wharf-bench: enqueue batch: %s: %s\n",
                    wharf_client_status_name(s), wharf_client_errstr(c));
            return -1;
        }
        done += (long long)k;
    }
    return 0;
}

int bench_enqueue(int argc, char **argv)
{
    static payloads p;
    wharf_client *c;
    redisContext *stats;
    long long n;
    int64_t start, took;
    double cpu_start, cpu_end;
    int rc;

    if (argc != 5 || (n = bench_number(argv[3])) <= 0 ||
        (strcmp(argv[4], "single") != 0 && strcmp(argv[4], "bulk") != 0)) {
        fprintf(stderr, "usage: wharf-bench enqueue PORT TYPE N "
                        "single|bulk\n");
        return 64;
    }
    if (!(stats = bench_connect(argv[1])))
        return 1;
    if (!(c = open_client(argv[1]))) {
        redisFree(stats);
        return 1;
    }
    p.tag = bench_real_us();
    cpu_start = bench_redis_cpu(stats);
    start = bench_mono_us();
    if (strcmp(argv[4], "single") == 0)
        rc = enqueue_single(c, argv[2], n, &p);
    else
        rc = enqueue_bulk(c, argv[2], n, &p);
    took = bench_mono_us() - start;
    cpu_end = bench_redis_cpu(stats);
    wharf_client_close(c);
    redisFree(stats);
    if (rc != 0 || cpu_start < 0 || cpu_end < 0)
        return 1;
    printf("tasks %lld\nseconds %.6f\nrate %.0f\nredis_cpu_us_per_task %.2f\n",
           n, took / 1e6, took > 0 ? n * 1e6 / (double)took : 0.0,
           (cpu_end - cpu_start) * 1e6 / (double)n);
    return 0;
}

/* Sleeps until the monotonic time `at` (microseconds). */
static void sleep_until(int64_t at)
{
    struct timespec ts = {(time_t)(at / 1000000), (long)(at % 1000000) * 1000};

    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

int bench_steady(int argc, char **argv)
{
    long long rate, seconds, n;
    int64_t start, late_max = 0, tag = bench_real_us();
    wharf_client *c;
    int rc = 0;

    if (argc != 5 || (rate = bench_number(argv[3])) <= 0 ||
        (seconds = bench_number(argv[4])) <= 0) {
        fprintf(stderr, "usage: wharf-bench steady PORT TYPE RATE SECONDS\n");
        return 64;
    }
    if (!(c = open_client(argv[1])))
        return 1;
    n = rate * seconds;
    start = bench_mono_us();
    for (long long i = 0; i < n && rc == 0; i++) {
        int64_t due = start + (int64_t)(i * 1000000 / rate), late;
        char id[64], payload[32];
        wharf_enqueue_opts o;
        wharf_client_status s;

        sleep_until(due);
        late = bench_mono_us() - due;
        if (late > late_max)
            late_max = late;
        memset(&o, 0, sizeof(o));
        snprintf(id, sizeof(id), "steady-%lld-%lld", (long long)tag, i);
        o.type = argv[2];
        o.id = id;
        o.payload_len = (size_t)snprintf(payload, sizeof(payload), "%lld",
                                         (long long)bench_real_us());
        o.payload = payload;
        s = wharf_enqueue(c, &o, NULL);
        if (s != WHARF_CLIENT_OK) {
            fprintf(stderr, "wharf-bench: enqueue: %s: %s\n",
                    wharf_client_status_name(s), wharf_client_errstr(c));
            rc = 1;
        }
    }
    wharf_client_close(c);
    if (rc == 0)
        printf("sent %lld\nlate_max_us %lld\n", n, (long long)late_max);
    return rc;
}
