/* wharf-bench: the small C helpers of `make bench` (bench/run.sh drives
 * them). Each subcommand prints "key value" lines on stdout for the
 * script to read, and one line on stderr with exit 1 when it fails. */
#ifndef WHARF_BENCH_H
#define WHARF_BENCH_H

#include <stdint.h>

#include <hiredis/hiredis.h>

/* One subcommand: argv[0] is its name. Returns the exit status. */
int bench_enqueue(int argc, char **argv);
int bench_steady(int argc, char **argv);
int bench_watch(int argc, char **argv);
int bench_free_port(int argc, char **argv);
int bench_percentiles(int argc, char **argv);
int bench_scrape(int argc, char **argv);

/* Microseconds of the monotonic clock (intervals) and of the realtime
 * clock (times compared across processes). */
int64_t bench_mono_us(void);
int64_t bench_real_us(void);

/* A number from text, or -1 if it is not a non-negative integer. */
long long bench_number(const char *text);

/* A hiredis connection to 127.0.0.1:port, or NULL with a message on
 * stderr. Caller frees with redisFree. */
redisContext *bench_connect(const char *port);

/* used_cpu_sys + used_cpu_user of the server (INFO cpu), in seconds;
 * -1 with a message on stderr. */
double bench_redis_cpu(redisContext *c);

#endif /* WHARF_BENCH_H */
