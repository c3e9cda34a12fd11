/* GET /api/group (console_groups.h): a group's counts from its hash and
 * its done-set (docs/protocol.md, "Workflows"), two reads in one
 * pipelined round trip. */
#include "console_groups.h"

#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "console_redis.h"
#include "console_reply.h"
#include "json_out.h"
#include "keys.h"
#include "xmalloc.h"

/* The value of field name in an HGETALL reply, or NULL. */
static const char *console_group_field(const redisReply *r, const char *name)
{
    for (size_t i = 0; i + 1 < r->elements; i += 2)
        if (r->element[i]->type == REDIS_REPLY_STRING &&
            strcmp(r->element[i]->str, name) == 0)
            return r->element[i + 1]->str;
    return NULL;
}

void console_group(console *c, http_reply *reply)
{
    const char *group = console_type_arg(reply, http_query("group"), true);
    char key[KEY_MAX], done[KEY_MAX];
    const char *n_text, *type;
    long long n, ok = 0, dead = 0;
    redisReply *r[2] = {NULL, NULL};
    pipeline *redis;
    json_out b = {0};

    if (!group || !*group)
        return;
    if (!(redis = console_redis_for(c, reply)))
        return;
    key_of_type(key, sizeof(key), console_prefix(c), group, "group");
    key_of_type(done, sizeof(done), console_prefix(c), group, "group_done");
    if (pipeline_addf(redis, key, "HGETALL %s", key) != 0 ||
        pipeline_addf(redis, done, "HGETALL %s", done) != 0)
        xmalloc_oom();
    if (console_read_replies(c, r, 2) != 0) {
        console_unavailable(reply, "2", "redis: the group could not be read");
        return;
    }
    if (r[0]->type != REDIS_REPLY_ARRAY || r[1]->type != REDIS_REPLY_ARRAY) {
        console_reply_error(reply, 502, "redis: unexpected reply to HGETALL");
        goto out;
    }
    n_text = console_group_field(r[0], "n");
    if (!n_text) {
        console_reply_error(reply, 404, "no group '%s'", group);
        goto out;
    }
    n = atoll(n_text);
    for (size_t i = 0; i + 1 < r[1]->elements; i += 2) {
        if (strcmp(r[1]->element[i + 1]->str, "o") == 0)
            ok++;
        else
            dead++;
    }
    type = console_group_field(r[0], "type");
    json_out_puts(&b, "{\"api\":1,\"group\":");
    json_out_str(&b, group);
    json_out_printf(&b,
                    ",\"n\":%lld,\"ok\":%lld,\"dead\":%lld,\"pending\":%lld", n,
                    ok, dead, n - ok - dead);
    json_out_puts(&b, ",\"callback_type\":");
    json_out_str(&b, type ? type : "");
    json_out_puts(&b, ",\"callback\":");
    json_out_str(&b, console_group_field(r[0], "cancelled")  ? "cancelled"
                     : console_group_field(r[0], "enqueued") ? "enqueued"
                     : console_group_field(r[0], "fired")    ? "due"
                                                             : "waiting");
    json_out_puts(&b, "}");
    console_reply_json(reply, 200, &b);
out:
    console_free_replies(r, 2);
}
