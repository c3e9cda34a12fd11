/* The outside programs some tests drive (Chromium, tmux, node, promtool).
 * scripts/bootstrap installs every one of them, and `make test` runs it
 * before it builds anything (it stops there if one cannot be installed),
 * so a missing tool fails its test: never a skip, which a run would count
 * as a pass of something that was never checked. */
#ifndef WHARF_TEST_TOOLS_H
#define WHARF_TEST_TOOLS_H

/* Fails the test, naming the missing ones and bootstrap, unless every
 * program of tools (NULL-terminated) is on PATH. */
void test_need_tools(const char *const *tools);

#endif /* WHARF_TEST_TOOLS_H */
