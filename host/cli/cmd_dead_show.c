/* wharf dead show TYPE ID: every field of a dead task's record
 * (dead_record.h), one "name: value" a line (values escaped when not
 * printable), with when it died; exit 1 if the id is not in the dead
 * set. */
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "cli.h"
#include "dead_record.h"

/* The envelope's fields in the order they are shown; others follow. */
static const char *const known[] = {
    "id",     "type",        "attempt", "error",   "failed_at",
    "worker", "enqueued_at", "trace",   "payload", NULL};

static int is_time_field(const char *name)
{
    return strcmp(name, "failed_at") == 0 || strcmp(name, "enqueued_at") == 0;
}

static void print_value(const char *name, const redisReply *value)
{
    char when[CLI_TIME_MAX];

    printf("%s: ", name);
    if (strcmp(name, "payload") == 0)
        printf("(%zu bytes%s) ", value->len,
               cli_printable(value->str, value->len) ? "" : ", escaped");
    cli_print_escaped(stdout, value->str, value->len);
    if (is_time_field(name) && value->len > 0) {
        cli_iso_time(strtoll(value->str, NULL, 10), when, sizeof(when));
        printf(" (%s)", when);
    }
    fputc('\n', stdout);
}

static int is_known(const char *name)
{
    for (size_t i = 0; known[i]; i++)
        if (strcmp(known[i], name) == 0)
            return 1;
    return 0;
}

/* Prints the HGETALL reply fields: known ones first, in order. */
static void print_envelope(const redisReply *all)
{
    for (size_t k = 0; known[k]; k++)
        for (size_t i = 0; i + 1 < all->elements; i += 2)
            if (strcmp(all->element[i]->str, known[k]) == 0)
                print_value(known[k], all->element[i + 1]);
    for (size_t i = 0; i + 1 < all->elements; i += 2)
        if (!is_known(all->element[i]->str))
            print_value(all->element[i]->str, all->element[i + 1]);
}

static int run(cli *ctx, const cli_args *args)
{
    char when[CLI_TIME_MAX];
    const char *type, *id;
    dead_record r;
    int code;

    if ((code = cli_type_and_id(ctx, args, &type, &id)) != 0)
        return code;
    if ((code = dead_record_read(ctx, "dead show", type, id, &r)) == 0) {
        cli_iso_time((int64_t)strtod(r.score->str, NULL), when, sizeof(when));
        printf("died_at: %s (%s)\n", r.score->str, when);
        if (r.all->elements == 0)
            code = dead_record_gone(ctx, type, id, &r);
        else
            print_envelope(r.all);
    }
    dead_record_free(&r);
    return code;
}

const cli_command cmd_dead_show_entry = {
    .name = "dead show",
    .usage = "TYPE ID",
    .help = "Every field of dead task ID of TYPE: payload, attempts, last error,\n"
"worker, trace.\n"
"Exit: 0; 1 not dead; 69 Redis unavailable.\n",
    .operands = {"TYPE", "ID"},
    .lower = 2,
    .upper = 2,
    .run = run,
};
