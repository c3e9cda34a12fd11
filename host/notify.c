/* sd_notify(3) written out: a datagram to the AF_UNIX socket in
 * $NOTIFY_SOCKET ("/path", or "@name" for the abstract namespace). The
 * protocol is a stable, documented interface of systemd and small enough
 * to write directly, so wharfd needs no libsystemd (and builds and runs
 * where there is none). */
#include "notify.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "clock_ms.h"

/* The longest state we send: STATUS lines are cut to fit. */
#define NOTIFY_MAX 1024

int notify_send(const char *state)
{
    const char *path = getenv("NOTIFY_SOCKET");
    struct sockaddr_un addr;
    socklen_t addr_len;
    size_t path_len, state_len = strlen(state);
    ssize_t sent;
    int fd, rc;

    if (path == NULL || path[0] == '\0')
        return 0;
    path_len = strlen(path);
    if ((path[0] != '/' && path[0] != '@') || path_len < 2 ||
        path_len >= sizeof(addr.sun_path))
        return -EINVAL;
    memset(&addr, 0, sizeof(addr));
    addr.sun_family = AF_UNIX;
    memcpy(addr.sun_path, path, path_len);
    if (path[0] == '@') {
        /* Abstract: a leading NUL, and the length counts exact bytes. */
        addr.sun_path[0] = '\0';
        addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
                               path_len);
    } else {
        addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
                               path_len + 1);
    }
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    do
        sent = sendto(fd, state, state_len, MSG_NOSIGNAL,
                      (const struct sockaddr *)&addr, addr_len);
    while (sent < 0 && errno == EINTR);
    rc = sent < 0 ? -errno : (size_t)sent == state_len ? 0 : -EMSGSIZE;
    close(fd);
    return rc;
}

int notify_ready(void)
{
    char state[64];

    snprintf(state, sizeof(state), "READY=1\nMAINPID=%ld\n", (long)getpid());
    return notify_send(state);
}

int notify_reloading(void)
{
    char state[96];

    /* systemd >= 253 pairs RELOADING=1 with the monotonic time, so it can
     * tell this reload from an earlier one (Type=notify-reload). */
    snprintf(state, sizeof(state), "RELOADING=1\nMONOTONIC_USEC=%" PRIu64 "\n",
             (uint64_t)clock_us());
    return notify_send(state);
}

int notify_stopping(int64_t within_ms)
{
    char state[96];

    if (within_ms <= 0)
        return notify_send("STOPPING=1\n");
    /* systemd (>= 236) then waits that long past TimeoutStopSec, never
     * less than TimeoutStopSec itself. */
    snprintf(state, sizeof(state),
             "STOPPING=1\nEXTEND_TIMEOUT_USEC=%" PRIu64 "\n",
             (uint64_t)within_ms * 1000u);
    return notify_send(state);
}

int notify_watchdog(void)
{
    return notify_send("WATCHDOG=1\n");
}

int notify_status(const char *fmt, ...)
{
    char state[NOTIFY_MAX];
    va_list ap;
    int n;

    if (getenv("NOTIFY_SOCKET") == NULL)
        return 0;
    memcpy(state, "STATUS=", 7);
    va_start(ap, fmt);
    n = vsnprintf(state + 7, sizeof(state) - 8, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -EINVAL;
    for (char *p = state + 7; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    n = (int)strlen(state);
    state[n] = '\n';
    state[n + 1] = '\0';
    return notify_send(state);
}

int64_t notify_watchdog_interval_ms(void)
{
    const char *usec_text = getenv("WATCHDOG_USEC");
    const char *pid_text = getenv("WATCHDOG_PID");
    char *end;
    unsigned long long usec;

    if (usec_text == NULL || usec_text[0] == '\0')
        return 0;
    if (pid_text != NULL && pid_text[0] != '\0') {
        unsigned long long pid;

        errno = 0;
        pid = strtoull(pid_text, &end, 10);
        if (errno || *end || pid != (unsigned long long)getpid())
            return 0;
    }
    errno = 0;
    usec = strtoull(usec_text, &end, 10);
    if (errno || *end || usec == 0 || usec_text[0] == '-')
        return 0;
    /* Half the period; at least 1 ms so a tiny one is not "off". */
    return usec / 2000 > 0 ? (int64_t)(usec / 2000) : 1;
}
