/* TLS for Redis connections (rediss://). hiredis 0.14, the fixed
 * dependency, has no TLS of its own, so wharf keeps hiredis's reply
 * reader and command formatter and moves the bytes itself: a context's
 * socket is connected by hiredis, then an OpenSSL session is started over
 * it (tls_start), and every read and write of that context goes through
 * SSL_read / SSL_write here. Commands are formatted into c->obuf and
 * replies parsed from c->reader exactly as hiredis does, so the pipeline,
 * the scripts and every caller above see the same redisContext and the
 * same replies on a plain and a TLS connection.
 *
 * Why not the alternatives: hiredis 1.x has TLS but is not Debian 12's;
 * a relay thread or a stunnel-like process per connection would add a
 * thread or a process to every worker, an extra copy of every byte, and
 * hide the TLS error behind "connection lost".
 *
 * So every call that does I/O on a context the core made goes through
 * this module: tls_write for redisBufferWrite, tls_read for
 * redisBufferRead, tls_get_reply for redisGetReply, tls_command and
 * tls_command_argv for redisCommand(Argv), tls_free for redisFree. On a
 * plain context each is hiredis's own call. The session lives in
 * c->reader->privdata, which hiredis 0.14's reader carries but never
 * reads (its default reply functions ignore it). */
#ifndef WHARF_TLS_H
#define WHARF_TLS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include <hiredis/hiredis.h>

#include "endpoint.h"

/* The longest path of a CA, certificate or key. */
#define TLS_PATH_MAX 256

/* How to speak TLS to a Redis: the rediss:// URL's query parameters, or
 * the [redis] tls_* keys. All zero: plain. */
typedef struct tls_options {
    bool enabled;                /* rediss:// */
    bool no_verify;              /* tls_verify = no: neither certificate
                                    nor name checked */
    char ca[TLS_PATH_MAX];       /* a file or a folder (c_rehash'd) of CA
                                    certificates; "": the system's */
    char cert[TLS_PATH_MAX];     /* a client certificate (PEM chain) */
    char key[TLS_PATH_MAX];      /* its key (PEM); "": in cert */
    char sni[ENDPOINT_HOST_MAX]; /* the name sent and checked; "": the
                                    host of the address */
} tls_options;

/* Starts a TLS session over c's connected socket to host (a name or an
 * address, as the URL gave it): the server's certificate checked against
 * o->ca and its name against o->sni or host, unless o->no_verify; a
 * client certificate sent if o->cert. Waits as long as c's socket timeout
 * allows. 0, or -1 with one line in err naming the cause ("certificate
 * verify failed: certificate has expired", "... (is this port plain
 * Redis?)"); c is then still to be freed by the caller with tls_free. */
int tls_start(redisContext *c, const tls_options *o, const char *host,
              char *err, size_t errlen);

/* True if c speaks TLS. */
bool tls_on(const redisContext *c);

/* True if the last failure on c was one of TLS itself (an alert from the
 * server, a record that does not decrypt), not a lost or timed-out
 * connection: a server refusing our certificate says so on the first
 * read after the handshake. */
bool tls_failed(const redisContext *c);

/* redisBufferWrite, redisBufferRead, redisGetReply: the same contracts,
 * over TLS when c speaks it. On failure c->err and c->errstr are set as
 * hiredis sets them, and errno is EAGAIN after a timeout, so
 * redis_url_io_error says "Redis did not answer in 5 s" for both. */
int tls_write(redisContext *c, int *done);
int tls_read(redisContext *c);
int tls_get_reply(redisContext *c, void **reply);

/* redisCommand, redisvCommand and redisCommandArgv (blocking contexts
 * only). */
void *tls_command(redisContext *c, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
void *tls_vcommand(redisContext *c, const char *format, va_list ap);
void *tls_command_argv(redisContext *c, int argc, const char **argv,
                       const size_t *argvlen);

/* Bytes of c that a poll on its socket would not see: decrypted and not
 * yet read, or read and not yet parsed. */
bool tls_pending(const redisContext *c);

/* redisFree, and the session's memory. Accepts NULL. */
void tls_free(redisContext *c);

/* Frees the calling thread's own OpenSSL state (its error queue and its
 * random generators, which a TLS call leaves behind), to be made again
 * when it next needs them. For a thread of a process that forks: the
 * child has no such thread, so what that state holds would be memory no
 * one can free there (and LeakSanitizer says so). */
void tls_thread_idle(void);

#endif /* WHARF_TLS_H */
