/* One Redis command built argument by argument, with no limit on their
 * number, and written in the Redis protocol by hand into a buffer kept
 * from command to command: after the first few calls, building and
 * sending a command allocates nothing (hiredis's own formatting, an sds
 * printf per argument, cost a worker more than the call's keys). Shared by
 * the host, the CLI and the client library for every script call. */
#ifndef WHARF_COMMAND_H
#define WHARF_COMMAND_H

#include <stdbool.h>
#include <stddef.h>

#include <hiredis/hiredis.h>

typedef struct command_arg {
    const char *data; /* borrowed; NULL: a copy at the command's text + off */
    size_t off, len;
    bool key; /* a script key (counted in numkeys, checked for its slot) */
} command_arg;

typedef struct command {
    command_arg *args;
    size_t argc, args_cap;
    char *text; /* copies of arguments, end to end */
    size_t text_used, text_cap;
    char *wire; /* the encoded command */
    size_t wire_len, wire_cap;
    size_t numkeys_at; /* EVALSHA: the index of numkeys; else 0 */
    size_t keys;       /* keys pushed */
    bool plain_seen;   /* a plain argument came after the script's header */
    int err;           /* 0, or an errno since the last reset (sticky) */
} command;

/* Makes c empty. No allocation: the buffers grow on first use. */
void command_init(command *c);

/* Empties c for the next command, keeping its buffers. */
void command_reset(command *c);

/* Frees c's buffers (c may be reused after command_init). */
void command_free(command *c);

/* Each push adds one argument. An error is sticky: once a push failed
 * (ENOMEM, or EINVAL for a key after a plain script argument), the rest do
 * nothing and command_encode reports it, so a builder checks once.
 * 0 or -1. Borrowed data (command_push, command_push_str,
 * command_push_key) must stay valid until the command is encoded. */
int command_push(command *c, const void *data, size_t len);
int command_push_str(command *c, const char *s);
int command_push_copy(command *c, const void *data, size_t len);
int command_push_int(command *c, long long value);

/* Starts "EVALSHA sha numkeys": keys follow (command_push_key*), then the
 * plain arguments; numkeys is filled in from the keys pushed. Resets c. */
int command_evalsha(command *c, const char *sha);
int command_push_key(command *c, const char *key, size_t len);
int command_push_key_copy(command *c, const char *key, size_t len);

/* Writes the command in the Redis protocol into c->wire (wire_len
 * bytes). In a debug build (NDEBUG not defined) a script call whose keys
 * are not all in one Redis Cluster slot aborts with a message naming two
 * of them: such a call fails on a cluster, so it is a bug of its builder.
 * 0, or -1 with c->err set. */
int command_encode(command *c);

/* Encodes c and appends it to rc's output buffer (pipelined). 0 or -1
 * (c->err set, or rc->err on a hiredis failure). */
int command_append(command *c, redisContext *rc);

/* Encodes, sends and waits for the reply (caller frees), or NULL: then
 * c->err (building) or rc->err (connection) says why. */
redisReply *command_run(command *c, redisContext *rc);

/* The Redis Cluster slot of a key: CRC16 (XMODEM) of its hash tag (the
 * text between the first '{' and the next '}', when not empty) or of the
 * whole key, modulo 16384. */
unsigned command_key_slot(const char *key, size_t len);

/* The slot of the first key of c, or -1 when it has none. */
long command_first_key_slot(const command *c);

/* The index (among the keys, from 0) of the first key of c whose slot
 * differs from that of the first key, or -1 when they all share one. */
long command_mixed_slot(const command *c);

#endif /* WHARF_COMMAND_H */
