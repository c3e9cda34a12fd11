/* The broker: wharfd's side of Redis. It claims entries from the streams
 * of the types a worker serves, begins a batch in one pipelined round trip
 * (result cache check + lock), finishes it in another (one script per
 * task), and runs the maintenance scripts (promote due tasks, trim the dead
 * set). It decides nothing about retries: the worker does. */
#ifndef WHARF_BROKER_H
#define WHARF_BROKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "config.h"
#include "context.h"
#include "entry.h"
#include "keys.h"
#include "redis_url.h"

/* How a task's run ended; the numbers index metrics arrays. */
typedef enum task_outcome {
    OUTCOME_OK = 0,
    OUTCOME_RETRY,
    OUTCOME_DEAD,
    OUTCOME_CACHED,
    OUTCOME_LOCKED,
    OUTCOME_STALE,
    OUTCOME_COUNT
} task_outcome;

const char *task_outcome_name(task_outcome outcome);

/* What broker_finish does with a job. */
typedef enum finish_kind {
    FINISH_NONE = 0,   /* nothing (the batch was dropped) */
    FINISH_ACK,        /* result cached, or entry gone: ack + delete */
    FINISH_OK,         /* store the result */
    FINISH_RETRY,      /* to the delayed set, attempt + 1 */
    FINISH_RESCHEDULE, /* locked elsewhere: delayed, same attempt */
    FINISH_DEAD        /* to the dead set */
} finish_kind;

/* What begin found. */
typedef enum begin_kind {
    BEGIN_NONE = 0, /* not begun (bad or deleted entry) */
    BEGIN_CACHED,   /* a result is cached: do not run */
    BEGIN_RUN,      /* lock taken with token */
    BEGIN_LOCKED    /* another run holds the lock */
} begin_kind;

typedef struct broker_queue {
    const char *type;
    const policy *pol;
    char stream[KEY_MAX];
    char delayed[KEY_MAX];
    char dead[KEY_MAX];
    char fence[KEY_MAX];
    char policy_key[KEY_MAX];
    bool history_done;     /* this consumer's own pending entries were read */
    char history_from[48]; /* the last of them read so far ("0" at start) */
} broker_queue;

/* One claimed entry on its way through a batch. The worker fills
 * finish, delay_ms and reason; the broker the rest. */
typedef struct broker_job {
    entry e;
    broker_queue *queue;
    begin_kind begin;
    char token[24];        /* fencing token while the lock is ours, or "" */
    finish_kind finish;
    int64_t delay_ms;      /* FINISH_RETRY / FINISH_RESCHEDULE */
    unsigned next_attempt; /* attempt stored with FINISH_RETRY/_DEAD */
    const char *reason;    /* error kept with a retried or dead task */
    const unsigned char *result; /* FINISH_OK */
    size_t result_len;
    task_outcome outcome;  /* set by broker_finish */
} broker_job;

typedef struct broker {
    const config *cfg;
    redis_url url;
    redisContext *redis; /* NULL while disconnected */
    char consumer[256];  /* <hostname>:<instance>:<slot> */
    broker_queue *queues;
    size_t n_queues;
    uint64_t round_trips; /* every command or pipeline flush */
    uint64_t redis_errors;
    char errstr[1024];
} broker;

/* Prepares b for the n types (with their policies). Connects nothing.
 * 0, or -1 with b->errstr set (bad URL). */
int broker_init(broker *b, const config *cfg, const char *const *types,
                const policy *const *policies, size_t n, const char *consumer);

/* Connects and sets up: refuses an evicting Redis (unless allowed),
 * creates the consumer groups, publishes each type's policy, loads the
 * scripts, and starts every queue on its own pending entries again.
 * 0 on success; -1 on a connection problem (try again later); -2 on a
 * refusal that retrying cannot fix. b->errstr says why. */
int broker_connect(broker *b);

/* Drops the connection (it is made again by broker_connect). */
void broker_disconnect(broker *b);

/* Disconnects and frees. Accepts NULL members. */
void broker_destroy(broker *b);

/* One XREADGROUP over every queue, up to count entries per queue; blocks
 * up to block_ms once every queue's own pending entries are read. Returns
 * the reply (caller frees; NULL reply elements mean nothing came), or NULL
 * on a connection error. Parses nothing. */
redisReply *broker_claim(broker *b, unsigned count, int block_ms);

/* Turns a claim reply into jobs (at most max), parsing each entry.
 * Marks a queue's history as read when it returned no entries in history
 * mode. Returns the number of jobs. */
size_t broker_jobs(broker *b, const redisReply *claim, broker_job *jobs,
                   size_t max);

/* Begins the good jobs in one pipelined round trip: sets begin and token.
 * 0, or -1 on a connection error (the batch must be dropped). */
int broker_begin(broker *b, broker_job *jobs, size_t n);

/* Finishes every job in one pipelined round trip according to its
 * finish kind; sets outcome (OUTCOME_STALE where the run no longer owned
 * its task). 0, or -1 on a connection error. */
int broker_finish(broker *b, broker_job *jobs, size_t n);

/* Moves due tasks of every queue from delayed to the stream. Returns the
 * number moved, or -1 on a connection error. */
long broker_promote(broker *b);

/* Trims every queue's dead set to dead_max. Returns the number removed,
 * or -1 on a connection error. */
long broker_trim_dead(broker *b);

#endif /* WHARF_BROKER_H */
