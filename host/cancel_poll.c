/* Cancel requests for running tasks; see cancel_poll.h. */
#include "cancel_poll.h"

#include <stdio.h>
#include <string.h>

#include "keys.h"

/* Adds one MGET of the cancel keys of the tasks of types[first]'s type
 * from first on that no group has yet (group[i] < 0), marking them
 * group g. Their keys share the type's hash tag, so one node has them
 * all. 0 or -1. */
static int add_group(broker *b, command *cmd, const char *const *types,
                     const char *const *ids, size_t n, size_t first, int g,
                     int *group)
{
    char key[KEY_MAX];

    command_reset(cmd);
    command_push_str(cmd, "MGET");
    for (size_t i = first; i < n; i++) {
        if (group[i] >= 0 || strcmp(types[i], types[first]) != 0)
            continue;
        group[i] = g;
        key_of_task(key, sizeof(key), b->cfg->prefix, types[i], "cancel",
                    ids[i]);
        command_push_key_copy(cmd, key, strlen(key));
    }
    return pipeline_add_command(&b->pipe, -1, cmd, NULL);
}

int cancel_poll(broker *b, const char *const *types, const char *const *ids,
                const char *const *entry_ids, size_t n, bool *cancelled)
{
    bool answer[n ? n : 1];
    int group[n ? n : 1];
    size_t at[n ? n : 1]; /* each task's place in its group's reply */
    size_t n_groups = 0;
    command cmd;
    int rc = 0;

    if (!broker_connected(b))
        return -1;
    for (size_t i = 0; i < n; i++)
        group[i] = -1;
    command_init(&cmd);
    pipeline_reset(&b->pipe);
    for (size_t i = 0; i < n && rc == 0; i++)
        if (group[i] < 0)
            rc = add_group(b, &cmd, types, ids, n, i, (int)n_groups++, group);
    command_free(&cmd);
    if (rc == 0 && n > 0 && pipeline_run(&b->pipe) != 0)
        rc = -1;
    if (rc != 0) {
        snprintf(b->errstr, sizeof(b->errstr), "cancel check: %s",
                 b->pipe.errstr);
        b->redis_errors++;
        pipeline_reset(&b->pipe);
        return -1;
    }
    for (size_t g = 0; g < n_groups; g++) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (group[i] == (int)g)
                at[i] = k++;
    }
    for (size_t i = 0; i < n; i++) {
        const redisReply *r = pipeline_reply(&b->pipe, (size_t)group[i]);
        const redisReply *v = r && r->type == REDIS_REPLY_ARRAY &&
                                      at[i] < r->elements
                                  ? r->element[at[i]]
                                  : NULL;
        /* An error reply (a key of another type) is no request. */
        answer[i] = v && v->type == REDIS_REPLY_STRING &&
                    strcmp(v->str, entry_ids[i]) == 0;
    }
    pipeline_reset(&b->pipe);
    memcpy(cancelled, answer, n * sizeof(*cancelled));
    return 0;
}
