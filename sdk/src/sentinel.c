/* Finding the master through Redis Sentinel; see sentinel.h. */
#include "sentinel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

int sentinel_master(const redis_url *url, int timeout_ms, char *host,
                    size_t hostlen, int *port, char *err, size_t errlen)
{
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    size_t answered = 0, unknown = 0;

    snprintf(err, errlen, "no sentinel given");
    for (size_t i = 0; i < url->n_seeds; i++) {
        const redis_seed *s = &url->seeds[i];
        redisContext *c = redisConnectWithTimeout(s->host, s->port, tv);
        redisReply *r = NULL;

        if (!c || c->err) {
            snprintf(err, errlen, "sentinel %s:%d: %s", s->host, s->port,
                     c ? c->errstr : "out of memory");
            redisFree(c);
            continue;
        }
        redisSetTimeout(c, tv);
        redis_url_close_on_exec(c); /* as every connection of ours */
        r = redisCommand(c, "SENTINEL get-master-addr-by-name %s", url->master);
        if (!r) {
            snprintf(err, errlen, "sentinel %s:%d: %s", s->host, s->port,
                     c->errstr);
        } else if (r->type == REDIS_REPLY_ERROR) {
            /* A plain Redis says "unknown command": a wrong port. */
            snprintf(err, errlen, "sentinel %s:%d: %s (is it a sentinel?)",
                     s->host, s->port, r->str);
        } else if (r->type == REDIS_REPLY_NIL) {
            answered++;
            unknown++;
        } else if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
                   r->element[0]->type == REDIS_REPLY_STRING &&
                   r->element[1]->type == REDIS_REPLY_STRING &&
                   r->element[0]->len < hostlen) {
            int p = atoi(r->element[1]->str);
            answered++;
            if (p > 0 && p <= 65535) {
                memcpy(host, r->element[0]->str, r->element[0]->len + 1);
                *port = p;
                freeReplyObject(r);
                redisFree(c);
                return 0;
            }
        } else {
            snprintf(err, errlen, "sentinel %s:%d: unexpected reply", s->host,
                     s->port);
        }
        freeReplyObject(r);
        redisFree(c);
    }
    if (answered > 0 && unknown == answered) {
        snprintf(err, errlen,
                 "no sentinel of %zu that answered knows a master named "
                 "'%s' (see SENTINEL MASTERS)",
                 answered, url->master);
        return -2;
    }
    return -1;
}
