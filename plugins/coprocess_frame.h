/* The coprocess wire format, versions 1 and 2 (docs/handlers.md says it byte by
 * byte): frames of a big-endian u32 length, a kind byte and a u32 request
 * id, then the kind's fields; integers big-endian, byte strings a u32
 * length and the bytes. This file builds the host's frames and reads the
 * handler's; it knows nothing of processes or tasks in flight. */
#ifndef WHARF_COPROCESS_FRAME_H
#define WHARF_COPROCESS_FRAME_H

#include <stddef.h>
#include <stdint.h>

/* The versions the host speaks: it offers the highest in its hello, and
 * the program answers the one it speaks (2 adds a task's parents). */
#define FRAME_VERSION 2
#define FRAME_VERSION_MIN 1
/* length + kind + request */
#define FRAME_HEAD 9
/* The longest frame either side may send (the length field's value): a
 * task's payload or a result of 64 MiB, and room for the other fields.
 * A longer length is a malformed frame, not an allocation. */
#define FRAME_MAX ((uint32_t)(64u << 20) + 65536u)

/* Kinds, host to handler. */
#define FRAME_HELLO 'H'
#define FRAME_TASK 'T'
#define FRAME_CANCEL 'C'
/* Kinds, handler to host. */
#define FRAME_READY 'R'
#define FRAME_OK 'O'
#define FRAME_RETRY 'Y'
#define FRAME_FAIL 'F'
#define FRAME_LOG 'L'

/* A frame being built: a growable buffer. On allocation failure it keeps
 * failed set and every later append does nothing (checked once, at the
 * end, as sdk/core/command.h does). */
typedef struct frame_out {
    unsigned char *data;
    size_t len, cap;
    int failed;
} frame_out;

/* A parent of a workflow's child (version 2): "<type>:<id>", whether it
 * is dead, and its result when it finished ok. */
typedef struct frame_parent {
    const char *name;
    int dead;
    const void *result;
    size_t result_len;
} frame_parent;

/* What one task frame carries. deadline_in_ms: ms left to the deadline
 * as the frame is built, -1 for none. version: the program's; from 2 the
 * frame ends with the parents (n_parents may be 0). */
typedef struct frame_task {
    uint32_t version;
    uint32_t attempt, max_attempts;
    uint64_t fence;
    int64_t enqueued_at_ms, deadline_in_ms;
    const char *id, *type, *trace;
    const unsigned char *payload;
    size_t payload_len;
    const frame_parent *parents;
    size_t n_parents;
} frame_task;

/* A frame of the handler's, read whole. The byte strings point into the
 * buffer given to frame_parse and live as long as it does. */
typedef struct frame_in {
    unsigned char kind;
    uint32_t request;
    uint32_t version;          /* READY */
    int64_t retry_in_ms;       /* RETRY: -1 for the type's backoff */
    uint8_t level;             /* LOG: 0 debug .. 3 error */
    const unsigned char *text; /* OK: the result; RETRY, FAIL: the reason;
                                  LOG: the line */
    size_t text_len;
} frame_in;

/* Builders: each makes out hold exactly one frame (out is reset first).
 * 0 on success, -1 when memory ran out or the frame would be longer than
 * FRAME_MAX. out->data is the caller's to free (frame_out_free). */
int frame_hello(frame_out *out, uint32_t inflight);
int frame_task_build(frame_out *out, uint32_t request, const frame_task *t);
int frame_cancel(frame_out *out, uint32_t request);
void frame_out_free(frame_out *out);

/* The length a frame starting at buf (4 bytes at least) declares, the
 * 4 length bytes not included. */
uint32_t frame_length(const unsigned char *buf);

/* Reads the frame of len bytes at buf (the bytes after the length field).
 * 0 with *in filled, or -1 with why in err (an unknown kind, a field cut
 * short, bytes left over, a level out of range). */
int frame_parse(const unsigned char *buf, size_t len, frame_in *in, char *err,
                size_t errlen);

#endif /* WHARF_COPROCESS_FRAME_H */
