/* Redis key names (docs/protocol.md, "Keys"). Every key of a type carries the hash
 * tag {T}, so a script's keys share one Redis Cluster slot. Shared by the
 * client library and the host so both spell every key the same way. */
#ifndef WHARF_KEYS_H
#define WHARF_KEYS_H

#include <stddef.h>

/* prefix (<= 100) + type (<= 100) + id (<= 200) + separators fit. */
#define KEY_MAX 512

/* Writes "<prefix>:{<type>}:<what>" into buf. Returns its length, or -1 if
 * it does not fit (buf is then ""). */
int key_of_type(char *buf, size_t len, const char *prefix, const char *type,
                const char *what);

/* Writes "<prefix>:{<type>}:<what>:<id>" into buf, as key_of_type. */
int key_of_task(char *buf, size_t len, const char *prefix, const char *type,
                const char *what, const char *id);

/* Writes "<prefix>:<what>" (for wharf:types and wharf:instance:...). */
int key_global(char *buf, size_t len, const char *prefix, const char *what);

/* The consumer group every type's stream has. */
#define WHARF_GROUP "wharf"

#endif /* WHARF_KEYS_H */
