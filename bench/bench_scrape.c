/* Reads one counter from wharfd's /metrics (Prometheus text format): the
 * sum of its samples over every label set. */
#include "bench.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define SCRAPE_MAX (1 << 20)

/* The whole HTTP response into buf (NUL-terminated); its length or -1. */
static long http_get(long long port, char *buf, size_t cap)
{
    static const char request[] =
        "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    struct sockaddr_in addr = {.sin_family = AF_INET};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    size_t len = 0;
    ssize_t got;
    long rc = -1;

    addr.sin_port = htons((uint16_t)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
        write(fd, request, sizeof(request) - 1) !=
            (ssize_t)(sizeof(request) - 1))
        goto out;
    while (len + 1 < cap && (got = read(fd, buf + len, cap - 1 - len)) > 0)
        len += (size_t)got;
    buf[len] = '\0';
    rc = (long)len;
out:
    if (fd >= 0)
        close(fd);
    return rc;
}

int bench_scrape(int argc, char **argv)
{
    static char body[SCRAPE_MAX];
    long long port;
    size_t name_len;
    double sum = 0;
    int found = 0;
    char *line, *save = NULL;

    if (argc != 3 || (port = bench_number(argv[1])) <= 0 || port > 65535) {
        fprintf(stderr, "usage: wharf-bench scrape PORT METRIC\n");
        return 64;
    }
    if (http_get(port, body, sizeof(body)) < 0 ||
        strncmp(body, "HTTP/1.", 7) != 0 || strncmp(body + 8, " 200", 4)) {
        fprintf(stderr, "wharf-bench: no /metrics on 127.0.0.1:%lld\n", port);
        return 1;
    }
    name_len = strlen(argv[2]);
    for (line = strtok_r(body, "\r\n", &save); line;
         line = strtok_r(NULL, "\r\n", &save)) {
        char *value;
        if (strncmp(line, argv[2], name_len) != 0 ||
            (line[name_len] != ' ' && line[name_len] != '{'))
            continue;
        value = strrchr(line, ' ');
        if (value) {
            sum += atof(value + 1);
            found = 1;
        }
    }
    if (!found) {
        fprintf(stderr, "wharf-bench: no %s in /metrics\n", argv[2]);
        return 1;
    }
    printf("%.0f\n", sum);
    return 0;
}
