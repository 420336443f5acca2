/*
 * test_preempt.c - preemption and every guard: min_runtime, protection after the class's
 * run time, never services or interactive sessions, max_preemptions, never the same
 * victim twice, victim order, grace, the preemptor recorded, requeue however it exits,
 * and the freed room reserved for the preemptor.
 */
#include "helpers.h"

/* One 8-GPU node full with a low-tier job of `cls` that has run `age` ms at `now`. */
static struct sched *full_node(const char *cls, int64_t age, int64_t *now)
{
    struct sched *s = mk_sched();
    add_node(s, "n1", "H100", 8);
    add_project(s, "lab", "critical", 0, -1);
    submit(s, 1, "lab", "low", cls, 8, 1, 48 * HOUR, T0);
    struct cyc c = cycle(s, T0);
    assert_non_null(find_dec(c, SCHED_D_START, 1));
    run(s, 1, T0);
    *now = T0 + age;
    return s;
}

static void test_preempts_lower_tier_with_grace(void **state)
{
    (void)state;
    int64_t now;
    struct sched *s = full_node("training", 20 * MIN, &now);
    submit(s, 2, "lab", "high", NULL, 8, 1, HOUR, now);
    struct cyc c = cycle(s, now + 1);
    const struct sched_decision *d = find_dec(c, SCHED_D_SIGNAL, 1);
    assert_non_null(d);
    assert_int_equal(d->cause, SCHED_STOP_PREEMPT);
    assert_int_equal(d->signal, 15);
    assert_int_equal(d->grace_ms, 30 * SEC);
    assert_int_equal(d->preemptor, 2);
    assert_state(s, 1, SCHED_STOPPING);
    assert_reason(s, 2, SCHED_R_PREEMPTING);
    /* nobody else may take the room while the victim is in its grace */
    submit(s, 3, "lab", "normal", NULL, 8, 1, MIN, now + 2);
    /* grace over: the core asks for a kill */
    c = cycle(s, now + 1 + 30 * SEC);
    assert_non_null(find_dec(c, SCHED_D_KILL, 1));
    /* it exits (cleanly, even): it is requeued, not completed, and the preemptor runs */
    end(s, 1, SCHED_EXIT_CODE, 0, now + 31 * SEC);
    c = cycle(s, now + 31 * SEC + 1);
    const struct sched_decision *st = find_dec(c, SCHED_D_STATE, 1);
    assert_non_null(st);
    assert_int_equal(st->to, SCHED_PENDING);
    assert_int_equal(st->preemptor, 2);
    assert_true(st->lost_ms >= 20 * MIN);
    assert_non_null(find_dec(c, SCHED_D_START, 2));
    assert_null(find_dec(c, SCHED_D_START, 3));
    struct sched_job_view v;
    assert_int_equal(sched_job_get(s, 1, &v), 0);
    assert_int_equal(v.preempt_count, 1);
    assert_int_equal(v.state, SCHED_PENDING);
    sched_destroy(s);
}

static void test_young_job_exempt(void **state)
{
    (void)state;
    int64_t now;
    struct sched *s = full_node("training", 5 * MIN, &now); /* < 10 min */
    submit(s, 2, "lab", "high", NULL, 8, 1, HOUR, now);
    struct cyc c = cycle(s, now + 1);
    assert_int_equal(count_dec(c, SCHED_D_SIGNAL), 0);
    /* the core wakes up when the victim leaves min_runtime, and preempts then */
    int64_t wake = sched_next_wakeup(s, now + 1);
    assert_true(wake <= T0 + 10 * MIN);
    c = cycle(s, T0 + 10 * MIN);
    assert_non_null(find_dec(c, SCHED_D_SIGNAL, 1));
    sched_destroy(s);
}

static void test_protected_after_class_time(void **state)
{
    (void)state;
    int64_t now;
    struct sched *s = full_node("training", 25 * HOUR, &now); /* training: 24 h */
    submit(s, 2, "lab", "critical", NULL, 8, 1, HOUR, now);
    struct cyc c = cycle(s, now + 1);
    assert_int_equal(count_dec(c, SCHED_D_SIGNAL), 0);
    struct sched_explain x;
    assert_int_equal(sched_explain(s, 1, now + 1, &x), 0);
    assert_false(x.preemptible);
    assert_non_null(strstr(x.not_preemptible_why, "protected"));
    assert_int_equal(x.protected_at_ms, T0 + 24 * HOUR);
    sched_destroy(s);
}

static void test_service_and_interactive_never(void **state)
{
    (void)state;
    const char *classes[] = {"service", "interactive"};
    for (int i = 0; i < 2; i++) {
        int64_t now;
        struct sched *s = full_node(classes[i], HOUR, &now);
        submit(s, 2, "lab", "critical", NULL, 8, 1, HOUR, now);
        struct cyc c = cycle(s, now + 1);
        assert_int_equal(count_dec(c, SCHED_D_SIGNAL), 0);
        assert_state(s, 1, SCHED_RUNNING);
        sched_destroy(s);
    }
}

static void test_max_preemptions_caps(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    add_node(s, "n1", "H100", 8);
    add_project(s, "lab", "critical", 0, -1);
    struct sched_job_spec j;
    spec_fill(&j, 1, "lab", "low", "training", 8, 1, 48 * HOUR, T0);
    j.preempt_count = 3; /* already paid three times */
    struct sched_error err;
    assert_int_equal(sched_job_submit(s, &j, T0, &err), 0);
    struct cyc c = cycle(s, T0);
    assert_non_null(find_dec(c, SCHED_D_START, 1));
    run(s, 1, T0);
    submit(s, 2, "lab", "critical", NULL, 8, 1, HOUR, T0 + HOUR);
    c = cycle(s, T0 + HOUR + 1);
    assert_int_equal(count_dec(c, SCHED_D_SIGNAL), 0);
    sched_destroy(s);
}

static void test_same_victim_never_twice(void **state)
{
    (void)state;
    int64_t now;
    struct sched *s = full_node("training", HOUR, &now);
    submit(s, 2, "lab", "high", NULL, 8, 1, HOUR, now);
    submit(s, 3, "lab", "high", NULL, 8, 1, HOUR, now + 1);
    struct cyc c = cycle(s, now + 2);
    assert_int_equal(count_dec(c, SCHED_D_SIGNAL), 1);
    c = cycle(s, now + 3);
    assert_int_equal(count_dec(c, SCHED_D_SIGNAL), 0);
    assert_reason(s, 2, SCHED_R_PREEMPTING);
    assert_int_not_equal(reason_of(s, 3), SCHED_R_PREEMPTING);
    sched_destroy(s);
}

static void test_victim_order_and_minimal_set(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    add_node(s, "n1", "H100", 8);
    add_project(s, "lab", "critical", 0, -1);
    submit(s, 1, "lab", "low", "training", 4, 1, 48 * HOUR, T0);
    submit(s, 2, "lab", "low", "exploration", 2, 1, HOUR / 2, T0 + 1);
    submit(s, 3, "lab", "normal", "exploration", 2, 1, HOUR / 2, T0 + 2);
    struct cyc c = cycle(s, T0 + 3);
    assert_int_equal(count_dec(c, SCHED_D_START), 3);
    run(s, 1, T0 + 3);
    run(s, 2, T0 + 3);
    run(s, 3, T0 + 3);
    /* a high job needs 2 GPUs: the low exploration job goes, nothing else */
    submit(s, 4, "lab", "high", NULL, 2, 1, HOUR, T0 + 20 * MIN);
    c = cycle(s, T0 + 20 * MIN + 1);
    assert_int_equal(count_dec(c, SCHED_D_SIGNAL), 1);
    assert_non_null(find_dec(c, SCHED_D_SIGNAL, 2));
    sched_destroy(s);
}

static void test_guarantee_reclaim_same_tier(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    add_node(s, "n1", "H100", 8);
    add_project(s, "owner", "normal", 8, -1);
    add_project(s, "borrower", "normal", 0, -1);
    submit(s, 1, "borrower", NULL, "experiment", 8, 1, 4 * HOUR, T0);
    struct cyc c = cycle(s, T0);
    assert_non_null(find_dec(c, SCHED_D_START, 1));
    run(s, 1, T0);
    submit(s, 2, "owner", NULL, NULL, 8, 1, HOUR, T0 + HOUR);
    c = cycle(s, T0 + HOUR + 1);
    const struct sched_decision *d = find_dec(c, SCHED_D_SIGNAL, 1);
    assert_non_null(d);
    assert_int_equal(d->preemptor, 2);
    sched_destroy(s);
}

static void test_not_requeueable_ends_preempted(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    add_node(s, "n1", "H100", 8);
    add_project(s, "lab", "critical", 0, -1);
    struct sched_job_spec j;
    spec_fill(&j, 1, "lab", "low", "training", 8, 1, 48 * HOUR, T0);
    j.no_requeue = true;
    struct sched_error err;
    assert_int_equal(sched_job_submit(s, &j, T0, &err), 0);
    (void)cycle(s, T0);
    run(s, 1, T0);
    submit(s, 2, "lab", "high", NULL, 8, 1, HOUR, T0 + HOUR);
    struct cyc c = cycle(s, T0 + HOUR + 1);
    assert_non_null(find_dec(c, SCHED_D_SIGNAL, 1));
    end(s, 1, SCHED_EXIT_SIGNAL, 15, T0 + HOUR + 2);
    c = cycle(s, T0 + HOUR + 3);
    const struct sched_decision *st = find_dec(c, SCHED_D_STATE, 1);
    assert_non_null(st);
    assert_int_equal(st->to, SCHED_PREEMPTED);
    assert_state(s, 1, SCHED_JOB_STATE_COUNT); /* gone from the core */
    sched_destroy(s);
}

/* A job of project `project` that may run only on nodes labelled vc=`vc`. */
static void submit_vc(struct sched *s, uint64_t id, const char *project, const char *tier,
                      const char *vc, int64_t now)
{
    struct sched_job_spec j;
    spec_fill(&j, id, project, tier, "training", 8, 1, 48 * HOUR, now);
    snprintf(j.selectors[0].key, SCHED_NAME_MAX, "vc");
    snprintf(j.selectors[0].value, SCHED_NAME_MAX, "%s", vc);
    j.nselectors = 1;
    struct sched_error err;
    if (sched_job_submit(s, &j, now, &err))
        fail_msg("submit %llu: %s", (unsigned long long)id, err.message);
}

static struct sched_cycle_stats cycle_stats(struct sched *s, int64_t now, struct cyc *c)
{
    struct sched_cycle_stats st;
    memset(&st, 0, sizeof(st));
    c->d = sched_cycle(s, now, SCHED_CYCLE_INCREMENTAL, &c->n, &st);
    return st;
}

/* The victim gate counts by selector set (Philly's per-VC partitions): a high job starving
 * in pool a while a low job runs only in pool b makes no preemption search at all; once a
 * victim is eligible in pool a, it preempts that one. */
static void test_victim_gate_by_selector(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    sched_verify_memos(s, true);
    add_node_l(s, "a1", "H100", 8, "vc", "a");
    add_node_l(s, "a2", "H100", 8, "vc", "a");
    add_node_l(s, "b1", "H100", 8, "vc", "b");
    add_project(s, "pa", "critical", 0, -1);
    add_project(s, "pb", "critical", 0, -1);
    submit_vc(s, 1, "pa", "high", "a", T0);
    submit_vc(s, 2, "pb", "low", "b", T0);
    struct cyc c = cycle(s, T0);
    assert_non_null(find_dec(c, SCHED_D_START, 1));
    assert_non_null(find_dec(c, SCHED_D_START, 2));
    run(s, 1, T0);
    run(s, 2, T0);
    /* a low job in pool a, too young to be a victim; job 2 in pool b is one */
    int64_t t = T0 + 20 * MIN;
    submit_vc(s, 5, "pa", "low", "a", t);
    c = cycle(s, t);
    assert_non_null(find_dec(c, SCHED_D_START, 5));
    run(s, 5, t);
    submit_vc(s, 3, "pa", "high", "a", t + MIN);
    for (int k = 1; k <= 3; k++) {
        struct sched_cycle_stats st = cycle_stats(s, t + k * MIN, &c);
        assert_int_equal(count_dec(c, SCHED_D_SIGNAL), 0);
        assert_int_equal(st.preempt_full, 0);
        assert_int_equal(st.preempt_rechecks, 0);
        assert_int_equal(st.preempt_memo_skips, 0);
        struct sched_error err;
        assert_int_equal(sched_check(s, &err), 0);
    }
    assert_state(s, 3, SCHED_PENDING);
    /* job 5 leaves min_runtime: a victim in pool a, and job 3 takes its room */
    struct sched_cycle_stats st = cycle_stats(s, t + 10 * MIN, &c);
    const struct sched_decision *d = find_dec(c, SCHED_D_SIGNAL, 5);
    assert_non_null(d);
    assert_int_equal(d->preemptor, 3);
    assert_null(find_dec(c, SCHED_D_SIGNAL, 2));
    assert_true(st.preempt_full + st.preempt_rechecks > 0);
    struct sched_error err;
    assert_int_equal(sched_check(s, &err), 0);
    sched_destroy(s);
}

/* A cancel of a job already stopping as a preemption's victim makes it a job stopping for
 * its own cause, which least work lost waits for (preempt.c stopping_gone_at): the
 * preemption memos that read its node must let go. Job 1 (8 GPUs on n1) is job 2's victim;
 * job 3 finds no plan (the victims it may take, one GPU on n2 and on n3, are too small, and
 * job 1's room is job 2's). Job 1 is cancelled; then job 9 on n4 leaves min_runtime. Job 3
 * waits for job 1 (6 of its 8 GPUs are left past job 2's claim) rather than kill job 9: a
 * memo that kept n1's failed search would look at n4 alone and preempt job 9. */
static void test_cancel_of_a_victim_voids_the_memos(void **state)
{
    (void)state;
    struct sched_policy p;
    sched_policy_defaults(&p);
    p.backfill = false; /* no plain reservation: job 3 waits only as least work lost says */
    struct sched *s = mk_sched_with(&p);
    sched_verify_memos(s, true);
    const char *nodes[] = {"n1", "n2", "n3", "n4"};
    for (int i = 0; i < 4; i++)
        add_node(s, nodes[i], "H100", 8);
    add_project(s, "lab", "critical", 0, -1);
    submit(s, 1, "lab", "low", "training", 8, 1, 48 * HOUR, T0);
    submit(s, 4, "lab", "high", "training", 7, 1, 48 * HOUR, T0);
    submit(s, 5, "lab", "high", "training", 7, 1, 48 * HOUR, T0);
    submit(s, 6, "lab", "low", "training", 1, 1, 48 * HOUR, T0);
    submit(s, 7, "lab", "low", "training", 1, 1, 48 * HOUR, T0);
    submit(s, 8, "lab", "high", "training", 6, 1, 48 * HOUR, T0);
    struct cyc c = cycle(s, T0);
    for (uint64_t id = 1; id <= 8; id++)
        if (id < 2 || id > 3)
            run(s, id, T0);
    int64_t t = T0 + 20 * MIN;
    submit(s, 9, "lab", "low", "training", 2, 1, 48 * HOUR, t + 3 * SEC - 10 * MIN);
    c = cycle(s, t + 3 * SEC - 10 * MIN);
    assert_non_null(find_dec(c, SCHED_D_START, 9));
    run(s, 9, t + 3 * SEC - 10 * MIN);
    submit(s, 2, "lab", "high", NULL, 2, 1, HOUR, t);
    c = cycle(s, t);
    const struct sched_decision *d = find_dec(c, SCHED_D_SIGNAL, 1);
    assert_non_null(d);
    assert_int_equal(d->preemptor, 2);
    submit(s, 3, "lab", "high", NULL, 2, 1, HOUR, t + SEC);
    struct sched_error err;
    c = cycle(s, t + SEC);
    assert_int_equal(count_dec(c, SCHED_D_SIGNAL), 0);
    assert_int_equal(sched_check(s, &err), 0);
    assert_int_equal(sched_job_cancel(s, 1, t + 2 * SEC, &err), 0);
    assert_state(s, 1, SCHED_STOPPING);
    c = cycle(s, t + 4 * SEC);
    assert_null(find_dec(c, SCHED_D_SIGNAL, 9)); /* it waits for job 1 instead */
    if (sched_check(s, &err) != 0)
        fail_msg("after the cancel: %s", err.message);
    sched_destroy(s);
}

/* A preemption in the walk frees its victims' room early: room grows, and a claimed memo
 * made before it (claims held job 3 off, so a job of its shape that runs as long is held
 * off too) no longer holds. One node of 8 GPUs, in FIFO order: job 2 (5 GPUs) holds the
 * backfill slot from job 5's end; job 3 (1 GPU) would leave job 2 short there; job 4
 * preempts job 6, whose 3 GPUs come back in 30 s, 1 more than job 4 needs; so job 7, of
 * job 3's shape, fits now. The walk may not skip it. */
static void test_preemption_in_the_walk_voids_the_claimed_memo(void **state)
{
    (void)state;
    struct sched_policy p;
    sched_policy_defaults(&p);
    p.ordering = SCHED_ORDER_FIFO;
    p.backfill_depth = 1;
    struct sched *s = mk_sched_with(&p);
    sched_verify_memos(s, true);
    add_node(s, "n1", "H100", 8);
    add_project(s, "lab", "critical", 0, -1);
    submit(s, 5, "lab", "high", "training", 4, 1, HOUR, T0);
    submit(s, 6, "lab", "low", "training", 3, 1, 48 * HOUR, T0 + 1);
    struct cyc c = cycle(s, T0 + 1);
    run(s, 5, T0 + 1);
    run(s, 6, T0 + 1);
    int64_t t = T0 + 20 * MIN;
    submit(s, 2, "lab", "high", NULL, 5, 1, HOUR, t);
    submit(s, 3, "lab", "low", NULL, 1, 1, HOUR, t + 1);
    submit(s, 4, "lab", "high", NULL, 2, 1, HOUR, t + 2);
    submit(s, 7, "lab", "low", NULL, 1, 1, HOUR, t + 3);
    c = cycle(s, t + 4);
    const struct sched_decision *d = find_dec(c, SCHED_D_SIGNAL, 6);
    assert_non_null(d);
    assert_int_equal(d->preemptor, 4);
    assert_non_null(find_dec(c, SCHED_D_START, 7));
    struct sched_error err;
    if (sched_check(s, &err) != 0)
        fail_msg("%s", err.message);
    sched_destroy(s);
}

/* The reservation-failure memo (a shape that found no start in this walk: its longer jobs
 * find none either) holds only while room cannot grow, as the claimed memo (seed 2907). A
 * preemption in the walk gives a job without a time limit a kill time: room that was never
 * free is free then. FIFO: job 2 (low, no victim for it) finds no start on n1, which job 1
 * (low, no limit, 8 GPUs) holds for ever; job 3 (high) preempts job 1 and takes 4 GPUs at
 * its kill; job 4, of job 2's shape and length, has a start there now, for the other 4:
 * a full search in that walk gives it its reservation. */
static void test_preemption_in_the_walk_voids_the_reservation_failure(void **state)
{
    (void)state;
    struct sched_policy p;
    sched_policy_defaults(&p);
    p.ordering = SCHED_ORDER_FIFO;
    p.classes[0].default_limit_ms = 0; /* training: none unless asked */
    struct sched *s = mk_sched_with(&p);
    sched_verify_memos(s, true);
    add_node(s, "n1", "H100", 8);
    add_project(s, "lab", "critical", 0, -1);
    submit(s, 1, "lab", "low", "training", 8, 1, 0, T0);
    (void)cycle(s, T0);
    run(s, 1, T0);
    int64_t t = T0 + HOUR;
    submit(s, 2, "lab", "low", "experiment", 4, 1, HOUR, t);
    submit(s, 3, "lab", "high", "experiment", 4, 1, HOUR, t + 1);
    submit(s, 4, "lab", "low", "experiment", 4, 1, HOUR, t + 2);
    struct cyc c = cycle(s, t + 3);
    const struct sched_decision *d = find_dec(c, SCHED_D_SIGNAL, 1);
    assert_non_null(d);
    assert_int_equal(d->preemptor, 3);
    struct sched_job_view v;
    assert_int_equal(sched_job_get(s, 4, &v), 0);
    assert_true(v.reservation_ms > 0);
    struct sched_error err;
    if (sched_check(s, &err) != 0)
        fail_msg("%s", err.message);
    sched_destroy(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_preempts_lower_tier_with_grace),
        cmocka_unit_test(test_young_job_exempt),
        cmocka_unit_test(test_protected_after_class_time),
        cmocka_unit_test(test_service_and_interactive_never),
        cmocka_unit_test(test_max_preemptions_caps),
        cmocka_unit_test(test_same_victim_never_twice),
        cmocka_unit_test(test_victim_order_and_minimal_set),
        cmocka_unit_test(test_guarantee_reclaim_same_tier),
        cmocka_unit_test(test_not_requeueable_ends_preempted),
        cmocka_unit_test(test_victim_gate_by_selector),
        cmocka_unit_test(test_cancel_of_a_victim_voids_the_memos),
        cmocka_unit_test(test_preemption_in_the_walk_voids_the_claimed_memo),
        cmocka_unit_test(test_preemption_in_the_walk_voids_the_reservation_failure),
    };
    return cmocka_run_group_tests_name("core: preemption", tests, NULL, NULL);
}
