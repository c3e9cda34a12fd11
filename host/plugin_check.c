/* The plugin check in a child process; see check.h. The child writes one
 * line a type ("T <type>") or one error line ("E <reason>") and exits. */
#define _GNU_SOURCE /* pipe2 */
#include "plugin_check.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <unistd.h>

#include "child.h"
#include "clock_ms.h"
#include "loader.h"
#include "slots.h"
#include "xmalloc.h"

/* The most a child may report: far above any real list of types. */
#define CHECK_REPORT_MAX (1 << 20)

/* In the child: loads, inits and finis the plugins; reports on fd 3. */
static void check_child(const config *cfg)
{
    char line[CONFIG_ERR_LEN + 4];
    loader *ld = NULL;
    FILE *out;

    child_block_stops();
    out = fdopen(3, "w");
    if (!out)
        _exit(EX_OSERR);
    if (loader_open(cfg, &ld, line, sizeof(line)) == 0)
        ld->phase = WHARF_PHASE_CHECK;
    if (!ld || loader_init(ld, line, sizeof(line)) != 0) {
        fprintf(out, "E %s\n", line);
        fclose(out);
        _exit(EX_CONFIG);
    }
    loader_fini(ld);
    for (size_t i = 0; i < ld->n_routes; i++)
        fprintf(out, "T %s\n", ld->routes[i].type);
    if (fclose(out) != 0)
        _exit(EX_IOERR);
    loader_close(ld);
    _exit(EX_OK);
}

int plugin_check_start(plugin_check *c, const config *cfg, int64_t timeout_ms,
                       char *err, size_t errlen)
{
    int fds[2];
    pid_t pid;

    memset(c, 0, sizeof(*c));
    c->fd = -1;
    if (pipe2(fds, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "checking plugins: pipe: %s", strerror(errno));
        return -1;
    }
    pid = child_fork(fds[1]);
    if (pid < 0) {
        snprintf(err, errlen, "checking plugins: fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0)
        check_child(cfg); /* never returns */
    close(fds[1]);
    if (fcntl(fds[0], F_SETFL, O_NONBLOCK) != 0) {
        /* reads then block until the child writes or exits: still bounded
         * by the poll before each one */
    }
    c->pid = pid;
    c->fd = fds[0];
    c->timeout_ms = timeout_ms;
    c->deadline_ms = clock_ms() + timeout_ms;
    c->running = true;
    return 0;
}

/* Reads what is there. False once the child closed its end. */
static bool read_report(plugin_check *c)
{
    while (true) {
        ssize_t n;
        if (c->len + 4096 > c->cap) {
            size_t cap = c->cap ? c->cap * 2 : 8192;
            if (cap > CHECK_REPORT_MAX)
                return false; /* too much to be a report: stop reading */
            c->buf = xrealloc(c->buf, cap);
            c->cap = cap;
        }
        n = read(c->fd, c->buf + c->len, c->cap - c->len - 1);
        if (n > 0) {
            c->len += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
}

bool plugin_check_reaped(plugin_check *c, pid_t pid, int status)
{
    if (c->pid <= 0 || pid != c->pid)
        return false;
    c->status = status;
    c->pid = 0;
    return true;
}

bool plugin_check_step(plugin_check *c, int64_t now_ms)
{
    int status;

    if (!c->running)
        return true;
    if (c->fd >= 0 && !read_report(c)) {
        close(c->fd);
        c->fd = -1;
    }
    if (c->pid > 0 && waitpid(c->pid, &status, WNOHANG) == c->pid)
        plugin_check_reaped(c, c->pid, status);
    if (c->fd < 0 && c->pid == 0)
        return true;
    if (now_ms >= c->deadline_ms) {
        if (c->pid > 0) {
            kill(c->pid, SIGKILL);
            while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR)
                ;
            c->pid = 0;
        }
        c->status = -1; /* timed out */
        if (c->fd >= 0) {
            close(c->fd);
            c->fd = -1;
        }
        return true;
    }
    return false;
}

void plugin_check_free_types(char **types)
{
    for (size_t i = 0; types && types[i]; i++)
        free(types[i]);
    free(types);
}

/* Turns the "T <type>" lines of the report into a types array. */
static char **parse_types(char *report, size_t *count)
{
    char **types = xcalloc(1, sizeof(*types));
    char *save = NULL;

    *count = 0;
    for (char *line = strtok_r(report, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "T ", 2) != 0)
            continue;
        types = xrealloc(types, (*count + 2) * sizeof(*types));
        types[*count] = xstrdup(line + 2);
        types[*count + 1] = NULL;
        (*count)++;
    }
    return types;
}

int plugin_check_result(plugin_check *c, const config *cfg, char ***types_out,
                        size_t *n_out, char *err, size_t errlen)
{
    char **types = NULL;
    size_t count = 0;
    int rc = -1;

    c->running = false;
    if (c->buf)
        c->buf[c->len] = '\0';
    if (c->status == -1) {
        snprintf(err, errlen,
                 "checking plugins: not done after %" PRId64
                 " ms (a plugin's init hangs?); the check process was "
                 "killed ([host] init_timeout)",
                 c->timeout_ms);
    } else if (c->buf && strncmp(c->buf, "E ", 2) == 0) {
        size_t line = strcspn(c->buf + 2, "\n");
        if (line >= errlen)
            line = errlen - 1; /* one line, cut to fit */
        memcpy(err, c->buf + 2, line);
        err[line] = '\0';
    } else if (WIFSIGNALED(c->status)) {
        snprintf(err, errlen,
                 "checking plugins: the check process died of "
                 "signal %d (a plugin's init or fini crashed?)",
                 WTERMSIG(c->status));
    } else if (WEXITSTATUS(c->status) != 0) {
        snprintf(err, errlen,
                 "checking plugins: the check process exited "
                 "with status %d",
                 WEXITSTATUS(c->status));
    } else if (!c->buf) {
        snprintf(err, errlen, "checking plugins: the check process said "
                              "nothing");
    } else {
        types = parse_types(c->buf, &count);
        if (count == 0) {
            snprintf(err, errlen, "%s: no plugin serves any type", cfg->file);
        } else {
            *types_out = types;
            *n_out = count;
            types = NULL;
            rc = 0;
        }
    }
    plugin_check_free_types(types);
    free(c->buf);
    c->buf = NULL;
    c->len = c->cap = 0;
    return rc;
}

void plugin_check_abandon(plugin_check *c)
{
    int status;

    if (c->pid > 0) {
        kill(c->pid, SIGKILL);
        while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR)
            ;
        c->pid = 0;
    }
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    free(c->buf);
    c->buf = NULL;
    c->len = c->cap = 0;
    c->running = false;
}

int plugin_check_run(const config *cfg, int64_t timeout_ms, char ***types,
                     size_t *n, char *err, size_t errlen)
{
    plugin_check c;

    if (plugin_check_start(&c, cfg, timeout_ms, err, errlen) != 0)
        return -1;
    while (!plugin_check_step(&c, clock_ms())) {
        struct pollfd pfd = {c.fd, POLLIN, 0};
        if (c.fd < 0)
            pfd.fd = -1; /* the child closed its end: wait for its exit */
        poll(&pfd, 1, 20);
    }
    return plugin_check_result(&c, cfg, types, n, err, errlen);
}
