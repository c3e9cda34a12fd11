/* A pipeline over the nodes of a deployment (nodes.h): commands are
 * added in order, each with the slot of its keys; a run sends each to the
 * node serving its slot, all nodes at once, and reads the replies in
 * order. Then it settles each reply that is not the command's answer:
 * -MOVED (the slot map is patched) and -ASK (sent there after ASKING) are
 * followed, -TRYAGAIN (a slot half migrated) is sent again after a pause,
 * -NOSCRIPT loads the script on that node and sends again. A command
 * whose node is gone, or that a node refuses for now (CLUSTERDOWN,
 * READONLY, MASTERDOWN: it did not run), has no reply and fails the run,
 * so its caller reconnects and sends it again. With wait set, each node
 * that took a command is asked WAIT min_replicas timeout after it, in the
 * same round trip; when a WAIT comes back short on a Sentinel master that
 * moved (nodes_master_moved: a switchover, the old master still taking
 * writes it will lose), the commands sent there lose their replies too
 * and the run fails as if the connection had broken. Buffers are kept
 * from run to run. */
#ifndef WHARF_PIPELINE_H
#define WHARF_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "command.h"
#include "error_kind.h"
#include "nodes.h"
#include "script.h"

/* A command with no key: any node (the first) will do. */
#define PIPELINE_ANY_SLOT 0x7fffffffL

typedef struct pipeline_entry {
    long slot;         /* of its keys, or PIPELINE_ANY_SLOT */
    size_t off, len;   /* its bytes in the pipeline's buffer */
    const script *s;   /* it is an EVALSHA of s; NULL otherwise */
    int node;          /* where it went last, or -1 */
    bool asking;       /* it went there after an ASKING */
    redisReply *reply; /* its answer, or NULL */
} pipeline_entry;

typedef struct pipeline {
    nodes *ns;
    pipeline_entry *e;
    size_t n, cap;
    char *bytes; /* every command, encoded, end to end */
    size_t used, bytes_cap;
    bool wait;            /* WAIT after the commands (see min_replicas) */
    int min_replicas;     /* what WAIT asks for */
    int wait_timeout_ms;  /* and how long it may take */
    int fewest_acks;      /* after a run with wait: the fewest replicas a
                             node's WAIT counted, or -1 */
    uint64_t round_trips; /* added to by each run */
    command cmd;          /* pipeline_add_script builds in it */
    error_kind err;       /* what the last failure was (error_kind.h):
                             UNAVAILABLE for a node gone, refusing for now
                             or redirecting without end, NOMEM, REPLY for
                             a command that could not be built or a
                             reply that could not be read, or AUTH when a
                             node refused our credentials */
    char errstr[ERROR_TEXT_MAX]; /* and what it was, in one line */
} pipeline;

/* An empty pipeline over ns (borrowed). */
void pipeline_init(pipeline *p, nodes *ns);

/* Frees the replies and forgets the commands, keeping the buffers;
 * clears wait. */
void pipeline_reset(pipeline *p);

/* WAIT min_replicas wait_timeout_ms on every node connected now, all at
 * once: for writes sent on them earlier without wait. fewest_acks and
 * each node's acks as after a run with wait, and, as there, a node whose
 * WAIT came back short on a Sentinel master that moved is dropped and
 * fails the call. 0, or -1 with errstr. */
int pipeline_wait_all(pipeline *p);

/* pipeline_reset, and frees the buffers. */
void pipeline_free(pipeline *p);

/* Adds the command cmd (encoded now: cmd may be reused at once) for slot,
 * or for the slot of its first key when slot < 0; s is the script of an
 * EVALSHA. 0, or -1 (cmd->err, or out of memory) with p->err and p->errstr set.
 */
int pipeline_add_command(pipeline *p, long slot, command *cmd, const script *s);

/* Adds a command in hiredis's printf format, routed by key (NULL: any
 * node). 0 or -1. */
int pipeline_addf(pipeline *p, const char *key, const char *fmt, ...);

/* Adds the call of script s with argv (numkeys keys first, then the
 * arguments; argvlen NULL: strlen), routed by its first key. 0 or -1. */
int pipeline_add_script(pipeline *p, const script *s, int numkeys, int argc,
                        const char *const *argv, const size_t *argvlen);

/* Sends every command and reads and settles every reply (see the top).
 * 0 when each command has its answer (which may be an error reply); -1
 * with p->err and p->errstr set when any has none: those left unanswered (their
 * node broke, refused them for now, or was a master that moved) have a NULL
 * reply, the others keep theirs. */
int pipeline_run(pipeline *p);

/* True if r is not a command's answer but something pipeline_run
 * settles (a redirection, TRYAGAIN, NOSCRIPT) or fails on (a node that
 * refuses for now): a caller with its own pipelining sends such a command
 * again through a pipeline. */
bool pipeline_must_settle(const redisReply *r);

/* The reply of command i (NULL if unanswered); owned by p until the next
 * reset. */
redisReply *pipeline_reply(const pipeline *p, size_t i);

/* The reply of command i, now the caller's to free. */
redisReply *pipeline_take(pipeline *p, size_t i);

/* Resets p, adds one script call, runs it: its reply (caller frees), or
 * NULL with p->err and p->errstr set. */
redisReply *pipeline_script(pipeline *p, const script *s, int numkeys, int argc,
                            const char *const *argv, const size_t *argvlen);

/* Resets p, adds the script call of s built in cmd (the typed functions
 * of lua_scripts.h build one; p->cmd may be used), runs it: its reply
 * (caller frees), or NULL with p->err and p->errstr set. */
redisReply *pipeline_call(pipeline *p, const script *s, command *cmd);

/* Resets p, adds one printf-format command for key, runs it: its reply
 * (caller frees), or NULL with p->err and p->errstr set. */
redisReply *pipeline_command(pipeline *p, const char *key, const char *fmt,
                             ...);

#endif /* WHARF_PIPELINE_H */
