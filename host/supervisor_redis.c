/* The supervisor's own Redis connection: made for the current types
 * (again at a reload), connected when due with capped backoff, dropped
 * after a failed command, and its round trips counted. What runs on it
 * is the business of the files above (supervisor_maint.c,
 * supervisor_instance.c, supervisor_recovery.c). */

#include <stdlib.h>

#include "backoff.h"
#include "log.h"
#include "run.h"
#include "supervisor_internal.h"
#include "xmalloc.h"

/* Adds the supervisor's own round trips and Redis errors to the shared
 * counters. */
void count_redis(supervisor *s)
{
    metrics_add(s->m, &s->m->round_trips,
                broker_round_trips(&s->b) - s->counted_round_trips);
    metrics_add(s->m, &s->m->redis_errors,
                s->b.redis_errors - s->counted_errors);
    s->counted_round_trips = broker_round_trips(&s->b);
    s->counted_errors = s->b.redis_errors;
}

/* (Re)initializes the broker for the current types and policies. */
int setup_broker(supervisor *s)
{
    const policy **policies;

    count_redis(s);
    broker_destroy(&s->b);
    known_types_free(&s->known); /* their figures follow the old types' */
    s->counted_round_trips = 0;
    s->counted_errors = 0;
    s->b_ready = false;
    policies = xcalloc(s->n_types + 1, sizeof(*policies));
    for (size_t i = 0; i < s->n_types; i++)
        policies[i] = config_policy(s->cfg, s->types[i]);
    /* The counters exist before the keeper or any worker that adds to
     * them uses them. */
    for (size_t i = 0; i < s->n_types; i++)
        if (metrics_type_add(s->m, s->types[i]) < 0)
            log_fields(WHARF_LOG_WARN,
                       "too many types to count; this one "
                       "has no metrics",
                       (log_field[]){LOG_STR("type", s->types[i])}, 1);
    /* The keeper serves the new manifest before the old one is freed. */
    if (s->keeper)
        lease_keeper_configure(s->keeper, s->cfg, (const char *const *)s->types,
                               policies, s->n_types);
    free(s->policies);
    s->policies = policies;
    if (broker_init(&s->b, s->cfg, (const char *const *)s->types, policies,
                    s->n_types, s->consumer) != 0) {
        log_msg(WHARF_LOG_ERROR, "%s", s->b.errstr);
        return -1;
    }
    s->b.timeout_ms = RUN_SUPERVISOR_REDIS_TIMEOUT_MS;
    free(s->figures);
    /* Only /metrics shows the unserved types, after the served ones in
     * the same array; [metrics] listen holds across reloads. */
    s->figures =
        xcalloc(s->n_types + 1 + (s->cfg->metrics_listen ? KNOWN_TYPES_MAX : 0),
                sizeof(*s->figures));
    s->figures_ok = false;
    s->b_ready = true;
    return 0;
}

/* Connects when due; logs each change of state once. -2 when Redis
 * refuses what retrying cannot fix. */
int ensure_connected(supervisor *s, int64_t now)
{
    int rc;

    if (broker_connected(&s->b))
        return 0;
    if (!s->b_ready || now < s->reconnect_at_ms)
        return -1;
    rc = broker_connect(&s->b);
    if (rc == 0) {
        if (s->redis_down_logged)
            log_msg(WHARF_LOG_INFO, "supervisor: redis reachable again");
        s->redis_down_logged = false;
        s->reconnect_delay_ms = 0;
        return 0;
    }
    if (rc == -2)
        return -2;
    if (!s->redis_down_logged) {
        log_fields(WHARF_LOG_WARN, "supervisor: redis unreachable; retrying",
                   (log_field[]){LOG_STR("error", s->b.errstr)}, 1);
        s->redis_down_logged = true;
    }
    s->reconnect_delay_ms =
        s->reconnect_delay_ms == 0 ? 100 : s->reconnect_delay_ms * 2;
    if (s->reconnect_delay_ms > RECONNECT_MAX_MS)
        s->reconnect_delay_ms = RECONNECT_MAX_MS;
    s->reconnect_at_ms =
        now + (int64_t)(s->reconnect_delay_ms * (0.5 + backoff_random_unit()));
    return -1;
}

void lost_connection(supervisor *s, const char *what)
{
    log_fields(
        WHARF_LOG_WARN, "supervisor: redis command failed",
        (log_field[]){LOG_STR("during", what), LOG_STR("error", s->b.errstr)},
        2);
    broker_disconnect(&s->b);
}
