/* wharf top's terminal: the signals that end or wake it, raw keys, its
 * own screen (given back on Ctrl-Z and at the end), the size, and a
 * frame drawn in place. */
#ifndef WHARF_TOP_TERM_H
#define WHARF_TOP_TERM_H

#include <signal.h>
#include <stdbool.h>

#include "top_render.h"

/* Set when top is to end: SIGINT, SIGTERM, SIGHUP, or q typed. */
extern volatile sig_atomic_t top_stop;

/* Catches SIGINT, SIGTERM and SIGHUP (they set top_stop) and SIGWINCH
 * (it only wakes a wait, so the next frame fits the new size); none
 * restarts a wait. */
void top_term_catch_signals(void);

/* Takes the terminal for the live view: stdin's keys one by one without
 * echo when it is a terminal, the own screen without a cursor, and Ctrl-Z
 * handled. True if keys can be read. top_term_leave undoes it. */
bool top_term_enter(void);
void top_term_leave(void);

/* The terminal's columns and rows, or 0 and 0. */
void top_term_size(int *cols, int *rows);

/* Draws f over the screen from its top-left corner, in place: each line
 * then clear to its end, nothing below kept, then a blank line and the
 * footer. Within rows lines (0: as many as f has): the frame is cut to
 * fit, the footer says so, and no newline follows the bottom row, so
 * the screen never scrolls. */
void top_term_draw(const top_frame *f, int cols, int rows, const char *footer);

/* Waits ms, or less when a signal comes or a key is typed (read only
 * while *keys): q, Q or Ctrl-C sets top_stop. A terminal that hung up
 * clears *keys. */
void top_term_wait(bool *keys, int ms);

#endif /* WHARF_TOP_TERM_H */
