/* wharf top's fetching: parses the --url, and GETs the console's JSON
 * with libcurl (HTTP/1.0, no proxy, one deadline for the whole exchange)
 * and decodes it with jansson; curl's failures are told in the words
 * top has always used ("connect HOST:PORT: Connection refused"). */
#include "top_fetch.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netdb.h>

#include <curl/curl.h>

#include "endpoint.h"
#include "quote.h"

/* The whole exchange, connect to last byte; the answer's largest size. */
#define HTTP_TIMEOUT_MS 2000
#define BODY_MAX (4 << 20)

/* The longest --url taken; why one is refused; a port as text; the
 * longest API path asked for below the URL's prefix. */
#define TOP_URL_MAX 400
#define TOP_WHY_MAX 128
#define TOP_PORT_TEXT 8
#define TOP_PATH_MAX 64

struct top_fetch {
    top_target target;
    const volatile sig_atomic_t *stop;
    CURL *curl;
    struct curl_slist *headers; /* Host, Accept */
    char errbuf[CURL_ERROR_SIZE];
    /* the answer being read */
    char *body;
    size_t len, cap;
    bool too_large;
};

int top_target_parse(const char *url, top_target *t, char *err, size_t len)
{
    if (strlen(url) > TOP_URL_MAX) {
        snprintf(err, len, "the URL is too long");
        return -1;
    }
    const char *s = url, *slash;
    char shown[TOP_URL_MAX + 20]; /* url for messages, as quote_text shows it */
    char why[TOP_WHY_MAX];
    size_t n;

    quote_text(url, shown, sizeof(shown));

    if (strncmp(s, "http://", 7) != 0) {
        snprintf(err, len, "'%s': expected http://HOST:PORT", shown);
        return -1;
    }
    s += 7;
    slash = strchr(s, '/');
    n = slash ? (size_t)(slash - s) : strlen(s);
    if (n == 0 || n >= sizeof(t->host)) {
        snprintf(err, len, "'%s': no host", shown);
        return -1;
    }
    if (s[0] == '[' && !memchr(s, ']', n)) {
        snprintf(err, len, "'%s': missing ']'", shown);
        return -1;
    }
    t->port = 80;
    /* The host as the user typed it: curl and the resolver judge it. */
    if (endpoint_parse(s, n, ENDPOINT_LOOSE_HOST, t->host, &t->port, why,
                       sizeof(why)) != 0) {
        snprintf(err, len, "'%s': %s", shown, why);
        return -1;
    }
    if (t->host[0] == '\0') {
        snprintf(err, len, "'%s': no host", shown);
        return -1;
    }
    snprintf(t->base, sizeof(t->base), "%s", slash ? slash : "");
    n = strlen(t->base);
    while (n > 0 && t->base[n - 1] == '/')
        t->base[--n] = '\0';
    return 0;
}

/* curl's write callback: appends to f->body, up to BODY_MAX. */
static size_t on_body(char *data, size_t size, size_t count, void *arg)
{
    top_fetch *f = arg;
    size_t n = size * count;

    if (f->len + n + 1 > f->cap) {
        size_t cap = f->cap ? f->cap : 65536;
        char *more;
        while (cap < f->len + n + 1)
            cap *= 2;
        if (cap > BODY_MAX || !(more = realloc(f->body, cap))) {
            f->too_large = true;
            return 0; /* curl ends the transfer: CURLE_WRITE_ERROR */
        }
        f->body = more;
        f->cap = cap;
    }
    memcpy(f->body + f->len, data, n);
    f->len += n;
    f->body[f->len] = '\0';
    return n;
}

/* curl's progress callback: a q or a signal ends the transfer. */
static int on_progress(void *arg, curl_off_t down_total, curl_off_t down,
                       curl_off_t up_total, curl_off_t up)
{
    const top_fetch *f = arg;

    (void)down_total, (void)down, (void)up_total, (void)up;
    return *f->stop ? 1 : 0;
}

top_fetch *top_fetch_open(const top_target *t,
                          const volatile sig_atomic_t *stop, char *err,
                          size_t len)
{
    top_fetch *f = calloc(1, sizeof(*f));
    struct curl_slist *more;
    char host[sizeof("Host: ") + ENDPOINT_TEXT_MAX];

    if (!f || curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(err, len, "cannot start libcurl");
        free(f);
        return NULL;
    }
    f->target = *t;
    f->stop = stop;
    /* The Host header top has always sent, port and all, which the
     * console checks against its own address. */
    memcpy(host, "Host: ", sizeof("Host: ") - 1);
    endpoint_format(host + sizeof("Host: ") - 1,
                    sizeof(host) - (sizeof("Host: ") - 1), t->host, t->port);
    f->headers = curl_slist_append(NULL, host);
    more = f->headers
               ? curl_slist_append(f->headers, "Accept: application/json")
               : NULL;
    if (!more || !(f->curl = curl_easy_init())) {
        snprintf(err, len, "cannot start libcurl");
        top_fetch_close(f);
        return NULL;
    }
    f->headers = more;
    curl_easy_setopt(f->curl, CURLOPT_PROTOCOLS_STR, "http");
    curl_easy_setopt(f->curl, CURLOPT_PROXY, ""); /* straight to it */
    curl_easy_setopt(f->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(f->curl, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_0);
    curl_easy_setopt(f->curl, CURLOPT_HTTPHEADER, f->headers);
    curl_easy_setopt(f->curl, CURLOPT_USERAGENT, "wharf-top/" WHARF_VERSION);
    curl_easy_setopt(f->curl, CURLOPT_TIMEOUT_MS, (long)HTTP_TIMEOUT_MS);
    curl_easy_setopt(f->curl, CURLOPT_ERRORBUFFER, f->errbuf);
    curl_easy_setopt(f->curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(f->curl, CURLOPT_WRITEDATA, f);
    curl_easy_setopt(f->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(f->curl, CURLOPT_XFERINFODATA, f);
    curl_easy_setopt(f->curl, CURLOPT_NOPROGRESS, 0L);
    return f;
}

void top_fetch_close(top_fetch *f)
{
    if (!f)
        return;
    if (f->curl)
        curl_easy_cleanup(f->curl);
    curl_slist_free_all(f->headers);
    free(f->body);
    free(f);
    curl_global_cleanup();
}

/* Why t's name does not resolve: curl does not say, the resolver does
 * ("Name or service not known"). */
static const char *resolve_failure(const top_target *t, CURLcode rc)
{
    struct addrinfo hints, *found = NULL;
    char port[TOP_PORT_TEXT];
    int gai;

    snprintf(port, sizeof(port), "%d", t->port);
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    gai = getaddrinfo(t->host, port, &hints, &found);
    freeaddrinfo(found);
    return gai != 0 ? gai_strerror(gai) : curl_easy_strerror(rc);
}

/* Says in err why the transfer failed with rc. */
static void say_failure(const top_fetch *f, CURLcode rc, char *err, size_t len)
{
    const top_target *t = &f->target;
    curl_off_t connected = 0;
    long os_errno = 0;

    curl_easy_getinfo(f->curl, CURLINFO_OS_ERRNO, &os_errno);
    switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
        snprintf(err, len, "%s: %s", t->host, resolve_failure(t, rc));
        return;
    case CURLE_COULDNT_CONNECT:
        snprintf(err, len, "connect %s:%d: %s", t->host, t->port,
                 os_errno ? strerror((int)os_errno) : curl_easy_strerror(rc));
        return;
    case CURLE_OPERATION_TIMEDOUT:
        curl_easy_getinfo(f->curl, CURLINFO_CONNECT_TIME_T, &connected);
        if (connected == 0)
            snprintf(err, len, "connect %s:%d: timed out", t->host, t->port);
        else
            snprintf(err, len, "no answer within %d ms", HTTP_TIMEOUT_MS);
        return;
    case CURLE_SEND_ERROR:
        snprintf(err, len, "send: %s",
                 os_errno ? strerror((int)os_errno) : curl_easy_strerror(rc));
        return;
    case CURLE_WRITE_ERROR:
        if (f->too_large) {
            snprintf(err, len, "answer too large");
            return;
        }
        break;
    case CURLE_GOT_NOTHING:
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_UNSUPPORTED_PROTOCOL: /* HTTP/0.9: no status line */
        snprintf(err, len, "not an HTTP answer");
        return;
    case CURLE_ABORTED_BY_CALLBACK:
        snprintf(err, len, "interrupted");
        return;
    default:
        break;
    }
    snprintf(err, len, "%s", f->errbuf[0] ? f->errbuf : curl_easy_strerror(rc));
}

json_t *top_fetch_json(top_fetch *f, const char *shown, const char *path,
                       char *err, size_t len)
{
    const top_target *t = &f->target;
    char url[sizeof("http://") + ENDPOINT_TEXT_MAX + sizeof(t->base) +
             TOP_PATH_MAX];
    int used;
    json_t *answer = NULL;
    long status = 0;
    CURLcode rc;

    used = snprintf(url, sizeof(url), "http://");
    used += endpoint_format(url + used, sizeof(url) - (size_t)used, t->host,
                            t->port);
    snprintf(url + used, sizeof(url) - (size_t)used, "%s%s", t->base, path);
    f->len = 0;
    f->too_large = false;
    f->errbuf[0] = '\0';
    curl_easy_setopt(f->curl, CURLOPT_URL, url);
    rc = curl_easy_perform(f->curl);
    if (rc != CURLE_OK) {
        say_failure(f, rc, err, len);
        return NULL;
    }
    curl_easy_getinfo(f->curl, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200) {
        snprintf(err, len, "HTTP %ld from %s%s", status, shown, path);
        return NULL;
    }
    /* What follows the object is not looked at, as before jansson. */
    if (f->len > 0)
        answer = json_loadb(f->body, f->len, JSON_DISABLE_EOF_CHECK, NULL);
    if (!json_is_object(answer)) {
        json_decref(answer);
        snprintf(err, len, "the answer is not the JSON of %s", path);
        return NULL;
    }
    return answer;
}
