/* wharf locks release TYPE ID: deletes the processing lock of a task (for
 * a holder known to be dead); exit 1 if there is none. The fencing token
 * still protects downstream systems from the old holder. */
#include <sysexits.h>

#include "cli.h"

static int run(cli *ctx, int argc, char **argv)
{
    static const struct option options[] = {{"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};
    char lock[KEY_MAX];
    const char *type, *id;
    redisReply *r;
    int opt, code;

    while ((opt = cli_option(ctx, argc, argv, options)) > 0)
        ;
    if (opt < 0)
        return cli_option_exit(opt);
    if ((code = cli_type_and_id(ctx, argc, argv, &type, &id)) != 0)
        return code;
    cli_task_key(ctx, lock, type, "lock", id);
    if (!(r = cli_run(ctx, &code, "locks release", "DEL %s", lock)))
        return code;
    if (r->type == REDIS_REPLY_INTEGER && r->integer > 0)
        printf("released %s\n", id);
    else
        code = cli_fail(ctx, CLI_NOT_FOUND,
                        "no lock on task '%s' of type "
                        "'%s'",
                        id, type);
    freeReplyObject(r);
    return code;
}

const cli_command cmd_locks_release_entry = {
    .name = "locks release",
    .usage = "TYPE ID",
    .run = run,
};
