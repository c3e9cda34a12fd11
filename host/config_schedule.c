/* The [schedule.NAME] sections (docs/manifest.md): each key checked where
 * it stands (a cron line parsed, a zone looked up in the system's tz
 * database), and what a schedule needs as a whole once the file is
 * read. */
#include "config_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "clock_ms.h"
#include "cron.h"
#include "error_set.h"
#include "xmalloc.h"
#include "zone.h"

static const char *const catch_up_names[] = {"none", "last", "all", NULL};
_Static_assert(CATCH_UP_NONE == 0 && CATCH_UP_LAST == 1 && CATCH_UP_ALL == 2,
               "catch_up_names follows catch_up_kind");

/* The keys of a [schedule.NAME] section, as the unknown-key message lists
 * them (and tests/install/check-man-pages reads them). */
static const char *const schedule_keys[] = {
    "type", "cron", "every", "timezone", "payload", "catch_up", NULL};

/* The longest `every`: a year (a longer period is a cron line). */
#define EVERY_MAX_S (366 * 86400)

void config_begin_schedule(parser *p, const char *name)
{
    config *cfg = p->cfg;
    schedule_section *s;

    if (cfg->n_schedules == CONFIG_SCHEDULES_MAX) {
        config_fail(p, p->line, "more than %d [schedule.NAME] sections",
                    CONFIG_SCHEDULES_MAX);
        return;
    }
    for (size_t i = 0; i < cfg->n_schedules; i++) {
        if (strcmp(cfg->schedules[i].name, name) == 0) {
            config_fail(p, p->line,
                        "duplicate section [schedule.%s] (first at line %d)",
                        name, cfg->schedules[i].line);
            return;
        }
    }
    cfg->schedules = xrealloc(cfg->schedules,
                              (cfg->n_schedules + 1) * sizeof(*cfg->schedules));
    s = &cfg->schedules[cfg->n_schedules];
    memset(s, 0, sizeof(*s));
    s->name = xstrdup(name);
    s->timezone = xstrdup("UTC");
    s->payload = xstrdup("");
    s->catch_up = CATCH_UP_LAST;
    s->line = p->line;
    p->index = cfg->n_schedules++;
}

static int set_every(schedule_section *s, const char *value, char *why,
                     size_t len)
{
    const char *bad = NULL;
    int64_t ms = 0;

    if (config_parse_duration_why(value, &ms, &bad) != PARSE_OK) {
        error_set(why, len, "bad value '%s' for every: %s", value,
                  bad ? bad : "too large");
        return -1;
    }
    if (ms < 1000 || ms % 1000 != 0 || ms / 1000 > EVERY_MAX_S) {
        error_set(why, len,
                  "every = %s: expected whole seconds from 1s to 366d "
                  "(ticks are whole seconds)",
                  value);
        return -1;
    }
    s->every_s = ms / 1000;
    return 0;
}

int config_set_schedule_key(config *cfg, size_t index, int line,
                            const char *name, const char *value, char *why,
                            size_t len)
{
    schedule_section *s = &cfg->schedules[index];
    char reason[256];
    cron_line parsed;

    if (*value == '\0' && strcmp(name, "payload") != 0) {
        error_set(why, len, "%s has no value", name);
        return -1;
    }
    if (strcmp(name, "type") == 0) {
        if (!config_valid_type_name(value)) {
            error_set(why, len, "bad type name '%s' for type: " NAME_RULE,
                      value);
            return -1;
        }
        config_store_string(&s->type, value);
    } else if (strcmp(name, "cron") == 0 || strcmp(name, "every") == 0) {
        if (s->cron_line != 0) {
            error_set(why, len,
                      "[schedule.%s] has both cron and every (line %d): give "
                      "one",
                      s->name, s->cron_line);
            return -1;
        }
        if (name[0] == 'c') {
            int64_t next;

            if (cron_parse(value, &parsed, reason, sizeof(reason)) != 0) {
                error_set(why, len, "bad cron '%s': %s", value, reason);
                return -1;
            }
            /* Which days exist does not hang on the zone: UTC will do. */
            if (cron_next(&parsed, "UTC", clock_wall_ms() / 1000, &next) !=
                0) {
                error_set(why, len,
                          "cron '%s' never fires (no such day in 30 years)",
                          value);
                return -1;
            }
            config_store_string(&s->cron, value);
        } else if (set_every(s, value, why, len) != 0) {
            return -1;
        }
        s->cron_line = line;
    } else if (strcmp(name, "timezone") == 0) {
        if (zone_check(value, reason, sizeof(reason)) != 0) {
            error_set(why, len, "bad timezone '%s': %s", value, reason);
            return -1;
        }
        config_store_string(&s->timezone, value);
        s->timezone_line = line;
    } else if (strcmp(name, "payload") == 0) {
        config_store_string(&s->payload, value);
    } else if (strcmp(name, "catch_up") == 0) {
        for (size_t i = 0; catch_up_names[i] != NULL; i++) {
            if (strcasecmp(value, catch_up_names[i]) == 0) {
                s->catch_up = (catch_up_kind)i;
                return 0;
            }
        }
        error_set(why, len,
                  "bad value '%s' for catch_up: expected none, last or all",
                  value);
        return -1;
    } else {
        char expected[128];

        config_format_choices(expected, sizeof(expected), schedule_keys);
        error_set(why, len, "unknown key '%s' in [schedule.%s] (expected %s)",
                  name, s->name, expected);
        return -1;
    }
    return 0;
}

void config_check_schedules(parser *p)
{
    const config *cfg = p->cfg;

    for (size_t i = 0; i < cfg->n_schedules; i++) {
        const schedule_section *s = &cfg->schedules[i];

        if (s->type == NULL)
            config_fail(p, s->line,
                        "[schedule.%s] needs type (the type of the tasks it "
                        "enqueues)",
                        s->name);
        else if (s->cron_line == 0)
            config_fail(p, s->line,
                        "[schedule.%s] needs cron (e.g. cron = 0 3 * * *) or "
                        "every (e.g. every = 30s)",
                        s->name);
        else if (s->every_s != 0 && s->timezone_line != 0)
            config_fail(p, s->timezone_line,
                        "timezone has no effect with every (its ticks are "
                        "the same instants in every zone): remove it, or "
                        "use cron");
    }
}

void config_free_schedules(config *cfg)
{
    for (size_t i = 0; i < cfg->n_schedules; i++) {
        free(cfg->schedules[i].name);
        free(cfg->schedules[i].type);
        free(cfg->schedules[i].cron);
        free(cfg->schedules[i].timezone);
        free(cfg->schedules[i].payload);
    }
    free(cfg->schedules);
    cfg->schedules = NULL;
    cfg->n_schedules = 0;
}
