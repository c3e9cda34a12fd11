/* wharf top's drawing of a worker that runs several tasks at once (a
 * worker with threads): its row shows the longest-running task, and a
 * line under it each of the others. */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "top_render.h"

static const char overview[] =
    "{\"types\":[],\"hosts\":[],\"slots\":[{\"slot\":0,\"worker\":\"h:d:0\","
    "\"pid\":42,\"state\":\"running\",\"up_ms\":60000,\"batch\":3,"
    "\"type\":\"mail\",\"task\":\"t1\",\"running_ms\":3000,\"in_flight\":3,"
    "\"running\":[{\"type\":\"mail\",\"task\":\"t1\",\"running_ms\":3000},"
    "{\"type\":\"mail\",\"task\":\"t2\",\"running_ms\":2000},"
    "{\"type\":\"hook\",\"task\":\"t3\",\"running_ms\":1000}],"
    "\"restarts\":0},{\"slot\":1,\"worker\":\"h:d:1\",\"pid\":43,"
    "\"state\":\"idle\",\"up_ms\":60000,\"batch\":0,\"in_flight\":0,"
    "\"running\":[],\"restarts\":0}]}";

Test(top, every_task_a_worker_runs_has_a_line)
{
    json_error_t error;
    json_t *o = json_loads(overview, 0, &error);
    top_frame f = {0};
    const char *row, *t2, *t3, *idle;

    cr_assert_not_null(o, "%s", error.text);
    top_render(&f, "http://127.0.0.1:9464", o);
    cr_assert_not_null(f.s);
    row = strstr(f.s, "mail t1");
    t2 = strstr(f.s, "mail t2");
    t3 = strstr(f.s, "hook t3");
    idle = strstr(f.s, "h:d:1");
    cr_assert(row && t2 && t3 && idle, "%s", f.s);
    cr_expect(row < t2 && t2 < t3 && t3 < idle,
              "the runs are not listed under their worker, in order:\n%s", f.s);
    /* Each other run is a line of its own, with how long it has run. */
    cr_expect_eq(strchr(row, '\n') < t2, true, "%s", f.s);
    cr_expect(strstr(t2, " 2s") && strstr(t2, " 2s") < strchr(t2, '\n'), "%s",
              f.s);
    free(f.s);
    json_decref(o);
}

/* rates: a type with a rate_limit or a limit_key has a line under its
 * row with them; one with neither has none. */
Test(top, a_rate_limited_type_shows_its_rate)
{
    static const char rated[] =
        "{\"types\":[{\"type\":\"api\",\"rate_limit\":\"50/s\","
        "\"rate_burst\":5,\"limit_key\":\"/customer\",\"rate_waits\":7},"
        "{\"type\":\"plain\"}],\"hosts\":[],\"slots\":[]}";
    json_error_t error;
    json_t *o = json_loads(rated, 0, &error);
    top_frame f = {0};
    const char *api, *line, *plain;

    cr_assert_not_null(o, "%s", error.text);
    top_render(&f, "http://127.0.0.1:9464", o);
    api = strstr(f.s, "\napi ");
    line = strstr(f.s, "  rate 50/s, burst 5, per /customer, 7 waited for "
                       "their turn here\n");
    plain = strstr(f.s, "\nplain ");
    cr_assert(api && line && plain, "%s", f.s);
    cr_expect(api < line && line < plain, "%s", f.s);
    cr_expect_null(strstr(plain, "  rate "), "%s", f.s);
    free(f.s);
    json_decref(o);
}
