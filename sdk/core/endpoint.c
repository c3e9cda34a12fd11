/* Endpoints, parsed and written; see endpoint.h. */
#include "endpoint.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NO_HOST "expected a host name or address"
#define NO_V6 "bad IPv6 address: expected [address]"
#define NO_PORT "bad port: expected 1..65535"

/* An IPv6 address, as inet_pton writes it. */
#define IPV6_BYTES 16

/* The longest port text read: digits and what strtol skips before them. */
#define PORT_TEXT_MAX 32

/* A host name (labels of 1-63 letters, digits, '_' or '-', joined by
 * '.', at most 253 in all) or a dotted IPv4 address (a name of digits and
 * dots alone must be one: 256.0.0.1 is neither). Checked whole here, so a
 * bad address is refused when it is read (wharfd --check), not when it is
 * first used. */
static bool valid_name(const char *host)
{
    unsigned char addr[IPV6_BYTES];
    size_t label = 0, n = strlen(host);
    bool numeric = true;

    if (n == 0 || n > 253)
        return false;
    for (const char *c = host; *c; c++) {
        if (*c == '.') {
            if (label == 0)
                return false;
            label = 0;
            continue;
        }
        if (!(isalnum((unsigned char)*c) || *c == '_' || *c == '-') ||
            ++label > 63)
            return false;
        if (!isdigit((unsigned char)*c))
            numeric = false;
    }
    return numeric ? inet_pton(AF_INET, host, addr) == 1 : true;
}

static bool valid_v6(const char *host)
{
    unsigned char addr[IPV6_BYTES];

    return inet_pton(AF_INET6, host, addr) == 1;
}

/* Copies text[0..n) into host; false if it does not fit. */
static bool copy_host(char *host, const char *text, size_t n)
{
    if (n >= ENDPOINT_HOST_MAX)
        return false;
    memcpy(host, text, n);
    host[n] = '\0';
    return true;
}

/* 1..65535, the whole of text[0..n) as strtol reads it, into *port. */
static bool read_port(const char *text, size_t n, int *port)
{
    char buf[PORT_TEXT_MAX];
    char *end;
    long v;

    if (n == 0 || n >= sizeof(buf))
        return false;
    memcpy(buf, text, n);
    buf[n] = '\0';
    errno = 0;
    v = strtol(buf, &end, 10);
    if (errno != 0 || *end != '\0' || v < 1 || v > 65535)
        return false;
    *port = (int)v;
    return true;
}

int endpoint_parse(const char *text, size_t n, unsigned flags, char *host,
                   int *port, char *err, size_t errlen)
{
    bool loose = (flags & ENDPOINT_LOOSE_HOST) != 0;
    const char *end = text + n, *port_text = NULL;

    if (n > 0 && text[0] == '[') { /* [::1]:6379 */
        const char *close = memchr(text, ']', n);
        if (!close) {
            snprintf(err, errlen, NO_V6);
            return -1;
        }
        if (!copy_host(host, text + 1, (size_t)(close - text - 1)) ||
            !valid_v6(host) || (close + 1 < end && close[1] != ':'))
            goto bad_host;
        if (close + 1 < end)
            port_text = close + 2;
    } else {
        const char *colon = NULL;
        for (const char *c = text; c < end; c++)
            if (*c == ':' && (!colon || loose)) {
                colon = c;
                if (!loose)
                    break;
            }
        if (!copy_host(host, text, colon ? (size_t)(colon - text) : n))
            goto bad_host;
        if (!loose && !valid_name(host))
            goto bad_host;
        if (colon)
            port_text = colon + 1;
    }
    if (!port_text && (flags & ENDPOINT_NEED_PORT)) {
        snprintf(err, errlen, "no port: expected host:port");
        return -1;
    }
    if (port_text && !read_port(port_text, (size_t)(end - port_text), port)) {
        snprintf(err, errlen, NO_PORT);
        return -1;
    }
    return 0;
bad_host:
    snprintf(err, errlen, NO_HOST);
    return -1;
}

int endpoint_format(char *buf, size_t len, const char *host, int port)
{
    return snprintf(buf, len, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host,
                    port);
}
