/*
 * test_contention.c - reproducers of the core's defects under contention (issue 9), one
 * check each, on small hand-built clusters; each fails on the code before its fix.
 */
#include "helpers.h"

static void check_ok(struct sched *s)
{
    struct sched_error err;
    if (sched_check(s, &err))
        fail_msg("sched_check: %s", err.message);
}

/* #6: a project at its GPU limit still runs its CPU-only jobs, and says QuotaLimit only for
 * the GPU ones. */
static void test_gpu_limit_leaves_cpu_jobs_alone(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    add_node(s, "n1", "H100", 8);
    add_project(s, "lab", "normal", 0, 4);
    submit(s, 1, "lab", NULL, NULL, 4, 1, HOUR, T0);
    struct cyc c = cycle(s, T0);
    assert_non_null(find_dec(c, SCHED_D_START, 1));
    submit(s, 2, "lab", NULL, NULL, 2, 1, HOUR, T0 + 1);
    submit(s, 3, "lab", NULL, NULL, 0, 1, HOUR, T0 + 2);
    c = cycle(s, T0 + 3);
    assert_null(find_dec(c, SCHED_D_START, 2));
    assert_non_null(find_dec(c, SCHED_D_START, 3));
    assert_reason(s, 2, SCHED_R_QUOTA_LIMIT);
    check_ok(s);
    sched_destroy(s);
}

/* #4: starvation age counts from eligibility: a job whose dependency ends after 2 h is
 * not starving the moment it becomes free to run. */
static void test_starvation_counts_from_eligibility(void **state)
{
    (void)state;
    struct sched *s = mk_sched(); /* critical starves after 1 h */
    add_node(s, "n1", "H100", 8);
    add_project(s, "lab", "critical", 0, -1);
    submit(s, 1, "lab", NULL, NULL, 8, 1, 3 * HOUR, T0);
    (void)cycle(s, T0);
    run(s, 1, T0);
    struct sched_job_spec j;
    spec_fill(&j, 2, "lab", NULL, NULL, 0, 1, HOUR, T0);
    j.deps[0].kind = SCHED_DEP_AFTEROK;
    j.deps[0].job_id = 1;
    j.ndeps = 1;
    struct sched_error err;
    assert_int_equal(sched_job_submit(s, &j, T0, &err), 0);
    struct sched_explain x;
    assert_int_equal(sched_explain(s, 2, T0 + HOUR, &x), 0);
    assert_int_equal(x.starve_at_ms, -1); /* no bound while the dependency is unmet */
    end(s, 1, SCHED_EXIT_CODE, 0, T0 + 2 * HOUR);
    (void)cycle(s, T0 + 2 * HOUR);
    submit(s, 3, "lab", NULL, NULL, 8, 1, HOUR, T0 + 2 * HOUR);
    assert_int_equal(sched_explain(s, 3, T0 + 2 * HOUR, &x), 0);
    assert_int_equal(x.starve_at_ms, T0 + 3 * HOUR);
    assert_false(x.starving);
    check_ok(s);
    sched_destroy(s);
}

/* #8: cancel and requeue send the job's own checkpoint signal, not 15. */
static void test_cancel_and_requeue_use_the_job_signal(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    add_node(s, "n1", "H100", 8);
    add_project(s, "lab", "normal", 0, -1);
    for (uint64_t id = 1; id <= 2; id++) {
        struct sched_job_spec j;
        spec_fill(&j, id, "lab", NULL, NULL, 1, 1, HOUR, T0);
        j.signal = 10; /* SIGUSR1 */
        j.has_checkpoint_signal = true;
        struct sched_error err;
        assert_int_equal(sched_job_submit(s, &j, T0, &err), 0);
    }
    (void)cycle(s, T0);
    run(s, 1, T0);
    run(s, 2, T0);
    struct sched_error err;
    assert_int_equal(sched_job_cancel(s, 1, T0 + MIN, &err), 0);
    assert_int_equal(sched_job_requeue(s, 2, T0 + MIN, &err), 0);
    struct cyc c = cycle(s, T0 + MIN);
    assert_int_equal(find_dec(c, SCHED_D_SIGNAL, 1)->signal, 10);
    assert_int_equal(find_dec(c, SCHED_D_SIGNAL, 2)->signal, 10);
    sched_destroy(s);
}

/* #8: a gang that names no GPU type still runs on nodes of one type, and one that no
 * single type could ever hold is refused at submit. */
static void test_gang_without_type_stays_on_one_type(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    add_node(s, "a1", "A100", 8);
    add_node(s, "h1", "H100", 8);
    add_node(s, "h2", "H100", 8);
    add_project(s, "lab", "normal", 0, -1);
    submit(s, 1, "lab", NULL, NULL, 8, 2, HOUR, T0);
    struct cyc c = cycle(s, T0);
    const struct sched_decision *d = find_dec(c, SCHED_D_START, 1);
    assert_non_null(d); /* the only pair of one type: h1 and h2, never a1 */
    const char *x = sched_node_name(s, d->allocs[0].node),
               *y = sched_node_name(s, d->allocs[1].node);
    assert_true((!strcmp(x, "h1") && !strcmp(y, "h2")) || (!strcmp(x, "h2") && !strcmp(y, "h1")));
    check_ok(s);
    struct sched_job_spec j;
    spec_fill(&j, 2, "lab", NULL, NULL, 8, 3, HOUR, T0);
    struct sched_error err;
    assert_int_equal(sched_job_submit(s, &j, T0, &err), -EINVAL);
    assert_string_equal(err.field, "nodes");
    sched_destroy(s);
}

/* #8: policy durations are bounded, so time + duration never overflows. */
static void test_policy_durations_bounded(void **state)
{
    (void)state;
    struct sched_policy p;
    sched_policy_defaults(&p);
    p.tiers[0].starve_after_ms = INT64_MAX;
    struct sched_error err;
    assert_null(sched_create(&p, &err));
    assert_string_equal(err.field, "tiers.starve_after");
    sched_policy_defaults(&p);
    p.min_runtime_ms = INT64_MAX;
    assert_null(sched_create(&p, &err));
    assert_string_equal(err.field, "min_runtime");
}

/* #1: a lower job may not preempt on a node that a higher job's reservation claims and
 * then leave it idle: the claim binds the lower preemptor. */
static void test_lower_preemptor_respects_higher_reservation(void **state)
{
    (void)state;
    struct sched_policy p;
    sched_policy_defaults(&p);
    p.min_runtime_ms = 0;
    struct sched *s = mk_sched_with(&p);
    add_node(s, "n1", "H100", 8);
    add_project(s, "lab", "critical", 0, -1);
    /* a service (never preemptible) holds 4 GPUs for 1 h, a low job the other 4 */
    submit(s, 1, "lab", "normal", "service", 4, 1, 0, T0);
    submit(s, 2, "lab", "low", "exploration", 4, 1, HOUR, T0);
    (void)cycle(s, T0);
    run(s, 1, T0);
    run(s, 2, T0);
    /* a critical job wants all 8: it cannot preempt the service, so it reserves nothing
       it could use; a high job needs 4 and may preempt job 2 */
    submit(s, 3, "lab", "high", "experiment", 4, 1, HOUR, T0 + MIN);
    struct cyc c = cycle(s, T0 + MIN);
    assert_non_null(find_dec(c, SCHED_D_SIGNAL, 2));
    assert_reason(s, 3, SCHED_R_PREEMPTING);
    /* a normal job of the same size arriving now may not take the freed room */
    submit(s, 4, "lab", "normal", "experiment", 4, 1, HOUR, T0 + MIN + 1);
    end(s, 2, SCHED_EXIT_SIGNAL, 15, T0 + MIN + 2 * SEC);
    c = cycle(s, T0 + MIN + 2 * SEC);
    assert_non_null(find_dec(c, SCHED_D_START, 3));
    assert_null(find_dec(c, SCHED_D_START, 4));
    check_ok(s);
    sched_destroy(s);
}

/* The reclaim memo (struct preempt_memo): a failed reclaim search holds for every project
 * that may reclaim, until a project goes over its guarantee. Here job 3 (project b) finds no
 * victim: a is at its guarantee. Then a's job 4 starts in the same walk and a goes over;
 * job 5 (project c) must search again and reclaim job 1 rather than trust the memo. */
static void test_reclaim_memo_ends_when_a_project_goes_over(void **state)
{
    (void)state;
    struct sched_policy p;
    sched_policy_defaults(&p);
    p.ordering = SCHED_ORDER_FIFO; /* walk in submission order: 3, 4, 5 */
    struct sched *s = mk_sched_with(&p);
    sched_verify_memos(s, true);
    add_node(s, "n1", "H100", 8);
    add_node(s, "n2", "H100", 8);
    add_project(s, "a", "normal", 8, -1);
    add_project(s, "b", "normal", 8, -1);
    add_project(s, "c", "normal", 8, -1);
    add_project(s, "x", "high", 0, -1);
    submit(s, 1, "a", NULL, "experiment", 8, 1, 10 * HOUR, T0);
    submit(s, 2, "x", NULL, "experiment", 4, 1, 20 * HOUR, T0);
    (void)cycle(s, T0);
    run(s, 1, T0);
    run(s, 2, T0);
    int64_t t = T0 + 2 * HOUR;
    submit(s, 3, "b", NULL, "experiment", 8, 1, HOUR, t);
    submit(s, 4, "a", NULL, "experiment", 4, 1, HOUR, t + 1);
    submit(s, 5, "c", NULL, "experiment", 8, 1, HOUR, t + 2);
    struct cyc c = cycle(s, t + 3);
    assert_null(find_dec(c, SCHED_D_START, 3));
    assert_non_null(find_dec(c, SCHED_D_START, 4));
    assert_non_null(find_dec(c, SCHED_D_SIGNAL, 1)); /* reclaimed for job 5 */
    assert_reason(s, 5, SCHED_R_PREEMPTING);
    check_ok(s);
    sched_destroy(s);
}

/* max_starts_per_cycle slices a big cycle: each stops after that many starts, says so,
 * and asks for the next one at once; the last, with nothing more to start, does not. */
static void test_start_cap_slices_a_big_cycle(void **state)
{
    (void)state;
    struct sched_policy p;
    sched_policy_defaults(&p);
    p.max_starts_per_cycle = 3;
    struct sched *s = mk_sched_with(&p);
    add_node(s, "n1", "H100", 8);
    add_project(s, "lab", "normal", 0, -1);
    for (uint64_t id = 1; id <= 10; id++)
        submit(s, id, "lab", NULL, NULL, 1, 1, HOUR, T0);
    int expect[] = {3, 3, 2, 0};
    for (int k = 0; k < 4; k++) {
        struct sched_cycle_stats st;
        struct cyc c;
        c.d = sched_cycle(s, T0 + k, SCHED_CYCLE_INCREMENTAL, &c.n, &st);
        assert_int_equal(count_dec(c, SCHED_D_START), expect[k]);
        assert_int_equal(st.start_capped, expect[k] == 3);
        if (expect[k] == 3)
            assert_int_equal(sched_next_wakeup(s, T0 + k), T0 + k);
        else
            assert_true(sched_next_wakeup(s, T0 + k) > T0 + k);
        check_ok(s);
    }
    assert_reason(s, 9, SCHED_R_RESOURCES);
    sched_destroy(s);
}

/* The default cap bounds one loop turn of docketd: 256 starts a cycle held it 40-80 ms and
 * /healthz waited up to 290 ms (bench/RESULTS.md, "Starts in short cycles"). With no
 * policy set, 100 jobs and 100 free GPUs start in cycles of at most 64. */
static void test_default_start_cap_is_short(void **state)
{
    (void)state;
    struct sched_policy p;
    sched_policy_defaults(&p);
    assert_true(p.max_starts_per_cycle > 0 && p.max_starts_per_cycle <= 64);
    struct sched *s = mk_sched_with(&p);
    for (int i = 0; i < 13; i++) {
        char name[16];
        snprintf(name, sizeof(name), "n%d", i);
        add_node(s, name, "H100", 8);
    }
    add_project(s, "lab", "normal", 0, -1);
    for (uint64_t id = 1; id <= 100; id++)
        submit(s, id, "lab", NULL, NULL, 1, 1, HOUR, T0);
    struct sched_cycle_stats st;
    struct cyc c;
    c.d = sched_cycle(s, T0, SCHED_CYCLE_INCREMENTAL, &c.n, &st);
    assert_int_equal(count_dec(c, SCHED_D_START), p.max_starts_per_cycle);
    assert_true(st.start_capped);
    c.d = sched_cycle(s, T0 + 1, SCHED_CYCLE_INCREMENTAL, &c.n, &st);
    assert_int_equal(count_dec(c, SCHED_D_START), 100 - p.max_starts_per_cycle);
    check_ok(s);
    sched_destroy(s);
}

/* A policy change that makes running jobs preemptible (a shorter min_runtime) lets a
 * blocked job preempt at the next cycle: the victims are counted again under the new
 * policy, and the failed search's memo ends with the old one. */
static void test_policy_change_makes_victims(void **state)
{
    (void)state;
    struct sched_policy p;
    sched_policy_defaults(&p);
    p.min_runtime_ms = HOUR;
    struct sched *s = mk_sched_with(&p);
    sched_verify_memos(s, true);
    add_node(s, "n1", "H100", 8);
    add_project(s, "lab", "critical", 0, -1);
    submit(s, 1, "lab", "low", "experiment", 8, 1, 4 * HOUR, T0);
    (void)cycle(s, T0);
    run(s, 1, T0);
    submit(s, 2, "lab", "high", "experiment", 8, 1, HOUR, T0 + 10 * MIN);
    struct cyc c = cycle(s, T0 + 10 * MIN);
    assert_int_equal(count_dec(c, SCHED_D_SIGNAL), 0); /* job 1 is too young */
    p.min_runtime_ms = 5 * MIN;
    struct sched_error err;
    assert_int_equal(sched_set_policy(s, &p, &err), 0);
    c = cycle(s, T0 + 11 * MIN);
    assert_non_null(find_dec(c, SCHED_D_SIGNAL, 1));
    assert_reason(s, 2, SCHED_R_PREEMPTING);
    check_ok(s);
    sched_destroy(s);
}

/* Lowering a project's guarantee makes its running jobs borrowers: a project under its
 * own guarantee reclaims at the next cycle (the failed reclaim search's memo ends with
 * the project's change). */
static void test_lowered_guarantee_makes_borrowers(void **state)
{
    (void)state;
    struct sched_policy p;
    sched_policy_defaults(&p);
    p.backfill = false; /* no reservation: only the shape's memo speaks for job 2 */
    struct sched *s = mk_sched_with(&p);
    sched_verify_memos(s, true);
    add_node(s, "n1", "H100", 8);
    add_project(s, "a", "normal", 8, -1);
    add_project(s, "b", "normal", 8, -1);
    submit(s, 1, "a", NULL, "experiment", 8, 1, 10 * HOUR, T0);
    (void)cycle(s, T0);
    run(s, 1, T0);
    submit(s, 2, "b", NULL, "experiment", 8, 1, HOUR, T0 + HOUR);
    struct cyc c = cycle(s, T0 + HOUR);
    assert_int_equal(count_dec(c, SCHED_D_SIGNAL), 0); /* a is within its guarantee */
    add_project(s, "a", "normal", 4, -1);
    c = cycle(s, T0 + HOUR + SEC);
    assert_non_null(find_dec(c, SCHED_D_SIGNAL, 1));
    assert_reason(s, 2, SCHED_R_PREEMPTING);
    check_ok(s);
    sched_destroy(s);
}

/* #3: a preemptor that held a reservation ends up with exactly one. */
static void test_preemptor_keeps_one_reservation(void **state)
{
    (void)state;
    struct sched_policy p;
    sched_policy_defaults(&p);
    p.min_runtime_ms = 10 * MIN;
    struct sched *s = mk_sched_with(&p);
    add_node(s, "n1", "H100", 8);
    add_project(s, "lab", "critical", 0, -1);
    submit(s, 1, "lab", "low", "exploration", 8, 1, HOUR, T0);
    (void)cycle(s, T0);
    run(s, 1, T0);
    submit(s, 2, "lab", "high", "experiment", 8, 1, HOUR, T0 + MIN);
    struct cyc c = cycle(s, T0 + MIN); /* victim too young: a reservation instead */
    assert_null(find_dec(c, SCHED_D_SIGNAL, 1));
    struct sched_job_view v;
    assert_int_equal(sched_job_get(s, 2, &v), 0);
    assert_true(v.reservation_ms > 0);
    c = cycle(s, T0 + 10 * MIN);
    assert_non_null(find_dec(c, SCHED_D_SIGNAL, 1));
    check_ok(s); /* sched_check counts one claim per reservation and node */
    sched_destroy(s);
}

/* Room a killed job has not yet given back goes to the claims that waited for it, not to
 * a job starting meanwhile (property seed 5190). Job 3 preempts job 1 on n1 and reserves
 * its room plus the 2 GPUs free there. Then n2 fails: the gang job 2 is killed on n1 too,
 * its release due at once but not yet obeyed. When job 1 has left, a critical job arrives
 * that fits beside job 3's claim only if job 2's GPUs were free already: it must not start
 * there (job 3 would then wait on job 2, which was never its to wait for); job 3 starts. */
static void test_overdue_release_stays_with_the_claim(void **state)
{
    (void)state;
    struct sched_policy p;
    sched_policy_defaults(&p);
    p.min_runtime_ms = 0;
    struct sched *s = mk_sched_with(&p);
    add_node(s, "n1", "H100", 8);
    add_node(s, "n2", "H100", 2);
    add_project(s, "lab", "critical", 0, -1);
    submit(s, 1, "lab", "low", "exploration", 4, 1, HOUR, T0);
    submit(s, 2, "lab", "normal", "interactive", 2, 2, HOUR, T0);
    (void)cycle(s, T0);
    run(s, 1, T0);
    run(s, 2, T0);
    submit(s, 3, "lab", "high", "experiment", 6, 1, HOUR, T0 + MIN);
    struct cyc c = cycle(s, T0 + MIN);
    assert_non_null(find_dec(c, SCHED_D_SIGNAL, 1));
    struct sched_error err;
    assert_int_equal(sched_node_set_state(s, "n2", SCHED_NODE_DOWN, T0 + MIN + SEC, &err), 0);
    c = cycle(s, T0 + MIN + SEC);
    const struct sched_decision *k = find_dec(c, SCHED_D_KILL, 2);
    assert_non_null(k); /* its part on n1: still there */
    /* the kill is the gang's state change: an event with from and to (issue 33 #12) */
    assert_int_equal(k->from, SCHED_RUNNING);
    assert_int_equal(k->to, SCHED_STOPPING);
    end(s, 1, SCHED_EXIT_SIGNAL, 15, T0 + MIN + 10 * SEC);
    submit(s, 4, "lab", "critical", "experiment", 2, 1, HOUR, T0 + MIN + 10 * SEC);
    c = cycle(s, T0 + MIN + 10 * SEC);
    assert_null(find_dec(c, SCHED_D_START, 4));
    assert_non_null(find_dec(c, SCHED_D_START, 3)); /* its victim gone, its room whole */
    check_ok(s);
    sched_destroy(s);
}

/* The placement memo of a starving job (place_job_memo): cycles with nothing changed
 * answer "no room" from it, and the cycle after a node frees looks at that node again and
 * starts the job there. */
static void test_starving_memo_sees_the_freed_node(void **state)
{
    (void)state;
    struct sched *s = mk_sched(); /* critical starves after 1 h */
    add_node(s, "n1", "H100", 8);
    add_node(s, "n2", "H100", 8);
    add_project(s, "lab", "critical", 0, -1);
    submit(s, 1, "lab", NULL, NULL, 8, 1, 10 * HOUR, T0);
    submit(s, 2, "lab", NULL, NULL, 8, 1, 10 * HOUR, T0);
    (void)cycle(s, T0);
    run(s, 1, T0);
    run(s, 2, T0);
    submit(s, 3, "lab", NULL, NULL, 8, 1, HOUR, T0 + 1);
    for (int64_t t = T0 + HOUR + MIN; t < T0 + 4 * HOUR; t += 20 * MIN) {
        struct cyc c = cycle(s, t);
        assert_null(find_dec(c, SCHED_D_START, 3));
        check_ok(s);
    }
    struct sched_explain x;
    assert_int_equal(sched_explain(s, 3, T0 + 4 * HOUR, &x), 0);
    assert_true(x.starving);
    end(s, 2, SCHED_EXIT_CODE, 0, T0 + 4 * HOUR);
    struct cyc c = cycle(s, T0 + 4 * HOUR);
    const struct sched_decision *d = find_dec(c, SCHED_D_START, 3);
    assert_non_null(d);
    check_ok(s);
    sched_destroy(s);
}

static void submit_in(struct sched *s, uint64_t id, const char *project, const char *zone, int gpus,
                      int64_t limit_ms, int64_t now)
{
    struct sched_job_spec j;
    spec_fill(&j, id, project, NULL, NULL, gpus, 1, limit_ms, now);
    snprintf(j.selectors[0].key, SCHED_NAME_MAX, "zone");
    snprintf(j.selectors[0].value, SCHED_NAME_MAX, "%s", zone);
    j.nselectors = 1;
    struct sched_error err;
    assert_int_equal(sched_job_submit(s, &j, now, &err), 0);
}

static struct cyc cycle_stats(struct sched *s, int64_t now, struct sched_cycle_stats *st)
{
    struct cyc c;
    c.d = sched_cycle(s, now, SCHED_CYCLE_INCREMENTAL, &c.n, st);
    check_ok(s);
    return c;
}

/* A starving job whose service changed nothing is not served again while nothing it
 * depends on moves (struct starving_entry): jobs starting and ending on nodes its selectors
 * do not match pass it by; a job of its own project starting elsewhere (its usage, which
 * its project's GPU limit reads) serves it again and holds it back at the limit, and the
 * end of the job on its node starts it. With the memos verified, every service skipped is run all
 * the same and must change nothing. */
static void test_quiet_starving_job_wakes_for_its_nodes(void **state)
{
    (void)state;
    struct sched_policy p; /* critical starves after 1 h */
    sched_policy_defaults(&p);
    p.fairshare_refresh_ms = 24 * HOUR; /* a refresh makes the starving list anew */
    struct sched *s = mk_sched_with(&p);
    sched_verify_memos(s, true);
    add_node_l(s, "a1", "H100", 8, "zone", "a");
    add_node_l(s, "b1", "H100", 8, "zone", "b");
    add_project(s, "lab", "critical", 0, 16); /* job 2 fits its GPU limit while it waits */
    add_project(s, "other", "critical", 0, -1);
    submit_in(s, 1, "lab", "a", 8, 10 * HOUR, T0);
    (void)cycle(s, T0);
    run(s, 1, T0);
    submit_in(s, 2, "lab", "a", 8, HOUR, T0 + 1);
    struct sched_cycle_stats st;
    (void)cycle_stats(s, T0 + HOUR + MIN, &st);
    assert_int_equal(st.starving_served, 1); /* served once: it takes a sticky reservation */
    (void)cycle_stats(s, T0 + HOUR + 2 * MIN, &st);
    assert_int_equal(st.starving_served, 1); /* ... and, changing nothing, is proven quiet */
    uint64_t id = 10;
    for (int64_t t = T0 + HOUR + 10 * MIN; t < T0 + 3 * HOUR; t += 10 * MIN, id++) {
        submit_in(s, id, "other", "b", 4, HOUR, t);
        assert_non_null(find_dec(cycle_stats(s, t, &st), SCHED_D_START, id));
        run(s, id, t);
        end(s, id, SCHED_EXIT_CODE, 0, t + MIN);
        assert_int_equal(st.starving_served, 0);
        assert_int_equal(st.starving_quiet, 1);
        assert_int_equal(reason_of(s, 2), SCHED_R_RESOURCES);
    }
    submit_in(s, id, "lab", "b", 4, HOUR, T0 + 3 * HOUR);
    (void)cycle_stats(s, T0 + 3 * HOUR, &st);
    run(s, id, T0 + 3 * HOUR);
    (void)cycle_stats(s, T0 + 3 * HOUR + MIN, &st);
    assert_int_equal(st.starving_served, 1);  /* its project's usage moved */
    assert_reason(s, 2, SCHED_R_QUOTA_LIMIT); /* 4 + 8 running, 8 more would pass 16 */
    end(s, id, SCHED_EXIT_CODE, 0, T0 + 3 * HOUR + 2 * MIN);
    end(s, 1, SCHED_EXIT_CODE, 0, T0 + 4 * HOUR);
    struct cyc c = cycle(s, T0 + 4 * HOUR);
    assert_non_null(find_dec(c, SCHED_D_START, 2));
    check_ok(s);
    sched_destroy(s);
}

/* Without selectors every change of a node is one of its nodes; the proof then rests on
 * room: a change of a node that has no room for the shape, and had none, passes a starving
 * job by (QUIET_NO_ROOM, and QUIET_CLAIMED for one held off by claims where there is room),
 * and so does its own project's usage when no limit reads it. A change where it has or had
 * room serves it again: job 2 (8 GPUs) holds n1 from job 1's end; job 3 (4 GPUs, 10 h) is
 * held off n1's 4 free GPUs by that claim (its own room is n2, from job 5's end); 2-GPU jobs come
 * and go on n3 and lab's own jobs on n4 (both too small to ever have room for either); then a short
 * job takes n1's 4 free GPUs (job 3 has no room anywhere now: its reason moves), and job 1's end
 * starts job 2. */
static void test_quiet_starving_job_rests_on_room(void **state)
{
    (void)state;
    struct sched_policy p; /* critical starves after 1 h */
    sched_policy_defaults(&p);
    p.fairshare_refresh_ms = 24 * HOUR;
    struct sched *s = mk_sched_with(&p);
    sched_verify_memos(s, true);
    add_node(s, "n1", "H100", 8);
    add_node(s, "n2", "H100", 8);
    add_node(s, "n3", "H100", 2);
    add_node(s, "n4", "H100", 2);
    add_project(s, "lab", "critical", 0, -1); /* no limit: its usage is read by none */
    add_project(s, "other", "critical", 0, -1);
    submit(s, 1, "lab", NULL, NULL, 4, 1, 3 * HOUR, T0);
    submit(s, 5, "lab", NULL, NULL, 8, 1, 3 * HOUR + 30 * MIN, T0); /* job 3's room, later */
    (void)cycle(s, T0);
    run(s, 1, T0);
    run(s, 5, T0);
    submit(s, 2, "lab", NULL, NULL, 8, 1, HOUR, T0 + 1);
    submit(s, 3, "lab", NULL, NULL, 4, 1, 10 * HOUR, T0 + 2);
    struct sched_cycle_stats st;
    (void)cycle_stats(s, T0 + HOUR + MIN, &st);
    (void)cycle_stats(s, T0 + HOUR + 2 * MIN, &st);
    assert_int_equal(st.starving_served, 2); /* both hold sticky rooms, and are proven quiet */
    assert_reason(s, 2, SCHED_R_RESOURCES);
    assert_reason(s, 3, SCHED_R_RESERVATION);
    uint64_t id = 10;
    for (int64_t t = T0 + HOUR + 10 * MIN; t < T0 + 2 * HOUR; t += 10 * MIN, id += 2) {
        submit(s, id, "other", NULL, NULL, 2, 1, 5 * MIN, t);
        submit(s, id + 1, "lab", NULL, NULL, 2, 1, 5 * MIN, t);
        struct cyc c = cycle_stats(s, t, &st);
        assert_non_null(find_dec(c, SCHED_D_START, id));
        assert_non_null(find_dec(c, SCHED_D_START, id + 1));
        run(s, id, t);
        run(s, id + 1, t);
        end(s, id, SCHED_EXIT_CODE, 0, t + MIN);
        end(s, id + 1, SCHED_EXIT_CODE, 0, t + MIN);
        assert_int_equal(st.starving_served, 0);
        assert_int_equal(st.starving_quiet, 2);
    }
    submit(s, id, "other", NULL, NULL, 4, 1, 30 * MIN, T0 + 2 * HOUR);
    struct cyc c = cycle_stats(s, T0 + 2 * HOUR, &st);
    assert_non_null(find_dec(c, SCHED_D_START, id)); /* before job 2's claim, on n1 */
    run(s, id, T0 + 2 * HOUR);
    (void)cycle_stats(s, T0 + 2 * HOUR + MIN, &st);
    assert_true(st.starving_served >= 1); /* job 3: n1 had room for it */
    assert_reason(s, 3, SCHED_R_RESOURCES);
    end(s, id, SCHED_EXIT_CODE, 0, T0 + 2 * HOUR + 2 * MIN);
    end(s, 1, SCHED_EXIT_CODE, 0, T0 + 3 * HOUR);
    c = cycle(s, T0 + 3 * HOUR);
    assert_non_null(find_dec(c, SCHED_D_START, 2));
    check_ok(s);
    sched_destroy(s);
}

/* A refresh makes the starving list anew but keeps a proof that still holds: the queue's
 * keys move, which no starving service reads. A boost that moves the job's rank voids it:
 * the job running on its node, of its own tier until then, is a lower tier's now, and the
 * boosted job takes it. */
static void test_quiet_proof_outlives_a_refresh(void **state)
{
    (void)state;
    struct sched_policy p;
    sched_policy_defaults(&p);
    p.tiers[1].starve_after_ms = HOUR; /* high starves after 1 h too */
    struct sched *s = mk_sched_with(&p);
    sched_verify_memos(s, true);
    add_node(s, "n1", "H100", 8);
    add_project(s, "lab", "high", 0, -1);
    add_project(s, "other", "high", 0, -1);
    submit(s, 1, "other", NULL, NULL, 8, 1, 10 * HOUR, T0);
    (void)cycle(s, T0);
    run(s, 1, T0);
    submit(s, 2, "lab", NULL, NULL, 8, 1, HOUR, T0 + 1);
    struct sched_cycle_stats st;
    (void)cycle_stats(s, T0 + HOUR + MIN, &st);
    (void)cycle_stats(s, T0 + HOUR + 2 * MIN, &st);
    assert_int_equal(st.starving_served, 1); /* proven quiet by this service */
    struct cyc c;
    c.d = sched_cycle(s, T0 + HOUR + 3 * MIN, SCHED_CYCLE_REFRESH, &c.n, &st);
    assert_true(st.full);
    assert_int_equal(st.starving_served, 0);
    assert_int_equal(st.starving_quiet, 1);
    struct sched_error err;
    assert_int_equal(sched_project_boost(s, "lab", 1, T0 + 5 * HOUR, T0 + HOUR + 4 * MIN, &err), 0);
    c.d = sched_cycle(s, T0 + HOUR + 4 * MIN, SCHED_CYCLE_REFRESH, &c.n, &st);
    assert_int_equal(st.starving_served, 1); /* critical now: served as such */
    assert_non_null(find_dec(c, SCHED_D_SIGNAL, 1));
    assert_reason(s, 2, SCHED_R_PREEMPTING);
    check_ok(s);
    sched_destroy(s);
}

/* A quiet starving job whose nodes moved but whose shape found no room in the walk is
 * still served when a victim is there for it (QUIET_NO_ROOM): two starving jobs of one
 * shape, two victims that leave min_runtime together; the first preempts one, the second,
 * with the room still short, must preempt the other and not wait for its reservation. */
static void test_quiet_starving_job_preempts_when_victims_come(void **state)
{
    (void)state;
    struct sched_policy p;
    sched_policy_defaults(&p);
    p.fairshare_refresh_ms = 24 * HOUR;
    p.min_runtime_ms = 3 * HOUR; /* the victims come after the starvation bound (1 h) */
    struct sched *s = mk_sched_with(&p);
    sched_verify_memos(s, true);
    add_node_l(s, "a1", "H100", 8, "zone", "a");
    add_node_l(s, "a2", "H100", 8, "zone", "a");
    add_project(s, "lab", "critical", 0, -1);
    struct sched_job_spec j;
    for (uint64_t id = 1; id <= 2; id++) {
        spec_fill(&j, id, "lab", "low", "training", 8, 1, 48 * HOUR, T0);
        struct sched_error err;
        assert_int_equal(sched_job_submit(s, &j, T0, &err), 0);
    }
    (void)cycle(s, T0);
    run(s, 1, T0);
    run(s, 2, T0);
    submit_in(s, 3, "lab", "a", 8, HOUR, T0 + 1);
    submit_in(s, 4, "lab", "a", 8, HOUR, T0 + 2);
    struct sched_cycle_stats st;
    (void)cycle_stats(s, T0 + HOUR + MIN, &st);
    (void)cycle_stats(s, T0 + HOUR + 2 * MIN, &st);
    (void)cycle_stats(s, T0 + 2 * HOUR, &st);
    assert_int_equal(st.starving_quiet, 2);            /* both hold sticky rooms, no victim yet */
    struct cyc c = cycle_stats(s, T0 + 3 * HOUR, &st); /* both victims leave min_runtime */
    assert_non_null(find_dec(c, SCHED_D_SIGNAL, 1));
    assert_non_null(find_dec(c, SCHED_D_SIGNAL, 2));
    assert_reason(s, 3, SCHED_R_PREEMPTING);
    assert_reason(s, 4, SCHED_R_PREEMPTING);
    sched_destroy(s);
}

/* The scene of the two tests below: n1 runs job 1 (8 GPUs until 2 h), n2 jobs 2 and 3
 * (4 GPUs each, until 10 h and `job3_ends`); lab's jobs 5, 6 and 7 (4 GPUs, `runs` long)
 * starve from 1 h, with no room anywhere (proven quiet by the third cycle), until job 3
 * ends at 1 h 5 min. Returns that cycle. */
static struct cyc claims_scene(struct sched **out, int64_t job3_ends, const int64_t runs[3],
                               struct sched_cycle_stats *st)
{
    struct sched_policy p; /* critical starves after 1 h */
    sched_policy_defaults(&p);
    p.fairshare_refresh_ms = 24 * HOUR;
    struct sched *s = mk_sched_with(&p);
    sched_verify_memos(s, true);
    add_node_l(s, "n1", "H100", 8, "zone", "a");
    add_node_l(s, "n2", "H100", 8, "zone", "b");
    add_project(s, "lab", "critical", 0, -1);
    add_project(s, "other", "critical", 0, -1);
    submit_in(s, 1, "other", "a", 8, 2 * HOUR, T0);
    submit_in(s, 2, "other", "b", 4, 10 * HOUR, T0);
    submit_in(s, 3, "other", "b", 4, job3_ends, T0);
    (void)cycle(s, T0);
    for (uint64_t id = 1; id <= 3; id++)
        run(s, id, T0);
    for (uint64_t id = 5; id <= 7; id++)
        submit(s, id, "lab", NULL, NULL, 4, 1, runs[id - 5], T0 + (int64_t)id);
    (void)cycle_stats(s, T0 + HOUR + MIN, st);
    (void)cycle_stats(s, T0 + HOUR + 2 * MIN, st);
    (void)cycle_stats(s, T0 + HOUR + 3 * MIN, st);
    assert_int_equal(st->starving_quiet, 3); /* no room anywhere: sticky rooms, proven quiet */
    assert_reason(s, 6, SCHED_R_RESOURCES);
    end(s, 3, SCHED_EXIT_CODE, 0, T0 + HOUR + 5 * MIN);
    *out = s;
    return cycle_stats(s, T0 + HOUR + 5 * MIN, st);
}

/* The placed-by-claims part of the proof, learnt in the walk itself: claims that held one
 * starving job off every node with room for its shape hold off each later job of that shape
 * at least as long whose own reservation has no room now, so those are passed by (their
 * reason, Resources while there was no room anywhere, becomes Reservation all the same);
 * a job whose own reservation has the room is served, and starts there. Jobs 5 and 6 (5 h)
 * hold n1 from 2 h, job 7 holds n2 from 3 h (job 3's end); job 3 ends at 1 h: n2 has 4 free
 * GPUs, and job 7's claim on them from 3 h holds off jobs 5 and 6. */
static void test_claims_in_the_walk_pass_starving_jobs_by(void **state)
{
    (void)state;
    struct sched *s;
    struct sched_cycle_stats st;
    struct cyc c = claims_scene(&s, 3 * HOUR, (int64_t[3]){5 * HOUR, 5 * HOUR, 5 * HOUR}, &st);
    assert_non_null(find_dec(c, SCHED_D_START, 7)); /* on its own room, ahead of its time */
    assert_int_equal(st.starving_served, 2);        /* jobs 5 and 7 */
    assert_int_equal(st.starving_quiet, 1);         /* job 6, held off as job 5 was */
    assert_reason(s, 5, SCHED_R_RESERVATION);
    assert_reason(s, 6, SCHED_R_RESERVATION);
    check_ok(s);
    sched_destroy(s);
}

/* ... and only jobs at least as long: a shorter one is served, and fits before the claim.
 * Job 3 ends at 2.5 h now, so job 7 holds n2 from 2.5 h; job 6 runs 1 h, ends before it. */
static void test_claims_in_the_walk_serve_a_shorter_job(void **state)
{
    (void)state;
    struct sched *s;
    struct sched_cycle_stats st;
    struct cyc c =
        claims_scene(&s, 2 * HOUR + 30 * MIN, (int64_t[3]){5 * HOUR, HOUR, 5 * HOUR}, &st);
    assert_non_null(find_dec(c, SCHED_D_START, 6));
    assert_null(find_dec(c, SCHED_D_START, 7));
    assert_reason(s, 5, SCHED_R_RESERVATION);
    check_ok(s);
    sched_destroy(s);
}

/* Room is counted per partition too: in a partitioned cluster a start or an end in one
 * partition must not serve again the starving jobs of every other one. Job 2 (zone a,
 * 8 GPUs) waits for a1; 2-GPU jobs come and go on a2 (its own partition, never room for it)
 * and 8-GPU jobs on b1 (room for its shape, but not a node it may use). */
static void test_quiet_room_is_counted_per_partition(void **state)
{
    (void)state;
    struct sched_policy p;
    sched_policy_defaults(&p);
    p.fairshare_refresh_ms = 24 * HOUR;
    struct sched *s = mk_sched_with(&p);
    sched_verify_memos(s, true);
    add_node_l(s, "a1", "H100", 8, "zone", "a");
    add_node_l(s, "a2", "H100", 2, "zone", "a");
    add_node_l(s, "b1", "H100", 8, "zone", "b");
    add_project(s, "lab", "critical", 0, -1);
    add_project(s, "other", "critical", 0, -1);
    submit_in(s, 1, "other", "a", 8, 10 * HOUR, T0);
    (void)cycle(s, T0);
    run(s, 1, T0);
    submit_in(s, 2, "lab", "a", 8, HOUR, T0 + 1);
    struct sched_cycle_stats st;
    (void)cycle_stats(s, T0 + HOUR + MIN, &st);
    (void)cycle_stats(s, T0 + HOUR + 2 * MIN, &st);
    (void)cycle_stats(s, T0 + HOUR + 3 * MIN, &st);
    assert_int_equal(st.starving_quiet, 1);
    uint64_t id = 10;
    for (int64_t t = T0 + HOUR + 10 * MIN; t < T0 + 3 * HOUR; t += 10 * MIN, id += 2) {
        submit_in(s, id, "other", "a", 2, HOUR, t);
        submit_in(s, id + 1, "other", "b", 8, HOUR, t);
        struct cyc c = cycle_stats(s, t, &st);
        assert_non_null(find_dec(c, SCHED_D_START, id));
        assert_non_null(find_dec(c, SCHED_D_START, id + 1));
        run(s, id, t);
        run(s, id + 1, t);
        end(s, id, SCHED_EXIT_CODE, 0, t + MIN);
        end(s, id + 1, SCHED_EXIT_CODE, 0, t + MIN);
        (void)cycle_stats(s, t + MIN, &st);
        assert_int_equal(st.starving_served, 0);
        assert_int_equal(st.starving_quiet, 1);
    }
    end(s, 1, SCHED_EXIT_CODE, 0, T0 + 3 * HOUR);
    assert_non_null(find_dec(cycle(s, T0 + 3 * HOUR), SCHED_D_START, 2));
    check_ok(s);
    sched_destroy(s);
}

/* The per-shape memo of failed reservations is for ordinary searches only: a starving
 * job's search honours every claim (here a lower job's that never ends), an ordinary one
 * only those of jobs that outrank it, so the starving job's failure must not cost the
 * ordinary job of its shape its reservation. */
static void test_starving_reservation_failure_leaves_ordinary_search(void **state)
{
    (void)state;
    struct sched_policy p;
    sched_policy_defaults(&p);
    p.tiers[0].starve_after_ms = SEC; /* critical starves at once */
    struct sched *s = mk_sched_with(&p);
    add_node(s, "n1", "H100", 8);
    add_project(s, "lab", "critical", 0, -1);
    submit(s, 1, "lab", "normal", NULL, 8, 1, 10 * HOUR, T0);
    (void)cycle(s, T0);
    run(s, 1, T0);
    submit(s, 2, "lab", "low", "service", 8, 1, 0, T0 + 1); /* no limit: its claim never ends */
    (void)cycle(s, T0 + 1);
    assert_reason(s, 2, SCHED_R_RESOURCES);
    submit(s, 3, "lab", "critical", NULL, 8, 1, HOUR, T0 + 2);
    submit(s, 4, "lab", "high", NULL, 8, 1, 2 * HOUR, T0 + 2);
    (void)cycle(s, T0 + 2 * SEC);
    check_ok(s);
    struct sched_explain x;
    assert_int_equal(sched_explain(s, 3, T0 + 2 * SEC, &x), 0);
    assert_true(x.starving);
    assert_int_equal(sched_explain(s, 4, T0 + 2 * SEC, &x), 0);
    assert_int_equal(x.reason, SCHED_R_RESOURCES);
    assert_true(x.forecast_start_ms >= T0 + 10 * HOUR); /* it holds a reservation */
    sched_destroy(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_limit_leaves_cpu_jobs_alone),
        cmocka_unit_test(test_starvation_counts_from_eligibility),
        cmocka_unit_test(test_cancel_and_requeue_use_the_job_signal),
        cmocka_unit_test(test_gang_without_type_stays_on_one_type),
        cmocka_unit_test(test_policy_durations_bounded),
        cmocka_unit_test(test_lower_preemptor_respects_higher_reservation),
        cmocka_unit_test(test_preemptor_keeps_one_reservation),
        cmocka_unit_test(test_reclaim_memo_ends_when_a_project_goes_over),
        cmocka_unit_test(test_start_cap_slices_a_big_cycle),
        cmocka_unit_test(test_default_start_cap_is_short),
        cmocka_unit_test(test_policy_change_makes_victims),
        cmocka_unit_test(test_lowered_guarantee_makes_borrowers),
        cmocka_unit_test(test_overdue_release_stays_with_the_claim),
        cmocka_unit_test(test_starving_memo_sees_the_freed_node),
        cmocka_unit_test(test_quiet_starving_job_wakes_for_its_nodes),
        cmocka_unit_test(test_quiet_starving_job_rests_on_room),
        cmocka_unit_test(test_quiet_proof_outlives_a_refresh),
        cmocka_unit_test(test_quiet_starving_job_preempts_when_victims_come),
        cmocka_unit_test(test_starving_reservation_failure_leaves_ordinary_search),
        cmocka_unit_test(test_claims_in_the_walk_pass_starving_jobs_by),
        cmocka_unit_test(test_claims_in_the_walk_serve_a_shorter_job),
        cmocka_unit_test(test_quiet_room_is_counted_per_partition),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
