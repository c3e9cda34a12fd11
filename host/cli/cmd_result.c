/* wharf result TYPE ID [--wait DUR]: the result bytes on stdout, exactly;
 * exit 1 when there is none (yet), 2 when the task is dead and 3 when it
 * was cancelled (a wait ends at once then). */
#include <stdlib.h>
#include <sysexits.h>

#include "cli.h"

enum { OPT_WAIT };

static int run(cli *ctx, const cli_args *args)
{
    const char *type, *id, *wait_text = args->flag[OPT_WAIT];
    int64_t wait_ms = 0;
    void *data = NULL;
    size_t len = 0;
    wharf_client_status status;
    int code;

    if ((code = cli_type_and_id(ctx, args, &type, &id)) != 0 ||
        (wait_text &&
         (code = cli_duration(ctx, "--wait", wait_text, &wait_ms)) != 0) ||
        (code = cli_connect(ctx)) != 0)
        return code;
    status = wharf_result_wait(ctx->client, type, id, wait_ms, &data, &len);
    if (status != WHARF_CLIENT_OK)
        return cli_fail(ctx, cli_exit_status(status), "%s",
                        wharf_client_errstr(ctx->client));
    if (len > 0 && fwrite(data, 1, len, stdout) != len)
        code = EX_IOERR; /* main says why when it flushes */
    wharf_free(data);
    return code;
}

const cli_command cmd_result_entry = {
    .name = "result",
    .usage = "TYPE ID [--wait DUR]",
    .help = "Prints the stored result of task ID of TYPE, byte for byte.\n"
"  --wait DUR    wait up to DUR for it; a dead or cancelled task ends the\n"
"                wait at once\n"
"Exit: 0 printed; 1 no result (yet); 2 the task is dead (its error on\n"
"stderr); 3 it was cancelled; 69 Redis unavailable; 76 the hosts speak\n"
"another wharf protocol.\n",
    .flags = {[OPT_WAIT] = {"wait", true}},
    .operands = {"TYPE", "ID"},
    .lower = 2,
    .upper = 2,
    .run = run,
};
