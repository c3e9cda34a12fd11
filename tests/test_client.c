/* libwharf-client (sdk/client/) against a private redis-server:
 * the exact stream fields, deduplication, the policy (idempotency,
 * max_payload, max_backlog), delayed tasks, checks made before Redis is
 * asked, traces, results, binary payloads, an unreachable Redis, bulk
 * enqueue, and what the shared library exports. */
#include <criterion/criterion.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include <wharf/client.h>

#include "client_internal.h"
#include "redis_server.h"
#include "redis_url.h"

static test_redis server;
static redisContext *redis;
static wharf_client *client;

static void setup(void)
{
    char err[256];

    test_redis_start(&server, 0);
    redis = test_redis_connect(&server);
    cr_assert_eq(
        wharf_client_open(&client, server.url, NULL, NULL, err, sizeof(err)),
        WHARF_CLIENT_OK, "open: %s", err);
}

static void teardown(void)
{
    wharf_client_close(client);
    client = NULL;
    if (redis)
        redisFree(redis);
    redis = NULL;
    test_redis_stop(&server);
}

TestSuite(client, .init = setup, .fini = teardown, .timeout = 300);

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Redis' own clock, in ms: what the enqueue script stamps tasks with. */
static long long redis_ms(void)
{
    redisReply *r = test_redis_command(redis, "TIME");
    long long ms;

    cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
    ms = strtoll(r->element[0]->str, NULL, 10) * 1000 +
         strtoll(r->element[1]->str, NULL, 10) / 1000;
    freeReplyObject(r);
    return ms;
}

/* Hex SHA-256 of "type\npayload", as a producer must compute ids. */
static void hash_id(const char *type, const void *payload, size_t len,
                    char out[65])
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char digest[32];
    unsigned int n = 0;

    cr_assert_not_null(ctx);
    cr_assert(EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 &&
              EVP_DigestUpdate(ctx, type, strlen(type)) == 1 &&
              EVP_DigestUpdate(ctx, "\n", 1) == 1 &&
              EVP_DigestUpdate(ctx, payload, len) == 1 &&
              EVP_DigestFinal_ex(ctx, digest, &n) == 1 && n == 32);
    EVP_MD_CTX_free(ctx);
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", digest[i]);
}

static int matches(const char *pattern, const char *text)
{
    regex_t re;
    int ok;

    cr_assert_eq(regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB), 0);
    ok = regexec(&re, text, 0, NULL, 0) == 0;
    regfree(&re);
    return ok;
}

#define TRACE_RE "^00-[0-9a-f]{32}-[0-9a-f]{16}-01$"

static wharf_client_status enqueue(const char *type, const char *payload,
                                   wharf_enqueue_reply *out)
{
    wharf_enqueue_opts t = {
        .type = type, .payload = payload, .payload_len = strlen(payload)};
    return wharf_enqueue(client, &t, out);
}

/* The value of field name in a flat [field, value, ...] reply, or NULL. */
static const redisReply *field(const redisReply *flat, const char *name)
{
    for (size_t i = 0; i + 1 < flat->elements; i += 2)
        if (strcmp(flat->element[i]->str, name) == 0)
            return flat->element[i + 1];
    return NULL;
}

/* The fields of the only entry of a stream (caller frees the reply). */
static redisReply *only_entry(const char *stream, const redisReply **fields)
{
    redisReply *r = test_redis_command(redis, "XRANGE %s - +", stream);

    cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 1, "%zu entries in %s", r->elements, stream);
    *fields = r->element[0]->element[1];
    return r;
}

static void assert_field(const redisReply *flat, const char *name,
                         const char *want)
{
    const redisReply *v = field(flat, name);

    cr_assert_not_null(v, "no field %s", name);
    cr_assert_str_eq(v->str, want, "field %s", name);
}

Test(client, enqueue_writes_the_contract_fields)
{
    wharf_enqueue_reply reply;
    const redisReply *f;
    redisReply *r;
    char want[65];
    long long before = redis_ms(), at;

    cr_assert_eq(enqueue("echo", "{\"a\":1}", &reply), WHARF_CLIENT_OK, "%s",
                 wharf_client_errstr(client));
    hash_id("echo", "{\"a\":1}", 7, want);
    cr_assert_str_eq(reply.id, want);
    cr_assert_eq(reply.duplicate, 0);
    cr_assert_eq(reply.pressure, 0);
    r = only_entry("wharf:{echo}:stream", &f);
    cr_assert_eq(f->elements, 12, "exactly the six fields");
    assert_field(f, "id", want);
    assert_field(f, "type", "echo");
    assert_field(f, "payload", "{\"a\":1}");
    assert_field(f, "attempt", "1");
    at = strtoll(field(f, "enqueued_at")->str, NULL, 10);
    cr_assert(at >= before && at <= redis_ms(), "enqueued_at %lld", at);
    cr_assert(matches(TRACE_RE, field(f, "trace")->str), "trace %s",
              field(f, "trace")->str);
    freeReplyObject(r);
    cr_assert_eq(test_redis_int(redis, "SISMEMBER wharf:types echo"), 1);
    cr_assert_eq(test_redis_int(redis, "EXISTS wharf:{echo}:seen:%s", want), 1);
    at = test_redis_int(redis, "PTTL wharf:{echo}:seen:%s", want);
    cr_assert(at > 290000 && at <= 300000, "seen TTL %lld", at);
}

Test(client, same_payload_is_a_duplicate)
{
    wharf_enqueue_reply first, again;

    cr_assert_eq(enqueue("echo", "same", &first), WHARF_CLIENT_OK);
    cr_assert_eq(enqueue("echo", "same", &again), WHARF_CLIENT_DUPLICATE);
    cr_assert_str_eq(again.id, first.id);
    cr_assert_eq(again.duplicate, 1);
    cr_assert_eq(test_redis_int(redis, "XLEN wharf:{echo}:stream"), 1);
    /* Another type is another queue: not a duplicate. */
    cr_assert_eq(enqueue("other", "same", &again), WHARF_CLIENT_OK);
    cr_assert_str_neq(again.id, first.id);
}

Test(client, explicit_id_is_the_dedupe_key)
{
    wharf_enqueue_opts t = {
        .type = "echo", .payload = "a", .payload_len = 1, .id = "order-42"};
    wharf_enqueue_reply reply;

    cr_assert_eq(wharf_enqueue(client, &t, &reply), WHARF_CLIENT_OK);
    cr_assert_str_eq(reply.id, "order-42");
    t.payload = "b";
    cr_assert_eq(wharf_enqueue(client, &t, &reply), WHARF_CLIENT_DUPLICATE);
    cr_assert_str_eq(reply.id, "order-42");
    cr_assert_eq(test_redis_int(redis, "XLEN wharf:{echo}:stream"), 1);
}

Test(client, idempotency_none_gives_random_ids)
{
    wharf_enqueue_reply a, b;
    wharf_enqueue_opts t = {
        .type = "rnd", .payload = "x", .payload_len = 1, .id = "fixed"};

    freeReplyObject(
        test_redis_command(redis, "HSET wharf:{rnd}:policy idempotency none"));
    cr_assert_eq(enqueue("rnd", "same", &a), WHARF_CLIENT_OK);
    cr_assert_eq(enqueue("rnd", "same", &b), WHARF_CLIENT_OK);
    cr_assert(matches("^[0-9a-f]{32}$", a.id), "%s", a.id);
    cr_assert(matches("^[0-9a-f]{32}$", b.id), "%s", b.id);
    cr_assert_str_neq(a.id, b.id);
    cr_assert_eq(test_redis_int(redis, "XLEN wharf:{rnd}:stream"), 2);
    /* An explicit id still deduplicates. */
    cr_assert_eq(wharf_enqueue(client, &t, &a), WHARF_CLIENT_OK);
    cr_assert_eq(wharf_enqueue(client, &t, &a), WHARF_CLIENT_DUPLICATE);
}

Test(client, policy_ttl_is_used_for_the_marker)
{
    wharf_enqueue_reply reply;
    long long ttl;

    freeReplyObject(test_redis_command(
        redis, "HSET wharf:{ttl}:policy idempotency_ttl 5000"));
    cr_assert_eq(enqueue("ttl", "p", &reply), WHARF_CLIENT_OK);
    ttl = test_redis_int(redis, "PTTL wharf:{ttl}:seen:%s", reply.id);
    cr_assert(ttl > 0 && ttl <= 5000, "ttl %lld", ttl);
}

Test(client, payload_over_max_payload_is_refused)
{
    wharf_enqueue_reply reply;

    freeReplyObject(
        test_redis_command(redis, "HSET wharf:{small}:policy max_payload 10"));
    cr_assert_eq(enqueue("small", "0123456789", &reply), WHARF_CLIENT_OK);
    cr_assert_eq(enqueue("small", "0123456789A", &reply),
                 WHARF_CLIENT_TOO_LARGE);
    cr_assert_eq(reply.status, WHARF_CLIENT_TOO_LARGE);
    cr_assert_eq(reply.limit, 10);
    cr_assert(strstr(wharf_client_errstr(client), "max_payload 10"), "%s",
              wharf_client_errstr(client));
    cr_assert_eq(test_redis_int(redis, "XLEN wharf:{small}:stream"), 1);
    /* Without a policy the default is 1 MiB. */
    {
        size_t n = 1024 * 1024 + 1;
        char *big = calloc(1, n);
        wharf_enqueue_opts t = {
            .type = "big", .payload = big, .payload_len = n};
        cr_assert_not_null(big);
        cr_assert_eq(wharf_enqueue(client, &t, &reply), WHARF_CLIENT_TOO_LARGE);
        cr_assert_eq(reply.limit, 1024 * 1024);
        t.payload_len = n - 1;
        cr_assert_eq(wharf_enqueue(client, &t, &reply), WHARF_CLIENT_OK);
        free(big);
    }
}

Test(client, backpressure_at_max_backlog_writes_nothing)
{
    wharf_enqueue_reply reply;
    wharf_enqueue_opts later = {
        .type = "bp", .payload = "d", .payload_len = 1, .delay_ms = 60000};
    char payload[8];

    freeReplyObject(
        test_redis_command(redis, "HSET wharf:{bp}:policy max_backlog 3"));
    cr_assert_eq(wharf_enqueue(client, &later, &reply), WHARF_CLIENT_OK);
    for (int i = 0; i < 2; i++) {
        snprintf(payload, sizeof(payload), "p%d", i);
        cr_assert_eq(enqueue("bp", payload, &reply), WHARF_CLIENT_OK);
    }
    /* Two in the stream and one delayed: the backlog is at 3. */
    cr_assert_eq(enqueue("bp", "one more", &reply), WHARF_CLIENT_BACKPRESSURE);
    cr_assert_eq(reply.limit, 3);
    cr_assert_str_eq(reply.id, "");
    cr_assert_eq(test_redis_int(redis, "XLEN wharf:{bp}:stream"), 2);
    cr_assert_eq(test_redis_int(redis, "DBSIZE"), 9,
                 "policy, types, stream, entries, delayed, task and 3 "
                 "markers");
}

Test(client, pressure_is_reported)
{
    wharf_enqueue_reply reply;

    cr_assert_eq(enqueue("pr", "a", &reply), WHARF_CLIENT_OK);
    cr_assert_eq(reply.pressure, 0);
    freeReplyObject(test_redis_command(redis, "SET wharf:{pr}:pressure 1"));
    cr_assert_eq(enqueue("pr", "b", &reply), WHARF_CLIENT_OK);
    cr_assert_eq(reply.pressure, 1);
    cr_assert_eq(enqueue("pr", "b", &reply), WHARF_CLIENT_DUPLICATE);
    cr_assert_eq(reply.pressure, 1);
}

Test(client, delayed_task_goes_to_the_delayed_set)
{
    wharf_enqueue_opts t = {
        .type = "later", .payload = "soon", .payload_len = 4, .delay_ms = 5000};
    wharf_enqueue_reply reply;
    long long before = redis_ms(), due, after;
    redisReply *hash;

    cr_assert_eq(wharf_enqueue(client, &t, &reply), WHARF_CLIENT_OK);
    after = redis_ms();
    cr_assert_eq(test_redis_int(redis, "XLEN wharf:{later}:stream"), 0);
    due = test_redis_int(redis, "ZSCORE wharf:{later}:delayed %s", reply.id);
    cr_assert(due >= before + 5000 && due <= after + 5000, "due %lld", due);
    hash = test_redis_command(redis, "HGETALL wharf:{later}:task:%s", reply.id);
    cr_assert_eq(hash->elements, 12);
    assert_field(hash, "id", reply.id);
    assert_field(hash, "type", "later");
    assert_field(hash, "payload", "soon");
    assert_field(hash, "attempt", "1");
    cr_assert(matches(TRACE_RE, field(hash, "trace")->str));
    cr_assert(field(hash, "enqueued_at") != NULL);
    freeReplyObject(hash);
    cr_assert_eq(test_redis_int(redis, "SISMEMBER wharf:types later"), 1);
}

Test(client, bad_names_are_refused_before_redis)
{
    char long_id[202], long_type[102];
    wharf_enqueue_opts t = {.type = "ok", .payload = "x", .payload_len = 1};
    wharf_enqueue_reply reply;
    const char *bad_types[] = {"", "a b", "a:b", "a{b}", "ü", long_type};
    const char *bad_ids[] = {"", "a b", "tab\there", "é", long_id};
    void *data;
    size_t len;

    memset(long_id, 'i', 201);
    long_id[201] = '\0';
    memset(long_type, 't', 101);
    long_type[101] = '\0';
    /* With the server gone, anything that reached Redis would say
     * UNAVAILABLE. */
    test_redis_stop(&server);
    for (size_t i = 0; i < sizeof(bad_types) / sizeof(*bad_types); i++) {
        t.type = bad_types[i];
        cr_assert_eq(wharf_enqueue(client, &t, &reply), WHARF_CLIENT_BAD_INPUT,
                     "type '%s'", bad_types[i]);
        cr_assert(strstr(wharf_client_errstr(client), "is not valid"));
    }
    t.type = NULL;
    cr_assert_eq(wharf_enqueue(client, &t, &reply), WHARF_CLIENT_BAD_INPUT);
    t.type = "ok";
    for (size_t i = 0; i < sizeof(bad_ids) / sizeof(*bad_ids); i++) {
        t.id = bad_ids[i];
        cr_assert_eq(wharf_enqueue(client, &t, &reply), WHARF_CLIENT_BAD_INPUT,
                     "id '%s'", bad_ids[i]);
        cr_assert_null(strchr(wharf_client_errstr(client), '\n'));
        cr_assert_null(strchr(wharf_client_errstr(client), '\t'));
    }
    t.id = NULL;
    t.trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-1";
    cr_assert_eq(wharf_enqueue(client, &t, &reply), WHARF_CLIENT_BAD_INPUT);
    t.trace = "00-00000000000000000000000000000000-b7ad6b7169203331-01";
    cr_assert_eq(wharf_enqueue(client, &t, &reply), WHARF_CLIENT_BAD_INPUT);
    t.trace = "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01";
    cr_assert_eq(wharf_enqueue(client, &t, &reply), WHARF_CLIENT_BAD_INPUT);
    t.trace = NULL;
    t.delay_ms = -1;
    cr_assert_eq(wharf_enqueue(client, &t, &reply), WHARF_CLIENT_BAD_INPUT);
    t.delay_ms = 0;
    t.payload = NULL;
    cr_assert_eq(wharf_enqueue(client, &t, &reply), WHARF_CLIENT_BAD_INPUT);
    cr_assert_eq(wharf_result_get(client, "a b", "x", &data, &len),
                 WHARF_CLIENT_BAD_INPUT);
    cr_assert_eq(wharf_result_get(client, "ok", "x y", &data, &len),
                 WHARF_CLIENT_BAD_INPUT);
    /* And a good task now finds Redis gone. */
    t.payload = "x";
    cr_assert_eq(wharf_enqueue(client, &t, &reply), WHARF_CLIENT_UNAVAILABLE);
}

Test(client, limits_of_names_are_accepted)
{
    char id[201], type[101];
    wharf_enqueue_opts t = {
        .type = type, .payload = "x", .payload_len = 1, .id = id};
    wharf_enqueue_reply reply;

    memset(id, '~', 200);
    id[0] = '!';
    id[200] = '\0';
    memset(type, 'T', 100);
    type[100] = '\0';
    type[0] = '.';
    type[1] = '_';
    type[2] = '-';
    cr_assert_eq(wharf_enqueue(client, &t, &reply), WHARF_CLIENT_OK, "%s",
                 wharf_client_errstr(client));
    cr_assert_str_eq(reply.id, id);
}

Test(client, trace_is_kept_or_made)
{
    const char *given =
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    wharf_enqueue_opts t = {
        .type = "tr", .payload = "1", .payload_len = 1, .trace = given};
    wharf_enqueue_reply reply;
    const redisReply *f;
    redisReply *r;

    cr_assert_eq(wharf_enqueue(client, &t, &reply), WHARF_CLIENT_OK);
    r = only_entry("wharf:{tr}:stream", &f);
    assert_field(f, "trace", given);
    freeReplyObject(r);
    /* Made ones are fresh for every task. */
    t.trace = NULL;
    t.type = "tr2";
    cr_assert_eq(wharf_enqueue(client, &t, &reply), WHARF_CLIENT_OK);
    t.payload = "2";
    cr_assert_eq(wharf_enqueue(client, &t, &reply), WHARF_CLIENT_OK);
    r = test_redis_command(redis, "XRANGE wharf:{tr2}:stream - +");
    cr_assert_eq(r->elements, 2);
    cr_assert(
        matches(TRACE_RE, field(r->element[0]->element[1], "trace")->str));
    cr_assert_str_neq(field(r->element[0]->element[1], "trace")->str,
                      field(r->element[1]->element[1], "trace")->str);
    freeReplyObject(r);
}

Test(client, binary_payload_round_trips)
{
    const char payload[] = {'a', '\0', 'b', '\n', (char)0xff, '\0'};
    wharf_enqueue_opts t = {
        .type = "bin", .payload = payload, .payload_len = sizeof(payload)};
    wharf_enqueue_reply reply;
    const redisReply *f;
    redisReply *r;
    char want[65];
    void *data = NULL;
    size_t len = 0;

    cr_assert_eq(wharf_enqueue(client, &t, &reply), WHARF_CLIENT_OK);
    hash_id("bin", payload, sizeof(payload), want);
    cr_assert_str_eq(reply.id, want);
    r = only_entry("wharf:{bin}:stream", &f);
    cr_assert_eq(field(f, "payload")->len, sizeof(payload));
    cr_assert_eq(memcmp(field(f, "payload")->str, payload, sizeof(payload)), 0);
    freeReplyObject(r);
    freeReplyObject(test_redis_command(redis, "SET wharf:{bin}:result:%s %b",
                                       reply.id, payload, sizeof(payload)));
    cr_assert_eq(wharf_result_get(client, "bin", reply.id, &data, &len),
                 WHARF_CLIENT_OK);
    cr_assert_eq(len, sizeof(payload));
    cr_assert_eq(memcmp(data, payload, len), 0);
    cr_assert_eq(((char *)data)[len], '\0', "a NUL after the bytes");
    wharf_free(data);
}

Test(client, result_get_and_missing)
{
    void *data = (void *)1;
    size_t len = 7;

    cr_assert_eq(wharf_result_get(client, "r", "none", &data, &len),
                 WHARF_CLIENT_NOT_FOUND);
    cr_assert_eq(data, (void *)1, "untouched on failure");
    cr_assert_eq(len, 7);
    freeReplyObject(test_redis_command(redis, "SET wharf:{r}:result:e %s", ""));
    cr_assert_eq(wharf_result_get(client, "r", "e", &data, &len),
                 WHARF_CLIENT_OK);
    cr_assert_eq(len, 0, "an empty result is a result");
    wharf_free(data);
}

/* Sets key to value after ms, from a child process. */
static pid_t set_later(const char *key, const char *value, int ms)
{
    pid_t pid = fork();

    cr_assert(pid >= 0);
    if (pid == 0) {
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        redisContext *c;
        nanosleep(&ts, NULL);
        c = redisConnect("127.0.0.1", server.port);
        if (c && !c->err)
            freeReplyObject(redisCommand(c, "SET %s %s", key, value));
        _exit(0);
    }
    return pid;
}

Test(client, result_wait_finds_a_late_result)
{
    void *data = NULL;
    size_t len = 0;
    long long start = now_ms();
    pid_t child = set_later("wharf:{w}:result:t1", "done", 100);

    /* The wait is an event's deadline, not a window: a loaded machine
     * may run the child late, never early. */
    cr_assert_eq(wharf_result_wait(client, "w", "t1", 120000, &data, &len),
                 WHARF_CLIENT_OK, "%s", wharf_client_errstr(client));
    cr_assert(now_ms() - start >= 90);
    cr_assert_eq(len, 4);
    cr_assert_eq(memcmp(data, "done", 4), 0);
    wharf_free(data);
    waitpid(child, NULL, 0);
}

Test(client, result_wait_times_out)
{
    void *data = NULL;
    size_t len = 0;
    long long start = now_ms(), took;

    cr_assert_eq(wharf_result_wait(client, "w", "never", 200, &data, &len),
                 WHARF_CLIENT_TIMEOUT);
    took = now_ms() - start;
    /* At least the whole wait; the upper bound only catches a wait that
     * never ends, whatever the load. */
    cr_assert(took >= 195 && took < 60000, "took %lld ms", took);
    cr_assert(strstr(wharf_client_errstr(client), "after 200 ms"), "%s",
              wharf_client_errstr(client));
    cr_assert_null(data);
}

Test(client, closed_port_is_unavailable)
{
    wharf_client *c = (wharf_client *)1;
    char err[256] = "";
    int port = server.port;
    char url[64];

    test_redis_stop(&server);
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d/0", port);
    cr_assert_eq(wharf_client_open(&c, url, NULL, NULL, err, sizeof(err)),
                 WHARF_CLIENT_UNAVAILABLE);
    cr_assert_eq(c, (wharf_client *)1, "untouched on failure");
    cr_assert(strstr(err, url), "%s", err);
    cr_assert_null(strchr(err, '\n'));
    cr_assert_eq(
        wharf_client_open(&c, "http://x", NULL, NULL, err, sizeof(err)),
        WHARF_CLIENT_BAD_INPUT);
    cr_assert_eq(wharf_client_open(&c, NULL, NULL, "a{b}", err, sizeof(err)),
                 WHARF_CLIENT_BAD_INPUT);
}

/* open's err is optional, and a short one gets the message cut to fit. */
Test(client, open_message_fits_the_room_given)
{
    wharf_client *c = (wharf_client *)1;
    char small[12];

    cr_assert_eq(wharf_client_open(&c, "http://x", NULL, NULL, NULL, 0),
                 WHARF_CLIENT_BAD_INPUT);
    memset(small, 'x', sizeof(small));
    cr_assert_eq(wharf_client_open(&c, "http://x", NULL, NULL, small, 0),
                 WHARF_CLIENT_BAD_INPUT);
    cr_assert_eq(small[0], 'x', "errlen 0: nothing written");
    cr_assert_eq(
        wharf_client_open(&c, "http://x", NULL, NULL, small, sizeof(small)),
        WHARF_CLIENT_BAD_INPUT);
    cr_assert_str_eq(small, "bad Redis U");
    cr_assert_eq(c, (wharf_client *)1, "untouched on failure");
}

Test(client, reconnects_after_redis_comes_back)
{
    wharf_enqueue_reply reply;

    cr_assert_eq(enqueue("re", "1", &reply), WHARF_CLIENT_OK);
    test_redis_stop(&server);
    cr_assert_eq(enqueue("re", "2", &reply), WHARF_CLIENT_UNAVAILABLE);
    test_redis_restart(&server);
    redisFree(redis);
    redis = test_redis_connect(&server);
    /* A new server has no scripts: NOSCRIPT is handled too. */
    cr_assert_eq(enqueue("re", "3", &reply), WHARF_CLIENT_OK, "%s",
                 wharf_client_errstr(client));
}

Test(client, prefix_and_password)
{
    wharf_client *c = NULL;
    wharf_enqueue_reply reply;
    char err[256];

    cr_assert_eq(
        wharf_client_open(&c, server.url, NULL, "myapp", err, sizeof(err)),
        WHARF_CLIENT_OK, "%s", err);
    {
        wharf_enqueue_opts t = {.type = "p", .payload = "x", .payload_len = 1};
        cr_assert_eq(wharf_enqueue(c, &t, &reply), WHARF_CLIENT_OK);
    }
    cr_assert_eq(test_redis_int(redis, "XLEN myapp:{p}:stream"), 1);
    cr_assert_eq(test_redis_int(redis, "SISMEMBER myapp:types p"), 1);
    wharf_client_close(c);
    freeReplyObject(test_redis_command(redis, "CONFIG SET requirepass s3cret"));
    c = NULL;
    /* A refused password is not "try later": retrying cannot fix it. */
    cr_assert_eq(
        wharf_client_open(&c, server.url, "wrong", NULL, err, sizeof(err)),
        WHARF_CLIENT_AUTH, "%s", err);
    cr_assert_eq(
        wharf_client_open(&c, server.url, "s3cret", NULL, err, sizeof(err)),
        WHARF_CLIENT_OK, "%s", err);
    wharf_client_close(c);
    wharf_client_close(NULL);
}

Test(client, bulk_enqueue_of_ten_thousand)
{
    enum { N = 10000 };
    wharf_enqueue_opts *tasks = calloc(N, sizeof(*tasks));
    wharf_enqueue_reply *replies = calloc(N, sizeof(*replies));
    char *payloads = calloc(N, 16);
    char want[65];

    cr_assert(tasks && replies && payloads);
    for (int i = 0; i < N; i++) {
        int n = snprintf(payloads + 16 * i, 16, "task-%d", i);
        tasks[i].type = "bulk";
        tasks[i].payload = payloads + 16 * i;
        tasks[i].payload_len = (size_t)n;
    }
    cr_assert_eq(wharf_enqueue_batch(client, tasks, N, replies),
                 WHARF_CLIENT_OK, "%s", wharf_client_errstr(client));
    for (int i = 0; i < N; i++) {
        cr_assert_eq(replies[i].status, WHARF_CLIENT_OK, "task %d", i);
        hash_id("bulk", tasks[i].payload, tasks[i].payload_len, want);
        cr_assert_str_eq(replies[i].id, want, "task %d", i);
    }
    cr_assert_eq(test_redis_int(redis, "XLEN wharf:{bulk}:stream"), N);
    /* In order: the stream holds them as given. */
    {
        redisReply *r =
            test_redis_command(redis, "XRANGE wharf:{bulk}:stream - + COUNT 3");
        assert_field(r->element[0]->element[1], "payload", "task-0");
        assert_field(r->element[2]->element[1], "payload", "task-2");
        freeReplyObject(r);
    }
    cr_assert_eq(wharf_enqueue_batch(client, tasks, N, replies),
                 WHARF_CLIENT_OK);
    for (int i = 0; i < N; i++)
        cr_assert_eq(replies[i].status, WHARF_CLIENT_DUPLICATE, "task %d", i);
    cr_assert_eq(test_redis_int(redis, "XLEN wharf:{bulk}:stream"), N);
    free(tasks);
    free(replies);
    free(payloads);
}

Test(client, batch_mixes_types_delays_and_refusals)
{
    wharf_enqueue_opts t[6] = {
        {.type = "m1", .payload = "a", .payload_len = 1},
        {.type = "m1", .payload = "b", .payload_len = 1, .delay_ms = 1000},
        {.type = "bad type", .payload = "c", .payload_len = 1},
        {.type = "m2", .payload = "toolong", .payload_len = 7},
        {.type = "m1", .payload = "a", .payload_len = 1},
        {.type = "m2", .payload = "ok", .payload_len = 2, .id = "i-1"},
    };
    wharf_enqueue_reply r[6];

    freeReplyObject(
        test_redis_command(redis, "HSET wharf:{m2}:policy max_payload 5"));
    cr_assert_eq(wharf_enqueue_batch(client, t, 6, r), WHARF_CLIENT_OK);
    cr_assert_eq(r[0].status, WHARF_CLIENT_OK);
    cr_assert_eq(r[1].status, WHARF_CLIENT_OK);
    cr_assert_eq(r[2].status, WHARF_CLIENT_BAD_INPUT);
    cr_assert_eq(r[3].status, WHARF_CLIENT_TOO_LARGE);
    cr_assert_eq(r[3].limit, 5);
    cr_assert_eq(r[4].status, WHARF_CLIENT_DUPLICATE);
    cr_assert_str_eq(r[4].id, r[0].id);
    cr_assert_eq(r[5].status, WHARF_CLIENT_OK);
    cr_assert_str_eq(r[5].id, "i-1");
    cr_assert_eq(test_redis_int(redis, "XLEN wharf:{m1}:stream"), 1);
    cr_assert_eq(test_redis_int(redis, "ZCARD wharf:{m1}:delayed"), 1);
    cr_assert_eq(test_redis_int(redis, "XLEN wharf:{m2}:stream"), 1);
    cr_assert_eq(wharf_enqueue_batch(client, t, 0, r), WHARF_CLIENT_OK);
}

Test(client, batch_survives_a_script_flush)
{
    wharf_enqueue_opts t[2] = {
        {.type = "sf", .payload = "a", .payload_len = 1},
        {.type = "sf", .payload = "b", .payload_len = 1},
    };
    wharf_enqueue_reply r[2];

    cr_assert_eq(wharf_enqueue_batch(client, t, 1, r), WHARF_CLIENT_OK);
    freeReplyObject(test_redis_command(redis, "SCRIPT FLUSH"));
    cr_assert_eq(wharf_enqueue_batch(client, t, 2, r), WHARF_CLIENT_OK);
    cr_assert_eq(r[0].status, WHARF_CLIENT_DUPLICATE);
    cr_assert_eq(r[1].status, WHARF_CLIENT_OK);
}

Test(client, batch_backpressure_counts_the_batch)
{
    enum { N = 5 };
    wharf_enqueue_opts t[N];
    wharf_enqueue_reply r[N];
    char payloads[N][4];

    freeReplyObject(
        test_redis_command(redis, "HSET wharf:{bb}:policy max_backlog 3"));
    for (int i = 0; i < N; i++) {
        snprintf(payloads[i], sizeof(payloads[i]), "%d", i);
        t[i] = (wharf_enqueue_opts){.type = "bb",
                                    .payload = payloads[i],
                                    .payload_len = strlen(payloads[i])};
    }
    cr_assert_eq(wharf_enqueue_batch(client, t, N, r), WHARF_CLIENT_OK);
    for (int i = 0; i < N; i++)
        cr_assert_eq(r[i].status,
                     i < 3 ? WHARF_CLIENT_OK : WHARF_CLIENT_BACKPRESSURE,
                     "task %d", i);
    cr_assert_eq(test_redis_int(redis, "XLEN wharf:{bb}:stream"), 3);
}

Test(client, batch_on_a_dead_redis)
{
    wharf_enqueue_opts t = {.type = "d", .payload = "a", .payload_len = 1};
    wharf_enqueue_reply r[1];

    test_redis_stop(&server);
    cr_assert_eq(wharf_enqueue_batch(client, &t, 1, r),
                 WHARF_CLIENT_UNAVAILABLE);
    cr_assert_eq(r[0].status, WHARF_CLIENT_UNAVAILABLE);
}

Test(client, status_names_and_errstr)
{
    cr_assert_str_eq(wharf_client_status_name(WHARF_CLIENT_OK), "ok");
    cr_assert_str_eq(wharf_client_status_name(WHARF_CLIENT_BACKPRESSURE),
                     "backpressure");
    cr_assert_str_eq(wharf_client_errstr(NULL), "");
    cr_assert_eq(WHARF_CLIENT_DUPLICATE, 1);
    cr_assert_eq(WHARF_CLIENT_ERROR, 8, "the numbers never change");
    cr_assert_eq(WHARF_CLIENT_AUTH, 9);
    cr_assert_eq(WHARF_CLIENT_FULL, 10);
    cr_assert_str_eq(wharf_client_status_name(WHARF_CLIENT_AUTH), "auth");
    cr_assert_str_eq(wharf_client_status_name(WHARF_CLIENT_FULL), "full");
}

/* ---- Redis addresses: the userinfo is percent-decoded (RFC 3986) ---- */

Test(client, url_userinfo_is_percent_decoded)
{
    redis_url u;
    char err[256];

    cr_assert_eq(redis_url_parse("redis://:p%40ss%3Aw%2Fd%25@h:1/2", &u, err,
                                 sizeof(err)),
                 0, "%s", err);
    cr_assert_str_eq(u.password, "p@ss:w/d%");
    cr_assert_str_eq(u.user, "");
    cr_assert_str_eq(u.host, "h");
    cr_assert_eq(u.port, 1);
    cr_assert_eq(u.db, 2);
    cr_assert_eq(redis_url_parse("redis://us%65r:a%2fb@h", &u, err,
                                 sizeof(err)),
                 0, "%s", err);
    cr_assert_str_eq(u.user, "user");
    cr_assert_str_eq(u.password, "a/b");
    /* A password alone, as redis-cli takes it, decoded too. */
    cr_assert_eq(redis_url_parse("redis://s%3Acret@h", &u, err, sizeof(err)),
                 0, "%s", err);
    cr_assert_str_eq(u.password, "s:cret");
    /* Plain characters are kept as they are. */
    cr_assert_eq(redis_url_parse("redis://:a+b~c!@h", &u, err, sizeof(err)),
                 0, "%s", err);
    cr_assert_str_eq(u.password, "a+b~c!");
}

Test(client, url_with_a_bad_escape_is_refused)
{
    static const char *const bad[] = {
        "redis://:abc%@h", "redis://:abc%4@h", "redis://:a%zzb@h",
        "redis://us%g1:pw@h", "redis://:a%00b@h"};
    redis_url u;
    char err[256];
    wharf_client *c = NULL;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        cr_assert_eq(redis_url_parse(bad[i], &u, err, sizeof(err)), -1,
                     "%s accepted", bad[i]);
        cr_assert(strstr(err, i == 3 ? "user" : "password") != NULL,
                  "%s: '%s' does not name the part", bad[i], err);
        cr_assert(strstr(err, "%") != NULL, "%s: '%s'", bad[i], err);
    }
    cr_assert_eq(wharf_client_open(&c, "redis://:a%zz@127.0.0.1:1", NULL,
                                   NULL, err, sizeof(err)),
                 WHARF_CLIENT_BAD_INPUT);
    cr_assert(strstr(err, "bad percent-encoding in the password"), "%s", err);
    cr_assert_null(c);
}

Test(client, percent_encoded_password_authenticates)
{
    static const char secret[] = "p@ss:w/rd%";
    wharf_client *c = NULL;
    wharf_enqueue_reply reply;
    char url[128], err[512];

    freeReplyObject(test_redis_command(redis, "CONFIG SET requirepass %s",
                                       secret));
    snprintf(url, sizeof(url), "redis://:p%%40ss%%3Aw%%2Frd%%25@127.0.0.1:%d/0",
             server.port);
    cr_assert_eq(wharf_client_open(&c, url, NULL, NULL, err, sizeof(err)),
                 WHARF_CLIENT_OK, "%s", err);
    cr_assert_eq(wharf_enqueue(c,
                               &(wharf_enqueue_opts){.type = "pw",
                                                     .payload = "x",
                                                     .payload_len = 1},
                               &reply),
                 WHARF_CLIENT_OK, "%s", wharf_client_errstr(c));
    wharf_client_close(c);
    /* The same with a user: the default user takes AUTH user pass. */
    snprintf(url, sizeof(url),
             "redis://default:p%%40ss%%3Aw%%2Frd%%25@127.0.0.1:%d/0",
             server.port);
    c = NULL;
    cr_assert_eq(wharf_client_open(&c, url, NULL, NULL, err, sizeof(err)),
                 WHARF_CLIENT_OK, "%s", err);
    wharf_client_close(c);
}

/* ---- a Redis that wants a password ---- */

Test(client, missing_or_wrong_password_says_so)
{
    static const char *const args[] = {NULL};
    test_redis locked;
    wharf_client *c = NULL;
    char err[512], url[128];

    test_redis_start_with(&locked, "s3cret", args);
    cr_assert_eq(wharf_client_open(&c, locked.url, NULL, NULL, err,
                                   sizeof(err)),
                 WHARF_CLIENT_AUTH, "%s", err);
    cr_assert_null(c);
    cr_assert(strstr(err, locked.url), "names the address: %s", err);
    cr_assert(strstr(err, "authentication required: set a password in the "
                          "URL (redis://:PASSWORD@host) or "
                          "WHARF_REDIS_PASSWORD"),
              "%s", err);
    cr_assert_null(strstr(err, "Protocol error"), "%s", err);
    cr_assert(redis_url_auth_refused(err));

    cr_assert_eq(wharf_client_open(&c, locked.url, "wrong", NULL, err,
                                   sizeof(err)),
                 WHARF_CLIENT_AUTH, "%s", err);
    cr_assert(strstr(err, "authentication failed: wrong user or password "
                          "(WRONGPASS)"),
              "%s", err);
    cr_assert(redis_url_auth_refused(err));
    snprintf(url, sizeof(url), "redis://:wrong@127.0.0.1:%d/3", locked.port);
    cr_assert_eq(wharf_client_open(&c, url, NULL, NULL, err, sizeof(err)),
                 WHARF_CLIENT_AUTH, "%s", err);
    cr_assert(strstr(err, "(WRONGPASS)"), "%s", err);
    /* No password, but a database to SELECT: that asks too. */
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d/3", locked.port);
    cr_assert_eq(wharf_client_open(&c, url, NULL, NULL, err, sizeof(err)),
                 WHARF_CLIENT_AUTH, "%s", err);
    cr_assert(strstr(err, "authentication required"), "%s", err);
    cr_assert_eq(wharf_client_open(&c, locked.url, "s3cret", NULL, err,
                                   sizeof(err)),
                 WHARF_CLIENT_OK, "%s", err);
    wharf_client_close(c);
    test_redis_stop(&locked);

    /* A password for a Redis that has none is a mistake too. */
    cr_assert_eq(wharf_client_open(&c, server.url, "s3cret", NULL, err,
                                   sizeof(err)),
                 WHARF_CLIENT_AUTH, "%s", err);
    cr_assert(strstr(err, "this Redis has none"), "%s", err);
    /* And an unreachable one is not an authentication failure. */
    cr_assert_not(redis_url_auth_refused(
        "redis://127.0.0.1:1/0: Connection refused"));
}

/* ---- a Redis at maxmemory ---- */

Test(client, full_redis_is_full_and_nothing_is_written)
{
    static const char *const args[] = {"--maxmemory", "1mb",
                                       "--maxmemory-policy", "noeviction",
                                       NULL};
    static char payload[64 * 1024];
    test_redis full;
    redisContext *rc;
    wharf_client *c = NULL;
    wharf_enqueue_reply reply;
    wharf_enqueue_opts batch[3];
    wharf_enqueue_reply replies[3];
    wharf_client_status status = WHARF_CLIENT_OK;
    char err[512], id[32];
    long long before;
    int i;

    test_redis_start_with(&full, NULL, args);
    rc = test_redis_connect(&full);
    cr_assert_eq(wharf_client_open(&c, full.url, NULL, NULL, err, sizeof(err)),
                 WHARF_CLIENT_OK, "%s", err);
    memset(payload, 'x', sizeof(payload));
    /* Fill it with tasks until Redis refuses one. */
    for (i = 0; i < 1000 && status == WHARF_CLIENT_OK; i++) {
        snprintf(id, sizeof(id), "fill-%d", i);
        status = wharf_enqueue(c,
                               &(wharf_enqueue_opts){.type = "full",
                                                     .payload = payload,
                                                     .payload_len =
                                                         sizeof(payload),
                                                     .id = id},
                               &reply);
    }
    cr_assert_eq(status, WHARF_CLIENT_FULL, "after %d tasks: %s (%s)", i,
                 wharf_client_status_name(status), wharf_client_errstr(c));
    cr_assert(strstr(wharf_client_errstr(c), full.url), "%s",
              wharf_client_errstr(c));
    cr_assert(strstr(wharf_client_errstr(c),
                     "Redis is out of memory (maxmemory reached)"),
              "%s", wharf_client_errstr(c));
    cr_assert_null(strstr(wharf_client_errstr(c), "user_script"), "%s",
                   wharf_client_errstr(c));
    /* The refused task left nothing behind: no marker, no entry. */
    cr_assert_eq(test_redis_int(rc, "EXISTS wharf:{full}:seen:%s", id), 0);
    before = test_redis_int(rc, "XLEN wharf:{full}:stream");
    cr_assert_eq(before, i - 1);
    /* A batch hears it per task, and writes nothing either. */
    for (int k = 0; k < 3; k++) {
        batch[k] = (wharf_enqueue_opts){.type = "full",
                                        .payload = payload,
                                        .payload_len = 100 + (size_t)k};
    }
    cr_assert_eq(wharf_enqueue_batch(c, batch, 3, replies), WHARF_CLIENT_OK,
                 "%s", wharf_client_errstr(c));
    for (int k = 0; k < 3; k++)
        cr_assert_eq(replies[k].status, WHARF_CLIENT_FULL, "task %d: %s", k,
                     wharf_client_status_name(replies[k].status));
    cr_assert_eq(test_redis_int(rc, "XLEN wharf:{full}:stream"), before);
    wharf_client_close(c);
    redisFree(rc);
    test_redis_stop(&full);
}


Test(client, shared_library_exports_only_the_api)
{
    void *lib = dlopen(WHARF_BINARY_DIR "/sdk/libwharf-client.so",
                       RTLD_NOW | RTLD_LOCAL);
    const char *api[] = {
        "wharf_client_open",        "wharf_client_close", "wharf_client_errstr",
        "wharf_client_status_name", "wharf_enqueue",      "wharf_enqueue_batch",
        "wharf_result_get",         "wharf_result_wait",  "wharf_free"};
    const char *hidden[] = {"key_of_type", "script_run", "redis_url_parse",
                            "client_redis", "client_valid_type"};

    cr_assert_not_null(lib, "dlopen: %s", dlerror());
    for (size_t i = 0; i < sizeof(api) / sizeof(*api); i++)
        cr_assert_not_null(dlsym(lib, api[i]), "%s not exported", api[i]);
    for (size_t i = 0; i < sizeof(hidden) / sizeof(*hidden); i++)
        cr_assert_null(dlsym(lib, hidden[i]), "%s exported", hidden[i]);
    dlclose(lib);
}

/* A stream key of the wrong kind: the enqueue is refused with a line
 * that says so, and nothing is left (no seen marker, which would make
 * the next try a DUPLICATE of a task that exists nowhere); once the key
 * is fixed the same enqueue goes in. */
Test(client, enqueue_into_a_stream_of_the_wrong_kind_writes_nothing)
{
    wharf_enqueue_opts t = {.type = "wk", .payload = "p", .payload_len = 1};
    wharf_enqueue_reply reply;

    freeReplyObject(test_redis_command(redis, "SET wharf:{wk}:stream oops"));
    cr_assert_eq(wharf_enqueue(client, &t, &reply), WHARF_CLIENT_ERROR);
    cr_assert_str_eq(wharf_client_errstr(client),
                     "enqueue: redis answered: WRONGTYPE wharf:{wk}:stream "
                     "holds a string, not a stream: nothing was enqueued");
    cr_assert_eq(test_redis_int(redis, "DBSIZE"), 1, "a key was written");
    freeReplyObject(test_redis_command(redis, "DEL wharf:{wk}:stream"));
    cr_assert_eq(wharf_enqueue(client, &t, &reply), WHARF_CLIENT_OK, "%s",
                 wharf_client_errstr(client));
    cr_assert_eq(reply.duplicate, 0);
    cr_assert_eq(test_redis_int(redis, "XLEN wharf:{wk}:stream"), 1);
}

/* 0 if a program exec'd now would not have fd open: the child shell
 * looks at its own fd table. */
static int exec_sees_fd(int fd)
{
    char line[160];
    pid_t pid;
    int status;

    snprintf(line, sizeof(line),
             "case \"$(readlink /proc/$$/fd/%d)\" in socket:*) exit 1;; "
             "esac; exit 0",
             fd);
    pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", line, (char *)NULL);
        _exit(127);
    }
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) != 127);
    return WEXITSTATUS(status);
}

/* A program a plugin starts with exec must not keep the worker's Redis
 * connection: every connection is made by redis_url_connect, which sets
 * close-on-exec on its socket. */
Test(client, redis_connections_are_closed_on_exec)
{
    redis_url url;
    redisContext *c;
    char err[256];

    cr_assert_eq(redis_url_parse(server.url, &url, err, sizeof(err)), 0);
    c = redis_url_connect(&url, NULL, 5000, err, sizeof(err));
    cr_assert_not_null(c, "%s", err);
    cr_assert(fcntl(c->fd, F_GETFD) & FD_CLOEXEC);
    cr_assert_eq(exec_sees_fd(c->fd), 0, "the exec'd program has fd %d", c->fd);
    /* The check itself sees a socket without the flag. */
    cr_assert_eq(fcntl(c->fd, F_SETFD, 0), 0);
    cr_assert_eq(exec_sees_fd(c->fd), 1);
    redisFree(c);

    /* The client's own connection, as a worker's is. */
    cr_assert_not_null(client_redis_of(client, "wharf:{t}:stream"), "%s",
                       wharf_client_errstr(client));
    cr_assert(fcntl(client_redis_of(client, "wharf:{t}:stream")->fd, F_GETFD) &
              FD_CLOEXEC);
}
