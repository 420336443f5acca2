/*
 * test_constraint.c - Slurm's --constraint grammar (core/constraint.c) and its use in
 * placement: what parses, what a node's features are, which jobs are refused and why,
 * and that a constrained job lands only on nodes that meet it.
 */
#include "helpers.h"

#include "core/constraint.h"

static struct sched_label L(const char *k, const char *v) {
    struct sched_label l;
    memset(&l, 0, sizeof(l));
    snprintf(l.key, sizeof(l.key), "%s", k);
    snprintf(l.value, sizeof(l.value), "%s", v);
    return l;
}

static void
test_grammar_accepts_slurm_forms(void **state)
{
    (void)state;
    static const char *const ok[] = {"a100",          "a100&ib",     "a100|v100",
                                     "[rack1|rack2]", "a100*2",      "(a100|h100)&ib",
                                     "[a|b]*4",       "gpu-80g.x_1", "(((a)))"};
    struct feat_shape sh;
    char why[160];
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        if (feat_parse(ok[i], &sh, why, sizeof(why)) != 0)
            fail_msg("'%s' refused: %s", ok[i], why);
    assert_int_equal(feat_parse("[a|b]", &sh, why, sizeof(why)), 0);
    assert_true(sh.alike);
    assert_int_equal(sh.counts, 0);
    assert_int_equal(feat_parse("a*2", &sh, why, sizeof(why)), 0);
    assert_int_equal(sh.counts, 1);
    assert_int_equal(sh.top_count, 2);
    assert_int_equal(feat_parse("[a|b]*3", &sh, why, sizeof(why)), 0);
    assert_int_equal(sh.top_count, 3);
    assert_int_equal(feat_parse("a*2&b", &sh, why, sizeof(why)), 0);
    assert_int_equal(sh.top_count, 0); /* the count is one factor's, not the job's */
    assert_int_equal(feat_parse("a&b*2", &sh, why, sizeof(why)), 0);
    assert_int_equal(sh.top_count, 0);
}

static void test_grammar_refuses_with_place(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",   "a&",  "|a",  "a||b", "(a",  "a)", "[a|[b]]",       "(a|[b])",
        "a*", "a*0", "a b", "a,b",  "a=b", "*2", "a*99999999999", "[a"};
    char why[160];
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (feat_parse(bad[i], NULL, why, sizeof(why)) != -EINVAL)
            fail_msg("'%s' accepted", bad[i]);
        assert_non_null(strstr(why, "at character"));
        assert_false(feat_match(bad[i], NULL, 0));
    }
    char deep[64] = "";
    for (int i = 0; i < 20; i++)
        strcat(deep, "(");
    strcat(deep, "a");
    for (int i = 0; i < 20; i++)
        strcat(deep, ")");
    assert_int_equal(feat_parse(deep, NULL, why, sizeof(why)), -EINVAL);
    assert_non_null(strstr(why, "too deep"));
}

static void test_node_features_from_labels(void **state)
{
    (void)state;
    struct sched_label ls[3] = {L("features", "a100,ib,gpu80g"), L("rack", "r12"),
                                L("zone", "north")};
    assert_true(feat_has("a100", ls, 3));
    assert_true(feat_has("gpu80g", ls, 3));
    assert_true(feat_has("r12", ls, 3));   /* any label's value */
    assert_false(feat_has("rack", ls, 3)); /* not its key */
    assert_false(feat_has("a10", ls, 3));  /* whole items only */
    assert_false(feat_has("A100", ls, 3)); /* case counts, as in Slurm */
    assert_true(feat_match("a100&ib", ls, 3));
    assert_false(feat_match("a100&v100", ls, 3));
    assert_true(feat_match("v100|a100", ls, 3));
    assert_true(feat_match("(v100|a100)&north", ls, 3));
    assert_false(feat_match("(v100|a100)&south", ls, 3));
    assert_true(feat_match("[v100|gpu80g]", ls, 3));
    assert_true(feat_match("a100*2", ls, 3));
    assert_true(feat_match("v100&ib|a100", ls, 3)); /* & binds tighter than | */
    assert_false(feat_match("a100", NULL, 0));
}

static void add_featured(struct sched *s, const char *name, const char *features)
{
    struct sched_node_spec n;
    memset(&n, 0, sizeof(n));
    snprintf(n.name, sizeof(n.name), "%s", name);
    snprintf(n.gpu_type, sizeof(n.gpu_type), "H100");
    n.gpus = 8;
    n.cpus = 64;
    n.mem_mb = 512 * 1024;
    n.state = SCHED_NODE_UP;
    n.labels[0] = L("features", features);
    n.nlabels = 1;
    struct sched_error err;
    assert_int_equal(sched_node_upsert(s, &n, T0, &err), 0);
}

static void test_constrained_jobs_land_on_matching_nodes(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    add_featured(s, "n1", "ib");
    add_featured(s, "n2", "a100,ib");
    add_featured(s, "n3", "v100");
    add_project(s, "lab", "normal", 0, -1);
    struct sched_job_spec j;
    struct sched_error err;
    spec_fill(&j, 1, "lab", NULL, NULL, 8, 1, HOUR, T0);
    snprintf(j.constraint, sizeof(j.constraint), "a100&ib");
    assert_int_equal(sched_job_submit(s, &j, T0, &err), 0);
    spec_fill(&j, 2, "lab", NULL, NULL, 8, 1, HOUR, T0);
    snprintf(j.constraint, sizeof(j.constraint), "v100|nope");
    assert_int_equal(sched_job_submit(s, &j, T0, &err), 0);
    spec_fill(&j, 3, "lab", NULL, NULL, 8, 1, HOUR, T0);
    snprintf(j.constraint, sizeof(j.constraint), "a100&ib"); /* waits: n2 is taken */
    assert_int_equal(sched_job_submit(s, &j, T0, &err), 0);
    struct cyc c = cycle(s, T0 + 1);
    assert_string_equal(sched_node_name(s, find_dec(c, SCHED_D_START, 1)->allocs[0].node), "n2");
    assert_string_equal(sched_node_name(s, find_dec(c, SCHED_D_START, 2)->allocs[0].node), "n3");
    assert_null(find_dec(c, SCHED_D_START, 3));
    assert_int_equal(sched_check(s, &err), 0);
    sched_destroy(s);
}

static void test_unplaceable_constraints_refused(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    add_featured(s, "n1", "a100");
    add_featured(s, "n2", "a100");
    add_project(s, "lab", "normal", 0, -1);
    struct sched_job_spec j;
    struct sched_error err;
    spec_fill(&j, 1, "lab", NULL, NULL, 1, 1, HOUR, T0);
    snprintf(j.constraint, sizeof(j.constraint), "h100");
    assert_int_equal(sched_job_validate(s, &j, &err), -EINVAL); /* no node has it */
    assert_string_equal(err.field, "selectors and constraint");
    snprintf(j.constraint, sizeof(j.constraint), "a100&");
    assert_int_equal(sched_job_validate(s, &j, &err), -EINVAL);
    assert_string_equal(err.field, "constraint");
    spec_fill(&j, 1, "lab", NULL, NULL, 1, 2, HOUR, T0);
    snprintf(j.constraint, sizeof(j.constraint), "a100*1&ib*1");
    assert_int_equal(sched_job_validate(s, &j, &err), -EINVAL);
    assert_non_null(strstr(err.message, "node counts"));
    snprintf(j.constraint, sizeof(j.constraint), "a100*3");
    assert_int_equal(sched_job_validate(s, &j, &err), -EINVAL);
    snprintf(j.constraint, sizeof(j.constraint), "a100*2"); /* every node: placeable */
    assert_int_equal(sched_job_validate(s, &j, &err), 0);
    snprintf(j.constraint, sizeof(j.constraint), "[a100|h100]");
    assert_int_equal(sched_job_validate(s, &j, &err), -EINVAL);
    assert_non_null(strstr(err.message, "matching OR"));
    spec_fill(&j, 1, "lab", NULL, NULL, 1, 1, HOUR, T0);
    snprintf(j.constraint, sizeof(j.constraint), "[a100|h100]"); /* one node: a plain OR */
    assert_int_equal(sched_job_validate(s, &j, &err), 0);
    memset(j.constraint, 'a', sizeof(j.constraint)); /* no terminator within the field */
    assert_int_equal(sched_job_validate(s, &j, &err), -EINVAL);
    assert_string_equal(err.field, "constraint");
    sched_destroy(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grammar_accepts_slurm_forms),
        cmocka_unit_test(test_grammar_refuses_with_place),
        cmocka_unit_test(test_node_features_from_labels),
        cmocka_unit_test(test_constrained_jobs_land_on_matching_nodes),
        cmocka_unit_test(test_unplaceable_constraints_refused),
    };
    return cmocka_run_group_tests_name("core: features", tests, NULL, NULL);
}
