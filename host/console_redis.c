/* The console's own Redis connection, and the budget its waits share in
 * one pass of the loop (console_redis.h: CONSOLE_PASS_BUDGET_MS, enforced
 * as the socket timeout of each wait; CONSOLE_PASS_BUSY_MS, past which a
 * request is told to come back). Every command the console sends goes
 * through here. */
#include "console_redis.h"

#include <sys/time.h>

#include "clock_ms.h"
#include "console_reply.h"
#include "log.h"
#include "redis_url.h"
#include "xmalloc.h"

/* Retry a lost console connection no sooner than this. */
#define RECONNECT_EVERY_MS 2000

/* What is left of this pass's budget, in microseconds (0 when none). */
static int64_t budget_left_us(const console *c)
{
    int64_t left = (int64_t)CONSOLE_PASS_BUDGET_MS * 1000 - c->spent_us;
    return left > 0 ? left : 0;
}

/* Says once, until Redis answers again, that the console lost it. */
static void say_down(console *c, const char *what, const char *why)
{
    if (c->said_down)
        return;
    log_fields(WHARF_LOG_WARN, what, (log_field[]){LOG_STR("error", why)}, 1);
    c->said_down = true;
}

/* Connecting and its first command each wait at most half of what is
 * left of the budget. */
pipeline *console_connection(console *c)
{
    int64_t now = clock_ms(), start = clock_us();
    int timeout_ms = (int)(budget_left_us(c) / 2000);
    redis_url url;
    char err[512];

    if (c->nodes_ready)
        pipeline_reset(&c->pipe);
    if (nodes_up(&c->nodes))
        return &c->pipe;
    if (now < c->retry_at_ms || timeout_ms < 1)
        return NULL;
    c->retry_at_ms = now + RECONNECT_EVERY_MS;
    if (!c->nodes_ready) {
        if (redis_url_parse(c->redis_url, &url, err, sizeof(err)) != 0)
            return NULL;
        nodes_init(&c->nodes, &url, c->v.cfg->redis_password, timeout_ms);
        pipeline_init(&c->pipe, &c->nodes);
        c->nodes_ready = true;
    }
    c->nodes.timeout_ms = timeout_ms;
    if (nodes_connect(&c->nodes) != 0) {
        c->spent_us += clock_us() - start;
        say_down(c, "console: redis unreachable", c->nodes.errstr);
        return NULL;
    }
    c->spent_us += clock_us() - start;
    return &c->pipe;
}

/* Drops the connections after an error or a wait that outran the budget
 * (the next use connects again, no sooner than RECONNECT_EVERY_MS). */
static void lost(console *c, const char *why)
{
    if (nodes_up(&c->nodes)) {
        say_down(c, "console: redis command failed", why);
        nodes_disconnect(&c->nodes);
        c->retry_at_ms = clock_ms() + RECONNECT_EVERY_MS;
    }
}

/* Every node's waits within what is left of the budget. */
int console_run_pipe(console *c)
{
    int64_t left = budget_left_us(c), start = clock_us();
    struct timeval tv = {(time_t)(left / 1000000),
                         (suseconds_t)(left % 1000000)};
    int rc;

    if (left == 0) {
        lost(c, "the console's time for redis in this turn of the loop "
                "ran out");
        return -1;
    }
    for (size_t i = 0; i < c->nodes.n; i++)
        if (c->nodes.list[i].redis &&
            redisSetTimeout(c->nodes.list[i].redis, tv) != REDIS_OK) {
            lost(c, "cannot set the timeout");
            return -1;
        }
    c->nodes.timeout_ms = left / 1000 > 0 ? (int)(left / 1000) : 1;
    rc = pipeline_run(&c->pipe);
    c->spent_us += clock_us() - start;
    if (rc != 0) {
        lost(c, c->pipe.errstr[0] ? c->pipe.errstr : "no reply");
        return -1;
    }
    c->said_down = false;
    return 0;
}

int console_read_replies(console *c, redisReply **r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        r[i] = NULL;
    if (c->pipe.n != n || console_run_pipe(c) != 0) {
        pipeline_reset(&c->pipe);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        r[i] = pipeline_take(&c->pipe, i);
    pipeline_reset(&c->pipe);
    return 0;
}

void console_free_replies(redisReply **r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        freeReplyObject(r[i]);
}

/* The pipeline loads s where a node has forgotten it. */
redisReply *console_run_script(console *c, const script *s, command *cmd)
{
    redisReply *r = NULL;

    pipeline_reset(&c->pipe);
    /* A call the typed functions built fails to add only when the core
     * ran out of memory (it reports; the host aborts, xmalloc.h). */
    if (pipeline_add_command(&c->pipe, -1, cmd, s) != 0)
        xmalloc_oom();
    if (console_read_replies(c, &r, 1) != 0)
        return NULL;
    return r;
}

/* NULL while Redis is away, or once this pass has spent
 * CONSOLE_PASS_BUSY_MS of its budget (Redis is slow, and the loop's own
 * work comes first). */
pipeline *console_redis_for(console *c, http_reply *reply)
{
    if (c->spent_us >= (int64_t)CONSOLE_PASS_BUSY_MS * 1000) {
        console_unavailable(reply, "1",
                            "redis is slow: the console waits for it only "
                            "so long in each turn of the host's loop; try "
                            "again in a second");
        return NULL;
    }
    if (!console_connection(c)) {
        console_unavailable(reply, "2", "redis unreachable");
        return NULL;
    }
    return &c->pipe;
}
