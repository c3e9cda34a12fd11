/* wharf: parses the global options, finds the command in the table,
 * decides the Redis address, reads the command's arguments against its
 * declaration (cli_parse) and runs the command. Exit codes are sysexits
 * (wharf(1), README "Exit codes"). */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "address.h"
#include "cli.h"
#include "quote.h"

static const cli_command *const commands[] = {
    &cmd_enqueue_entry,       &cmd_result_entry,
    &cmd_stats_entry,         &cmd_dead_list_entry,
    &cmd_dead_show_entry,     &cmd_dead_replay_entry,
    &cmd_dead_purge_entry,    &cmd_dead_run_entry,
    &cmd_locks_list_entry,
    &cmd_locks_release_entry, &cmd_run_entry, &cmd_top_entry,
    &cmd_status_entry,        &cmd_cancel_entry,
    &cmd_queue_drop_entry,    &cmd_pause_entry,
    &cmd_resume_entry,        &cmd_schedules_entry,
    &cmd_schedule_run_entry,  &cmd_group_show_entry,
    &cmd_group_cancel_entry,  NULL};

/* Usage lines of every command whose name starts with `family` (all when
 * NULL). */
static void usage_lines(FILE *out, const char *family)
{
    size_t n = family ? strlen(family) : 0;

    for (size_t i = 0; commands[i]; i++)
        if (!family || (strncmp(commands[i]->name, family, n) == 0 &&
                        commands[i]->name[n] == ' '))
            fprintf(out, "       wharf %s %s\n", commands[i]->name,
                    commands[i]->usage);
}

static void usage(FILE *out)
{
    fprintf(out, "usage: wharf [--config FILE | --redis URL] [--tls-ca FILE] "
                 "[--tls-cert FILE]\n             [--tls-key FILE] "
                 "[--tls-sni NAME] [--tls-verify yes|no] COMMAND ...\n");
    usage_lines(out, NULL);
    fprintf(out, "The Redis address: --redis, else the manifest of --config, "
                 "else WHARF_REDIS_URL,\nelse redis://127.0.0.1:6379. "
                 "`wharf COMMAND --help` shows one command.\n");
}

/* True if the first word of name is word and the name has a second. */
static int is_family(const char *name, const char *word)
{
    size_t n = strlen(word);

    return strncmp(name, word, n) == 0 && name[n] == ' ';
}

/* Finds the command named by argv[0] (and argv[1] for two-word names);
 * sets *words to how many it used. NULL after a usage error. */
static const cli_command *find_command(int argc, char **argv, int *words)
{
    char quoted[CLI_QUOTE_MAX];
    int family = 0;

    for (size_t i = 0; commands[i]; i++) {
        const char *name = commands[i]->name;
        if (strcmp(name, argv[0]) == 0) {
            *words = 1;
            return commands[i];
        }
        if (!is_family(name, argv[0]))
            continue;
        family = 1;
        if (argc > 1 && strcmp(name + strlen(argv[0]) + 1, argv[1]) == 0) {
            *words = 2;
            return commands[i];
        }
    }
    if (!family) {
        quote_text(argv[0], quoted, sizeof(quoted));
        fprintf(stderr, "wharf: unknown command '%s'\n", quoted);
        usage(stderr);
    } else {
        if (argc > 1) {
            quote_text(argv[1], quoted, sizeof(quoted));
            fprintf(stderr, "wharf: %s: unknown command '%s'\n", argv[0],
                    quoted);
        } else
            fprintf(stderr, "wharf: %s: missing a command\n", argv[0]);
        fprintf(stderr, "usage:\n");
        usage_lines(stderr, argv[0]);
    }
    return NULL;
}

/* Flushes stdout; a failed write is an error too (EX_IOERR). */
static int finish_output(int status)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "wharf: cannot write to stdout: %s\n", strerror(errno));
        return status == EX_OK ? EX_IOERR : status;
    }
    return status;
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        {"config", required_argument, NULL, 'c'},
        {"redis", required_argument, NULL, 'r'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        /* 1000 + i: address_tls_options[i] */
        {"tls-ca", required_argument, NULL, 1000},
        {"tls-cert", required_argument, NULL, 1001},
        {"tls-key", required_argument, NULL, 1002},
        {"tls-sni", required_argument, NULL, 1003},
        {"tls-verify", required_argument, NULL, 1004},
        {NULL, 0, NULL, 0}};
    const char *tls[ADDRESS_TLS_OPTIONS] = {NULL};
    const char *config_path = NULL, *redis_option = NULL;
    const cli_command *command;
    char quoted[CLI_QUOTE_MAX];
    cli_args args;
    cli ctx;
    int opt, words = 1, status;

    memset(&ctx, 0, sizeof(ctx));
    opterr = 0;
    /* "+": stop at the command; its own options are its own. */
    while ((opt = getopt_long(argc, argv, "+:c:r:hV", options, NULL)) != -1) {
        switch (opt) {
        case 'c':
            config_path = optarg;
            break;
        case 'r':
            redis_option = optarg;
            break;
        case 'h':
            usage(stdout);
            return finish_output(EX_OK);
        case 'V':
            printf("wharf %s\n", WHARF_VERSION);
            return finish_output(EX_OK);
        case 1000:
        case 1001:
        case 1002:
        case 1003:
        case 1004:
            tls[opt - 1000] = optarg;
            break;
        case ':':
            quote_text(argv[optind - 1], quoted, sizeof(quoted));
            fprintf(stderr, "wharf: option '%s' needs a value\n", quoted);
            usage(stderr);
            return EX_USAGE;
        default:
            quote_text(argv[optind - 1], quoted, sizeof(quoted));
            fprintf(stderr, "wharf: unknown option '%s'\n", quoted);
            usage(stderr);
            return EX_USAGE;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "wharf: missing a command\n");
        usage(stderr);
        return EX_USAGE;
    }
    if (strcmp(argv[optind], "help") == 0) {
        usage(stdout);
        return finish_output(EX_OK);
    }
    command = find_command(argc - optind, argv + optind, &words);
    if (!command)
        return EX_USAGE;
    ctx.command = command;
    status = address_resolve(&ctx, redis_option, config_path);
    if (status == EX_OK)
        status = address_add_tls(&ctx, tls);
    if (status == EX_OK) {
        int first = optind + words - 1; /* the command's last word */
        if (cli_parse(&ctx, argc - first, argv + first, &args, &status))
            status = command->run(&ctx, &args);
    }
    cli_disconnect(&ctx);
    config_free(ctx.config);
    return finish_output(status);
}
