/* A client's life: wharf_client_open checks the prefix, parses the URL,
 * sets up SHA-256 and connects; wharf_client_close frees what every part
 * of the client made (the enqueue buffers too). The top of the library:
 * nothing here is called by the other files. */
#include "client_internal.h"

#include <stdlib.h>
#include <string.h>

#include "client_enqueue.h"
#include "client_ids.h"
#include "conn.h"
#include "error_set.h"
#include "lua_scripts.h"

#define DEFAULT_URL "redis://127.0.0.1:6379"
#define DEFAULT_PREFIX "wharf"

wharf_client_status wharf_client_open(wharf_client **out, const char *url,
                                      const char *password, const char *prefix,
                                      char *err, size_t errlen)
{
    wharf_client *c = NULL;
    wharf_client_status status = WHARF_CLIENT_ERROR;
    char why[512];

    if (!url)
        url = DEFAULT_URL;
    if (!prefix)
        prefix = DEFAULT_PREFIX;
    if (!out) {
        error_set(err, errlen, "no place to put the client");
        return WHARF_CLIENT_BAD_INPUT;
    }
    if (!client_valid_prefix(prefix)) {
        error_set(err, errlen,
                  "key prefix '%.120s' is not valid: use 1-100 printable "
                  "ASCII characters, no spaces or braces",
                  prefix);
        return WHARF_CLIENT_BAD_INPUT;
    }
    c = calloc(1, sizeof(*c));
    if (!c) {
        error_set(err, errlen, "out of memory");
        goto fail;
    }
    if (redis_url_parse(url, &c->url, why, sizeof(why)) != 0) {
        char shown[REDIS_URL_TEXT_MAX];

        redis_url_redact(url, shown, sizeof(shown));
        error_set(err, errlen, "bad Redis URL '%s': %s", shown, why);
        status = WHARF_CLIENT_BAD_INPUT;
        goto fail;
    }
    snprintf(c->prefix, sizeof(c->prefix), "%s", prefix);
    if (password && !(c->password = strdup(password))) {
        error_set(err, errlen, "out of memory");
        goto fail;
    }
    c->sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
    c->digest = EVP_MD_CTX_new();
    if (!c->sha256 || !c->digest) {
        error_set(err, errlen, "libcrypto: cannot set up SHA-256");
        goto fail;
    }
    c->scripts[0] = &script_enqueue;
    c->scripts[1] = NULL;
    nodes_init(&c->nodes, &c->url, c->password, CONN_TIMEOUT_MS);
    nodes_set_scripts(&c->nodes, c->scripts);
    pipeline_init(&c->pipe, &c->nodes);
    if (client_connect(c) != 0) {
        error_set(err, errlen, "%s", c->errstr);
        status = c->connect_status;
        goto fail;
    }
    *out = c;
    return WHARF_CLIENT_OK;
fail:
    wharf_client_close(c);
    return status;
}

void wharf_client_close(wharf_client *client)
{
    if (!client)
        return;
    pipeline_free(&client->pipe);
    nodes_free(&client->nodes);
    client_enqueue_free(client);
    EVP_MD_CTX_free(client->digest);
    EVP_MD_free(client->sha256);
    if (client->password) {
        /* Do not leave the secret in freed memory. */
        memset(client->password, 0, strlen(client->password));
        free(client->password);
    }
    memset(&client->url, 0, sizeof(client->url));
    free(client);
}
