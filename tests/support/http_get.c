/* A minimal HTTP GET; see http_get.h. */
#include "http_get.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

int test_http_get(int port, const char *path, char *body, size_t len)
{
    return test_http_get_within(port, path, body, len, 5);
}

int test_http_get_within(int port, const char *path, char *body, size_t len,
                         int seconds)
{
    struct sockaddr_in addr;
    struct timeval tv = {seconds, 0};
    char request[512];
    size_t got = 0, cap = 1 << 20;
    char *buf = malloc(cap);
    int fd, status = -1;
    ssize_t n;

    if (!buf)
        return -1;
    fd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_port = htons((unsigned short)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0)
        goto out;
    n = snprintf(request, sizeof(request),
                 "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
    if (write(fd, request, (size_t)n) != n)
        goto out;
    while (got < cap - 1 && (n = read(fd, buf + got, cap - 1 - got)) > 0)
        got += (size_t)n;
    buf[got] = '\0';
    if (sscanf(buf, "HTTP/%*s %d", &status) != 1) {
        status = -1;
        goto out;
    }
    {
        const char *start = strstr(buf, "\r\n\r\n");
        start = start ? start + 4 : buf + got;
        snprintf(body, len, "%s", start);
    }
out:
    if (fd >= 0)
        close(fd);
    free(buf);
    return status;
}
