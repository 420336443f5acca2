/*
 * test_order.c - queue order and admission: strict tiers, boosts, fair-share within a
 * tier, the baselines, and limits that hold one project back without blocking others.
 */
#include "helpers.h"

/* One 1-GPU slot: whoever starts first is the one the order put first. */
static struct sched *one_slot(void)
{
    struct sched *s = mk_sched();
    add_node(s, "n1", "H100", 1);
    add_project(s, "vision", "critical", 4, -1);
    add_project(s, "nlp", "critical", 4, -1);
    return s;
}

static void test_tier_order_is_strict(void **state)
{
    (void)state;
    struct sched *s = one_slot();
    submit(s, 1, "vision", "low", NULL, 1, 1, HOUR, T0);
    submit(s, 2, "nlp", "normal", NULL, 1, 1, HOUR, T0 + 1);
    submit(s, 3, "vision", "critical", NULL, 1, 1, HOUR, T0 + 2);
    struct cyc c = cycle(s, T0 + 10);
    assert_non_null(find_dec(c, SCHED_D_START, 3));
    assert_int_equal(count_dec(c, SCHED_D_START), 1);
    assert_reason(s, 2, SCHED_R_RESOURCES);
    assert_reason(s, 1, SCHED_R_RESOURCES);
    sched_destroy(s);
}

static void test_tier_above_project_refused(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    add_node(s, "n1", "H100", 8);
    add_project(s, "lab", "normal", 0, -1);
    struct sched_job_spec j;
    spec_fill(&j, 1, "lab", "high", NULL, 1, 1, HOUR, T0);
    struct sched_error err;
    assert_int_equal(sched_job_submit(s, &j, T0, &err), -EINVAL);
    assert_string_equal(err.field, "tier");
    assert_int_equal(sched_job_count(s), 0);
    sched_destroy(s);
}

static void test_fairshare_orders_within_tier(void **state)
{
    (void)state;
    struct sched *s = one_slot();
    /* vision runs a while and accrues usage; nlp has none */
    submit(s, 1, "vision", "normal", NULL, 1, 1, 10 * HOUR, T0);
    struct cyc c = cycle(s, T0);
    assert_non_null(find_dec(c, SCHED_D_START, 1));
    run(s, 1, T0);
    end(s, 1, SCHED_EXIT_CODE, 0, T0 + 5 * HOUR);
    /* vision submits first, nlp later: nlp's lower usage wins within the tier */
    submit(s, 2, "vision", "normal", NULL, 1, 1, HOUR, T0 + 5 * HOUR + 1);
    submit(s, 3, "nlp", "normal", NULL, 1, 1, HOUR, T0 + 5 * HOUR + 2);
    size_t n;
    (void)sched_cycle(s, T0 + 5 * HOUR + 20, SCHED_CYCLE_REFRESH, &n, NULL);
    assert_state(s, 3, SCHED_STARTING);
    assert_state(s, 2, SCHED_PENDING);
    struct sched_explain x;
    assert_int_equal(sched_explain(s, 2, T0 + 5 * HOUR + 20, &x), 0);
    /* 5 GPU-hours averaged over a 7-day half-life window: ~0.02 GPUs */
    assert_true(x.fairshare_usage > 0.01 && x.fairshare_usage < 0.05);
    assert_true(x.fairshare_share > 0);
    sched_destroy(s);
}

static void test_boost_raises_tier_and_expires(void **state)
{
    (void)state;
    struct sched *s = one_slot();
    add_project(s, "bio", "normal", 0, -1);
    submit(s, 1, "nlp", "high", NULL, 1, 1, HOUR, T0);
    submit(s, 2, "bio", "normal", NULL, 1, 1, HOUR, T0 + 1);
    struct sched_error err;
    assert_int_equal(sched_project_boost(s, "bio", 2, T0 + 48 * HOUR, T0 + 2, &err), 0);
    struct cyc c = cycle(s, T0 + 10);
    assert_non_null(find_dec(c, SCHED_D_START, 2)); /* normal + 2 = critical > high */
    struct sched_job_view v;
    assert_int_equal(sched_job_get(s, 2, &v), 0);
    assert_string_equal(v.eff_tier, "critical");
    /* a boost must end in the future and stay within the tiers */
    assert_int_equal(sched_project_boost(s, "bio", 9, T0 + HOUR, T0, &err), -EINVAL);
    assert_string_equal(err.field, "levels");
    /* after expiry the boost is gone */
    (void)cycle(s, T0 + 49 * HOUR);
    struct sched_project_view pv;
    assert_int_equal(sched_project_get(s, (size_t)sched_project_find(s, "bio"), &pv), 0);
    assert_int_equal(pv.boost_levels, 0);
    assert_string_equal(pv.eff_tier, "normal");
    sched_destroy(s);
}

static void test_quota_limit_does_not_block_next_project(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    add_node(s, "n1", "H100", 8);
    add_project(s, "capped", "high", 0, 4);
    add_project(s, "free", "normal", 0, -1);
    submit(s, 1, "capped", NULL, NULL, 4, 1, HOUR, T0);
    submit(s, 2, "capped", NULL, NULL, 2, 1, HOUR, T0 + 1);
    submit(s, 3, "free", NULL, NULL, 2, 1, HOUR, T0 + 2);
    struct cyc c = cycle(s, T0 + 10);
    assert_non_null(find_dec(c, SCHED_D_START, 1));
    assert_null(find_dec(c, SCHED_D_START, 2));
    assert_non_null(find_dec(c, SCHED_D_START, 3)); /* the lower tier still runs */
    assert_reason(s, 2, SCHED_R_QUOTA_LIMIT);
    struct sched_explain x;
    assert_int_equal(sched_explain(s, 2, T0 + 10, &x), 0);
    assert_int_equal(x.limit_value, 4);
    assert_int_equal(x.limit_in_use, 4);
    assert_int_equal(x.limit_request, 2);
    assert_non_null(strstr(x.limit_name, "gpu_limit"));
    sched_destroy(s);
}

static void test_max_running_is_job_limit(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    add_node(s, "n1", "H100", 8);
    struct sched_project_spec p = project_spec("lab");
    p.max_running = 1;
    put_project(s, &p);
    submit(s, 1, "lab", NULL, NULL, 1, 1, HOUR, T0);
    submit(s, 2, "lab", NULL, NULL, 1, 1, HOUR, T0 + 1);
    struct cyc c = cycle(s, T0 + 10);
    assert_int_equal(count_dec(c, SCHED_D_START), 1);
    assert_reason(s, 2, SCHED_R_JOB_LIMIT);
    sched_destroy(s);
}

static void test_max_queued_refused_at_submit(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    add_node(s, "n1", "H100", 8);
    struct sched_project_spec p = project_spec("lab");
    p.max_queued = 1;
    put_project(s, &p);
    struct sched_error err;
    submit(s, 1, "lab", NULL, NULL, 1, 1, HOUR, T0);
    struct sched_job_spec j;
    spec_fill(&j, 2, "lab", NULL, NULL, 1, 1, HOUR, T0);
    assert_int_equal(sched_job_submit(s, &j, T0, &err), -ENOSPC);
    assert_string_equal(err.field, "project");
    assert_int_equal(sched_job_count(s), 1);
    sched_destroy(s);
}

/* The queue caps at submission (issue 33): the policy's default for a project without a
 * max_queued of its own, a project's own, and one user over all projects, for n jobs at
 * once (an array's tasks); held jobs count, started and ended ones leave. */
static void test_queue_room_caps(void **state)
{
    (void)state;
    struct sched_policy pol;
    sched_policy_defaults(&pol);
    assert_int_equal(pol.default_max_queued, 50000);
    assert_int_equal(pol.user_max_queued, 10000);
    pol.default_max_queued = 5;
    pol.user_max_queued = 4;
    struct sched *s = mk_sched_with(&pol);
    add_node(s, "n1", "H100", 1);
    add_project(s, "lab", "normal", 0, -1);
    add_project(s, "other", "normal", 0, -1);
    struct sched_error err;
    /* alice (spec_fill's user): 3 in lab, one of them held */
    submit(s, 1, "lab", NULL, NULL, 1, 1, HOUR, T0);
    submit(s, 2, "lab", NULL, NULL, 1, 1, HOUR, T0);
    struct sched_job_spec j;
    spec_fill(&j, 3, "lab", NULL, NULL, 1, 1, HOUR, T0);
    j.hold = true;
    assert_int_equal(sched_job_submit(s, &j, T0, &err), 0);
    assert_int_equal(sched_queue_room(s, "lab", "alice", 1, 1, false, &err), 0);
    /* two more would be 5 for her over all projects: past user_max_queued 4 */
    assert_int_equal(sched_queue_room(s, "other", "alice", 2, 2, false, &err), -ENOSPC);
    assert_string_equal(err.field, "user");
    assert_non_null(strstr(err.message, "user_max_queued is 4"));
    /* ... unless exempt; then lab's default cap (5) holds: 3 + 3 > 5 */
    assert_int_equal(sched_queue_room(s, "other", "alice", 2, 2, true, &err), 0);
    assert_int_equal(sched_queue_room(s, "lab", "alice", 3, 3, true, &err), -ENOSPC);
    assert_string_equal(err.field, "project");
    assert_non_null(strstr(err.message, "max_queued is 5 (the policy's default"));
    /* bob has none queued: only the project's cap applies to him */
    assert_int_equal(sched_queue_room(s, "lab", "bob", 2, 2, false, &err), 0);
    assert_int_equal(sched_queue_room(s, "lab", "bob", 3, 3, false, &err), -ENOSPC);
    /* a project's own max_queued wins over the default */
    struct sched_project_spec p = project_spec("lab");
    p.max_queued = 100;
    put_project(s, &p);
    assert_int_equal(sched_queue_room(s, "lab", "bob", 3, 3, false, &err), 0);
    /* the one that starts leaves the queue: room for one more of alice's */
    struct cyc c = cycle(s, T0 + 10);
    assert_int_equal(count_dec(c, SCHED_D_START), 1);
    assert_int_equal(sched_queue_room(s, "other", "alice", 2, 2, false, &err), 0);
    /* 0 = no cap */
    pol.user_max_queued = 0;
    pol.default_max_queued = 0;
    assert_int_equal(sched_set_policy(s, &pol, &err), 0);
    assert_int_equal(sched_queue_room(s, "other", "alice", 1000000, 1000000, false, &err), 0);
    assert_int_equal(sched_check(s, &err), 0);
    sched_destroy(s);
}

static void test_paused_project_admits_nothing(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    add_node(s, "n1", "H100", 8);
    struct sched_project_spec p = project_spec("lab");
    p.paused = true;
    put_project(s, &p);
    struct sched_error err;
    submit(s, 1, "lab", NULL, NULL, 1, 1, HOUR, T0);
    struct cyc c = cycle(s, T0 + 10);
    assert_int_equal(count_dec(c, SCHED_D_START), 0);
    assert_reason(s, 1, SCHED_R_ADMISSION_PAUSED);
    p.paused = false;
    assert_int_equal(sched_project_upsert(s, &p, &err), 0);
    c = cycle(s, T0 + 20);
    assert_non_null(find_dec(c, SCHED_D_START, 1));
    sched_destroy(s);
}

static void test_user_cap(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    add_node(s, "n1", "H100", 8);
    struct sched_project_spec p = project_spec("lab");
    p.user_gpu_limit = 2;
    put_project(s, &p);
    struct sched_error err;
    submit(s, 1, "lab", NULL, NULL, 2, 1, HOUR, T0);
    submit(s, 2, "lab", NULL, NULL, 1, 1, HOUR, T0 + 1);
    struct sched_job_spec j;
    spec_fill(&j, 3, "lab", NULL, NULL, 1, 1, HOUR, T0 + 2);
    snprintf(j.user, sizeof(j.user), "bob");
    assert_int_equal(sched_job_submit(s, &j, T0 + 2, &err), 0);
    struct cyc c = cycle(s, T0 + 10);
    assert_non_null(find_dec(c, SCHED_D_START, 1));
    assert_null(find_dec(c, SCHED_D_START, 2));
    assert_non_null(find_dec(c, SCHED_D_START, 3)); /* bob is not alice */
    assert_reason(s, 2, SCHED_R_QUOTA_LIMIT);
    sched_destroy(s);
}

static void test_fifo_baseline_ignores_tiers(void **state)
{
    (void)state;
    struct sched_policy pol;
    sched_policy_defaults(&pol);
    pol.ordering = SCHED_ORDER_FIFO;
    pol.backfill = false;
    pol.preemption = false;
    struct sched *s = mk_sched_with(&pol);
    add_node(s, "n1", "H100", 1);
    add_project(s, "p", "critical", 0, -1);
    submit(s, 1, "p", "low", NULL, 1, 1, HOUR, T0);
    submit(s, 2, "p", "critical", NULL, 1, 1, HOUR, T0 + 1);
    struct cyc c = cycle(s, T0 + 10);
    assert_non_null(find_dec(c, SCHED_D_START, 1));
    assert_null(find_dec(c, SCHED_D_START, 2));
    sched_destroy(s);
}

static void test_policy_validation(void **state)
{
    (void)state;
    struct sched_policy pol;
    sched_policy_defaults(&pol);
    pol.ntiers = 2;
    struct sched_error err;
    assert_null(sched_create(&pol, &err));
    assert_string_equal(err.field, "tiers");
    sched_policy_defaults(&pol);
    snprintf(pol.reserved_min_tier, sizeof(pol.reserved_min_tier), "gold");
    assert_null(sched_create(&pol, &err));
    assert_string_equal(err.field, "reserved_min_tier");
    /* a running model refuses a policy that drops a tier in use, and keeps the old one */
    struct sched *s = mk_sched();
    add_project(s, "lab", "low", 0, -1);
    sched_policy_defaults(&pol);
    pol.ntiers = 3; /* drops "low" */
    assert_int_equal(sched_set_policy(s, &pol, &err), -EBUSY);
    assert_int_equal(sched_get_policy(s)->ntiers, 4);
    sched_destroy(s);
}

/* A queue long enough for the rebuild's radix sort (short ones go to qsort): every ordering,
 * keys that tie often (tiers, ages), submit times that tie so ids decide, ids that do not
 * follow submit times; and a batch merged in afterwards. sched_check() fails on any pair
 * of neighbours out of cmp_entries' order. */
static void test_big_queue_sorts_as_compared(void **state)
{
    (void)state;
    const enum sched_ordering orders[] = {SCHED_ORDER_TIERED, SCHED_ORDER_FIFO,
                                          SCHED_ORDER_MULTIFACTOR};
    const char *tiers[] = {"critical", "high", "normal", "low"};
    for (size_t o = 0; o < sizeof(orders) / sizeof(orders[0]); o++) {
        struct sched_policy p;
        sched_policy_defaults(&p);
        p.ordering = orders[o];
        struct sched *s = mk_sched_with(&p);
        add_node(s, "n1", "H100", 1); /* one job runs; the rest stay queued */
        add_project(s, "vision", "critical", 0, -1);
        add_project(s, "nlp", "critical", 0, -1);
        uint64_t r = 12345;
        uint64_t id = 1;
        for (int batch = 0; batch < 2; batch++) {
            for (int i = 0; i < 3000; i++) {
                r = r * 6364136223846793005ULL + 1442695040888963407ULL;
                /* ids from a scrambled counter: unique, not in submit order */
                uint64_t jid = (id++ * 2654435761ULL) % 1000003ULL + 1;
                int64_t at = T0 + (int64_t)((r >> 33) % 50) * MIN; /* 50 distinct times */
                submit(s, jid, (r >> 20) & 1 ? "vision" : "nlp", tiers[(r >> 40) % 4], NULL, 1, 1,
                       HOUR, at);
            }
            size_t n;
            /* a refresh rebuilds the whole queue; the second batch is merged in */
            (void)sched_cycle(s, T0 + 60 * MIN,
                              batch ? SCHED_CYCLE_INCREMENTAL : SCHED_CYCLE_REFRESH, &n, NULL);
            struct sched_error err;
            if (sched_check(s, &err))
                fail_msg("ordering %d batch %d: %s", (int)orders[o], batch, err.message);
        }
        assert_int_equal(sched_job_count(s), 6000);
        sched_destroy(s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tier_order_is_strict),
        cmocka_unit_test(test_tier_above_project_refused),
        cmocka_unit_test(test_fairshare_orders_within_tier),
        cmocka_unit_test(test_boost_raises_tier_and_expires),
        cmocka_unit_test(test_quota_limit_does_not_block_next_project),
        cmocka_unit_test(test_max_running_is_job_limit),
        cmocka_unit_test(test_max_queued_refused_at_submit),
        cmocka_unit_test(test_queue_room_caps),
        cmocka_unit_test(test_paused_project_admits_nothing),
        cmocka_unit_test(test_user_cap),
        cmocka_unit_test(test_fifo_baseline_ignores_tiers),
        cmocka_unit_test(test_policy_validation),
        cmocka_unit_test(test_big_queue_sorts_as_compared),
    };
    return cmocka_run_group_tests_name("core: order and admission", tests, NULL, NULL);
}
