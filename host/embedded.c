/* wharfd's own redis-server for [redis] url = embedded; see embedded.h.
 * The server is a child of the supervisor, started with fork and exec (no
 * shell) and reached over its unix socket with hiredis. */
#define _GNU_SOURCE /* close_range(2), declared only for GNU in glibc */
#include "embedded.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "clock_ms.h"
#include "error_set.h"

/* How long the server may take to answer PING after it is started, and to
 * exit after it is asked to. */
#define EMBEDDED_START_MS 10000
#define EMBEDDED_STOP_MS 10000
/* Between two looks at a starting or stopping server. */
#define EMBEDDED_POLL_MS 10
/* Connecting to a local socket is instant or refused; this only bounds a
 * server that accepts but does not answer. */
#define EMBEDDED_CONNECT_MS 1000
#define EMBEDDED_SOCKET_NAME "redis.sock"
#define EMBEDDED_LOG_NAME "redis.log"
/* Where to look for redis-server when PATH is unset. */
#define EMBEDDED_DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"
/* Bytes read from the end of redis.log to find its last line. */
#define EMBEDDED_LOG_TAIL 4096

_Static_assert(sizeof(((embedded_redis *)0)->socket) ==
                   sizeof(((struct sockaddr_un *)0)->sun_path),
               "embedded_redis.socket must match sun_path");

/* What reap_child found. */
typedef enum child_state {
    CHILD_RUNNING,
    CHILD_REAPED, /* it exited and we collected its status */
    CHILD_GONE    /* someone else reaped it: no status, pid may be reused */
} child_state;

/* Puts the path of the executable `name` found along PATH into out: 0, or
 * -1 if there is none. */
static int find_program(const char *name, char *out, size_t outlen)
{
    const char *dir = getenv("PATH");
    int rc = -1;

    if (!dir)
        dir = EMBEDDED_DEFAULT_PATH;
    for (;;) {
        size_t len = strcspn(dir, ":");
        struct stat st;
        /* An empty entry means the working directory, as for execvp. */
        int n = len ? snprintf(out, outlen, "%.*s/%s", (int)len, dir, name)
                    : snprintf(out, outlen, "./%s", name);

        if (n >= 0 && (size_t)n < outlen && stat(out, &st) == 0 &&
            S_ISREG(st.st_mode) && access(out, X_OK) == 0) {
            rc = 0;
            break;
        }
        if (dir[len] == '\0')
            break;
        dir += len + 1;
    }
    return rc;
}

/* Fills e's paths from data_dir (made absolute from the working directory,
 * trailing slashes dropped): 0, or -1 with the reason in err. */
static int set_paths(embedded_redis *e, const char *data_dir, char *err,
                     size_t errlen)
{
    char cwd[PATH_MAX];
    size_t len;
    int n;
    int rc = -1;

    if (!data_dir || !*data_dir) {
        error_set(err, errlen, "data_dir is empty");
        goto out;
    }
    if (data_dir[0] == '/') {
        n = snprintf(e->dir, sizeof(e->dir), "%s", data_dir);
    } else if (getcwd(cwd, sizeof(cwd))) {
        n = snprintf(e->dir, sizeof(e->dir), "%s/%s", cwd, data_dir);
    } else {
        error_set(err, errlen, "cannot make data_dir %s absolute: getcwd: %s",
                  data_dir, strerror(errno));
        goto out;
    }
    if (n < 0 || (size_t)n >= sizeof(e->dir)) {
        error_set(err, errlen, "data_dir %s is longer than %d", data_dir,
                  PATH_MAX - 1);
        goto out;
    }
    len = strlen(e->dir);
    while (len > 1 && e->dir[len - 1] == '/')
        e->dir[--len] = '\0';
    /* The server binds <dir>/redis.sock, and a unix socket's path must fit
     * sun_path with its NUL: refuse here, before making any folder. */
    n = snprintf(e->socket, sizeof(e->socket), "%s/%s", e->dir,
                 EMBEDDED_SOCKET_NAME);
    if (n < 0 || (size_t)n >= sizeof(e->socket)) {
        error_set(err, errlen,
                  "socket path %s/%s is %zu bytes, longer than a unix socket "
                  "allows (%zu): use a shorter data_dir",
                  e->dir, EMBEDDED_SOCKET_NAME,
                  len + 1 + strlen(EMBEDDED_SOCKET_NAME),
                  sizeof(e->socket) - 1);
        goto out;
    }
    n = snprintf(e->log, sizeof(e->log), "%s/%s", e->dir, EMBEDDED_LOG_NAME);
    if (n < 0 || (size_t)n >= sizeof(e->log)) {
        error_set(err, errlen, "log path %s/%s is too long", e->dir,
                  EMBEDDED_LOG_NAME);
        goto out;
    }
    /* Cannot be cut: the socket path is shorter than the url's room. */
    snprintf(e->url, sizeof(e->url), "unix://%s", e->socket);
    rc = 0;
out:
    return rc;
}

/* Makes dir and its missing parents with mode 0700 and checks that it is a
 * folder we may write in: 0, or -1 with the reason in err. */
static int make_data_dir(const char *dir, char *err, size_t errlen)
{
    char path[PATH_MAX];
    struct stat st;
    int rc = -1;

    snprintf(path, sizeof(path), "%s", dir); /* dir fits: set_paths */
    for (char *slash = strchr(path + 1, '/'); slash;
         slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        if (mkdir(path, 0700) != 0 && errno != EEXIST) {
            error_set(err, errlen, "cannot create data_dir %s: mkdir %s: %s",
                      dir, path, strerror(errno));
            goto out;
        }
        *slash = '/';
    }
    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        error_set(err, errlen, "cannot create data_dir %s: %s", dir,
                  strerror(errno));
        goto out;
    }
    if (stat(path, &st) != 0) {
        error_set(err, errlen, "data_dir %s: %s", dir, strerror(errno));
        goto out;
    }
    if (!S_ISDIR(st.st_mode)) {
        error_set(err, errlen, "data_dir %s exists and is not a directory",
                  dir);
        goto out;
    }
    if (access(path, W_OK | X_OK) != 0) {
        error_set(err, errlen, "data_dir %s is not writable: %s", dir,
                  strerror(errno));
        goto out;
    }
    rc = 0;
out:
    return rc;
}

/* Makes sure nobody serves `path`: 0 if it is free (a socket file that
 * refuses connections is a leftover of a killed server and is removed), or
 * -1 with the reason in err. */
static int clear_socket(const char *path, char *err, size_t errlen)
{
    struct sockaddr_un addr;
    struct stat st;
    int fd = -1;
    int rc = -1;

    if (lstat(path, &st) != 0) {
        if (errno == ENOENT)
            rc = 0;
        else
            error_set(err, errlen, "cannot look at %s: %s", path,
                      strerror(errno));
        goto out;
    }
    if (!S_ISSOCK(st.st_mode)) {
        error_set(err, errlen,
                  "%s exists and is not a socket; remove it if nothing uses it",
                  path);
        goto out;
    }
    /* Any listener counts, redis or not, and whether or not it would let
     * us in: the server we start would steal its socket. */
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        error_set(err, errlen, "socket: %s", strerror(errno));
        goto out;
    }
    memset(&addr, 0, sizeof(addr));
    addr.sun_family = AF_UNIX;
    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0 ||
        errno == EAGAIN) {
        /* EAGAIN: a listener whose backlog is full; still a live one. */
        error_set(err, errlen, "another redis-server is already serving %s",
                  path);
        goto out;
    }
    if (errno != ECONNREFUSED) {
        error_set(err, errlen, "cannot check %s: connect: %s", path,
                  strerror(errno));
        goto out;
    }
    if (unlink(path) != 0 && errno != ENOENT) {
        error_set(err, errlen, "cannot remove stale socket %s: %s", path,
                  strerror(errno));
        goto out;
    }
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    return rc;
}

/* Copies the last non-empty line of the log at path into out, or a note
 * that there is none. */
static void last_log_line(const char *path, char *out, size_t outlen)
{
    char buf[EMBEDDED_LOG_TAIL + 1];
    struct stat st;
    ssize_t got = -1;
    char *line;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    snprintf(out, outlen, "%s is empty", path);
    if (fd < 0) {
        snprintf(out, outlen, "no %s: %s", path, strerror(errno));
        goto out;
    }
    if (fstat(fd, &st) != 0)
        goto out;
    do {
        off_t from =
            st.st_size > EMBEDDED_LOG_TAIL ? st.st_size - EMBEDDED_LOG_TAIL : 0;
        got = pread(fd, buf, EMBEDDED_LOG_TAIL, from);
    } while (got < 0 && errno == EINTR);
    if (got <= 0)
        goto out;
    while (got > 0 && (buf[got - 1] == '\n' || buf[got - 1] == '\r' ||
                       buf[got - 1] == ' '))
        got--;
    if (got == 0)
        goto out;
    buf[got] = '\0';
    line = strrchr(buf, '\n');
    line = line ? line + 1 : buf;
    /* One line for the caller's log: no control characters. */
    for (char *c = line; *c; c++)
        if ((unsigned char)*c < ' ')
            *c = ' ';
    if (outlen > 0) {
        size_t n = strnlen(line, outlen - 1); /* cut to fit, knowingly */
        memcpy(out, line, n);
        out[n] = '\0';
    }
out:
    if (fd >= 0)
        close(fd);
}

/* Looks at the child without blocking; *status is set when it returns
 * CHILD_REAPED. */
static child_state reap_child(pid_t pid, int *status)
{
    pid_t got;

    do {
        got = waitpid(pid, status, WNOHANG);
    } while (got < 0 && errno == EINTR);
    if (got == 0)
        return CHILD_RUNNING;
    /* -1 is ECHILD: the supervisor's waitpid(-1) took it first. */
    return got == pid ? CHILD_REAPED : CHILD_GONE;
}

/* Says in err how the server ended, with the last line of its log. */
static void describe_end(const embedded_redis *e, child_state state, int status,
                         char *err, size_t errlen)
{
    char how[96];
    char line[512];

    if (state != CHILD_REAPED)
        snprintf(how, sizeof(how), "exited (reaped elsewhere, status lost)");
    else if (WIFEXITED(status))
        snprintf(how, sizeof(how), "exited with status %d",
                 WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(how, sizeof(how), "was killed by signal %d (%s)",
                 WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        snprintf(how, sizeof(how), "ended with wait status %#x", status);
    last_log_line(e->log, line, sizeof(line));
    error_set(err, errlen, "redis-server (pid %ld) %s; %s: %s", (long)e->pid,
              how, EMBEDDED_LOG_NAME, line);
}

/* Waits up to timeout_ms for the child to end: 0 once it has (reaped, or
 * reaped by someone else), -1 if it still runs. */
static int wait_child(pid_t pid, long long timeout_ms)
{
    int64_t deadline = clock_ms() + timeout_ms;
    int status;
    int running;

    while ((running = reap_child(pid, &status) == CHILD_RUNNING) &&
           clock_ms() < deadline)
        clock_sleep_ms(EMBEDDED_POLL_MS);
    return running ? -1 : 0;
}

/* Signals our child, but only while waitpid says it is still ours: once
 * reaped its pid may belong to someone else. */
static void signal_child(pid_t pid, int sig)
{
    int status;

    if (reap_child(pid, &status) == CHILD_RUNNING)
        kill(pid, sig);
}

/* Kills the child and waits for it, however long that takes. */
static void kill_child(pid_t pid)
{
    int status;

    signal_child(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
}

/* A connection to the server at path, with timeout_ms for each reply, or
 * NULL. Caller frees with redisFree. */
static redisContext *connect_server(const char *path, long timeout_ms)
{
    struct timeval connect_tv = {EMBEDDED_CONNECT_MS / 1000,
                                 (EMBEDDED_CONNECT_MS % 1000) * 1000};
    struct timeval reply_tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    redisContext *c = redisConnectUnixWithTimeout(path, connect_tv);

    if (c && (c->err || redisSetTimeout(c, reply_tv) != REDIS_OK)) {
        redisFree(c);
        c = NULL;
    }
    return c;
}

/* The pid of the server answering on c (from INFO server), or 0. */
static pid_t server_pid(redisContext *c)
{
    redisReply *reply = redisCommand(c, "INFO server");
    const char *field;
    pid_t pid = 0;

    if (reply && reply->type == REDIS_REPLY_STRING &&
        (field = strstr(reply->str, "\nprocess_id:")))
        pid = (pid_t)strtol(field + strlen("\nprocess_id:"), NULL, 10);
    freeReplyObject(reply);
    return pid;
}

/* Asks who answers on path: 1 with its pid in *pid if a server answers
 * PING (so it has loaded its data) and says who it is; 0 if none answers
 * yet, with *loading set if one is there but still loading its
 * append-only file. */
static int server_ready(const char *path, pid_t *pid, int *loading)
{
    redisContext *c = connect_server(path, EMBEDDED_CONNECT_MS);
    redisReply *reply = NULL;
    int ready = 0;

    if (!c)
        goto out;
    reply = redisCommand(c, "PING");
    if (reply && reply->type == REDIS_REPLY_STATUS) {
        *pid = server_pid(c);
        ready = *pid > 0;
    } else if (reply && reply->type == REDIS_REPLY_ERROR &&
               strncmp(reply->str, "LOADING", 7) == 0) {
        *loading = 1;
    }
out:
    freeReplyObject(reply);
    redisFree(c);
    return ready;
}

/* Asks the server to shut down (it writes its append-only file first): 0
 * if it took the command, -1 if it could not be reached or is not ours. */
static int request_shutdown(const embedded_redis *e)
{
    redisContext *c = connect_server(e->socket, EMBEDDED_STOP_MS);
    redisReply *reply = NULL;
    int rc = -1;

    /* Another server may have taken the socket path over: never shut down
     * one we did not start. */
    if (!c || server_pid(c) != e->pid)
        goto out;
    /* Success closes the connection without a reply; an error reply means
     * it refused (it could not write its file) and keeps running. */
    reply = redisCommand(c, "SHUTDOWN");
    if (!reply || reply->type != REDIS_REPLY_ERROR)
        rc = 0;
out:
    freeReplyObject(reply);
    redisFree(c);
    return rc;
}

/* Opens path close-on-exec at a descriptor above stderr: 0, 1 and 2 may be
 * closed in wharfd, and the child's dup2 onto the same number would keep
 * close-on-exec. Returns the descriptor or -1 (errno set). */
static int open_above_stderr(const char *path, int flags, mode_t mode)
{
    int fd = open(path, flags | O_CLOEXEC, mode);
    int high;

    if (fd < 0 || fd > STDERR_FILENO)
        return fd;
    high = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
    close(fd);
    return high;
}

/* The environment the server gets: the time zone and the locale of
 * wharfd's, for its log, and nothing else. wharfd's own environment may
 * hold WHARF_REDIS_PASSWORD or another program's secrets, which a
 * long-lived process has no need to carry (its /proc/PID/environ). At
 * most ENV_KEEP entries point into environ, NULL-terminated. */
#define ENV_KEEP 16
extern char **environ;

static void server_environment(char *envp[ENV_KEEP + 1])
{
    size_t n = 0;

    for (char **e = environ; e && *e && n < ENV_KEEP; e++)
        if (strncmp(*e, "TZ=", 3) == 0 || strncmp(*e, "LANG=", 5) == 0 ||
            strncmp(*e, "LC_", 3) == 0)
            envp[n++] = *e;
    envp[n] = NULL;
}

/* Runs in the forked child: makes it a server that wharfd's terminal and
 * inherited descriptors cannot reach, and that wharfd's death ends. Only
 * async-signal-safe calls: the parent may have threads. Never returns. */
static void exec_server(const char *program, char *const argv[],
                        char *const envp[], pid_t parent, int null_fd,
                        int log_fd, long open_max)
{
    static const char failed[] = "wharfd: cannot exec redis-server\n";
    struct sigaction dfl;
    sigset_t none;

    /* Its own session: a Ctrl-C meant for wharfd must not stop the store
     * while wharfd still acks its running tasks. */
    if (setsid() < 0)
        _exit(126);
    /* SIGTERM, not SIGKILL: redis then writes its append-only file and
     * exits, and no orphan keeps the socket. If wharfd died before prctl,
     * nobody would send it, so check. */
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent)
        _exit(126);
    /* exec keeps the mask and ignored signals; the supervisor may block or
     * ignore some. */
    if (sigemptyset(&none) != 0 || sigprocmask(SIG_SETMASK, &none, NULL) != 0)
        _exit(126);
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++)
        if (sigaction(sig, &dfl, NULL) != 0) {
            /* KILL, STOP and glibc's own signals: nothing to reset */
        }
    if (dup2(null_fd, STDIN_FILENO) < 0 || dup2(null_fd, STDOUT_FILENO) < 0 ||
        dup2(log_fd, STDERR_FILENO) < 0)
        _exit(126);
    /* Sockets and pipes of wharfd (Redis connections, a self-pipe, a
     * test runner's pipes) must not stay open in a long-lived server. */
    if (close_range(STDERR_FILENO + 1, ~0U, 0) != 0)
        for (long fd = STDERR_FILENO + 1; fd < open_max; fd++)
            close((int)fd);
    execve(program, argv, envp);
    if (write(STDERR_FILENO, failed, sizeof(failed) - 1) < 0) {
        /* nowhere else to say it; the exit status tells */
    }
    _exit(127);
}

/* Forks and execs the server for e: 0 with e->pid set, or -1 with the
 * reason in err. */
static int spawn_server(embedded_redis *e, const char *program, char *err,
                        size_t errlen)
{
    /* One option and its value a line. */
    /* clang-format off */
    char *argv[] = {"redis-server",
                    "--port", "0",
                    "--unixsocket", e->socket,
                    "--unixsocketperm", "700",
                    "--dir", e->dir,
                    "--appendonly", "yes",
                    "--appendfsync", "everysec",
                    "--save", "",
                    "--maxmemory-policy", "noeviction",
                    "--logfile", e->log,
                    "--daemonize", "no",
                    NULL};
    /* clang-format on */
    char *envp[ENV_KEEP + 1];
    long open_max = sysconf(_SC_OPEN_MAX);
    pid_t parent = getpid();
    int null_fd = open_above_stderr("/dev/null", O_RDWR, 0);
    int log_fd = -1;
    pid_t pid;
    int rc = -1;

    if (null_fd < 0) {
        error_set(err, errlen, "cannot open /dev/null: %s", strerror(errno));
        goto out;
    }
    /* The server's stderr goes to its log too, so that what it says
     * before it opens the log (a bad option) is the log's last line. */
    log_fd = open_above_stderr(e->log, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (log_fd < 0) {
        error_set(err, errlen, "cannot open %s: %s", e->log, strerror(errno));
        goto out;
    }
    if (open_max < 0)
        open_max = 1024;
    server_environment(envp);
    pid = fork();
    if (pid < 0) {
        error_set(err, errlen, "cannot start redis-server: fork: %s",
                  strerror(errno));
        goto out;
    }
    if (pid == 0)
        exec_server(program, argv, envp, parent, null_fd, log_fd, open_max);
    e->pid = pid;
    e->owner = parent;
    rc = 0;
out:
    if (log_fd >= 0)
        close(log_fd);
    if (null_fd >= 0)
        close(null_fd);
    return rc;
}

/* Waits until the server e->pid answers PING on e->socket: 0, or -1 with
 * the reason in err and the server stopped and reaped (e->pid = 0). */
static int wait_ready(embedded_redis *e, char *err, size_t errlen)
{
    int64_t deadline = clock_ms() + EMBEDDED_START_MS;
    char line[512];
    int loading = 0;
    child_state state;
    pid_t answering;
    int status;
    int rc = -1;

    for (;;) {
        state = reap_child(e->pid, &status);
        if (state != CHILD_RUNNING) {
            describe_end(e, state, status, err, errlen);
            e->pid = 0;
            goto out;
        }
        answering = 0;
        if (server_ready(e->socket, &answering, &loading)) {
            if (answering == e->pid) {
                rc = 0;
                goto out;
            }
            /* Someone else's server won a race for the path. SIGKILL: on
             * SIGTERM ours would unlink the socket, which is now theirs. */
            error_set(err, errlen,
                      "another redis-server (pid %ld) is already serving %s",
                      (long)answering, e->socket);
            kill_child(e->pid);
            e->pid = 0;
            goto out;
        }
        if (clock_ms() >= deadline)
            break;
        clock_sleep_ms(EMBEDDED_POLL_MS);
    }
    last_log_line(e->log, line, sizeof(line));
    error_set(err, errlen,
              "redis-server (pid %ld) did not answer PING on %s within %d s%s; "
              "%s: %s",
              (long)e->pid, e->socket, EMBEDDED_START_MS / 1000,
              loading ? " (still loading its append-only file)" : "",
              EMBEDDED_LOG_NAME, line);
    embedded_stop(e);
out:
    return rc;
}

int embedded_start(embedded_redis *e, const char *data_dir, char *err,
                   size_t errlen)
{
    embedded_redis next;
    char program[PATH_MAX];
    int running = e->pid != 0;
    int rc = -1;

    memset(&next, 0, sizeof(next));
    if (running) {
        error_set(err, errlen, "redis-server (pid %ld) already runs for %s",
                  (long)e->pid, e->dir);
        goto out;
    }
    if (find_program("redis-server", program, sizeof(program)) != 0) {
        error_set(err, errlen,
                  "redis-server is not installed (not found in PATH); install "
                  "the Debian package redis-server");
        goto out;
    }
    if (set_paths(&next, data_dir, err, errlen) != 0 ||
        make_data_dir(next.dir, err, errlen) != 0 ||
        clear_socket(next.socket, err, errlen) != 0 ||
        spawn_server(&next, program, err, errlen) != 0 ||
        wait_ready(&next, err, errlen) != 0)
        goto out;
    rc = 0;
out:
    if (rc == 0)
        *e = next;
    else if (!running) /* a running one stays as it is */
        memset(e, 0, sizeof(*e));
    return rc;
}

int embedded_reaped(embedded_redis *e, pid_t pid, int status, char *err,
                    size_t errlen)
{
    if (!e || e->pid <= 0 || pid != e->pid)
        return 0;
    describe_end(e, CHILD_REAPED, status, err, errlen);
    e->pid = 0;
    return 1;
}

int embedded_check(embedded_redis *e, char *err, size_t errlen)
{
    child_state state;
    int status = 0;
    int rc = -1;

    if (e->pid <= 0) {
        error_set(err, errlen, "redis-server is not running");
        goto out;
    }
    state = reap_child(e->pid, &status);
    if (state == CHILD_RUNNING) {
        rc = 0;
        goto out;
    }
    describe_end(e, state, status, err, errlen);
    e->pid = 0;
out:
    return rc;
}

void embedded_stop(embedded_redis *e)
{
    if (!e || e->pid <= 0)
        return;
    if (e->owner == getpid()) {
        if (request_shutdown(e) != 0)
            signal_child(e->pid, SIGTERM);
        if (wait_child(e->pid, EMBEDDED_STOP_MS) != 0)
            kill_child(e->pid);
    }
    e->pid = 0;
}
