/* A private redis-server for one test: started on a free loopback port in
 * a temporary folder, killed with the test process even if it crashes. */
#ifndef WHARF_TEST_REDIS_SERVER_H
#define WHARF_TEST_REDIS_SERVER_H

#include <sys/types.h>

#include <hiredis/hiredis.h>

typedef struct test_redis {
    pid_t pid;
    int port;
    char dir[256]; /* its working folder (log, append-only file) */
    char url[64];  /* redis://127.0.0.1:PORT/0 */
    int appendonly;
    char password[64];    /* requirepass, "" for none */
    const char *args[16]; /* more redis-server arguments, NULL-ended */
} test_redis;

/* A loopback TCP port nobody listens on right now. */
int test_free_port(void);

/* Starts redis-server (--save '' and, unless appendonly, --appendonly no)
 * and waits until it answers PING. Aborts the test on failure. */
void test_redis_start(test_redis *r, int appendonly);

/* test_redis_start with more redis-server arguments (NULL-terminated,
 * e.g. "--maxmemory", "1mb", ..., at most 15; they must outlive r) and,
 * unless password is NULL, --requirepass password, which the helpers
 * here (readiness, test_redis_connect) then send as AUTH. */
void test_redis_start_with(test_redis *r, const char *password,
                           const char *const *args);

/* Starts the same server again on the same port and folder (after
 * test_redis_stop), so an append-only server comes back with its data. */
void test_redis_restart(test_redis *r);

/* Stops it (SIGTERM, then SIGKILL) and waits. Keeps dir. Accepts a
 * stopped server. */
void test_redis_stop(test_redis *r);

/* A new connection to it; aborts the test on failure. */
redisContext *test_redis_connect(const test_redis *r);

/* The fixture of a suite on its own Redis (TestSuite .init): starts r
 * (append-only if asked) and opens *rc, the test's own connection, to
 * it. */
void test_redis_up(test_redis *r, int appendonly, redisContext **rc);

/* Its .fini: closes *rc (NULL is fine) and stops r, resumed first in case
 * a test left it stopped (SIGSTOP). */
void test_redis_down(test_redis *r, redisContext **rc);

/* Runs a command and returns its reply; aborts the test on a connection
 * error. Caller frees. */
redisReply *test_redis_command(redisContext *c, const char *fmt, ...);

/* Integer value of a command's reply (integer, or a number as a string;
 * nil is 0). */
long long test_redis_int(redisContext *c, const char *fmt, ...);

/* How many keys match pattern (KEYS, counted inside Redis so a test of
 * thousands of results reads one integer). */
long long test_redis_keys(redisContext *c, const char *pattern);

#endif /* WHARF_TEST_REDIS_SERVER_H */
