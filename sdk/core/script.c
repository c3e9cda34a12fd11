/* Lua scripts run with EVALSHA; see script.h. */
#include "script.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "tls.h"

void script_init(script *s)
{
    unsigned char digest[SHA_DIGEST_LENGTH];

    SHA1((const unsigned char *)s->source, strlen(s->source), digest);
    for (int i = 0; i < SHA_DIGEST_LENGTH; i++)
        snprintf(s->sha + 2 * i, 3, "%02x", digest[i]);
}

int script_load(redisContext *c, const script *s, char *err, size_t errlen)
{
    redisReply *reply = tls_command(c, "SCRIPT LOAD %s", s->source);
    int rc = -1;

    if (!reply) {
        snprintf(err, errlen, "loading script %s: %s", s->name, c->errstr);
        return -1;
    }
    if (reply->type == REDIS_REPLY_ERROR)
        snprintf(err, errlen, "loading script %s: %s", s->name, reply->str);
    else if (reply->type != REDIS_REPLY_STRING ||
             strcmp(reply->str, s->sha) != 0)
        snprintf(err, errlen, "loading script %s: unexpected SHA1", s->name);
    else
        rc = 0;
    freeReplyObject(reply);
    return rc;
}

int script_build(command *cmd, const script *s, int numkeys, int argc,
                 const char *const *argv, const size_t *argvlen)
{
    if (argc < 0 || numkeys < 0 || numkeys > argc)
        return -1;
    command_evalsha(cmd, s->sha);
    for (int i = 0; i < argc; i++) {
        size_t len = argvlen ? argvlen[i] : strlen(argv[i]);
        if (i < numkeys)
            command_push_key(cmd, argv[i], len);
        else
            command_push(cmd, argv[i], len);
    }
    return cmd->err ? -1 : 0;
}

int script_is_noscript(const redisReply *reply)
{
    return reply && reply->type == REDIS_REPLY_ERROR &&
           strncmp(reply->str, "NOSCRIPT", 8) == 0;
}

int script_append(redisContext *c, const script *s, int numkeys, int argc,
                  const char *const *argv, const size_t *argvlen)
{
    command cmd;
    int rc = -1;

    command_init(&cmd);
    if (script_build(&cmd, s, numkeys, argc, argv, argvlen) == 0)
        rc = command_append(&cmd, c);
    command_free(&cmd);
    return rc;
}

redisReply *script_run_command(redisContext *c, const script *s, command *cmd)
{
    redisReply *reply = command_run(cmd, c);
    char err[SCRIPT_ERR_MAX];

    if (!script_is_noscript(reply))
        return reply;
    freeReplyObject(reply);
    if (script_load(c, s, err, sizeof(err)) != 0 && c->err)
        return NULL;
    return command_run(cmd, c);
}

redisReply *script_run(redisContext *c, const script *s, int numkeys, int argc,
                       const char *const *argv, const size_t *argvlen)
{
    command cmd;
    redisReply *reply = NULL;

    command_init(&cmd);
    if (script_build(&cmd, s, numkeys, argc, argv, argvlen) == 0)
        reply = script_run_command(c, s, &cmd);
    command_free(&cmd);
    return reply;
}
