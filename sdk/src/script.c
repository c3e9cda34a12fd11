/* Lua scripts run with EVALSHA; see script.h. */
#include "script.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

/* The longest argument list a script call takes: EVALSHA sha numkeys plus
 * the caller's keys and arguments. */
#define SCRIPT_MAX_ARGS 256

void script_init(script *s)
{
    unsigned char digest[SHA_DIGEST_LENGTH];

    SHA1((const unsigned char *)s->source, strlen(s->source), digest);
    for (int i = 0; i < SHA_DIGEST_LENGTH; i++)
        snprintf(s->sha + 2 * i, 3, "%02x", digest[i]);
}

int script_load(redisContext *c, const script *s, char *err, size_t errlen)
{
    redisReply *reply = redisCommand(c, "SCRIPT LOAD %s", s->source);
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

/* Builds "EVALSHA sha numkeys args..." into the given arrays. */
static int build_call(const script *s, const char *numkeys_text, int argc,
                      const char *const *argv, const size_t *argvlen,
                      const char **out, size_t *outlen)
{
    if (argc < 0 || argc + 3 > SCRIPT_MAX_ARGS)
        return -1;
    out[0] = "EVALSHA";
    outlen[0] = 7;
    out[1] = s->sha;
    outlen[1] = 40;
    out[2] = numkeys_text;
    outlen[2] = strlen(numkeys_text);
    for (int i = 0; i < argc; i++) {
        out[3 + i] = argv[i];
        outlen[3 + i] = argvlen ? argvlen[i] : strlen(argv[i]);
    }
    return argc + 3;
}

int script_is_noscript(const redisReply *reply)
{
    return reply && reply->type == REDIS_REPLY_ERROR &&
           strncmp(reply->str, "NOSCRIPT", 8) == 0;
}

int script_append(redisContext *c, const script *s, int numkeys, int argc,
                  const char *const *argv, const size_t *argvlen)
{
    const char *call[SCRIPT_MAX_ARGS];
    size_t calllen[SCRIPT_MAX_ARGS];
    char numkeys_text[16];
    int n;

    snprintf(numkeys_text, sizeof(numkeys_text), "%d", numkeys);
    n = build_call(s, numkeys_text, argc, argv, argvlen, call, calllen);
    if (n < 0)
        return -1;
    return redisAppendCommandArgv(c, n, call, calllen) == REDIS_OK ? 0 : -1;
}

redisReply *script_run(redisContext *c, const script *s, int numkeys,
                       int argc, const char *const *argv, const size_t *argvlen)
{
    const char *call[SCRIPT_MAX_ARGS];
    size_t calllen[SCRIPT_MAX_ARGS];
    char numkeys_text[16];
    char err[256];
    redisReply *reply;
    int n;

    snprintf(numkeys_text, sizeof(numkeys_text), "%d", numkeys);
    n = build_call(s, numkeys_text, argc, argv, argvlen, call, calllen);
    if (n < 0)
        return NULL;
    reply = redisCommandArgv(c, n, call, calllen);
    if (!script_is_noscript(reply))
        return reply;
    freeReplyObject(reply);
    if (script_load(c, s, err, sizeof(err)) != 0 && c->err)
        return NULL;
    return redisCommandArgv(c, n, call, calllen);
}
