/* Cancel requests for running tasks; see cancel_check.h. */
#include "cancel_check.h"

#include <stdio.h>
#include <string.h>

#include "keys.h"

int cancel_check(broker *b, const char *const *types, const char *const *ids,
                 const char *const *entry_ids, size_t n, bool *cancelled)
{
    char key[KEY_MAX];
    bool answer[n ? n : 1];

    if (!b->redis)
        return -1;
    for (size_t i = 0; i < n; i++) {
        key_of_task(key, sizeof(key), b->cfg->prefix, types[i], "cancel",
                    ids[i]);
        if (redisAppendCommand(b->redis, "GET %s", key) != REDIS_OK)
            return -1;
    }
    if (n > 0)
        b->round_trips++;
    for (size_t i = 0; i < n; i++) {
        redisReply *r = NULL;
        if (redisGetReply(b->redis, (void **)&r) != REDIS_OK) {
            snprintf(b->errstr, sizeof(b->errstr), "cancel check: %s",
                     b->redis->errstr);
            b->redis_errors++;
            return -1;
        }
        /* An error reply (a key of another type) is no request. */
        answer[i] =
            r->type == REDIS_REPLY_STRING && strcmp(r->str, entry_ids[i]) == 0;
        freeReplyObject(r);
    }
    memcpy(cancelled, answer, n * sizeof(*cancelled));
    return 0;
}
