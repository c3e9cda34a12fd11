/* One call of sdk/lua/enqueue.lua for a run of tasks of one type: the
 * checks of a task, the call built (keys, ids, traces, delays, payloads)
 * and its reply read back into each task's reply. Private to sdk/client;
 * the calls are sent by client_enqueue.c (alone) and
 * client_enqueue_batch.c (in pipelined rounds). */
#ifndef WHARF_CLIENT_ENQUEUE_CALL_H
#define WHARF_CLIENT_ENQUEUE_CALL_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include <wharf/client.h>

#include "client_ids.h"
#include "command.h"
#include "keys.h"
#include "lua_scripts.h"

/* Tasks per script call, and their payload bytes (a call takes at least
 * one task): a call blocks Redis for well under a millisecond. */
#define CALL_TASKS 100
#define CALL_BYTES (1024 * 1024)

/* The script is sdk/lua/enqueue.lua, whose header states its KEYS, ARGV
 * and reply (lua_scripts.h: script_enqueue). Each task adds its "each"
 * keys: the seen and task keys of both candidate ids (the script checks
 * the envelope of a ready task too: a retrying id is a duplicate). */

/* Room for "timeout_ms N max_attempts N expires_at N". */
#define CLIENT_OPTIONS_SIZE 96

enum {
    TASK_KEYS = SCRIPT_ENQUEUE_EACH_KEYS,
    TASK_RANDOM_BYTES = CLIENT_RANDOM_ID_BYTES + CLIENT_TRACE_BYTES
};

/* What one task adds to a call: its keys, and the trace and delay its
 * arguments point to. */
typedef struct task_slot {
    char keys[TASK_KEYS][KEY_MAX];
    char trace[CLIENT_TRACE_SIZE];
    char delay[24];
} task_slot;

/* One script call being built: cmd's arguments point into it and into
 * the tasks; cmd keeps its buffers from call to call. */
typedef struct enqueue_call {
    task_slot slots[CALL_TASKS];
    unsigned char random[CALL_TASKS * TASK_RANDOM_BYTES];
    /* The call's per-task options as enqueue.lua's ARGV options takes
     * them ("" for none: wharf_enqueue_with sets it for its one task,
     * every other enqueue clears it). */
    char options[CLIENT_OPTIONS_SIZE];
    command cmd;
} enqueue_call;

/* Checks o (NULL: none) and writes it into call->options; BAD_INPUT with
 * c->errstr set when a value is out of its bounds. */
wharf_client_status client_enqueue_options(wharf_client *c, enqueue_call *call,
                                           const wharf_task_options *o);

/* Checks t; BAD_INPUT with c->errstr set when it breaks a rule. */
wharf_client_status client_enqueue_check(wharf_client *c,
                                         const wharf_enqueue_opts *t);

/* Builds into call the EVALSHA call for count (<= CALL_TASKS) checked
 * tasks of one type, all ready or all delayed: tasks[index[0]],
 * tasks[index[1]], ... OK, or ERROR with c->errstr set when libcrypto
 * fails. */
wharf_client_status client_enqueue_build(wharf_client *c, enqueue_call *call,
                                         const wharf_enqueue_opts *tasks,
                                         const size_t *index, size_t count);

/* Fills the replies of a call's tasks (given by index) from its reply r.
 * Returns OK when r is a proper reply (each task's own status is in its
 * reply), else the status of every task of the call, with c->errstr
 * set. */
wharf_client_status client_enqueue_parse(wharf_client *c, const redisReply *r,
                                         const wharf_enqueue_opts *tasks,
                                         const size_t *index, size_t count,
                                         wharf_enqueue_reply *replies);

/* Tasks the script took (OK) on a node fewer than c->min_replicas
 * replicas confirmed (acks) get UNAVAILABLE, with why in c->errstr: a
 * failover now could lose them. index NULL: replies[0..count). */
void client_enqueue_check_replicas(wharf_client *c, int acks, const char *node,
                                   const size_t *index, size_t count,
                                   wharf_enqueue_reply *replies);

#endif /* WHARF_CLIENT_ENQUEUE_CALL_H */
