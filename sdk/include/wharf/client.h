/* libwharf-client: the producer's API. Enqueues tasks into wharf queues in
 * Redis and reads their results, following the data contract of the design
 * (one atomic script per enqueue; the type's policy is enforced in Redis).
 * Build with `pkg-config --cflags --libs wharf-client` or CMake
 * `find_package(wharf)` and target `wharf::client`. */
#ifndef WHARF_CLIENT_H
#define WHARF_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define WHARF_CLIENT_API __attribute__((visibility("default")))
#else
#define WHARF_CLIENT_API
#endif

/* What every call returns. The numbers never change. */
typedef enum wharf_client_status {
    WHARF_CLIENT_OK = 0,
    WHARF_CLIENT_DUPLICATE = 1,    /* enqueue: already enqueued (not an
                                      error); the existing id is returned */
    WHARF_CLIENT_NOT_FOUND = 2,    /* no such result */
    WHARF_CLIENT_BAD_INPUT = 3,    /* bad type, id, trace, delay or URL */
    WHARF_CLIENT_TOO_LARGE = 4,    /* payload over the type's max_payload */
    WHARF_CLIENT_BACKPRESSURE = 5, /* backlog at max_backlog: try later */
    WHARF_CLIENT_UNAVAILABLE = 6,  /* Redis unreachable, down or loading */
    WHARF_CLIENT_TIMEOUT = 7,      /* a wait ran out */
    WHARF_CLIENT_ERROR = 8,        /* anything else (out of memory, a
                                      Redis error); see the errstr */
    WHARF_CLIENT_AUTH = 9,         /* Redis wants a password, or refused
                                      ours: retrying will not help */
    WHARF_CLIENT_FULL = 10,        /* Redis is at maxmemory (noeviction):
                                      nothing was written; try later */
    WHARF_CLIENT_DEAD = 11,        /* result: the task is dead (the errstr
                                      holds its last error); no result
                                      will come */
    WHARF_CLIENT_CANCELLED = 12,   /* result: the task was cancelled; no
                                      result will come */
    WHARF_CLIENT_PROTOCOL = 13,    /* the hosts speak a Redis protocol
                                      this library does not: nothing was
                                      done; upgrade the library */
    WHARF_CLIENT_UNSERVED = 14     /* strict enqueue: no host ever served
                                      the type; nothing was added */
} wharf_client_status;

#define WHARF_TYPE_MAX 100   /* a type is 1-100 of [A-Za-z0-9._-] */
#define WHARF_ID_MAX 200     /* an id is 1-200 bytes of 0x21..0x7e */
#define WHARF_PREFIX_MAX 100 /* a key prefix: 1-100 of 0x21..0x7e, no {} */
#define WHARF_TRACE_LEN 55   /* 00-<32 hex>-<16 hex>-<2 hex> */

/* The Redis protocol (docs/protocol.md) this library speaks. Hosts
 * publish theirs in each type's policy; a client refuses a host that
 * speaks another with WHARF_CLIENT_PROTOCOL. */
#define WHARF_PROTOCOL 1

/* A connection to one Redis and one key prefix. Not thread-safe: use one
 * client per thread. A broken connection is made again on the next call. */
typedef struct wharf_client wharf_client;

/* Connects to url ("redis://[user:password@]host[:port][/db]" or
 * "unix:///path[?db=N]"; NULL = redis://127.0.0.1:6379; the user and
 * password are percent-decoded, so write '@' as %40, ':' as %3A). password
 * (NULL = the URL's own) is sent with AUTH; prefix NULL = "wharf". On
 * WHARF_CLIENT_OK sets *out, which the caller closes with
 * wharf_client_close. Otherwise *out is untouched and err (if not NULL)
 * holds one line: BAD_INPUT for a bad URL or prefix, UNAVAILABLE if Redis
 * cannot be reached, AUTH if it wants a password we did not give or
 * refuses ours, or the TLS handshake of a rediss:// URL fails (its cause
 * in err), ERROR when out of memory. url may be rediss:// (TLS) with the
 * query parameters tls_ca, tls_cert, tls_key, tls_sni and tls_verify. */
WHARF_CLIENT_API wharf_client_status
wharf_client_open(wharf_client **out, const char *url, const char *password,
                  const char *prefix, char *err, size_t errlen);

/* Closes the connection and frees the client. Accepts NULL. */
WHARF_CLIENT_API void wharf_client_close(wharf_client *client);

/* strict != 0: enqueue refuses (UNSERVED, nothing added) a task of a type
 * that no host has ever published a policy for, so a misspelt type never
 * queues silently. Off by default: such a task is added, and its reply
 * says unserved. */
WHARF_CLIENT_API void wharf_client_set_strict(wharf_client *client, int strict);

/* One line saying what the last failed call did wrong and why ("" if none
 * failed). Owned by the client; valid until its next call. */
WHARF_CLIENT_API const char *wharf_client_errstr(const wharf_client *client);

/* The status as a word ("ok", "duplicate", "not_found", ...);
 * static storage. */
WHARF_CLIENT_API const char *wharf_client_status_name(wharf_client_status s);

/* One task to enqueue. Zero every field you do not set. The library reads
 * it during the call only. */
typedef struct wharf_enqueue_opts {
    const char *type;    /* required: 1-100 of [A-Za-z0-9._-] */
    const void *payload; /* binary-safe; may be NULL when payload_len is 0 */
    size_t payload_len;
    const char *id;    /* NULL: SHA-256 of "type\npayload" (hex) when the
                          type's idempotency is payload, else random */
    const char *trace; /* NULL: a new random W3C traceparent */
    int64_t delay_ms;  /* 0: ready now; else due after this long */
} wharf_enqueue_opts;

/* What Redis answered for one task. */
typedef struct wharf_enqueue_reply {
    wharf_client_status status; /* OK, DUPLICATE, or why it was refused */
    char id[WHARF_ID_MAX + 1];  /* OK/DUPLICATE: the task id, else "" */
    int duplicate;              /* 1 when status is DUPLICATE */
    int pressure;               /* 1 while the type's backlog is high: slow
                                   down before max_backlog refuses tasks */
    uint64_t limit; /* TOO_LARGE: max_payload; BACKPRESSURE: max_backlog;
                       PROTOCOL: the hosts' protocol */
    int unserved;   /* 1 when no host has ever published a policy for the
                       type: nobody may ever run it (see strict) */
} wharf_enqueue_reply;

/* Enqueues one task with one atomic script in Redis. Returns OK or
 * DUPLICATE (the task was already enqueued within idempotency_ttl; nothing
 * was added and out->id is the existing id), or why not: BAD_INPUT
 * (checked before Redis is asked), TOO_LARGE, BACKPRESSURE, UNSERVED
 * (strict), PROTOCOL, FULL (Redis at maxmemory: nothing was written),
 * UNAVAILABLE, AUTH, ERROR. *out is written whenever Redis answered (OK,
 * DUPLICATE, TOO_LARGE, BACKPRESSURE, UNSERVED, PROTOCOL); out may be
 * NULL. */
WHARF_CLIENT_API wharf_client_status
wharf_enqueue(wharf_client *client, const wharf_enqueue_opts *opts,
              wharf_enqueue_reply *out);

/* Per-task options of one enqueue (docs/protocol.md). A struct of its
 * own, with its size: wharf_enqueue_opts has no size or version field and
 * callers pass arrays of it to wharf_enqueue_batch, so a field added to it
 * would move every element under a program built against the old header.
 * Set size to sizeof(wharf_task_options) and zero every field you do not
 * set; a later version may add fields at the end. */
/* The bounds of the options: a timeout and max_attempts as the
 * manifest's keys allow (1 ms to 30 days, 1 to 1000), an expiry at most
 * the last millisecond of the year 9999. */
#define WHARF_TASK_TIMEOUT_MAX_MS (INT64_C(30) * 24 * 3600 * 1000)
#define WHARF_TASK_MAX_ATTEMPTS_MAX 1000
#define WHARF_TASK_EXPIRES_MAX_MS INT64_C(253402300799999)

typedef struct wharf_task_options {
    size_t size;
    int64_t timeout_ms;    /* 0: the type's; 1 ms up to 30 days. A run gets
                              the shorter of it and the type's timeout (the
                              type's lock and takeover are sized by its
                              own) */
    unsigned max_attempts; /* 0: the type's; 1 up to 1000 */
    int64_t expires_at_ms; /* 0: none; else wall-clock ms since the epoch:
                              an attempt not begun by then does not run,
                              and the task is dead with "expired" */
} wharf_task_options;

/* wharf_enqueue with per-task options (NULL: none); a retry keeps them.
 * BAD_INPUT, nothing enqueued, for a value out of its bounds or a size
 * smaller than this header's. */
WHARF_CLIENT_API wharf_client_status
wharf_enqueue_with(wharf_client *client, const wharf_enqueue_opts *opts,
                   const wharf_task_options *options, wharf_enqueue_reply *out);

/* Enqueues n tasks, pipelined: one script call per run of up to 100 tasks
 * of one type and one round trip per up to 500 tasks, each task judged by
 * the script exactly as if enqueued alone. replies (n of them, caller-owned)
 * get each task's own answer in .status (a task with a bad type, id or trace
 * gets BAD_INPUT and is not sent). Returns OK when every task has its
 * answer; UNAVAILABLE or ERROR if the batch stopped part way, in which case
 * the tasks without an answer have that status too (some of them may have
 * been enqueued: enqueue them again, deduplication makes it safe unless
 * their type's idempotency is none). */
WHARF_CLIENT_API wharf_client_status
wharf_enqueue_batch(wharf_client *client, const wharf_enqueue_opts *tasks,
                    size_t n, wharf_enqueue_reply *replies);

/* wharf_enqueue_batch with the same per-task options for every task
 * (NULL: none). For a bad options value (as wharf_enqueue_with) nothing
 * is sent, and it and every reply are BAD_INPUT. */
WHARF_CLIENT_API wharf_client_status
wharf_enqueue_batch_with(wharf_client *client, const wharf_enqueue_opts *tasks,
                         size_t n, const wharf_task_options *options,
                         wharf_enqueue_reply *replies);

/* Reads the cached result of task id of type. On OK sets *data to a
 * malloc'd copy of the bytes with a NUL after them (the caller frees it
 * with wharf_free or free) and *len to their count; an empty result is OK
 * with *len 0. NOT_FOUND when there is none (yet, or any more). */
WHARF_CLIENT_API wharf_client_status wharf_result_get(wharf_client *client,
                                                      const char *type,
                                                      const char *id,
                                                      void **data, size_t *len);

/* wharf_result_get, polling (5 ms, growing to 100 ms between tries) until
 * the result exists or timeout_ms has passed: then TIMEOUT. Both return
 * at once DEAD (the errstr holds the task's last error) or CANCELLED when
 * the task will never have a result. */
WHARF_CLIENT_API wharf_client_status
wharf_result_wait(wharf_client *client, const char *type, const char *id,
                  int64_t timeout_ms, void **data, size_t *len);

/* Where a task is now (wharf status). */
typedef enum wharf_task_state {
    WHARF_TASK_UNKNOWN = 0, /* never enqueued, or forgotten */
    WHARF_TASK_QUEUED,      /* in its stream, waiting for a worker */
    WHARF_TASK_RUNNING,     /* claimed by a worker */
    WHARF_TASK_DELAYED,     /* waiting for its time (a delay or a retry) */
    WHARF_TASK_DONE,        /* finished; its result is cached */
    WHARF_TASK_DEAD,        /* failed for good */
    WHARF_TASK_CANCELLED,   /* cancelled (remembered for a day) */
    WHARF_TASK_HELD         /* waiting for its parents (workflows) */
} wharf_task_state;

/* The state as a word ("queued", "running", ...); static storage. */
WHARF_CLIENT_API const char *wharf_task_state_name(wharf_task_state s);

/* What wharf_task_status found. Times are ms since the epoch (Redis TIME);
 * a field that does not apply to the state is 0 or "". */
typedef struct wharf_task_info {
    wharf_task_state state;
    int64_t now_ms;         /* Redis time of the answer */
    unsigned attempt;       /* queued, running: this run's attempt;
                               delayed: the next run's; dead: attempts */
    int64_t enqueued_at_ms; /* queued, running, delayed */
    int64_t since_ms;       /* running: when its run began (0: not yet) */
    int cancel_requested;   /* running: a cancel is on its way to it */
    int64_t due_at_ms;      /* delayed */
    int64_t died_at_ms;     /* dead */
    int64_t expires_in_ms;  /* done: the result's; cancelled: how long
                               the cancel is remembered */
    uint64_t result_bytes;  /* done */
    char worker[256];       /* running: the consumer that holds it */
    char entry[48];         /* queued, running: its stream entry id */
    char error[512];        /* delayed: the last error ("" if none); dead:
                               the error it died of (cut to fit) */
    char waits_for[1024];   /* held: the parents not finished yet,
                               "<type>:<id>,..." (cut to fit) */
    /* queued, running, delayed, dead: the options it was enqueued with
     * (wharf_enqueue_with), 0 for each one not set */
    int64_t timeout_ms;
    unsigned max_attempts;
    int64_t expires_at_ms;
} wharf_task_info;

/* Reads where task id of type is, in one script call. OK with *out set
 * (state UNKNOWN too), or BAD_INPUT, PROTOCOL, UNAVAILABLE, AUTH, ERROR. */
WHARF_CLIENT_API wharf_client_status wharf_task_status(wharf_client *client,
                                                       const char *type,
                                                       const char *id,
                                                       wharf_task_info *out);

/* What wharf_cancel did. */
typedef enum wharf_cancel_outcome {
    WHARF_CANCEL_REMOVED = 0, /* it was waiting (queued, delayed or held
                                 for its parents): gone,
                                 it never runs */
    WHARF_CANCEL_REQUESTED,   /* a worker holds it: its run is asked to end
                                 (its plugin sees wharf_cancelled) and ends
                                 as cancelled, writing no result */
    WHARF_CANCEL_ALREADY,     /* it was cancelled before */
    WHARF_CANCEL_FINISHED,    /* too late: it is done or dead */
    WHARF_CANCEL_UNKNOWN      /* no such task */
} wharf_cancel_outcome;

typedef struct wharf_cancel_reply {
    wharf_cancel_outcome outcome;
    char detail[256]; /* REMOVED: "queued" or "delayed"; REQUESTED: the
                         consumer running it; FINISHED: "done" or "dead" */
} wharf_cancel_reply;

/* Cancels task id of type, in one atomic script call: the outcome says
 * what became of it. OK for REMOVED, REQUESTED and ALREADY; NOT_FOUND
 * (errstr says why) for FINISHED and UNKNOWN; or BAD_INPUT, PROTOCOL,
 * UNAVAILABLE, AUTH, ERROR (then *out is untouched). A cancelled id may be
 * enqueued again at once: that is a new task. */
WHARF_CLIENT_API wharf_client_status wharf_cancel(wharf_client *client,
                                                  const char *type,
                                                  const char *id,
                                                  wharf_cancel_reply *out);

/* Makes every enqueue of client wait, after Redis took it, until at least
 * min_replicas replicas have it too (Redis WAIT, up to timeout_ms), so an
 * acknowledged task survives the failover of its primary (Sentinel or
 * Redis Cluster). A task Redis took but fewer replicas confirmed in time
 * gets UNAVAILABLE: enqueue it again (its id makes it a duplicate then,
 * unless its type's idempotency is none). 0 turns it off (the default). */
WHARF_CLIENT_API void wharf_client_require_replicas(wharf_client *client,
                                                    int min_replicas,
                                                    int64_t timeout_ms);

/* Frees memory the library handed out. Accepts NULL. */
WHARF_CLIENT_API void wharf_free(void *p);

#ifdef __cplusplus
}
#endif

#endif /* WHARF_CLIENT_H */
