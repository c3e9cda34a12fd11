/* The fleet's history (docs/console.md, "History"): per type and per
 * minute, what each host counted (ok, retry, dead, cancelled) and its
 * wait and run histograms in the fixed buckets of metrics.h, kept in
 * Redis so any host's console and `wharf stats --history` see every
 * host's. One hash per type and minute, <prefix>:{T}:history:<minute>
 * (minute = Unix seconds / 60), in the type's slot; one field per host
 * process, "<hostname>:<instance>#<run>", whose value is that process's
 * whole figures for the minute as space-separated decimals (HISTORY_V1).
 * A host writes its field with HSET (a value, not an increment), so a
 * write sent twice counts once, and the key expires `history` after its
 * minute ends. This header is the format both sides share. */
#ifndef WHARF_HISTORY_H
#define WHARF_HISTORY_H

#include <stddef.h>
#include <stdint.h>

#include "metrics.h"

/* The figures of one minute, in the order of the stored value. */
enum {
    HISTORY_OK = 0,
    HISTORY_RETRY,
    HISTORY_DEAD,
    HISTORY_CANCELLED,
    HISTORY_WAIT_SUM_US,
    HISTORY_RUN_SUM_US,
    HISTORY_WAIT_BUCKETS, /* 14 of them */
    HISTORY_RUN_BUCKETS = HISTORY_WAIT_BUCKETS + METRICS_BUCKETS, /* 14 */
    HISTORY_VALUES = HISTORY_RUN_BUCKETS + METRICS_BUCKETS
};

/* The first word of a stored value: its format. */
#define HISTORY_V1 "v1"
/* A stored value's longest text: the word and 34 decimals of uint64. */
#define HISTORY_TEXT_MAX (4 + HISTORY_VALUES * 21)
/* What the key's suffix is made of: the minute's number. */
#define HISTORY_MINUTE_MS 60000

typedef struct history_figures {
    uint64_t v[HISTORY_VALUES];
} history_figures;

/* Writes the key of type's minute into buf: its length, or -1. */
int history_key(char *buf, size_t len, const char *prefix, const char *type,
                int64_t minute);

/* Writes f as a stored value into buf (HISTORY_TEXT_MAX). */
void history_format(const history_figures *f, char *buf, size_t len);

/* Reads a stored value into *out: 0, or -1 for text of another format
 * (out untouched). */
int history_parse(const char *text, size_t len, history_figures *out);

/* Adds b into a. */
void history_add(history_figures *a, const history_figures *b);

/* Whether f counts nothing (no outcome, no run). */
int history_empty(const history_figures *f);

/* The q-quantile (0 < q < 1) of the wait (wait != 0) or run histogram,
 * as the upper bound of the bucket it falls in, in microseconds; -1 when
 * it is in the last (+Inf) bucket, -2 when the histogram is empty. */
int64_t history_quantile_us(const history_figures *f, int wait, double q);

/* The host a field names: its length before the '#' (all of it when
 * there is none). */
size_t history_host_len(const char *field, size_t len);

#endif /* WHARF_HISTORY_H */
