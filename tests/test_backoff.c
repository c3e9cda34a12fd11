/* Retry delays: linear and exponential growth, the cap, and jitter. */
#include <criterion/criterion.h>

#include "backoff.h"

static policy make_policy(backoff_kind kind, int64_t base, int64_t max,
                          unsigned jitter)
{
    policy p = {0};
    p.backoff = kind;
    p.backoff_base_ms = base;
    p.backoff_max_ms = max;
    p.jitter_pct = jitter;
    return p;
}

Test(backoff, linear_grows_by_base)
{
    policy p = make_policy(BACKOFF_LINEAR, 1000, 600000, 0);
    cr_assert_eq(backoff_delay_ms(&p, 1, 0.5), 1000);
    cr_assert_eq(backoff_delay_ms(&p, 2, 0.5), 2000);
    cr_assert_eq(backoff_delay_ms(&p, 5, 0.5), 5000);
}

Test(backoff, exponential_doubles_and_is_capped)
{
    policy p = make_policy(BACKOFF_EXPONENTIAL, 100, 1000, 0);
    cr_assert_eq(backoff_delay_ms(&p, 1, 0.5), 100);
    cr_assert_eq(backoff_delay_ms(&p, 2, 0.5), 200);
    cr_assert_eq(backoff_delay_ms(&p, 4, 0.5), 800);
    cr_assert_eq(backoff_delay_ms(&p, 5, 0.5), 1000);
    cr_assert_eq(backoff_delay_ms(&p, 1000, 0.5), 1000, "no overflow");
}

Test(backoff, linear_is_capped_too)
{
    policy p = make_policy(BACKOFF_LINEAR, 1000, 2500, 0);
    cr_assert_eq(backoff_delay_ms(&p, 10, 0.5), 2500);
}

Test(backoff, jitter_moves_within_its_ratio)
{
    policy p = make_policy(BACKOFF_LINEAR, 1000, 600000, 10);
    cr_assert_eq(backoff_delay_ms(&p, 1, 0.0), 900);
    cr_assert_eq(backoff_delay_ms(&p, 1, 0.5), 1000);
    cr_assert_eq(backoff_delay_ms(&p, 1, 0.999999), 1099);
    for (int i = 0; i < 1000; i++) {
        double u = backoff_random_unit();
        cr_assert(u >= 0.0 && u < 1.0);
        int64_t d = backoff_delay_ms(&p, 3, u);
        cr_assert(d >= 2700 && d <= 3300, "%lld out of 3000 +-10%%",
                  (long long)d);
    }
}
