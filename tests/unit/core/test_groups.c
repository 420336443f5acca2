/*
 * test_groups.c - the group level of the hierarchy (org -> group -> project -> user):
 * a group's GPU limit, its guarantee over its projects' reclaim, its borrowers, its
 * fair-share, and what explain says. Each check fails when its rule is taken out.
 */
#include "helpers.h"

static void check_ok(struct sched *s)
{
    struct sched_error err;
    if (sched_check(s, &err))
        fail_msg("sched_check: %s", err.message);
}

/* A policy with one group "lab": guarantee and limit as given (-1 = none). */
static struct sched *mk_grouped(double guarantee, int limit)
{
    struct sched_policy p;
    sched_policy_defaults(&p);
    p.ngroups = 1;
    snprintf(p.groups[0].name, sizeof(p.groups[0].name), "lab");
    p.groups[0].guarantee_gpus = guarantee;
    p.groups[0].gpu_limit = limit;
    return mk_sched_with(&p);
}

static void grouped_project(struct sched *s, const char *name, const char *group, double guarantee)
{
    struct sched_project_spec p = project_spec(name);
    snprintf(p.group, sizeof(p.group), "%s", group);
    p.guarantee_gpus = guarantee;
    put_project(s, &p);
}

/* Two projects of a group at its limit: a GPU job of either waits, explain names the
 * group's limit; a CPU-only job still runs. */
static void test_group_limit_holds_its_projects_together(void **state)
{
    (void)state;
    struct sched *s = mk_grouped(-1, 8);
    add_node(s, "n1", "H100", 8);
    add_node(s, "n2", "H100", 8);
    grouped_project(s, "a", "lab", 0);
    grouped_project(s, "b", "lab", 0);
    submit(s, 1, "a", NULL, NULL, 6, 1, HOUR, T0);
    struct cyc c = cycle(s, T0);
    assert_non_null(find_dec(c, SCHED_D_START, 1));
    submit(s, 2, "b", NULL, NULL, 4, 1, HOUR, T0 + 1);
    submit(s, 3, "b", NULL, NULL, 0, 1, HOUR, T0 + 2);
    c = cycle(s, T0 + 3);
    assert_null(find_dec(c, SCHED_D_START, 2));
    assert_non_null(find_dec(c, SCHED_D_START, 3));
    assert_reason(s, 2, SCHED_R_QUOTA_LIMIT);
    struct sched_explain x;
    assert_int_equal(sched_explain(s, 2, T0 + 3, &x), 0);
    assert_string_equal(x.limit_name, "group lab gpu_limit");
    assert_int_equal(x.limit_value, 8);
    assert_int_equal(x.limit_in_use, 6);
    /* the group's view adds up its projects */
    int gi = sched_group_find(s, "lab");
    assert_true(gi >= 0);
    struct sched_group_view gv;
    assert_int_equal(sched_group_get(s, (size_t)gi, &gv), 0);
    assert_int_equal(gv.gpus_in_use, 6);
    assert_int_equal(gv.running, 2);
    assert_int_equal(gv.projects, 2);
    check_ok(s);
    sched_destroy(s);
}

/* A project's guarantee counts within its group's: with the group at its guarantee, a
 * project under its own may not reclaim; without a group bound it does. */
static void group_guarantee_case(double group_guarantee, bool expect_reclaim)
{
    struct sched *s = mk_grouped(group_guarantee, -1);
    add_node(s, "n1", "H100", 8);
    add_node(s, "n2", "H100", 8);
    grouped_project(s, "a", "lab", 8);
    grouped_project(s, "b", "lab", 8);
    add_project(s, "z", "normal", 0, -1); /* a borrower outside the group */
    submit(s, 1, "a", NULL, "experiment", 8, 1, 10 * HOUR, T0);
    submit(s, 2, "z", NULL, "experiment", 8, 1, 10 * HOUR, T0);
    (void)cycle(s, T0);
    run(s, 1, T0);
    run(s, 2, T0);
    submit(s, 3, "b", NULL, "experiment", 8, 1, HOUR, T0 + HOUR);
    struct cyc c = cycle(s, T0 + HOUR);
    if (expect_reclaim) {
        assert_non_null(find_dec(c, SCHED_D_SIGNAL, 2));
        assert_reason(s, 3, SCHED_R_PREEMPTING);
    } else {
        assert_int_equal(count_dec(c, SCHED_D_SIGNAL), 0);
    }
    check_ok(s);
    sched_destroy(s);
}

static void test_group_guarantee_caps_reclaim(void **state)
{
    (void)state;
    group_guarantee_case(8, false); /* the group already uses its 8 */
    group_guarantee_case(-1, true); /* no group bound: b's own guarantee holds */
}

/* A group over its guarantee borrows: its project's job is reclaimable although the
 * project is within its own guarantee. */
static void test_group_over_its_guarantee_is_a_borrower(void **state)
{
    (void)state;
    struct sched *s = mk_grouped(4, -1);
    add_node(s, "n1", "H100", 8);
    grouped_project(s, "a", "lab", 8);
    add_project(s, "c", "normal", 8, -1);
    submit(s, 1, "a", NULL, "experiment", 8, 1, 10 * HOUR, T0);
    (void)cycle(s, T0);
    run(s, 1, T0);
    submit(s, 2, "c", NULL, "experiment", 8, 1, HOUR, T0 + HOUR);
    struct cyc c = cycle(s, T0 + HOUR);
    assert_non_null(find_dec(c, SCHED_D_SIGNAL, 1));
    assert_reason(s, 2, SCHED_R_PREEMPTING);
    check_ok(s);
    sched_destroy(s);
}

/* Fair-share compares groups first: project a has used nothing, but its group has used a
 * lot through a2; b's group has used a little. b goes first. */
static void test_fair_share_compares_groups_first(void **state)
{
    (void)state;
    struct sched_policy p;
    sched_policy_defaults(&p);
    p.ngroups = 2;
    snprintf(p.groups[0].name, sizeof(p.groups[0].name), "heavy");
    p.groups[0].guarantee_gpus = p.groups[0].gpu_limit = -1;
    snprintf(p.groups[1].name, sizeof(p.groups[1].name), "light");
    p.groups[1].guarantee_gpus = p.groups[1].gpu_limit = -1;
    struct sched *s = mk_sched_with(&p);
    add_node(s, "n1", "H100", 8);
    grouped_project(s, "a", "heavy", 8);
    grouped_project(s, "a2", "heavy", 8);
    grouped_project(s, "b", "light", 8);
    submit(s, 1, "a2", NULL, NULL, 8, 1, 10 * HOUR, T0);
    (void)cycle(s, T0);
    run(s, 1, T0);
    end(s, 1, SCHED_EXIT_CODE, 0, T0 + 8 * HOUR);
    submit(s, 2, "b", NULL, NULL, 8, 1, 10 * HOUR, T0 + 8 * HOUR);
    (void)cycle(s, T0 + 8 * HOUR);
    run(s, 2, T0 + 8 * HOUR);
    end(s, 2, SCHED_EXIT_CODE, 0, T0 + 9 * HOUR);
    /* a submits first; b's group has used an eighth of what a's has */
    int64_t t = T0 + 9 * HOUR + MIN;
    submit(s, 3, "a", NULL, NULL, 8, 1, HOUR, t);
    submit(s, 4, "b", NULL, NULL, 8, 1, HOUR, t + 1);
    struct cyc c = {0};
    c.d = sched_cycle(s, t + 2, SCHED_CYCLE_REFRESH, &c.n, NULL);
    assert_non_null(find_dec(c, SCHED_D_START, 4));
    assert_null(find_dec(c, SCHED_D_START, 3));
    check_ok(s);
    sched_destroy(s);
}

/* A project moved to another group takes what it holds along; a policy that stops
 * listing the group leaves it without bounds. */
static void test_project_moves_between_groups(void **state)
{
    (void)state;
    struct sched *s = mk_grouped(-1, 4);
    add_node(s, "n1", "H100", 8);
    grouped_project(s, "a", "lab", 0);
    submit(s, 1, "a", NULL, NULL, 4, 1, HOUR, T0);
    (void)cycle(s, T0);
    grouped_project(s, "a", "other", 0);
    check_ok(s);
    int lab = sched_group_find(s, "lab"), other = sched_group_find(s, "other");
    assert_true(lab >= 0 && other >= 0);
    struct sched_group_view v;
    assert_int_equal(sched_group_get(s, (size_t)lab, &v), 0);
    assert_int_equal(v.gpus_in_use, 0);
    assert_int_equal(sched_group_get(s, (size_t)other, &v), 0);
    assert_int_equal(v.gpus_in_use, 4);
    assert_int_equal(v.spec.gpu_limit, -1); /* not in the policy: no bounds */
    sched_destroy(s);
}

static void test_policy_rejects_bad_groups(void **state)
{
    (void)state;
    struct sched_policy p;
    sched_policy_defaults(&p);
    p.ngroups = 2;
    snprintf(p.groups[0].name, sizeof(p.groups[0].name), "lab");
    snprintf(p.groups[1].name, sizeof(p.groups[1].name), "lab");
    struct sched_error err;
    assert_null(sched_create(&p, &err));
    assert_string_equal(err.field, "groups");
    snprintf(p.groups[1].name, sizeof(p.groups[1].name), "lab2");
    p.groups[1].gpu_limit = -5;
    assert_null(sched_create(&p, &err));
    assert_string_equal(err.field, "groups");
    p.groups[1].gpu_limit = -1;
    p.groups[1].guarantee_gpus = -0.5;
    assert_null(sched_create(&p, &err));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_group_limit_holds_its_projects_together),
        cmocka_unit_test(test_group_guarantee_caps_reclaim),
        cmocka_unit_test(test_group_over_its_guarantee_is_a_borrower),
        cmocka_unit_test(test_fair_share_compares_groups_first),
        cmocka_unit_test(test_project_moves_between_groups),
        cmocka_unit_test(test_policy_rejects_bad_groups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
