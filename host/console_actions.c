/* The console's actions (docs/console.md): POST /api/replay, /api/purge,
 * /api/cancel, /api/pause and /api/resume, each one script of sdk/lua,
 * the same as `wharf dead replay`, `wharf dead purge`, `wharf cancel`,
 * `wharf pause` and `wharf resume` run. Off unless the
 * manifest says [console] actions = yes; each needs its token and passes
 * a cross-origin check. Each script's call (its KEYS and ARGV, in the
 * order of the script's header) is one function: call_cancel,
 * call_dead_replay, call_dead_purge, call_pause. */
#include "console_actions.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <hiredis/hiredis.h>

#include "protocol_version.h" /* CLIENT_PROTOCOLS */
#include "config.h"
#include "keys.h"
#include "log.h"
#include "command.h"
#include "console_redis.h"
#include "console_reply.h"
#include "json_out.h"
#include "lua_scripts.h"

typedef enum action_kind {
    ACTION_CANCEL,
    ACTION_REPLAY,
    ACTION_PURGE,
    ACTION_PAUSE, /* of a type: no id */
    ACTION_RESUME
} action_kind;

/* ---- the scripts' calls (lua_scripts.h builds each from its .lua
 * header): the reply (caller frees), or NULL after dropping the
 * connections (console_run_script) ---- */

/* The one cancel of every producer, sdk/lua/cancel.lua: a queued or
 * delayed task is removed, a running one's host asks it to end. Its
 * reply {word, detail} is read by cancel_word. */
static redisReply *call_cancel(console *c, const char *type, const char *id)
{
    command cmd;
    redisReply *r;

    command_init(&cmd);
    script_cancel_call(&cmd, console_prefix(c), type, id, WHARF_GROUP,
                       CLIENT_PROTOCOLS);
    r = console_run_script(c, &script_cancel, &cmd);
    command_free(&cmd);
    return r;
}

/* sdk/lua/dead_replay.lua: one dead task back into the stream. */
static redisReply *call_dead_replay(console *c, const char *type,
                                    const char *id)
{
    command cmd;
    redisReply *r;

    command_init(&cmd);
    script_dead_replay_call(&cmd, console_prefix(c), type, id);
    r = console_run_script(c, &script_dead_replay, &cmd);
    command_free(&cmd);
    return r;
}

/* sdk/lua/dead_purge.lua: one dead task deleted. */
static redisReply *call_dead_purge(console *c, const char *type, const char *id)
{
    command cmd;
    redisReply *r;

    command_init(&cmd);
    script_dead_purge_call(&cmd, console_prefix(c), type, id);
    r = console_run_script(c, &script_dead_purge, &cmd);
    command_free(&cmd);
    return r;
}

/* sdk/lua/pause.lua: a type paused (for for_ms, 0 until resumed) or
 * resumed. */
static redisReply *call_pause(console *c, const char *type, bool pause,
                              int64_t for_ms)
{
    char for_text[24];
    command cmd;
    redisReply *r;

    snprintf(for_text, sizeof(for_text), "%" PRId64, for_ms);
    command_init(&cmd);
    script_pause_call(&cmd, console_prefix(c), type, pause ? "pause" : "resume",
                      for_text);
    r = console_run_script(c, &script_pause, &cmd);
    command_free(&cmd);
    return r;
}

/* ---- the replies ---- */

/* The word of a cancel.lua reply {word, detail}, as action answers it:
 * REMOVED and CANCELLING did it (OK); CANCELLED had been done before
 * (ALREADY, as `wharf cancel` says "already cancelled"); FINISHED and
 * UNKNOWN found nothing to cancel (NOT_FOUND); PROTOCOL did nothing. NULL
 * for any other reply. */
static const char *cancel_word(const redisReply *r)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING ||
        r->element[1]->type != REDIS_REPLY_STRING)
        return NULL;
    switch (script_cancel_word_of(r->element[0]->str)) {
    case SCRIPT_CANCEL_REMOVED:
    case SCRIPT_CANCEL_CANCELLING:
        return "OK";
    case SCRIPT_CANCEL_CANCELLED:
        return "ALREADY";
    case SCRIPT_CANCEL_FINISHED:
    case SCRIPT_CANCEL_UNKNOWN:
        return "NOT_FOUND";
    case SCRIPT_CANCEL_PROTOCOL:
        return "PROTOCOL";
    case SCRIPT_CANCEL_NO_WORD:
        break;
    }
    return NULL;
}

/* What a reply of kind's script says, as an answer: OK, ALREADY,
 * NOT_FOUND, PROTOCOL, MISSING, or NULL for a reply it should not give.
 * dead_replay.lua answers in words; dead_purge.lua 1 or 0. */
static const char *action_word(action_kind kind, const redisReply *r)
{
    if (kind == ACTION_CANCEL)
        return cancel_word(r);
    if (kind == ACTION_REPLAY &&
        (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)) {
        switch (script_dead_replay_word_of(r->str)) {
        case SCRIPT_DEAD_REPLAY_OK:
            return "OK";
        case SCRIPT_DEAD_REPLAY_NOT_FOUND:
            return "NOT_FOUND";
        case SCRIPT_DEAD_REPLAY_MISSING:
            return "MISSING";
        case SCRIPT_DEAD_REPLAY_NO_WORD:
            break;
        }
        return NULL;
    }
    if (kind == ACTION_PURGE && r->type == REDIS_REPLY_INTEGER)
        return r->integer == 1 ? "OK" : "NOT_FOUND"; /* dead_purge.lua */
    return NULL;
}

/* ---- the request ---- */

/* "host[:port]" of an Origin or Referer URL ("scheme://host[:port]/..."),
 * into out; false if it has none. */
static bool url_authority(const char *url, char *out, size_t len)
{
    const char *start = strstr(url, "://");
    size_t n;

    if (!start)
        return false;
    start += 3;
    n = strcspn(start, "/?#");
    if (n == 0 || n >= len)
        return false;
    memcpy(out, start, n);
    out[n] = '\0';
    return true;
}

/* Equal, in time that does not depend on where they differ. */
static bool same_secret(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char diff = la != lb;

    for (size_t i = 0; i < la; i++)
        diff |= (unsigned char)(a[i] ^ b[i % (lb ? lb : 1)]);
    return diff == 0;
}

bool console_action_allowed(console *c, http_reply *reply)
{
    const char *host = http_header("Host");
    const char *origin = http_header("Origin");
    const char *referer = http_header("Referer");
    const char *auth = http_header("Authorization");
    char from[300], token[256];

    if (!c->v.cfg->console_actions || !c->v.cfg->console_token) {
        console_reply_error(reply, 403,
                            "actions are off: the manifest needs "
                            "[console] actions = yes and a token");
        return false;
    }
    /* A browser names the page a request comes from; another site's page
     * must not act with this console's authority. Clients that are not
     * browsers send neither header and are held to the token alone. */
    if ((origin && strcmp(origin, "null") == 0) ||
        ((origin || referer) &&
         (!url_authority(origin ? origin : referer, from, sizeof(from)) ||
          !host || strcasecmp(from, host) != 0))) {
        console_reply_error(reply, 403,
                            "cross-origin request refused: Origin %s is "
                            "not this console (Host %s)",
                            origin    ? origin
                            : referer ? referer
                                      : "?",
                            host ? host : "?");
        return false;
    }
    /* The header, else a form's field "token" (never the query: a URL
     * ends up in logs and histories). */
    if (auth && strncasecmp(auth, "Bearer ", 7) == 0)
        snprintf(token, sizeof(token), "%s", auth + 7);
    else if (!http_form("token", token, sizeof(token)))
        token[0] = '\0';
    if (!token[0] || !same_secret(token, c->v.cfg->console_token)) {
        console_reply_error(reply, 403,
                            "a valid token is needed: header Authorization: "
                            "Bearer <[console] token>, or form field token");
        return false;
    }
    return true;
}

/* A plain HTML form posts its fields: they count as the query's. */
const char *console_action_arg(const char *name, char *buf, size_t len)
{
    const char *v = http_query(name);

    if (v)
        return v;
    return http_form(name, buf, len) ? buf : NULL;
}

/* POST /api/pause or /api/resume of type (checked): `for` (a duration,
 * optional) ends the pause by itself. Answers {"done", "type", "was"
 * (PAUSED, EXTENDED, RESUMED or RUNNING: pause.lua's word),
 * "paused_since" (ms), "left_ms" (-1: until resumed)}. */
static void pause_action(console *c, action_kind kind, const char *type,
                         http_reply *reply)
{
    char for_buf[64];
    const char *for_text = console_action_arg("for", for_buf, sizeof(for_buf));
    int64_t for_ms = 0;
    redisReply *r;
    json_out b = {0};

    if (kind == ACTION_PAUSE && for_text &&
        (config_parse_duration(for_text, &for_ms) != 0 || for_ms <= 0 ||
         for_ms > CONFIG_PAUSE_FOR_MAX_MS)) {
        console_reply_error(reply, 400,
                            "for: expected a duration from 1ms to 30d "
                            "(e.g. 10m), or none to pause until resumed");
        return;
    }
    if (!console_redis_for(c, reply))
        return;
    r = call_pause(c, type, kind == ACTION_PAUSE, for_ms);
    if (!r) {
        console_unavailable(reply, "2",
                            "redis: the action may not have gone through");
        return;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 4 ||
        r->element[0]->type != REDIS_REPLY_STRING ||
        r->element[1]->type != REDIS_REPLY_INTEGER ||
        r->element[2]->type != REDIS_REPLY_INTEGER ||
        r->element[3]->type != REDIS_REPLY_INTEGER ||
        script_pause_word_of(r->element[0]->str) == SCRIPT_PAUSE_NO_WORD) {
        console_reply_error(reply, 502, "redis: %s",
                            r->type == REDIS_REPLY_ERROR ? r->str
                                                         : "unexpected reply");
        freeReplyObject(r);
        return;
    }
    log_fields(WHARF_LOG_INFO, "console action",
               (log_field[]){
                   LOG_STR("action", kind == ACTION_PAUSE ? "pause" : "resume"),
                   LOG_STR("type", type), LOG_STR("was", r->element[0]->str)},
               3);
    json_out_printf(&b, "{\"done\":\"%s\",\"type\":",
                    kind == ACTION_PAUSE ? "pause" : "resume");
    json_out_str(&b, type);
    json_out_puts(&b, ",\"was\":");
    json_out_str(&b, r->element[0]->str);
    json_out_printf(&b, ",\"paused_since\":%lld,\"left_ms\":%lld}",
                    r->element[1]->integer, r->element[2]->integer);
    console_reply_json(reply, 200, &b);
    freeReplyObject(r);
}

/* POST /api/<what>, what being "replay", "purge", "cancel", "pause" or
 * "resume". */
void console_action(console *c, const char *what, http_reply *reply)
{
    char type_buf[128], id_buf[256];
    const char *type;
    const char *id = console_action_arg("id", id_buf, sizeof(id_buf));
    const char *word;
    action_kind kind = strcmp(what, "replay") == 0   ? ACTION_REPLAY
                       : strcmp(what, "purge") == 0  ? ACTION_PURGE
                       : strcmp(what, "pause") == 0  ? ACTION_PAUSE
                       : strcmp(what, "resume") == 0 ? ACTION_RESUME
                                                     : ACTION_CANCEL;
    redisReply *r;
    json_out b = {0};

    if (!console_action_allowed(c, reply))
        return;
    type = console_type_arg(
        reply, console_action_arg("type", type_buf, sizeof(type_buf)), true);
    if (!*type)
        return;
    if (kind == ACTION_PAUSE || kind == ACTION_RESUME) {
        pause_action(c, kind, type, reply);
        return;
    }
    if (!id || !config_valid_task_id(id, strlen(id))) {
        console_reply_error(reply, 400,
                            "id: expected 1-200 printable bytes without "
                            "spaces");
        return;
    }
    if (!console_redis_for(c, reply))
        return;
    r = kind == ACTION_REPLAY  ? call_dead_replay(c, type, id)
        : kind == ACTION_PURGE ? call_dead_purge(c, type, id)
                               : call_cancel(c, type, id);
    if (!r) {
        console_unavailable(reply, "2",
                            "redis: the action may not have gone through");
        return;
    }
    word = action_word(kind, r);
    if (!word) {
        console_reply_error(reply, 502, "redis: %s",
                            r->type == REDIS_REPLY_ERROR ? r->str
                                                         : "unexpected reply");
    } else if (strcmp(word, "OK") == 0 || strcmp(word, "ALREADY") == 0) {
        bool already = strcmp(word, "ALREADY") == 0;
        if (!already) /* nothing was done for one cancelled before */
            log_fields(WHARF_LOG_INFO, "console action",
                       (log_field[]){LOG_STR("action", what),
                                     LOG_STR("type", type),
                                     LOG_STR("task", id)},
                       3);
        json_out_printf(&b, "{\"done\":\"%s\",\"type\":", what);
        json_out_str(&b, type);
        json_out_puts(&b, ",\"id\":");
        json_out_str(&b, id);
        if (already)
            json_out_puts(&b, ",\"already_cancelled\":true");
        json_out_puts(&b, "}");
        console_reply_json(reply, 200, &b);
    } else if (strcmp(word, "PROTOCOL") == 0) {
        console_reply_error(
            reply, 409,
            "the hosts serving '%s' speak wharf protocol %.40s; this "
            "host speaks " CLIENT_PROTOCOLS ": nothing done",
            type,
            r->type == REDIS_REPLY_ARRAY && r->elements > 1 &&
                    r->element[1]->type == REDIS_REPLY_STRING
                ? r->element[1]->str
                : "unknown");
    } else if (strcmp(word, "MISSING") == 0) {
        console_reply_error(reply, 410,
                            "dead task '%s' had no envelope: dropped it "
                            "from the dead set",
                            id);
    } else {
        console_reply_error(reply, 404, "no %s task '%s' of type '%s'",
                            kind == ACTION_CANCEL ? "queued, delayed or running"
                                                  : "dead",
                            id, type);
    }
    freeReplyObject(r);
}
