/* GET /api/schedules (console_schedules.h): per schedule its name, type,
 * time (cron line or period), zone, last and next tick (seconds since
 * the epoch, 0: none) and, once this host fired one, how late it was.
 * The timer writes these figures (schedule_timer.c); the console only
 * reads them, so the page costs Redis nothing. */
#include "console_schedules.h"

#include <inttypes.h>
#include <stdatomic.h>

#include "clock_ms.h"
#include "console_reply.h"
#include "console_state.h"
#include "json_out.h"

void console_schedules(console *c, http_reply *reply)
{
    uint32_t n = atomic_load_explicit(&c->m->n_schedules, memory_order_acquire);
    json_out b = {0};

    if (n > METRICS_MAX_SCHEDULES)
        n = METRICS_MAX_SCHEDULES;
    json_out_printf(&b, "{\"api\":1,\"time_ms\":%" PRId64 ",\"schedules\":[",
                    clock_wall_ms());
    for (uint32_t i = 0; i < n; i++) {
        const schedule_metrics *s = &c->m->schedules[i];
        int64_t lag = atomic_load(&s->lag_ms);

        json_out_puts(&b, i ? ",{\"name\":" : "{\"name\":");
        json_out_str(&b, s->name);
        json_out_puts(&b, ",\"type\":");
        json_out_str(&b, s->type);
        json_out_puts(&b, ",\"when\":");
        json_out_str(&b, s->when);
        json_out_puts(&b, ",\"timezone\":");
        json_out_str(&b, s->zone);
        json_out_printf(&b,
                        ",\"last_tick\":%" PRId64 ",\"next_tick\":%" PRId64
                        ",\"fired\":%" PRIu64,
                        atomic_load(&s->last_tick_s),
                        atomic_load(&s->next_tick_s), atomic_load(&s->fired));
        if (lag >= 0)
            json_out_printf(&b, ",\"lag_ms\":%" PRId64, lag);
        json_out_puts(&b, "}");
    }
    json_out_puts(&b, "]}");
    console_reply_json(reply, 200, &b);
}
