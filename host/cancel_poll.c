/* Cancel requests for running tasks; see cancel_poll.h. */
#include "cancel_poll.h"

#include <stdio.h>
#include <string.h>

#include "keys.h"

int cancel_poll(broker *b, const char *const *types, const char *const *ids,
                const char *const *entry_ids, size_t n, bool *cancelled)
{
    char key[KEY_MAX];
    bool answer[n ? n : 1];

    if (!broker_connected(b))
        return -1;
    pipeline_reset(&b->pipe);
    for (size_t i = 0; i < n; i++) {
        key_of_task(key, sizeof(key), b->cfg->prefix, types[i], "cancel",
                    ids[i]);
        if (pipeline_addf(&b->pipe, key, "GET %s", key) != 0)
            return -1;
    }
    if (n > 0 && pipeline_run(&b->pipe) != 0) {
        snprintf(b->errstr, sizeof(b->errstr), "cancel check: %s",
                 b->pipe.errstr);
        b->redis_errors++;
        pipeline_reset(&b->pipe);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const redisReply *r = pipeline_reply(&b->pipe, i);
        /* An error reply (a key of another type) is no request. */
        answer[i] =
            r->type == REDIS_REPLY_STRING && strcmp(r->str, entry_ids[i]) == 0;
    }
    pipeline_reset(&b->pipe);
    memcpy(cancelled, answer, n * sizeof(*cancelled));
    return 0;
}
