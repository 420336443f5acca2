/*
 * test_sim_stats.c - the statistics of docket-sim: nearest-rank percentiles, Jain's
 * index, bounded slowdown, and a summary computed from a hand-built result.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include <stdlib.h>
#include <string.h>

#include "sim/stats.h"
#include "sim/table.h"

static void percentiles(void **state)
{
    double v[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};

    (void)state;
    assert_true(sim_percentile(v, 10, 0.5) == 5);
    assert_true(sim_percentile(v, 10, 0.95) == 10);
    assert_true(sim_percentile(v, 10, 0.0) == 1);
    assert_true(sim_percentile(v, 10, 1.0) == 10);
    assert_true(sim_percentile(v, 0, 0.5) == 0);
    assert_true(sim_percentile(v, 1, 0.99) == 1);
}

static void jain(void **state)
{
    double eq[] = {3, 3, 3, 3}, one[] = {1, 0, 0, 0}, two[] = {1, 3};

    (void)state;
    assert_true(sim_jain(eq, 4) == 1.0);
    assert_true(sim_jain(one, 4) == 0.25);        /* 1/n when one takes everything */
    assert_true(sim_jain(two, 2) == 16.0 / 20.0); /* (1+3)^2 / (2 * (1+9)) */
    assert_true(sim_jain(eq, 0) == 0);
}

static void bounded_slowdown(void **state)
{
    (void)state;
    assert_true(sim_bounded_slowdown(0, 100000) == 1.0);
    assert_true(sim_bounded_slowdown(100000, 100000) == 2.0);
    assert_true(sim_bounded_slowdown(10000, 1000) == 1.1); /* runtime below the 10 s bound */
    assert_true(sim_bounded_slowdown(0, 0) == 1.0);        /* never below 1 */
}

static void summary_of_result(void **state)
{
    struct sim_result r;
    struct sim_job_rec jobs[4];
    struct sim_project_stat projects[2] = {{"a", 10, 0}, {"b", 30, 0}};
    struct sim_summary s;

    (void)state;
    memset(&r, 0, sizeof(r));
    memset(jobs, 0, sizeof(jobs));
    sched_policy_defaults(&r.policy);
    r.starve_bound_ms[2] = 50000; /* tier 2 ("normal") starves after 50 s */
    r.jobs = jobs;
    r.njobs = 4;
    r.projects = projects;
    r.nprojects = 2;
    r.total_gpus = 4;
    r.end_ms = 400000;
    r.busy_gpu_ms_total = 800000;
    r.arrivals_end_ms = 300000; /* the last submission (d) */
    r.busy_gpu_ms_arrivals = 600000;
    /* a: waits 0, 100 s run; b: waits 100 s; c: rejected; d: never starts */
    jobs[0] = (struct sim_job_rec){.submit_ms = 0,
                                   .runtime_ms = 100000,
                                   .first_start_ms = 0,
                                   .end_ms = 100000,
                                   .gpus = 1,
                                   .tier = 2,
                                   .project = 0,
                                   .end = SIM_END_COMPLETED,
                                   .saved_ms = 100000};
    jobs[1] = (struct sim_job_rec){.submit_ms = 0,
                                   .runtime_ms = 100000,
                                   .first_start_ms = 100000,
                                   .end_ms = 200000,
                                   .gpus = 2,
                                   .tier = 2,
                                   .project = 1,
                                   .end = SIM_END_COMPLETED,
                                   .saved_ms = 100000};
    jobs[2] = (struct sim_job_rec){
        .first_start_ms = -1, .end_ms = -1, .tier = 1, .end = SIM_END_REJECTED};
    jobs[3] = (struct sim_job_rec){.submit_ms = 300000,
                                   .first_start_ms = -1,
                                   .end_ms = -1,
                                   .tier = 1,
                                   .project = 1,
                                   .end = SIM_END_NONE};
    projects[0].gpu_ms = 100000;
    projects[1].gpu_ms = 200000;
    assert_int_equal(sim_summary_compute(&r, &s), 0);
    assert_int_equal(s.all.jobs, 3);
    assert_int_equal(s.all.rejected, 1);
    assert_int_equal(s.all.completed, 2);
    assert_int_equal(s.all.unfinished, 1);
    assert_true(s.all.wait_p50_s == 0);
    assert_true(s.all.wait_max_s == 100);
    assert_true(s.all.slowdown_mean == 1.5);
    assert_int_equal(s.tiers[2].starved, 1); /* b waited 100 s > 50 s */
    assert_int_equal(s.tiers[2].jobs, 2);
    assert_true(s.utilisation == 0.5);             /* 800000 / (4 x 400000) */
    assert_true(s.utilisation_arrivals == 0.5);    /* 600000 / (4 x 300000) */
    assert_true(s.cpu_utilisation_arrivals == -1); /* no CPUs counted */
    assert_true(s.projects[0].used_share > 0.333 && s.projects[0].used_share < 0.334);
    assert_true(s.projects[1].guarantee_share == 0.75);
    /* used/guaranteed shares: a 1.333, b 0.889 -> Jain = (2.222)^2 / (2 x 2.568) */
    assert_true(s.jain_share > 0.96 && s.jain_share < 0.962);
    /* total delay: a 0 s, b 100 s (both did all their work); d never started */
    assert_int_equal(s.all.delayed_jobs, 2);
    assert_true(s.all.delay_max_s == 100);
    assert_true(s.all.delay_mean_s == 50);
    sim_summary_release(&s);
    /* nobody has a guarantee: Jain's share index is undefined (n/a), never 0 */
    projects[0].guarantee_gpus = projects[1].guarantee_gpus = 0;
    assert_int_equal(sim_summary_compute(&r, &s), 0);
    assert_true(isnan(s.jain_share));
    assert_false(isnan(s.jain_slowdown));
    sim_summary_release(&s);
}

/* The comparison table's reading: best value, ties within 1 %, n/a, the verdict. */
static void table_best_and_verdict(void **state)
{
    struct sim_table t;
    struct sim_table_row row;
    char buf[512];

    (void)state;
    memset(&t, 0, sizeof(t));
    t.nruns = 3;
    strcpy(t.runs[0], "tiered");
    strcpy(t.runs[1], "easy");
    strcpy(t.runs[2], "fifo");
    memset(&row, 0, sizeof(row));
    strcpy(row.group, "tier high");
    strcpy(row.metric, "wait p95");
    strcpy(row.key, "wait_p95_s");
    row.kind = SIM_CELL_DURATION;
    row.better = -1;
    row.headline = true;
    row.v[0] = 0;
    row.v[1] = 3172;
    row.v[2] = NAN;
    assert_int_equal(sim_table_add(&t, &row), 0);
    assert_int_equal(sim_table_best(&t, &t.rows[0]), 0);
    row.v[0] = 4000;
    row.v[1] = 3990; /* within 1 %: a tie */
    assert_int_equal(sim_table_add(&t, &row), 0);
    assert_int_equal(sim_table_best(&t, &t.rows[1]), -1);
    sim_table_verdict(&t, buf, sizeof(buf));
    assert_string_equal(buf, "tiered is best on wait p95 of tier high.");
    sim_cell_format(NAN, SIM_CELL_INDEX, false, buf, sizeof(buf));
    assert_string_equal(buf, "n/a");
    sim_cell_format(-5400, SIM_CELL_DURATION, false, buf, sizeof(buf));
    assert_string_equal(buf, "-1h30m");
    sim_cell_format(0.229, SIM_CELL_PERCENT, false, buf, sizeof(buf));
    assert_string_equal(buf, "22.9%");
    sim_table_release(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(percentiles),
        cmocka_unit_test(jain),
        cmocka_unit_test(bounded_slowdown),
        cmocka_unit_test(summary_of_result),
        cmocka_unit_test(table_best_and_verdict),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
