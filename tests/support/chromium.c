/* Headless Chromium for the page tests; see chromium.h. */
#include "chromium.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

int test_chromium(const char *flag, const char *url, const char *out,
                  int height)
{
    bool dom = strcmp(flag, "--dump-dom") == 0;
    char cmd[2048];

    snprintf(cmd, sizeof(cmd),
             "profile=$(mktemp -d) && timeout 60 chromium --headless "
             "--no-sandbox --disable-gpu --disable-quic --no-first-run "
             "--disable-background-networking --disable-component-update "
             "--disable-sync --hide-scrollbars --user-data-dir=\"$profile\" "
             "--window-size=1400,%d --virtual-time-budget=4000 %s%s '%s' "
             "%s%s 2>%s.log; rc=$?; rm -rf \"$profile\"; exit $rc",
             height, flag, dom ? "" : out, url, dom ? ">" : "", dom ? out : "",
             out);
    return system(cmd);
}

char *test_read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    char *text;
    long n;

    cr_assert(f != NULL, "%s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    text = calloc(1, (size_t)n + 1);
    cr_assert(text && fread(text, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    return text;
}

int test_count(const char *text, const char *what)
{
    int n = 0;

    for (const char *p = text; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}
