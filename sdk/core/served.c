/* Which types some host serves (its policy is published), for the one
 * line every client says about a task of a type nobody serves; see
 * served.h. */
#include "served.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"

static int by_text(const void *a, const void *b)
{
    const redisReply *x = *(const redisReply *const *)a;
    const redisReply *y = *(const redisReply *const *)b;

    return strcmp(x->str, y->str);
}

void served_message(pipeline *p, bool connected, const char *prefix,
                    const char *type, char *buf, size_t len)
{
    char key[KEY_MAX], list[1024] = "";
    redisReply *types = NULL;
    size_t used = 0, n = 0;

    key_global(key, sizeof(key), prefix, "types");
    if (connected)
        types = pipeline_command(p, key, "SMEMBERS %s", key);
    /* An empty set's reply has no element array: qsort may not see NULL. */
    if (types && types->type == REDIS_REPLY_ARRAY && types->elements > 0) {
        n = types->elements;
        qsort(types->element, n, sizeof(*types->element), by_text);
    }
    pipeline_reset(p);
    for (size_t i = 0; i < n; i++) {
        key_of_type(key, sizeof(key), prefix, types->element[i]->str,
                    "policy");
        pipeline_addf(p, key, "EXISTS %s", key);
    }
    if (n > 0 && pipeline_run(p) != 0)
        n = 0;
    for (size_t i = 0; i < n; i++) {
        const redisReply *r = pipeline_reply(p, i);
        if (r->type == REDIS_REPLY_INTEGER && r->integer == 1 &&
            used + types->element[i]->len + 3 < sizeof(list))
            used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s",
                                     used ? ", " : "", types->element[i]->str);
    }
    pipeline_reset(p);
    freeReplyObject(types);
    if (used)
        snprintf(buf, len, "no host serves '%s'; served types: %s", type, list);
    else
        snprintf(buf, len, "no host serves '%s'; no host serves any type yet",
                 type);
}
