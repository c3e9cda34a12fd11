/* wharf enqueue's per-task options: --timeout DUR, --max-attempts N,
 * --expire-in DUR and --expires RFC3339 read into a wharf_task_options
 * (docs/protocol.md). */
#ifndef WHARF_CLI_ENQUEUE_OPTIONS_H
#define WHARF_CLI_ENQUEUE_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include <wharf/client.h>

#include "cli.h"

/* The option texts given, NULL for each one not given. */
typedef struct enqueue_option_texts {
    const char *timeout, *max_attempts, *expire_in, *expires;
} enqueue_option_texts;

/* True when any of t was given. */
bool enqueue_options_given(const enqueue_option_texts *t);

/* Reads t into *out (size set, every field not given 0), now_ms being
 * the wall clock: 0, 64 for a text that is not a duration, a number or a
 * time (and --expire-in with --expires), 65 for a value out of bounds
 * (timeout 1 ms to 30 days, max_attempts 1 to 1000, an expiry in the
 * past), after saying why. */
int enqueue_options_read(cli *ctx, const enqueue_option_texts *t,
                         int64_t now_ms, wharf_task_options *out);

/* Seconds since the epoch of an RFC 3339 time "YYYY-MM-DDTHH:MM:SS",
 * optional ".fraction", then "Z" or "+HH:MM"/"-HH:MM", into *ms: 0, or -1
 * when text is not one. */
int enqueue_options_rfc3339(const char *text, int64_t *ms);

#endif /* WHARF_CLI_ENQUEUE_OPTIONS_H */
