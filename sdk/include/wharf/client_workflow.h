/* Workflows for producers (docs/protocol.md, "Workflows"): a task held
 * until its parents have finished, and a group of tasks whose callback is
 * enqueued once, when the last member has ended. */
#ifndef WHARF_CLIENT_WORKFLOW_H
#define WHARF_CLIENT_WORKFLOW_H

#include <wharf/client.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One parent: a task of any type, queued, running, delayed, held, done
 * (its result still cached) or dead when the child is enqueued. */
typedef struct wharf_parent {
    const char *type;
    const char *id; /* no ',' in it (parents are listed with commas) */
} wharf_parent;

/* A task with parents. Zero every field you do not set. */
typedef struct wharf_after_opts {
    const char *type;
    const void *payload;
    size_t payload_len;
    const char *id;    /* NULL: 128 random bits in hex */
    const char *trace; /* NULL: a new random traceparent */
    const wharf_parent *parents;
    size_t n_parents;       /* 1 or more */
    int run_if_parent_dead; /* 0 (on_parent_dead = dead): a dead parent
                               makes the child dead, "parent T:id is
                               dead"; 1 (run): it runs anyway */
} wharf_after_opts;

/* Enqueues a child held until every parent has finished; it becomes
 * runnable at once then. OK (out->id its id), DUPLICATE (the id is
 * taken), BAD_INPUT (a bad name, no parents, the child among its own
 * parents, or a parent that is unknown: not queued, running, delayed,
 * held, cached done or dead; errstr names it), TOO_LARGE, PROTOCOL,
 * UNAVAILABLE, ERROR. A child refused after some of its parents noted it
 * leaves nothing runnable: those parents' notices to it expire. */
WHARF_CLIENT_API wharf_client_status
wharf_enqueue_after(wharf_client *client, const wharf_after_opts *opts,
                    wharf_enqueue_reply *out);

/* A group: members, then a callback. */
typedef struct wharf_group_opts {
    const char *group;                 /* 1-100 of [A-Za-z0-9._-] */
    const wharf_enqueue_opts *members; /* .id NULL: "<group>:<n>", n from
                                          1; .delay_ms must be 0 */
    size_t n_members;                  /* 1 or more */
    const char *then_type;             /* the callback's type */
    const char *then_payload;          /* text, given to the callback
                                          inside its JSON payload */
} wharf_group_opts;

/* Makes the group and enqueues its members. When the last member ends
 * (ok or dead) a host enqueues the callback, once, with id
 * "group:<group>" and the payload {"group": G, "ok": N, "dead": M,
 * "members": {"<type>:<id>": "ok"|"dead", ...}, "payload": then_payload}.
 * A member refused (TOO_LARGE, PROTOCOL) counts as dead. replies (NULL,
 * or n_members of them) get each member's answer. OK; BAD_INPUT (a bad
 * name, no members, a delayed member, or a group of that name with other
 * members); DUPLICATE is not an error for a member (a call made again
 * after a crash). UNAVAILABLE or ERROR if it stopped part way: call it
 * again, it is safe. */
WHARF_CLIENT_API wharf_client_status
wharf_enqueue_group(wharf_client *client, const wharf_group_opts *opts,
                    wharf_enqueue_reply *replies);

/* One group's state (wharf group show). */
typedef struct wharf_group_info {
    size_t n, ok, dead; /* members, and those that have ended */
    int fired;          /* every member ended */
    int enqueued;       /* the callback is enqueued */
    int cancelled;      /* wharf cancel --group */
    char then_type[WHARF_TYPE_MAX + 1];
} wharf_group_info;

/* Reads a group's counts. NOT_FOUND when there is no such group. */
WHARF_CLIENT_API wharf_client_status wharf_group_get(wharf_client *client,
                                                     const char *group,
                                                     wharf_group_info *out);

/* Calls each(member "<type>:<id>", state, arg) for every member of the
 * group, state "ok" or "dead" once it has ended, else "pending" (queued,
 * running or retrying). NOT_FOUND when there is no such group. */
WHARF_CLIENT_API wharf_client_status wharf_group_members(
    wharf_client *client, const char *group,
    void (*each)(const char *member, const char *state, void *arg), void *arg);

/* Cancels a group: marks it cancelled (its callback never comes) and
 * cancels each member still waiting or running (wharf_cancel); *cancelled
 * (may be NULL) gets how many were. NOT_FOUND when there is no such
 * group. */
WHARF_CLIENT_API wharf_client_status wharf_group_cancel(wharf_client *client,
                                                        const char *group,
                                                        size_t *cancelled);

#ifdef __cplusplus
}
#endif

#endif /* WHARF_CLIENT_WORKFLOW_H */
