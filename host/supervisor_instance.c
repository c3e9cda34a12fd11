/* The instance name: taken at start (waiting while another live host
 * holds it); the lease keeper refreshes it from then on (lease.h). */
#include <poll.h>
#include <sysexits.h>
#include <unistd.h>

#include "clock_ms.h"
#include "log.h"
#include "run.h"
#include "supervisor_internal.h"

/* Takes the instance name: waits, saying so, while another live host holds
 * it, up to a little longer than the key lives unrefreshed. */
int acquire_instance(supervisor *s)
{
    int64_t deadline = clock_ms() + RUN_INSTANCE_TTL_MS + 2000;
    bool said = false;

    while (!stop_requested()) {
        int64_t now = clock_ms();
        int rc = ensure_connected(s, now);
        if (rc == -2) {
            log_msg(WHARF_LOG_ERROR, "%s", s->b.errstr);
            return EX_CONFIG;
        }
        if (rc == 0) {
            int held = broker_heartbeat(&s->b, s->instance_key,
                                        s->instance_value, RUN_INSTANCE_TTL_MS);
            if (held == 1)
                return 0;
            if (held < 0) {
                lost_connection(s, "heartbeat");
            } else if (now >= deadline) {
                log_fields(WHARF_LOG_ERROR,
                           "another live wharfd holds this instance name; "
                           "give this host its own [host] instance",
                           (log_field[]){LOG_STR("key", s->instance_key)}, 1);
                return EX_CONFIG;
            } else if (!said) {
                log_fields(WHARF_LOG_WARN,
                           "instance name held by another wharfd; waiting "
                           "for its key to expire",
                           (log_field[]){LOG_STR("key", s->instance_key)}, 1);
                said = true;
            }
        }
        /* /healthz and /readyz answer while we wait. */
        if (s->http) {
            struct pollfd pfd = {http_fd(s->http), POLLIN, 0};
            poll(&pfd, 1, 200);
            http_run(s->http);
        } else {
            usleep(200 * 1000);
        }
    }
    return -1;
}
