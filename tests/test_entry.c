/* Stream entries into tasks: a good entry fills every task field; each
 * kind of bad entry is named precisely and still carries an id. */
#include <string.h>

#include <criterion/criterion.h>

#include "entry.h"

#define TRACE "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

static redisReply *str(const char *s)
{
    redisReply *r = calloc(1, sizeof(*r));
    r->type = REDIS_REPLY_STRING;
    r->len = strlen(s);
    r->str = strdup(s);
    return r;
}

/* An [entry-id, [k, v, ...]] reply from a NULL-terminated list. */
static redisReply *make_entry(const char *entry_id, const char *const *kv)
{
    redisReply *e = calloc(1, sizeof(*e));
    redisReply *fields = calloc(1, sizeof(*fields));
    size_t n = 0;
    while (kv[n])
        n++;
    fields->type = REDIS_REPLY_ARRAY;
    fields->elements = n;
    fields->element = calloc(n ? n : 1, sizeof(redisReply *));
    for (size_t i = 0; i < n; i++)
        fields->element[i] = str(kv[i]);
    e->type = REDIS_REPLY_ARRAY;
    e->elements = 2;
    e->element = calloc(2, sizeof(redisReply *));
    e->element[0] = str(entry_id);
    e->element[1] = fields;
    return e;
}

static policy pol = {.max_attempts = 5, .max_payload = 16};

Test(entry, good_entry_fills_the_task)
{
    const char *kv[] = {"id", "abc", "type", "t", "payload", "hello",
                        "attempt", "3", "enqueued_at", "1700000000123",
                        "trace", TRACE, "extra", "kept", NULL};
    redisReply *r = make_entry("1-0", kv);
    entry e;
    entry_parse(&e, r, "t", &pol);
    cr_assert_str_eq(e.bad, "");
    cr_assert(!e.deleted);
    cr_assert_str_eq(e.entry_id, "1-0");
    cr_assert_str_eq(e.task.id, "abc");
    cr_assert_str_eq(e.task.type, "t");
    cr_assert_eq(e.task.payload_len, 5);
    cr_assert(memcmp(e.task.payload, "hello", 5) == 0);
    cr_assert_eq(e.task.attempt, 3);
    cr_assert_eq(e.task.max_attempts, 5);
    cr_assert_eq(e.task.enqueued_at_ms, 1700000000123LL);
    cr_assert_str_eq(e.task.trace, TRACE);
    freeReplyObject(r);
}

Test(entry, deleted_entry_is_marked)
{
    redisReply *r = make_entry("2-0", (const char *[]){NULL});
    freeReplyObject(r->element[1]);
    r->element[1] = calloc(1, sizeof(redisReply));
    r->element[1]->type = REDIS_REPLY_NIL;
    entry e;
    entry_parse(&e, r, "t", &pol);
    cr_assert(e.deleted);
    freeReplyObject(r);
}

Test(entry, each_bad_field_is_named)
{
    static const struct {
        const char *kv[13];
        const char *reason;
    } cases[] = {
        {{"type", "t", "payload", "x", "attempt", "1", "enqueued_at", "1",
          "trace", TRACE, NULL},
         "missing field 'id'"},
        {{"id", "a b", "type", "t", "payload", "x", "attempt", "1",
          "enqueued_at", "1", "trace", TRACE, NULL},
         "id 'a b' is not"},
        {{"id", "a", "type", "u", "payload", "x", "attempt", "1",
          "enqueued_at", "1", "trace", TRACE, NULL},
         "type field 'u' does not match its stream 't'"},
        {{"id", "a", "type", "t", "payload", "x", "attempt", "0",
          "enqueued_at", "1", "trace", TRACE, NULL},
         "attempt '0'"},
        {{"id", "a", "type", "t", "payload", "x", "attempt", "1",
          "enqueued_at", "-5", "trace", TRACE, NULL},
         "enqueued_at '-5'"},
        {{"id", "a", "type", "t", "payload", "x", "attempt", "1",
          "enqueued_at", "1", "trace", "00-00000000000000000000000000000000-"
                                       "b7ad6b7169203331-01", NULL},
         "is not a W3C traceparent"},
        {{"id", "a", "type", "t", "payload", "0123456789abcdefg", "attempt",
          "1", "enqueued_at", "1", "trace", TRACE, NULL},
         "payload of 17 bytes is over max_payload 16"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        redisReply *r = make_entry("9-1", cases[i].kv);
        entry e;
        entry_parse(&e, r, "t", &pol);
        cr_assert(strstr(e.bad, cases[i].reason), "case %zu: '%s'", i, e.bad);
        cr_assert(e.task.id && e.task.id[0], "case %zu has no id", i);
        freeReplyObject(r);
    }
}

Test(entry, unusable_id_falls_back_to_the_entry_id)
{
    const char *kv[] = {"type", "t", "payload", "x", NULL};
    redisReply *r = make_entry("5-7", kv);
    entry e;
    entry_parse(&e, r, "t", &pol);
    cr_assert_str_eq(e.task.id, "entry-5-7");
    cr_assert_neq(e.bad[0], '\0');
    cr_assert_eq(e.task.payload_len, 1, "payload kept for the dead envelope");
    freeReplyObject(r);
}

Test(entry, trace_validation)
{
    cr_assert(entry_valid_trace(TRACE, strlen(TRACE)));
    char ff[] = TRACE;
    ff[0] = ff[1] = 'f';
    cr_assert(!entry_valid_trace(ff, strlen(ff)), "version ff is invalid");
    cr_assert(!entry_valid_trace(TRACE, strlen(TRACE) - 1));
    const char *upper = "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01";
    cr_assert(!entry_valid_trace(upper, strlen(upper)));
}

/* enqueued_at comes from Redis, where anyone may write anything: a time
 * past the year 9999 (INT64_MAX made the wait time overflow) is a bad
 * task named by its field, never undefined behaviour. */
Test(entry, enqueued_at_is_range_checked)
{
    static const struct {
        const char *value;
        bool good;
    } cases[] = {
        {"0", true},
        {"253402300799999", true}, /* 9999-12-31T23:59:59.999Z */
        {"253402300800000", false},
        {"9223372036854775806", false},
        {"9223372036854775807", false},
        {"9223372036854775808", false},
        {"99999999999999999999", false},
        {"-1", false},
        {"1e3", false},
        {" 1", false},
        {"", false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *kv[] = {
            "id",    "abc",     "type", "t",           "payload",
            "x",     "attempt", "1",    "enqueued_at", cases[i].value,
            "trace", TRACE,     NULL};
        redisReply *r = make_entry("1-0", kv);
        entry e;
        entry_parse(&e, r, "t", &pol);
        if (cases[i].good) {
            cr_assert_str_eq(e.bad, "", "%s", cases[i].value);
            cr_assert_eq(e.task.enqueued_at_ms,
                         strtoll(cases[i].value, NULL, 10));
        } else {
            cr_assert(strstr(e.bad, "enqueued_at"), "%s: '%s'", cases[i].value,
                      e.bad);
            cr_assert_eq(e.task.enqueued_at_ms, 0);
        }
        freeReplyObject(r);
    }
}

/* A task's options: its max_attempts and expiry as given, its timeout
 * only when shorter than the type's; none given leaves the type's; a
 * malformed one makes a bad task naming it. */
Test(entry, options_are_read_and_bounded)
{
    static const policy p = {
        .max_attempts = 5, .max_payload = 16, .timeout_ms = 1000};
    const char *given[] = {
        "id",         "o",   "type",         "t", "payload",    "x",
        "attempt",    "1",   "enqueued_at",  "1", "trace",      TRACE,
        "timeout_ms", "250", "max_attempts", "9", "expires_at", "1700000000000",
        NULL};
    const char *longer[] = {"id",          "o",    "type",    "t",
                            "payload",     "x",    "attempt", "1",
                            "enqueued_at", "1",    "trace",   TRACE,
                            "timeout_ms",  "5000", NULL};
    const char *none[] = {"id",    "o",       "type", "t",           "payload",
                          "x",     "attempt", "1",    "enqueued_at", "1",
                          "trace", TRACE,     NULL};
    const char *bad[] = {
        "id",          "o", "type",  "t",   "payload",    "x", "attempt", "1",
        "enqueued_at", "1", "trace", TRACE, "timeout_ms", "0", NULL};
    redisReply *r;
    entry e;

    r = make_entry("1-0", given);
    entry_parse(&e, r, "t", &p);
    cr_assert_str_eq(e.bad, "");
    cr_assert_eq(e.timeout_ms, 250);
    cr_assert_eq(e.opt_timeout_ms, 250);
    cr_assert_eq(e.task.max_attempts, 9);
    cr_assert_eq(e.opt_max_attempts, 9);
    cr_assert_eq(e.expires_at_ms, 1700000000000LL);
    freeReplyObject(r);

    r = make_entry("1-1", longer);
    entry_parse(&e, r, "t", &p);
    cr_assert_str_eq(e.bad, "");
    cr_assert_eq(e.timeout_ms, 1000, "a task cannot lengthen its timeout");
    cr_assert_eq(e.opt_timeout_ms, 5000, "but its retry keeps what it asked");
    freeReplyObject(r);

    r = make_entry("1-2", none);
    entry_parse(&e, r, "t", &p);
    cr_assert_eq(e.timeout_ms, 1000);
    cr_assert_eq(e.task.max_attempts, 5);
    cr_assert_eq(e.opt_timeout_ms + e.opt_max_attempts + e.expires_at_ms, 0);
    freeReplyObject(r);

    r = make_entry("1-3", bad);
    entry_parse(&e, r, "t", &p);
    cr_assert_str_eq(e.bad, "bad task: timeout_ms '0' is not a time in ms "
                            "from 1 to 30 days");
    freeReplyObject(r);
}
