/* The scripts the host loads on every node it reaches (a set of the
 * sdk/lua scripts; a script object itself is sdk/core/script.h): begin
 * and finish (each takes a whole batch of one queue), release, and the
 * maintenance scripts (renew, heartbeat, due, promote, trim_dead). Each
 * is generated from its sdk/lua/NAME.lua (lua_scripts.h, which also has
 * its spec and typed call functions); the header of the file states its
 * KEYS, ARGV and reply. */
#ifndef WHARF_NODE_SCRIPTS_H
#define WHARF_NODE_SCRIPTS_H

#include "script.h"

/* Defined in lua_scripts.c; named here so that a file can have these
 * without the declarations of every script. */
extern const script script_begin;
extern const script script_finish;
extern const script script_release;
extern const script script_renew;
extern const script script_heartbeat;
extern const script script_due;
extern const script script_promote;
extern const script script_trim_dead;

/* Every script above, NULL-terminated: each node the broker reaches
 * loads them all. */
extern const script *const node_scripts_all[];

/* Checks that each script's SHA1, computed at build time, is the one of
 * its text; aborts with a message if not. Call once at start. */
void node_scripts_check(void);

#endif /* WHARF_NODE_SCRIPTS_H */
