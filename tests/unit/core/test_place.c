/*
 * test_place.c - placement: GPU types never substituted, best fit, gangs all or nothing,
 * selectors, the reserved zone, drain, and the can-never-fit check at submit.
 */
#include "helpers.h"

static void test_gpu_type_never_substituted(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    add_node(s, "h1", "H100", 8);
    add_node(s, "a1", "A100", 8);
    add_project(s, "lab", "normal", 0, -1);
    submit(s, 1, "lab", NULL, NULL, 8, 1, HOUR, T0); /* any type */
    struct sched_job_spec j;
    spec_fill(&j, 2, "lab", NULL, NULL, 8, 1, HOUR, T0 + 1);
    snprintf(j.gpu_type, sizeof(j.gpu_type), "A100");
    struct sched_error err;
    assert_int_equal(sched_job_submit(s, &j, T0 + 1, &err), 0);
    spec_fill(&j, 3, "lab", NULL, NULL, 8, 1, HOUR, T0 + 2);
    snprintf(j.gpu_type, sizeof(j.gpu_type), "A100");
    assert_int_equal(sched_job_submit(s, &j, T0 + 2, &err), 0);
    struct cyc c = cycle(s, T0 + 10);
    const struct sched_decision *d1 = find_dec(c, SCHED_D_START, 1);
    const struct sched_decision *d2 = find_dec(c, SCHED_D_START, 2);
    assert_non_null(d1);
    assert_non_null(d2);
    assert_string_equal(sched_node_name(s, d2->allocs[0].node), "a1");
    assert_string_equal(sched_node_name(s, d1->allocs[0].node), "h1");
    /* job 3 wants A100: the H100s are busy too, but it must never land there */
    assert_state(s, 3, SCHED_PENDING);
    end(s, 1, SCHED_EXIT_CODE, 0, T0 + 20);
    c = cycle(s, T0 + 21);
    assert_null(find_dec(c, SCHED_D_START, 3));
    assert_reason(s, 3, SCHED_R_RESOURCES);
    sched_destroy(s);
}

static void test_unknown_gpu_type_refused(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    add_node(s, "h1", "H100", 8);
    add_project(s, "lab", "normal", 0, -1);
    struct sched_job_spec j;
    spec_fill(&j, 1, "lab", NULL, NULL, 1, 1, HOUR, T0);
    snprintf(j.gpu_type, sizeof(j.gpu_type), "B200");
    struct sched_error err;
    assert_int_equal(sched_job_submit(s, &j, T0, &err), -EINVAL);
    assert_string_equal(err.field, "gpu_type");
    sched_destroy(s);
}

static void test_never_fits_refused_with_field(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    add_node(s, "h1", "H100", 8);
    add_node(s, "h2", "H100", 8);
    add_project(s, "lab", "normal", 0, -1);
    struct sched_job_spec j;
    struct sched_error err;
    spec_fill(&j, 1, "lab", NULL, NULL, 16, 1, HOUR, T0);
    assert_int_equal(sched_job_validate(s, &j, &err), -EINVAL);
    assert_string_equal(err.field, "gpus");
    spec_fill(&j, 1, "lab", NULL, NULL, 8, 3, HOUR, T0);
    assert_int_equal(sched_job_validate(s, &j, &err), -EINVAL);
    spec_fill(&j, 1, "lab", NULL, NULL, 1, 1, HOUR, T0);
    j.cpus_per_node = 1000;
    assert_int_equal(sched_job_validate(s, &j, &err), -EINVAL);
    assert_string_equal(err.field, "cpus");
    spec_fill(&j, 1, "lab", NULL, NULL, 1, 1, HOUR, T0);
    snprintf(j.selectors[0].key, SCHED_NAME_MAX, "zone");
    snprintf(j.selectors[0].value, SCHED_NAME_MAX, "mars");
    j.nselectors = 1;
    assert_int_equal(sched_job_validate(s, &j, &err), -EINVAL);
    assert_string_equal(err.field, "selectors");
    spec_fill(&j, 1, "nope", NULL, NULL, 1, 1, HOUR, T0);
    assert_int_equal(sched_job_validate(s, &j, &err), -EINVAL);
    assert_string_equal(err.field, "project");
    spec_fill(&j, 1, "lab", NULL, "nope", 1, 1, HOUR, T0);
    assert_int_equal(sched_job_validate(s, &j, &err), -EINVAL);
    assert_string_equal(err.field, "class");
    spec_fill(&j, 1, "lab", NULL, NULL, -1, 1, HOUR, T0);
    assert_int_equal(sched_job_validate(s, &j, &err), -EINVAL);
    assert_string_equal(err.field, "gpus");
    assert_int_equal(sched_job_count(s), 0);
    sched_destroy(s);
}

static void test_best_fit_keeps_whole_nodes_free(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    add_node(s, "big", "H100", 8);
    add_node(s, "part", "H100", 8);
    add_project(s, "lab", "normal", 0, -1);
    submit(s, 1, "lab", NULL, NULL, 6, 1, HOUR, T0);
    struct cyc c = cycle(s, T0);
    const struct sched_decision *d = find_dec(c, SCHED_D_START, 1);
    assert_non_null(d);
    const char *first = sched_node_name(s, d->allocs[0].node);
    submit(s, 2, "lab", NULL, NULL, 1, 1, HOUR, T0 + 1);
    c = cycle(s, T0 + 2);
    d = find_dec(c, SCHED_D_START, 2);
    assert_non_null(d);
    /* the 1-GPU job goes where 2 are free, leaving a whole node for an 8-GPU job */
    assert_string_equal(sched_node_name(s, d->allocs[0].node), first);
    submit(s, 3, "lab", NULL, NULL, 8, 1, HOUR, T0 + 3);
    c = cycle(s, T0 + 4);
    assert_non_null(find_dec(c, SCHED_D_START, 3));
    sched_destroy(s);
}

static void test_disjoint_gpu_indices(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    add_node(s, "n1", "H100", 8);
    add_project(s, "lab", "normal", 0, -1);
    submit(s, 1, "lab", NULL, NULL, 4, 1, HOUR, T0);
    submit(s, 2, "lab", NULL, NULL, 4, 1, HOUR, T0 + 1);
    struct cyc c = cycle(s, T0 + 2);
    const struct sched_decision *a = find_dec(c, SCHED_D_START, 1);
    const struct sched_decision *b = find_dec(c, SCHED_D_START, 2);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(a->allocs[0].gpu_mask & b->allocs[0].gpu_mask, 0);
    assert_int_equal(__builtin_popcountll(a->allocs[0].gpu_mask), 4);
    assert_int_equal(__builtin_popcountll(b->allocs[0].gpu_mask), 4);
    sched_destroy(s);
}

static void test_gang_all_or_nothing(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    add_node(s, "n1", "H100", 8);
    add_node(s, "n2", "H100", 8);
    add_project(s, "lab", "normal", 0, -1);
    submit(s, 1, "lab", NULL, NULL, 4, 1, HOUR, T0); /* takes half of one node */
    struct cyc c = cycle(s, T0);
    assert_non_null(find_dec(c, SCHED_D_START, 1));
    run(s, 1, T0);
    /* 2 nodes x 8 GPUs: 12 GPUs are free but not on two whole nodes */
    submit(s, 2, "lab", NULL, NULL, 8, 2, HOUR, T0 + 1);
    c = cycle(s, T0 + 2);
    assert_null(find_dec(c, SCHED_D_START, 2));
    assert_state(s, 2, SCHED_PENDING);
    end(s, 1, SCHED_EXIT_CODE, 0, T0 + 10);
    c = cycle(s, T0 + 11);
    const struct sched_decision *d = find_dec(c, SCHED_D_START, 2);
    assert_non_null(d);
    assert_int_equal(d->nallocs, 2);
    assert_int_not_equal(d->allocs[0].node, d->allocs[1].node);
    sched_destroy(s);
}

static void test_selectors(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    add_node_l(s, "a", "H100", 8, "zone", "a");
    add_node_l(s, "b", "H100", 8, "zone", "b");
    add_project(s, "lab", "normal", 0, -1);
    struct sched_job_spec j;
    spec_fill(&j, 1, "lab", NULL, NULL, 1, 1, HOUR, T0);
    snprintf(j.selectors[0].key, SCHED_NAME_MAX, "zone");
    snprintf(j.selectors[0].value, SCHED_NAME_MAX, "b");
    j.nselectors = 1;
    struct sched_error err;
    assert_int_equal(sched_job_submit(s, &j, T0, &err), 0);
    spec_fill(&j, 2, "lab", NULL, NULL, 1, 1, HOUR, T0);
    snprintf(j.selectors[0].key, SCHED_NAME_MAX, "zone");
    snprintf(j.selectors[0].value, SCHED_NAME_MAX, "b");
    j.selectors[0].negate = true;
    j.nselectors = 1;
    assert_int_equal(sched_job_submit(s, &j, T0, &err), 0);
    struct cyc c = cycle(s, T0 + 1);
    assert_string_equal(sched_node_name(s, find_dec(c, SCHED_D_START, 1)->allocs[0].node), "b");
    assert_string_equal(sched_node_name(s, find_dec(c, SCHED_D_START, 2)->allocs[0].node), "a");
    sched_destroy(s);
}

static void test_reserved_zone(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    add_node(s, "n1", "H100", 8);
    add_node(s, "n2", "H100", 8);
    add_node(s, "n3", "H100", 8);
    add_node(s, "n4", "H100", 8);
    add_node_l(s, "r1", "H100", 8, "pool", "reserved"); /* 8 of 40 GPUs: within 20 % */
    add_node_l(s, "r2", "H100", 8, "pool", "reserved"); /* over the ratio: ordinary */
    (void)cycle(s, T0); /* the zone is recomputed once per burst of node changes */
    struct sched_node_view nv;
    assert_int_equal(sched_node_get(s, (uint32_t)sched_node_find(s, "r1"), &nv), 0);
    assert_true(nv.reserved);
    assert_int_equal(sched_node_get(s, (uint32_t)sched_node_find(s, "r2"), &nv), 0);
    assert_false(nv.reserved);
    add_project(s, "lab", "critical", 0, -1);
    /* interactive low-tier work is not preemptible: never on the reserved node */
    for (uint64_t id = 1; id <= 6; id++)
        submit(s, id, "lab", "low", "interactive", 8, 1, HOUR, T0 + (int64_t)id);
    struct cyc c = cycle(s, T0 + 10);
    assert_int_equal(count_dec(c, SCHED_D_START), 5);
    int r1 = sched_node_find(s, "r1");
    for (size_t i = 0; i < c.n; i++)
        if (c.d[i].kind == SCHED_D_START)
            assert_int_not_equal(c.d[i].allocs[0].node, r1);
    assert_reason(s, 6, SCHED_R_RESERVED_ZONE);
    /* a high-tier job takes the reserved node */
    submit(s, 7, "lab", "high", NULL, 8, 1, HOUR, T0 + 20);
    c = cycle(s, T0 + 21);
    const struct sched_decision *d = find_dec(c, SCHED_D_START, 7);
    assert_non_null(d);
    assert_int_equal(d->allocs[0].node, r1);
    sched_destroy(s);
}

static void test_borrower_reclaimed_at_once(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    for (int i = 0; i < 4; i++) {
        char name[8];
        snprintf(name, sizeof(name), "n%d", i);
        add_node(s, name, "H100", 8);
    }
    add_node_l(s, "r1", "H100", 8, "pool", "reserved");
    add_project(s, "lab", "critical", 0, -1);
    for (uint64_t id = 1; id <= 5; id++)
        submit(s, id, "lab", "low", "exploration", 8, 1, HOUR, T0 + (int64_t)id);
    struct cyc c = cycle(s, T0 + 10);
    assert_int_equal(count_dec(c, SCHED_D_START), 5); /* job 5 borrows r1 */
    for (uint64_t id = 1; id <= 5; id++)
        run(s, id, T0 + 10);
    /* one second later (well within min_runtime) a high job needs the reserved room */
    submit(s, 9, "lab", "high", NULL, 8, 1, HOUR, T0 + 1000);
    c = cycle(s, T0 + 1001);
    const struct sched_decision *sig = find_dec(c, SCHED_D_SIGNAL, 5);
    assert_non_null(sig);
    assert_int_equal(sig->cause, SCHED_STOP_PREEMPT);
    assert_int_equal(sig->preemptor, 9);
    assert_int_equal(count_dec(c, SCHED_D_SIGNAL), 1);
    sched_destroy(s);
}

static void test_drain(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    add_node(s, "n1", "H100", 8);
    add_project(s, "lab", "normal", 0, -1);
    submit(s, 1, "lab", NULL, NULL, 4, 1, HOUR, T0);
    struct cyc c = cycle(s, T0);
    assert_non_null(find_dec(c, SCHED_D_START, 1));
    run(s, 1, T0);
    struct sched_error err;
    assert_int_equal(sched_node_set_state(s, "n1", SCHED_NODE_DRAINING, T0 + 1, &err), 0);
    submit(s, 2, "lab", NULL, NULL, 1, 1, HOUR, T0 + 2);
    c = cycle(s, T0 + 3);
    assert_null(find_dec(c, SCHED_D_START, 2));
    end(s, 1, SCHED_EXIT_CODE, 0, T0 + 4);
    c = cycle(s, T0 + 5);
    bool drained = false;
    for (size_t i = 0; i < c.n; i++)
        if (c.d[i].kind == SCHED_D_NODE_STATE && c.d[i].node_to == SCHED_NODE_DRAINED)
            drained = true;
    assert_true(drained);
    assert_null(find_dec(c, SCHED_D_START, 2));
    assert_int_equal(sched_node_set_state(s, "n1", SCHED_NODE_UP, T0 + 6, &err), 0);
    c = cycle(s, T0 + 7);
    assert_non_null(find_dec(c, SCHED_D_START, 2));
    sched_destroy(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_type_never_substituted),
        cmocka_unit_test(test_unknown_gpu_type_refused),
        cmocka_unit_test(test_never_fits_refused_with_field),
        cmocka_unit_test(test_best_fit_keeps_whole_nodes_free),
        cmocka_unit_test(test_disjoint_gpu_indices),
        cmocka_unit_test(test_gang_all_or_nothing),
        cmocka_unit_test(test_selectors),
        cmocka_unit_test(test_reserved_zone),
        cmocka_unit_test(test_borrower_reclaimed_at_once),
        cmocka_unit_test(test_drain),
    };
    return cmocka_run_group_tests_name("core: placement", tests, NULL, NULL);
}
