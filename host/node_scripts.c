/* The scripts the host loads on every node it reaches. Each moves a task
 * from one place to another in one atomic step, so no crash between two
 * commands can leave a task half-moved. Every key a script touches comes
 * in KEYS (Redis Cluster safe: all of them carry the type's hash tag).
 * Times come from Redis TIME, so hosts with skewed clocks agree on due
 * times. The text of each is sdk/lua/NAME.lua, compiled in
 * (lua_scripts.c); its header states KEYS, ARGV and the reply. */
#include "node_scripts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua_scripts.h"

const script *const node_scripts_all[] = {
    &script_begin,   &script_finish,    &script_release,
    &script_renew,   &script_heartbeat, &script_due,
    &script_promote, &script_trim_dead, NULL};

void node_scripts_check(void)
{
    for (size_t i = 0; node_scripts_all[i]; i++) {
        script s = *node_scripts_all[i];
        script_init(&s);
        if (strcmp(s.sha, node_scripts_all[i]->sha) != 0) {
            fprintf(stderr, "wharfd: script %s: built with SHA1 %s, its "
                            "text has %s\n",
                    s.name, node_scripts_all[i]->sha, s.sha);
            abort();
        }
    }
}
