/* test_usage_spread.c - unit tests of ctl_usage_spread (usage.c), the steps of a project's
 * GPU use over time: a run adds its GPU time to the steps it overlaps and nothing outside
 * them, a run still open counts to the end it is given, and the total is the run's time
 * inside the window whatever its alignment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "controller/usage.h"

static double sum(const double *v, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += v[i];
    return s;
}

static void inside_one_step(void **state)
{
    double g[4] = {0};
    (void)state;
    ctl_usage_spread(g, 4, 1000, 100, 2, 1110, 1150); /* step 1 */
    assert_true(g[0] == 0 && g[2] == 0 && g[3] == 0);
    assert_true(g[1] == 2 * 40);
}

static void across_steps_and_edges(void **state)
{
    double g[4] = {0};
    (void)state;
    ctl_usage_spread(g, 4, 1000, 100, 3, 1050, 1250); /* half of 0, all of 1, half of 2 */
    assert_true(g[0] == 3 * 50 && g[1] == 3 * 100 && g[2] == 3 * 50 && g[3] == 0);
    double h[4] = {0};
    ctl_usage_spread(h, 4, 1000, 100, 1, 0, 5000); /* longer than the window: all of it */
    assert_true(sum(h, 4) == 400);
    for (int i = 0; i < 4; i++)
        assert_true(h[i] == 100);
}

static void outside_adds_nothing(void **state)
{
    double g[4] = {0};
    (void)state;
    ctl_usage_spread(g, 4, 1000, 100, 8, 0, 1000);    /* ends where the window starts */
    ctl_usage_spread(g, 4, 1000, 100, 8, 1400, 1900); /* starts where it ends */
    ctl_usage_spread(g, 4, 1000, 100, 8, 1200, 1200); /* empty */
    ctl_usage_spread(g, 4, 1000, 100, 8, 1300, 1200); /* backwards (a clock step) */
    assert_true(sum(g, 4) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(inside_one_step),
        cmocka_unit_test(across_steps_and_edges),
        cmocka_unit_test(outside_adds_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
