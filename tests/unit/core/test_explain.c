/*
 * test_explain.c - "why is my job not running?" as data: each reason with its numbers and
 * sentence, positions in the queue, the nodes that could hold it, the forecast, the
 * starvation bound, and for a running job who may preempt it and when it is protected.
 */
#include "helpers.h"

static void explain_of(struct sched *s, uint64_t id, int64_t now, struct sched_explain *x)
{
    assert_int_equal(sched_explain(s, id, now, x), 0);
}

/* QuotaLimit names the limit and carries its numbers. */
static void test_quota_limit_with_numbers(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    add_node(s, "n1", "H100", 8);
    add_project(s, "nlp", "normal", 0, 4);
    submit(s, 1, "nlp", NULL, NULL, 4, 1, HOUR, T0);
    (void)cycle(s, T0);
    submit(s, 2, "nlp", NULL, NULL, 2, 1, HOUR, T0 + 1);
    (void)cycle(s, T0 + 2);
    struct sched_explain x;
    explain_of(s, 2, T0 + 2, &x);
    assert_int_equal(x.reason, SCHED_R_QUOTA_LIMIT);
    assert_int_equal(x.limit_value, 4);
    assert_int_equal(x.limit_in_use, 4);
    assert_int_equal(x.limit_request, 2);
    assert_non_null(strstr(x.limit_name, "gpu_limit"));
    assert_true(x.sentence[0] != '\0');
    sched_destroy(s);
}

/* A blocked top job: Resources with a reservation, its forecast, the nodes that match. */
static void test_resources_with_forecast_and_nodes(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    add_node(s, "n1", "H100", 8);
    add_node(s, "n2", "A100", 8);
    add_project(s, "lab", "normal", 0, -1);
    submit(s, 1, "lab", NULL, "training", 8, 1, HOUR, T0);
    (void)cycle(s, T0);
    run(s, 1, T0);
    submit(s, 2, "lab", NULL, "training", 8, 1, HOUR, T0 + 1);
    struct sched_job_spec j;
    spec_fill(&j, 3, "lab", NULL, "training", 8, 1, HOUR, T0 + 2);
    snprintf(j.gpu_type, sizeof(j.gpu_type), "H100");
    struct sched_error err;
    assert_int_equal(sched_job_submit(s, &j, T0 + 2, &err), 0);
    (void)cycle(s, T0 + 3); /* job 2 takes n2; job 3 must wait for n1 */
    struct sched_explain x;
    explain_of(s, 3, T0 + 3, &x);
    assert_int_equal(x.reason, SCHED_R_RESOURCES);
    assert_true(x.has_reservation);
    assert_int_equal(x.forecast_start_ms, T0 + HOUR + 30 * SEC); /* limit + grace */
    assert_int_equal(x.nodes_matching, 1);                       /* only the H100 */
    assert_string_equal(x.nodes[0].name, "n1");
    assert_false(x.nodes[0].fits_now);
    assert_int_equal(x.position, 1);
    assert_int_equal(x.pending_total, 1);
    sched_destroy(s);
}

/* Position: jobs of a higher tier come first, and are listed as ahead. */
static void test_position_and_jobs_ahead(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    add_node(s, "n1", "H100", 8);
    add_project(s, "lab", "critical", 0, -1);
    submit(s, 1, "lab", "normal", NULL, 8, 1, HOUR, T0);
    (void)cycle(s, T0);
    submit(s, 2, "lab", "low", NULL, 8, 1, HOUR, T0 + 1);
    submit(s, 3, "lab", "high", NULL, 8, 1, HOUR, T0 + 2);
    (void)cycle(s, T0 + 3);
    struct sched_explain x;
    explain_of(s, 2, T0 + 3, &x);
    assert_int_equal(x.position, 2);
    assert_int_equal(x.pending_total, 2);
    assert_int_equal(x.tier_position, 1);
    assert_int_equal(x.nahead, 1);
    assert_int_equal(x.ahead[0].id, 3);
    sched_destroy(s);
}

/* Dependency and begin time hold a job back without a starvation bound; once eligible,
 * the bound counts from then. */
static void test_dependency_then_starvation_bound(void **state)
{
    (void)state;
    struct sched *s = mk_sched(); /* normal starves after 12 h */
    add_node(s, "n1", "H100", 8);
    add_project(s, "lab", "normal", 0, -1);
    submit(s, 1, "lab", NULL, NULL, 8, 1, HOUR, T0);
    (void)cycle(s, T0);
    run(s, 1, T0);
    struct sched_job_spec j;
    spec_fill(&j, 2, "lab", NULL, NULL, 8, 1, HOUR, T0);
    j.deps[0].kind = SCHED_DEP_AFTERANY;
    j.deps[0].job_id = 1;
    j.ndeps = 1;
    struct sched_error err;
    assert_int_equal(sched_job_submit(s, &j, T0, &err), 0);
    (void)cycle(s, T0 + 1);
    struct sched_explain x;
    explain_of(s, 2, T0 + 1, &x);
    assert_int_equal(x.reason, SCHED_R_DEPENDENCY);
    assert_int_equal(x.starve_at_ms, -1);
    end(s, 1, SCHED_EXIT_CODE, 1, T0 + 30 * MIN); /* afterany: met, even by a failure */
    explain_of(s, 2, T0 + 30 * MIN, &x);
    assert_int_not_equal(x.reason, SCHED_R_DEPENDENCY); /* not the last cycle's stale word */
    assert_int_equal(x.starve_at_ms, T0 + 30 * MIN + 12 * HOUR);
    assert_false(x.starving);
    explain_of(s, 2, T0 + 30 * MIN + 12 * HOUR, &x);
    assert_true(x.starving);
    sched_destroy(s);
}

/* A running job: who may preempt it, from when, and when it becomes protected. */
/* A job held at submission explains itself: reason Held, and the nodes of its own shape
 * (it had none: explain read another shape, or none at all on a fresh core). */
static void test_held_at_submit(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    add_node(s, "n1", "H100", 8);
    add_node(s, "c1", "", 0);
    add_project(s, "lab", "normal", 0, -1);
    struct sched_job_spec j;
    spec_fill(&j, 1, "lab", NULL, NULL, 4, 1, HOUR, T0);
    j.hold = true;
    struct sched_error err;
    assert_int_equal(sched_job_submit(s, &j, T0, &err), 0);
    struct sched_explain x;
    assert_int_equal(sched_explain(s, 1, T0, &x), 0);
    assert_int_equal(x.reason, SCHED_R_HELD);
    assert_int_equal(x.nodes_matching, 1);           /* n1 only: the CPU node has no GPU */
    submit(s, 2, "lab", NULL, NULL, 0, 1, HOUR, T0); /* a CPU shape, interned after */
    assert_int_equal(sched_explain(s, 1, T0, &x), 0);
    assert_int_equal(x.nodes_matching, 1);
    assert_int_equal(sched_job_release(s, 1, T0 + 1, &err), 0);
    struct cyc c = cycle(s, T0 + 1);
    assert_non_null(find_dec(c, SCHED_D_START, 1));
    struct sched_error e2;
    if (sched_check(s, &e2))
        fail_msg("sched_check: %s", e2.message);
    sched_destroy(s);
}

static void test_running_job_preemptibility(void **state)
{
    (void)state;
    struct sched *s = mk_sched(); /* min_runtime 10 min; training protected after 24 h */
    add_node(s, "n1", "H100", 8);
    add_project(s, "lab", "critical", 0, -1);
    submit(s, 1, "lab", "normal", "training", 8, 1, 48 * HOUR, T0);
    (void)cycle(s, T0);
    run(s, 1, T0);
    struct sched_explain x;
    explain_of(s, 1, T0 + HOUR, &x);
    assert_true(x.preemptible);
    assert_string_equal(x.preemptible_by, "high");
    assert_int_equal(x.preemptible_from_ms, T0 + 10 * MIN);
    assert_int_equal(x.protected_at_ms, T0 + 24 * HOUR);
    assert_int_equal(x.expected_end_ms, T0 + 48 * HOUR); /* its limit; the grace is extra */
    explain_of(s, 1, T0 + 25 * HOUR, &x);
    assert_false(x.preemptible);
    sched_destroy(s);
}

/* The forecast: the next release and where it goes. */
static void test_forecast_flows_to_the_reserved_job(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    add_node(s, "n1", "H100", 8);
    add_project(s, "lab", "normal", 0, -1);
    submit(s, 1, "lab", NULL, "training", 8, 1, HOUR, T0);
    (void)cycle(s, T0);
    run(s, 1, T0);
    submit(s, 2, "lab", NULL, "training", 8, 1, HOUR, T0 + 1);
    (void)cycle(s, T0 + 2);
    struct sched_release r[4];
    size_t n = sched_forecast(s, T0 + 2, r, 4);
    assert_int_equal(n, 1);
    assert_int_equal(r[0].job_id, 1);
    assert_int_equal(r[0].at_ms, T0 + HOUR); /* at its limit */
    assert_int_equal(r[0].next_job, 2);
    assert_true(r[0].by_reservation);
    sched_destroy(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quota_limit_with_numbers),
        cmocka_unit_test(test_resources_with_forecast_and_nodes),
        cmocka_unit_test(test_position_and_jobs_ahead),
        cmocka_unit_test(test_dependency_then_starvation_bound),
        cmocka_unit_test(test_held_at_submit),
        cmocka_unit_test(test_running_job_preemptibility),
        cmocka_unit_test(test_forecast_flows_to_the_reserved_job),
    };
    return cmocka_run_group_tests_name("core: explain", tests, NULL, NULL);
}
