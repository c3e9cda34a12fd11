/* wharf schedule run NAME: fires schedule NAME of the manifest now: its
 * task, with its payload (the placeholders this moment's time), under an
 * id that says it was fired by hand (schedule_tick.h), so it is never
 * taken for a scheduled tick nor kept from running by one. The last tick
 * of the schedule is left as it is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "cli.h"
#include "clock_ms.h"
#include "schedule_tick.h"

static int run(cli *ctx, const cli_args *args)
{
    const char *name = args->operand[0];
    const schedule_section *s;
    char id[WHARF_ID_MAX + 1];
    wharf_enqueue_opts opts;
    wharf_enqueue_reply reply;
    wharf_client_status status;
    int64_t now_ms = clock_wall_ms();
    size_t len;
    char *payload;
    int code;

    if ((code = cli_need_schedules(ctx)) != 0)
        return code;
    s = config_schedule(ctx->config, name);
    if (s == NULL)
        return cli_fail(ctx, CLI_NOT_FOUND,
                        "no [schedule.%.100s] in the manifest", name);
    if ((code = cli_connect(ctx)) != 0)
        return code;
    if (ctx->config->producer_strict)
        wharf_client_set_strict(ctx->client, 1);
    schedule_manual_id(id, sizeof(id), s->name, now_ms);
    payload = schedule_payload(s->payload, now_ms / 1000, &len);
    memset(&opts, 0, sizeof(opts));
    opts.type = s->type;
    opts.payload = payload;
    opts.payload_len = len;
    opts.id = id;
    status = wharf_enqueue(ctx->client, &opts, &reply);
    free(payload);
    if (status != WHARF_CLIENT_OK && status != WHARF_CLIENT_DUPLICATE)
        return cli_fail(ctx, cli_exit_status(status), "%s",
                        wharf_client_errstr(ctx->client));
    printf("%s %s\n", s->type, reply.id);
    if (reply.unserved)
        cli_warn_unserved(ctx, s->type, "; enqueued all the same");
    return EX_OK;
}

const cli_command cmd_schedule_run_entry = {
    .name = "schedule run",
    .usage = "NAME",
    .help = "Fires schedule NAME of the manifest (wharf --config FILE) now: enqueues\n"
"its task with its payload ({{tick}} and {{tick_unix}} this moment) under\n"
"the id sched:NAME:manual:<UTC time with ms>, and prints \"TYPE ID\". The\n"
"schedule's last tick is left as it is.\n"
"Exit: 0; 1 no such schedule; 64 no manifest; 65 refused (too large,\n"
"unserved with [producer] strict); 69 Redis unavailable; 75 backpressure.\n",
    .operands = {"NAME"},
    .lower = 1,
    .upper = 1,
    .run = run,
};
