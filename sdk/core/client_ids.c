/* Checks and makes the names a producer uses; see client_ids.h. */
#include "client_ids.h"

#include <limits.h>
#include <string.h>

#include <openssl/rand.h>

#include <wharf/client.h>


static const char hex_digits[] = "0123456789abcdef";

static void to_hex(const unsigned char *bytes, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++) {
        *out++ = hex_digits[bytes[i] >> 4];
        *out++ = hex_digits[bytes[i] & 0x0f];
    }
    *out = '\0';
}

bool client_valid_type(const char *type)
{
    size_t n = 0;

    if (!type)
        return false;
    for (const char *p = type; *p; p++, n++) {
        char ch = *p;
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' ||
                  ch == '-';
        if (!ok || n >= WHARF_TYPE_MAX)
            return false;
    }
    return n > 0;
}

/* 1..max bytes of printable ASCII without spaces (0x21..0x7e). */
static bool printable_word(const char *s, size_t max)
{
    size_t n = 0;

    if (!s)
        return false;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++, n++)
        if (*p < 0x21 || *p > 0x7e || n >= max)
            return false;
    return n > 0;
}

bool client_valid_id(const char *id)
{
    return printable_word(id, WHARF_ID_MAX);
}

bool client_valid_id_len(const char *id, size_t len)
{
    if (!id || len == 0 || len > WHARF_ID_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)id[i] < 0x21 || (unsigned char)id[i] > 0x7e)
            return false;
    return true;
}

bool client_valid_prefix(const char *prefix)
{
    /* Braces would make a second hash tag and move keys between slots. */
    return printable_word(prefix, WHARF_PREFIX_MAX) && !strpbrk(prefix, "{}");
}

/* n lowercase hex digits, not all zero (W3C: an all-zero id is invalid). */
static bool hex_field(const char *s, size_t n)
{
    bool nonzero = false;

    for (size_t i = 0; i < n; i++) {
        if (!strchr(hex_digits, s[i]) || s[i] == '\0')
            return false;
        if (s[i] != '0')
            nonzero = true;
    }
    return nonzero;
}

bool client_valid_trace(const char *trace)
{
    if (!trace || strlen(trace) != WHARF_TRACE_LEN)
        return false;
    return strncmp(trace, "00-", 3) == 0 && hex_field(trace + 3, 32) &&
           trace[35] == '-' && hex_field(trace + 36, 16) && trace[52] == '-' &&
           strchr(hex_digits, trace[53]) && strchr(hex_digits, trace[54]);
}

int client_hash_id(EVP_MD_CTX *ctx, const EVP_MD *md, const char *type,
                   const void *payload, size_t len,
                   char out[CLIENT_HASH_ID_SIZE])
{
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int digest_len = 0;

    if (EVP_DigestInit_ex(ctx, md, NULL) != 1 ||
        EVP_DigestUpdate(ctx, type, strlen(type)) != 1 ||
        EVP_DigestUpdate(ctx, "\n", 1) != 1 ||
        (len > 0 && EVP_DigestUpdate(ctx, payload, len) != 1) ||
        EVP_DigestFinal_ex(ctx, digest, &digest_len) != 1 || digest_len != 32)
        return -1;
    to_hex(digest, digest_len, out);
    return 0;
}

int client_random_bytes(unsigned char *buf, size_t n)
{
    return n > 0 && (n > INT_MAX || RAND_bytes(buf, (int)n) != 1) ? -1 : 0;
}

void client_random_id(const unsigned char *bytes,
                      char out[CLIENT_RANDOM_ID_SIZE])
{
    to_hex(bytes, CLIENT_RANDOM_ID_BYTES, out);
}

void client_new_trace(const unsigned char *bytes, char out[CLIENT_TRACE_SIZE])
{
    unsigned char ids[CLIENT_TRACE_BYTES];

    memcpy(ids, bytes, sizeof(ids));
    /* An all-zero id is invalid; a set low bit makes one impossible. */
    ids[15] |= 1;
    ids[23] |= 1;
    memcpy(out, "00-", 3);
    to_hex(ids, 16, out + 3);
    out[35] = '-';
    to_hex(ids + 16, 8, out + 36);
    memcpy(out + 52, "-01", 4);
}
