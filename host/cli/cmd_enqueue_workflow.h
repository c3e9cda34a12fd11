/* wharf enqueue's workflow forms (cmd_enqueue_workflow.c): a task held
 * until its parents finish (--after), and a group of tasks with a
 * callback (--file --group --then). */
#ifndef WHARF_CLI_CMD_ENQUEUE_WORKFLOW_H
#define WHARF_CLI_CMD_ENQUEUE_WORKFLOW_H

#include "cli.h"

/* Enqueues task (type, payload, id, trace) held until every parent of
 * after ("TYPE:ID,TYPE:ID...") has finished; on_dead is on_parent_dead
 * ("dead", "run" or NULL for dead). Prints the id. The exit code. */
int cli_enqueue_after(cli *ctx, const wharf_enqueue_opts *task,
                      const char *after, const char *on_dead);

/* Enqueues one member of type per line of path (as --file reads it) as
 * group, whose callback of then_type gets then_payload. Prints each
 * member's id, one a line. The exit code. */
int cli_enqueue_group(cli *ctx, const char *path, const char *type,
                      const char *group, const char *then_type,
                      const char *then_payload);

#endif /* WHARF_CLI_CMD_ENQUEUE_WORKFLOW_H */
