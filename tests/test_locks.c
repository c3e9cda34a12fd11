/* wharf locks release and list against a private redis-server: a lock
 * held by a live run (its entry pending, idle for less than the type's
 * visibility_timeout) is refused with exit 75; one whose holder went
 * silent, or with --force, is released; the listing shows each lock's
 * fence, time left and owner. The hosts publish visibility_timeout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "broker.h"
#include "redis_server.h"
#include "wharf_cli.h"
#include "node_scripts.h"

#define TRACE "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
#define CONSUMER "host-a:default:0"

static test_redis redis;
static redisContext *rc;

static void start(void)
{
    test_redis_up(&redis, 0, &rc);
}

static void stop(void)
{
    test_redis_down(&redis, &rc);
}

TestSuite(locks, .init = start, .fini = stop, .timeout = 60);

typedef test_cli_run run;

/* wharf --redis URL a b ... (NULL-terminated). */
#define wharf(...)                                                             \
    test_cli(redis.url, redis.dir, (const char *const[]){__VA_ARGS__, NULL})

/* Task id of type orders, pending under CONSUMER, with its lock. */
static void running(const char *id)
{
    freeReplyObject(test_redis_command(
        rc, "XGROUP CREATE wharf:{orders}:stream wharf 0 MKSTREAM"));
    freeReplyObject(test_redis_command(
        rc,
        "XADD wharf:{orders}:stream * id %s type orders payload p attempt 1 "
        "enqueued_at 1700000000000 trace %s",
        id, TRACE));
    freeReplyObject(
        test_redis_command(rc, "XREADGROUP GROUP wharf " CONSUMER
                               " COUNT 100 STREAMS wharf:{orders}:stream >"));
    freeReplyObject(test_redis_command(
        rc, "SET wharf:{orders}:lock:%s 12-0123456789abcdef PX 60000", id));
}

Test(locks, a_lock_held_by_a_live_run_is_not_released)
{
    const run *r;

    running("o-1");
    r = wharf("locks", "release", "orders", "o-1");
    cr_assert_eq(r->status, 75, "exit %d: %s", r->status, r->err);
    cr_assert(strstr(r->err,
                     "lock of orders/o-1 is held by a live run on " CONSUMER
                     " (idle "),
              "%s", r->err);
    cr_assert(strstr(r->err, " ms); it is released when that run ends\n"), "%s",
              r->err);
    cr_assert_str_eq(r->out, "");
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{orders}:lock:o-1"), 1);

    /* --force deletes it anyway. */
    r = wharf("locks", "release", "orders", "o-1", "--force");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_str_eq(r->out, "released o-1\n");
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{orders}:lock:o-1"), 0);
}

Test(locks, a_lock_whose_run_went_silent_is_released)
{
    const run *r;

    running("o-2");
    /* The hosts published a visibility_timeout of 100 ms; the entry has
     * been idle longer. */
    freeReplyObject(test_redis_command(
        rc, "HSET wharf:{orders}:policy visibility_timeout 100"));
    usleep(200 * 1000);
    r = wharf("locks", "release", "orders", "o-2");
    cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
    cr_assert_str_eq(r->out, "released o-2\n");
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{orders}:lock:o-2"), 0);
}

Test(locks, a_lock_without_a_pending_entry_is_released)
{
    const run *r;

    /* Another id is running; o-3 has a lock but no entry pending. */
    running("o-other");
    freeReplyObject(test_redis_command(
        rc, "SET wharf:{orders}:lock:o-3 9-0123456789abcdef PX 60000"));
    r = wharf("locks", "release", "orders", "o-3");
    cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{orders}:lock:o-3"), 0);
    /* No stream at all. */
    freeReplyObject(test_redis_command(rc, "SET wharf:{none}:lock:x 1"));
    r = wharf("locks", "release", "none", "x");
    cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
    r = wharf("locks", "release", "none", "x");
    cr_assert_eq(r->status, 1);
    cr_assert(strstr(r->err, "no lock on task 'x' of type 'none'"), "%s",
              r->err);
}

Test(locks, list_shows_fence_time_left_and_owner)
{
    const run *r;
    long long ttl;
    char owner[32];

    running("o-4");
    r = wharf("locks", "list", "orders");
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_eq(sscanf(r->out, "o-4  12  %lld  %31s\n", &ttl, owner), 2, "%s",
                 r->out);
    cr_assert(ttl > 50000 && ttl <= 60000, "%lld", ttl);
    cr_assert_str_eq(owner, "0123456789abcdef");
}

/* The release reads the visibility_timeout the hosts publish. */
Test(locks, hosts_publish_visibility_timeout)
{
    static const char *const types[] = {"orders"};
    char path[300], err[CONFIG_ERR_LEN];
    config *cfg = NULL;
    broker b;
    FILE *f;

    snprintf(path, sizeof(path), "%s/wharf.ini", redis.dir);
    f = fopen(path, "w");
    cr_assert(f != NULL);
    fprintf(f,
            "[redis]\nurl = %s\n[metrics]\nlisten = off\n"
            "[defaults]\nvisibility_timeout = 90s\n",
            redis.url);
    fclose(f);
    cr_assert_eq(config_load_producer(path, &cfg, err, sizeof(err)), 0, "%s",
                 err);
    const policy *policies[] = {config_policy(cfg, "orders")};
    node_scripts_check();
    cr_assert_eq(broker_init(&b, cfg, types, policies, 1, CONSUMER), 0, "%s",
                 b.errstr);
    cr_assert_eq(broker_connect(&b), 0, "%s", b.errstr);
    cr_assert_eq(
        test_redis_int(rc, "HGET wharf:{orders}:policy visibility_timeout"),
        90000);
    broker_destroy(&b);
    config_free(cfg);
}
