/* Headless Chromium over the console's page, and the two things its
 * tests do with what it wrote: read a file whole and count a string in
 * it (tests/test_console.c, tests/test_history_console.c). */
#ifndef WHARF_TEST_CHROMIUM_H
#define WHARF_TEST_CHROMIUM_H

/* Runs headless Chromium on url, on a fresh profile, in a window 1400
 * wide and height tall: flag "--dump-dom" (the DOM into out) or
 * "--screenshot=" (a PNG at out); its stderr goes to out.log. Returns the
 * shell's status. */
int test_chromium(const char *flag, const char *url, const char *out,
                  int height);

/* The whole file at path, NUL-terminated (caller frees); aborts the test
 * if it cannot be read. */
char *test_read_file(const char *path);

/* How often what occurs in text, without overlaps. */
int test_count(const char *text, const char *what);

#endif /* WHARF_TEST_CHROMIUM_H */
