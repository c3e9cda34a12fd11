/* Building the host's frames and reading the handler's, versions 1 and 2
 * of the coprocess wire format (coprocess_frame.h, docs/handlers.md). */
#include "coprocess_frame.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put(frame_out *out, const void *data, size_t len)
{
    if (out->failed)
        return;
    if (out->len + len > (size_t)FRAME_MAX + 4) {
        out->failed = 1;
        return;
    }
    if (out->len + len > out->cap) {
        size_t cap = out->cap ? out->cap : 256;
        unsigned char *grown;

        while (cap < out->len + len)
            cap *= 2;
        if ((grown = realloc(out->data, cap)) == NULL) {
            out->failed = 1;
            return;
        }
        out->data = grown;
        out->cap = cap;
    }
    if (len > 0)
        memcpy(out->data + out->len, data, len);
    out->len += len;
}

static void put_u32(frame_out *out, uint32_t v)
{
    unsigned char b[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 8), (unsigned char)v};

    put(out, b, sizeof b);
}

static void put_u64(frame_out *out, uint64_t v)
{
    put_u32(out, (uint32_t)(v >> 32));
    put_u32(out, (uint32_t)v);
}

static void put_bytes(frame_out *out, const void *data, size_t len)
{
    if (len > FRAME_MAX) {
        out->failed = 1;
        return;
    }
    put_u32(out, (uint32_t)len);
    put(out, data, len);
}

static void put_string(frame_out *out, const char *s)
{
    put_bytes(out, s ? s : "", s ? strlen(s) : 0);
}

/* Starts a frame: a length to be filled by end(), the kind, the id. */
static void begin(frame_out *out, unsigned char kind, uint32_t request)
{
    out->len = 0;
    out->failed = 0;
    put_u32(out, 0);
    put(out, &kind, 1);
    put_u32(out, request);
}

static int end(frame_out *out)
{
    uint32_t len;

    if (out->failed)
        return -1;
    len = (uint32_t)(out->len - 4);
    out->data[0] = (unsigned char)(len >> 24);
    out->data[1] = (unsigned char)(len >> 16);
    out->data[2] = (unsigned char)(len >> 8);
    out->data[3] = (unsigned char)len;
    return 0;
}

int frame_hello(frame_out *out, uint32_t inflight)
{
    begin(out, FRAME_HELLO, 0);
    put_u32(out, FRAME_VERSION);
    put_u32(out, inflight);
    return end(out);
}

int frame_task_build(frame_out *out, uint32_t request, const frame_task *t)
{
    begin(out, FRAME_TASK, request);
    put_u32(out, t->attempt);
    put_u32(out, t->max_attempts);
    put_u64(out, t->fence);
    put_u64(out, (uint64_t)t->enqueued_at_ms);
    put_u64(out, (uint64_t)t->deadline_in_ms);
    put_string(out, t->id);
    put_string(out, t->type);
    put_string(out, t->trace);
    put_bytes(out, t->payload, t->payload_len);
    if (t->version >= 2) {
        put_u32(out, (uint32_t)t->n_parents);
        for (size_t i = 0; i < t->n_parents; i++) {
            unsigned char dead = t->parents[i].dead ? 1 : 0;

            put_string(out, t->parents[i].name);
            put(out, &dead, 1);
            put_bytes(out, t->parents[i].result, t->parents[i].result_len);
        }
    }
    return end(out);
}

int frame_cancel(frame_out *out, uint32_t request)
{
    begin(out, FRAME_CANCEL, request);
    return end(out);
}

void frame_out_free(frame_out *out)
{
    if (out == NULL)
        return;
    free(out->data);
    memset(out, 0, sizeof *out);
}

static uint32_t get_u32(const unsigned char *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 |
           (uint32_t)b[3];
}

uint32_t frame_length(const unsigned char *buf)
{
    return get_u32(buf);
}

/* A cursor over one frame's fields: each take fails once the frame is
 * shorter than the field. */
typedef struct cursor {
    const unsigned char *at;
    size_t left;
} cursor;

static int take_u32(cursor *c, uint32_t *v)
{
    if (c->left < 4)
        return -1;
    *v = get_u32(c->at);
    c->at += 4;
    c->left -= 4;
    return 0;
}

static int take_u64(cursor *c, uint64_t *v)
{
    uint32_t hi, lo;

    if (take_u32(c, &hi) != 0 || take_u32(c, &lo) != 0)
        return -1;
    *v = (uint64_t)hi << 32 | lo;
    return 0;
}

static int take_bytes(cursor *c, const unsigned char **data, size_t *len)
{
    uint32_t n;

    if (take_u32(c, &n) != 0 || n > c->left)
        return -1;
    *data = c->at;
    *len = n;
    c->at += n;
    c->left -= n;
    return 0;
}

static const char *kind_word(unsigned char kind)
{
    switch (kind) {
    case FRAME_READY:
        return "ready";
    case FRAME_OK:
        return "ok";
    case FRAME_RETRY:
        return "retry";
    case FRAME_FAIL:
        return "fail";
    case FRAME_LOG:
        return "log";
    default:
        return "?";
    }
}

int frame_parse(const unsigned char *buf, size_t len, frame_in *in, char *err,
                size_t errlen)
{
    cursor c = {buf, len};
    frame_in f = {.retry_in_ms = -1};
    uint64_t v64;
    int rc = -1;

    if (len < 5) {
        snprintf(err, errlen, "a frame of %zu bytes, shorter than its header",
                 len);
        return -1;
    }
    f.kind = buf[0];
    f.request = get_u32(buf + 1);
    c.at += 5;
    c.left -= 5;
    switch (f.kind) {
    case FRAME_READY:
        rc = take_u32(&c, &f.version);
        break;
    case FRAME_OK:
    case FRAME_FAIL:
        rc = take_bytes(&c, &f.text, &f.text_len);
        break;
    case FRAME_RETRY:
        rc = take_u64(&c, &v64);
        f.retry_in_ms = (int64_t)v64;
        if (rc == 0)
            rc = take_bytes(&c, &f.text, &f.text_len);
        break;
    case FRAME_LOG:
        if (c.left < 1)
            break;
        f.level = c.at[0];
        c.at++;
        c.left--;
        rc = take_bytes(&c, &f.text, &f.text_len);
        if (rc == 0 && f.level > 3) {
            snprintf(err, errlen, "log level %u, not 0 to 3", f.level);
            return -1;
        }
        break;
    default:
        if (f.kind >= 0x21 && f.kind < 0x7f)
            snprintf(err, errlen, "unknown kind '%c'", f.kind);
        else
            snprintf(err, errlen, "unknown kind 0x%02x", f.kind);
        return -1;
    }
    if (rc != 0) {
        snprintf(err, errlen, "%s frame cut short", kind_word(f.kind));
        return -1;
    }
    if (c.left != 0) {
        snprintf(err, errlen, "%s frame with %zu bytes left over",
                 kind_word(f.kind), c.left);
        return -1;
    }
    *in = f;
    return 0;
}
