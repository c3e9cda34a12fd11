/* webhook: POSTs each task's payload to an HTTP(S) endpoint, signed.
 *
 * [plugin.webhook]
 * url = https://example.com/hook   ; where to POST (http or https)
 * secret = s3cret                  ; X-Wharf-Signature: sha256=<hex HMAC>
 * content_type = application/json  ; the request's Content-Type
 * timeout = 10s                    ; whole request; never past the task's
 *                                  ; deadline (wharf_deadline_ms)
 * connect_timeout = 5s
 * max_response = 64KiB             ; result: the response body, cut here
 * max_error_body = 512B            ; response bytes quoted in an error
 * allow_task_url = no              ; yes: the payload is an envelope
 *                                  ; {"url": "...", "body": ...}
 *
 * Headers: Content-Type, Idempotency-Key (the task id), traceparent,
 * X-Wharf-Type, X-Wharf-Attempt, and X-Wharf-Signature when a secret is
 * set. 2xx is WHARF_OK with the response body as the result; 408, 429,
 * 5xx, timeouts and transport errors are WHARF_RETRY, with the reason; a
 * Retry-After (seconds or an HTTP date) on a 429 or a 503 is the next
 * attempt's delay (wharf_retry_in, capped by the type's max_retry_delay),
 * elsewhere it is only quoted and the type's backoff decides; any other
 * status is WHARF_FAIL with the status and the start of the body.
 *
 * Thread-safe (.thread_safe = 1): calls share only what init read from
 * the manifest, which no call writes, and a pool of curl easy handles
 * under a mutex. A call takes an idle handle (or makes one when none is
 * idle), so the pool grows to the most calls ever at once, and gives it
 * back afterwards with its connections still open for the next call.
 * Everything a call writes (the response, its headers, the reason) is its
 * own, on its stack or allocated by it. */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <wharf/plugin.h>

#define WEBHOOK_DEFAULT_TIMEOUT_MS 10000
#define WEBHOOK_DEFAULT_CONNECT_MS 5000
#define WEBHOOK_DEFAULT_MAX_RESPONSE (64 * 1024)
#define WEBHOOK_DEFAULT_MAX_ERROR_BODY 512
#define WEBHOOK_HEADER_MAX 512

/* An idle easy handle. A libcurl easy handle is for one thread at a
 * time; each keeps its own connection cache, which curl_easy_reset leaves
 * alone, so a handle given back keeps its connections alive. */
typedef struct pooled {
    CURL *curl;
    struct pooled *next;
} pooled;

typedef struct webhook {
    pthread_mutex_t pool_lock; /* guards idle, and only idle */
    pooled *idle; /* handles no call holds; at fini, every handle */
    char *url;           /* NULL: only task URLs (or every task fails) */
    char *secret;        /* NULL: requests are not signed */
    size_t secret_len;
    char *content_type;
    long timeout_ms;
    long connect_timeout_ms;
    size_t max_response;
    size_t max_error_body;
    int allow_task_url;
} webhook;

/* The response being read: the body up to `cap`, and Retry-After. */
typedef struct response {
    char *data;
    size_t len, cap;
    int cut;           /* more came than cap */
    char retry_after[64];
} response;

/* --- manifest values (the plugin cannot call the host's parsers) ------- */

/* "250ms", "10s", "2m" into ms. 0, or -1 on a bad value. */
static int parse_duration(const char *text, long *out)
{
    char *end;
    unsigned long long n;
    unsigned long long scale;

    if (!isdigit((unsigned char)text[0]))
        return -1;
    errno = 0;
    n = strtoull(text, &end, 10);
    if (errno)
        return -1;
    if (strcmp(end, "ms") == 0)
        scale = 1;
    else if (strcmp(end, "s") == 0)
        scale = 1000;
    else if (strcmp(end, "m") == 0)
        scale = 60000;
    else
        return -1;
    if (n == 0 || n > 86400000ULL / scale)
        return -1;
    *out = (long)(n * scale);
    return 0;
}

/* "512B", "64KiB", "1MiB" into bytes. 0, or -1 on a bad value. */
static int parse_size(const char *text, size_t *out)
{
    char *end;
    unsigned long long n, scale;

    if (!isdigit((unsigned char)text[0]))
        return -1;
    errno = 0;
    n = strtoull(text, &end, 10);
    if (errno)
        return -1;
    if (strcmp(end, "B") == 0 || *end == '\0')
        scale = 1;
    else if (strcmp(end, "KiB") == 0)
        scale = 1024;
    else if (strcmp(end, "MiB") == 0)
        scale = 1024 * 1024;
    else
        return -1;
    if (n > (64ULL << 20) / scale)
        return -1;
    *out = (size_t)(n * scale);
    return 0;
}

static int parse_bool(const char *text, int *out)
{
    if (strcmp(text, "yes") == 0 || strcmp(text, "true") == 0 ||
        strcmp(text, "1") == 0)
        *out = 1;
    else if (strcmp(text, "no") == 0 || strcmp(text, "false") == 0 ||
             strcmp(text, "0") == 0)
        *out = 0;
    else
        return -1;
    return 0;
}

/* 0 if url is an absolute http or https URL curl can parse. */
static int check_url(const char *url, char *why, size_t len)
{
    CURLU *u = curl_url();
    char *scheme = NULL;
    int rc = -1;

    if (u == NULL) {
        snprintf(why, len, "out of memory");
        return -1;
    }
    if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK) {
        snprintf(why, len, "not a URL");
        goto out;
    }
    if (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0) {
        snprintf(why, len, "scheme %s: only http and https", scheme);
        goto out;
    }
    rc = 0;
out:
    curl_free(scheme);
    curl_url_cleanup(u);
    return rc;
}

static char *copy(const char *s)
{
    size_t len = strlen(s) + 1;
    char *p = malloc(len);

    if (p)
        memcpy(p, s, len);
    return p;
}

static void webhook_free(webhook *w)
{
    if (w == NULL)
        return;
    /* fini runs with no call in flight, so every handle is idle. */
    while (w->idle) {
        pooled *p = w->idle;

        w->idle = p->next;
        curl_easy_cleanup(p->curl);
        free(p);
    }
    pthread_mutex_destroy(&w->pool_lock);
    free(w->url);
    if (w->secret) {
        OPENSSL_cleanse(w->secret, w->secret_len);
        free(w->secret);
    }
    free(w->content_type);
    free(w);
}

/* Reads and checks the [plugin.webhook] keys. A bad value fails init with
 * the key named, so wharfd --check and startup refuse it. */
static int webhook_init(wharf_ctx *ctx, void **state)
{
    webhook *w = calloc(1, sizeof(*w));
    const char *v;
    char why[128];

    if (w == NULL) {
        wharf_error(ctx, "webhook: out of memory");
        return 1;
    }
    if (pthread_mutex_init(&w->pool_lock, NULL) != 0) {
        wharf_error(ctx, "webhook: cannot create the handle pool's lock");
        free(w);
        return 1;
    }
    /* curl_global_init and curl_global_cleanup must not run beside other
     * curl calls. Safe here: the host runs init and fini from one thread,
     * once per plugin instance, with no process_business in flight. curl
     * counts the calls, so two instances' inits pair with their finis and
     * only the last fini tears curl down, after its handles are gone. */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        wharf_error(ctx, "webhook: curl_global_init failed");
        pthread_mutex_destroy(&w->pool_lock);
        free(w);
        return 1;
    }
    w->timeout_ms = WEBHOOK_DEFAULT_TIMEOUT_MS;
    w->connect_timeout_ms = WEBHOOK_DEFAULT_CONNECT_MS;
    w->max_response = WEBHOOK_DEFAULT_MAX_RESPONSE;
    w->max_error_body = WEBHOOK_DEFAULT_MAX_ERROR_BODY;

    if ((v = wharf_config(ctx, "url")) != NULL) {
        if (check_url(v, why, sizeof(why)) != 0) {
            wharf_error(ctx, "webhook: url '%s': %s", v, why);
            goto fail;
        }
        if ((w->url = copy(v)) == NULL)
            goto oom;
    }
    if ((v = wharf_config(ctx, "secret")) != NULL) {
        if (v[0] == '\0') {
            wharf_error(ctx, "webhook: secret is empty");
            goto fail;
        }
        if ((w->secret = copy(v)) == NULL)
            goto oom;
        w->secret_len = strlen(v);
    }
    v = wharf_config(ctx, "content_type");
    if (v && (v[0] == '\0' || strpbrk(v, "\r\n"))) {
        wharf_error(ctx, "webhook: content_type is not one header value");
        goto fail;
    }
    if ((w->content_type = copy(v ? v : "application/json")) == NULL)
        goto oom;
    if ((v = wharf_config(ctx, "timeout")) != NULL &&
        parse_duration(v, &w->timeout_ms) != 0) {
        wharf_error(ctx, "webhook: timeout '%s': use ms, s or m (e.g. 10s)",
                    v);
        goto fail;
    }
    if ((v = wharf_config(ctx, "connect_timeout")) != NULL &&
        parse_duration(v, &w->connect_timeout_ms) != 0) {
        wharf_error(ctx,
                    "webhook: connect_timeout '%s': use ms, s or m (e.g. 5s)",
                    v);
        goto fail;
    }
    if ((v = wharf_config(ctx, "max_response")) != NULL &&
        parse_size(v, &w->max_response) != 0) {
        wharf_error(ctx, "webhook: max_response '%s': use B, KiB or MiB, "
                         "at most 64MiB", v);
        goto fail;
    }
    if ((v = wharf_config(ctx, "max_error_body")) != NULL &&
        parse_size(v, &w->max_error_body) != 0) {
        wharf_error(ctx, "webhook: max_error_body '%s': use B, KiB or MiB",
                    v);
        goto fail;
    }
    if ((v = wharf_config(ctx, "allow_task_url")) != NULL &&
        parse_bool(v, &w->allow_task_url) != 0) {
        wharf_error(ctx, "webhook: allow_task_url '%s': use yes or no", v);
        goto fail;
    }
    if (w->url == NULL && !w->allow_task_url)
        /* Not an init failure: an autoloaded webhook.so (no section) must
         * not stop the host; its tasks fail, saying why. */
        wharf_log(ctx, WHARF_LOG_WARN,
                  "webhook: no url in [plugin.webhook] and allow_task_url "
                  "= no: every task will fail");
    *state = w;
    return 0;
oom:
    wharf_error(ctx, "webhook: out of memory");
fail:
    webhook_free(w);
    curl_global_cleanup();
    return 1;
}

static void webhook_fini(wharf_ctx *ctx, void *state)
{
    (void)ctx;
    webhook_free(state); /* its handles, before curl's globals go */
    curl_global_cleanup();
}

/* --- the handle pool --------------------------------------------------- */

/* An idle handle, or a new one when none is idle; NULL out of memory. The
 * caller owns it until pool_put. */
static pooled *pool_take(webhook *w)
{
    pooled *p;

    /* A default mutex fails to lock only when misused; should it ever,
     * the call makes a handle of its own rather than touch the list. */
    if (pthread_mutex_lock(&w->pool_lock) == 0) {
        p = w->idle;
        if (p)
            w->idle = p->next;
        pthread_mutex_unlock(&w->pool_lock);
        if (p)
            return p;
    }
    /* Made outside the lock: other calls need not wait for it. */
    if ((p = malloc(sizeof(*p))) == NULL)
        return NULL;
    if ((p->curl = curl_easy_init()) == NULL) {
        free(p);
        return NULL;
    }
    return p;
}

/* Gives a handle taken with pool_take back, its connections open. Reset
 * first, so an idle handle points into no finished call (its headers,
 * body, buffers and ctx). */
static void pool_put(webhook *w, pooled *p)
{
    curl_easy_reset(p->curl);
    if (pthread_mutex_lock(&w->pool_lock) != 0) {
        curl_easy_cleanup(p->curl); /* as in pool_take: not kept */
        free(p);
        return;
    }
    p->next = w->idle;
    w->idle = p;
    pthread_mutex_unlock(&w->pool_lock);
}

/* --- one request ------------------------------------------------------- */

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
    response *r = arg;
    size_t len = size * n, room = r->cap - r->len;

    if (len > room) {
        r->cut = 1;
        len = room;
    }
    if (len > 0) {
        char *grown = realloc(r->data, r->len + len + 1);

        if (grown == NULL)
            return 0; /* curl fails the transfer: CURLE_WRITE_ERROR */
        r->data = grown;
        memcpy(r->data + r->len, data, len);
        r->len += len;
        r->data[r->len] = '\0';
    }
    /* The rest is read and dropped, so the connection stays reusable. */
    return size * n;
}

static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
    response *r = arg;
    size_t len = size * n;
    static const char name[] = "retry-after:";

    if (len > sizeof(name) - 1 && strncasecmp(data, name, sizeof(name) - 1) == 0) {
        const char *v = data + sizeof(name) - 1;
        size_t vlen = len - (sizeof(name) - 1);

        while (vlen > 0 && (*v == ' ' || *v == '\t')) {
            v++;
            vlen--;
        }
        while (vlen > 0 && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' ||
                            v[vlen - 1] == ' '))
            vlen--;
        if (vlen >= sizeof(r->retry_after))
            vlen = sizeof(r->retry_after) - 1;
        memcpy(r->retry_after, v, vlen);
        r->retry_after[vlen] = '\0';
    }
    return len;
}

/* The delay a Retry-After value asks for, in ms: delta-seconds or an
 * HTTP date (0 once past); -1 if it is neither. At most 30 days, which
 * is past any type's max_retry_delay. */
static int64_t retry_after_ms(const char *v)
{
    const int64_t most_s = 30 * 24 * 3600;
    int64_t s = 0;
    time_t at;

    if (isdigit((unsigned char)v[0])) {
        for (; isdigit((unsigned char)*v); v++)
            if ((s = s * 10 + (*v - '0')) > most_s)
                s = most_s;
        return *v == '\0' ? s * 1000 : -1;
    }
    /* curl_getdate keeps no state of its own: safe from any thread. */
    if ((at = curl_getdate(v, NULL)) == -1)
        return -1;
    s = (int64_t)(at - time(NULL));
    return s <= 0 ? 0 : (s > most_s ? most_s : s) * 1000;
}

/* Stops the transfer once the host cancels the task. */
static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow,
                       curl_off_t ultotal, curl_off_t ulnow)
{
    (void)dltotal;
    (void)dlnow;
    (void)ultotal;
    (void)ulnow;
    return wharf_cancelled(arg) ? 1 : 0;
}

/* The start of a response body for an error message: printable, cut at
 * max bytes. */
static void quote_body(const response *r, size_t max, char *out, size_t len)
{
    size_t i, o = 0, n = r->len < max ? r->len : max;

    for (i = 0; i < n && o + 4 < len; i++) {
        unsigned char ch = (unsigned char)r->data[i];

        out[o++] = ch >= 0x20 && ch < 0x7f ? (char)ch : ' ';
    }
    if ((n < r->len || r->cut) && o + 4 < len) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
}

/* The URL and body of a task: the payload as is, or with allow_task_url
 * its envelope {"url": "...", "body": ...} (a string body is sent as its
 * text, any other JSON value as compact JSON). On success 0, with *url
 * and *body pointing into the payload or into *owned_* (caller frees);
 * else -1 with the reason set. */
static int task_request(wharf_ctx *ctx, const webhook *w,
                        const wharf_task *task, const char **url,
                        const char **body, size_t *body_len,
                        char **owned_url, char **owned_body)
{
    json_t *root, *jurl, *jbody;
    json_error_t jerr;
    char why[128];
    int rc = -1;

    *owned_url = NULL;
    *owned_body = NULL;
    if (!w->allow_task_url) {
        if (w->url == NULL) {
            wharf_error(ctx, "no url configured: set url in [plugin.webhook] "
                             "(or allow_task_url = yes)");
            return -1;
        }
        *url = w->url;
        *body = (const char *)task->payload;
        *body_len = task->payload_len;
        return 0;
    }
    root = json_loadb((const char *)task->payload, task->payload_len,
                      JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL || !json_is_object(root)) {
        wharf_error(ctx, "payload is not a JSON envelope {\"url\": ..., "
                         "\"body\": ...}: %s",
                    root ? "not an object" : jerr.text);
        goto out;
    }
    jurl = json_object_get(root, "url");
    jbody = json_object_get(root, "body");
    if (jurl && !json_is_string(jurl)) {
        wharf_error(ctx, "envelope: \"url\" is not a string");
        goto out;
    }
    if (jurl == NULL && w->url == NULL) {
        wharf_error(ctx, "envelope has no \"url\" and none is configured");
        goto out;
    }
    if (jurl) {
        if (check_url(json_string_value(jurl), why, sizeof(why)) != 0) {
            wharf_error(ctx, "envelope: url: %s", why);
            goto out;
        }
        if ((*owned_url = copy(json_string_value(jurl))) == NULL)
            goto oom;
        *url = *owned_url;
    } else {
        *url = w->url;
    }
    if (jbody == NULL || json_is_null(jbody)) {
        *body = "";
        *body_len = 0;
    } else if (json_is_string(jbody)) {
        *body_len = json_string_length(jbody);
        if ((*owned_body = malloc(*body_len + 1)) == NULL)
            goto oom;
        memcpy(*owned_body, json_string_value(jbody), *body_len);
        *body = *owned_body;
    } else {
        if ((*owned_body = json_dumps(jbody, JSON_COMPACT |
                                                 JSON_ENCODE_ANY)) == NULL)
            goto oom;
        *body = *owned_body;
        *body_len = strlen(*owned_body);
    }
    rc = 0;
    goto out;
oom:
    wharf_error(ctx, "out of memory");
out:
    if (rc != 0) {
        free(*owned_url);
        free(*owned_body);
        *owned_url = *owned_body = NULL;
    }
    json_decref(root);
    return rc;
}

/* Appends "Name: value" to the list; 0, or -1 out of memory. */
static int add_header(struct curl_slist **list, const char *name,
                      const char *value)
{
    char line[WEBHOOK_HEADER_MAX];
    struct curl_slist *grown;

    snprintf(line, sizeof(line), "%s: %s", name, value);
    grown = curl_slist_append(*list, line);
    if (grown == NULL)
        return -1;
    *list = grown;
    return 0;
}

/* "sha256=<hex HMAC-SHA256 of body with secret>" into out. */
static int sign(const webhook *w, const char *body, size_t len, char *out,
                size_t out_len)
{
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned mac_len = 0;
    size_t o;

    /* Into mac, ours: given no output buffer HMAC would use a static one,
     * shared by every call at once. */
    if (HMAC(EVP_sha256(), w->secret, (int)w->secret_len,
             (const unsigned char *)body, len, mac, &mac_len) == NULL)
        return -1;
    o = (size_t)snprintf(out, out_len, "sha256=");
    for (unsigned i = 0; i < mac_len && o + 3 <= out_len; i++)
        o += (size_t)snprintf(out + o, out_len - o, "%02x", mac[i]);
    return 0;
}

/* Sorts an HTTP status into the task's status. */
static wharf_status by_http_status(wharf_ctx *ctx, const webhook *w,
                                   long code, const response *r,
                                   const char *url)
{
    char quoted[2048];

    if (code >= 200 && code < 300) {
        if (r->cut)
            wharf_log(ctx, WHARF_LOG_WARN,
                      "response of %s cut to max_response (%zu bytes)", url,
                      w->max_response);
        if (wharf_result(ctx, r->data ? r->data : "", r->len) != 0) {
            wharf_error(ctx, "the response (%zu bytes) cannot be kept as "
                             "the result", r->len);
            return WHARF_RETRY;
        }
        return WHARF_OK;
    }
    quote_body(r, w->max_error_body < sizeof(quoted) - 8
                      ? w->max_error_body
                      : sizeof(quoted) - 8,
               quoted, sizeof(quoted));
    if (code == 408 || code == 429 || code >= 500) {
        int64_t after = r->retry_after[0] && (code == 429 || code == 503)
                            ? retry_after_ms(r->retry_after)
                            : -1;

        if (after >= 0 && wharf_retry_in(ctx, after) == 0)
            wharf_error(ctx, "HTTP %ld from %s (Retry-After: %s): %s", code,
                        url, r->retry_after, quoted);
        else if (r->retry_after[0])
            wharf_error(ctx, "HTTP %ld from %s (Retry-After: %s, not used: "
                             "the type's backoff applies): %s",
                        code, url, r->retry_after, quoted);
        else
            wharf_error(ctx, "HTTP %ld from %s: %s", code, url, quoted);
        return WHARF_RETRY;
    }
    wharf_error(ctx, "HTTP %ld from %s: %s", code, url, quoted);
    return WHARF_FAIL;
}

static wharf_status webhook_process(wharf_ctx *ctx, const wharf_task *task)
{
    webhook *w = wharf_state(ctx);
    struct curl_slist *headers = NULL;
    pooled *handle = NULL;
    CURL *curl;
    response r;
    const char *url = NULL, *body = NULL;
    char *owned_url = NULL, *owned_body = NULL;
    size_t body_len = 0;
    char attempt[16], signature[8 + 2 * EVP_MAX_MD_SIZE + 1];
    long timeout_ms, code = 0;
    int64_t left = wharf_deadline_ms(ctx);
    wharf_status status = WHARF_RETRY;
    CURLcode rc;

    memset(&r, 0, sizeof(r));
    if (task_request(ctx, w, task, &url, &body, &body_len, &owned_url,
                     &owned_body) != 0)
        return WHARF_FAIL; /* the same payload would fail again */
    timeout_ms = w->timeout_ms;
    if (left == 0) {
        wharf_error(ctx, "the task's deadline passed before the request");
        goto out;
    }
    if (left > 0 && left < timeout_ms)
        timeout_ms = (long)left;
    r.cap = w->max_response;

    snprintf(attempt, sizeof(attempt), "%u", task->attempt);
    if (add_header(&headers, "Content-Type", w->content_type) ||
        add_header(&headers, "Idempotency-Key", task->id) ||
        add_header(&headers, "traceparent", task->trace) ||
        add_header(&headers, "X-Wharf-Type", task->type) ||
        add_header(&headers, "X-Wharf-Attempt", attempt) ||
        /* No "Expect: 100-continue" round trip for larger bodies. */
        add_header(&headers, "Expect", ""))
        goto oom;
    if (w->secret) {
        if (sign(w, body, body_len, signature, sizeof(signature)) != 0) {
            wharf_error(ctx, "HMAC-SHA256 failed");
            goto out;
        }
        if (add_header(&headers, "X-Wharf-Signature", signature))
            goto oom;
    }

    if ((handle = pool_take(w)) == NULL) {
        /* Memory may be back by the next attempt. */
        wharf_error(ctx, "no curl handle for the request: curl_easy_init "
                         "failed (out of memory)");
        goto out;
    }
    curl = handle->curl;
    curl_easy_reset(curl);
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                     (curl_off_t)body_len);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "wharf-webhook/1.0");
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                     w->connect_timeout_ms < timeout_ms ? w->connect_timeout_ms
                                                        : timeout_ms);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &r);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, ctx);
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);

    rc = curl_easy_perform(curl);
    if (rc == CURLE_OK) {
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
        status = by_http_status(ctx, w, code, &r, url);
    } else if (rc == CURLE_OPERATION_TIMEDOUT) {
        wharf_error(ctx, "POST %s: timeout after %ld ms", url, timeout_ms);
    } else if (rc == CURLE_ABORTED_BY_CALLBACK && wharf_deadline_ms(ctx) == 0) {
        /* on_progress saw the deadline pass a moment before curl's own
         * timeout (set to what was left) did: the same outcome. */
        wharf_error(ctx, "POST %s: timeout after %ld ms", url, timeout_ms);
    } else {
        /* Refused, unreachable, reset, TLS: the endpoint may be back
         * later, so the host's retries and dead set decide. A transfer
         * the host stopped early (a cancel) lands here too: the host has
         * decided that run's outcome itself and never reads this. */
        wharf_error(ctx, "POST %s: %s", url, curl_easy_strerror(rc));
    }
    goto out;
oom:
    wharf_error(ctx, "out of memory");
out:
    wharf_log(ctx, WHARF_LOG_DEBUG, "POST %s: %zu bytes, HTTP %ld",
              url ? url : "-", body_len, code);
    if (handle)
        pool_put(w, handle);
    curl_slist_free_all(headers);
    free(r.data);
    free(owned_url);
    free(owned_body);
    return status;
}

WHARF_PLUGIN(.name = "webhook", .version = "1.0.0",
             .types = (const char *const[]){"webhook", NULL},
             .init = webhook_init, .process_business = webhook_process,
             .fini = webhook_fini, .thread_safe = 1);
