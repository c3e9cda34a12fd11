/* The stored form of the fleet's history and its arithmetic; see
 * history.h. */
#include "history.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"

int history_key(char *buf, size_t len, const char *prefix, const char *type,
                int64_t minute)
{
    char id[24];

    snprintf(id, sizeof(id), "%" PRId64, minute);
    return key_of_task(buf, len, prefix, type, "history", id);
}

void history_format(const history_figures *f, char *buf, size_t len)
{
    size_t at = (size_t)snprintf(buf, len, "%s", HISTORY_V1);

    for (size_t i = 0; i < HISTORY_VALUES && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, " %" PRIu64, f->v[i]);
}

int history_parse(const char *text, size_t len, history_figures *out)
{
    char buf[HISTORY_TEXT_MAX + 1];
    history_figures f;
    char *at, *end;

    /* A value longer than the format allows is not ours. */
    if (len > HISTORY_TEXT_MAX)
        return -1;
    memcpy(buf, text, len);
    buf[len] = '\0';
    if (strncmp(buf, HISTORY_V1 " ", sizeof(HISTORY_V1)) != 0)
        return -1;
    at = buf + sizeof(HISTORY_V1);
    for (size_t i = 0; i < HISTORY_VALUES; i++) {
        if (*at < '0' || *at > '9')
            return -1;
        f.v[i] = strtoull(at, &end, 10);
        if (*end != (i + 1 < HISTORY_VALUES ? ' ' : '\0'))
            return -1;
        at = end + (*end == ' ');
    }
    *out = f;
    return 0;
}

void history_add(history_figures *a, const history_figures *b)
{
    for (size_t i = 0; i < HISTORY_VALUES; i++)
        a->v[i] += b->v[i];
}

int history_empty(const history_figures *f)
{
    for (size_t i = 0; i < HISTORY_VALUES; i++)
        if (f->v[i] != 0)
            return 0;
    return 1;
}

int64_t history_quantile_us(const history_figures *f, int wait, double q)
{
    const uint64_t *b =
        &f->v[wait ? HISTORY_WAIT_BUCKETS : HISTORY_RUN_BUCKETS];
    uint64_t count = 0, seen = 0;
    double want;

    for (size_t i = 0; i < METRICS_BUCKETS; i++)
        count += b[i];
    if (count == 0)
        return -2;
    /* The rank of the quantile, as Prometheus's histogram_quantile counts
     * it, but answered by the bucket's bound (a summary, not a guess). */
    want = q * (double)count;
    for (size_t i = 0; i < METRICS_BUCKETS; i++) {
        seen += b[i];
        if ((double)seen >= want && b[i] > 0)
            return metrics_bucket_bound_us(i);
    }
    return -1;
}

size_t history_host_len(const char *field, size_t len)
{
    const char *hash = memchr(field, '#', len);

    return hash ? (size_t)(hash - field) : len;
}
