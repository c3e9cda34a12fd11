/* The version of the wire protocol (docs/protocol.md) this tree speaks,
 * as the Lua scripts take it in their ARGV and name it in a PROTOCOL
 * answer: one constant for the client library and the host's console. */
#ifndef WHARF_PROTOCOL_VERSION_H
#define WHARF_PROTOCOL_VERSION_H

/* The protocol versions spoken, as the scripts take them. */
#define CLIENT_PROTOCOLS "1"

#endif /* WHARF_PROTOCOL_VERSION_H */
