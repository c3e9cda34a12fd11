/* A real wharfd for one test: a manifest in a temporary folder pointing at
 * the test's redis-server and the built plugins, started as a child
 * process with its log in a file, stopped with SIGTERM. */
#ifndef WHARF_TEST_HOST_PROCESS_H
#define WHARF_TEST_HOST_PROCESS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <hiredis/hiredis.h>

#include "redis_server.h"

typedef struct test_host {
    pid_t pid;
    char dir[256]; /* manifest, log and runs file live here */
    char manifest[300];
    char log[300];  /* wharfd's stderr */
    char runs[300]; /* the chaos plugin's runs_file */
    char done[300]; /* the chaos plugin's done_file */
} test_host;

/* What a test's manifest differs in; NULL fields keep the defaults. */
typedef struct test_host_opts {
    const char *plugins_dir;    /* default: the built plugins */
    const char *host_keys;      /* more [host] keys */
    const char *redis_keys;     /* more [redis] keys */
    const char *redis_url;      /* default: the test server's */
    const char *extra;          /* more sections, verbatim */
    const char *metrics_listen; /* default: off */
    const char *log_level;      /* default: debug */
    const char *chaos_keys;     /* more [plugin.chaos] keys */
} test_host_opts;

/* Writes dir/wharf.ini as test_host_manifest does, with o's changes. */
void test_host_manifest_opts(test_host *h, const test_redis *r,
                             const test_host_opts *o);

/* Writes h's manifest again (same folder, runs and done files) with o's
 * changes, renamed into place: for a reload. */
void test_host_rewrite(const test_host *h, const test_redis *r,
                       const test_host_opts *o);

/* Waits up to timeout_ms for wharfd to exit by itself; returns its exit
 * code (or 128 + signal), or -1 if it still runs. */
int test_host_wait_exit(test_host *h, int timeout_ms);

/* Lines "<id>" in the done file: how often the task completed. */
int test_host_done(const test_host *h, const char *id);

/* Writes dir/wharf.ini: [host] plugins_dir = the built plugins, [redis]
 * url = r's, [log] level = debug, [plugin.chaos] with runs_file, then
 * `extra` (more sections or keys; may be NULL) verbatim. */
void test_host_manifest(test_host *h, const test_redis *r, const char *extra);

/* test_host_manifest with more keys for the [redis] section (sections
 * may not repeat in a manifest). */
void test_host_manifest_redis(test_host *h, const test_redis *r,
                              const char *redis_keys, const char *extra);

/* Starts wharfd --config dir/wharf.ini; aborts the test on failure. */
void test_host_start(test_host *h);

/* SIGTERM, then waits up to 30 s (a loaded machine's drain); returns the exit
 * code (or 128 + the signal). Accepts a host that is not running (returns -1).
 */
int test_host_stop(test_host *h);

/* Lines of the runs file that are exactly "<id> <attempt>"; attempt 0
 * counts every line of that id. */
int test_host_runs(const test_host *h, const char *id, unsigned attempt);

/* True if wharfd's log has a line containing every one of the given
 * NULL-terminated substrings. */
bool test_host_log_has(const test_host *h, ...);

/* XADDs a well-formed entry (attempt 1, a fixed trace) to type's stream
 * under prefix "wharf"; returns nothing, aborts on error. */
void test_add_entry(redisContext *c, const char *type, const char *id,
                    const char *payload);

/* Polls until the integer of fmt... equals want, for up to timeout_ms;
 * returns the last value seen. */
long long test_wait_int(redisContext *c, long long want, int timeout_ms,
                        const char *fmt, ...);

/* Lines of wharfd's log that contain every one of the NULL-terminated
 * substrings in parts. */
int test_host_log_count(const test_host *h, const char *const *parts);

/* Waits up to timeout_ms for a line of wharfd's log that contains every
 * one of parts (NULL-terminated); true when there is one. */
bool test_host_wait_log(const test_host *h, int timeout_ms,
                        const char *const *parts);

/* How long a test waits for an event it expects (a result, a log line,
 * an exit): a deadline, not a delay, so it costs nothing when the event
 * comes, and generous enough for a 2-core machine under stress-ng --cpu 4,
 * where a start or a run can take many times its unloaded time. */
#define TEST_EVENT_MS 60000

/* Makes a fifo at path for a chaos "read:PATH" task, which then runs
 * until test_fifo_feed: a task held by an event, not by a sleep a loaded
 * machine can outlast. Aborts the test on failure. */
void test_fifo_make(const char *path);

/* Writes one byte to the fifo at path as soon as a reader has it open,
 * waiting up to timeout_ms for one; true when written. */
bool test_fifo_feed(const char *path, int timeout_ms);

/* Polls ready(arg) every 10 ms until it is true or timeout_ms have
 * passed; true when it became so. The one polling loop of the suite: a
 * test waits on the event it means (a key, a log line, a file, a pid
 * gone) through this, never through a sleep of its own. ready may assert
 * (it then ends the test). */
bool test_wait_until(bool (*ready)(void *arg), void *arg, int timeout_ms);

/* Waits up to timeout_ms for at least want lines of h's runs file for id
 * (any attempt); returns the count seen last. */
int test_host_wait_runs(const test_host *h, const char *id, int want,
                        int timeout_ms);

/* The sequence every host test starts with: writes h's manifest (r, o),
 * starts wharfd and waits up to TEST_EVENT_MS until it serves, that is
 * until a worker has logged "worker serving" and, when rc is not NULL,
 * the chaos stream's group exists (the harness's manifest always serves
 * chaos). Aborts the test, naming h's log, if it does not. */
void test_host_up(test_host *h, const test_redis *r, const test_host_opts *o,
                  redisContext *rc);

/* test_host_up for a host whose manifest is already written (h->manifest,
 * by test_host_manifest* or by the test itself). */
void test_host_launch(test_host *h, redisContext *rc);

/* The suite fixture of the host tests (TestSuite .init): test_redis_up
 * (starts r, append-only if asked, and opens *rc to it). */
void test_suite_up(test_redis *r, int appendonly, redisContext **rc);

/* Its .fini: stops every host of hosts (NULL-terminated; those not
 * running are passed over), then test_redis_down (closes *rc and stops
 * r, resumed first in case a test left it stopped). */
void test_suite_down(test_redis *r, redisContext **rc, test_host *const *hosts);

/* Sleeps ms milliseconds: for the support's own polling, and for a test
 * that lets time pass on purpose (to show that something does not
 * happen), never to wait for an event. */
void test_sleep_ms(long ms);

/* Milliseconds of a monotonic clock, for deadlines. */
int64_t test_now_ms(void);

#endif /* WHARF_TEST_HOST_PROCESS_H */
