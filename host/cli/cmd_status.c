/* wharf status TYPE ID [--json]: where a task is now, from one call of
 * sdk/lua/status.lua through the client (wharf_task_status): its state and
 * the fields of that state, one "name: value" a line (or one JSON object);
 * exit 1 when the task is unknown. */
#include <inttypes.h>
#include <string.h>
#include <sysexits.h>

#include "cli.h"

/* A time field: its ms, the ISO time and how far from now. */
static void print_time(const char *name, int64_t ms, int64_t now)
{
    char when[CLI_TIME_MAX];

    cli_iso_time(ms, when, sizeof(when));
    printf("%s: %s (%+" PRId64 " ms)\n", name, when, ms - now);
}

static void print_text(const wharf_task_info *t)
{
    printf("state: %s\n", wharf_task_state_name(t->state));
    if (t->entry[0])
        printf("entry: %s\n", t->entry);
    if (t->attempt)
        printf("%s: %u\n", t->state == WHARF_TASK_DEAD ? "attempts" : "attempt",
               t->attempt);
    if (t->worker[0])
        printf("worker: %s\n", t->worker);
    if (t->since_ms)
        print_time("since", t->since_ms, t->now_ms);
    if (t->state == WHARF_TASK_RUNNING)
        printf("cancel_requested: %s\n", t->cancel_requested ? "yes" : "no");
    if (t->enqueued_at_ms)
        print_time("enqueued_at", t->enqueued_at_ms, t->now_ms);
    if (t->due_at_ms)
        print_time("due_at", t->due_at_ms, t->now_ms);
    if (t->died_at_ms)
        print_time("died_at", t->died_at_ms, t->now_ms);
    if (t->state == WHARF_TASK_DONE)
        printf("result_bytes: %" PRIu64 "\n", t->result_bytes);
    if (t->state == WHARF_TASK_DONE || t->state == WHARF_TASK_CANCELLED)
        printf("expires_in_ms: %" PRId64 "\n", t->expires_in_ms);
    if (t->state == WHARF_TASK_HELD)
        printf("waits_for: %s\n", t->waits_for[0] ? t->waits_for : "-");
    if (t->timeout_ms)
        printf("timeout_ms: %" PRId64 "\n", t->timeout_ms);
    if (t->max_attempts)
        printf("max_attempts: %u\n", t->max_attempts);
    if (t->expires_at_ms)
        print_time("expires_at", t->expires_at_ms, t->now_ms);
    if (t->error[0]) {
        printf("error: ");
        cli_print_escaped(stdout, t->error, strlen(t->error));
        putchar('\n');
    }
}

/* The same fields as one JSON object, named as the other clients name
 * them (docs/protocol.md). */
static void print_json(const wharf_task_info *t)
{
    printf("{\"state\": \"%s\", \"now_ms\": %" PRId64,
           wharf_task_state_name(t->state), t->now_ms);
    if (t->entry[0])
        printf(", \"entry\": \"%s\"", t->entry);
    if (t->attempt)
        printf(", \"attempt\": %u", t->attempt);
    if (t->worker[0]) {
        printf(", \"worker\": ");
        cli_print_json_string(stdout, t->worker);
    }
    if (t->state == WHARF_TASK_RUNNING)
        printf(", \"since_ms\": %" PRId64 ", \"cancel_requested\": %s",
               t->since_ms, t->cancel_requested ? "true" : "false");
    if (t->enqueued_at_ms)
        printf(", \"enqueued_at_ms\": %" PRId64, t->enqueued_at_ms);
    if (t->due_at_ms)
        printf(", \"due_at_ms\": %" PRId64, t->due_at_ms);
    if (t->died_at_ms)
        printf(", \"died_at_ms\": %" PRId64, t->died_at_ms);
    if (t->state == WHARF_TASK_DONE)
        printf(", \"result_bytes\": %" PRIu64, t->result_bytes);
    if (t->state == WHARF_TASK_DONE || t->state == WHARF_TASK_CANCELLED)
        printf(", \"expires_in_ms\": %" PRId64, t->expires_in_ms);
    if (t->state == WHARF_TASK_HELD) {
        printf(", \"waits_for\": ");
        cli_print_json_string(stdout, t->waits_for);
    }
    if (t->timeout_ms)
        printf(", \"timeout_ms\": %" PRId64, t->timeout_ms);
    if (t->max_attempts)
        printf(", \"max_attempts\": %u", t->max_attempts);
    if (t->expires_at_ms)
        printf(", \"expires_at_ms\": %" PRId64, t->expires_at_ms);
    if (t->state == WHARF_TASK_DELAYED || t->state == WHARF_TASK_DEAD) {
        printf(", \"error\": ");
        cli_print_json_string(stdout, t->error);
    }
    printf("}\n");
}

enum { OPT_JSON };

static int run(cli *ctx, const cli_args *args)
{
    const char *type, *id;
    wharf_client_status status;
    wharf_task_info info;
    int code, json = args->flag[OPT_JSON] != NULL;

    if ((code = cli_type_and_id(ctx, args, &type, &id)) != 0 ||
        (code = cli_connect(ctx)) != 0)
        return code;
    status = wharf_task_status(ctx->client, type, id, &info);
    if (status != WHARF_CLIENT_OK)
        return cli_fail(ctx, cli_exit_status(status), "%s",
                        wharf_client_errstr(ctx->client));
    if (json)
        print_json(&info);
    else
        print_text(&info);
    return info.state == WHARF_TASK_UNKNOWN ? CLI_NOT_FOUND : EX_OK;
}

const cli_command cmd_status_entry = {
    .name = "status",
    .usage = "TYPE ID [--json]",
    .help = "Says where task ID of TYPE is: queued, running (on which worker, since\n"
"when), delayed (due when, next attempt), done (result size, expires in),\n"
"dead (error, attempts), cancelled, held (the parents it waits for), or\n"
"unknown; one \"name: value\" a line.\n"
"  --json        one JSON object (fields as in docs/protocol.md)\n"
"Exit: 0; 1 unknown; 69 Redis unavailable; 76 the hosts speak another\n"
"wharf protocol.\n",
    .flags = {[OPT_JSON] = {"json", false}},
    .operands = {"TYPE", "ID"},
    .lower = 2,
    .upper = 2,
    .run = run,
};
