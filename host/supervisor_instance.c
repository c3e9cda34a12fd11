/* The host's name in Redis, in one place: the instance key (taken at
 * start, waiting while another live host holds it; the lease keeper
 * refreshes it from then on, lease.h; released at a stop) and the host's
 * presence (presence.h), published every PRESENCE_EVERY_MS on the
 * supervisor's own connection whether or not the console runs, and
 * withdrawn at a stop. */
#include <poll.h>
#include <stdio.h>
#include <sysexits.h>
#include <unistd.h>

#include "clock_ms.h"
#include "log.h"
#include "presence.h"
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

/* What this host says of itself in its presence. */
static presence_self self_of(supervisor *s)
{
    return (presence_self){
        .prefix = s->cfg->prefix,
        .name = s->name,
        .types = (const char *const *)s->types,
        .n_types = s->b.n_queues,
        .workers = s->n_procs,
        .busy = count_workers(s).running,
        .started_ms = s->started_wall_ms,
        .now_ms = clock_wall_ms(),
    };
}

/* presence's round trips, on the supervisor's connection. */
static int run_on_broker(void *arg, pipeline *p)
{
    supervisor *s = arg;

    if (pipeline_run(p) != 0) {
        snprintf(s->b.errstr, sizeof(s->b.errstr), "presence: %s", p->errstr);
        s->b.redis_errors++;
        return -1;
    }
    return 0;
}

void publish_presence(supervisor *s, int64_t now)
{
    presence_self self;

    if (now - s->presence_ms < PRESENCE_EVERY_MS ||
        ensure_connected(s, now) != 0)
        return;
    s->presence_ms = now;
    self = self_of(s);
    if (presence_publish(&self, &s->b.pipe, run_on_broker, s) != 0)
        lost_connection(s, "publishing this host's presence");
}

void release_instance(supervisor *s)
{
    presence_self self;

    broker_release_key(&s->b, s->instance_key, s->instance_value);
    if (!broker_connected(&s->b))
        return;
    /* This host leaves the lists at once (best effort: its keys expire
     * anyway). */
    self = self_of(s);
    presence_withdraw(&self, &s->b.pipe, run_on_broker, s);
}
