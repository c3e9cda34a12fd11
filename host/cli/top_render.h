/* wharf top's drawing: the console's overview laid out as lines of text
 * (a frame) cut to the terminal's width, with no escapes; top_term.h puts
 * a frame on the screen. */
#ifndef WHARF_TOP_RENDER_H
#define WHARF_TOP_RENDER_H

#include <stddef.h>

#include <jansson.h>

/* Lines of text, each ending in '\n'. Start it zeroed with its width;
 * the caller frees s. */
typedef struct top_frame {
    char *s;
    size_t len, cap;
    int width; /* columns a line is cut to; 0: not cut */
} top_frame;

/* The view of GET /api/overview (docs/console.md) of the console at url:
 * a heading, the figures per type, the worker slots and the hosts. */
void top_render(top_frame *f, const char *url, const json_t *overview);

/* The one line shown while the console at url cannot be read: why. */
void top_render_unreachable(top_frame *f, const char *url, const char *why);

#endif /* WHARF_TOP_RENDER_H */
