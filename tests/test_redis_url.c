/* redis_url.h on its own: every accepted form of a Redis address and
 * what it parses to, every refused one with its exact reason, the
 * descriptions (never a password), the one-line explanations of error
 * replies, and connecting (AUTH, SELECT, PING, timeouts, close-on-exec)
 * against a real redis-server. Parsing needs no Redis. And endpoint.h,
 * the host:port parser under it, in each of its forms. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "endpoint.h"
#include "redis_server.h"
#include "redis_url.h"

/* Parses text, which must be accepted. */
static redis_url parsed(const char *text)
{
    redis_url u;
    char err[300] = "";

    cr_assert_eq(redis_url_parse(text, &u, err, sizeof(err)), 0, "%s: %s", text,
                 err);
    return u;
}

Test(redis_url, tcp_forms)
{
    redis_url u = parsed("redis://127.0.0.1");
    cr_assert_eq(u.kind, REDIS_URL_TCP);
    cr_assert_str_eq(u.host, "127.0.0.1");
    cr_assert_eq(u.port, 6379);
    cr_assert_eq(u.db, 0);
    cr_assert_str_eq(u.path, "");
    cr_assert_str_eq(u.user, "");
    cr_assert_str_eq(u.password, "");
    cr_assert_eq(u.n_seeds, 0);

    u = parsed("redis://cache-1.example.com:6380/2");
    cr_assert_str_eq(u.host, "cache-1.example.com");
    cr_assert_eq(u.port, 6380);
    cr_assert_eq(u.db, 2);

    u = parsed("redis://my_host/");
    cr_assert_str_eq(u.host, "my_host");
    cr_assert_eq(u.db, 0, "a lone '/' is database 0");

    u = parsed("redis://[::1]:7000/3");
    cr_assert_str_eq(u.host, "::1");
    cr_assert_eq(u.port, 7000);
    cr_assert_eq(u.db, 3);

    u = parsed("redis://[fe80::1]");
    cr_assert_str_eq(u.host, "fe80::1");
    cr_assert_eq(u.port, 6379);

    u = parsed("redis://h:1");
    cr_assert_eq(u.port, 1);
    u = parsed("redis://h:65535/2147483647");
    cr_assert_eq(u.port, 65535);
    cr_assert_eq(u.db, 2147483647);
}

Test(redis_url, userinfo_forms)
{
    redis_url u = parsed("redis://:secret@h");
    cr_assert_str_eq(u.user, "");
    cr_assert_str_eq(u.password, "secret");
    cr_assert_str_eq(u.host, "h");

    /* A password alone, as redis-cli takes it. */
    u = parsed("redis://secret@h:7000");
    cr_assert_str_eq(u.user, "");
    cr_assert_str_eq(u.password, "secret");
    cr_assert_eq(u.port, 7000);

    u = parsed("redis://alice:pw@h/1");
    cr_assert_str_eq(u.user, "alice");
    cr_assert_str_eq(u.password, "pw");
    cr_assert_eq(u.db, 1);

    /* RFC 3986 percent-encoding, either case of hex. */
    u = parsed("redis://al%69ce:p%40ss%3a%2Fw%25rd@h");
    cr_assert_str_eq(u.user, "alice");
    cr_assert_str_eq(u.password, "p@ss:/w%rd");

    /* An '@' after the path is no userinfo: it is a bad database. */
    redis_url v;
    char err[300];
    cr_assert_eq(redis_url_parse("redis://h/1@x", &v, err, sizeof(err)), -1);
    cr_assert_str_eq(err, "bad database: expected a number after the '/'");
}

Test(redis_url, unix_forms)
{
    redis_url u = parsed("unix:///run/redis/redis.sock");
    cr_assert_eq(u.kind, REDIS_URL_UNIX);
    cr_assert_str_eq(u.path, "/run/redis/redis.sock");
    cr_assert_str_eq(u.host, "");
    cr_assert_eq(u.db, 0);

    u = parsed("unix:///tmp/r.sock?db=4");
    cr_assert_str_eq(u.path, "/tmp/r.sock");
    cr_assert_eq(u.db, 4);
}

Test(redis_url, cluster_forms)
{
    redis_url u = parsed("redis+cluster://a:7000,b,[::1]:7002");
    cr_assert_eq(u.kind, REDIS_URL_CLUSTER);
    cr_assert_eq(u.n_seeds, 3);
    cr_assert_str_eq(u.seeds[0].host, "a");
    cr_assert_eq(u.seeds[0].port, 7000);
    cr_assert_str_eq(u.seeds[1].host, "b");
    cr_assert_eq(u.seeds[1].port, 6379, "a seed's default port is 6379");
    cr_assert_str_eq(u.seeds[2].host, "::1");
    cr_assert_eq(u.seeds[2].port, 7002);
    cr_assert_str_eq(u.host, "a", "the first seed is the host too");
    cr_assert_eq(u.port, 7000);

    u = parsed("redis+cluster://u:p@a:1/0");
    cr_assert_str_eq(u.user, "u");
    cr_assert_str_eq(u.password, "p");
    cr_assert_eq(u.db, 0);

    /* As many seeds as there is room for. */
    char text[600] = "redis+cluster://";
    for (int i = 0; i < REDIS_URL_MAX_SEEDS; i++)
        snprintf(text + strlen(text), sizeof(text) - strlen(text), "%sn%d:%d",
                 i ? "," : "", i, 7000 + i);
    u = parsed(text);
    cr_assert_eq(u.n_seeds, REDIS_URL_MAX_SEEDS);
    cr_assert_str_eq(u.seeds[REDIS_URL_MAX_SEEDS - 1].host, "n15");
    cr_assert_eq(u.seeds[REDIS_URL_MAX_SEEDS - 1].port, 7015);
}

Test(redis_url, sentinel_forms)
{
    redis_url u = parsed("redis+sentinel://s1,s2:26380/my-master.1_a");
    cr_assert_eq(u.kind, REDIS_URL_SENTINEL);
    cr_assert_eq(u.n_seeds, 2);
    cr_assert_eq(u.seeds[0].port, 26379, "a sentinel's default is 26379");
    cr_assert_eq(u.seeds[1].port, 26380);
    cr_assert_str_eq(u.master, "my-master.1_a");
    cr_assert_eq(u.db, 0);

    u = parsed("redis+sentinel://:pw@s1:5000/m/3");
    cr_assert_str_eq(u.password, "pw", "the master's password");
    cr_assert_str_eq(u.master, "m");
    cr_assert_eq(u.db, 3);
}

/* Every refused form, with the reason alone (the caller names the URL). */
Test(redis_url, refused_forms_say_why)
{
    static const char scheme[] =
        "expected redis://[user[:password]@]host[:port][/db], "
        "unix:///absolute/path, redis+cluster://host:port[,...] or "
        "redis+sentinel://host:port[,...]/MASTER (rediss for TLS)";
    static const char unix_path[] = "a unix socket URL needs an absolute "
                                    "path (unix:///path/to/redis.sock[?db=N])";
    static const char no_master[] =
        "expected the master's name after the sentinels "
        "(redis+sentinel://host:port[,host:port...]/MASTER[/db])";
    static const char host[] = "expected a host name or address";
    static const char port[] = "bad port: expected 1..65535";
    static const char db[] = "bad database: expected a number after the '/'";
    static const char pct[] = "bad percent-encoding in the %s: '%%' must be "
                              "followed by two hex digits (write '%%' as %%25)";
    static const struct {
        const char *url, *why;
    } bad[] = {
        {"", scheme},
        {"http://h", scheme},
        {"REDIS://h", scheme},
        {"redis:/h", scheme},
        {"redisss://h", scheme},
        {"unix://", unix_path},
        {"unix://relative.sock", unix_path},
        {"unix://?db=1", unix_path},
        {"unix:///s?db=", "expected ?db=N after the socket path"},
        {"unix:///s?db=x", "expected ?db=N after the socket path"},
        {"unix:///s?db=-1", "expected ?db=N after the socket path"},
        {"unix:///s?database=1", "expected ?db=N after the socket path"},
        {"redis://", host},
        {"redis:///0", host},
        {"redis://:6379", host},
        {"redis://bad host", host},
        {"redis://a..b", host},
        {"redis://.a", host},
        {"redis://a/b/c", db},
        {"redis://256.0.0.1", host},
        {"redis://1.2.3", host},
        {"redis://h*st", host},
        {"redis://[::g]:1", host},
        {"redis://[::1]x", host},
        {"redis://[::1", "bad IPv6 address: expected [address]"},
        {"redis://h:", port},
        {"redis://h:0", port},
        {"redis://h:65536", port},
        {"redis://h:-1", port},
        {"redis://h:63x9", port},
        {"redis://h:99999999999999999999999", port},
        {"redis://h/x", db},
        {"redis://h/-1", db},
        {"redis://h/2147483648", db},
        {"redis+cluster://", "expected host:port[,host:port...]"},
        {"redis+cluster:///0", "expected host:port[,host:port...]"},
        {"redis+cluster://a,,b", "an empty address in the list"},
        {"redis+cluster://a,", "an empty address in the list"},
        {"redis+cluster://,a", "an empty address in the list"},
        {"redis+cluster://a:0", port},
        {"redis+cluster://a:1/1", "a Redis Cluster has database 0 only"},
        {"redis+cluster://a:1/x", db},
        {"redis+sentinel://s1", no_master},
        {"redis+sentinel://s1/", no_master},
        {"redis+sentinel://s1//0", no_master},
        {"redis+sentinel://", "expected host:port[,host:port...]"},
        {"redis+sentinel://s1/ma$ter",
         "bad master name: use letters, digits, '.', '_', '-'"},
        {"redis+sentinel://s1/m x",
         "bad master name: use letters, digits, '.', '_', '-'"},
        {"redis+sentinel://s1/m/x", db},
        {"redis://:%00@h", "the password holds %00, a NUL byte"},
        {"redis://u%00:p@h", "the user holds %00, a NUL byte"},
    };
    char why[300], err[300];
    redis_url u;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        cr_expect_eq(redis_url_parse(bad[i].url, &u, err, sizeof(err)), -1,
                     "'%s' was accepted", bad[i].url);
        cr_expect_str_eq(err, bad[i].why, "'%s'", bad[i].url);
    }
    static const struct {
        const char *url, *part;
    } encoding[] = {
        {"redis://:%4@h", "password"},
        {"redis://:%@h", "password"},
        {"redis://:%g0@h", "password"},
        {"redis://%zz@h", "password"},
        {"redis://u%1:p@h", "user"},
        {"redis+cluster://:%x@a", "password"},
        {"redis+sentinel://u%:p@s/m", "user"},
    };
    for (size_t i = 0; i < sizeof(encoding) / sizeof(encoding[0]); i++) {
        snprintf(why, sizeof(why), pct, encoding[i].part);
        cr_expect_eq(redis_url_parse(encoding[i].url, &u, err, sizeof(err)), -1,
                     "'%s' was accepted", encoding[i].url);
        cr_expect_str_eq(err, why, "'%s'", encoding[i].url);
    }
}

/* The limits of each part, at their edges. */
/* A URL that did not parse may still hold a password: the text shown for
 * it never does, wherever the parser gave up. */
Test(redis_url, redact_hides_whatever_could_be_the_password)
{
    static const char *const cases[][2] = {
        {"redis://default:S3cret@127.0.0.1:notaport",
         "redis://default:***@127.0.0.1:notaport"},
        {"redis://S3cret@host", "redis://***@host"},
        {"redis://:S3cret@host:1/0", "redis://:***@host:1/0"},
        {"redis://u:S3c@ret@host", "redis://u:***@host"},
        {"redis+sentinel://u:S3cret@h:1,h:2/m",
         "redis+sentinel://u:***@h:1,h:2/m"},
        {"nonsense:S3cret@host", "nonsense:***@host"},
        {"redis+sentinel://s:1/m?sentinel_password=S3cret&tls_ca=/x",
         "redis+sentinel://s:1/m?sentinel_password=***&tls_ca=/x"},
        {"rediss+sentinel://u:S3cret@s:1/m?tls_ca=/x&sentinel_password=S3c",
         "rediss+sentinel://u:***@s:1/m?tls_ca=/x&sentinel_password=***"},
        {"redis://h/0?a=b@c", "redis://h/0?a=b@c"},
        {"redis://host:port", "redis://host:port"},
        {"redis://u:S3\ncret@host", "redis://u:***@host"},
        {"redis://ho\tst", "redis://ho?st"},
    };
    char buf[128];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        redis_url_redact(cases[i][0], buf, sizeof(buf));
        cr_assert_str_eq(buf, cases[i][1], "%s", cases[i][0]);
    }
    redis_url_redact("redis://u:S3cretS3cretS3cret@h", buf, 12);
    cr_assert(strstr(buf, "S3c") == NULL, "%s", buf);
}

Test(redis_url, tls_forms)
{
    redis_url u = parsed("rediss://u:p@redis.example:6380/2");
    char text[REDIS_URL_TEXT_MAX];

    cr_assert(u.tls.enabled);
    cr_assert_not(u.tls.no_verify);
    cr_assert_str_eq(u.host, "redis.example");
    cr_assert_eq(u.port, 6380);
    cr_assert_eq(u.db, 2);
    cr_assert_str_eq(u.password, "p");
    cr_assert_str_eq(u.tls.ca, "");
    redis_url_describe(&u, text, sizeof(text));
    cr_assert_str_eq(text, "rediss://redis.example:6380/2");

    u = parsed("rediss://h/0?tls_ca=/etc/ca%20dir&tls_cert=/c.pem&tls_key=/k."
               "pem&tls_sni=redis.example&tls_verify=no");
    cr_assert_str_eq(u.tls.ca, "/etc/ca dir");
    cr_assert_str_eq(u.tls.cert, "/c.pem");
    cr_assert_str_eq(u.tls.key, "/k.pem");
    cr_assert_str_eq(u.tls.sni, "redis.example");
    cr_assert(u.tls.no_verify);
    cr_assert_eq(u.port, 6379);

    u = parsed("rediss+cluster://h1:7000,h2:7001?tls_ca=/ca.pem");
    cr_assert(u.tls.enabled);
    cr_assert_eq(u.kind, REDIS_URL_CLUSTER);
    cr_assert_eq(u.n_seeds, 2);
    cr_assert_str_eq(u.tls.ca, "/ca.pem");
    redis_url_describe(&u, text, sizeof(text));
    cr_assert_str_eq(text, "rediss+cluster://h1:7000,h2:7001");

    u = parsed("rediss+sentinel://s1,s2:26380/mymaster/1?tls_verify=yes");
    cr_assert(u.tls.enabled);
    cr_assert_eq(u.kind, REDIS_URL_SENTINEL);
    cr_assert_str_eq(u.master, "mymaster");
    cr_assert_eq(u.db, 1);
    redis_url_describe(&u, text, sizeof(text));
    cr_assert_str_eq(text, "rediss+sentinel://s1:26379,s2:26380/mymaster/1");

    u = parsed("redis://h:1/0");
    cr_assert_not(u.tls.enabled);

    u = parsed("redis+sentinel://s1/m?sentinel_user=sen&sentinel_password=p%40"
               "ss");
    cr_assert_not(u.tls.enabled);
    cr_assert_str_eq(u.sentinel_user, "sen");
    cr_assert_str_eq(u.sentinel_password, "p@ss");
    cr_assert_str_eq(u.password, "");
}

Test(redis_url, tls_refusals_say_why)
{
    static const char *const cases[][2] = {
        {"redis://h/0?tls_ca=/x", "need rediss://"},
        {"rediss://h/0?tls_ca=", "tls_ca is empty"},
        {"rediss://h/0?tls_ca=/a&tls_ca=/b", "tls_ca is given twice"},
        {"rediss://h/0?tls_cafile=/a", "unknown query parameter 'tls_cafile'"},
        {"rediss://h/0?tls_verify=maybe", "tls_verify: expected yes or no"},
        {"rediss://h/0?tls_key=/k", "tls_key needs tls_cert"},
        {"rediss://h/0?tls_ca", "expected name=value"},
        {"rediss://h/0?tls_ca=%zz", "bad percent-encoding in the tls_ca"},
        {"rediss://h:0/0", "bad port"},
        {"rediss+cluster://h/1", "database 0 only"},
        {"redis://h/0?sentinel_password=x", "for redis+sentinel://"},
        {"rediss+cluster://h?sentinel_user=x", "for redis+sentinel://"},
    };
    redis_url u;
    char err[300];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        err[0] = '\0';
        cr_assert_eq(redis_url_parse(cases[i][0], &u, err, sizeof(err)), -1,
                     "%s", cases[i][0]);
        cr_assert(strstr(err, cases[i][1]) != NULL, "%s: %s", cases[i][0],
                  err);
    }
}

Test(redis_url, parts_too_long_are_refused)
{
    char text[1200], long_part[400], err[300];
    redis_url u;

    /* A label of 63 is a name; of 64 it is not. */
    memset(long_part, 'a', 63);
    long_part[63] = '\0';
    snprintf(text, sizeof(text), "redis://%s", long_part);
    cr_assert_eq(redis_url_parse(text, &u, err, sizeof(err)), 0, "%s", err);
    snprintf(text, sizeof(text), "redis://%sa", long_part);
    cr_assert_eq(redis_url_parse(text, &u, err, sizeof(err)), -1);
    cr_assert_str_eq(err, "expected a host name or address");

    /* 253 characters in all is a name; 254 is not. */
    snprintf(long_part, sizeof(long_part), "%s", "");
    for (int i = 0; i < 63; i++)
        strcat(long_part, "abc.");
    strcat(long_part, "a"); /* 253 */
    snprintf(text, sizeof(text), "redis://%s", long_part);
    cr_assert_eq(redis_url_parse(text, &u, err, sizeof(err)), 0, "%s", err);
    snprintf(text, sizeof(text), "redis://%sb", long_part);
    cr_assert_eq(redis_url_parse(text, &u, err, sizeof(err)), -1);
    cr_assert_str_eq(err, "expected a host name or address");

    memset(long_part, 'p', 256);
    long_part[256] = '\0';
    snprintf(text, sizeof(text), "redis://:%s@h", long_part);
    cr_assert_eq(redis_url_parse(text, &u, err, sizeof(err)), -1);
    cr_assert_str_eq(err, "the password is too long");
    long_part[255] = '\0';
    snprintf(text, sizeof(text), "redis://:%s@h", long_part);
    cr_assert_eq(redis_url_parse(text, &u, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(strlen(u.password), 255);

    memset(long_part, 'u', 128);
    long_part[128] = '\0';
    snprintf(text, sizeof(text), "redis://%s:p@h", long_part);
    cr_assert_eq(redis_url_parse(text, &u, err, sizeof(err)), -1);
    cr_assert_str_eq(err, "the user is too long");

    memset(long_part, 's', 256);
    long_part[0] = '/';
    long_part[256] = '\0';
    snprintf(text, sizeof(text), "unix://%s", long_part);
    cr_assert_eq(redis_url_parse(text, &u, err, sizeof(err)), -1);
    cr_assert_str_eq(err, "the socket path is too long");

    memset(long_part, 'm', 128);
    long_part[128] = '\0';
    snprintf(text, sizeof(text), "redis+sentinel://s/%s", long_part);
    cr_assert_eq(redis_url_parse(text, &u, err, sizeof(err)), -1);
    cr_assert_str_eq(err, "the master name is too long");

    snprintf(text, sizeof(text), "redis+cluster://");
    for (int i = 0; i <= REDIS_URL_MAX_SEEDS; i++)
        snprintf(text + strlen(text), sizeof(text) - strlen(text), "%sn%d",
                 i ? "," : "", i);
    cr_assert_eq(redis_url_parse(text, &u, err, sizeof(err)), -1);
    cr_assert_str_eq(err, "more than 16 addresses");
}

/* A refused URL leaves the caller's redis_url as it was. */
Test(redis_url, refusal_writes_nothing)
{
    redis_url u, before;
    char err[300];

    memset(&u, 0x5a, sizeof(u));
    before = u;
    cr_assert_eq(redis_url_parse("redis://h:1/x", &u, err, sizeof(err)), -1);
    cr_assert_eq(memcmp(&u, &before, sizeof(u)), 0);
    cr_assert_eq(redis_url_parse("redis+sentinel://a,b/", &u, err, sizeof(err)),
                 -1);
    cr_assert_eq(memcmp(&u, &before, sizeof(u)), 0);
}

Test(redis_url, endpoint_parse_for_the_listen_key)
{
    char host[256], err[300];
    int port = 1234;

    cr_assert_eq(
        endpoint_parse("example.org", 11, 0, host, &port, err, sizeof(err)),
        0);
    cr_assert_str_eq(host, "example.org");
    cr_assert_eq(port, 1234, "no port given: left as it was");
    cr_assert_eq(
        endpoint_parse("[::]:9100", 9, 0, host, &port, err, sizeof(err)), 0);
    cr_assert_str_eq(host, "::");
    cr_assert_eq(port, 9100);
    /* Only the n bytes given are read. */
    cr_assert_eq(endpoint_parse("10.0.0.1:80,junk", 11, 0, host, &port, err,
                                     sizeof(err)),
                 0, "%s", err);
    cr_assert_str_eq(host, "10.0.0.1");
    cr_assert_eq(port, 80);
    port = 7;
    cr_assert_eq(endpoint_parse("h:0", 3, 0, host, &port, err, sizeof(err)),
                 -1);
    cr_assert_str_eq(err, "bad port: expected 1..65535");
    cr_assert_eq(port, 7, "a refused port is not written");
    cr_assert_eq(endpoint_parse("[::1", 4, 0, host, &port, err, sizeof(err)),
                 -1);
    cr_assert_str_eq(err, "bad IPv6 address: expected [address]");
    cr_assert_eq(endpoint_parse("", 0, 0, host, &port, err, sizeof(err)), -1);
    cr_assert_str_eq(err, "expected a host name or address");
}

/* Brackets hold an IPv6 address and nothing else: "[zz]" was once taken
 * for the host name zz. */
Test(redis_url, brackets_hold_only_an_ipv6_address)
{
    static const char *const bad[] = {"redis://[zz]:1",
                                      "redis://[zz]",
                                      "redis://[localhost]:6379",
                                      "redis://[127.0.0.1]:6379",
                                      "redis+cluster://a:1,[zz]:2",
                                      NULL};
    char err[300];
    redis_url u;

    for (size_t i = 0; bad[i]; i++) {
        cr_assert_eq(redis_url_parse(bad[i], &u, err, sizeof(err)), -1, "%s",
                     bad[i]);
        cr_assert_str_eq(err, "expected a host name or address", "%s", bad[i]);
    }
    u = parsed("redis://[fe80::1]:1");
    cr_assert_str_eq(u.host, "fe80::1");
}

/* One text through every form of endpoint_parse. */
static int endpoint(const char *text, unsigned flags, char *host, int *port,
                    char *err)
{
    return endpoint_parse(text, strlen(text), flags, host, port, err, 128);
}

Test(endpoint, the_checked_form)
{
    char host[ENDPOINT_HOST_MAX], err[128];
    int port = 0;

    cr_assert_eq(endpoint("10.0.0.1:80", 0, host, &port, err), 0, "%s", err);
    cr_assert_str_eq(host, "10.0.0.1");
    cr_assert_eq(port, 80);
    cr_assert_eq(endpoint("[::1]:6379", 0, host, &port, err), 0, "%s", err);
    cr_assert_str_eq(host, "::1");
    cr_assert_eq(port, 6379);
    port = 5;
    cr_assert_eq(endpoint("[::1]", 0, host, &port, err), 0, "%s", err);
    cr_assert_eq(port, 5, "no port given: left as it was");
    /* Unbracketed, the first ':' ends the host: "::1:6379" is no host. */
    cr_assert_eq(endpoint("::1:6379", 0, host, &port, err), -1);
    cr_assert_str_eq(err, "expected a host name or address");
    cr_assert_eq(endpoint("[zz]:1", 0, host, &port, err), -1);
    cr_assert_str_eq(err, "expected a host name or address");
    cr_assert_eq(endpoint("h:65536", 0, host, &port, err), -1);
    cr_assert_str_eq(err, "bad port: expected 1..65535");
    cr_assert_eq(endpoint("h:x", 0, host, &port, err), -1);
    cr_assert_str_eq(err, "bad port: expected 1..65535");
    cr_assert_eq(port, 5, "a refused port is not written");
    cr_assert_eq(endpoint("h", ENDPOINT_NEED_PORT, host, &port, err), -1);
    cr_assert_str_eq(err, "no port: expected host:port");
    cr_assert_eq(endpoint("[::1]", ENDPOINT_NEED_PORT, host, &port, err), -1);
    cr_assert_eq(
        endpoint("localhost:9464", ENDPOINT_NEED_PORT, host, &port, err), 0,
        "%s", err);
    cr_assert_str_eq(host, "localhost");
    cr_assert_eq(port, 9464);
}

/* As Redis writes a node in MOVED and ASK: the host unchecked, perhaps
 * empty, an IPv6 address with or without brackets. */
Test(endpoint, the_loose_form)
{
    static const unsigned loose = ENDPOINT_LOOSE_HOST | ENDPOINT_NEED_PORT;
    char host[ENDPOINT_HOST_MAX], err[128];
    int port = 0;

    cr_assert_eq(endpoint("::1:6381", loose, host, &port, err), 0, "%s", err);
    cr_assert_str_eq(host, "::1");
    cr_assert_eq(port, 6381);
    cr_assert_eq(endpoint("[::1]:6382", loose, host, &port, err), 0, "%s", err);
    cr_assert_str_eq(host, "::1");
    cr_assert_eq(port, 6382);
    cr_assert_eq(endpoint(":6383", loose, host, &port, err), 0, "%s", err);
    cr_assert_str_eq(host, "");
    cr_assert_eq(port, 6383);
    cr_assert_eq(endpoint("node-1.example:7000", loose, host, &port, err), 0);
    cr_assert_str_eq(host, "node-1.example");
    cr_assert_eq(endpoint("[zz]:1", loose, host, &port, err), -1);
    cr_assert_eq(endpoint("h", loose, host, &port, err), -1);
    cr_assert_eq(endpoint("h:0", loose, host, &port, err), -1);
    cr_assert_str_eq(err, "bad port: expected 1..65535");
}

Test(endpoint, format_brackets_an_ipv6_address)
{
    char buf[ENDPOINT_TEXT_MAX];

    cr_assert_eq(endpoint_format(buf, sizeof(buf), "::1", 6379), 10);
    cr_assert_str_eq(buf, "[::1]:6379");
    endpoint_format(buf, sizeof(buf), "10.0.0.1", 80);
    cr_assert_str_eq(buf, "10.0.0.1:80");
    cr_assert_eq(endpoint_format(buf, 4, "host", 80), 7, "the length it needs");
    cr_assert_str_eq(buf, "hos");
}

Test(redis_url, describe_never_shows_a_password)
{
    static const struct {
        const char *url, *text;
    } cases[] = {
        {"redis://:secret@h", "redis://h:6379/0"},
        {"redis://alice:secret@h:7000/5", "redis://h:7000/5"},
        {"redis://[::1]:7000/3", "redis://[::1]:7000/3"},
        {"unix:///tmp/r.sock?db=2", "unix:///tmp/r.sock"},
        {"redis+cluster://:secret@a:7000,[::1]:7001,b",
         "redis+cluster://a:7000,[::1]:7001,b:6379"},
        {"redis+sentinel://u:secret@s1,s2:5000/mymaster/2",
         "redis+sentinel://s1:26379,s2:5000/mymaster/2"},
    };
    char text[600];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        redis_url u = parsed(cases[i].url);
        redis_url_describe(&u, text, sizeof(text));
        cr_expect_str_eq(text, cases[i].text, "%s", cases[i].url);
        cr_expect_null(strstr(text, "secret"));
    }
    /* A short buffer is cut, never overrun. */
    redis_url u = parsed("redis+cluster://aaaa:7000,bbbb:7001");
    char small[12];
    memset(small, 'x', sizeof(small));
    redis_url_describe(&u, small, 8);
    cr_assert_str_eq(small, "redis+c");
    cr_assert_eq(small[8], 'x');
}

Test(redis_url, explain_turns_refused_credentials_into_one_line)
{
    static const char tcp_required[] =
        "redis://h:6379/0: authentication required: set a password in the "
        "URL (redis://:PASSWORD@host) or WHARF_REDIS_PASSWORD";
    static const char wrong[] =
        "redis://h:6379/0: authentication failed: wrong user or password "
        "(WRONGPASS); fix it in the URL or WHARF_REDIS_PASSWORD";
    static const struct {
        const char *reply, *line;
        int refused;
    } cases[] = {
        {"NOAUTH Authentication required.", tcp_required, 1},
        {"ERR operation not permitted: unauthenticated", tcp_required, 1},
        {"WRONGPASS invalid username-password pair or user is disabled.", wrong,
         1},
        {"ERR invalid password", wrong, 1},
        {"ERR invalid username-password pair", wrong, 1},
        {"ERR AUTH <password> called without any password configured for "
         "the default user. Are you sure your configuration is correct?",
         "redis://h:6379/0: authentication failed: a password was given but "
         "this Redis has none (no requirepass); remove it from the URL and "
         "WHARF_REDIS_PASSWORD",
         1},
        {"ERR DB index is out of range",
         "redis://h:6379/0: SELECT: ERR DB index is out of range", 0},
        {"LOADING Redis is loading the dataset in memory",
         "redis://h:6379/0: SELECT: LOADING Redis is loading the dataset in "
         "memory",
         0},
    };
    redis_url u = parsed("redis://:pw@h");
    char err[600];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        redis_url_explain(&u, "SELECT", cases[i].reply, err, sizeof(err));
        cr_expect_str_eq(err, cases[i].line, "%s", cases[i].reply);
        cr_expect_eq(redis_url_auth_refused(err), cases[i].refused, "%s", err);
    }
    /* A unix socket URL cannot carry a password: only the variable. */
    u = parsed("unix:///tmp/r.sock");
    redis_url_explain(&u, "PING", "NOAUTH Authentication required.", err,
                      sizeof(err));
    cr_assert_str_eq(err, "unix:///tmp/r.sock: authentication required: set "
                          "WHARF_REDIS_PASSWORD");
    cr_assert(redis_url_auth_refused(err));
    cr_assert_not(redis_url_auth_refused(NULL));
    cr_assert_not(redis_url_auth_refused("redis://h:6379/0: Connection "
                                         "refused"));
}

Test(redis_url, io_error_names_a_timeout)
{
    redisContext c;
    char buf[200];

    memset(&c, 0, sizeof(c));
    c.err = REDIS_ERR_IO;
    snprintf(c.errstr, sizeof(c.errstr), "Resource temporarily unavailable");
    redis_url_io_error(&c, EAGAIN, 5000, buf, sizeof(buf));
    cr_assert_str_eq(buf, "Redis did not answer in 5 s");
    redis_url_io_error(&c, EWOULDBLOCK, 1500, buf, sizeof(buf));
    cr_assert_str_eq(buf, "Redis did not answer in 1500 ms");
    /* No timeout set, or another errno: hiredis's own words. */
    redis_url_io_error(&c, EAGAIN, 0, buf, sizeof(buf));
    cr_assert_str_eq(buf, "Resource temporarily unavailable");
    redis_url_io_error(&c, ECONNRESET, 5000, buf, sizeof(buf));
    cr_assert_str_eq(buf, "Resource temporarily unavailable");
    c.err = REDIS_ERR_EOF;
    snprintf(c.errstr, sizeof(c.errstr), "Server closed the connection");
    redis_url_io_error(&c, EAGAIN, 5000, buf, sizeof(buf));
    cr_assert_str_eq(buf, "Server closed the connection");
    c.errstr[0] = '\0';
    redis_url_io_error(&c, 0, 5000, buf, sizeof(buf));
    cr_assert_str_eq(buf, "connection lost");
}

/* Connecting: against real redis-servers. */

static test_redis plain, locked;

static void stop_servers(void)
{
    if (plain.pid > 0)
        kill(plain.pid, SIGCONT);
    test_redis_stop(&plain);
    test_redis_stop(&locked);
}

TestSuite(redis_url_connect, .fini = stop_servers, .timeout = 120);

/* Connects to text; NULL with err set. */
static redisContext *connect_to(const char *text, const char *password,
                                int timeout_ms, char *err, size_t len)
{
    redis_url u = parsed(text);
    return redis_url_connect(&u, password, timeout_ms, err, len);
}

Test(redis_url_connect, selects_the_database_and_sets_close_on_exec)
{
    char text[300], err[600] = "";
    redisContext *c;
    redisReply *r;

    test_redis_start(&plain, 0);
    snprintf(text, sizeof(text), "redis://127.0.0.1:%d/3", plain.port);
    c = connect_to(text, NULL, 2000, err, sizeof(err));
    cr_assert(c != NULL, "%s", err);
    cr_assert(fcntl(c->fd, F_GETFD) & FD_CLOEXEC, "inheritable connection");
    freeReplyObject(redisCommand(c, "SET where three"));
    redisFree(c);
    c = test_redis_connect(&plain);
    r = test_redis_command(c, "SELECT 3");
    freeReplyObject(r);
    r = test_redis_command(c, "GET where");
    cr_assert_eq(r->type, REDIS_REPLY_STRING, "SELECT 3 was not sent");
    cr_assert_str_eq(r->str, "three");
    freeReplyObject(r);
    redisFree(c);

    snprintf(text, sizeof(text), "redis://127.0.0.1:%d/99", plain.port);
    cr_assert_null(connect_to(text, NULL, 2000, err, sizeof(err)));
    snprintf(text, sizeof(text),
             "redis://127.0.0.1:%d/99: SELECT: ERR DB index is out of range",
             plain.port);
    cr_assert_str_eq(err, text);
    cr_assert_not(redis_url_auth_refused(err));

    /* A password for a Redis that has none. */
    snprintf(text, sizeof(text), "redis://:pw@127.0.0.1:%d", plain.port);
    cr_assert_null(connect_to(text, NULL, 2000, err, sizeof(err)));
    snprintf(text, sizeof(text),
             "redis://127.0.0.1:%d/0: authentication failed: a password was "
             "given but this Redis has none (no requirepass); remove it from "
             "the URL and WHARF_REDIS_PASSWORD",
             plain.port);
    cr_assert_str_eq(err, text);
    cr_assert(redis_url_auth_refused(err));
}

Test(redis_url_connect, refused_credentials_are_told_apart)
{
    char text[300], want[600], err[600] = "";
    redisContext *c;

    test_redis_start_with(&locked, "s3cret", NULL);
    snprintf(text, sizeof(text), "redis://127.0.0.1:%d", locked.port);
    cr_assert_null(connect_to(text, NULL, 2000, err, sizeof(err)));
    snprintf(want, sizeof(want),
             "redis://127.0.0.1:%d/0: authentication required: set a "
             "password in the URL (redis://:PASSWORD@host) or "
             "WHARF_REDIS_PASSWORD",
             locked.port);
    cr_assert_str_eq(err, want);
    cr_assert(redis_url_auth_refused(err));

    snprintf(text, sizeof(text), "redis://:wrong@127.0.0.1:%d", locked.port);
    cr_assert_null(connect_to(text, NULL, 2000, err, sizeof(err)));
    snprintf(want, sizeof(want),
             "redis://127.0.0.1:%d/0: authentication failed: wrong user or "
             "password (WRONGPASS); fix it in the URL or WHARF_REDIS_PASSWORD",
             locked.port);
    cr_assert_str_eq(err, want);
    cr_assert(redis_url_auth_refused(err));

    /* The password given overrides the URL's. */
    c = connect_to(text, "s3cret", 2000, err, sizeof(err));
    cr_assert(c != NULL, "%s", err);
    redisFree(c);
    snprintf(text, sizeof(text), "redis://:s3cret@127.0.0.1:%d/1", locked.port);
    c = connect_to(text, NULL, 2000, err, sizeof(err));
    cr_assert(c != NULL, "%s", err);
    redisFree(c);
}

Test(redis_url_connect, unreachable_and_silent_servers)
{
    char text[300], want[400], err[600] = "";
    int port = test_free_port();

    snprintf(text, sizeof(text), "redis://127.0.0.1:%d", port);
    cr_assert_null(connect_to(text, NULL, 2000, err, sizeof(err)));
    snprintf(want, sizeof(want), "redis://127.0.0.1:%d/0: Connection refused",
             port);
    cr_assert_str_eq(err, want);
    cr_assert_not(redis_url_auth_refused(err));

    /* A stopped server takes the connection (the kernel does) but never
     * answers its PING: the timeout is named, whatever the load. */
    test_redis_start(&plain, 0);
    cr_assert_eq(kill(plain.pid, SIGSTOP), 0);
    snprintf(text, sizeof(text), "redis://127.0.0.1:%d", plain.port);
    cr_assert_null(connect_to(text, NULL, 300, err, sizeof(err)));
    kill(plain.pid, SIGCONT);
    snprintf(want, sizeof(want),
             "redis://127.0.0.1:%d/0: PING: Redis did not answer in 300 ms",
             plain.port);
    cr_assert_str_eq(err, want);
}

Test(redis_url_connect, unix_socket)
{
    char sock[300], text[320], err[600] = "";
    const char *args[] = {"--unixsocket", sock, NULL};
    redisContext *c;
    redisReply *r;

    snprintf(sock, sizeof(sock), "/tmp/wharf-test-url-%d.sock", (int)getpid());
    test_redis_start_with(&plain, NULL, args);
    snprintf(text, sizeof(text), "unix://%s?db=2", sock);
    c = connect_to(text, NULL, 2000, err, sizeof(err));
    cr_assert(c != NULL, "%s", err);
    r = redisCommand(c, "CLIENT INFO");
    cr_assert(r && r->type == REDIS_REPLY_STRING);
    cr_assert(strstr(r->str, " db=2 "), "%s", r->str);
    freeReplyObject(r);
    redisFree(c);
    unlink(sock);
}
