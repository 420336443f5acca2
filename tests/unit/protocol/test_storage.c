/* test_storage.c - unit tests of the storage shapes (protocol/storage.h): the policy's
 * `storage:` section read, validated field by field and written back; the heartbeat
 * reply's configuration and the heartbeat's report read back exactly; the small helpers
 * (a project's group, a pool's variable, an area's path, a job's pool list). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "protocol/storage.h"

static json_t *doc(const char *text)
{
    json_error_t je;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &je);
    if (!j)
        fail_msg("bad test json: %s", je.text);
    return j;
}

static const char *const good =
    "{\"check_interval\": \"30s\", \"group_prefix\": \"p_\", \"groups\": {\"ml\": 4711,"
    " \"bio\": \"biogrp\"}, \"pools\": [{\"name\": \"hot\", \"path\": \"/mnt/hot\","
    " \"class\": \"hot\", \"quota\": \"ext4-project\", \"mount\": true, \"fstype\": \"ext4\","
    " \"nodes\": {\"storage\": \"fast\"}}, {\"name\": \"cold_1\", \"path\": \"/srv/cold\","
    " \"class\": \"cold\"}]}";

static void policy_section(void **state)
{
    (void)state;
    struct storage_policy p;
    struct proto_error e;
    json_t *j = doc(good);
    int rc = storage_policy_parse(j, &p, &e);
    if (rc)
        fail_msg("%s: %s", e.field, e.message);
    assert_int_equal(p.npools, 2);
    assert_int_equal(p.check_interval_ms, 30000);
    assert_string_equal(p.pools[0].path, "/mnt/hot");
    assert_int_equal(p.pools[0].cls, STORAGE_HOT);
    assert_int_equal(p.pools[0].quota, STORAGE_QUOTA_EXT4_PROJECT);
    assert_true(p.pools[0].mount);
    assert_int_equal(p.pools[0].nnodes, 1);
    assert_string_equal(p.pools[0].nodes[0].key, "storage");
    assert_int_equal(p.pools[1].quota, STORAGE_QUOTA_ACCOUNTING); /* the default */
    assert_false(p.pools[1].mount);
    char g[64];
    storage_project_group(&p, "ml", g, sizeof(g));
    assert_string_equal(g, "4711");
    storage_project_group(&p, "bio", g, sizeof(g));
    assert_string_equal(g, "biogrp");
    storage_project_group(&p, "vision", g, sizeof(g));
    assert_string_equal(g, "p_vision");
    storage_pool_env_name("cold_1", g, sizeof(g));
    assert_string_equal(g, "DOCKET_STORAGE_COLD_1");
    storage_area_path(&p.pools[0], "ml", g, sizeof(g));
    assert_string_equal(g, "/mnt/hot/projects/ml");
    /* written back, read back the same */
    json_t *out = storage_policy_json(&p);
    struct storage_policy q;
    assert_int_equal(storage_policy_parse(out, &q, &e), 0);
    assert_memory_equal(&p.pools, &q.pools, sizeof(p.pools));
    assert_int_equal(q.ngroups, 2);
    json_decref(out);
    json_decref(j);
}

static void expect_refused(const char *text, const char *field)
{
    struct storage_policy p;
    struct proto_error e = {0};
    json_t *j = doc(text);
    int rc = storage_policy_parse(j, &p, &e);
    json_decref(j);
    if (rc != -EINVAL)
        fail_msg("accepted: %s", text);
    if (strcmp(e.field, field) != 0)
        fail_msg("%s: field '%s' (%s), expected '%s'", text, e.field, e.message, field);
}

static void policy_refusals(void **state)
{
    (void)state;
    expect_refused("[]", "storage");
    expect_refused("{\"pool\": []}", "storage.pool");
    expect_refused("{\"pools\": [{\"path\": \"/a\"}]}", "storage.pools[0].name");
    expect_refused("{\"pools\": [{\"name\": \"Hot\", \"path\": \"/a\"}]}", "storage.pools[0].name");
    expect_refused("{\"pools\": [{\"name\": \"a-b\", \"path\": \"/a\"}]}", "storage.pools[0].name");
    expect_refused("{\"pools\": [{\"name\": \"a\"}]}", "storage.pools[0].path");
    expect_refused("{\"pools\": [{\"name\": \"a\", \"path\": \"rel\"}]}", "storage.pools[0].path");
    expect_refused("{\"pools\": [{\"name\": \"a\", \"path\": \"/a/../etc\"}]}",
                   "storage.pools[0].path");
    expect_refused("{\"pools\": [{\"name\": \"a\", \"path\": \"/a//b\"}]}",
                   "storage.pools[0].path");
    expect_refused("{\"pools\": [{\"name\": \"a\", \"path\": \"/a/\"}]}", "storage.pools[0].path");
    expect_refused("{\"pools\": [{\"name\": \"a\", \"path\": \"/\"}]}", "storage.pools[0].path");
    expect_refused("{\"pools\": [{\"name\": \"a\", \"path\": \"/a\\nb\"}]}",
                   "storage.pools[0].path");
    expect_refused("{\"pools\": [{\"name\": \"a\", \"path\": \"/a\", \"class\": \"warm\"}]}",
                   "storage.pools[0].class");
    expect_refused("{\"pools\": [{\"name\": \"a\", \"path\": \"/a\", \"quota\": \"xfs\"}]}",
                   "storage.pools[0].quota");
    expect_refused("{\"pools\": [{\"name\": \"a\", \"path\": \"/a\", \"nodes\": [\"x\"]}]}",
                   "storage.pools[0].nodes");
    expect_refused("{\"pools\": [{\"name\": \"a\", \"path\": \"/a\", \"size\": 1}]}",
                   "storage.pools[0].size");
    expect_refused("{\"pools\": [{\"name\": \"a\", \"path\": \"/a\"}, {\"name\": \"a\","
                   " \"path\": \"/b\"}]}",
                   "storage.pools[1]");
    expect_refused("{\"pools\": [{\"name\": \"a\", \"path\": \"/a\"}, {\"name\": \"b\","
                   " \"path\": \"/a\"}]}",
                   "storage.pools[1]");
    expect_refused("{\"check_interval\": \"10ms\"}", "storage.check_interval");
    expect_refused("{\"groups\": {\"ml\": 0}}", "storage.groups.ml");
    expect_refused("{\"groups\": {\"ml\": \"root\"}}", "storage.groups.ml");
    expect_refused("{\"group_prefix\": \"a b\"}", "storage.group_prefix");
}

static void config_and_report_round_trip(void **state)
{
    (void)state;
    struct storage_config c;
    memset(&c, 0, sizeof(c));
    c.gen = 42;
    c.interval_ms = 5000;
    c.npools = 1;
    snprintf(c.pools[0].name, sizeof(c.pools[0].name), "hot");
    snprintf(c.pools[0].path, sizeof(c.pools[0].path), "/mnt/hot");
    c.pools[0].mount = true;
    struct storage_area a = {"hot", "ml", "4711", 10 << 20};
    c.areas = &a;
    c.nareas = 1;
    json_t *j = storage_config_json(&c);
    struct storage_config back;
    struct proto_error e;
    if (storage_config_parse(j, &back, &e))
        fail_msg("%s: %s", e.field, e.message);
    assert_int_equal(back.gen, 42);
    assert_int_equal(back.nareas, 1);
    assert_string_equal(back.areas[0].group, "4711");
    assert_int_equal(back.areas[0].quota_bytes, 10 << 20);
    storage_config_release(&back);
    /* an area on a pool the configuration does not name is refused */
    json_object_set_new(json_array_get(json_object_get(j, "areas"), 0), "pool",
                        json_string("cold"));
    assert_int_equal(storage_config_parse(j, &back, &e), -EINVAL);
    assert_string_equal(e.field, "storage.areas[0]");
    json_decref(j);

    struct storage_report r;
    memset(&r, 0, sizeof(r));
    r.gen = 42;
    r.npools = 1;
    snprintf(r.pools[0].name, sizeof(r.pools[0].name), "hot");
    snprintf(r.pools[0].message, sizeof(r.pools[0].message), "/mnt/hot is not a mount point");
    r.pools[0].latency_us = r.pools[0].size_bytes = r.pools[0].used_bytes = -1;
    struct storage_area_state as = {.pool = "hot",
                                    .project = "ml",
                                    .ok = true,
                                    .enforced = STORAGE_QUOTA_EXT4_PROJECT,
                                    .used_bytes = 1234,
                                    .quota_bytes = 4096};
    r.areas = &as;
    r.nareas = 1;
    j = storage_report_json(&r);
    struct storage_report rb;
    if (storage_report_parse(j, &rb, &e))
        fail_msg("%s: %s", e.field, e.message);
    assert_false(rb.pools[0].ok);
    assert_string_equal(rb.pools[0].message, "/mnt/hot is not a mount point");
    assert_int_equal(rb.pools[0].size_bytes, -1);
    assert_int_equal(rb.areas[0].used_bytes, 1234);
    assert_int_equal(rb.areas[0].enforced, STORAGE_QUOTA_EXT4_PROJECT);
    storage_report_release(&rb);
    /* a negative count is refused, named */
    json_object_set_new(json_array_get(json_object_get(j, "areas"), 0), "used_bytes",
                        json_integer(-5));
    assert_int_equal(storage_report_parse(j, &rb, &e), -EINVAL);
    assert_string_equal(e.field, "storage.areas[0].used_bytes");
    json_decref(j);
}

static void job_pools(void **state)
{
    (void)state;
    struct proto_error e;
    json_t *j = doc("[\"hot\", \"cold\"]");
    assert_int_equal(storage_job_pools_check(j, &e), 0);
    json_decref(j);
    j = doc("[\"hot\", \"hot\"]");
    assert_int_equal(storage_job_pools_check(j, &e), -EINVAL);
    assert_string_equal(e.field, "storage[1]");
    json_decref(j);
    j = doc("[\"../x\"]");
    assert_int_equal(storage_job_pools_check(j, &e), -EINVAL);
    json_decref(j);
    j = doc("\"hot\"");
    assert_int_equal(storage_job_pools_check(j, &e), -EINVAL);
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(policy_section),
        cmocka_unit_test(policy_refusals),
        cmocka_unit_test(config_and_report_round_trip),
        cmocka_unit_test(job_pools),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
