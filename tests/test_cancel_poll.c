/* cancel_poll.h on its own, against a real redis-server: a running task
 * is cancelled only when cancel:<id> names its own stream entry (a
 * request for an earlier run of the same id is not for this one), a key
 * of another kind is no request, and a failed check writes nothing. */
#include <stdbool.h>
#include <string.h>

#include <criterion/criterion.h>

#include "broker.h"
#include "broker_config.h"
#include "cancel_poll.h"
#include "redis_server.h"

static test_redis redis;
static redisContext *rc;
static config *cfg;
static broker b;

static void start(void)
{
    static const char *const types[] = {"alpha", "beta"};

    test_broker_up(&redis, &rc, &cfg);
    test_broker_open(&b, cfg, types, NULL, 2, "tester");
}

static void stop(void)
{
    test_broker_down(&redis, &rc, &cfg, &b);
}

TestSuite(cancel_poll, .init = start, .fini = stop, .timeout = 60);

Test(cancel_poll, only_a_request_naming_the_entry_cancels)
{
    static const char *const types[] = {"alpha", "alpha", "alpha", "beta",
                                        "alpha"};
    static const char *const ids[] = {"asked", "earlier", "never", "asked",
                                      "odd"};
    static const char *const entries[] = {"1-1", "2-2", "3-3", "4-4", "5-5"};
    bool cancelled[5] = {false, true, true, false, true};

    /* asked (alpha) names its entry; earlier names another run's; never
     * has no request; beta's asked is another type's key; odd's key is a
     * hash, not a request. */
    freeReplyObject(
        test_redis_command(rc, "SET wharf:{alpha}:cancel:asked 1-1"));
    freeReplyObject(
        test_redis_command(rc, "SET wharf:{alpha}:cancel:earlier 1-9"));
    freeReplyObject(
        test_redis_command(rc, "SET wharf:{beta}:cancel:asked 4-4"));
    freeReplyObject(
        test_redis_command(rc, "HSET wharf:{alpha}:cancel:odd entry 5-5"));
    cr_assert_eq(cancel_poll(&b, types, ids, entries, 5, cancelled), 0, "%s",
                 b.errstr);
    cr_assert(cancelled[0], "a request for its entry was missed");
    cr_assert_not(cancelled[1], "a request for an earlier run cancelled");
    cr_assert_not(cancelled[2]);
    cr_assert(cancelled[3], "beta's request was missed");
    cr_assert_not(cancelled[4], "a key of another kind cancelled");
    /* Read-only: the requests are still there for the run to act on. */
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{alpha}:cancel:asked"), 1);
}

Test(cancel_poll, nothing_to_check_sends_nothing)
{
    bool cancelled[1] = {true};

    freeReplyObject(test_redis_command(rc, "CONFIG RESETSTAT"));
    cr_assert_eq(cancel_poll(&b, NULL, NULL, NULL, 0, cancelled), 0);
    cr_assert(cancelled[0], "written with nothing to check");
    redisReply *r = test_redis_command(rc, "INFO commandstats");
    cr_assert_null(strstr(r->str, "cmdstat_get:"), "a GET was sent");
    freeReplyObject(r);
}

Test(cancel_poll, a_failed_check_writes_nothing)
{
    static const char *const types[] = {"alpha"};
    static const char *const ids[] = {"asked"};
    static const char *const entries[] = {"1-1"};
    bool cancelled[1] = {false};
    unsigned long long errors = b.redis_errors;

    freeReplyObject(
        test_redis_command(rc, "SET wharf:{alpha}:cancel:asked 1-1"));
    test_redis_stop(&redis);
    cr_assert_eq(cancel_poll(&b, types, ids, entries, 1, cancelled), -1);
    cr_assert_not(cancelled[0]);
    cr_assert_eq(strncmp(b.errstr, "cancel check: ", 14), 0, "%s", b.errstr);
    cr_assert_eq(b.redis_errors, errors + 1);
    /* Not connected at all: -1 at once. */
    broker_disconnect(&b);
    cr_assert_eq(cancel_poll(&b, types, ids, entries, 1, cancelled), -1);
    cr_assert_not(cancelled[0]);
}
