/* Fixture: a thread-safe plugin whose calls wait for each other. Payload
 * "meet:K": the call returns only once K calls are under way at the same
 * time (then all K return), so a run of it that ends ok proves K calls ran
 * at once, with no clock in the proof; a call whose deadline passes first
 * is a retry that says how many it met. A call whose task changed while
 * it waited (another call's written into it) fails. The result is the
 * task id. Payload "hang": never returns, deaf to its deadline, as a
 * stuck call is. Any other payload: ok at once, the same result. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <wharf/plugin.h>

typedef struct meeting {
    pthread_mutex_t lock;
    pthread_cond_t met;
    long waiting;      /* calls of this round under way */
    unsigned long round; /* rounds met so far */
} meeting;

static int init(wharf_ctx *ctx, void **state)
{
    meeting *m = calloc(1, sizeof(*m));
    pthread_condattr_t attr;

    if (m == NULL) {
        wharf_error(ctx, "meet: out of memory");
        return 1;
    }
    pthread_mutex_init(&m->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&m->met, &attr);
    pthread_condattr_destroy(&attr);
    *state = m;
    return 0;
}

static void fini(wharf_ctx *ctx, void *state)
{
    meeting *m = state;

    (void)ctx;
    pthread_cond_destroy(&m->met);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

/* Waits until `want` calls are under way, or the deadline passes: 0 or
 * the number met when it did. */
static long meet(wharf_ctx *ctx, meeting *m, long want)
{
    int64_t left = wharf_deadline_ms(ctx);
    struct timespec until;
    unsigned long round;
    long met = 0;

    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (time_t)(left / 1000);
    until.tv_nsec += (long)(left % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&m->lock);
    round = m->round;
    if (++m->waiting >= want) {
        m->waiting = 0;
        m->round++;
        pthread_cond_broadcast(&m->met);
    }
    while (m->round == round) {
        if (pthread_cond_timedwait(&m->met, &m->lock, &until) == ETIMEDOUT &&
            m->round == round) {
            met = m->waiting--;
            break;
        }
    }
    pthread_mutex_unlock(&m->lock);
    return met;
}

static wharf_status process_business(wharf_ctx *ctx, const wharf_task *task)
{
    meeting *m = wharf_state(ctx);
    char payload[32], id[256];
    long want, met;

    snprintf(id, sizeof(id), "%s", task->id);
    if (task->payload_len == 4 && memcmp(task->payload, "hang", 4) == 0)
        for (;;)
            pause();
    if (task->payload_len > 5 && task->payload_len < sizeof(payload) &&
        memcmp(task->payload, "meet:", 5) == 0) {
        memcpy(payload, task->payload, task->payload_len);
        payload[task->payload_len] = '\0';
        want = atol(payload + 5);
        if (want > 1 && (met = meet(ctx, m, want)) != 0) {
            wharf_error(ctx, "meet: %ld of %ld calls at once", met, want);
            return WHARF_RETRY;
        }
    }
    if (strcmp(id, task->id) != 0) {
        wharf_error(ctx, "meet: task %s became %s while it waited", id,
                    task->id);
        return WHARF_FAIL;
    }
    if (wharf_result(ctx, task->id, strlen(task->id)) != 0) {
        wharf_error(ctx, "meet: result refused");
        return WHARF_FAIL;
    }
    return WHARF_OK;
}

static const char *const types[] = {"meet", NULL};

WHARF_PLUGIN(.name = "meet", .version = "1.0.0", .types = types,
             .init = init, .fini = fini, .process_business = process_business,
             .thread_safe = 1);
