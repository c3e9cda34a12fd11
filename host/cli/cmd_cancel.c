/* wharf cancel TYPE ID: cancels a task through sdk/lua/cancel.lua (the
 * client's wharf_cancel): a queued or delayed one is removed and never
 * runs; a running one's host asks its plugin to end and its run ends as
 * cancelled, writing no result; a finished one says so (exit 1). */
#include <sysexits.h>

#include "cli.h"

static int run(cli *ctx, const cli_args *args)
{
    const char *type, *id;
    wharf_client_status status;
    wharf_cancel_reply reply;
    int code;

    if ((code = cli_type_and_id(ctx, args, &type, &id)) != 0 ||
        (code = cli_connect(ctx)) != 0)
        return code;
    status = wharf_cancel(ctx->client, type, id, &reply);
    if (status != WHARF_CLIENT_OK)
        return cli_fail(ctx, cli_exit_status(status), "%s",
                        wharf_client_errstr(ctx->client));
    if (reply.outcome == WHARF_CANCEL_REMOVED)
        printf("removed: %s %s was %s; it will not run\n", type, id,
               reply.detail);
    else if (reply.outcome == WHARF_CANCEL_REQUESTED)
        printf("cancelling: %s %s is running on %s; its run is asked to end "
               "and will write no result\n",
               type, id, reply.detail);
    else
        printf("already cancelled: %s %s\n", type, id);
    return EX_OK;
}

const cli_command cmd_cancel_entry = {
    .name = "cancel",
    .usage = "TYPE ID",
    .help = "Cancels task ID of TYPE. A queued or delayed task is removed and never\n"
"runs. A running one is asked to end (its plugin sees wharf_cancelled, on\n"
"whichever host runs it) and its run ends as cancelled: no result, no\n"
"retry. The id may be enqueued again at once, as a new task.\n"
"Exit: 0 removed, cancelling or already cancelled; 1 finished (done or\n"
"dead) or unknown; 69 Redis unavailable; 76 the hosts speak another wharf\n"
"protocol.\n",
    .operands = {"TYPE", "ID"},
    .lower = 2,
    .upper = 2,
    .run = run,
};
