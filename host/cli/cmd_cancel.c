/* wharf cancel TYPE ID: cancels a task through sdk/lua/cancel.lua (the
 * client's wharf_cancel): a queued, delayed or held one is removed and
 * never runs; a running one's host asks its plugin to end and its run
 * ends as cancelled, writing no result; a finished one says so (exit 1).
 * wharf cancel --group G: the group's callback and each of its members,
 * as wharf group cancel G (cli_cancel_group, cmd_group.c). */
#include <sysexits.h>

#include "cli.h"

enum { OPT_GROUP };

/* --group G stands for TYPE ID. */
static int check(cli *ctx, const cli_args *args)
{
    if (args->flag[OPT_GROUP] && args->count > 0)
        return cli_usage(ctx, "give TYPE ID or --group G, not both");
    if (!args->flag[OPT_GROUP] && args->count < 2)
        return cli_usage(ctx, "missing %s", args->count ? "ID" : "TYPE");
    return 0;
}

static int run(cli *ctx, const cli_args *args)
{
    const char *type, *id;
    wharf_client_status status;
    wharf_cancel_reply reply;
    int code;

    if (args->flag[OPT_GROUP])
        return cli_cancel_group(ctx, args->flag[OPT_GROUP]);
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
    .usage = "TYPE ID | --group G",
    .help =
        "Cancels task ID of TYPE. A queued, delayed or held task is removed\n"
        "and never runs. A running one is asked to end (its plugin sees\n"
        "wharf_cancelled, on whichever host runs it) and its run ends as "
        "cancelled:\n"
        "no result, no retry. The id may be enqueued again at once, as a new "
        "task.\n"
        "  --group G     cancel group G: its callback never runs, and each "
        "member\n"
        "                still queued, delayed or running is cancelled as "
        "above\n"
        "Exit: 0 removed, cancelling or already cancelled; 1 finished (done "
        "or\n"
        "dead) or unknown; 69 Redis unavailable; 76 the hosts speak another "
        "wharf\n"
        "protocol.\n",
    .flags = {[OPT_GROUP] = {"group", true}},
    .operands = {"TYPE", "ID"},
    .lower = 0,
    .upper = 2,
    .check = check,
    .run = run,
};
