/* The broker: wharfd's side of Redis. It claims entries from the streams
 * of the types a worker serves, begins a batch in one round trip (result
 * cache check + lock), finishes it in another (one script call per queue
 * of the batch, not per task), and runs the maintenance scripts (promote
 * due tasks, trim the dead set). It decides nothing about retries: the
 * worker does. */
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
#include "limit_value.h"
#include "nodes.h"
#include "outcome.h"
#include "pipeline.h"
#include "redis_url.h"

/* What broker_finish does with a job. */
typedef enum finish_kind {
    FINISH_NONE = 0,   /* nothing (the batch was dropped) */
    FINISH_ACK,        /* result cached, or entry gone: ack + delete */
    FINISH_OK,         /* store the result */
    FINISH_RETRY,      /* to the delayed set, attempt + 1 */
    FINISH_RESCHEDULE, /* locked elsewhere: delayed, same attempt */
    FINISH_DEAD,       /* to the dead set */
    FINISH_CANCEL      /* cancelled (wharf cancel): ack, write nothing */
} finish_kind;

/* What begin found. */
typedef enum begin_kind {
    BEGIN_NONE = 0, /* not begun (bad or deleted entry) */
    BEGIN_CACHED,   /* a result is cached: do not run */
    BEGIN_RUN,      /* lock taken with token */
    BEGIN_LOCKED,   /* another run holds the lock */
    BEGIN_CANCELLED, /* its entry was cancelled: do not run */
    BEGIN_PAUSED,    /* the type is paused: nothing taken, do not run */
    BEGIN_NO_SLOT    /* concurrency_limit reached: nothing taken, wait */
} begin_kind;

typedef struct broker_queue {
    const char *type;
    const policy *pol;
    char stream[KEY_MAX];
    char delayed[KEY_MAX];
    char dead[KEY_MAX];
    char fence[KEY_MAX];
    char policy_key[KEY_MAX];
    char entries[KEY_MAX]; /* the id -> stream entry index */
    unsigned hash_slot;    /* Redis Cluster's, of every key of the type */
    char task_prefix[KEY_MAX]; /* "<prefix>:{<type>}:", for task keys */
    size_t task_prefix_len;
    bool history_done;     /* this consumer's own pending entries were read */
    bool paused;           /* left out of claims: the type is paused (the
                              worker sets it before each claim) */
    char history_from[48]; /* the last of them read so far ("0" at start) */
    unsigned priority;     /* the type's (policy.priority): how claims
                              rank or weigh it against the others (claim.h) */
    bool outbox_due; /* workflows: a finish wrote to the type's outbox
                        (broker_finish drains it) */
} broker_queue;

/* One claimed entry on its way through a batch. The worker fills
 * finish, delay_ms and reason; the broker the rest. */
typedef struct broker_job {
    entry e;
    broker_queue *queue;
    begin_kind begin;
    char owner[17]; /* the random owner of the begin call that took
                       (or may have taken) the lock, or "" */
    char token[48]; /* the lock's value "<fence>-<owner>" while the
                       lock is ours, or ""; e.task.fence is the
                       number */
    finish_kind finish;
    int64_t wait_ms; /* rates: BEGIN_NO_SLOT's delay_ms: its rate turn
                        this far away (> 0), BROKER_WAIT_FOR_KEY_SLOT or
                        BROKER_WAIT_FOR_SLOT */
    char limit_value[LIMIT_VALUE_MAX]; /* rates: limit_key's value */
    int limit_value_len;
    int64_t delay_ms;            /* FINISH_RETRY / FINISH_RESCHEDULE;
                                    BROKER_WAIT_FOR_SLOT: until a
                                    concurrency slot is free */
    unsigned next_attempt;       /* attempt stored with FINISH_RETRY/_DEAD */
    const char *reason;          /* error kept with a retried or dead task */
    const unsigned char *result; /* FINISH_OK */
    size_t result_len;
    task_outcome outcome; /* set by broker_finish */
    int64_t duration_ms;  /* how long the plugin ran (worker) */
    const char *consumer; /* finish as this consumer (a dead worker's,
                             for the supervisor); NULL: the broker's */
    bool expired; /* dead unrun: begun past its expires_at (worker) */
} broker_job;

/* A reschedule's delay_ms that means: wait, uncharged and unpolled,
 * until a slot of the type's concurrency_limit is free (finish.lua). */
#define BROKER_WAIT_FOR_SLOT (-1)
/* rates: the same for a slot of a limit_key's value: it waits unpolled
 * as well, but its park wakes no other waiting task (finish.lua), since
 * the slots a finish sees free are not its key's. */
#define BROKER_WAIT_FOR_KEY_SLOT (-2)

/* Argument arrays of batched script calls, made once (broker.c). */
typedef struct broker_scratch broker_scratch;

/* How a worker claims (claim.h). */
typedef struct claim_state claim_state;

typedef struct broker {
    const config *cfg;
    redis_url url;
    nodes nodes;        /* the Redis nodes (one unless a cluster); nodes.h */
    pipeline pipe;      /* every command but a single Redis's claims */
    char consumer[256]; /* <hostname>:<instance>:<worker slot> */
    broker_queue *queues;
    size_t n_queues;
    broker_scratch *scratch;
    claim_state *claims;
    int timeout_ms;       /* connect and command timeout: broker_init
                             sets BROKER_TIMEOUT_MS; a caller may lower
                             it before broker_connect */
    uint64_t round_trips; /* claims and connects; the pipe counts its own */
    uint64_t redis_errors;
    bool replicas_short; /* the last WAIT came up short (the master did
                            not move: replicas slow or gone) */
    char errstr[1024];
} broker;

/* A broker's Redis command timeout: far above any BLOCK we ask for. */
#define BROKER_TIMEOUT_MS 10000

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

/* True while connected (since the last broker_connect that succeeded). */
bool broker_connected(const broker *b);

/* Every round trip so far: a command, a pipeline flush, a redirection
 * followed. */
uint64_t broker_round_trips(const broker *b);

/* "host:port" of the node that serves q, or "" while disconnected. */
const char *broker_node_of(const broker *b, const broker_queue *q);

/* Records a failed command about `what` in b->errstr: r's error, or (r
 * NULL) the pipeline's reason; counts it in redis_errors. */
void broker_failed(broker *b, const char *what, const redisReply *r);

/* Disconnects and frees. Accepts NULL members. */
void broker_destroy(broker *b);

/* Claims up to count entries per queue that is not paused. On a single
 * Redis: one XREADGROUP over those queues, blocking up to block_ms once every queue's
 * own pending entries are read. On a cluster (no command reads two
 * hash slots): one XREADGROUP per queue without BLOCK, every node at once,
 * again after a short pause while all are empty, for up to block_ms.
 * Returns the reply, [[stream, entries], ...] (caller frees; NULL reply
 * elements mean nothing came), or NULL on a connection error. Parses
 * nothing. */
redisReply *broker_claim(broker *b, unsigned count, int block_ms);

/* The number of queues a claim reads (those not paused). With none a
 * claim sends nothing and answers at once with nothing. */
size_t broker_claimable(const broker *b);

/* Turns a claim reply into jobs (at most max), parsing each entry.
 * Marks a queue's history as read when it returned no entries in history
 * mode. Returns the number of jobs. */
size_t broker_jobs(broker *b, const redisReply *claim, broker_job *jobs,
                   size_t max);

/* Begins the good jobs (one script call per queue and up to 64 jobs, in
 * one round trip for up to 16 calls): sets begin, token and the fence.
 * Before anything is sent every good job gets this call's random owner,
 * so a batch whose replies are lost can still be released
 * (broker_release). 0, or -1 on a connection error (the batch must be
 * dropped). */
int broker_begin(broker *b, broker_job *jobs, size_t n);

/* Finishes every job according to its finish kind, kinds mixed freely:
 * one script call per run of consecutive jobs of one queue and consumer
 * (up to 64 jobs), up to 16 calls a round trip, each job handled as if it
 * were alone. Sets outcome (OUTCOME_STALE where the run no longer owned
 * its task). 0, or -1 on a connection error. */
int broker_finish(broker *b, broker_job *jobs, size_t n);

/* broker_finish for a finish sent again after the connection broke
 * before its reply was read (it may have landed). A task its run no
 * longer owns whose entry is gone from the stream and whose requested
 * effect is visible (ok: its result exists; retry or reschedule: its id
 * is in the delayed set; dead: in the dead set; ack: nothing more) was
 * finished by the earlier send: its outcome is the one asked for, not
 * OUTCOME_STALE. Anything else not owned is stale as before. 0, or -1 on a
 * connection error. */
int broker_finish_resend(broker *b, broker_job *jobs, size_t n);

/* Releases, after a batch was dropped, in one pipeline: the locks that
 * jobs begun with BEGIN_RUN still hold with their tokens, and those of
 * jobs whose begin was sent but never answered (BEGIN_NONE with owner
 * set: the call may have taken them) by the owner part of their value.
 * Each released job ends with begin BEGIN_NONE and no owner. 0, or -1 on
 * a connection error. */
int broker_release(broker *b, broker_job *jobs, size_t n);

/* For each queue with a concurrency_limit: drops the slots whose run
 * died without a finish and makes due as many waiting tasks as slots are
 * free (sdk/lua/limit_wake.lua), one call per such queue. Returns the
 * tasks made due, or -1 on a connection error. */
long broker_limit_wake(broker *b);

/* The queue of `type`, or NULL. */
broker_queue *broker_queue_of(broker *b, const char *type);

/* Parses entries (an array of [entry-id, fields] replies) of queue q into
 * jobs, at most max. Returns the number of jobs. */
size_t broker_entries(broker *b, broker_queue *q, const redisReply *entries,
                      broker_job *jobs, size_t max);

/* XAUTOCLAIM: takes up to count entries of q idle longer than min_idle_ms
 * (their host went silent) for this broker's consumer. Returns the reply
 * ([cursor, entries, deleted]; caller frees) or NULL on an error. */
redisReply *broker_autoclaim(broker *b, broker_queue *q, int64_t min_idle_ms,
                             unsigned count);

/* XRANGE of one entry of q: an array of zero or one entries (caller
 * frees), or NULL on an error. */
redisReply *broker_entry(broker *b, broker_queue *q, const char *entry_id);

/* With min_replicas_ack: WAIT on every node for that many replicas, for
 * the writes sent since the last (the lease keeper's renewals, one WAIT a
 * pass rather than one a call), with the timeouts a finish's WAIT has,
 * but at most max_ms (a renewal must not wait out a lease). 0
 * when they came back (counted, and said once when short, as a finish's
 * are) or none is asked for; -1 with b->errstr when a connection broke or
 * a WAIT came back short on a Sentinel master that moved (pipeline.h):
 * what was written there will be thrown away, and the caller reconnects
 * and sends it again. */
int broker_wait_replicas(broker *b, const char *what, int max_ms);

/* Renews the leases of n entries of q pending under consumer (their idle
 * time) and of the locks that still hold the given tokens ("" = none), in
 * one script. For each task, idle_ms gets the entry's idle time before
 * the renewal (-1: not pending under consumer) and ttl_ms the lock's time
 * to live before it (-1: no token; -2: the lock no longer holds it).
 * Returns the number of entries renewed, or -1 on an error (the arrays
 * are then unset). */
long broker_renew(broker *b, broker_queue *q, const char *consumer,
                  const char *const *entry_ids, const char *const *task_ids,
                  const char *const *tokens, size_t n, int64_t *idle_ms,
                  int64_t *ttl_ms);

/* Holds key with value for ttl_ms (taking it if free). 1 if held, 0 if
 * another holder has it, -1 on an error. */
int broker_heartbeat(broker *b, const char *key, const char *value,
                     int64_t ttl_ms);

/* Deletes key if it still holds value. 0, or -1 on an error. */
int broker_release_key(broker *b, const char *key, const char *value);

/* Moves due tasks of every queue from delayed to the stream. Returns the
 * number moved, or -1 on a connection error. */
long broker_promote(broker *b);

/* Trims every queue's dead set to dead_max. Returns the number removed,
 * or -1 on a connection error. */
long broker_trim_dead(broker *b);

#endif /* WHARF_BROKER_H */
