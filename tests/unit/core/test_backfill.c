/*
 * test_backfill.c - reservations, backfill that never delays them, and the starvation
 * guard that lets a low-tier job run eventually.
 */
#include "helpers.h"

#include <stdlib.h>

/* Two 8-GPU nodes; a 6-GPU job runs on each (1 h and 2 h); an 8-GPU job waits. */
static struct sched *blocked_top(void)
{
    struct sched *s = mk_sched();
    add_node(s, "n1", "H100", 8);
    add_node(s, "n2", "H100", 8);
    add_project(s, "lab", "critical", 0, -1);
    submit(s, 1, "lab", "normal", "training", 6, 1, HOUR, T0);
    submit(s, 2, "lab", "normal", "training", 6, 1, 2 * HOUR, T0 + 1);
    struct cyc c = cycle(s, T0 + 2);
    assert_int_equal(count_dec(c, SCHED_D_START), 2);
    run(s, 1, T0 + 2);
    run(s, 2, T0 + 2);
    /* the big job is of the same tier: nothing to preempt */
    submit(s, 3, "lab", "normal", "training", 8, 1, HOUR, T0 + 10);
    c = cycle(s, T0 + 11);
    assert_int_equal(count_dec(c, SCHED_D_START), 0);
    return s;
}

static void test_top_job_gets_reservation(void **state)
{
    (void)state;
    struct sched *s = blocked_top();
    struct sched_job_view v;
    assert_int_equal(sched_job_get(s, 3, &v), 0);
    assert_int_equal(v.reason, SCHED_R_RESOURCES);
    /* job 1 ends at its limit + grace: T0+2 + 1h + 30s */
    assert_int_equal(v.reservation_ms, T0 + 2 + HOUR + 30 * SEC);
    struct sched_explain x;
    assert_int_equal(sched_explain(s, 3, T0 + 11, &x), 0);
    assert_true(x.has_reservation);
    assert_int_equal(x.forecast_start_ms, v.reservation_ms);
    sched_destroy(s);
}

static void test_short_job_backfills(void **state)
{
    (void)state;
    struct sched *s = blocked_top();
    /* 30 min on 2 free GPUs: done before the reservation */
    submit(s, 4, "lab", "low", "exploration", 2, 1, 30 * MIN, T0 + 20);
    struct cyc c = cycle(s, T0 + 21);
    assert_non_null(find_dec(c, SCHED_D_START, 4));
    sched_destroy(s);
}

static void test_backfill_that_delays_is_refused(void **state)
{
    (void)state;
    struct sched *s = blocked_top();
    /* 3 hours on 2 GPUs of n1 would delay job 3's reservation at ~T0+1h; on n2 (not
       reserved) it may run */
    submit(s, 4, "lab", "low", "training", 2, 1, 3 * HOUR, T0 + 20);
    struct cyc c = cycle(s, T0 + 21);
    const struct sched_decision *d = find_dec(c, SCHED_D_START, 4);
    /* it runs where it cannot delay: n2, never the node reserved for job 3 */
    assert_non_null(d);
    struct sched_job_view v3, v2;
    assert_int_equal(sched_job_get(s, 3, &v3), 0);
    assert_int_equal(v3.reservation_ms, T0 + 2 + HOUR + 30 * SEC);
    assert_int_equal(sched_job_get(s, 2, &v2), 0);
    assert_int_equal(d->allocs[0].node, v2.allocs[0].node);
    /* and the top job still starts when job 1 ends */
    end(s, 1, SCHED_EXIT_CODE, 0, T0 + HOUR);
    c = cycle(s, T0 + HOUR + 1);
    assert_non_null(find_dec(c, SCHED_D_START, 3));
    sched_destroy(s);
}

static void test_backfill_refused_reason(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    add_node(s, "n1", "H100", 8);
    add_project(s, "lab", "critical", 0, -1);
    submit(s, 1, "lab", "normal", "training", 4, 1, HOUR, T0);
    struct cyc c = cycle(s, T0);
    run(s, 1, T0);
    submit(s, 2, "lab", "normal", "training", 8, 1, HOUR, T0 + 1);
    c = cycle(s, T0 + 2);
    assert_reason(s, 2, SCHED_R_RESOURCES);
    /* 4 GPUs are free now, but a 2-hour job would run into job 2's reservation */
    submit(s, 3, "lab", "low", "training", 4, 1, 2 * HOUR, T0 + 3);
    c = cycle(s, T0 + 4);
    assert_null(find_dec(c, SCHED_D_START, 3));
    assert_reason(s, 3, SCHED_R_RESERVATION);
    /* a 10-minute one fits before it */
    submit(s, 4, "lab", "low", "exploration", 4, 1, 10 * MIN, T0 + 5);
    c = cycle(s, T0 + 6);
    assert_non_null(find_dec(c, SCHED_D_START, 4));
    sched_destroy(s);
}

static void test_higher_job_takes_over_reservation(void **state)
{
    (void)state;
    struct sched *s = blocked_top();
    /* a critical job arrives: the normal job's reservation must not hold it back */
    submit(s, 5, "lab", "critical", "training", 8, 1, HOUR, T0 + 30);
    (void)cycle(s, T0 + 31);
    struct sched_job_view v5, v3;
    assert_int_equal(sched_job_get(s, 5, &v5), 0);
    assert_int_equal(sched_job_get(s, 3, &v3), 0);
    /* both normal jobs are younger than min_runtime: it waits, first in line */
    assert_true(v5.reservation_ms > 0);
    assert_true(v3.reservation_ms < 0 || v3.reservation_ms >= v5.reservation_ms);
    sched_destroy(s);
}

/* Submit a job of lab asking for GPUs of one type. */
static void submit_typed(struct sched *s, uint64_t id, const char *tier, const char *type, int gpus,
                         int nodes, int64_t limit_ms, int64_t now)
{
    struct sched_job_spec spec;
    struct sched_error err;
    spec_fill(&spec, id, "lab", tier, "training", gpus, nodes, limit_ms, now);
    snprintf(spec.gpu_type, sizeof(spec.gpu_type), "%s", type);
    assert_int_equal(sched_job_submit(s, &spec, now, &err), 0);
}

/* Four H100 nodes each running a 6-GPU job (1 h on n1 and n2, 2 h on n3 and n4), two A100
 * nodes each running one (1 h); two normal gangs of 2 x 8 H100 GPUs wait with reservations
 * (at the 1-hour jobs' end and at the 2-hour jobs'). */
static struct sched *two_gangs_reserved(int64_t *res10, int64_t *res11)
{
    struct sched *s = mk_sched();
    const char *names[] = {"n1", "n2", "n3", "n4", "a1", "a2"};
    const char *types[] = {"H100", "H100", "H100", "H100", "A100", "A100"};
    int64_t hours[] = {1, 1, 2, 2, 1, 1};
    for (int i = 0; i < 6; i++)
        add_node(s, names[i], types[i], 8);
    add_project(s, "lab", "critical", 0, -1);
    for (uint64_t id = 1; id <= 6; id++)
        submit_typed(s, id, "normal", types[id - 1], 6, 1, hours[id - 1] * HOUR, T0);
    struct cyc c = cycle(s, T0 + 1);
    assert_int_equal(count_dec(c, SCHED_D_START), 6);
    for (uint64_t id = 1; id <= 6; id++)
        run(s, id, T0 + 1);
    for (uint64_t id = 10; id <= 11; id++)
        submit_typed(s, id, "normal", "H100", 8, 2, 5 * HOUR, T0 + 10);
    c = cycle(s, T0 + 11);
    assert_int_equal(count_dec(c, SCHED_D_START), 0);
    struct sched_job_view v;
    assert_int_equal(sched_job_get(s, 10, &v), 0);
    *res10 = v.reservation_ms;
    assert_int_equal(sched_job_get(s, 11, &v), 0);
    *res11 = v.reservation_ms;
    assert_int_equal(*res10, T0 + 1 + HOUR + 30 * SEC);
    assert_int_equal(*res11, T0 + 1 + 2 * HOUR + 30 * SEC);
    return s;
}

/* A critical gang arrives: the lower reservations are dropped so that they cannot hold it
 * back (reservation_drop_lower). Where its room is elsewhere, each lower gang gets its own
 * room back without a search; where it takes a lower gang's room, that one searches anew
 * and never keeps a promise the critical gang's claims broke. */
static void test_lower_reservations_given_back_when_untouched(void **state)
{
    (void)state;
    int64_t r10, r11;
    struct sched *s = two_gangs_reserved(&r10, &r11);
    struct sched_error err;
    submit_typed(s, 20, "critical", "A100", 8, 2, HOUR, T0 + 20);
    struct sched_cycle_stats st;
    size_t n;
    (void)sched_cycle(s, T0 + 21, SCHED_CYCLE_INCREMENTAL, &n, &st);
    assert_int_equal(st.reservations, 3);
    assert_int_equal(st.reservations_restored, 2);
    struct sched_job_view v;
    assert_int_equal(sched_job_get(s, 20, &v), 0);
    assert_int_equal(v.reservation_ms, T0 + 1 + HOUR + 30 * SEC); /* the A100 nodes */
    assert_int_equal(sched_job_get(s, 10, &v), 0);
    assert_int_equal(v.reservation_ms, r10);
    assert_int_equal(sched_job_get(s, 11, &v), 0);
    assert_int_equal(v.reservation_ms, r11);
    assert_int_equal(sched_check(s, &err), 0);
    sched_destroy(s);
}

static void test_lower_reservation_searched_again_when_taken(void **state)
{
    (void)state;
    int64_t r10, r11;
    struct sched *s = two_gangs_reserved(&r10, &r11);
    /* an H100 gang that ranks above both: job 10's room at the 1-hour jobs' end is its */
    struct sched_error err;
    submit_typed(s, 20, "critical", "H100", 8, 2, HOUR, T0 + 20);
    struct sched_cycle_stats st;
    size_t n;
    (void)sched_cycle(s, T0 + 21, SCHED_CYCLE_INCREMENTAL, &n, &st);
    struct sched_job_view v20, v10, v11;
    assert_int_equal(sched_job_get(s, 20, &v20), 0);
    assert_int_equal(sched_job_get(s, 10, &v10), 0);
    assert_int_equal(sched_job_get(s, 11, &v11), 0);
    assert_int_equal(v20.reservation_ms, r10);
    /* job 10 takes n3 and n4 at the 2-hour jobs' end: job 11's old room, which it loses */
    assert_int_equal(v10.reservation_ms, r11);
    assert_true(v11.reservation_ms > r11);
    assert_int_equal(st.reservations_restored, 0);
    assert_int_equal(sched_check(s, &err), 0);
    sched_destroy(s);
}

static void test_starving_low_job_runs(void **state)
{
    (void)state;
    struct sched_policy pol;
    sched_policy_defaults(&pol);
    pol.preemption = false;
    struct sched *s = mk_sched_with(&pol);
    add_node(s, "n1", "H100", 8);
    add_project(s, "lab", "critical", 0, -1);
    /* the low job needs the whole node; a stream of 4-GPU normal jobs keeps it busy */
    submit(s, 1, "lab", "low", "training", 8, 1, HOUR, T0);
    uint64_t next = 100;
    int64_t now = T0;
    bool low_started = false;
    for (int round = 0; round < 200 && !low_started; round++) {
        submit(s, next++, "lab", "normal", "experiment", 4, 1, HOUR, now);
        submit(s, next++, "lab", "normal", "experiment", 4, 1, HOUR, now);
        struct cyc c = cycle(s, now);
        for (size_t i = 0; i < c.n; i++) {
            if (c.d[i].kind != SCHED_D_START)
                continue;
            if (c.d[i].job_id == 1)
                low_started = true;
            else
                run(s, c.d[i].job_id, now);
        }
        now += 30 * MIN;
        /* every running job ends after 30 minutes */
        for (uint64_t id = 100; id < next; id++) {
            struct sched_job_view v;
            if (sched_job_get(s, id, &v) == 0 && v.state == SCHED_RUNNING &&
                v.start_ms + 30 * MIN <= now)
                end(s, id, SCHED_EXIT_CODE, 0, now);
        }
    }
    assert_true(low_started);
    /* low tier starve_after is 24 h: it cannot have waited much beyond that */
    assert_true(now - T0 <= 27 * HOUR);
    sched_destroy(s);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Gangs reserving over 80 full nodes whose jobs end at 50 different times: candidate lists
 * long enough for the search's own sort (quicksort past 16 entries). With every memo
 * verified, each pruned search is also made in full, sorted by qsort, and sched_check()
 * fails on a different choice; the first gang starts at its 4th earliest release. */
static void test_gang_reservation_over_many_nodes(void **state)
{
    (void)state;
    enum { NODES = 80 };
    struct sched *s = mk_sched();
    sched_verify_memos(s, true);
    add_project(s, "lab", "critical", 0, -1);
    int64_t ends[NODES];
    for (int i = 0; i < NODES; i++) {
        char name[16];
        snprintf(name, sizeof(name), "n%02d", i);
        add_node(s, name, "H100", 8);
    }
    for (int i = 0; i < NODES; i++) {
        int64_t limit = (10 + (i * 37) % 50) * MIN;
        submit(s, (uint64_t)i + 1, "lab", "normal", "training", 8, 1, limit, T0);
        ends[i] = T0 + 2 + limit + 30 * SEC; /* limit + the class's grace */
    }
    int started = 0;
    for (int k = 0; k < 4 && started < NODES; k++) /* max_starts_per_cycle: in a few cycles */
        started += count_dec(cycle(s, T0 + 2), SCHED_D_START);
    assert_int_equal(started, NODES);
    for (int i = 0; i < NODES; i++)
        run(s, (uint64_t)i + 1, T0 + 2);
    submit(s, 1001, "lab", "normal", "training", 8, 4, HOUR, T0 + 10);
    submit(s, 1002, "lab", "normal", "training", 8, 20, HOUR, T0 + 11);
    struct cyc c = cycle(s, T0 + 12);
    assert_int_equal(count_dec(c, SCHED_D_START), 0);
    struct sched_error err;
    if (sched_check(s, &err))
        fail_msg("sched_check: %s", err.message);
    qsort(ends, NODES, sizeof(ends[0]), cmp_i64);
    struct sched_job_view v;
    assert_int_equal(sched_job_get(s, 1001, &v), 0);
    assert_int_equal(v.reservation_ms, ends[3]);
    assert_int_equal(sched_job_get(s, 1002, &v), 0);
    assert_true(v.reservation_ms >= ends[19]);
    sched_destroy(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_top_job_gets_reservation),
        cmocka_unit_test(test_short_job_backfills),
        cmocka_unit_test(test_backfill_that_delays_is_refused),
        cmocka_unit_test(test_backfill_refused_reason),
        cmocka_unit_test(test_higher_job_takes_over_reservation),
        cmocka_unit_test(test_lower_reservations_given_back_when_untouched),
        cmocka_unit_test(test_lower_reservation_searched_again_when_taken),
        cmocka_unit_test(test_starving_low_job_runs),
        cmocka_unit_test(test_gang_reservation_over_many_nodes),
    };
    return cmocka_run_group_tests_name("core: backfill and starvation", tests, NULL, NULL);
}
