/* The inside of a wharf_client, shared by the client library's files and
 * by the wharf CLI, whose operator commands (stats, dead, locks) speak to
 * Redis directly on the client's connection. Not installed. */
#ifndef WHARF_CLIENT_INTERNAL_H
#define WHARF_CLIENT_INTERNAL_H

#include <stddef.h>

#include <hiredis/hiredis.h>
#include <openssl/evp.h>

#include <wharf/client.h>

#include "redis_url.h"
#include "script.h"

/* Connect and I/O timeout of a client's connection. */
#define CLIENT_TIMEOUT_MS 5000

struct wharf_client {
    redisContext *redis; /* NULL or broken: connected again on next use */
    redis_url url;
    char *password;  /* NULL: the URL's own; owned */
    char where[300]; /* the address without password, for messages */
    char prefix[WHARF_PREFIX_MAX + 1];
    script enqueue;     /* the enqueue script (client_enqueue.c) */
    int enqueue_loaded; /* it is loaded on this connection, so a
                           pipeline may use EVALSHA without NOSCRIPT */
    struct enqueue_buffers *enqueue_buffers; /* client_enqueue.c's, made
                                                on first use; owned */
    EVP_MD *sha256;     /* fetched once: task ids hash every payload */
    EVP_MD_CTX *digest; /* reused for every hash */
    wharf_client_status connect_status; /* why client_redis last failed:
                                           UNAVAILABLE or AUTH */
    char errstr[512];
};

/* Sets c->errstr (one line) from a printf-style format. */
void client_error(wharf_client *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The live connection of c, connecting again if it is missing or broken.
 * NULL with c->errstr and c->connect_status set when Redis cannot be
 * reached (UNAVAILABLE) or refuses our credentials (AUTH). The context
 * stays owned by c. */
redisContext *client_redis(wharf_client *c);

/* The status for reply, a reply of a command about `what` (for the
 * message): OK for any reply that is not an error; for NULL (the
 * connection failed) UNAVAILABLE, or ERROR when hiredis ran out of memory;
 * for an error reply FULL when Redis is at maxmemory (OOM: a script or
 * command refused at its first write wrote nothing), AUTH when it wants
 * credentials (NOAUTH, WRONGPASS), UNAVAILABLE when it is loading, busy or
 * refusing writes, else ERROR. Sets c->errstr to one line unless OK. Does
 * not free reply. */
wharf_client_status
client_reply_status(wharf_client *c, const redisReply *reply, const char *what);

/* Fills c->enqueue; called once by wharf_client_open. */
void client_enqueue_init(wharf_client *c);

/* Frees c->enqueue_buffers; called by wharf_client_close. */
void client_enqueue_free(wharf_client *c);

/* Sleeps ms milliseconds (restarting after signals). */
void client_sleep_ms(int64_t ms);

/* Milliseconds of a monotonic clock, for deadlines. */
int64_t client_monotonic_ms(void);

#endif /* WHARF_CLIENT_INTERNAL_H */
