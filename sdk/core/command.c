/* Redis commands built and encoded by hand; see command.h. */
#include "command.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tls.h"

/* The first size of each buffer: enough for a small script call. */
#define FIRST_ARGS 64
#define FIRST_TEXT 1024

void command_init(command *c)
{
    memset(c, 0, sizeof(*c));
}

/* A 64-bit number in decimal: 20 digits, a sign and the NUL. */
#define COMMAND_DIGITS_MAX 24

void command_reset(command *c)
{
    c->argc = 0;
    c->text_used = 0;
    c->wire_len = 0;
    c->numkeys_at = 0;
    c->keys = 0;
    c->plain_seen = false;
    c->err = 0;
}

void command_free(command *c)
{
    free(c->args);
    free(c->text);
    free(c->wire);
    command_init(c);
}

/* Makes *buf hold at least need bytes (elements of size), doubling. 0, or
 * -1 (ENOMEM) leaving *buf as it was. */
static int grow(void **buf, size_t *cap, size_t need, size_t size, size_t first)
{
    size_t n = *cap ? *cap : first;
    void *grown;

    if (need <= *cap)
        return 0;
    while (n < need) {
        if (n > SIZE_MAX / 2 / size)
            return -1;
        n *= 2;
    }
    grown = realloc(*buf, n * size);
    if (!grown)
        return -1;
    *buf = grown;
    *cap = n;
    return 0;
}

/* Adds an argument slot; NULL (c->err set) when out of memory or after an
 * earlier failure. */
static command_arg *add_arg(command *c)
{
    if (c->err)
        return NULL;
    if (grow((void **)&c->args, &c->args_cap, c->argc + 1, sizeof(*c->args),
             FIRST_ARGS) != 0) {
        c->err = ENOMEM;
        return NULL;
    }
    return &c->args[c->argc++];
}

/* Copies data into c's text: its offset there, or -1 (c->err set). */
static long long copy_text(command *c, const void *data, size_t len)
{
    size_t off = c->text_used;

    if (c->err)
        return -1;
    if (grow((void **)&c->text, &c->text_cap, c->text_used + len + 1, 1,
             FIRST_TEXT) != 0) {
        c->err = ENOMEM;
        return -1;
    }
    if (len > 0)
        memcpy(c->text + off, data, len);
    c->text[off + len] = '\0';
    c->text_used += len + 1;
    return (long long)off;
}

static int push_arg(command *c, const void *data, size_t len, bool copy,
                    bool key)
{
    long long off = 0;
    command_arg *a;

    if (c->numkeys_at && !key)
        c->plain_seen = true;
    if (key && c->plain_seen && !c->err)
        c->err = EINVAL; /* numkeys counts the keys right after it */
    if (copy && (off = copy_text(c, data, len)) < 0)
        return -1;
    if (!(a = add_arg(c)))
        return -1;
    a->data = copy ? NULL : data;
    a->off = (size_t)off;
    a->len = len;
    a->key = key;
    if (key)
        c->keys++;
    return 0;
}

int command_push(command *c, const void *data, size_t len)
{
    return push_arg(c, len ? data : "", len, false, false);
}

int command_push_str(command *c, const char *s)
{
    return push_arg(c, s, strlen(s), false, false);
}

int command_push_copy(command *c, const void *data, size_t len)
{
    return push_arg(c, data, len, true, false);
}

int command_push_int(command *c, long long value)
{
    char digits[COMMAND_DIGITS_MAX];
    int n = snprintf(digits, sizeof(digits), "%lld", value);

    return push_arg(c, digits, (size_t)n, true, false);
}

int command_evalsha(command *c, const char *sha)
{
    command_reset(c);
    if (push_arg(c, "EVALSHA", 7, false, false) != 0 ||
        push_arg(c, sha, strlen(sha), false, false) != 0 ||
        push_arg(c, "", 0, false, false) != 0) /* numkeys, at encode */
        return -1;
    c->numkeys_at = 2;
    return 0;
}

int command_push_key(command *c, const char *key, size_t len)
{
    return push_arg(c, key, len, false, true);
}

int command_push_key_copy(command *c, const char *key, size_t len)
{
    return push_arg(c, key, len, true, true);
}

static const char *arg_data(const command *c, const command_arg *a)
{
    return a->data ? a->data : c->text + a->off;
}

unsigned command_key_slot(const char *key, size_t len)
{
    const char *open = memchr(key, '{', len);
    uint16_t crc = 0;

    if (open) {
        size_t rest = len - (size_t)(open - key) - 1;
        const char *close = memchr(open + 1, '}', rest);
        if (close && close > open + 1) {
            key = open + 1;
            len = (size_t)(close - key);
        }
    }
    /* CRC16-CCITT (XMODEM): polynomial 0x1021, initial value 0, the one
     * the Redis Cluster spec names. Bitwise is fast enough: on a cluster
     * it runs once per command, over a hash tag (a type name). */
    for (size_t i = 0; i < len; i++) {
        crc ^= (uint16_t)((unsigned char)key[i] << 8);
        for (int bit = 0; bit < 8; bit++)
            crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021)
                                 : (uint16_t)(crc << 1);
    }
    return crc & 16383;
}

long command_first_key_slot(const command *c)
{
    for (size_t i = 0; i < c->argc; i++)
        if (c->args[i].key)
            return command_key_slot(arg_data(c, &c->args[i]), c->args[i].len);
    return -1;
}

long command_mixed_slot(const command *c)
{
    unsigned first = 0;
    long k = 0;

    for (size_t i = 0; i < c->argc; i++) {
        const command_arg *a = &c->args[i];
        unsigned slot;
        if (!a->key)
            continue;
        slot = command_key_slot(arg_data(c, a), a->len);
        if (k == 0)
            first = slot;
        else if (slot != first)
            return k;
        k++;
    }
    return -1;
}

#ifndef NDEBUG
/* The key of c with index k (among the keys). */
static const command_arg *key_at(const command *c, long k)
{
    for (size_t i = 0; i < c->argc; i++)
        if (c->args[i].key && k-- == 0)
            return &c->args[i];
    return NULL;
}

static void check_slots(const command *c)
{
    long k = command_mixed_slot(c);
    const command_arg *a, *b;

    if (k < 0)
        return;
    a = key_at(c, 0);
    b = key_at(c, k);
    fprintf(stderr,
            "wharf: bug: a script call's keys are in two Redis Cluster "
            "slots: '%.*s' (slot %u) and '%.*s' (slot %u)\n",
            (int)a->len, arg_data(c, a),
            command_key_slot(arg_data(c, a), a->len), (int)b->len,
            arg_data(c, b), command_key_slot(arg_data(c, b), b->len));
    abort();
}
#endif

/* Writes "<c><n>\r\n" at out; returns the bytes written. */
static size_t put_header(char *out, char c, size_t n)
{
    char digits[COMMAND_DIGITS_MAX];
    size_t k = 0, len = 0;

    do {
        digits[k++] = (char)('0' + n % 10);
        n /= 10;
    } while (n > 0);
    out[len++] = c;
    while (k > 0)
        out[len++] = digits[--k];
    out[len++] = '\r';
    out[len++] = '\n';
    return len;
}

int command_encode(command *c)
{
    char numkeys[COMMAND_DIGITS_MAX];
    size_t need = 32, used = 0;

    if (c->err)
        return -1;
    if (c->argc == 0) {
        c->err = EINVAL;
        return -1;
    }
#ifndef NDEBUG
    if (c->numkeys_at)
        check_slots(c);
#endif
    if (c->numkeys_at) {
        int n = snprintf(numkeys, sizeof(numkeys), "%zu", c->keys);
        c->args[c->numkeys_at].data = numkeys;
        c->args[c->numkeys_at].len = (size_t)n;
    }
    for (size_t i = 0; i < c->argc; i++)
        need += c->args[i].len + 32;
    if (grow((void **)&c->wire, &c->wire_cap, need, 1, FIRST_TEXT) != 0) {
        c->err = ENOMEM;
        return -1;
    }
    used += put_header(c->wire, '*', c->argc);
    for (size_t i = 0; i < c->argc; i++) {
        const command_arg *a = &c->args[i];
        used += put_header(c->wire + used, '$', a->len);
        memcpy(c->wire + used, arg_data(c, a), a->len);
        used += a->len;
        c->wire[used++] = '\r';
        c->wire[used++] = '\n';
    }
    if (c->numkeys_at) {
        /* numkeys lived on this stack: filled in again at each encode. */
        c->args[c->numkeys_at].data = "";
        c->args[c->numkeys_at].len = 0;
    }
    c->wire_len = used;
    return 0;
}

int command_append(command *c, redisContext *rc)
{
    if (command_encode(c) != 0)
        return -1;
    return redisAppendFormattedCommand(rc, c->wire, c->wire_len) == REDIS_OK
               ? 0
               : -1;
}

redisReply *command_run(command *c, redisContext *rc)
{
    void *reply = NULL;

    if (command_append(c, rc) != 0)
        return NULL;
    if (tls_get_reply(rc, &reply) != REDIS_OK)
        return NULL;
    return reply;
}
