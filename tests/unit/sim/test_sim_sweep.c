/*
 * test_sim_sweep.c - docket-sim --sweep: parsing each axis (values, errors naming the
 * option and the value), the grid's order and labels, and the rows a point adds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "sim/sweep.h"

static void parse_and_grid(void **state)
{
    struct sim_sweep sw = {0};
    struct sim_sweep_point p;
    char err[256];

    (void)state;
    assert_int_equal(sim_sweep_count(&sw), 1);
    assert_int_equal(sim_sweep_parse(&sw, "arrival-scale=0.5,0.7,1", err, sizeof(err)), 0);
    assert_int_equal(sim_sweep_parse(&sw, "checkpoint=none,1h", err, sizeof(err)), 0);
    assert_int_equal(sim_sweep_count(&sw), 6);
    /* the last axis varies fastest */
    sim_sweep_point(&sw, 0, &p);
    assert_string_equal(p.label, "arrival-scale=0.5 checkpoint=none");
    assert_true(p.arrival_scale == 0.5 && p.checkpoint_ms == 0 && p.cluster_scale < 0);
    sim_sweep_point(&sw, 1, &p);
    assert_string_equal(p.label, "arrival-scale=0.5 checkpoint=1h");
    assert_true(p.checkpoint_ms == 3600000);
    sim_sweep_point(&sw, 5, &p);
    assert_string_equal(p.label, "arrival-scale=1 checkpoint=1h");
    assert_true(p.arrival_scale == 1.0);
    assert_int_equal(sim_sweep_parse(&sw, "cluster-scale=0.5,1", err, sizeof(err)), 0);
    assert_int_equal(sim_sweep_count(&sw), 12);
    sim_sweep_point(&sw, 2, &p);
    assert_string_equal(p.label, "arrival-scale=0.5 checkpoint=1h cluster-scale=0.5");
}

static void expect_error(const char *arg, const char *want)
{
    struct sim_sweep sw = {0};
    char err[256] = "";

    assert_int_equal(sim_sweep_parse(&sw, "arrival-scale=1", err, sizeof(err)), 0);
    assert_int_equal(sim_sweep_parse(&sw, arg, err, sizeof(err)), -22);
    if (!strstr(err, want))
        fail_msg("'%s': got '%s', want '%s'", arg, err, want);
    assert_int_equal(sw.naxes, 1); /* a refused axis changes nothing */
}

static void errors_name_the_option(void **state)
{
    (void)state;
    expect_error("cluster-scale=0.5,big", "--sweep cluster-scale: 'big' is not a number");
    expect_error("cluster-scale=0", "--sweep cluster-scale: '0' is not a number");
    expect_error("cluster-scale=nan", "'nan' is not a number");
    expect_error("cluster-scale=1e7", "'1e7' is not a number");
    expect_error("cluster-scale=,", "'' is not a number");
    expect_error("checkpoint=-1h", "--sweep checkpoint: '-1h' is not none or a duration");
    expect_error("checkpoint=1h,3600s", "--sweep checkpoint: '3600s' is given twice");
    expect_error("arrival-scale=2", "--sweep arrival-scale: given twice");
    expect_error("load=1", "--sweep: 'load' is not arrival-scale, cluster-scale or checkpoint");
    expect_error("nothing", "is not NAME=V1,V2,...");
    expect_error("cluster-scale=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17",
                 "--sweep cluster-scale: at most 16 values");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parse_and_grid),
        cmocka_unit_test(errors_name_the_option),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
