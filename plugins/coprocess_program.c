/* Starting, stopping and reaping the coprocess plugin's handler program
 * (coprocess_program.h). The child between fork and exec makes only
 * async-signal-safe calls: the worker may have threads. */
#define _GNU_SOURCE
#include "coprocess_program.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"
#define MAX_WORDS 256

/* The variables of wharfd's environment a program gets; everything else
 * comes from `env`. Redis URLs and passwords stay behind. */
static const char *const kept_env[] = {"PATH", "HOME",   "LANG", "LC_ALL",
                                       "TZ",   "TMPDIR", NULL};

static void free_list(char **list)
{
    if (list == NULL)
        return;
    for (size_t i = 0; list[i]; i++)
        free(list[i]);
    free(list);
}

/* Splits s into words at spaces and tabs; '...' and "..." keep spaces in
 * a word (no escapes, no variables: there is no shell). A NULL-terminated
 * list, or NULL with why in err. */
static char **split_words(const char *s, size_t *count, char *err,
                          size_t errlen)
{
    char **words = calloc(MAX_WORDS + 1, sizeof *words);
    size_t n = 0, len = strlen(s);
    char *word = malloc(len + 1);

    if (words == NULL || word == NULL) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < len;) {
        size_t w = 0;
        char quote = 0;
        int any = 0;

        while (i < len && (s[i] == ' ' || s[i] == '\t'))
            i++;
        if (i >= len)
            break;
        while (i < len && (quote || (s[i] != ' ' && s[i] != '\t'))) {
            if (quote && s[i] == quote)
                quote = 0;
            else if (!quote && (s[i] == '\'' || s[i] == '"'))
                quote = s[i];
            else
                word[w++] = s[i];
            any = 1;
            i++;
        }
        if (quote) {
            snprintf(err, errlen, "unterminated %c quote", quote);
            goto fail;
        }
        if (!any)
            continue;
        if (n == MAX_WORDS) {
            snprintf(err, errlen, "more than %d words", MAX_WORDS);
            goto fail;
        }
        word[w] = '\0';
        if ((words[n++] = strdup(word)) == NULL) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
    }
    free(word);
    *count = n;
    return words;
fail:
    free(word);
    free_list(words);
    return NULL;
}

/* argv0 as execve needs it: with a '/' as written, else the first
 * executable file of that name on PATH. */
static char *resolve(const char *argv0, char *err, size_t errlen)
{
    const char *path = getenv("PATH");
    char candidate[4096];
    struct stat st;

    if (strchr(argv0, '/')) {
        if (access(argv0, X_OK) != 0) {
            snprintf(err, errlen, "%s: %s", argv0, strerror(errno));
            return NULL;
        }
        return strdup(argv0);
    }
    if (path == NULL || path[0] == '\0')
        path = DEFAULT_PATH;
    for (const char *p = path; *p;) {
        size_t dir = strcspn(p, ":");

        if (dir > 0 &&
            (size_t)snprintf(candidate, sizeof candidate, "%.*s/%s", (int)dir,
                             p, argv0) < sizeof candidate &&
            stat(candidate, &st) == 0 && S_ISREG(st.st_mode) &&
            access(candidate, X_OK) == 0)
            return strdup(candidate);
        p += dir;
        if (*p == ':')
            p++;
    }
    snprintf(err, errlen, "%s: not found on PATH", argv0);
    return NULL;
}

/* The minimal environment, then each NAME=VALUE word of env. */
static char **make_env(const char *env, char *err, size_t errlen)
{
    size_t n_extra = 0, n = 0;
    char **extra = NULL, **envp;

    if (env && (extra = split_words(env, &n_extra, err, errlen)) == NULL)
        return NULL;
    for (size_t i = 0; i < n_extra; i++) {
        const char *eq = strchr(extra[i], '=');

        if (eq == NULL || eq == extra[i]) {
            snprintf(err, errlen, "env: '%.64s' is not NAME=VALUE", extra[i]);
            free_list(extra);
            return NULL;
        }
    }
    envp = calloc(sizeof kept_env / sizeof kept_env[0] + n_extra + 1,
                  sizeof *envp);
    if (envp == NULL)
        goto oom;
    for (size_t i = 0; kept_env[i]; i++) {
        const char *v = getenv(kept_env[i]);
        size_t len;

        if (v == NULL && strcmp(kept_env[i], "PATH") == 0)
            v = DEFAULT_PATH;
        if (v == NULL)
            continue;
        len = strlen(kept_env[i]) + strlen(v) + 2;
        if ((envp[n] = malloc(len)) == NULL)
            goto oom;
        snprintf(envp[n++], len, "%s=%s", kept_env[i], v);
    }
    /* An env word replaces a kept variable of its name. */
    for (size_t i = 0; i < n_extra; i++) {
        size_t name = (size_t)(strchr(extra[i], '=') - extra[i]);
        size_t j;

        for (j = 0; j < n; j++)
            if (strncmp(envp[j], extra[i], name + 1) == 0)
                break;
        if (j < n)
            free(envp[j]);
        else
            n++;
        envp[j] = extra[i];
        extra[i] = NULL;
    }
    free(extra); /* its words moved into envp or were NULL */
    return envp;
oom:
    snprintf(err, errlen, "out of memory");
    free_list(extra);
    free_list(envp);
    return NULL;
}

int program_spec_make(program_spec *spec, const char *command, const char *cwd,
                      const char *env, char *err, size_t errlen)
{
    program_spec s = {0};
    size_t n = 0;
    char why[256];
    struct stat st;

    if (command == NULL || command[0] == '\0') {
        snprintf(err, errlen,
                 "no command: name the handler program in "
                 "`command`");
        return -1;
    }
    if ((s.argv = split_words(command, &n, why, sizeof why)) == NULL) {
        snprintf(err, errlen, "command: %s", why);
        return -1;
    }
    if (n == 0) {
        snprintf(err, errlen, "command: no words");
        goto fail;
    }
    if (cwd) {
        if (stat(cwd, &st) != 0) {
            snprintf(err, errlen, "cwd %s: %s", cwd, strerror(errno));
            goto fail;
        }
        if (!S_ISDIR(st.st_mode)) {
            snprintf(err, errlen, "cwd %s: not a folder", cwd);
            goto fail;
        }
        if ((s.cwd = strdup(cwd)) == NULL)
            goto oom;
    }
    /* A relative command path is the program's cwd's, as a shell in that
     * folder would run it. */
    if (cwd && strchr(s.argv[0], '/') && s.argv[0][0] != '/') {
        char joined[4096];

        if ((size_t)snprintf(joined, sizeof joined, "%s/%s", cwd, s.argv[0]) >=
            sizeof joined) {
            snprintf(err, errlen, "command: path too long");
            goto fail;
        }
        s.path = resolve(joined, why, sizeof why);
    } else {
        s.path = resolve(s.argv[0], why, sizeof why);
    }
    if (s.path == NULL) {
        snprintf(err, errlen, "command: %s", why);
        goto fail;
    }
    if ((s.envp = make_env(env, why, sizeof why)) == NULL) {
        snprintf(err, errlen, "%s", why);
        goto fail;
    }
    *spec = s;
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
fail:
    program_spec_free(&s);
    return -1;
}

void program_spec_free(program_spec *spec)
{
    if (spec == NULL)
        return;
    free_list(spec->argv);
    free_list(spec->envp);
    free(spec->path);
    free(spec->cwd);
    memset(spec, 0, sizeof *spec);
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* In the child: its pipes onto 0, 1 and 2, everything else closed at
 * exec, the worker's blocked signals and ignored SIGPIPE undone, death
 * with the thread that started it, then exec. Reports errno on report
 * (close-on-exec, so an exec that works closes it silently). */
static void child(const program_spec *spec, int in, int out, int errfd,
                  int report, pid_t parent)
{
    sigset_t none;
    int e;

    if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(errfd, 2) < 0)
        goto fail;
    if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0)
        goto fail;
    (void)fcntl(report, F_SETFD, FD_CLOEXEC);
    /* Its own process group, so a kill reaches what it started too, and
     * nothing keeps its pipes open after it. */
    (void)setpgid(0, 0);
    signal(SIGPIPE, SIG_DFL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* A worker killed with SIGKILL takes its program with it. The signal
     * follows the thread that started the program, which in a worker is
     * its only one (under `wharf run --threads`, a program one call's
     * thread restarted ends with that thread). */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
        _exit(127);
    if (spec->cwd && chdir(spec->cwd) != 0)
        goto fail;
    execve(spec->path, spec->argv, spec->envp);
fail:
    e = errno;
    (void)!write(report, &e, sizeof e);
    _exit(127);
}

int program_start(program *p, const program_spec *spec, char *err,
                  size_t errlen)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1};
    int report[2] = {-1, -1};
    int child_errno = 0;
    pid_t parent = getpid(), pid;
    ssize_t got;

    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 ||
        pipe2(errp, O_CLOEXEC) != 0 || pipe2(report, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "cannot make a pipe: %s", strerror(errno));
        goto fail;
    }
    pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "cannot fork: %s", strerror(errno));
        goto fail;
    }
    if (pid == 0)
        child(spec, in[0], out[1], errp[1], report[1], parent);
    close_fd(&in[0]);
    close_fd(&out[1]);
    close_fd(&errp[1]);
    close_fd(&report[1]);
    do
        got = read(report[0], &child_errno, sizeof child_errno);
    while (got < 0 && errno == EINTR);
    close_fd(&report[0]);
    if (got > 0) {
        snprintf(err, errlen, "cannot run %s: %s", spec->path,
                 strerror(child_errno));
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        goto fail;
    }
    if (fcntl(in[1], F_SETFL, O_NONBLOCK) != 0 ||
        fcntl(out[0], F_SETFL, O_NONBLOCK) != 0 ||
        fcntl(errp[0], F_SETFL, O_NONBLOCK) != 0) {
        snprintf(err, errlen, "cannot set up the pipes: %s", strerror(errno));
        kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        goto fail;
    }
    p->pid = pid;
    p->in_fd = in[1];
    p->out_fd = out[0];
    p->err_fd = errp[0];
    return 0;
fail:
    close_fd(&in[0]);
    close_fd(&in[1]);
    close_fd(&out[0]);
    close_fd(&out[1]);
    close_fd(&errp[0]);
    close_fd(&errp[1]);
    close_fd(&report[0]);
    close_fd(&report[1]);
    return -1;
}

static void describe(int status, char *how, size_t howlen)
{
    if (WIFEXITED(status)) {
        snprintf(how, howlen, "handler exited with status %d",
                 WEXITSTATUS(status));
    } else if (WIFSIGNALED(status)) {
        const char *name = sigabbrev_np(WTERMSIG(status));

        if (name)
            snprintf(how, howlen, "handler killed by SIG%s", name);
        else
            snprintf(how, howlen, "handler killed by signal %d",
                     WTERMSIG(status));
    } else {
        snprintf(how, howlen, "handler ended (status 0x%x)", status);
    }
}

void program_kill(program *p)
{
    if (p->pid > 0) {
        kill(-p->pid, SIGKILL);
        kill(p->pid, SIGKILL);
    }
}

void program_stop(program *p, int wait_ms, char *how, size_t howlen)
{
    struct timespec nap = {0, 5 * 1000 * 1000};
    int status = 0, waited = 0;
    pid_t got = 0;

    if (p->pid <= 0) {
        snprintf(how, howlen, "no handler running");
        return;
    }
    /* EOF on its stdin: a handler library's sign to finish and exit. */
    close_fd(&p->in_fd);
    while (waited < wait_ms && (got = waitpid(p->pid, &status, WNOHANG)) == 0) {
        nanosleep(&nap, NULL);
        waited += 5;
    }
    if (got == 0 || (got < 0 && errno == EINTR)) {
        program_kill(p);
        do
            got = waitpid(p->pid, &status, 0);
        while (got < 0 && errno == EINTR);
    }
    if (got == p->pid)
        describe(status, how, howlen);
    else
        snprintf(how, howlen, "handler lost: %s", strerror(errno));
    /* What it started dies with it. */
    kill(-p->pid, SIGKILL);
    p->pid = 0;
}

void program_close(program *p)
{
    close_fd(&p->in_fd);
    close_fd(&p->out_fd);
    close_fd(&p->err_fd);
}
