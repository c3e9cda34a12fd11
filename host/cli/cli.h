/* wharf, the producer's and operator's command-line tool (wharf(1)).
 * Each command is one cmd_*.c file defining one cli_command entry (as
 * tmux's cmd-*.c) that declares its flags and operands; main.c holds the
 * table. What the commands share lives here: messages and exit codes,
 * the one argument parser, the Redis connection. */
#ifndef WHARF_CLI_H
#define WHARF_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>

#include <wharf/client.h>
#include <wharf/plugin.h>

#include "config.h"
#include "keys.h"

struct cli_command;
struct conn;

/* Names for the CLI's buffers. What a user typed (an operand, an option,
 * a value), as quoted in one message; a path or a URL so quoted; a time
 * as cli_iso_time writes it; the Redis address; one error line of the
 * client library or the core. */
#define CLI_QUOTE_MAX 120
#define CLI_PATH_QUOTE_MAX 256
#define CLI_TIME_MAX 64
#define CLI_URL_MAX 600
#define CLI_ERR_MAX 600

/* What every command runs with. */
typedef struct cli {
    const struct cli_command *command; /* the one running, for messages */
    char url[CLI_URL_MAX];             /* the Redis address */
    const char *password; /* NULL: the URL's own (points into env/config) */
    const char *prefix;   /* key prefix */
    config *config;       /* the manifest of --config, or NULL; owned */
    wharf_client *client; /* NULL until cli_connect; owned */
    struct conn *conn;    /* the operator commands' connection (conn.h):
                             NULL until cli_redis; owned */
    const char *type;     /* the TYPE operand, once checked (its node is the
                             one cli_redis gives), or NULL */
    redisContext *redis;  /* what cli_redis gave last; cli_read reads it */
} cli;

/* Most flags, and most operands, a command declares. */
#define CLI_FLAGS_MAX 16
#define CLI_OPERANDS_MAX 4

/* One flag a command takes: --NAME, alone or with a value (--wait DUR). */
typedef struct cli_flag {
    const char *name; /* "wait" for --wait; NULL ends the list */
    bool value;       /* takes a value */
    /* Checks the value where the flag stands, before the flags after it
     * are read: 0, or the exit code after saying why. NULL: no check. */
    int (*check)(cli *ctx, const char *value);
} cli_flag;

/* A command's arguments once cli_parse has checked them. */
typedef struct cli_args {
    /* By the flag's place in the command's flags: its last value ("" for
     * a flag without one), or NULL when it was not given. */
    const char *flag[CLI_FLAGS_MAX];
    int count;            /* operands */
    char *const *operand; /* the operands, in the order given */
} cli_args;

/* One command, declared as tmux declares its cmd_entry: its name, usage
 * and help, the flags it takes (--help besides, for every command) and
 * how many operands. cli_parse reads the arguments against it, so run
 * starts from arguments already checked. */
typedef struct cli_command {
    const char *name;  /* "enqueue", or two words: "dead list" */
    const char *usage; /* what follows the name in a usage line */
    const char *help;  /* --help: what it does, its options and exit
                          codes, lines of at most 79 columns; or NULL */
    cli_flag flags[CLI_FLAGS_MAX];
    /* The operands' names, for "missing NAME": those below lower. */
    const char *operands[CLI_OPERANDS_MAX];
    int lower, upper; /* how many operands: at least, at most */
    /* Checks what the flags change about the operands, after lower is
     * checked and before upper is: 0, or the exit code after saying why.
     * NULL: nothing to check. */
    int (*check)(cli *ctx, const cli_args *args);
    /* Runs the command; returns the exit code (sysexits). */
    int (*run)(cli *ctx, const cli_args *args);
} cli_command;

extern const cli_command cmd_enqueue_entry;
extern const cli_command cmd_result_entry;
extern const cli_command cmd_stats_entry;
extern const cli_command cmd_dead_list_entry;
extern const cli_command cmd_dead_show_entry;
extern const cli_command cmd_dead_replay_entry;
extern const cli_command cmd_dead_purge_entry;
extern const cli_command cmd_dead_run_entry;
extern const cli_command cmd_locks_list_entry;
extern const cli_command cmd_locks_release_entry;
extern const cli_command cmd_run_entry;
extern const cli_command cmd_top_entry;
extern const cli_command cmd_status_entry;
extern const cli_command cmd_cancel_entry;
extern const cli_command cmd_queue_drop_entry;
extern const cli_command cmd_pause_entry;
extern const cli_command cmd_resume_entry;
extern const cli_command cmd_schedules_entry;
extern const cli_command cmd_schedule_run_entry;
extern const cli_command cmd_group_show_entry;
extern const cli_command cmd_group_cancel_entry;

/* Cancels group's queued and held members and its callback, saying how
 * many (wharf group cancel G and wharf cancel --group G). An exit code. */
int cli_cancel_group(cli *ctx, const char *group);

/* 0 when the manifest (wharf --config FILE), where the schedules are, was
 * given; else 64 after saying so (cmd_schedules.c). */
int cli_need_schedules(cli *ctx);

/* Exit codes beyond <sysexits.h>: a missing thing is 1; a task that will
 * never have a result is 2 (dead) or 3 (cancelled). */
#define CLI_NOT_FOUND 1
#define CLI_DEAD 2
#define CLI_CANCELLED 3

/* Prints "wharf: NAME: message" on stderr and returns code. Strings the
 * user gave go through quote_text (quote.h: bytes outside 0x20..0x7e as
 * '?') so no control character reaches the terminal. */
int cli_fail(cli *ctx, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* cli_fail with EX_USAGE, followed by the command's usage line. */
int cli_usage(cli *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Reads argv (argv[0] the command's last word) against ctx->command:
 * its flags in any place (as getopt_long reads them), then the count of
 * operands, each with its one-line usage error. True with *args set when
 * the command is to run; false with the exit code in *code when it is
 * not: 0 after --help printed the help, 64 after a usage error, or what
 * a check returned. args points into argv. */
bool cli_parse(cli *ctx, int argc, char **argv, cli_args *args, int *code);

/* The exit code for a client status: 0, 1 (not found, timeout), 2 (dead),
 * 3 (cancelled), 65 (bad input, too large, unserved with strict), 69
 * (unavailable), 75 (backpressure, Redis full), 76 (the hosts speak
 * another protocol), 78 (authentication), 70 (error). */
int cli_exit_status(wharf_client_status status);

/* Checks a type name or a task id from the command line: 0, or 65 after
 * saying why. */
int cli_check_type(cli *ctx, const char *type);
int cli_check_id(cli *ctx, const char *id);

/* Checks the operand TYPE (cli_parse has counted it) and sets *type and
 * ctx->type: 0, or 65 after saying why. */
int cli_type_arg(cli *ctx, const cli_args *args, const char **type);

/* Checks the operands TYPE ID (cli_parse has counted them) and sets
 * *type, *id and ctx->type: 0, or 65 after saying why. */
int cli_type_and_id(cli *ctx, const cli_args *args, const char **type,
                    const char **id);

/* Parses the DUR of option `name` (e.g. "--wait") into *ms: 0, or 64
 * after saying why. */
int cli_duration(cli *ctx, const char *name, const char *text, int64_t *ms);

/* Opens ctx->client if it is not open: 0, or the exit code after saying
 * why (69 when Redis cannot be reached, 78 when it refuses our
 * credentials). */
int cli_connect(cli *ctx);

/* Closes ctx->client and ctx->conn (either may be NULL). */
void cli_disconnect(cli *ctx);

/* The live connection to the node serving ctx->type (on a cluster; any
 * node's for a command about no type), opening ctx->conn and connecting
 * first if needed; NULL after saying why, with the exit code in *code
 * (69 when Redis cannot be reached, 78 when it refuses our credentials or
 * is not what the address says). Owned by ctx->conn. */
redisContext *cli_redis(cli *ctx, int *code);

/* 0 if reply is a reply and not an error; else says why (the command was
 * about `what`) and returns the exit code (69 or 70). */
int cli_reply_check(cli *ctx, const redisReply *reply, const char *what);

/* Runs one command (hiredis format); NULL after saying why (connection
 * failure or error reply), with the exit code in *code. Caller frees. */
redisReply *cli_run(cli *ctx, int *code, const char *what, const char *fmt,
                    ...);

/* Reads the next reply of a pipeline; NULL after saying why the
 * connection failed, with the exit code in *code. Error replies are
 * returned as such. Caller frees. */
redisReply *cli_read(cli *ctx, int *code, const char *what);

/* Writes "<prefix>:{type}:what" (and ":id") into buf of KEY_MAX. */
void cli_key(const cli *ctx, char *buf, const char *type, const char *what);
void cli_task_key(const cli *ctx, char *buf, const char *type, const char *what,
                  const char *id);

/* Writes s (len bytes) to out as printable ASCII: \\, \n, \r, \t and
 * \xNN for every other byte outside 0x20..0x7e. */
void cli_print_escaped(FILE *out, const char *s, size_t len);

/* Writes s as a JSON string by json_out's one rule (json_out.h): valid
 * UTF-8 as it is, any other byte that is not printable as the text \xNN,
 * so the output is valid JSON whatever a plugin wrote. */
void cli_print_json_string(FILE *out, const char *s);

/* True if every byte of s is printable ASCII (0x20..0x7e). */
int cli_printable(const char *s, size_t len);

/* Writes ms since the epoch as "2024-01-31T12:00:00.000Z" into buf. */
void cli_iso_time(int64_t ms, char *buf, size_t len);

/* Says on stderr that no host has ever served type, naming the types
 * that some host serves (their policy is published): "no host serves
 * 'webhok'; served types: echo, webhook", then `then` ("" or more). */
void cli_warn_unserved(cli *ctx, const char *type, const char *then);

/* enqueue --file: enqueues one task per line of path ("-" = stdin) with
 * the options of base (type, trace, delay) and the per-task options
 * (NULL: none), pipelined; see cmd_enqueue_file.c. Returns the exit
 * code. */
int cli_enqueue_file(cli *ctx, const char *path, const wharf_enqueue_opts *base,
                     const wharf_task_options *options, int64_t wait_ms);

/* A dead task to run again in this process (wharf dead run). */
typedef struct cli_replay {
    const char *plugin_path; /* NULL: the one the manifest routes the
                                type to */
    const char *config_path; /* the command's --config, or NULL (then the
                                global one) */
    const wharf_task *task;  /* as recorded; its max_attempts is ignored
                                for the manifest's */
    bool result_only;        /* --result */
    const char *died_with;   /* the error it died with */
} cli_replay;

/* Runs replay's task as wharf run runs one (cmd_run.c): the same
 * manifest section, deadline, report and exit codes, with "died with:"
 * after the report. Returns the exit code. */
int cli_run_replay(cli *ctx, const cli_replay *replay);

/* Sleeps while a type refuses tasks with BACKPRESSURE: the next pause of a
 * backoff that starts at 10 ms and doubles up to 1 s, cut to the time left
 * before deadline (monotonic ms). Returns 0 after sleeping, -1 if the
 * deadline has passed. *step carries the backoff between calls (start it
 * at 0). */
int cli_backoff(int64_t *step, int64_t deadline);

#endif /* WHARF_CLI_H */
