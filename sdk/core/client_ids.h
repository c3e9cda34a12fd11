/* The names a producer hands to Redis and the ones it makes up: checks of
 * type, id, prefix and trace (docs/protocol.md, "Names"), task ids from the payload
 * or at random, and new W3C traceparents. */
#ifndef WHARF_CLIENT_IDS_H
#define WHARF_CLIENT_IDS_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/evp.h>

/* Hex SHA-256: 64 characters and a NUL. */
#define CLIENT_HASH_ID_SIZE 65
/* Hex of 128 random bits: 32 characters and a NUL. */
#define CLIENT_RANDOM_ID_SIZE 33
/* A traceparent and its NUL. */
#define CLIENT_TRACE_SIZE 56

/* The rule every type and id must meet, and what it is, for messages. */
#define CLIENT_TYPE_RULE "use 1-100 of A-Z a-z 0-9 . _ -"
#define CLIENT_ID_RULE "use 1-200 printable ASCII characters, no spaces"
#define CLIENT_TRACE_RULE "expected 00-<32 hex>-<16 hex>-<2 hex>"

bool client_valid_type(const char *type);
bool client_valid_id(const char *id);
/* The same rule for len bytes that need no NUL after them. */
bool client_valid_id_len(const char *id, size_t len);
bool client_valid_prefix(const char *prefix);
bool client_valid_trace(const char *trace);

/* Writes the hex SHA-256 of `type "\n" payload` into out, using md and the
 * reusable digest context ctx. 0, or -1 if libcrypto failed. */
int client_hash_id(EVP_MD_CTX *ctx, const EVP_MD *md, const char *type,
                   const void *payload, size_t len,
                   char out[CLIENT_HASH_ID_SIZE]);

/* Random bytes a task needs: 16 for a random id, 24 for a trace. Taken
 * from libcrypto for many tasks at once, as each call of it costs locks
 * and lookups. */
#define CLIENT_RANDOM_ID_BYTES 16
#define CLIENT_TRACE_BYTES 24

/* Fills buf with n random bytes. 0, or -1 if libcrypto has no randomness
 * to give. */
int client_random_bytes(unsigned char *buf, size_t n);

/* Writes CLIENT_RANDOM_ID_BYTES random bytes as a hex id into out. */
void client_random_id(const unsigned char *bytes,
                      char out[CLIENT_RANDOM_ID_SIZE]);

/* Writes a traceparent "00-<trace id>-<parent id>-01" made of
 * CLIENT_TRACE_BYTES random bytes into out; neither id is all zero. */
void client_new_trace(const unsigned char *bytes, char out[CLIENT_TRACE_SIZE]);

#endif /* WHARF_CLIENT_IDS_H */
