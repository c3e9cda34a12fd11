/* "Did you mean": the hints of a message about a key or a section the
 * manifest does not know, from the edit distance to the ones it does
 * (config.c's tables). */

#include "config_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xmalloc.h"

/* Edit distance with adjacent transpositions, or a large number when a
 * string is too long to bother. */
static size_t edit_distance(const char *a, const char *b)
{
    enum { LONGEST = 40 };
    size_t la = strlen(a), lb = strlen(b);
    size_t rows[3][LONGEST + 1];
    size_t *before = rows[0], *prev = rows[1], *cur = rows[2];

    if (la > LONGEST || lb > LONGEST)
        return SIZE_MAX;
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t *spare = before;

        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = a[i - 1] != b[j - 1];
            size_t best = prev[j - 1] + cost;

            if (prev[j] + 1 < best)
                best = prev[j] + 1;
            if (cur[j - 1] + 1 < best)
                best = cur[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
                a[i - 2] == b[j - 1] && before[j - 2] + 1 < best)
                best = before[j - 2] + 1;
            cur[j] = best;
        }
        before = prev;
        prev = cur;
        cur = spare;
    }
    return prev[lb];
}

static bool looks_like(const char *typed, const char *known)
{
    size_t d = edit_distance(typed, known);

    return d <= 2 && d * 3 <= strlen(known);
}

/* Keys easily put in the wrong section because another section has a
 * key of a like meaning: the hint says where each belongs and how they
 * differ, which "it belongs in" alone would not. */
static const struct {
    const char *name;
    section_kind typed_in;
    const char *hint;
} misplaced[] = {
    {"threads", SECTION_DEFAULTS,
     " (it belongs in [host] or [plugin.NAME]; a type's cap in one worker "
     "is concurrency)"},
    {"concurrency", SECTION_HOST,
     " (it belongs in [defaults] or [type.NAME]: the most tasks of a type at "
     "once in one worker, where concurrency_limit caps them across every "
     "host; a worker's threads are [host] threads)"},
};

void config_unknown_key_hint(const char *name, section_kind section, char *hint,
                             size_t len)
{
    hint[0] = '\0';
    for (size_t i = 0; i < sizeof misplaced / sizeof misplaced[0]; i++) {
        if (misplaced[i].typed_in == section &&
            strcmp(misplaced[i].name, name) == 0) {
            snprintf(hint, len, "%s", misplaced[i].hint);
            return;
        }
    }
    for (const key_spec *k = config_keys_of(section); k->name != NULL; k++) {
        if (k->section == section && looks_like(name, k->name)) {
            snprintf(hint, len, " (did you mean '%s'?)", k->name);
            return;
        }
    }
    for (const fixed_section *s = config_fixed_sections; s->name != NULL; s++) {
        if (s->kind == section || config_find_key(s->kind, name) == NULL)
            continue;
        if (s->kind == SECTION_DEFAULTS)
            snprintf(hint, len, " (it belongs in [defaults] or [type.NAME])");
        else
            snprintf(hint, len, " (it belongs in [%s])", s->name);
        return;
    }
}

void config_unknown_section_hint(const char *name, char *hint, size_t len)
{
    const char *dot = strchr(name, '.');

    hint[0] = '\0';
    if (strcmp(name, "plugin") == 0 || strcmp(name, "type") == 0 ||
        strcmp(name, "schedule") == 0) {
        snprintf(hint, len, " (expected [%s.NAME])", name);
        return;
    }
    for (const fixed_section *s = config_fixed_sections; s->name != NULL; s++)
        if (looks_like(name, s->name))
            snprintf(hint, len, " (did you mean [%s]?)", s->name);
    if (dot != NULL && hint[0] == '\0') {
        char *head = xstrndup(name, (size_t)(dot - name));

        static const char *const kinds[] = {"plugin", "type", "schedule",
                                            NULL};

        for (size_t i = 0; kinds[i] != NULL && hint[0] == '\0'; i++)
            if (looks_like(head, kinds[i]))
                snprintf(hint, len, " (did you mean [%s%s]?)", kinds[i], dot);
        free(head);
    }
}
