/* wharf group show G: a group's counts, its callback and each member's
 * state; wharf group cancel G: cancels its members and its callback
 * (<wharf/client_workflow.h>). */
#include <stdio.h>
#include <sysexits.h>

#include <wharf/client_workflow.h>

#include "cli.h"

/* Prints one member a line: "<type>:<id> <state>". */
static void print_member(const char *member, const char *state, void *arg)
{
    (void)arg;
    printf("  %s %s\n", member, state);
}

static int show(cli *ctx, const cli_args *args)
{
    const char *group = args->operand[0];
    wharf_group_info info;
    wharf_client_status status;
    int code;

    if ((code = cli_check_type(ctx, group)) != 0 ||
        (code = cli_connect(ctx)) != 0)
        return code;
    status = wharf_group_get(ctx->client, group, &info);
    if (status != WHARF_CLIENT_OK)
        return cli_fail(ctx, cli_exit_status(status), "%s",
                        wharf_client_errstr(ctx->client));
    printf("group: %s\nmembers: %zu\nok: %zu\ndead: %zu\npending: %zu\n", group,
           info.n, info.ok, info.dead, info.n - info.ok - info.dead);
    printf("callback: %s group:%s (%s)\n", info.then_type, group,
           info.cancelled  ? "cancelled"
           : info.enqueued ? "enqueued"
           : info.fired    ? "due"
                           : "waiting");
    printf("member states:\n");
    status = wharf_group_members(ctx->client, group, print_member, NULL);
    if (status != WHARF_CLIENT_OK)
        return cli_fail(ctx, cli_exit_status(status), "%s",
                        wharf_client_errstr(ctx->client));
    return EX_OK;
}

int cli_cancel_group(cli *ctx, const char *group)
{
    wharf_client_status status;
    size_t n = 0;
    int code;

    if ((code = cli_check_type(ctx, group)) != 0 ||
        (code = cli_connect(ctx)) != 0)
        return code;
    status = wharf_group_cancel(ctx->client, group, &n);
    if (status != WHARF_CLIENT_OK)
        return cli_fail(ctx, cli_exit_status(status), "%s",
                        wharf_client_errstr(ctx->client));
    printf("cancelled: group %s, %zu members; its callback will not run\n",
           group, n);
    return EX_OK;
}

static int cancel(cli *ctx, const cli_args *args)
{
    return cli_cancel_group(ctx, args->operand[0]);
}

const cli_command cmd_group_show_entry = {
    .name = "group show",
    .usage = "G",
    .help = "Shows group G: how many members ended ok or dead and how many\n"
            "are pending, whether its callback is waiting, due, enqueued or "
            "cancelled,\n"
            "and each member's state.\n"
            "Exit: 0; 1 no such group; 65 a bad name; 69 Redis unavailable.\n",
    .operands = {"G"},
    .lower = 1,
    .upper = 1,
    .run = show,
};

const cli_command cmd_group_cancel_entry = {
    .name = "group cancel",
    .usage = "G",
    .help =
        "Cancels group G: its callback will not run, and each member still\n"
        "queued or delayed is removed, each running one asked to end (as "
        "wharf\n"
        "cancel does).\n"
        "Exit: 0; 1 no such group; 65 a bad name; 69 Redis unavailable.\n",
    .operands = {"G"},
    .lower = 1,
    .upper = 1,
    .run = cancel,
};
