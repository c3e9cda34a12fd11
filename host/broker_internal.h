/* What the broker's files share (broker.c and its broker_*.c: the
 * batched script calls, begin, finish and release, maintenance): the
 * scratch a call is built in, the batch machinery's types and calls.
 * Private to them. */
#ifndef WHARF_BROKER_INTERNAL_H
#define WHARF_BROKER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include <hiredis/hiredis.h>

#include "broker.h"
#include "command.h"
#include "script.h"

/* Ids per promote or trim script call. */
#define BROKER_MOVE_BATCH 100
/* Promote or trim calls per queue per maintenance pass, so one busy queue
 * cannot hold a worker in maintenance for long. */
#define BROKER_MOVE_ROUNDS 10
/* Tasks per begin or finish script call: a call keeps Redis busy for well
 * under a millisecond. */
#define CALL_TASKS 64
/* Script calls per round trip. */
#define PIPE_CALLS 16
/* The shortest WAIT while replicas are known short (wait_timeout). */
#define WAIT_SHORT_MIN_MS 10

/* One call: the jobs [first, end) it was built from, n of them taken. */
typedef struct batch_call {
    size_t first, end, n;
} batch_call;

/* Every script call is built in cmd, kept from call to call, so a batch
 * allocates nothing beyond what hiredis does once the buffers have grown
 * to the largest call. */
struct broker_scratch {
    command cmd;
    char kinds[CALL_TASKS + 1]; /* finish: one letter per task */
    bool resend;                /* finish: broker_finish_resend */
    batch_call calls[PIPE_CALLS];
};

/* What one batched script does with jobs. */
typedef struct batch_ops {
    const script *s;
    const char *what;         /* for messages */
    bool durable;             /* WAIT for min_replicas_ack replicas after it */
    bool durable_on_sentinel; /* so too on a Sentinel master, while its
                                 replicas keep up (see begin_ops) */
    size_t max_tasks;         /* per call */
    bool (*takes)(const broker_job *j);
    bool (*shares)(const broker *b, const broker_job *a, const broker_job *c);
    /* Builds the call's keys and arguments with push/push_key. */
    void (*build)(broker *b, broker_job *jobs, const batch_call *c);
    /* Reads the call's reply into its jobs (r may be an error). */
    void (*apply)(broker *b, broker_job *jobs, const batch_call *c,
                  const redisReply *r);
} batch_ops;

/* A number as the generated argument functions take it (text). */
typedef struct number_text {
    char s[24];
} number_text;

/* broker_call.c: building a call in the scratch's command, and running
 * one call or a batch of them. */
void call_push(broker *b, const void *data, size_t len);
void call_push_str(broker *b, const char *s);
number_text call_number(long long value);
size_t call_task_key(const broker_queue *q, const char *what, const char *id,
                     char *buf);
void call_push_key(broker *b, const broker_job *j, const char *what);
redisReply *call_run(broker *b, const script *s);
int call_run_batch(broker *b, const batch_ops *ops, broker_job *jobs, size_t n);
bool call_same_queue(const broker *b, const broker_job *a, const broker_job *c);

#endif /* WHARF_BROKER_INTERNAL_H */
