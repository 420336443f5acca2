/*
 * test_life.c - a job's life: dependencies, time limits, retries, node failures, hold,
 * release, cancel, requeue, arrays, restore after a controller restart, and the explain
 * and forecast answers.
 */
#include "helpers.h"

static struct sched *small(void)
{
    struct sched *s = mk_sched();
    add_node(s, "n1", "H100", 8);
    add_project(s, "lab", "high", 0, -1);
    return s;
}

static void submit_dep(struct sched *s, uint64_t id, enum sched_dep_kind k, uint64_t on,
                       int64_t now)
{
    struct sched_job_spec j;
    spec_fill(&j, id, "lab", NULL, NULL, 1, 1, HOUR, now);
    j.deps[0].kind = k;
    j.deps[0].job_id = on;
    j.ndeps = 1;
    struct sched_error err;
    assert_int_equal(sched_job_submit(s, &j, now, &err), 0);
}

static void test_afterok_waits_then_runs(void **state)
{
    (void)state;
    struct sched *s = small();
    submit(s, 1, "lab", NULL, NULL, 1, 1, HOUR, T0);
    submit_dep(s, 2, SCHED_DEP_AFTEROK, 1, T0 + 1);
    struct cyc c = cycle(s, T0 + 2);
    assert_non_null(find_dec(c, SCHED_D_START, 1));
    assert_null(find_dec(c, SCHED_D_START, 2));
    assert_reason(s, 2, SCHED_R_DEPENDENCY);
    run(s, 1, T0 + 2);
    end(s, 1, SCHED_EXIT_CODE, 0, T0 + 10);
    c = cycle(s, T0 + 11);
    assert_non_null(find_dec(c, SCHED_D_START, 2));
    sched_destroy(s);
}

/* As Slurm: a dependency that can never be met leaves the job pending with reason
 * DependencyNeverSatisfied, until someone cancels it; the others go on. */
static void test_afterok_on_failure_never_satisfied(void **state)
{
    (void)state;
    struct sched *s = small();
    submit(s, 1, "lab", NULL, NULL, 1, 1, HOUR, T0);
    submit_dep(s, 2, SCHED_DEP_AFTEROK, 1, T0 + 1);
    submit_dep(s, 3, SCHED_DEP_AFTERNOTOK, 1, T0 + 1);
    (void)cycle(s, T0 + 2);
    run(s, 1, T0 + 2);
    end(s, 1, SCHED_EXIT_CODE, 3, T0 + 10);
    struct cyc c = cycle(s, T0 + 11);
    assert_null(find_dec(c, SCHED_D_STATE, 2));
    assert_null(find_dec(c, SCHED_D_START, 2));
    assert_reason(s, 2, SCHED_R_DEPENDENCY_NEVER);
    assert_string_equal(sched_reason_name(SCHED_R_DEPENDENCY_NEVER), "DependencyNeverSatisfied");
    assert_non_null(find_dec(c, SCHED_D_START, 3));
    c = cycle(s, T0 + 3600);
    assert_null(find_dec(c, SCHED_D_START, 2));
    struct sched_error err;
    assert_int_equal(sched_job_cancel(s, 2, T0 + 3601, &err), 0);
    /* a dependency on a job known to have ended badly: pending for good from the start */
    struct sched_job_spec j;
    spec_fill(&j, 4, "lab", NULL, NULL, 1, 1, HOUR, T0 + 3602);
    j.deps[0] = (struct sched_dep){SCHED_DEP_AFTEROK, 1, true, false};
    j.ndeps = 1;
    assert_int_equal(sched_job_submit(s, &j, T0 + 3602, &err), 0);
    (void)cycle(s, T0 + 3603);
    assert_reason(s, 4, SCHED_R_DEPENDENCY_NEVER);
    sched_destroy(s);
}

static void test_dep_on_unknown_job_refused(void **state)
{
    (void)state;
    struct sched *s = small();
    struct sched_job_spec j;
    spec_fill(&j, 2, "lab", NULL, NULL, 1, 1, HOUR, T0);
    j.deps[0].kind = SCHED_DEP_AFTEROK;
    j.deps[0].job_id = 99;
    j.ndeps = 1;
    struct sched_error err;
    assert_int_equal(sched_job_submit(s, &j, T0, &err), -EINVAL);
    assert_string_equal(err.field, "deps[0].job");
    sched_destroy(s);
}

static void test_time_limit_timeout(void **state)
{
    (void)state;
    struct sched *s = small();
    submit(s, 1, "lab", NULL, NULL, 1, 1, 10 * MIN, T0);
    (void)cycle(s, T0);
    run(s, 1, T0);
    assert_int_equal(sched_next_wakeup(s, T0 + 1), T0 + 10 * MIN);
    struct cyc c = cycle(s, T0 + 10 * MIN);
    const struct sched_decision *d = find_dec(c, SCHED_D_SIGNAL, 1);
    assert_non_null(d);
    assert_int_equal(d->cause, SCHED_STOP_TIMEOUT);
    end(s, 1, SCHED_EXIT_SIGNAL, 15, T0 + 10 * MIN + 5 * SEC);
    c = cycle(s, T0 + 11 * MIN);
    d = find_dec(c, SCHED_D_STATE, 1);
    assert_non_null(d);
    assert_int_equal(d->to, SCHED_TIMEOUT);
    sched_destroy(s);
}

static void test_idempotent_experiment_retries(void **state)
{
    (void)state;
    struct sched *s = small();
    struct sched_job_spec j;
    spec_fill(&j, 1, "lab", NULL, "experiment", 1, 1, HOUR, T0);
    j.retries = 1;
    j.idempotent = true;
    struct sched_error err;
    assert_int_equal(sched_job_submit(s, &j, T0, &err), 0);
    /* a training job cannot ask for retries, nor can a non-idempotent one */
    spec_fill(&j, 2, "lab", NULL, "training", 1, 1, HOUR, T0);
    j.retries = 1;
    j.idempotent = true;
    assert_int_equal(sched_job_submit(s, &j, T0, &err), -EINVAL);
    assert_string_equal(err.field, "retries");
    spec_fill(&j, 2, "lab", NULL, "experiment", 1, 1, HOUR, T0);
    j.retries = 1;
    assert_int_equal(sched_job_submit(s, &j, T0, &err), -EINVAL);
    (void)cycle(s, T0);
    run(s, 1, T0);
    end(s, 1, SCHED_EXIT_CODE, 1, T0 + MIN);
    struct cyc c = cycle(s, T0 + MIN + 1);
    const struct sched_decision *d = find_dec(c, SCHED_D_STATE, 1);
    assert_non_null(d);
    assert_int_equal(d->to, SCHED_PENDING);
    assert_reason(s, 1, SCHED_R_BEGIN_TIME); /* retry after the delay */
    c = cycle(s, T0 + 2 * MIN);
    assert_non_null(find_dec(c, SCHED_D_START, 1));
    run(s, 1, T0 + 2 * MIN);
    end(s, 1, SCHED_EXIT_CODE, 1, T0 + 3 * MIN);
    c = cycle(s, T0 + 3 * MIN + 1);
    d = find_dec(c, SCHED_D_STATE, 1);
    assert_non_null(d);
    assert_int_equal(d->to, SCHED_FAILED);
    sched_destroy(s);
}

static void test_node_failure_requeues(void **state)
{
    (void)state;
    struct sched *s = small();
    add_node(s, "n2", "H100", 8);
    submit(s, 1, "lab", NULL, "training", 8, 1, HOUR, T0);
    submit(s, 2, "lab", NULL, "interactive", 8, 1, HOUR, T0 + 1);
    (void)cycle(s, T0 + 2);
    run(s, 1, T0 + 2);
    run(s, 2, T0 + 2);
    struct sched_job_view v1, v2;
    assert_int_equal(sched_job_get(s, 1, &v1), 0);
    assert_int_equal(sched_job_get(s, 2, &v2), 0);
    struct sched_error err;
    const char *n1 = sched_node_name(s, v1.allocs[0].node);
    /* unreachable: no new placements, but the job runs on under its lease */
    assert_int_equal(sched_node_set_state(s, n1, SCHED_NODE_UNREACHABLE, T0 + 10, &err), 0);
    assert_state(s, 1, SCHED_RUNNING);
    assert_int_equal(sched_job_lost_on(s, 2, n1, T0 + 10, &err), -EINVAL); /* not there */
    assert_int_equal(sched_job_lost_on(s, 1, "nowhere", T0 + 10, &err), -ENOENT);
    assert_int_equal(sched_job_lost_on(s, 1, n1, T0 + 10, &err), 0); /* its lease ran out */
    assert_int_equal(sched_node_set_state(s, sched_node_name(s, v2.allocs[0].node), SCHED_NODE_DOWN,
                                          T0 + 10, &err),
                     0);
    struct cyc c = cycle(s, T0 + 11);
    const struct sched_decision *d1 = find_dec(c, SCHED_D_STATE, 1);
    const struct sched_decision *d2 = find_dec(c, SCHED_D_STATE, 2);
    assert_non_null(d1);
    assert_int_equal(d1->to, SCHED_PENDING); /* training is requeueable */
    assert_non_null(d2);
    assert_int_equal(d2->to, SCHED_NODE_FAIL); /* a person was attached: not requeued */
    assert_state(s, 1, SCHED_PENDING);
    sched_destroy(s);
}

static void test_hold_release_cancel(void **state)
{
    (void)state;
    struct sched *s = small();
    submit(s, 1, "lab", NULL, NULL, 1, 1, HOUR, T0);
    struct sched_error err;
    assert_int_equal(sched_job_hold(s, 1, T0 + 1, &err), 0);
    struct cyc c = cycle(s, T0 + 2);
    assert_null(find_dec(c, SCHED_D_START, 1));
    assert_reason(s, 1, SCHED_R_HELD);
    assert_int_equal(sched_job_release(s, 1, T0 + 3, &err), 0);
    c = cycle(s, T0 + 4);
    assert_non_null(find_dec(c, SCHED_D_START, 1));
    assert_int_equal(sched_job_hold(s, 1, T0 + 5, &err), -EINVAL); /* running */
    run(s, 1, T0 + 4);
    assert_int_equal(sched_job_cancel(s, 1, T0 + 6, &err), 0);
    c = cycle(s, T0 + 7);
    const struct sched_decision *d = find_dec(c, SCHED_D_SIGNAL, 1);
    assert_non_null(d);
    assert_int_equal(d->cause, SCHED_STOP_CANCEL);
    end(s, 1, SCHED_EXIT_SIGNAL, 15, T0 + 8);
    c = cycle(s, T0 + 9);
    assert_int_equal(find_dec(c, SCHED_D_STATE, 1)->to, SCHED_CANCELLED);
    assert_int_equal(sched_job_cancel(s, 1, T0 + 10, &err), -ENOENT);
    sched_destroy(s);
}

/* A job that ends early leaves no wakeup at its old limit: sched_next_wakeup() answers
 * the next rule that still applies (docs/scheduling.md "The cycle"), never a deadline
 * left by a job that is gone. */
static void test_ended_job_leaves_no_wakeup(void **state)
{
    (void)state;
    struct sched *s = small();
    submit(s, 1, "lab", NULL, NULL, 1, 1, HOUR, T0);
    submit(s, 2, "lab", NULL, NULL, 1, 1, 3 * HOUR, T0);
    (void)cycle(s, T0 + 1);
    run(s, 1, T0 + 2);
    run(s, 2, T0 + 2);
    end(s, 1, SCHED_EXIT_CODE, 0, T0 + 10 * SEC);
    (void)cycle(s, T0 + 11 * SEC);
    struct sched_error err;
    int cycles = 0;
    int64_t w = sched_next_wakeup(s, T0 + 11 * SEC);
    while (w < T0 + 1 + 3 * HOUR) {      /* job 2's coming of age and such may come first */
        assert_true(w != T0 + 1 + HOUR); /* job 1's limit: gone with it */
        assert_true(w > T0 + 11 * SEC);
        struct cyc c = cycle(s, w);
        assert_int_equal(sched_check(s, &err), 0);
        assert_int_equal(c.n, 0);
        assert_true(++cycles < 8);
        w = sched_next_wakeup(s, w);
    }
    assert_int_equal(w, T0 + 1 + 3 * HOUR); /* job 2's limit */
    struct cyc c = cycle(s, w);
    assert_non_null(find_dec(c, SCHED_D_SIGNAL, 2));
    /* a job submitted held with a begin time and released before it wakes at its begin */
    struct sched_job_spec j;
    spec_fill(&j, 3, "lab", NULL, NULL, 1, 1, HOUR, w);
    j.hold = true;
    j.begin_ms = w + 2 * HOUR;
    assert_int_equal(sched_job_submit(s, &j, w, &err), 0);
    assert_int_equal(sched_job_release(s, 3, w + 1, &err), 0);
    end(s, 2, SCHED_EXIT_SIGNAL, 15, w + 2);
    (void)cycle(s, w + 3);
    assert_int_equal(sched_check(s, &err), 0);
    assert_true(sched_next_wakeup(s, w + 3) <= j.begin_ms);
    sched_destroy(s);
}

static void test_requeue_running(void **state)
{
    (void)state;
    struct sched *s = small();
    submit(s, 1, "lab", NULL, NULL, 1, 1, HOUR, T0);
    (void)cycle(s, T0);
    run(s, 1, T0);
    struct sched_error err;
    assert_int_equal(sched_job_requeue(s, 1, T0 + 1, &err), 0);
    struct cyc c = cycle(s, T0 + 2);
    assert_non_null(find_dec(c, SCHED_D_SIGNAL, 1));
    end(s, 1, SCHED_EXIT_SIGNAL, 15, T0 + 3);
    c = cycle(s, T0 + 4);
    assert_non_null(find_dec(c, SCHED_D_START, 1)); /* same id, runs again */
    sched_destroy(s);
}

static void test_array_limit(void **state)
{
    (void)state;
    struct sched *s = small();
    for (uint64_t i = 0; i < 4; i++) {
        struct sched_job_spec j;
        spec_fill(&j, 10 + i, "lab", NULL, NULL, 1, 1, HOUR, T0);
        j.array_id = 10;
        j.array_limit = 2;
        struct sched_error err;
        assert_int_equal(sched_job_submit(s, &j, T0, &err), 0);
    }
    struct cyc c = cycle(s, T0 + 1);
    assert_int_equal(count_dec(c, SCHED_D_START), 2);
    assert_reason(s, 12, SCHED_R_JOB_LIMIT);
    sched_destroy(s);
}

static void test_restore_running(void **state)
{
    (void)state;
    struct sched *s = small();
    struct sched_job_spec j;
    spec_fill(&j, 5, "lab", NULL, NULL, 4, 1, HOUR, T0);
    struct sched_alloc a = {.node = 0, .gpu_mask = 0xf, .gpus = 4, .cpus = 1, .mem_mb = 0};
    struct sched_error err;
    assert_int_equal(sched_job_restore_running(s, &j, &a, 1, T0, SCHED_RUNNING, &err), 0);
    struct sched_node_view nv;
    assert_int_equal(sched_node_get(s, 0, &nv), 0);
    assert_int_equal(nv.gpus_used, 4);
    submit(s, 6, "lab", NULL, NULL, 4, 1, HOUR, T0 + 1);
    struct cyc c = cycle(s, T0 + 2);
    const struct sched_decision *d = find_dec(c, SCHED_D_START, 6);
    assert_non_null(d);
    assert_int_equal(d->allocs[0].gpu_mask, 0xf0); /* never the restored job's GPUs */
    assert_null(find_dec(c, SCHED_D_START, 5));
    sched_destroy(s);
}

static void test_explain_and_forecast(void **state)
{
    (void)state;
    struct sched *s = small();
    submit(s, 1, "lab", NULL, "training", 8, 1, HOUR, T0);
    (void)cycle(s, T0);
    run(s, 1, T0);
    submit(s, 2, "lab", NULL, "training", 8, 1, HOUR, T0 + 1);
    submit(s, 3, "lab", NULL, "training", 4, 1, HOUR, T0 + 2);
    (void)cycle(s, T0 + 3);
    struct sched_explain x;
    assert_int_equal(sched_explain(s, 3, T0 + 3, &x), 0);
    assert_int_equal(x.state, SCHED_PENDING);
    assert_int_equal(x.position, 2);
    assert_int_equal(x.pending_total, 2);
    assert_int_equal(x.nahead, 1);
    assert_int_equal(x.ahead[0].id, 2);
    assert_int_equal(x.nodes_matching, 1);
    assert_string_equal(x.nodes[0].name, "n1");
    assert_false(x.nodes[0].fits_now);
    assert_true(x.sentence[0] != 0);
    assert_string_equal(x.eff_tier, "high");
    /* the running job: preemptible by critical once past min_runtime */
    assert_int_equal(sched_explain(s, 1, T0 + 3, &x), 0);
    assert_int_equal(x.expected_end_ms, T0 + HOUR);
    assert_int_equal(x.preemptible_from_ms, T0 + 10 * MIN);
    assert_string_equal(x.preemptible_by, "critical");
    /* the forecast: job 1's GPUs go to job 2, which holds the reservation */
    struct sched_release r[4];
    size_t n = sched_forecast(s, T0 + 3, r, 4);
    assert_int_equal(n, 1);
    assert_int_equal(r[0].job_id, 1);
    assert_int_equal(r[0].next_job, 2);
    assert_true(r[0].by_reservation);
    assert_string_equal(r[0].next_tier, "high");
    assert_int_equal(sched_explain(s, 77, T0, &x), -ENOENT);
    sched_destroy(s);
}

static void test_totals(void **state)
{
    (void)state;
    struct sched *s = small();
    submit(s, 1, "lab", NULL, NULL, 2, 1, HOUR, T0);
    submit(s, 2, "lab", NULL, NULL, 8, 1, HOUR, T0);
    (void)cycle(s, T0);
    struct sched_totals t;
    sched_totals_get(s, &t);
    assert_int_equal(t.jobs_by_state[SCHED_STARTING], 1);
    assert_int_equal(t.jobs_by_state[SCHED_PENDING], 1);
    assert_int_equal(t.gpus_used, 2);
    assert_int_equal(t.gpus_total, 8);
    assert_true(t.core_bytes > 0);
    sched_destroy(s);
}

static void assert_core_ok(struct sched *s)
{
    struct sched_error err;
    if (sched_check(s, &err))
        fail_msg("sched_check: %s", err.message);
}

/* Slurm's '?' (afterok:1?afterok:2): the job may begin once any one dependency is met,
 * and is DependencyNeverSatisfied only when none of them ever can be. */
static void test_any_of_dependencies(void **state)
{
    (void)state;
    struct sched *s = small();
    struct sched_error err;
    for (uint64_t id = 1; id <= 4; id++)
        submit(s, id, "lab", NULL, NULL, 1, 1, HOUR, T0);
    struct sched_job_spec j;
    spec_fill(&j, 5, "lab", NULL, NULL, 1, 1, HOUR, T0 + 1);
    j.deps[0] = (struct sched_dep){SCHED_DEP_AFTEROK, 1, false, false};
    j.deps[1] = (struct sched_dep){SCHED_DEP_AFTEROK, 2, false, false};
    j.ndeps = 2;
    j.deps_any = true;
    assert_int_equal(sched_job_submit(s, &j, T0 + 1, &err), 0);
    spec_fill(&j, 6, "lab", NULL, NULL, 1, 1, HOUR, T0 + 1);
    j.deps[0] = (struct sched_dep){SCHED_DEP_AFTEROK, 3, false, false};
    j.deps[1] = (struct sched_dep){SCHED_DEP_AFTEROK, 4, false, false};
    j.ndeps = 2;
    j.deps_any = true;
    assert_int_equal(sched_job_submit(s, &j, T0 + 1, &err), 0);
    struct cyc c = cycle(s, T0 + 2);
    for (uint64_t id = 1; id <= 4; id++)
        run(s, id, T0 + 2);
    assert_null(find_dec(c, SCHED_D_START, 5));
    assert_reason(s, 5, SCHED_R_DEPENDENCY);
    end(s, 2, SCHED_EXIT_CODE, 0, T0 + 3); /* one of them: enough */
    assert_non_null(find_dec(cycle(s, T0 + 4), SCHED_D_START, 5));
    end(s, 3, SCHED_EXIT_CODE, 1, T0 + 5); /* one can never be met: the other still may */
    (void)cycle(s, T0 + 6);
    assert_reason(s, 6, SCHED_R_DEPENDENCY);
    end(s, 4, SCHED_EXIT_CODE, 1, T0 + 7);
    (void)cycle(s, T0 + 8);
    assert_reason(s, 6, SCHED_R_DEPENDENCY_NEVER);
    assert_core_ok(s);
    sched_destroy(s);
}

/* An any-of job already free to start keeps the reason its walk gave it when another of
 * its dependencies settles: job 3 (after:1?after:4) finds room on n1 held for job 2's
 * reservation (Reservation, and a reservation of its own); job 4, of a lower tier, starts
 * later in the same walk. Its start settled job 3's second dependency and made job 3's
 * reason derived again, which says Resources for a job with a reservation: "waits for
 * Resources while a node has room for it" (property seed 6957). */
static void test_any_of_settled_again_keeps_reason(void **state)
{
    (void)state;
    struct sched *s = small();
    add_project(s, "scratch", "low", 0, -1);
    struct sched_error err;
    submit(s, 1, "lab", NULL, NULL, 4, 1, HOUR, T0);
    assert_non_null(find_dec(cycle(s, T0 + 1), SCHED_D_START, 1));
    run(s, 1, T0 + 1);
    submit(s, 2, "lab", NULL, NULL, 8, 1, HOUR, T0 + 2);         /* reserves n1 at 1's end */
    submit(s, 4, "scratch", NULL, NULL, 0, 1, 10 * MIN, T0 + 3); /* CPUs: fits beside 2's claim */
    struct sched_job_spec j;
    spec_fill(&j, 3, "lab", NULL, NULL, 2, 1, 2 * HOUR, T0 + 3);      /* would outlast 2's start */
    j.deps[0] = (struct sched_dep){SCHED_DEP_AFTER, 1, false, false}; /* met: 1 runs */
    j.deps[1] = (struct sched_dep){SCHED_DEP_AFTER, 4, false, false};
    j.ndeps = 2;
    j.deps_any = true;
    assert_int_equal(sched_job_submit(s, &j, T0 + 3, &err), 0);
    struct cyc c = cycle(s, T0 + 5);
    assert_non_null(find_dec(c, SCHED_D_START, 4));
    assert_null(find_dec(c, SCHED_D_START, 3));
    struct sched_explain x;
    assert_int_equal(sched_explain(s, 3, T0 + 5, &x), 0);
    assert_true(x.has_reservation);
    assert_reason(s, 3, SCHED_R_RESERVATION); /* 4 GPUs free on n1, held for job 2 */
    assert_core_ok(s);
    sched_destroy(s);
}

/* Slurm's after:ID: the job may begin once ID has started (or ended without starting:
 * "after the specified jobs start or are cancelled"), not when it ends. */
static void test_after_waits_for_a_start(void **state)
{
    (void)state;
    struct sched *s = small();
    struct sched_job_spec j;
    struct sched_error err;
    spec_fill(&j, 1, "lab", NULL, NULL, 1, 1, HOUR, T0);
    j.hold = true;
    assert_int_equal(sched_job_submit(s, &j, T0, &err), 0);
    j.id = 4;
    assert_int_equal(sched_job_submit(s, &j, T0, &err), 0);
    submit_dep(s, 2, SCHED_DEP_AFTER, 1, T0 + 1);
    submit_dep(s, 3, SCHED_DEP_AFTER, 4, T0 + 1);
    struct cyc c = cycle(s, T0 + 2);
    assert_null(find_dec(c, SCHED_D_START, 2));
    assert_reason(s, 2, SCHED_R_DEPENDENCY);
    assert_int_equal(sched_job_release(s, 1, T0 + 3, &err), 0);
    c = cycle(s, T0 + 4);
    assert_non_null(find_dec(c, SCHED_D_START, 1));
    if (!find_dec(c, SCHED_D_START, 2)) /* met by 1's start: this cycle or the next */
        assert_non_null(find_dec(cycle(s, T0 + 5), SCHED_D_START, 2));
    assert_core_ok(s);
    assert_state(s, 1, SCHED_STARTING); /* it runs on: job 2 did not wait for its end */
    assert_int_equal(sched_job_cancel(s, 4, T0 + 6, &err), 0); /* cancelled unstarted */
    assert_non_null(find_dec(cycle(s, T0 + 7), SCHED_D_START, 3));
    /* after on a job already running: met at once */
    submit_dep(s, 5, SCHED_DEP_AFTER, 1, T0 + 8);
    assert_non_null(find_dec(cycle(s, T0 + 9), SCHED_D_START, 5));
    assert_core_ok(s);
    sched_destroy(s);
}

/* scontrol update of a pending job: the new request is checked as a submission (nothing
 * changes when it is refused), the job keeps its state and place, and the jobs waiting on
 * it still wait on it and start when it ends. */
static void test_update_pending_keeps_waiters(void **state)
{
    (void)state;
    struct sched *s = small();
    struct sched_job_spec j;
    struct sched_error err;
    spec_fill(&j, 1, "lab", NULL, NULL, 1, 1, HOUR, T0);
    j.hold = true;
    assert_int_equal(sched_job_submit(s, &j, T0, &err), 0);
    submit_dep(s, 2, SCHED_DEP_AFTEROK, 1, T0 + 1);
    submit_dep(s, 3, SCHED_DEP_AFTEROK, 1, T0 + 1);
    j.gpus_per_node = 9; /* no node has 9 GPUs: refused, nothing changes */
    assert_int_equal(sched_job_update(s, &j, T0 + 2, &err), -EINVAL);
    struct sched_job_view v;
    assert_int_equal(sched_job_get(s, 1, &v), 0);
    assert_int_equal(v.gpus_per_node, 1);
    j.gpus_per_node = 2;
    j.time_limit_ms = 10 * MIN;
    assert_int_equal(sched_job_update(s, &j, T0 + 2, &err), 0);
    assert_core_ok(s);
    assert_state(s, 1, SCHED_HELD); /* still held: an update is no release */
    assert_int_equal(sched_job_get(s, 1, &v), 0);
    assert_int_equal(v.gpus_per_node, 2);
    assert_int_equal(v.time_limit_ms, 10 * MIN);
    assert_int_equal(v.submit_ms, T0);
    /* job 1 may not wait on job 2, which waits on it: no end could meet that */
    struct sched_job_spec loop;
    spec_fill(&loop, 1, "lab", NULL, NULL, 2, 1, 10 * MIN, T0);
    loop.deps[0] = (struct sched_dep){SCHED_DEP_AFTERANY, 2, false, false};
    loop.ndeps = 1;
    assert_int_equal(sched_job_update(s, &loop, T0 + 2, &err), -ELOOP);
    assert_string_equal(err.field, "deps");
    /* job 3 drops its dependency: it may start at once */
    spec_fill(&j, 3, "lab", NULL, NULL, 1, 1, HOUR, T0 + 1);
    assert_int_equal(sched_job_update(s, &j, T0 + 3, &err), 0);
    struct cyc c = cycle(s, T0 + 4);
    assert_non_null(find_dec(c, SCHED_D_START, 3));
    assert_null(find_dec(c, SCHED_D_START, 2));
    assert_int_equal(sched_job_release(s, 1, T0 + 5, &err), 0);
    c = cycle(s, T0 + 6);
    assert_non_null(find_dec(c, SCHED_D_START, 1));
    run(s, 1, T0 + 6);
    spec_fill(&j, 1, "lab", NULL, NULL, 1, 1, HOUR, T0);
    assert_int_equal(sched_job_update(s, &j, T0 + 7, &err), -EINVAL); /* running */
    end(s, 1, SCHED_EXIT_CODE, 0, T0 + 10);
    c = cycle(s, T0 + 11);
    assert_non_null(find_dec(c, SCHED_D_START, 2)); /* it waited on the updated job */
    assert_core_ok(s);
    sched_destroy(s);
}

/* scontrol update TimeLimit of a running job: the new limit ends it, as a limit does. */
static void test_set_limit_running(void **state)
{
    (void)state;
    struct sched *s = small();
    struct sched_error err;
    submit(s, 1, "lab", NULL, NULL, 1, 1, HOUR, T0);
    assert_int_equal(sched_job_set_limit(s, 1, 10 * MIN, T0, &err), -EINVAL); /* pending */
    (void)cycle(s, T0);
    run(s, 1, T0);
    assert_int_equal(sched_job_set_limit(s, 1, 400LL * 24 * HOUR, T0 + 1, &err), -EINVAL);
    assert_int_equal(sched_job_set_limit(s, 1, 10 * MIN, T0 + 1, &err), 0);
    assert_core_ok(s);
    assert_int_equal(sched_next_wakeup(s, T0 + 2), T0 + 10 * MIN);
    struct cyc c = cycle(s, T0 + 10 * MIN);
    const struct sched_decision *d = find_dec(c, SCHED_D_SIGNAL, 1);
    assert_non_null(d);
    assert_int_equal(d->cause, SCHED_STOP_TIMEOUT);
    assert_core_ok(s);
    sched_destroy(s);
}

/* ------------------------------------------------------------------------------------ */
/* a dependency on a whole array (Slurm's afterok:ARRAY_ID): one dependency, whatever    */
/* the array's size, met when every task meets it                                        */

static void submit_task(struct sched *s, uint64_t id, uint64_t array_id, bool hold, int64_t now)
{
    struct sched_job_spec j;
    spec_fill(&j, id, "lab", NULL, NULL, 1, 1, HOUR, now);
    j.array_id = array_id;
    j.hold = hold;
    struct sched_error err;
    if (sched_job_submit(s, &j, now, &err))
        fail_msg("task %llu: %s", (unsigned long long)id, err.message);
}

static void submit_array_dep(struct sched *s, uint64_t id, enum sched_dep_kind k, uint64_t array_id,
                             int64_t now)
{
    struct sched_job_spec j;
    spec_fill(&j, id, "lab", NULL, NULL, 1, 1, HOUR, now);
    j.deps[0] = (struct sched_dep){k, array_id, false, true};
    j.ndeps = 1;
    struct sched_error err;
    if (sched_job_submit(s, &j, now, &err))
        fail_msg("waiter %llu: %s", (unsigned long long)id, err.message);
}

/* Five tasks on a node of 8 GPUs: after waits for every start, afterok and afterany for
 * every end, afternotok can never be met once all completed. */
static void test_array_dep_waits_for_every_task(void **state)
{
    (void)state;
    struct sched *s = small();
    for (uint64_t t = 10; t < 15; t++)
        submit_task(s, t, 10, t == 14, T0); /* the last one held: not started */
    submit_array_dep(s, 20, SCHED_DEP_AFTEROK, 10, T0 + 1);
    submit_array_dep(s, 21, SCHED_DEP_AFTERANY, 10, T0 + 1);
    submit_array_dep(s, 22, SCHED_DEP_AFTERNOTOK, 10, T0 + 1);
    submit_array_dep(s, 23, SCHED_DEP_AFTER, 10, T0 + 1);
    struct cyc c = cycle(s, T0 + 2);
    assert_int_equal(count_dec(c, SCHED_D_START), 4);
    assert_reason(s, 23, SCHED_R_DEPENDENCY); /* task 14 has not started */
    struct sched_error err;
    assert_int_equal(sched_job_release(s, 14, T0 + 3, &err), 0);
    c = cycle(s, T0 + 4);
    assert_non_null(find_dec(c, SCHED_D_START, 14));
    if (!find_dec(c, SCHED_D_START, 23)) /* every task started: this cycle or the next */
        assert_non_null(find_dec(cycle(s, T0 + 5), SCHED_D_START, 23));
    for (uint64_t t = 10; t < 15; t++)
        run(s, t, T0 + 5);
    for (uint64_t t = 10; t < 14; t++)
        end(s, t, SCHED_EXIT_CODE, 0, T0 + 10);
    c = cycle(s, T0 + 11);
    assert_null(find_dec(c, SCHED_D_START, 20));
    assert_null(find_dec(c, SCHED_D_START, 21));
    assert_reason(s, 20, SCHED_R_DEPENDENCY);
    assert_core_ok(s);
    end(s, 14, SCHED_EXIT_CODE, 0, T0 + 12);
    c = cycle(s, T0 + 13);
    assert_non_null(find_dec(c, SCHED_D_START, 20));
    assert_non_null(find_dec(c, SCHED_D_START, 21));
    assert_reason(s, 22, SCHED_R_DEPENDENCY_NEVER); /* all completed: afternotok never */
    assert_false(sched_array_known(s, 10));         /* all ended: forgotten */
    assert_core_ok(s);
    sched_destroy(s);
}

/* One task fails: afterok can never be met, at once, while the others still run;
 * afternotok is met when the last one ends. */
static void test_array_dep_one_failure(void **state)
{
    (void)state;
    struct sched *s = small();
    for (uint64_t t = 10; t < 13; t++)
        submit_task(s, t, 10, false, T0);
    submit_array_dep(s, 20, SCHED_DEP_AFTEROK, 10, T0 + 1);
    submit_array_dep(s, 22, SCHED_DEP_AFTERNOTOK, 10, T0 + 1);
    (void)cycle(s, T0 + 2);
    for (uint64_t t = 10; t < 13; t++)
        run(s, t, T0 + 2);
    end(s, 11, SCHED_EXIT_CODE, 1, T0 + 3);
    (void)cycle(s, T0 + 4);
    assert_reason(s, 20, SCHED_R_DEPENDENCY_NEVER);
    assert_reason(s, 22, SCHED_R_DEPENDENCY);
    /* a job that asks afterok of it now is pending for good from the start */
    submit_array_dep(s, 24, SCHED_DEP_AFTEROK, 10, T0 + 5);
    (void)cycle(s, T0 + 6);
    assert_reason(s, 24, SCHED_R_DEPENDENCY_NEVER);
    end(s, 10, SCHED_EXIT_CODE, 0, T0 + 7);
    end(s, 12, SCHED_EXIT_CODE, 0, T0 + 8);
    struct cyc c = cycle(s, T0 + 9);
    assert_non_null(find_dec(c, SCHED_D_START, 22));
    assert_null(find_dec(c, SCHED_D_START, 20));
    assert_core_ok(s);
    sched_destroy(s);
}

/* A declared array (a reload, or one stored whole and still arriving): its ended tasks
 * count, and so do the ones that never reach the core. */
static void test_array_dep_declared(void **state)
{
    (void)state;
    struct sched *s = small();
    struct sched_error err;
    assert_int_equal(sched_array_declare(s, 10, 3, 3, 0, &err), -EINVAL); /* all ended */
    assert_int_equal(sched_array_declare(s, 10, 5, 2, 0, &err), 0);       /* 10, 11 ended */
    submit_task(s, 12, 10, false, T0);
    submit_task(s, 13, 10, false, T0);
    submit_array_dep(s, 20, SCHED_DEP_AFTERANY, 10, T0 + 1);
    submit_array_dep(s, 21, SCHED_DEP_AFTEROK, 10, T0 + 1);
    (void)cycle(s, T0 + 2);
    run(s, 12, T0 + 2);
    run(s, 13, T0 + 2);
    end(s, 12, SCHED_EXIT_CODE, 0, T0 + 3);
    end(s, 13, SCHED_EXIT_CODE, 0, T0 + 3);
    struct cyc c = cycle(s, T0 + 4);
    assert_null(find_dec(c, SCHED_D_START, 20)); /* task 14 never came */
    assert_true(sched_array_known(s, 10));
    assert_core_ok(s);
    sched_array_task_gone(s, 10, false, T0 + 5); /* refused: it ended FAILED */
    c = cycle(s, T0 + 6);
    assert_non_null(find_dec(c, SCHED_D_START, 20));
    assert_reason(s, 21, SCHED_R_DEPENDENCY_NEVER);
    assert_false(sched_array_known(s, 10));
    /* declared with a failure already: afterok never from the start */
    assert_int_equal(sched_array_declare(s, 30, 2, 1, 1, &err), 0);
    submit_task(s, 31, 30, true, T0 + 7);
    submit_array_dep(s, 32, SCHED_DEP_AFTEROK, 30, T0 + 7);
    (void)cycle(s, T0 + 8);
    assert_reason(s, 32, SCHED_R_DEPENDENCY_NEVER);
    assert_core_ok(s);
    sched_destroy(s);
}

/* 10,000 tasks are one dependency; a task may not wait on its own array; an array the
 * core does not know is refused (the caller settles ended ones). */
static void test_array_dep_is_one(void **state)
{
    (void)state;
    struct sched *s = small();
    struct sched_error err;
    enum { N = 10000 };
    for (uint64_t t = 0; t < N; t++)
        submit_task(s, 100 + t, 100, true, T0);
    submit_array_dep(s, 100 + N, SCHED_DEP_AFTERANY, 100, T0 + 1);
    assert_reason(s, 100 + N, SCHED_R_DEPENDENCY);
    struct sched_job_spec j;
    spec_fill(&j, 100 + N + 1, "lab", NULL, NULL, 1, 1, HOUR, T0 + 1);
    j.array_id = 100;
    j.deps[0] = (struct sched_dep){SCHED_DEP_AFTERANY, 100, false, true};
    j.ndeps = 1;
    assert_int_equal(sched_job_submit(s, &j, T0 + 1, &err), -EINVAL);
    j.array_id = 0;
    j.deps[0].job_id = 7;
    assert_int_equal(sched_job_submit(s, &j, T0 + 1, &err), -EINVAL);
    assert_string_equal(err.field, "deps[0].job");
    for (uint64_t t = 0; t < N - 1; t++)
        assert_int_equal(sched_job_cancel(s, 100 + t, T0 + 2, &err), 0);
    assert_reason(s, 100 + N, SCHED_R_DEPENDENCY);
    assert_int_equal(sched_job_cancel(s, 100 + N - 1, T0 + 2, &err), 0);
    struct cyc c = cycle(s, T0 + 3);
    assert_non_null(find_dec(c, SCHED_D_START, 100 + N));
    assert_core_ok(s);
    sched_destroy(s);
}

/* An update of a task (scontrol update of a pending task) keeps its array's count and its
 * waiters; a task may not be updated to wait on its own array. */
static void test_array_dep_survives_task_update(void **state)
{
    (void)state;
    struct sched *s = small();
    struct sched_error err;
    submit_task(s, 10, 10, true, T0);
    submit_task(s, 11, 10, true, T0);
    submit_array_dep(s, 20, SCHED_DEP_AFTERANY, 10, T0 + 1);
    struct sched_job_spec j;
    spec_fill(&j, 11, "lab", NULL, NULL, 2, 1, HOUR, T0);
    j.array_id = 10;
    assert_int_equal(sched_job_update(s, &j, T0 + 2, &err), 0);
    assert_core_ok(s);
    j.deps[0] = (struct sched_dep){SCHED_DEP_AFTERANY, 10, false, true};
    j.ndeps = 1;
    assert_int_not_equal(sched_job_update(s, &j, T0 + 2, &err), 0);
    assert_int_equal(sched_job_cancel(s, 10, T0 + 3, &err), 0);
    assert_reason(s, 20, SCHED_R_DEPENDENCY); /* task 11 still to end */
    assert_int_equal(sched_job_cancel(s, 11, T0 + 4, &err), 0);
    assert_non_null(find_dec(cycle(s, T0 + 5), SCHED_D_START, 20));
    assert_core_ok(s);
    /* a task withdrawn (never submitted after all) leaves the rest to answer: here all of
       it has ended (the property test's seed 2 found the waiter left open) */
    submit_task(s, 30, 30, true, T0 + 6);
    submit_task(s, 31, 30, true, T0 + 6);
    submit_array_dep(s, 32, SCHED_DEP_AFTERANY, 30, T0 + 6);
    assert_int_equal(sched_job_cancel(s, 30, T0 + 7, &err), 0);
    assert_int_equal(sched_job_withdraw(s, 31, &err), 0);
    assert_core_ok(s);
    assert_non_null(find_dec(cycle(s, T0 + 8), SCHED_D_START, 32));
    assert_false(sched_array_known(s, 30));
    sched_destroy(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_afterok_waits_then_runs),
        cmocka_unit_test(test_afterok_on_failure_never_satisfied),
        cmocka_unit_test(test_dep_on_unknown_job_refused),
        cmocka_unit_test(test_array_dep_waits_for_every_task),
        cmocka_unit_test(test_array_dep_one_failure),
        cmocka_unit_test(test_array_dep_declared),
        cmocka_unit_test(test_array_dep_is_one),
        cmocka_unit_test(test_array_dep_survives_task_update),
        cmocka_unit_test(test_time_limit_timeout),
        cmocka_unit_test(test_idempotent_experiment_retries),
        cmocka_unit_test(test_node_failure_requeues),
        cmocka_unit_test(test_hold_release_cancel),
        cmocka_unit_test(test_update_pending_keeps_waiters),
        cmocka_unit_test(test_set_limit_running),
        cmocka_unit_test(test_after_waits_for_a_start),
        cmocka_unit_test(test_any_of_dependencies),
        cmocka_unit_test(test_any_of_settled_again_keeps_reason),
        cmocka_unit_test(test_ended_job_leaves_no_wakeup),
        cmocka_unit_test(test_requeue_running),
        cmocka_unit_test(test_array_limit),
        cmocka_unit_test(test_restore_running),
        cmocka_unit_test(test_explain_and_forecast),
        cmocka_unit_test(test_totals),
    };
    return cmocka_run_group_tests_name("core: job life, explain, forecast", tests, NULL, NULL);
}
