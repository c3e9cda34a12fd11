/* Loading a manifest (docs/manifest.md): the file opened and held to a
 * regular file of sane size, read line by line through inih
 * (config_parse.c), checked as a whole (config_check.c), and handed over
 * only when nothing was wrong. The first problem in file order is the one
 * reported. */

#include "config_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ini.h>

#include "client_ids.h"
#include "xmalloc.h"
#include "quote.h"

/* The absolute, symlink-free folder of `path`, or NULL with errno set. */
static char *folder_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir, *real;

    if (slash == NULL)
        dir = xstrdup(".");
    else if (slash == path)
        dir = xstrdup("/");
    else
        dir = xstrndup(path, (size_t)(slash - path));
    real = realpath(dir, NULL);
    free(dir);
    return real;
}

/* config_load and config_load_producer: the same parse, with or without
 * the check that each plugin file is there. */
static int load(const char *path, bool skip_plugin_files, config **out,
                char *err, size_t errlen)
{
    parser p;
    struct stat st;
    int rc = -1, bad_line;

    memset(&p, 0, sizeof p);
    p.skip_plugin_files = skip_plugin_files;
    if (path == NULL) {
        /* config_load_defaults: no file, no line. */
        p.cfg = config_new("");
        p.cfg->dir = folder_of("");
        goto parse;
    }
    quote_text(path, p.shown, sizeof p.shown);
    p.stream = fopen(path, "r");
    if (p.stream == NULL) {
        config_fail(&p, 0, "cannot open: %s", strerror(errno));
        goto done;
    }
    /* /dev/zero, a FIFO or a directory would be read without end (or fail
     * at the first line): only a regular file of sane size is a manifest. */
    if (fstat(fileno(p.stream), &st) != 0) {
        config_fail(&p, 0, "cannot stat: %s", strerror(errno));
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        config_fail(&p, 0, "not a regular file (%s)",
                    S_ISDIR(st.st_mode)    ? "a directory"
                    : S_ISCHR(st.st_mode)  ? "a character device"
                    : S_ISBLK(st.st_mode)  ? "a block device"
                    : S_ISFIFO(st.st_mode) ? "a pipe"
                    : S_ISSOCK(st.st_mode) ? "a socket"
                                           : "not a file");
        goto done;
    }
    if ((uint64_t)st.st_size > MANIFEST_MAX_BYTES) {
        config_fail(&p, 0, "larger than %s: not a manifest", MANIFEST_MAX_TEXT);
        goto done;
    }
    p.cfg = config_new(path);
    p.cfg->dir = folder_of(path);
parse:
    if (p.cfg->dir == NULL) {
        config_fail(&p, 0, "cannot resolve its folder: %s", strerror(errno));
        goto done;
    }
    bad_line = ini_parse_stream(config_read_line, &p, config_on_key, &p);
    if (bad_line == -2)
        xmalloc_oom();
    /* Our reader catches bad lines first; this is a safety net in case
     * inih refuses one we let through. */
    if (bad_line > 0)
        config_fail(&p, bad_line, "expected 'key = value' or '[section]'");
    if (!p.failed)
        config_finish(&p);
    if (!p.failed) {
        *out = p.cfg;
        p.cfg = NULL;
        rc = 0;
    }
done:
    if (p.failed && err != NULL && errlen > 0)
        snprintf(err, errlen, "%s", p.err);
    if (p.stream != NULL)
        fclose(p.stream);
    config_parser_free(&p);
    config_free(p.cfg);
    return rc;
}

int config_load(const char *path, config **out, char *err, size_t errlen)
{
    return load(path, false, out, err, errlen);
}

int config_load_producer(const char *path, config **out, char *err,
                         size_t errlen)
{
    return load(path, true, out, err, errlen);
}

int config_load_defaults(config **out, char *err, size_t errlen)
{
    int rc = load(NULL, true, out, err, errlen);

    if (rc == 0) {
        free((*out)->file);
        (*out)->file = NULL;
    }
    return rc;
}
