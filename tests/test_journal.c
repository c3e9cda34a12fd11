/* host/log.c under systemd: when stderr is the journal ($JOURNAL_STREAM
 * names its device:inode) each line carries its syslog priority prefix
 * and the text format drops the timestamp journald adds itself. */
#include <criterion/criterion.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <wharf/plugin.h>

#include "log.h"

static char path[] = "/tmp/wharf-journal-XXXXXX";

/* Points stderr at a fresh file; with `journal`, JOURNAL_STREAM names it. */
static void capture(int journal)
{
    struct stat st;
    char value[64];
    int fd = mkstemp(path);

    cr_assert_geq(fd, 0);
    cr_assert_eq(dup2(fd, STDERR_FILENO), STDERR_FILENO);
    close(fd);
    cr_assert_eq(fstat(STDERR_FILENO, &st), 0);
    snprintf(value, sizeof(value), "%llu:%llu",
             (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
    if (journal)
        setenv("JOURNAL_STREAM", value, 1);
    else
        setenv("JOURNAL_STREAM", "1:2", 1); /* another stream's */
}

static char *captured(void)
{
    static char buf[4096];
    FILE *f = fopen(path, "r");
    size_t n;

    cr_assert_not_null(f);
    n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    unlink(path);
    return buf;
}

Test(journal, text_lines_carry_priority_and_no_timestamp)
{
    char *out;

    capture(1);
    log_setup(WHARF_LOG_DEBUG, LOG_FORMAT_TEXT);
    log_msg(WHARF_LOG_ERROR, "boom");
    log_msg(WHARF_LOG_WARN, "careful");
    log_fields(WHARF_LOG_INFO, "started", (log_field[]){LOG_INT("workers", 2)},
               1);
    log_msg(WHARF_LOG_DEBUG, "detail");
    out = captured();
    cr_assert_str_eq(out, "<3>error boom\n<4>warn careful\n"
                          "<6>info started workers=2\n<7>debug detail\n");
}

Test(journal, json_lines_keep_ts_behind_the_priority)
{
    char *out;

    capture(1);
    log_setup(WHARF_LOG_INFO, LOG_FORMAT_JSON);
    log_msg(WHARF_LOG_INFO, "hello");
    out = captured();
    cr_assert_eq(strncmp(out, "<6>{\"ts\":\"", 10), 0, "got %s", out);
    cr_assert_not_null(strstr(out, "\"level\":\"info\",\"msg\":\"hello\"}\n"));
}

/* A JSON log line writes strings as every JSON of the host does
 * (json_out_piece): UTF-8 as it is (once escaped byte by byte, so "é"
 * read back as "Ã©"), a byte that is not UTF-8 as the text \xNN; but
 * < > & ' as they are (a log is grepped, not shown as a page). */
Test(journal, json_lines_keep_utf8_and_show_bad_bytes)
{
    char *out;

    capture(0);
    log_setup(WHARF_LOG_INFO, LOG_FORMAT_JSON);
    log_msg(WHARF_LOG_INFO, "caf\xc3\xa9 \"q\" <it's> bad\xff\tend\nnext");
    out = captured();
    cr_assert_not_null(strstr(out, "\"msg\":\"caf\xc3\xa9 \\\"q\\\" <it's> "
                                   "bad\\\\xff\\tend\\nnext\"}\n"),
                       "got %s", out);
}

Test(journal, another_stream_is_not_the_journal)
{
    char *out;

    capture(0);
    log_setup(WHARF_LOG_INFO, LOG_FORMAT_TEXT);
    log_msg(WHARF_LOG_INFO, "plain");
    out = captured();
    cr_assert_neq(out[0], '<');
    /* 2024-01-31T12:00:00.000Z info plain */
    cr_assert_eq(out[4], '-', "starts with a timestamp: %s", out);
    cr_assert_not_null(strstr(out, "Z info plain\n"));
}
