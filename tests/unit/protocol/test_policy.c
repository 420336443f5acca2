/* test_policy.c - unit tests of the policy document parser (protocol/proto.h): YAML and
 * JSON, tiers and classes replaced whole, settings overridden, projects with defaults,
 * every bad part named by its JSON path, and the GET form read back to the same policy. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "protocol/ops.h"
#include "protocol/proto.h"
#include "protocol/site.h"

static struct sched_policy base;

static int setup(void **state)
{
    sched_policy_defaults(&base);
    return 0;
}

static void yaml_document(void **state)
{
    const char *doc =
        "tiers: [{name: critical, starve_after: 1h}, {name: high}, {name: normal},"
        " {name: low, starve_after: 24h}]\n"
        "classes: [{name: training, default_limit: 7d, preemptible: true,"
        " protect_after: 24h, max_grace: 10m}, {name: experiment, max_retries: 3}]\n"
        "settings: {fairshare_half_life: 7d, min_runtime: 10m, max_preemptions: 3,"
        " reserved_max_ratio: 0.2, reserved_min_tier: high, backfill_depth: 32,"
        " gpu_weights: {H100-80GB: 2.0, A100-40GB: 1.0}, cpu_weight: 0.0625,"
        " default_class: experiment}\n"
        "projects: [{name: vision, group: cv, tier: high, guarantee_gpus: 16, gpu_limit: 32,"
        " max_running: 20, max_queued: 1000, user_max_running: 10, paused: false},"
        " {name: misc}]\n";
    struct proto_policy p;
    struct proto_error e;
    int rc = proto_policy_parse_text(doc, strlen(doc), true, &base, &p, &e);
    if (rc)
        fail_msg("%s: %s", e.field, e.message);
    assert_int_equal(p.policy.ntiers, 4);
    assert_string_equal(p.policy.tiers[3].name, "low");
    assert_int_equal(p.policy.tiers[3].starve_after_ms, 86400000);
    assert_int_equal(p.policy.nclasses, 2);
    assert_int_equal(p.policy.classes[0].default_limit_ms, 7 * 86400000LL);
    assert_int_equal(p.policy.classes[0].max_grace_ms, 600000);
    assert_int_equal(p.policy.classes[1].max_retries, 3);
    assert_int_equal(p.policy.min_runtime_ms, 600000);
    assert_int_equal(p.policy.ngpu_weights, 2);
    assert_true(p.policy.reserved_max_ratio > 0.19 && p.policy.reserved_max_ratio < 0.21);
    assert_string_equal(p.policy.default_class, "experiment");
    assert_int_equal(p.nprojects, 2);
    assert_string_equal(p.projects[0].name, "vision");
    assert_int_equal(p.projects[0].gpu_limit, 32);
    assert_int_equal(p.projects[0].max_queued, 1000);
    assert_string_equal(p.projects[1].tier, "normal");
    assert_int_equal(p.projects[1].gpu_limit, -1);
    proto_policy_release(&p);
}

static void settings_only_keeps_the_rest(void **state)
{
    const char *doc = "{\"settings\": {\"max_preemptions\": 1}}";
    struct proto_policy p;
    struct proto_error e;
    assert_int_equal(proto_policy_parse_text(doc, strlen(doc), false, &base, &p, &e), 0);
    assert_int_equal(p.policy.max_preemptions, 1);
    assert_int_equal(p.policy.ntiers, base.ntiers);
    assert_int_equal(p.policy.nclasses, base.nclasses);
    assert_false(p.has_tiers);
    proto_policy_release(&p);
}

static const struct {
    const char *doc;
    const char *field;
} bad[] = {
    {"{\"tiers\": [{\"name\": \"a\"}]}", "tiers"},
    {"{\"tiers\": [{\"name\": \"a\"}, {\"name\": \"b\"}, {\"name\": \"a\"}]}", "tiers[2]"},
    {"{\"tiers\": [{\"name\": \"a\"}, {\"name\": \"b\"}, {\"rank\": 1}]}", "tiers[2].rank"},
    {"{\"tiers\": [{\"name\": \"a\"}, {\"name\": \"b\"}, {}]}", "tiers[2]"},
    {"{\"tiers\": [{\"name\": \"a\"}, {\"name\": \"b\"}, {\"name\": \"c\", \"starve_after\": "
     "\"x\"}]}",
     "tiers[2].starve_after"},
    {"{\"classes\": []}", "classes"},
    {"{\"classes\": [{\"name\": \"t\", \"preemptible\": \"yes\"}]}", "classes[0].preemptible"},
    {"{\"classes\": [{\"name\": \"t\", \"max_retries\": 99}]}", "classes[0].max_retries"},
    {"{\"classes\": [{\"name\": \"t\", \"default_limit\": \"2d\", \"max_limit\": \"1d\"}]}",
     "classes[0].default_limit"},
    {"{\"settings\": {\"min_runtime\": \"soon\"}}", "settings.min_runtime"},
    {"{\"settings\": {\"reserved_max_ratio\": 2}}", "settings.reserved_max_ratio"},
    {"{\"settings\": {\"reserved_min_tier\": \"mythic\"}}", "settings.reserved_min_tier"},
    {"{\"settings\": {\"default_class\": \"nope\"}}", "settings.default_class"},
    {"{\"settings\": {\"ordering\": \"random\"}}", "settings.ordering"},
    {"{\"settings\": {\"gpu_weights\": {\"H100\": -1}}}", "settings.gpu_weights.H100"},
    {"{\"settings\": {\"reserved_label\": \"nokey\"}}", "settings.reserved_label"},
    {"{\"settings\": {\"colour\": 1}}", "settings.colour"},
    {"{\"settings\": []}", "settings"},
    {"{\"projects\": {}}", "projects"},
    {"{\"projects\": [{}]}", "projects[0].name"},
    {"{\"projects\": [{\"name\": \"a\", \"tier\": \"mythic\"}]}", "projects[0].tier"},
    {"{\"projects\": [{\"name\": \"a\", \"gpu_limit\": -2}]}", "projects[0].gpu_limit"},
    {"{\"projects\": [{\"name\": \"a\"}, {\"name\": \"a\"}]}", "projects[1]"},
    {"{\"projects\": [{\"name\": \"a\", \"quota\": 1}]}", "projects[0].quota"},
    {"{\"alerts\": []}", "alerts"},
    {"{\"alerts\": {\"rulez\": []}}", "alerts.rulez"},
    {"{\"alerts\": {\"rules\": [{\"kind\": \"disk_low\", \"severity\": \"info\"}]}}",
     "alerts.rules[0].name"},
    {"{\"alerts\": {\"rules\": [{\"name\": \"a\", \"kind\": \"disk_full\", \"severity\": "
     "\"info\"}]}}",
     "alerts.rules[0].kind"},
    {"{\"alerts\": {\"rules\": [{\"name\": \"a\", \"kind\": \"disk_low\", \"severity\": "
     "\"dire\"}]}}",
     "alerts.rules[0].severity"},
    {"{\"alerts\": {\"rules\": [{\"name\": \"a\", \"kind\": \"disk_low\", \"severity\": "
     "\"info\"}]}}",
     "alerts.rules[0].threshold"},
    {"{\"alerts\": {\"rules\": [{\"name\": \"a\", \"kind\": \"disk_low\", \"severity\": \"info\","
     " \"threshold\": 120}]}}",
     "alerts.rules[0].threshold"},
    {"{\"alerts\": {\"rules\": [{\"name\": \"a\", \"kind\": \"node_unreachable\", \"severity\": "
     "\"info\","
     " \"threshold\": \"1m\"}]}}",
     "alerts.rules[0].threshold"},
    {"{\"alerts\": {\"rules\": [{\"name\": \"a\", \"kind\": \"job_failed\", \"severity\": \"info\","
     " \"tier\": \"low\"}]}}",
     "alerts.rules[0].tier"},
    {"{\"alerts\": {\"rules\": [{\"name\": \"a\", \"kind\": \"job_failed\", \"severity\": "
     "\"info\"},"
     " {\"name\": \"a\", \"kind\": \"job_failed\", \"severity\": \"major\"}]}}",
     "alerts.rules[1].name"},
    {"{\"alerts\": {\"routes\": [{\"webhook\": \"http://h/x\"}]}}", "alerts.routes[0].severities"},
    {"{\"alerts\": {\"routes\": [{\"severities\": [\"info\", \"bad\"], \"log\": true}]}}",
     "alerts.routes[0].severities"},
    {"{\"alerts\": {\"routes\": [{\"severities\": \"info\"}]}}", "alerts.routes[0]"},
    {"{\"alerts\": {\"routes\": [{\"severities\": \"info\", \"webhook\": \"ftp://h/x\"}]}}",
     "alerts.routes[0].webhook"},
    {"{\"alerts\": {\"routes\": [{\"severities\": \"info\", \"webhook\": \"http://u:p@h/x\"}]}}",
     "alerts.routes[0].webhook"},
    {"{\"alerts\": {\"routes\": [{\"severities\": \"info\", \"webhook\": \"http:// h/x\"}]}}",
     "alerts.routes[0].webhook"},
    {"{\"alerts\": {\"routes\": [{\"severities\": \"info\", \"webhook\": \"http://h/\","
     " \"shape\": \"teams\"}]}}",
     "alerts.routes[0].shape"},
    {"{\"alerts\": {\"routes\": [{\"severities\": \"info\", \"webhook\": \"http://h/\","
     " \"secret\": \"short\"}]}}",
     "alerts.routes[0].secret"},
    {"{\"alerts\": {\"routes\": [{\"severities\": \"info\", \"webhook\": \"http://h/\","
     " \"reports\": \"monthly\"}]}}",
     "alerts.routes[0].reports"},
    {"{\"alerts\": {\"routes\": [{\"severities\": \"info\", \"log\": true, \"shape\": "
     "\"slack\"}]}}",
     "alerts.routes[0]"},
    {"{\"alerts\": {\"interval\": \"10ms\"}}", "alerts.interval"},
    {"{\"alerts\": {\"delivery\": {\"attempts\": 0}}}", "alerts.delivery.attempts"},
    {"{\"alerts\": {\"delivery\": {\"backoff\": \"10s\", \"max_backoff\": \"1s\"}}}",
     "alerts.delivery.max_backoff"},
    {"{\"alerts\": {\"history\": {\"max_rows\": 1}}}", "alerts.history.max_rows"},
    {"{\"prices\": {\"H100\": -1}}", "prices.H100"},
    {"{\"prices\": {\"H100\": \"cheap\"}}", "prices.H100"},
    {"{\"prices\": {\"currency\": \"euro dollars\"}}", "prices.currency"},
    {"{\"prices\": []}", "prices"},
    {"{\"extra\": 1}", "extra"},
    {"[]", ""},
    {"{\"tiers\": ", ""},
};

static void bad_documents(void **state)
{
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct proto_policy p;
        struct proto_error e;
        memset(&e, 0, sizeof(e));
        int rc = proto_policy_parse_text(bad[i].doc, strlen(bad[i].doc), false, &base, &p, &e);
        if (rc == 0)
            fail_msg("accepted: %s", bad[i].doc);
        if (strcmp(e.field, bad[i].field) != 0)
            fail_msg("%s: field '%s', wanted '%s' (%s)", bad[i].doc, e.field, bad[i].field,
                     e.message);
        assert_int_equal(e.status, 400);
        proto_policy_release(&p);
    }
}

static void bad_yaml(void **state)
{
    const char *doc = "tiers: [a, b\n";
    struct proto_policy p;
    struct proto_error e;
    assert_int_not_equal(proto_policy_parse_text(doc, strlen(doc), true, &base, &p, &e), 0);
    assert_non_null(strstr(e.message, "yaml"));
}

/* GET /v1/policy gives a document that applies back to the very same policy. */
static void output_reads_back(void **state)
{
    struct proto_policy p;
    struct proto_error e;
    json_t *doc = proto_policy_to_json(&base);
    int rc = proto_policy_parse(doc, &base, &p, &e);
    if (rc)
        fail_msg("%s: %s", e.field, e.message);
    json_t *again = proto_policy_to_json(&p.policy);
    assert_true(json_equal(doc, again));
    json_decref(doc);
    json_decref(again);
    proto_policy_release(&p);
}

/* groups: bounds default to none, the list replaces the base's, it reads back, and bad
 * entries are named by their path. */
static void groups_list(void **state)
{
    const char *doc = "groups: [{name: cv, gpu_limit: 32, guarantee_gpus: 16}, {name: nlp}]\n";
    struct proto_policy p;
    struct proto_error e;
    int rc = proto_policy_parse_text(doc, strlen(doc), true, &base, &p, &e);
    if (rc)
        fail_msg("%s: %s", e.field, e.message);
    assert_int_equal(p.policy.ngroups, 2);
    assert_string_equal(p.policy.groups[0].name, "cv");
    assert_int_equal(p.policy.groups[0].gpu_limit, 32);
    assert_true(p.policy.groups[0].guarantee_gpus > 15.9);
    assert_int_equal(p.policy.groups[1].gpu_limit, -1);
    assert_true(p.policy.groups[1].guarantee_gpus < 0);
    json_t *out = proto_policy_to_json(&p.policy);
    struct proto_policy again;
    assert_int_equal(proto_policy_parse(out, &base, &again, &e), 0);
    assert_int_equal(again.policy.ngroups, 2);
    assert_int_equal(again.policy.groups[0].gpu_limit, 32);
    json_decref(out);
    proto_policy_release(&again);
    proto_policy_release(&p);
    const struct {
        const char *doc, *field;
    } bad_groups[] = {
        {"{\"groups\": {}}", "groups"},
        {"{\"groups\": [{\"gpu_limit\": 3}]}", "groups[0].name"},
        {"{\"groups\": [{\"name\": \"a\"}, {\"name\": \"a\"}]}", "groups[1]"},
        {"{\"groups\": [{\"name\": \"a\", \"gpu_limit\": -2}]}", "groups[0].gpu_limit"},
        {"{\"groups\": [{\"name\": \"a\", \"guarantee_gpus\": -0.5}]}", "groups[0].guarantee_gpus"},
        {"{\"groups\": [{\"name\": \"a\", \"colour\": 1}]}", "groups[0].colour"},
    };
    for (size_t i = 0; i < sizeof(bad_groups) / sizeof(bad_groups[0]); i++) {
        rc = proto_policy_parse_text(bad_groups[i].doc, strlen(bad_groups[i].doc), false, &base, &p,
                                     &e);
        if (rc == 0)
            fail_msg("accepted %s", bad_groups[i].doc);
        assert_string_equal(e.field, bad_groups[i].field);
    }
}

static void project_patch(void **state)
{
    struct sched_project_spec p;
    struct proto_error e;
    sched_project_spec_init(&p);
    snprintf(p.name, sizeof(p.name), "vision");
    json_t *b = json_pack("{s:i,s:b}", "max_running", 4, "paused", 1);
    assert_int_equal(proto_project_parse(b, "", true, &p, &e), 0);
    assert_int_equal(p.max_running, 4);
    assert_true(p.paused);
    json_decref(b);
    b = json_pack("{s:s}", "name", "other");
    assert_int_not_equal(proto_project_parse(b, "", true, &p, &e), 0);
    assert_string_equal(e.field, "name");
    json_decref(b);
}

static void class_patch(void **state)
{
    struct sched_class_spec c = base.classes[0];
    struct proto_error e;
    json_t *b = json_pack("{s:s}", "max_grace", "2m");
    assert_int_equal(proto_class_patch(b, &c, &e), 0);
    assert_int_equal(c.max_grace_ms, 120000);
    json_decref(b);
    b = json_pack("{s:s}", "max_grace", "never");
    assert_int_not_equal(proto_class_patch(b, &c, &e), 0);
    assert_string_equal(e.field, "max_grace");
    assert_int_equal(c.max_grace_ms, 120000); /* unchanged on error */
    json_decref(b);
}

/* h-node: a class's node fields (pids_max, default_mem), -1 when not given; written back */
static void class_node_fields(void **state)
{
    struct proto_policy p;
    struct proto_error e;
    const char *doc = "classes: [{name: a, pids_max: 64, default_mem: 16G, lease: 20m},"
                      " {name: b}, {name: c, default_mem: 512}]\nsettings: {default_class: a}\n";
    int rc = proto_policy_parse_text(doc, strlen(doc), true, &base, &p, &e);
    if (rc)
        fail_msg("%s: %s", e.field, e.message);
    assert_int_equal(p.class_node[0].pids_max, 64);
    assert_int_equal(p.class_node[0].default_mem_mb, 16384);
    assert_int_equal(p.class_node[1].pids_max, -1);
    assert_int_equal(p.class_node[1].default_mem_mb, -1);
    assert_int_equal(p.class_node[2].default_mem_mb, 512);
    assert_int_equal(p.class_node[0].lease_ms, 20 * 60000);
    assert_int_equal(p.class_node[1].lease_ms, -1); /* not given: the earlier one */
    json_t *out = proto_policy_to_json(&p.policy);
    struct proto_class_node cn[3] = {{64, 16384, {0, 0, 0}, 20 * 60000, 90000},
                                     {0, 0, {0, 0, 0}, -1, -1},
                                     {0, 512, {0, 0, 0}, 0, 0}};
    proto_class_node_json(json_object_get(out, "classes"), &p.policy, cn);
    json_t *c0 = json_array_get(json_object_get(out, "classes"), 0);
    assert_int_equal(json_integer_value(json_object_get(c0, "pids_max")), 64);
    assert_string_equal(json_string_value(json_object_get(c0, "default_mem")), "16G");
    assert_string_equal(json_string_value(json_object_get(c0, "lease")), "1200s");
    assert_string_equal(json_string_value(json_object_get(c0, "session_idle")), "90s");
    assert_null(json_object_get(json_array_get(json_object_get(out, "classes"), 1), "pids_max"));
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(out, "classes"), 2), "default_mem")),
                        "512M");
    struct proto_policy back;
    assert_int_equal(proto_policy_parse(out, &base, &back, &e), 0);
    assert_int_equal(back.class_node[0].default_mem_mb, 16384);
    assert_int_equal(back.class_node[2].default_mem_mb, 512);
    assert_int_equal(back.class_node[0].lease_ms, 20 * 60000);
    assert_int_equal(back.class_node[0].session_idle_ms, 90000);
    assert_int_equal(back.class_node[1].session_idle_ms, -1); /* not given */
    assert_int_equal(back.class_node[2].lease_ms, 0);         /* 0 (the node timeout's) kept */
    proto_policy_release(&back);
    json_decref(out);
    proto_policy_release(&p);
    static const struct {
        const char *doc, *field;
    } badn[] = {
        {"classes: [{name: a, pids_max: -1}]\nsettings: {default_class: a}\n",
         "classes[0].pids_max"},
        {"classes: [{name: a, pids_max: x}]\nsettings: {default_class: a}\n",
         "classes[0].pids_max"},
        {"classes: [{name: a, default_mem: lots}]\nsettings: {default_class: a}\n",
         "classes[0].default_mem"},
        {"classes: [{name: a, lease: forever}]\nsettings: {default_class: a}\n",
         "classes[0].lease"},
        {"classes: [{name: a, lease: 8d}]\nsettings: {default_class: a}\n", "classes[0].lease"},
    };
    for (size_t i = 0; i < sizeof(badn) / sizeof(badn[0]); i++) {
        assert_int_not_equal(
            proto_policy_parse_text(badn[i].doc, strlen(badn[i].doc), true, &base, &p, &e), 0);
        assert_string_equal(e.field, badn[i].field);
    }
    struct sched_class_spec c = base.classes[0];
    json_t *b = json_pack("{s:i}", "pids_max", 5);
    assert_int_not_equal(proto_class_patch(b, &c, &e), 0);
    assert_string_equal(e.field, "pids_max");
    json_decref(b);
    b = json_pack("{s:s}", "lease", "1h"); /* with the policy document only */
    assert_int_not_equal(proto_class_patch(b, &c, &e), 0);
    assert_string_equal(e.field, "lease");
    json_decref(b);
}

/* h-usage: a class's idle rule, validated by field, written back; requeue and cancel
 * only on a preemptible class */
static void class_idle_rule(void **state)
{
    struct proto_policy p;
    struct proto_error e;
    const char *doc = "classes: [{name: x, preemptible: true, idle: {gpu_util_below: 5, for: 30m,"
                      " action: requeue}}, {name: i, preemptible: false, idle: {gpu_util_below: 10,"
                      " for: 1h}}, {name: n}]\nsettings: {default_class: x}\n";
    int rc = proto_policy_parse_text(doc, strlen(doc), true, &base, &p, &e);
    if (rc)
        fail_msg("%s: %s", e.field, e.message);
    assert_int_equal(p.class_node[0].idle.gpu_util_below, 5);
    assert_int_equal(p.class_node[0].idle.for_ms, 1800000);
    assert_int_equal(p.class_node[0].idle.action, PROTO_IDLE_REQUEUE);
    assert_int_equal(p.class_node[1].idle.action, PROTO_IDLE_ALERT); /* the default */
    assert_int_equal(p.class_node[2].idle.action, PROTO_IDLE_UNSET);
    json_t *out = proto_policy_to_json(&p.policy);
    proto_class_node_json(json_object_get(out, "classes"), &p.policy, p.class_node);
    json_t *idle = json_object_get(json_array_get(json_object_get(out, "classes"), 0), "idle");
    assert_string_equal(json_string_value(json_object_get(idle, "action")), "requeue");
    assert_string_equal(json_string_value(json_object_get(idle, "for")), "1800s");
    struct proto_policy back;
    assert_int_equal(proto_policy_parse(out, &base, &back, &e), 0);
    assert_int_equal(back.class_node[0].idle.for_ms, 1800000);
    assert_int_equal(back.class_node[0].idle.action, PROTO_IDLE_REQUEUE);
    proto_policy_release(&back);
    json_decref(out);
    proto_policy_release(&p);
    static const struct {
        const char *doc, *field;
    } badi[] = {
        {"classes: [{name: a, idle: {gpu_util_below: 0, for: 1m}}]",
         "classes[0].idle.gpu_util_below"},
        {"classes: [{name: a, idle: {gpu_util_below: 5}}]", "classes[0].idle.for"},
        {"classes: [{name: a, idle: {for: 5m}}]", "classes[0].idle.gpu_util_below"},
        {"classes: [{name: a, idle: {gpu_util_below: 5, for: 5m, action: nap}}]",
         "classes[0].idle.action"},
        {"classes: [{name: a, idle: {gpu_util_below: 5, for: 5m, after: 1}}]",
         "classes[0].idle.after"},
        {"classes: [{name: a, idle: 5}]", "classes[0].idle"},
        {"classes: [{name: a, preemptible: false, idle: {gpu_util_below: 5, for: 5m,"
         " action: cancel}}]",
         "classes[0].idle.action"},
    };
    for (size_t i = 0; i < sizeof(badi) / sizeof(badi[0]); i++) {
        char d[512];
        snprintf(d, sizeof(d), "%s\nsettings: {default_class: a}\n", badi[i].doc);
        assert_int_not_equal(proto_policy_parse_text(d, strlen(d), true, &base, &p, &e), 0);
        assert_string_equal(e.field, badi[i].field);
    }
    struct sched_class_spec c = base.classes[0];
    json_t *b = json_pack("{s:{s:i,s:s}}", "idle", "gpu_util_below", 5, "for", "5m");
    assert_int_not_equal(proto_class_patch(b, &c, &e), 0); /* set with the document only */
    assert_string_equal(e.field, "idle");
    json_decref(b);
}

/* The alerts and prices sections read back exactly; shown to readers, webhook paths and
 * secrets are hidden; without the sections, a document leaves p.alerts/p.prices NULL. */
/* a Slurm site's sections: GPU aliases in any case, partitions normalised and looked up;
 * every bad part named by its path */
static void site_sections(void **state)
{
    const char *doc = "gpu_aliases: {a100: A100-80GB, Volta: V100-32GB}\n"
                      "partitions:\n"
                      "  - {name: gpu, nodes: {zone: a, pool: '!x'}, default_time: 30m,\n"
                      "     max_time: 2d, tier: high, class: training, default: true}\n"
                      "  - {name: debug, projects: [vision]}\n";
    struct proto_policy p;
    struct proto_error e;
    if (proto_policy_parse_text(doc, strlen(doc), true, &base, &p, &e) != 0)
        fail_msg("%s: %s", e.field, e.message);
    assert_string_equal(proto_gpu_alias(p.gpu_aliases, "A100"), "A100-80GB");
    assert_string_equal(proto_gpu_alias(p.gpu_aliases, "volta"), "V100-32GB");
    assert_null(proto_gpu_alias(p.gpu_aliases, "h100"));
    const json_t *gpu = proto_partition_find(p.partitions, NULL); /* the default */
    assert_non_null(gpu);
    assert_string_equal(json_string_value(json_object_get(gpu, "name")), "gpu");
    assert_int_equal(json_integer_value(json_object_get(gpu, "default_time")), 1800);
    assert_int_equal(json_integer_value(json_object_get(gpu, "max_time")), 2 * 86400);
    assert_true(proto_partition_allows(gpu, "anyone"));
    const json_t *debug = proto_partition_find(p.partitions, "debug");
    assert_true(proto_partition_allows(debug, "vision"));
    assert_false(proto_partition_allows(debug, "nlp"));
    assert_true(json_is_null(json_object_get(debug, "tier")));
    /* the normalised form reads back the same */
    json_t *again =
        json_pack("{s:O,s:O}", "gpu_aliases", p.gpu_aliases, "partitions", p.partitions);
    struct proto_policy q;
    char *text = json_dumps(again, 0);
    assert_int_equal(proto_policy_parse_text(text, strlen(text), false, &base, &q, &e), 0);
    assert_true(json_equal(q.partitions, p.partitions));
    free(text);
    json_decref(again);
    proto_policy_release(&q);
    proto_policy_release(&p);
    static const struct {
        const char *doc, *field;
    } bad_site[] = {
        {"{\"gpu_aliases\": {\"a\": \"X\", \"A\": \"Y\"}}", "gpu_aliases.A"},
        {"{\"gpu_aliases\": {\"a\": \"bad type\"}}", "gpu_aliases.a"},
        {"{\"gpu_aliases\": [\"a\"]}", "gpu_aliases"},
        {"{\"partitions\": {}}", "partitions"},
        {"{\"partitions\": [{\"nodes\": {}}]}", "partitions[0].name"},
        {"{\"partitions\": [{\"name\": \"a\"}, {\"name\": \"a\"}]}", "partitions[1]"},
        {"{\"partitions\": [{\"name\": \"a\", \"default\": true}, "
         "{\"name\": \"b\", \"default\": true}]}",
         "partitions[1]"},
        {"{\"partitions\": [{\"name\": \"a\", \"tier\": \"nope\"}]}", "partitions[0].tier"},
        {"{\"partitions\": [{\"name\": \"a\", \"class\": \"nope\"}]}", "partitions[0].class"},
        {"{\"partitions\": [{\"name\": \"a\", \"max_time\": \"1h\", \"default_time\": "
         "\"2h\"}]}",
         "partitions[0]"},
        {"{\"partitions\": [{\"name\": \"a\", \"nodes\": {\"zone\": \"a b\"}}]}",
         "partitions[0].nodes"},
        {"{\"partitions\": [{\"name\": \"a\", \"projects\": [\"x y\"]}]}",
         "partitions[0].projects"},
        {"{\"partitions\": [{\"name\": \"a\", \"colour\": 1}]}", "partitions[0].colour"},
    };
    for (size_t i = 0; i < sizeof(bad_site) / sizeof(bad_site[0]); i++) {
        int rc =
            proto_policy_parse_text(bad_site[i].doc, strlen(bad_site[i].doc), false, &base, &p, &e);
        if (rc == 0 || strcmp(e.field, bad_site[i].field) != 0)
            fail_msg("'%s': rc %d field '%s' (%s), want '%s'", bad_site[i].doc, rc, e.field,
                     e.message, bad_site[i].field);
    }
}

/* projects list their users in bulk: members, leads, default_for (each listed too) */
static void project_members(void **state)
{
    const char *doc = "projects:\n"
                      "  - {name: a, members: [u1, u2], leads: [l1], default_for: [u1, l1]}\n"
                      "  - {name: b, members: [u2], default_for: [u2]}\n"
                      "node_labels: {n1: {features: 'a100,ib', rack: r1}}\n";
    struct proto_policy p;
    struct proto_error e;
    if (proto_policy_parse_text(doc, strlen(doc), true, &base, &p, &e) != 0)
        fail_msg("%s: %s", e.field, e.message);
    assert_int_equal(p.nprojects, 2);
    assert_int_equal(json_array_size(p.members), 4);
    assert_string_equal(json_string_value(json_object_get(json_array_get(p.members, 2), "role")),
                        "lead");
    assert_string_equal(json_string_value(json_object_get(p.defaults, "l1")), "a");
    assert_string_equal(json_string_value(json_object_get(p.defaults, "u2")), "b");
    assert_non_null(json_object_get(p.node_labels, "n1"));
    proto_policy_release(&p);
    static const struct {
        const char *doc, *field;
    } bad_members[] = {
        {"{\"projects\": [{\"name\": \"a\", \"members\": \"u1\"}]}", "projects[0].members"},
        {"{\"projects\": [{\"name\": \"a\", \"leads\": [\"x y\"]}]}", "projects[0].leads"},
        {"{\"projects\": [{\"name\": \"a\", \"default_for\": [\"u9\"]}]}",
         "projects[0].default_for"},
        {"{\"projects\": [{\"name\": \"a\", \"members\": [\"u\"], \"default_for\": "
         "[\"u\"]}, {\"name\": \"b\", \"members\": [\"u\"], \"default_for\": [\"u\"]}]}",
         "projects[1].default_for"},
        {"{\"node_labels\": {\"n1\": {\"rack\": \"a,b\"}}}", "node_labels.n1"},
        {"{\"node_labels\": {\"n 1\": {}}}", "node_labels.n 1"},
    };
    for (size_t i = 0; i < sizeof(bad_members) / sizeof(bad_members[0]); i++) {
        int rc = proto_policy_parse_text(bad_members[i].doc, strlen(bad_members[i].doc), false,
                                         &base, &p, &e);
        if (rc == 0 || strcmp(e.field, bad_members[i].field) != 0)
            fail_msg("'%s': rc %d field '%s' (%s), want '%s'", bad_members[i].doc, rc, e.field,
                     e.message, bad_members[i].field);
    }
}

static void ops_sections(void **state)
{
    const char *doc =
        "prices: {H100: 2.5, A100: 1, currency: EUR}\n"
        "alerts:\n"
        "  interval: 5s\n"
        "  delivery: {attempts: 3, backoff: 500ms, max_backoff: 30s, timeout: 4s}\n"
        "  history: {keep: 7d, max_rows: 500}\n"
        "  rules:\n"
        "    - {name: down, kind: node_unreachable, severity: critical, for: 30s}\n"
        "    - {name: q, kind: queue_wait, severity: major, threshold: 1h, tier: low}\n"
        "    - {name: disk, kind: disk_low, severity: info, threshold: 10}\n"
        "    - {name: failed, kind: job_failed, severity: info}\n"
        "    - {name: idle, kind: gpu_idle, severity: major, for: 10m}\n"
        "  routes:\n"
        "    - {severities: [critical, major], webhook: 'https://hooks.example.com/T0/B1/XYZ',"
        " shape: slack}\n"
        "    - {severities: info, webhook: 'http://127.0.0.1:9/h', secret: 0123456789abcdef}\n"
        "    - {severities: [critical], log: true, reports: true}\n";
    struct proto_policy p, q;
    struct proto_error e;
    if (proto_policy_parse_text(doc, strlen(doc), true, &base, &p, &e) != 0)
        fail_msg("%s: %s", e.field, e.message);
    assert_non_null(p.alerts);
    assert_int_equal(p.alerts->nrules, 5);
    assert_int_equal(p.alerts->rules[4].kind, PROTO_AK_GPU_IDLE);
    assert_int_equal(p.alerts->rules[4].for_ms, 600000);
    assert_int_equal(p.alerts->rules[1].threshold_ms, 3600000);
    assert_string_equal(p.alerts->rules[1].tier, "low");
    assert_int_equal(p.alerts->rules[3].for_ms, 3600000); /* events: an hour by default */
    assert_int_equal(p.alerts->routes[0].severities,
                     (1u << PROTO_SEV_CRITICAL) | (1u << PROTO_SEV_MAJOR));
    assert_int_equal(p.alerts->routes[0].shape, PROTO_SHAPE_SLACK);
    assert_true(p.alerts->routes[2].log);
    assert_true(p.alerts->routes[2].reports);
    assert_false(p.alerts->routes[0].reports);
    assert_true(proto_price_of(p.prices, "H100") == 2.5);
    assert_true(proto_price_of(p.prices, "V100") < 0);
    json_t *full = json_pack("{s:o,s:o}", "alerts", proto_alerts_json(p.alerts, false), "prices",
                             proto_prices_json(p.prices));
    assert_int_equal(proto_policy_parse(full, &base, &q, &e), 0);
    json_t *again = json_pack("{s:o,s:o}", "alerts", proto_alerts_json(q.alerts, false), "prices",
                              proto_prices_json(q.prices));
    assert_true(json_equal(full, again));
    json_t *shown = proto_alerts_json(p.alerts, true);
    char *text = json_dumps(shown, 0);
    assert_null(strstr(text, "XYZ"));
    assert_null(strstr(text, "0123456789abcdef"));
    assert_non_null(strstr(text, "https://hooks.example.com/<hidden>"));
    free(text);
    json_decref(shown);
    json_decref(full);
    json_decref(again);
    proto_policy_release(&q);
    proto_policy_release(&p);
    const char *none = "{\"settings\": {\"min_runtime\": \"5m\"}}";
    assert_int_equal(proto_policy_parse_text(none, strlen(none), false, &base, &p, &e), 0);
    assert_null(p.alerts);
    assert_null(p.prices);
    proto_policy_release(&p);
}

/* A class's topology rule: YAML in, the GET form reads back, `null` takes it away, and a
 * bad mode or field is named by its path. */
static void class_topology(void **state)
{
    const char *doc = "classes: [{name: training, topology: {level: block, mode: required}},"
                      " {name: experiment, topology: {mode: best_effort}}, {name: exploration}]\n"
                      "settings: {default_class: experiment}\n";
    struct proto_policy p;
    struct proto_error e;
    int rc = proto_policy_parse_text(doc, strlen(doc), true, &base, &p, &e);
    if (rc)
        fail_msg("%s: %s", e.field, e.message);
    assert_int_equal(p.policy.classes[0].topo_mode, SCHED_TOPO_REQUIRED);
    assert_string_equal(p.policy.classes[0].topo_level, "block");
    assert_int_equal(p.policy.classes[1].topo_mode, SCHED_TOPO_BEST_EFFORT);
    assert_string_equal(p.policy.classes[1].topo_level, "switch");
    assert_int_equal(p.policy.classes[2].topo_mode, SCHED_TOPO_NONE);
    json_t *out = proto_policy_to_json(&p.policy);
    struct proto_policy q;
    assert_int_equal(proto_policy_parse(out, &base, &q, &e), 0);
    assert_int_equal(q.policy.classes[0].topo_mode, SCHED_TOPO_REQUIRED);
    assert_string_equal(q.policy.classes[0].topo_level, "block");
    json_decref(out);
    proto_policy_release(&q);
    proto_policy_release(&p);
    const char *off = "classes: [{name: training, topology: null}]\n"
                      "settings: {default_class: training}\n";
    assert_int_equal(proto_policy_parse_text(off, strlen(off), true, &base, &p, &e), 0);
    assert_int_equal(p.policy.classes[0].topo_mode, SCHED_TOPO_NONE);
    proto_policy_release(&p);
    const struct {
        const char *doc, *field;
    } bad_topo[] = {
        {"{\"classes\": [{\"name\": \"t\", \"topology\": {\"mode\": \"always\"}}]}",
         "classes[0].topology"},
        {"{\"classes\": [{\"name\": \"t\", \"topology\": {\"mode\": 1}}]}", "classes[0].topology"},
        {"{\"classes\": [{\"name\": \"t\", \"topology\": {\"levels\": \"x\"}}]}",
         "classes[0].topology.levels"},
        {"{\"classes\": [{\"name\": \"t\", \"topology\": \"switch\"}]}", "classes[0].topology"},
    };
    for (size_t i = 0; i < sizeof(bad_topo) / sizeof(bad_topo[0]); i++) {
        rc =
            proto_policy_parse_text(bad_topo[i].doc, strlen(bad_topo[i].doc), false, &base, &p, &e);
        if (rc == 0)
            fail_msg("accepted %s", bad_topo[i].doc);
        assert_string_equal(e.field, bad_topo[i].field);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(yaml_document),     cmocka_unit_test(settings_only_keeps_the_rest),
        cmocka_unit_test(bad_documents),     cmocka_unit_test(bad_yaml),
        cmocka_unit_test(output_reads_back), cmocka_unit_test(project_patch),
        cmocka_unit_test(class_patch),       cmocka_unit_test(groups_list),
        cmocka_unit_test(class_node_fields), cmocka_unit_test(class_idle_rule),
        cmocka_unit_test(ops_sections),      cmocka_unit_test(class_topology),
        cmocka_unit_test(site_sections),     cmocka_unit_test(project_members),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
