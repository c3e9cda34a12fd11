/* The host's Lua scripts. Each moves a task from one place to another in
 * one atomic step, so no crash between two commands can leave a task
 * half-moved. Every key a script touches comes in KEYS (Redis Cluster
 * safe: all of them carry the type's hash tag). Times come from Redis TIME,
 * so hosts with skewed clocks agree on due times. The text of each is
 * sdk/lua/NAME.lua, compiled in; its header states KEYS, ARGV and the
 * reply. */
#include "scripts.h"

#include "lua_sources.h"

script script_begin = {.name = "begin", .source = wharf_lua_begin};
script script_finish = {.name = "finish", .source = wharf_lua_finish};
script script_release = {.name = "release", .source = wharf_lua_release};
script script_renew = {.name = "renew", .source = wharf_lua_renew};
script script_heartbeat = {.name = "heartbeat", .source = wharf_lua_heartbeat};
script script_due = {.name = "due", .source = wharf_lua_due};
script script_promote = {.name = "promote", .source = wharf_lua_promote};
script script_trim_dead = {.name = "trim_dead", .source = wharf_lua_trim_dead};

script *const scripts_all[] = {
    &script_begin,   &script_finish,    &script_release,
    &script_renew,   &script_heartbeat, &script_due,
    &script_promote, &script_trim_dead, NULL};

void scripts_init(void)
{
    for (size_t i = 0; scripts_all[i]; i++)
        script_init(scripts_all[i]);
}
