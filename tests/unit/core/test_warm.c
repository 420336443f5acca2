/*
 * test_warm.c - warm nodes (docs/scheduling.md §3 "Warm nodes"): among the nodes that fit
 * a job equally well, those where its environment is warm come first; a warm node that
 * fits worse, does not fit or is busy changes nothing, and the job never waits for one.
 */
#include "helpers.h"

static void set_warm(struct sched *s, const char *node, const char *env)
{
    const char *keys[] = {env};
    struct sched_error err;
    if (sched_node_set_warm(s, node, keys, env ? 1 : 0, &err))
        fail_msg("warm %s: %s", node, err.message);
}

static void submit_env(struct sched *s, uint64_t id, const char *type, int gpus, int nodes,
                       const char *env, int64_t now)
{
    struct sched_job_spec j;
    spec_fill(&j, id, "lab", NULL, NULL, gpus, nodes, HOUR, now);
    if (type)
        snprintf(j.gpu_type, sizeof(j.gpu_type), "%s", type);
    snprintf(j.env, sizeof(j.env), "%s", env ? env : "");
    struct sched_error err;
    if (sched_job_submit(s, &j, now, &err))
        fail_msg("submit %llu: %s (%s)", (unsigned long long)id, err.message, err.field);
}

static const char *node_of(struct sched *s, struct cyc c, uint64_t id, int k)
{
    const struct sched_decision *d = find_dec(c, SCHED_D_START, id);
    if (!d || d->nallocs <= k)
        fail_msg("job %llu did not start on %d node(s)", (unsigned long long)id, k + 1);
    return sched_node_name(s, d->allocs[k].node);
}

static void assert_checked(struct sched *s)
{
    struct sched_error err;
    if (sched_check(s, &err))
        fail_msg("sched_check: %s", err.message);
}

/* Two equal nodes: the job lands on the warm one, whichever of the two it is (so the
 * scan's own order, which takes the first, cannot be what put it there). */
static void test_warm_node_taken_among_equals(void **state)
{
    (void)state;
    const char *names[] = {"n1", "n2"};
    for (int w = 0; w < 2; w++) {
        struct sched *s = mk_sched();
        add_node(s, "n1", "H100", 8);
        add_node(s, "n2", "H100", 8);
        add_project(s, "lab", "normal", 0, -1);
        set_warm(s, names[w], "torch@3");
        assert_true(sched_node_warm(s, (uint32_t)sched_node_find(s, names[w]), "torch@3"));
        submit_env(s, 1, NULL, 4, 1, "torch@3", T0);
        struct cyc c = cycle(s, T0);
        assert_string_equal(node_of(s, c, 1, 0), names[w]);
        assert_int_equal(find_dec(c, SCHED_D_START, 1)->warm_nodes, 1);
        assert_checked(s);
        sched_destroy(s);
    }
}

/* A job of another environment, or of none, is placed as before: the first node of the
 * level (the same one whichever node is warm for someone else). */
static void test_other_environments_placed_as_before(void **state)
{
    (void)state;
    char first[SCHED_NAME_MAX] = "";
    const char *names[] = {"n1", "n2"};
    for (int w = 0; w < 2; w++) {
        struct sched *s = mk_sched();
        add_node(s, "n1", "H100", 8);
        add_node(s, "n2", "H100", 8);
        add_project(s, "lab", "normal", 0, -1);
        set_warm(s, names[w], "torch@3");
        submit_env(s, 1, NULL, 8, 1, "torch@4", T0);
        submit_env(s, 2, NULL, 8, 1, NULL, T0 + 1);
        struct cyc c = cycle(s, T0 + 2);
        const char *on = node_of(s, c, 1, 0);
        if (!first[0])
            snprintf(first, sizeof(first), "%s", on);
        assert_string_equal(on, first);
        assert_int_equal(find_dec(c, SCHED_D_START, 1)->warm_nodes, 0);
        assert_int_equal(find_dec(c, SCHED_D_START, 2)->warm_nodes, 0);
        sched_destroy(s);
    }
}

/* Best fit comes first: a warm node with more room than the job needs (a worse fit) or of
 * another type is passed over for the cold node that fits best. */
static void test_warm_node_that_fits_worse_changes_nothing(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    add_node(s, "roomy", "H100", 8);
    add_node(s, "snug", "H100", 8);
    add_node(s, "other", "A100", 8);
    add_project(s, "lab", "normal", 0, -1);
    submit_env(s, 1, "H100", 6, 1, NULL, T0);
    struct cyc c = cycle(s, T0);
    const char *busy = node_of(s, c, 1, 0); /* one H100 node keeps 2 GPUs free */
    run(s, 1, T0);
    const char *warm = strcmp(busy, "roomy") == 0 ? "snug" : "roomy";
    set_warm(s, warm, "torch@3");
    set_warm(s, "other", "torch@3");
    submit_env(s, 2, "H100", 2, 1, "torch@3", T0 + 1);
    c = cycle(s, T0 + 2);
    assert_string_equal(node_of(s, c, 2, 0), busy);
    assert_int_equal(find_dec(c, SCHED_D_START, 2)->warm_nodes, 0);
    assert_checked(s);
    sched_destroy(s);
}

/* A warm node that is busy, or down, never holds the job back: it starts elsewhere in the
 * same cycle. */
static void test_busy_warm_node_starts_elsewhere_at_once(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    add_node(s, "n1", "H100", 8);
    add_node(s, "n2", "H100", 8);
    add_node(s, "n3", "H100", 8);
    add_project(s, "lab", "normal", 0, -1);
    submit_env(s, 1, NULL, 8, 1, NULL, T0);
    struct cyc c = cycle(s, T0);
    const char *held = node_of(s, c, 1, 0);
    run(s, 1, T0);
    const char *names[] = {"n1", "n2", "n3"}, *down = NULL, *free_one = NULL;
    for (int i = 0; i < 3; i++)
        if (strcmp(names[i], held) != 0) {
            if (!down)
                down = names[i];
            else
                free_one = names[i];
        }
    set_warm(s, held, "torch@3");
    set_warm(s, down, "torch@3");
    struct sched_error err;
    assert_int_equal(sched_node_set_state(s, down, SCHED_NODE_DOWN, T0 + 1, &err), 0);
    submit_env(s, 2, NULL, 8, 1, "torch@3", T0 + 2);
    c = cycle(s, T0 + 3);
    assert_string_equal(node_of(s, c, 2, 0), free_one);
    assert_int_equal(find_dec(c, SCHED_D_START, 2)->warm_nodes, 0);
    assert_int_equal(state_of(s, 2), SCHED_STARTING);
    assert_checked(s);
    sched_destroy(s);
}

/* A gang takes the warm nodes of a level first, then the others of it: warmed where it
 * would not have gone, it goes there. */
static struct sched *four_nodes(void)
{
    struct sched *s = mk_sched();
    add_node(s, "n1", "H100", 8);
    add_node(s, "n2", "H100", 8);
    add_node(s, "n3", "H100", 8);
    add_node(s, "n4", "H100", 8);
    add_project(s, "lab", "normal", 0, -1);
    return s;
}

static void test_gang_takes_warm_nodes_first(void **state)
{
    (void)state;
    struct sched *s = four_nodes();
    submit_env(s, 1, NULL, 8, 2, "torch@3", T0);
    struct cyc c = cycle(s, T0);
    bool taken[4] = {false};
    for (int k = 0; k < 2; k++)
        taken[node_of(s, c, 1, k)[1] - '1'] = true;
    sched_destroy(s);
    s = four_nodes();
    char name[8];
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof(name), "n%d", i + 1);
        if (!taken[i])
            set_warm(s, name, "torch@3");
    }
    submit_env(s, 1, NULL, 8, 2, "torch@3", T0);
    c = cycle(s, T0);
    for (int k = 0; k < 2; k++)
        assert_false(taken[node_of(s, c, 1, k)[1] - '1']);
    assert_int_equal(find_dec(c, SCHED_D_START, 1)->warm_nodes, 2);
    assert_checked(s);
    sched_destroy(s);
}

/* A gang that requires one switch picks its switch as before (the one with the fewest
 * nodes that let it in: warm nodes elsewhere do not pull it away), then the warm nodes
 * within it first. */
static struct sched *two_switches_warm(void)
{
    struct sched_policy p;
    sched_policy_defaults(&p);
    p.classes[0].topo_mode = SCHED_TOPO_REQUIRED;
    snprintf(p.classes[0].topo_level, SCHED_NAME_MAX, "switch");
    struct sched *s = mk_sched_with(&p);
    const char *a[] = {"a1", "a2", "a3", "a4"}, *b[] = {"b1", "b2", "b3"};
    for (int i = 0; i < 4; i++)
        add_node_l(s, a[i], "H100", 8, "switch", "sw-a");
    for (int i = 0; i < 3; i++)
        add_node_l(s, b[i], "H100", 8, "switch", "sw-b");
    add_project(s, "lab", "normal", 0, -1);
    return s;
}

static void submit_training_gang(struct sched *s, uint64_t id, const char *env)
{
    struct sched_job_spec j;
    spec_fill(&j, id, "lab", NULL, "training", 8, 2, HOUR, T0);
    snprintf(j.env, sizeof(j.env), "%s", env);
    struct sched_error err;
    if (sched_job_submit(s, &j, T0, &err))
        fail_msg("submit %llu: %s (%s)", (unsigned long long)id, err.message, err.field);
}

static void test_topology_gang_keeps_its_switch_takes_warm_within(void **state)
{
    (void)state;
    struct sched *s = two_switches_warm();
    submit_training_gang(s, 1, "torch@3");
    struct cyc c = cycle(s, T0);
    bool taken[3] = {false};
    for (int k = 0; k < 2; k++) {
        const char *on = node_of(s, c, 1, k);
        assert_int_equal(on[0], 'b'); /* the smaller switch that holds it */
        taken[on[1] - '1'] = true;
    }
    sched_destroy(s);
    s = two_switches_warm();
    set_warm(s, "a1", "torch@3");
    set_warm(s, "a2", "torch@3");
    for (int i = 0; i < 3; i++) /* the one b node it did not take */
        if (!taken[i]) {
            char name[4] = {'b', (char)('1' + i), '\0'};
            set_warm(s, name, "torch@3");
        }
    submit_training_gang(s, 1, "torch@3");
    c = cycle(s, T0);
    int warm = 0;
    for (int k = 0; k < 2; k++) {
        const char *on = node_of(s, c, 1, k);
        assert_int_equal(on[0], 'b');
        warm += !taken[on[1] - '1'];
    }
    assert_int_equal(warm, 1);
    assert_int_equal(find_dec(c, SCHED_D_START, 1)->warm_nodes, 1);
    assert_checked(s);
    sched_destroy(s);
}

/* What a caller may not say: an unknown node, too many keys, an empty or too long key, a
 * job whose key has no end. Duplicates are one; no keys empties the set. */
static void test_warm_sets_refused_and_replaced(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    add_node(s, "n1", "H100", 8);
    add_project(s, "lab", "normal", 0, -1);
    struct sched_error err;
    const char *one[] = {"torch@3"};
    assert_int_equal(sched_node_set_warm(s, "nope", one, 1, &err), -ENOENT);
    const char *many[SCHED_MAX_WARM + 1];
    char names[SCHED_MAX_WARM + 1][16];
    for (int i = 0; i <= SCHED_MAX_WARM; i++) {
        snprintf(names[i], sizeof(names[i]), "t%d@1", i);
        many[i] = names[i];
    }
    assert_int_equal(sched_node_set_warm(s, "n1", many, SCHED_MAX_WARM + 1, &err), -EINVAL);
    assert_string_equal(err.field, "warm");
    assert_int_equal(sched_node_set_warm(s, "n1", many, SCHED_MAX_WARM, &err), 0);
    const char *empty[] = {""};
    assert_int_equal(sched_node_set_warm(s, "n1", empty, 1, &err), -EINVAL);
    char longer[SCHED_ENV_MAX + 8];
    memset(longer, 'x', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    const char *too_long[] = {longer};
    assert_int_equal(sched_node_set_warm(s, "n1", too_long, 1, &err), -EINVAL);
    struct sched_node_view nv;
    assert_int_equal(sched_node_get(s, 0, &nv), 0);
    assert_int_equal(nv.nwarm, SCHED_MAX_WARM); /* a refused call changed nothing */
    const char *twice[] = {"torch@3", "torch@3", "jax@1"};
    assert_int_equal(sched_node_set_warm(s, "n1", twice, 3, &err), 0);
    assert_int_equal(sched_node_get(s, 0, &nv), 0);
    assert_int_equal(nv.nwarm, 2);
    assert_true(sched_node_warm(s, 0, "jax@1"));
    assert_false(sched_node_warm(s, 0, "t1@1"));
    assert_checked(s);
    assert_int_equal(sched_node_set_warm(s, "n1", NULL, 0, &err), 0);
    assert_false(sched_node_warm(s, 0, "torch@3"));
    assert_checked(s);
    struct sched_job_spec j;
    spec_fill(&j, 1, "lab", NULL, NULL, 1, 1, HOUR, T0);
    memset(j.env, 'x', sizeof(j.env)); /* no terminating NUL */
    assert_int_equal(sched_job_submit(s, &j, T0, &err), -EINVAL);
    assert_string_equal(err.field, "template");
    sched_destroy(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_warm_node_taken_among_equals),
        cmocka_unit_test(test_other_environments_placed_as_before),
        cmocka_unit_test(test_warm_node_that_fits_worse_changes_nothing),
        cmocka_unit_test(test_busy_warm_node_starts_elsewhere_at_once),
        cmocka_unit_test(test_gang_takes_warm_nodes_first),
        cmocka_unit_test(test_topology_gang_keeps_its_switch_takes_warm_within),
        cmocka_unit_test(test_warm_sets_refused_and_replaced),
    };
    return cmocka_run_group_tests_name("core: warm nodes", tests, NULL, NULL);
}
