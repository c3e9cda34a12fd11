/* Endpoints: the one parser and the one formatter of "host:port" and
 * "[v6]:port", for Redis URLs, the manifest's listen address, Redis's
 * MOVED and ASK replies, the HTTP listener and wharf top's --url. */
#ifndef WHARF_ENDPOINT_H
#define WHARF_ENDPOINT_H

#include <stddef.h>

/* A host's buffer: a DNS name is at most 253 bytes, an IPv6 address with
 * a zone fewer. */
#define ENDPOINT_HOST_MAX 256

/* "host:port" written out: the host, two brackets, ':' and five digits. */
#define ENDPOINT_TEXT_MAX (ENDPOINT_HOST_MAX + 8)

/* What endpoint_parse takes beyond "host[:port]" and "[v6][:port]". */
enum endpoint_flags {
    /* A text without a port is refused. */
    ENDPOINT_NEED_PORT = 1u << 0,
    /* An address as another program wrote it (Redis's MOVED, a URL the
     * user typed for curl): the host is not checked and may be empty
     * (":6381"), and without brackets the port is what follows the LAST
     * ':', so "::1:6381" is host ::1. Without this flag the host is a
     * name (labels of letters, digits, '_' and '-'), a dotted IPv4
     * address or, in brackets, an IPv6 address, checked whole, and the
     * first ':' ends it. */
    ENDPOINT_LOOSE_HOST = 1u << 1
};

/* Parses text[0..n) into host (of ENDPOINT_HOST_MAX bytes, without the
 * brackets) and *port (1..65535; left as it is when the text names none).
 * Brackets always hold an IPv6 address. 0, or -1 with why in err
 * ("bad port: expected 1..65535"); host and *port are then unspecified. */
int endpoint_parse(const char *text, size_t n, unsigned flags, char *host,
                   int *port, char *err, size_t errlen);

/* Writes "host:port", or "[host]:port" for an IPv6 address, into buf as
 * snprintf does (the length it would have, cut to fit). */
int endpoint_format(char *buf, size_t len, const char *host, int port);

#endif /* WHARF_ENDPOINT_H */
