/* How the broker records a failed Redis call (broker_failed, broker.h):
 * the broker's lowest layer, which broker.c and claim.c (the claims)
 * both build on, so neither needs the other for it. */
#include <stdio.h>

#include "broker.h"

void broker_failed(broker *b, const char *what, const redisReply *r)
{
    char where[400];

    b->redis_errors++;
    redis_url_describe(&b->url, where, sizeof(where));
    if (!r)
        snprintf(b->errstr, sizeof(b->errstr), "%s: %s: %s", where, what,
                 b->pipe.errstr[0] ? b->pipe.errstr : "not connected");
    else if (r->type == REDIS_REPLY_ERROR)
        snprintf(b->errstr, sizeof(b->errstr), "%s: %s: %s", where, what,
                 r->str);
    else
        snprintf(b->errstr, sizeof(b->errstr), "%s: %s: unexpected reply",
                 where, what);
}
