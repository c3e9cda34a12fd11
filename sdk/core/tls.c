/* TLS for Redis connections over hiredis's reader and formatter; see
 * tls.h. */
#include "tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <hiredis/read.h>
#include <hiredis/sds.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

/* What a TLS context carries beside hiredis's state, in
 * c->reader->privdata. */
typedef struct tls_link {
    SSL *ssl;
    bool failed;     /* the last failure was TLS's own */
    bool cert_asked; /* the server asked for a client certificate and we
                        had none to give */
} tls_link;

/* hiredis reads 16 KiB at a time; a TLS record holds at most 16 KiB. */
#define TLS_READ_CHUNK (16 * 1024)

/* True if a failed SSL call (rc) on ssl was cut by a signal and is to be
 * made again, as hiredis makes a read or write again after EINTR.
 * saved_errno is errno right after the call. */
static bool interrupted(SSL *ssl, int rc, int saved_errno)
{
    int kind = SSL_get_error(ssl, rc);

    return saved_errno == EINTR &&
           (kind == SSL_ERROR_WANT_READ || kind == SSL_ERROR_WANT_WRITE);
}

static tls_link *link_of(const redisContext *c)
{
    return c && c->reader ? c->reader->privdata : NULL;
}

bool tls_on(const redisContext *c)
{
    return link_of(c) != NULL;
}

bool tls_failed(const redisContext *c)
{
    const tls_link *l = link_of(c);

    return l && l->failed;
}

static bool is_address(const char *host)
{
    unsigned char buf[sizeof(struct in6_addr)];

    return inet_pton(AF_INET, host, buf) == 1 ||
           inet_pton(AF_INET6, host, buf) == 1;
}

/* The first reason OpenSSL queued, emptied, into buf ("" if none). */
static void take_openssl_error(char *buf, size_t len)
{
    unsigned long e = ERR_get_error();
    const char *reason = e ? ERR_reason_error_string(e) : NULL;

    snprintf(buf, len, "%s", reason ? reason : "");
    ERR_clear_error();
}

/* Called by OpenSSL when the server asks for a client certificate and
 * none is set: noted, and none sent. A server that requires one
 * (tls-auth-clients yes) then sends an alert and closes, and the alert
 * may be lost to a reset when our first command crosses it; the note
 * says why all the same. */
static int note_cert_asked(SSL *ssl, X509 **cert, EVP_PKEY **key)
{
    tls_link *l = SSL_get_app_data(ssl);

    (void)cert;
    (void)key;
    if (l)
        l->cert_asked = true;
    return 0;
}

/* The SSL_CTX for o: verification, the CA, the client certificate. NULL
 * with why in err. A context per connection: connections are few and
 * long-lived, and a context made before a fork is never shared. */
static SSL_CTX *make_context(const tls_options *o, char *err, size_t errlen)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    char why[256];
    struct stat st;
    int ok;

    if (!ctx) {
        snprintf(err, errlen, "TLS: cannot make a context");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    /* SSL_write's buffer is hiredis's obuf, which may move between a
     * write that timed out and the one that goes on. */
    SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (!o->no_verify) {
        if (!o->ca[0])
            ok = SSL_CTX_set_default_verify_paths(ctx);
        else if (stat(o->ca, &st) != 0) {
            snprintf(err, errlen, "tls_ca '%s': %s", o->ca, strerror(errno));
            goto fail;
        } else if (S_ISDIR(st.st_mode))
            ok = SSL_CTX_load_verify_locations(ctx, NULL, o->ca);
        else
            ok = SSL_CTX_load_verify_locations(ctx, o->ca, NULL);
        if (ok != 1) {
            take_openssl_error(why, sizeof(why));
            snprintf(err, errlen, "tls_ca '%s': cannot load it: %s",
                     o->ca[0] ? o->ca : "(the system's)", why);
            goto fail;
        }
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    }
    SSL_CTX_set_client_cert_cb(ctx, note_cert_asked);
    if (o->cert[0]) {
        const char *key = o->key[0] ? o->key : o->cert;

        if (SSL_CTX_use_certificate_chain_file(ctx, o->cert) != 1) {
            take_openssl_error(why, sizeof(why));
            snprintf(err, errlen, "tls_cert '%s': cannot load it: %s", o->cert,
                     why);
            goto fail;
        }
        if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 ||
            SSL_CTX_check_private_key(ctx) != 1) {
            take_openssl_error(why, sizeof(why));
            /* Never the key's content: only its path and OpenSSL's word. */
            snprintf(err, errlen, "tls_key '%s': cannot use it: %s", key, why);
            goto fail;
        }
    }
    return ctx;
fail:
    ERR_clear_error();
    SSL_CTX_free(ctx);
    return NULL;
}

/* Why a handshake failed, as one line: the certificate check's own words,
 * a timeout, the peer gone, or OpenSSL's reason, with what each usually
 * means. */
static void explain_handshake(SSL *ssl, int rc, int saved_errno, char *err,
                              size_t errlen)
{
    long verify = SSL_get_verify_result(ssl);
    int kind = SSL_get_error(ssl, rc);
    char why[256];

    take_openssl_error(why, sizeof(why));
    if (verify != X509_V_OK) {
        snprintf(err, errlen, "TLS: certificate verify failed: %s",
                 X509_verify_cert_error_string(verify));
    } else if (kind == SSL_ERROR_WANT_READ || kind == SSL_ERROR_WANT_WRITE) {
        /* A plain Redis reads the ClientHello as the start of a command
         * and waits for its end: the handshake times out. */
        snprintf(err, errlen,
                 "TLS: no handshake answer within the timeout (is this port "
                 "plain Redis? use redis://)");
    } else if (kind == SSL_ERROR_SYSCALL && !why[0]) {
        snprintf(err, errlen,
                 "TLS: the server closed the connection during "
                 "the handshake%s%s",
                 saved_errno ? ": " : "",
                 saved_errno ? strerror(saved_errno) : "");
    } else if (strstr(why, "wrong version number") ||
               strstr(why, "packet length too long") ||
               strstr(why, "record layer failure")) {
        snprintf(err, errlen,
                 "TLS: handshake failed: %s (is this port plain Redis? use "
                 "redis://)",
                 why);
    } else {
        snprintf(err, errlen, "TLS: handshake failed: %s",
                 why[0] ? why : "unknown reason");
    }
}

int tls_start(redisContext *c, const tls_options *o, const char *host,
              char *err, size_t errlen)
{
    const char *name = o->sni[0] ? o->sni : host;
    SSL_CTX *ctx;
    tls_link *l;
    SSL *ssl;
    int rc;

    ERR_clear_error();
    ctx = make_context(o, err, errlen);
    if (!ctx)
        return -1;
    ssl = SSL_new(ctx);
    SSL_CTX_free(ctx); /* the session holds its own reference */
    l = calloc(1, sizeof(*l));
    if (!ssl || !l || SSL_set_fd(ssl, c->fd) != 1) {
        snprintf(err, errlen, "TLS: out of memory");
        goto fail;
    }
    SSL_set_app_data(ssl, l);
    /* SNI carries names only; an address is checked as one. */
    if (!is_address(name) && SSL_set_tlsext_host_name(ssl, name) != 1) {
        snprintf(err, errlen, "TLS: bad server name '%s'", name);
        goto fail;
    }
    if (!o->no_verify) {
        int set = is_address(name)
                      ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name)
                      : SSL_set1_host(ssl, name);
        if (set != 1) {
            snprintf(err, errlen, "TLS: cannot check the name '%s'", name);
            goto fail;
        }
    }
    do {
        ERR_clear_error();
        errno = 0;
        rc = SSL_connect(ssl);
    } while (rc != 1 && interrupted(ssl, rc, errno));
    if (rc != 1) {
        explain_handshake(ssl, rc, errno, err, errlen);
        goto fail;
    }
    l->ssl = ssl;
    c->reader->privdata = l;
    return 0;
fail:
    ERR_clear_error();
    SSL_free(ssl);
    free(l);
    return -1;
}

/* Records a failed SSL_read or SSL_write (rc) on c as hiredis would
 * record a failed read or write, keeping errno for the caller. */
static void io_failed(redisContext *c, tls_link *l, int rc)
{
    int saved = errno;
    int kind = SSL_get_error(l->ssl, rc);
    char why[200];

    take_openssl_error(why, sizeof(why));
    l->failed = false;
    if (l->cert_asked && kind != SSL_ERROR_WANT_READ &&
        kind != SSL_ERROR_WANT_WRITE) {
        l->failed = true;
        c->err = REDIS_ERR_OTHER;
        snprintf(c->errstr, sizeof(c->errstr),
                 "TLS: the server wants a client certificate and none was "
                 "given (tls_cert, tls_key): %.40s",
                 why[0]                          ? why
                 : kind == SSL_ERROR_ZERO_RETURN ? "closed"
                 : saved                         ? strerror(saved)
                                                 : "closed");
    } else if (kind == SSL_ERROR_WANT_READ || kind == SSL_ERROR_WANT_WRITE) {
        /* The socket's timeout ran out (SO_RCVTIMEO / SO_SNDTIMEO). */
        c->err = REDIS_ERR_IO;
        saved = EAGAIN;
        snprintf(c->errstr, sizeof(c->errstr), "%s", strerror(EAGAIN));
    } else if (kind == SSL_ERROR_ZERO_RETURN ||
               (kind == SSL_ERROR_SYSCALL && saved == 0 && !why[0])) {
        c->err = REDIS_ERR_EOF;
        snprintf(c->errstr, sizeof(c->errstr), "Server closed the connection");
    } else if (kind == SSL_ERROR_SYSCALL && !why[0]) {
        c->err = REDIS_ERR_IO;
        snprintf(c->errstr, sizeof(c->errstr), "%s", strerror(saved));
    } else {
        /* An alert (a client certificate refused: "tlsv13 alert
         * certificate required") or a record that does not decrypt. */
        l->failed = true;
        c->err = REDIS_ERR_OTHER;
        snprintf(c->errstr, sizeof(c->errstr), "TLS: %.120s",
                 why[0] ? why : "protocol error");
    }
    errno = saved;
}

int tls_write(redisContext *c, int *done)
{
    tls_link *l = link_of(c);
    size_t len;
    int rc;

    if (!l)
        return redisBufferWrite(c, done);
    if (c->err)
        return REDIS_ERR;
    len = sdslen(c->obuf);
    if (len > 0) {
        /* Blocking socket, no partial writes: all of it or a failure. */
        do {
            ERR_clear_error();
            errno = 0;
            rc = SSL_write(l->ssl, c->obuf,
                           len > INT32_MAX ? INT32_MAX : (int)len);
        } while (rc <= 0 && interrupted(l->ssl, rc, errno));
        if (rc <= 0) {
            io_failed(c, l, rc);
            return REDIS_ERR;
        }
        if ((size_t)rc == len) {
            sdsfree(c->obuf);
            c->obuf = sdsempty();
            if (!c->obuf) {
                c->err = REDIS_ERR_OOM;
                snprintf(c->errstr, sizeof(c->errstr), "Out of memory");
                return REDIS_ERR;
            }
        } else {
            sdsrange(c->obuf, rc, -1);
        }
    }
    if (done)
        *done = sdslen(c->obuf) == 0;
    return REDIS_OK;
}

int tls_read(redisContext *c)
{
    tls_link *l = link_of(c);
    char buf[TLS_READ_CHUNK];
    int rc;

    if (!l)
        return redisBufferRead(c);
    if (c->err)
        return REDIS_ERR;
    do {
        ERR_clear_error();
        errno = 0;
        rc = SSL_read(l->ssl, buf, sizeof(buf));
    } while (rc <= 0 && interrupted(l->ssl, rc, errno));
    if (rc <= 0) {
        io_failed(c, l, rc);
        return REDIS_ERR;
    }
    if (redisReaderFeed(c->reader, buf, (size_t)rc) != REDIS_OK) {
        c->err = c->reader->err;
        snprintf(c->errstr, sizeof(c->errstr), "%s", c->reader->errstr);
        return REDIS_ERR;
    }
    return REDIS_OK;
}

int tls_get_reply(redisContext *c, void **reply)
{
    void *aux = NULL;
    int done = 0;

    if (!tls_on(c))
        return redisGetReply(c, reply);
    /* hiredis's redisGetReply for a blocking context, over TLS. */
    if (redisGetReplyFromReader(c, &aux) != REDIS_OK)
        return REDIS_ERR;
    if (!aux && (c->flags & REDIS_BLOCK)) {
        while (!done)
            if (tls_write(c, &done) != REDIS_OK)
                return REDIS_ERR;
        do {
            if (tls_read(c) != REDIS_OK ||
                redisGetReplyFromReader(c, &aux) != REDIS_OK)
                return REDIS_ERR;
        } while (!aux);
    }
    if (reply)
        *reply = aux;
    else
        freeReplyObject(aux);
    return REDIS_OK;
}

void *tls_vcommand(redisContext *c, const char *format, va_list ap)
{
    void *reply = NULL;

    if (!tls_on(c))
        return redisvCommand(c, format, ap);
    if (redisvAppendCommand(c, format, ap) != REDIS_OK ||
        tls_get_reply(c, &reply) != REDIS_OK)
        return NULL;
    return reply;
}

void *tls_command(redisContext *c, const char *format, ...)
{
    void *reply;
    va_list ap;

    va_start(ap, format);
    reply = tls_vcommand(c, format, ap);
    va_end(ap);
    return reply;
}

void *tls_command_argv(redisContext *c, int argc, const char **argv,
                       const size_t *argvlen)
{
    void *reply = NULL;

    if (!tls_on(c))
        return redisCommandArgv(c, argc, argv, argvlen);
    if (redisAppendCommandArgv(c, argc, argv, argvlen) != REDIS_OK ||
        tls_get_reply(c, &reply) != REDIS_OK)
        return NULL;
    return reply;
}

bool tls_pending(const redisContext *c)
{
    const tls_link *l = link_of(c);

    if (!c || !c->reader)
        return false;
    if (c->reader->len > c->reader->pos)
        return true;
    return l && SSL_pending(l->ssl) > 0;
}

void tls_free(redisContext *c)
{
    tls_link *l = link_of(c);

    if (!c)
        return;
    if (l) {
        /* No close_notify: Redis takes the socket's close as the end, and
         * a write to a peer already gone would raise SIGPIPE in a program
         * that did not ignore it (the client library's callers). */
        SSL_free(l->ssl);
        ERR_clear_error();
        free(l);
        c->reader->privdata = NULL;
    }
    redisFree(c);
}

void tls_thread_idle(void)
{
    OPENSSL_thread_stop();
}
