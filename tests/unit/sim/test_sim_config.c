/*
 * test_sim_config.c - docket-sim's inputs: cluster YAML (node groups, labels, scaling),
 * the policy document converted into struct sched_policy and projects, mapping rules,
 * the baselines, and that every shipped example under examples/sim loads.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/config.h"
#include "util/yamljson.h"

static json_t *yaml(const char *text)
{
    char err[256];
    json_t *j = yaml_to_json(text, strlen(text), err, sizeof(err));

    if (!j)
        fail_msg("yaml: %s", err);
    return j;
}

static void cluster_groups(void **state)
{
    struct sim_cluster c;
    struct sched_node_spec n;
    char err[256];
    json_t *j = yaml("node_groups:\n"
                     "  - {name: a, count: 2, gpus: 8, gpu_type: H100, cpus: 96, mem: 1T,\n"
                     "     labels: {vc: \"6214e9\", zone: b}}\n"
                     "  - {name: cpu, count: 3, gpus: 0, cpus: 32, mem: 65536}\n");

    (void)state;
    assert_int_equal(sim_cluster_from_json(j, "c.yaml", &c, err, sizeof(err)), 0);
    json_decref(j);
    assert_int_equal(sim_cluster_nodes(&c), 5);
    assert_int_equal(sim_cluster_gpus(&c, NULL, NULL), 16);
    assert_int_equal(sim_cluster_gpus(&c, "vc", "6214e9"), 16);
    assert_int_equal(sim_cluster_gpus(&c, "vc", "other"), 0);
    assert_int_equal(sim_cluster_max_node_gpus(&c), 8);
    sim_cluster_node(&c, 1, &n);
    assert_string_equal(n.name, "a-0002");
    assert_string_equal(n.gpu_type, "H100");
    assert_int_equal(n.mem_mb, 1024 * 1024);
    assert_int_equal(n.nlabels, 2);
    assert_string_equal(n.labels[0].value, "6214e9");
    sim_cluster_node(&c, 4, &n);
    assert_string_equal(n.name, "cpu-0003");
    assert_int_equal(n.gpus, 0);
    assert_int_equal(n.mem_mb, 65536);
    sim_cluster_scale(&c, 0.5);
    assert_int_equal(c.groups[0].count, 1);
    assert_int_equal(c.groups[1].count, 2); /* 1.5 rounds to 2 */
    sim_cluster_scale(&c, 0.01);
    assert_int_equal(c.groups[1].count, 1); /* never below one node */
    sim_cluster_release(&c);
}

static void cluster_bad(const char *text, const char *frag)
{
    struct sim_cluster c;
    char err[256];
    json_t *j = yaml(text);

    assert_int_equal(sim_cluster_from_json(j, "c.yaml", &c, err, sizeof(err)), -22);
    json_decref(j);
    if (!strstr(err, frag))
        fail_msg("error '%s' lacks '%s'", err, frag);
    assert_null(c.groups);
}

static void cluster_errors(void **state)
{
    (void)state;
    cluster_bad("nodes: []", "c.yaml: nodes: unknown key");
    cluster_bad("node_groups: []", "node_groups: expected a non-empty list");
    cluster_bad("node_groups: [{name: a, gpus: 8, gpu_type: x}]", "node_groups[0].count: missing");
    cluster_bad("node_groups: [{name: a, count: 1, gpus: 65, gpu_type: x}]",
                "node_groups[0].gpus: 65 out of range");
    cluster_bad("node_groups: [{name: a, count: 1, gpus: 8}]", "gpu_type: missing");
    cluster_bad("node_groups: [{name: a, count: 1, colour: red}]",
                "node_groups[0].colour: unknown key");
    cluster_bad("node_groups: [{name: a, count: 1}, {name: a, count: 2}]", "used twice");
    cluster_bad("node_groups: [{name: a, count: 0}]", "no nodes");
    cluster_bad("node_groups: [{name: 'a b', count: 1}]", "not a name");
    cluster_bad("node_groups: [{name: a, count: 1, mem: lots}]",
                "node_groups[0].mem: expected a size");
    cluster_bad("node_groups: [{name: a, count: 1, labels: [x]}]", "labels: expected a mapping");
}

static void policy_document(void **state)
{
    struct sim_policy p;
    char err[256];
    const struct sched_project_spec *ps;
    json_t *j = yaml(
        "tiers: [{name: critical, starve_after: 1h}, {name: high}, {name: normal},\n"
        "        {name: low, starve_after: 24h}]\n"
        "classes: [{name: training, default_limit: 7d, preemptible: true, protect_after: 24h,\n"
        "           max_grace: 10m}, {name: batch, default_limit: 2h}]\n"
        "settings: {fairshare_half_life: 7d, min_runtime: 10m, max_preemptions: 3,\n"
        "           reserved_max_ratio: 0.2, reserved_min_tier: high, backfill_depth: 32,\n"
        "           gpu_weights: {H100-80GB: 2.0, A100-40GB: 1.0}, cpu_weight: 0.0625,\n"
        "           ordering: multifactor, preemption: false, default_signal: USR1,\n"
        "           default_class: batch, mf_age_weight: 1000, mf_age_max: 7d}\n"
        "projects: [{name: vision, group: cv, tier: high, guarantee_gpus: 16, gpu_limit: 32,\n"
        "            max_running: 20, max_queued: 1000, user_max_running: 10, paused: false}]\n");

    (void)state;
    assert_int_equal(sim_policy_from_json(j, "dir/p.yaml", &p, err, sizeof(err)), 0);
    json_decref(j);
    assert_string_equal(p.name, "p.yaml");
    assert_int_equal(p.policy.ntiers, 4);
    assert_int_equal(p.policy.tiers[0].starve_after_ms, 3600000);
    assert_int_equal(p.policy.tiers[3].starve_after_ms, 86400000);
    assert_int_equal(p.policy.tiers[1].starve_after_ms, 0);
    /* the list is replaced (as `docket apply` does): training starts from the default
     * training class and is updated, batch is new */
    assert_int_equal(p.policy.nclasses, 2);
    assert_string_equal(p.policy.classes[0].name, "training");
    assert_int_equal(p.policy.classes[0].max_grace_ms, 600000);
    assert_int_equal(p.policy.classes[0].max_retries, 0);
    assert_string_equal(p.policy.classes[1].name, "batch");
    assert_int_equal(p.policy.classes[1].default_limit_ms, 7200000);
    assert_true(p.policy.mf_age_weight == 1000);
    assert_int_equal(p.policy.mf_age_max_ms, 7 * 86400000LL);
    assert_int_equal(p.policy.min_runtime_ms, 600000);
    assert_int_equal(p.policy.backfill_depth, 32);
    assert_int_equal(p.policy.ngpu_weights, 2);
    assert_true(p.policy.gpu_weights[0].weight == 2.0);
    assert_true(p.policy.cpu_weight == 0.0625);
    assert_int_equal(p.policy.ordering, SCHED_ORDER_MULTIFACTOR);
    assert_false(p.policy.preemption);
    assert_int_equal(p.policy.default_signal, 10);
    assert_int_equal(p.nprojects, 1);
    ps = sim_policy_project(&p, "vision");
    assert_non_null(ps);
    assert_string_equal(ps->tier, "high");
    assert_true(ps->guarantee_gpus == 16);
    assert_int_equal(ps->gpu_limit, 32);
    assert_int_equal(ps->user_gpu_limit, -1); /* unset stays "no limit" */
    assert_null(sim_policy_project(&p, "nlp"));
    sim_policy_release(&p);
}

static void policy_bad(const char *text, const char *frag)
{
    struct sim_policy p;
    char err[256];
    json_t *j = yaml(text);

    assert_int_equal(sim_policy_from_json(j, "p.yaml", &p, err, sizeof(err)), -22);
    json_decref(j);
    if (!strstr(err, frag))
        fail_msg("error '%s' lacks '%s'", err, frag);
}

static void policy_errors(void **state)
{
    (void)state;
    /* the messages of src/protocol's reader (docket apply gives the same), after the file */
    policy_bad("tiers: [{name: a}, {name: b}]", "p.yaml: tiers must be a list of 3 to 5");
    policy_bad("tiers: [{name: a}, {name: b}, {name: a}]", "p.yaml: tiers[2]: duplicate tier 'a'");
    policy_bad("tiers: [{name: a, starve_after: soon}, {name: b}, {name: c}]",
               "tiers[0].starve_after");
    policy_bad("settings: {backfill: maybe}", "settings.backfill");
    policy_bad("settings: {ordering: random}", "settings.ordering must be");
    policy_bad("settings: {reserved_max_ratio: 2}", "settings.reserved_max_ratio must be between");
    policy_bad("settings: {speed: 11}", "settings.speed");
    policy_bad("settings: {default_class: nope}", "unknown class 'nope'");
    policy_bad("projects: [{name: x, tier: gold}]", "projects[0].tier: unknown tier 'gold'");
    policy_bad("projects: [{name: x}, {name: x}]", "duplicate project 'x'");
    policy_bad("projects: [{name: x, gpu_limit: -5}]", "projects[0].gpu_limit");
    policy_bad("projects: [{tier: high}]", "projects[0].name is required");
    policy_bad("quotas: {}", "quotas");
    /* what docket apply refuses, the simulator refuses too (it once took *_ms keys) */
    policy_bad("settings: {min_runtime_ms: 600000}", "settings.min_runtime_ms");
    policy_bad("classes: [{name: t, default_limit: 2h, max_limit: 1h}]",
               "default_limit is above max_limit");
}

static void mapping_rules(void **state)
{
    struct sim_mapping m;
    char err[256];
    json_t *j = yaml("time_limit_factor: 3\npartition_label: vc\npool: true\n"
                     "checkpoint_interval: 1h\non_signal: grace\ncpu_unit_cores: 4\n"
                     "default: {tier: normal, class: training}\n"
                     "rules: [{match: \"6214e9\", tier: high},\n"
                     "        {match: \"g1*\", user: u7, project: big, class: experiment},\n"
                     "        {match: \"*\", user: \"u9\", tier: low}]\n");
    const struct sim_rule *r;

    (void)state;
    sim_mapping_defaults(&m);
    assert_int_equal(sim_mapping_from_json(j, "m.yaml", &m, err, sizeof(err)), 0);
    json_decref(j);
    assert_true(m.time_limit_factor == 3);
    assert_string_equal(m.partition_label, "vc");
    assert_true(m.pool);
    assert_int_equal(m.checkpoint_ms, 3600000);
    assert_int_equal(m.on_signal, SIM_SIGNAL_GRACE);
    assert_int_equal(m.cpu_unit_cores, 4);
    r = sim_mapping_find(&m, "6214e9", "");
    assert_string_equal(r->tier, "high");
    r = sim_mapping_find(&m, "g12", "u7");
    assert_string_equal(r->project, "big");
    r = sim_mapping_find(&m, "g12", "u8");
    assert_ptr_equal(r, &m.dflt);
    assert_string_equal(r->class_name, "training");
    r = sim_mapping_find(&m, "zz", "u9");
    assert_string_equal(r->tier, "low");
    sim_mapping_release(&m);

    sim_mapping_defaults(&m);
    j = yaml("rules: [{tier: high}]");
    assert_int_equal(sim_mapping_from_json(j, "m.yaml", &m, err, sizeof(err)), -22);
    assert_non_null(strstr(err, "mapping.rules[0].match: missing"));
    json_decref(j);
    j = yaml("time_limit: forever");
    assert_int_equal(sim_mapping_from_json(j, "m.yaml", &m, err, sizeof(err)), -22);
    assert_non_null(strstr(err, "mapping.time_limit: 'forever'"));
    json_decref(j);
    sim_mapping_release(&m);
}

static void mapping_inside_policy(void **state)
{
    struct sim_policy p, q;
    struct sim_mapping m;
    char err[256];
    json_t *j = yaml("settings: {ordering: fifo}\n"
                     "mapping: {time_limit_factor: 4, rules: [{match: a, tier: low}]}\n");

    (void)state;
    assert_int_equal(sim_policy_from_json(j, "p.yaml", &p, err, sizeof(err)), 0);
    json_decref(j);
    assert_true(p.has_mapping);
    assert_non_null(p.mapping);
    assert_int_equal(sim_policy_copy(&q, &p), 0); /* the copy shares the mapping section */
    sim_policy_release(&p);
    sim_mapping_defaults(&m);
    assert_int_equal(sim_mapping_from_json(q.mapping, "p.yaml", &m, err, sizeof(err)), 0);
    assert_true(m.time_limit_factor == 4);
    assert_int_equal(m.nrules, 1);
    assert_string_equal(sim_mapping_find(&m, "a", "")->tier, "low");
    sim_mapping_release(&m);
    sim_policy_release(&q);
}

static void baselines(void **state)
{
    struct sim_policy p, q;

    (void)state;
    sim_policy_defaults(&p, "docket");
    assert_int_equal(sim_policy_copy(&q, &p), 0);
    assert_int_equal(sim_policy_baseline(&q, "fifo"), 0);
    assert_int_equal(q.policy.ordering, SCHED_ORDER_FIFO);
    assert_false(q.policy.backfill);
    assert_false(q.policy.preemption);
    assert_string_equal(q.name, "fifo");
    assert_int_equal(sim_policy_baseline(&q, "easy"), 0);
    assert_true(q.policy.backfill);
    assert_int_equal(q.policy.backfill_depth, 1);
    assert_int_equal(sim_policy_baseline(&q, "multifactor"), 0);
    assert_int_equal(q.policy.ordering, SCHED_ORDER_MULTIFACTOR);
    assert_true(q.policy.backfill);
    assert_false(q.policy.preemption);
    assert_true(q.policy.mf_fairshare_weight > 0 && q.policy.mf_age_weight > 0 &&
                q.policy.mf_tier_weight > 0);
    assert_int_equal(sim_policy_baseline(&q, "lottery"), -22);
    /* the original keeps Docket's own policy */
    assert_int_equal(p.policy.ordering, SCHED_ORDER_TIERED);
    sim_policy_release(&q);
    sim_policy_release(&p);
}

static void examples_load(void **state)
{
    static const char *const clusters[] = {"cluster-philly.yaml", "cluster-ricc.yaml"};
    static const char *const policies[] = {"policy-tiered.yaml", "policy-fifo.yaml",
                                           "policy-easy.yaml", "policy-multifactor.yaml"};
    static const char *const mappings[] = {"mapping-philly.yaml", "mapping-ricc.yaml"};
    const char *dir = getenv("SIM_EXAMPLES");
    char path[512], err[512];

    (void)state;
    if (!dir)
        dir = "examples/sim";
    for (size_t i = 0; i < 2; i++) {
        struct sim_cluster c;

        snprintf(path, sizeof(path), "%s/%s", dir, clusters[i]);
        if (sim_cluster_load(path, &c, err, sizeof(err)) < 0)
            fail_msg("%s", err);
        if (i == 0) {
            assert_int_equal(sim_cluster_gpus(&c, NULL, NULL), 2816);
            assert_int_equal(sim_cluster_gpus(&c, "vc", "6214e9"), 512);
        } else { /* CPU only: 128 simulated nodes of 64 cores */
            assert_int_equal(sim_cluster_gpus(&c, NULL, NULL), 0);
            assert_int_equal(sim_cluster_nodes(&c) * c.groups[0].cpus, 8192);
        }
        sim_cluster_release(&c);
    }
    for (size_t i = 0; i < 4; i++) {
        struct sim_policy p;

        snprintf(path, sizeof(path), "%s/%s", dir, policies[i]);
        if (sim_policy_load(path, &p, err, sizeof(err)) < 0)
            fail_msg("%s", err);
        assert_int_equal(p.policy.ordering, i == 0   ? SCHED_ORDER_TIERED
                                            : i == 3 ? SCHED_ORDER_MULTIFACTOR
                                                     : SCHED_ORDER_FIFO);
        sim_policy_release(&p);
    }
    for (size_t i = 0; i < 2; i++) {
        struct sim_mapping m;

        sim_mapping_defaults(&m);
        snprintf(path, sizeof(path), "%s/%s", dir, mappings[i]);
        if (sim_mapping_load(path, &m, err, sizeof(err)) < 0)
            fail_msg("%s", err);
        sim_mapping_release(&m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cluster_groups),  cmocka_unit_test(cluster_errors),
        cmocka_unit_test(policy_document), cmocka_unit_test(policy_errors),
        cmocka_unit_test(mapping_rules),   cmocka_unit_test(mapping_inside_policy),
        cmocka_unit_test(baselines),       cmocka_unit_test(examples_load),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
