/* Latency percentiles of the steady run: the noop plugin's file of
 * microseconds, one a line, into count, p50, p99, p99.9 and max (nearest
 * rank). */
#include "bench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int compare(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;

    return (x > y) - (x < y);
}

/* The nearest-rank percentile q (0 < q <= 100) of n sorted values. */
static long long rank(const long long *v, size_t n, double q)
{
    size_t k = (size_t)(q / 100.0 * (double)n + 0.999999);

    if (k < 1)
        k = 1;
    return v[(k > n ? n : k) - 1];
}

int bench_percentiles(int argc, char **argv)
{
    long long *v = NULL, x;
    size_t n = 0, cap = 0;
    FILE *f;
    int rc = 1;

    if (argc != 2) {
        fprintf(stderr, "usage: wharf-bench percentiles FILE\n");
        return 64;
    }
    if (!(f = fopen(argv[1], "r"))) {
        fprintf(stderr, "wharf-bench: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    while (fscanf(f, "%lld", &x) == 1) {
        if (n == cap) {
            long long *grown;
            cap = cap ? cap * 2 : 4096;
            if (!(grown = realloc(v, cap * sizeof(*v)))) {
                fprintf(stderr, "wharf-bench: out of memory\n");
                goto out;
            }
            v = grown;
        }
        v[n++] = x;
    }
    if (n == 0) {
        fprintf(stderr, "wharf-bench: %s: no samples\n", argv[1]);
        goto out;
    }
    qsort(v, n, sizeof(*v), compare);
    printf("count %zu\np50_us %lld\np99_us %lld\np999_us %lld\nmax_us %lld\n",
           n, rank(v, n, 50), rank(v, n, 99), rank(v, n, 99.9), v[n - 1]);
    rc = 0;
out:
    fclose(f);
    free(v);
    return rc;
}
