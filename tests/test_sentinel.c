/* sentinel.h on its own, against real redis-sentinel processes (the
 * test support's Sentinel set) and plain redis-servers: the master
 * named, sentinels that do not answer passed over, the three failures
 * told apart with their exact words (none answered; a master no
 * sentinel knows, a configuration error; a seed that is no sentinel),
 * never a password in them, and the candidates after a switchover. */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "redis_cluster.h"
#include "redis_server.h"
#include "redis_url.h"
#include "sentinel.h"

static test_sentinels sentinels;
static test_redis plain;

static void stop(void)
{
    test_sentinels_stop(&sentinels);
    test_redis_stop(&plain);
}

TestSuite(sentinel, .fini = stop, .timeout = 180);

static redis_url url_of(const char *text)
{
    redis_url u;
    char err[300];

    cr_assert_eq(redis_url_parse(text, &u, err, sizeof(err)), 0, "%s", err);
    return u;
}

Test(sentinel, names_the_master_past_a_sentinel_that_is_down)
{
    char text[600], host[256] = "", err[600] = "";
    int port = 0, dead = test_free_port();

    test_sentinels_start(&sentinels);
    /* The first seed listens nowhere: the next one answers. */
    snprintf(text, sizeof(text), "redis+sentinel://:secret@127.0.0.1:%d,%s",
             dead, sentinels.url + strlen("redis+sentinel://"));
    redis_url u = url_of(text);
    error_kind kind = ERROR_KIND_NONE;
    cr_assert_eq(sentinel_master(&u, 2000, host, sizeof(host), &port, &kind,
                                 err, sizeof(err)),
                 0, "%s", err);
    cr_assert_eq(kind, ERROR_KIND_NONE, "the kind was written on success");
    cr_assert_str_eq(host, "127.0.0.1");
    cr_assert_eq(port, sentinels.primary.port);

    /* The master's candidates: its replica, never itself. */
    sentinel_replica out[8];
    size_t n = sentinel_candidates(&u, 2000, host, port, out, 8);
    cr_assert_eq(n, 1, "%zu candidates", n);
    cr_assert_str_eq(out[0].host, "127.0.0.1");
    cr_assert_eq(out[0].port, sentinels.replica.port);
    cr_assert_eq(sentinel_candidates(&u, 2000, host, port, out, 0), 0,
                 "max 0 wrote");

    /* A master no sentinel knows: a configuration error, -2. */
    snprintf(text, sizeof(text), "%s", sentinels.url);
    char *slash = strrchr(text, '/');
    snprintf(slash, sizeof(text) - (size_t)(slash - text), "/nosuch");
    u = url_of(text);
    char want[800], where[600];
    redis_url_describe(&u, where, sizeof(where));
    port = 7;
    cr_assert_eq(sentinel_master(&u, 2000, host, sizeof(host), &port, &kind,
                                 err, sizeof(err)),
                 -2, "%s", err);
    cr_assert_eq(kind, ERROR_KIND_SETUP);
    snprintf(want, sizeof(want),
             "%s: no sentinel of 3 that answered knows a master named "
             "'nosuch' (see SENTINEL MASTERS)",
             where);
    cr_assert_str_eq(err, want);
    cr_assert_eq(port, 7, "the port was written on a failure");
}

Test(sentinel, no_sentinel_answering_is_told_with_the_last_reason)
{
    char text[300], want[600], host[256], err[600];
    int a = test_free_port(), b = test_free_port(), port = 7;

    snprintf(text, sizeof(text),
             "redis+sentinel://:secret@127.0.0.1:%d,127.0.0.1:%d/wharf", a, b);
    redis_url u = url_of(text);
    error_kind kind = ERROR_KIND_NONE;
    cr_assert_eq(sentinel_master(&u, 2000, host, sizeof(host), &port, &kind,
                                 err, sizeof(err)),
                 -1);
    cr_assert_eq(kind, ERROR_KIND_UNAVAILABLE);
    snprintf(want, sizeof(want),
             "redis+sentinel://127.0.0.1:%d,127.0.0.1:%d/wharf/0: no sentinel "
             "answered (tried 2): 127.0.0.1:%d: Connection refused",
             a, b, b);
    cr_assert_str_eq(err, want);
    cr_assert_null(strstr(err, "secret"));
    cr_assert_eq(port, 7);
    sentinel_replica out[4];
    cr_assert_eq(sentinel_candidates(&u, 2000, "127.0.0.1", 1, out, 4), 0);
}

Test(sentinel, a_plain_redis_is_no_sentinel)
{
    char text[300], want[600], host[256], err[600];
    int port = 7;

    test_redis_start(&plain, 0);
    snprintf(text, sizeof(text), "redis+sentinel://127.0.0.1:%d/wharf",
             plain.port);
    redis_url u = url_of(text);
    /* No kind asked for: NULL is fine. */
    cr_assert_eq(sentinel_master(&u, 2000, host, sizeof(host), &port, NULL, err,
                                 sizeof(err)),
                 -1);
    snprintf(want, sizeof(want),
             "redis+sentinel://127.0.0.1:%d/wharf/0: no sentinel names "
             "master 'wharf' (tried 1): 127.0.0.1:%d: ERR unknown command",
             plain.port, plain.port);
    cr_assert_eq(strncmp(err, want, strlen(want)), 0, "%s", err);
    size_t n = strlen(err);
    cr_assert(n > 20 && strcmp(err + n - 20, " (is it a sentinel?)") == 0, "%s",
              err);
}
