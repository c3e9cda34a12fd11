/* The host's Lua scripts: begin and finish (each takes a whole batch of
 * one queue), release, and the maintenance scripts (renew, heartbeat,
 * due, promote, trim_dead). Each script's KEYS, ARGV and reply
 * are stated at the top of its sdk/lua/NAME.lua. */
#ifndef WHARF_SCRIPTS_H
#define WHARF_SCRIPTS_H

#include "script.h"

extern script script_begin;
extern script script_finish;
extern script script_release;
extern script script_renew;
extern script script_heartbeat;
extern script script_due;
extern script script_promote;
extern script script_trim_dead;

/* Every script above, NULL-terminated. */
extern script *const scripts_all[];

/* Computes every script's SHA1. Call once at start. */
void scripts_init(void);

#endif /* WHARF_SCRIPTS_H */
