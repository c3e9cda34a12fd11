/* Lua scripts run with EVALSHA. The SHA1 is computed locally, so a script
 * needs no round trip before its first call; SCRIPT LOAD sends the body
 * when a server answers NOSCRIPT (a restarted Redis forgets its scripts). */
#ifndef WHARF_SCRIPT_H
#define WHARF_SCRIPT_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include "command.h"

/* A SHA1 in hex, and its NUL. */
#define SCRIPT_SHA_SIZE 41

/* Why a SCRIPT LOAD failed: one reply or connection error. */
#define SCRIPT_ERR_MAX 256

typedef struct script {
    const char *name;   /* for messages */
    const char *source; /* the Lua body; static storage */
    char sha[SCRIPT_SHA_SIZE];
} script;

/* Fills s->sha from s->source. Call once before use. */
void script_init(script *s);

/* SCRIPT LOAD s into the server. 0 on success, -1 with err set. */
int script_load(redisContext *c, const script *s, char *err, size_t errlen);

/* Runs s with numkeys keys and args: argv holds keys then arguments
 * (argc in all). On NOSCRIPT it loads the script and runs it again. Returns
 * the reply (caller frees with freeReplyObject), or NULL when the
 * connection failed (c->errstr says why) or the call could not be built
 * (out of memory; no limit on argc). A Lua error is an error reply. */
redisReply *script_run(redisContext *c, const script *s, int numkeys, int argc,
                       const char *const *argv, const size_t *argvlen);

/* Builds "EVALSHA sha numkeys keys... args..." of s with argv (numkeys
 * keys, then the arguments; argvlen NULL: strlen) into cmd. 0 or -1. */
int script_build(command *cmd, const script *s, int numkeys, int argc,
                 const char *const *argv, const size_t *argvlen);

/* Pipelined form: appends EVALSHA to c's output buffer. Read the reply
 * with tls_get_reply; if script_is_noscript says so, run the call again
 * with script_run once nothing else is in flight. 0 or -1. */
int script_append(redisContext *c, const script *s, int numkeys, int argc,
                  const char *const *argv, const size_t *argvlen);

/* Runs a call built in cmd (command_evalsha of s, then its keys and
 * arguments); on NOSCRIPT loads s and sends cmd again. The reply (caller
 * frees), or NULL: cmd->err or c->err says why. */
redisReply *script_run_command(redisContext *c, const script *s, command *cmd);

/* True if reply is a NOSCRIPT error, meaning the pipelined call must be
 * made again with script_run. */
int script_is_noscript(const redisReply *reply);

#endif /* WHARF_SCRIPT_H */
