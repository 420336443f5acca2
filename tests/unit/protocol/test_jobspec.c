/* test_jobspec.c - unit tests of the job spec parser (protocol/proto.h): a full valid
 * spec, every bad field refused with its JSON path, the stored form read back exactly,
 * array expressions and the error object. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "protocol/proto.h"

#define NOW ((int64_t)1800000000000)

static void parse_ok(const char *text, struct proto_jobspec *j)
{
    struct proto_error e;
    memset(&e, 0, sizeof(e));
    int rc = proto_jobspec_parse_text(text, strlen(text), NOW, j, &e);
    if (rc != 0)
        fail_msg("parse failed: field '%s': %s", e.field, e.message);
}

static void full_spec(void **state)
{
    struct proto_jobspec j;
    parse_ok("{\"name\": \"resnet\", \"project\": \"vision\", \"tier\": \"high\","
             " \"class\": \"training\", \"command\": [\"python\", \"train.py\"],"
             " \"gpus\": 8, \"gpu_type\": \"H100-80GB\", \"cpus\": 16, \"mem\": \"64G\","
             " \"nodes\": 2, \"time_limit\": \"2d\", \"workdir\": \"/home/a\","
             " \"output\": \"%j.out\", \"error\": \"%j.err\", \"env\": {\"EPOCHS\": \"90\"},"
             " \"labels\": {\"sweep\": \"a\"}, \"selectors\": {\"zone\": \"a\", \"pool\": "
             "\"!reserved\"},"
             " \"deps\": [{\"type\": \"afterok\", \"job\": 12}, {\"type\": \"afterany\","
             " \"job\": 20, \"array\": true}], \"array\": \"0-99%8\","
             " \"signal\": \"USR1\", \"grace\": \"120s\", \"checkpoint\": true, \"retries\": 0,"
             " \"idempotent\": false, \"requeue\": true, \"hold\": false, \"begin\": \"10m\","
             " \"user\": \"alice\"}",
             &j);
    assert_string_equal(j.name, "resnet");
    assert_string_equal(j.project, "vision");
    assert_string_equal(j.tier, "high");
    assert_string_equal(j.class_name, "training");
    assert_string_equal(j.user, "alice");
    assert_int_equal(j.gpus, 8);
    assert_string_equal(j.gpu_type, "H100-80GB");
    assert_int_equal(j.cpus, 16);
    assert_int_equal(j.mem_mb, 65536);
    assert_int_equal(j.nodes, 2);
    assert_int_equal(j.time_limit_ms, 2 * 86400000LL);
    assert_int_equal(j.grace_ms, 120000);
    assert_int_equal(j.signal, 10);
    assert_true(j.checkpoint);
    assert_true(j.requeue);
    assert_int_equal(j.begin_ms, NOW + 600000);
    assert_int_equal(j.ndeps, 2);
    assert_string_equal(j.deps[0].type, "afterok");
    assert_int_equal(j.deps[0].job, 12);
    assert_false(j.deps[0].array);
    assert_int_equal(j.deps[1].job, 20);
    assert_true(j.deps[1].array); /* the whole array 20 */
    assert_int_equal(j.nselectors, 2);
    assert_string_equal(j.array, "0-99%8");
    bool saw_negated = false;
    for (int i = 0; i < j.nselectors; i++)
        if (strcmp(j.selectors[i].key, "pool") == 0) {
            assert_true(j.selectors[i].negate);
            assert_string_equal(j.selectors[i].value, "reserved");
            saw_negated = true;
        }
    assert_true(saw_negated);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(j.extra, "env"), "EPOCHS")), "90");
    assert_string_equal(json_string_value(json_array_get(json_object_get(j.extra, "command"), 1)),
                        "train.py");
    proto_jobspec_release(&j);
}

static void defaults(void **state)
{
    struct proto_jobspec j;
    parse_ok("{\"script\": \"#!/bin/sh\\necho hi\\n\"}", &j);
    assert_string_equal(j.name, "job");
    assert_int_equal(j.cpus, 1);
    assert_int_equal(j.nodes, 1);
    assert_int_equal(j.gpus, 0);
    assert_int_equal(j.grace_ms, -1);
    assert_true(j.requeue);
    assert_false(j.hold);
    assert_true(json_is_null(json_object_get(j.extra, "command")));
    assert_true(json_is_object(json_object_get(j.extra, "env")));
    proto_jobspec_release(&j);
}

/* Every bad input names its field. */
static const struct {
    const char *body;
    const char *field;
} bad[] = {
    {"{\"command\": [\"x\"], \"secrets\": \"A\"}", "secrets"},
    {"{\"command\": [\"x\"], \"secrets\": [\"A\", \"9B\"]}", "secrets[1]"},
    {"{\"command\": [\"x\"], \"secrets\": [\"A\", \"A\"]}", "secrets[1]"},
    {"{\"command\": [\"x\"], \"secrets\": [1]}", "secrets[0]"},
    {"{\"command\": [\"x\"], \"secrets\": [\"A-B\"]}", "secrets[0]"},
    {"{\"command\": [\"x\"], \"gpus\": 1", ""},
    {"[1]", ""},
    {"\"x\"", ""},
    {"{}", "command"},
    {"{\"command\": [\"x\"], \"script\": \"y\"}", "script"},
    {"{\"command\": \"x\"}", "command"},
    {"{\"command\": []}", "command"},
    {"{\"command\": [\"\"]}", "command[0]"},
    {"{\"command\": [\"x\", 2]}", "command[1]"},
    {"{\"script\": \"\"}", "script"},
    {"{\"script\": 5}", "script"},
    {"{\"command\": [\"x\"], \"unknown\": 1}", "unknown"},
    {"{\"command\": [\"x\"], \"name\": 5}", "name"},
    {"{\"command\": [\"x\"], \"name\": \"a\\nb\"}", "name"},
    {"{\"command\": [\"x\"], \"project\": \"has space\"}", "project"},
    {"{\"command\": [\"x\"], \"project\": \"\"}", "project"},
    {"{\"command\": [\"x\"], \"user\": 1}", "user"},
    {"{\"command\": [\"x\"], \"tier\": \"-x\"}", "tier"},
    {"{\"command\": [\"x\"], \"class\": [] }", "class"},
    {"{\"command\": [\"x\"], \"gpus\": \"1\"}", "gpus"},
    {"{\"command\": [\"x\"], \"gpus\": -1}", "gpus"},
    {"{\"command\": [\"x\"], \"gpus\": 65}", "gpus"},
    {"{\"command\": [\"x\"], \"gpus\": 1.5}", "gpus"},
    {"{\"command\": [\"x\"], \"gpu_type\": \"H100\"}", "gpu_type"},
    {"{\"command\": [\"x\"], \"cpus\": 0}", "cpus"},
    {"{\"command\": [\"x\"], \"cpus\": 100000}", "cpus"},
    {"{\"command\": [\"x\"], \"nodes\": 0}", "nodes"},
    {"{\"command\": [\"x\"], \"nodes\": 513}", "nodes"},
    {"{\"command\": [\"x\"], \"mem\": \"a lot\"}", "mem"},
    {"{\"command\": [\"x\"], \"mem\": -1}", "mem"},
    {"{\"command\": [\"x\"], \"mem\": \"100P\"}", "mem"},
    {"{\"command\": [\"x\"], \"mem\": true}", "mem"},
    {"{\"command\": [\"x\"], \"time_limit\": \"soon\"}", "time_limit"},
    {"{\"command\": [\"x\"], \"time_limit\": -5}", "time_limit"},
    {"{\"command\": [\"x\"], \"time_limit\": \"999d\"}", "time_limit"},
    {"{\"command\": [\"x\"], \"grace\": \"2d\"}", "grace"},
    {"{\"command\": [\"x\"], \"begin\": \"later\"}", "begin"},
    {"{\"command\": [\"x\"], \"begin\": 5}", "begin"},
    {"{\"command\": [\"x\"], \"workdir\": \"rel/dir\"}", "workdir"},
    {"{\"command\": [\"x\"], \"workdir\": \"/home/a/../b\"}", "workdir"},
    {"{\"command\": [\"x\"], \"workdir\": \"/..\"}", "workdir"},
    {"{\"command\": [\"x\"], \"output\": \"../../etc/x\"}", "output"},
    {"{\"command\": [\"x\"], \"error\": \"/tmp/a/../../e\"}", "error"},
    {"{\"command\": [\"x\"], \"output\": 3}", "output"},
    {"{\"command\": [\"x\"], \"error\": \"\"}", "error"},
    {"{\"command\": [\"x\"], \"env\": []}", "env"},
    {"{\"command\": [\"x\"], \"env\": {\"1X\": \"a\"}}", "env.1X"},
    {"{\"command\": [\"x\"], \"env\": {\"A\": 1}}", "env.A"},
    {"{\"command\": [\"x\"], \"labels\": {\"k\": null}}", "labels.k"},
    {"{\"command\": [\"x\"], \"selectors\": {\"zone\": 1}}", "selectors.zone"},
    {"{\"command\": [\"x\"], \"selectors\": {\"z one\": \"a\"}}", "selectors.z one"},
    {"{\"command\": [\"x\"], \"selectors\": {\"zone\": \"!\"}}", "selectors.zone"},
    {"{\"command\": [\"x\"], \"deps\": {}}", "deps"},
    {"{\"command\": [\"x\"], \"deps\": [1]}", "deps[0]"},
    {"{\"command\": [\"x\"], \"deps\": [{\"type\": \"afterok\"}]}", "deps[0].job"},
    {"{\"command\": [\"x\"], \"deps\": [{\"type\": \"afterok\", \"job\": 2, \"array\": 1}]}",
     "deps[0].array"},
    {"{\"command\": [\"x\"], \"deps\": [{\"type\": \"afterok\", \"job\": 0}]}", "deps[0].job"},
    {"{\"command\": [\"x\"], \"deps\": [{\"type\": \"afterok\", \"job\": 1}, {\"type\": \"when\", "
     "\"job\": 2}]}",
     "deps[1].type"},
    {"{\"command\": [\"x\"], \"deps\": [{\"type\": \"afterok\", \"job\": 1, \"x\": 0}]}",
     "deps[0].x"},
    {"{\"command\": [\"x\"], \"array\": \"x\"}", "array"},
    {"{\"command\": [\"x\"], \"array\": 5}", "array"},
    {"{\"command\": [\"x\"], \"array\": \"0-200000\"}", "array"},
    {"{\"command\": [\"x\"], \"signal\": \"NOPE\"}", "signal"},
    {"{\"command\": [\"x\"], \"signal\": 0}", "signal"},
    {"{\"command\": [\"x\"], \"signal\": \"KILL\"}", "signal"},
    {"{\"command\": [\"x\"], \"checkpoint\": \"yes\"}", "checkpoint"},
    {"{\"command\": [\"x\"], \"retries\": 11}", "retries"},
    {"{\"command\": [\"x\"], \"switches\": 0}", "switches"},
    {"{\"command\": [\"x\"], \"switches\": \"@10m\"}", "switches"},
    {"{\"command\": [\"x\"], \"switches\": \"1@later\"}", "switches"},
    {"{\"command\": [\"x\"], \"switches\": \"-1\"}", "switches"},
    {"{\"command\": [\"x\"], \"switches\": true}", "switches"},
    {"{\"command\": [\"x\"], \"idempotent\": 1}", "idempotent"},
    {"{\"command\": [\"x\"], \"requeue\": null}", "requeue"},
    {"{\"command\": [\"x\"], \"hold\": \"false\"}", "hold"},
};

static void bad_fields(void **state)
{
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct proto_jobspec j;
        struct proto_error e;
        memset(&e, 0, sizeof(e));
        int rc = proto_jobspec_parse_text(bad[i].body, strlen(bad[i].body), NOW, &j, &e);
        if (rc != -EINVAL)
            fail_msg("accepted: %s", bad[i].body);
        if (strcmp(e.field, bad[i].field) != 0)
            fail_msg("%s: field '%s', wanted '%s' (%s)", bad[i].body, e.field, bad[i].field,
                     e.message);
        assert_int_equal(e.status, 400);
        assert_string_equal(e.code, "invalid_argument");
        assert_true(e.message[0] != '\0');
        assert_true(e.message[strlen(e.message) - 1] != '.');
        proto_jobspec_release(&j); /* safe after an error */
    }
}

static void stored_round_trip(void **state)
{
    struct proto_jobspec a, b;
    struct proto_error e;
    parse_ok("{\"name\": \"n\", \"project\": \"p\", \"command\": [\"a\", \"b\"], \"gpus\": 2,"
             " \"gpu_type\": \"A100\", \"mem\": \"1G\", \"time_limit\": \"90s\","
             " \"env\": {\"X\": \"1\"}, \"selectors\": {\"zone\": \"!b\"},"
             " \"deps\": [{\"type\": \"afternotok\", \"job\": 3}], \"signal\": 12,"
             " \"grace\": 5, \"checkpoint\": true, \"hold\": true, \"requeue\": false,"
             " \"retries\": 2, \"idempotent\": true, \"array\": \"1,3\","
             " \"secrets\": [\"API_KEY\", \"DB_PASS\"], \"switches\": \"1@30m\"}",
             &a);
    json_t *stored = proto_jobspec_to_json(&a);
    char *text = json_dumps(stored, JSON_COMPACT);
    json_t *again = json_loads(text, 0, NULL);
    assert_int_equal(proto_jobspec_load(again, &b, &e), 0);
    assert_string_equal(b.name, "n");
    assert_string_equal(b.project, "p");
    assert_string_equal(b.gpu_type, "A100");
    assert_int_equal(b.gpus, 2);
    assert_int_equal(b.mem_mb, 1024);
    assert_int_equal(b.time_limit_ms, 90000);
    assert_int_equal(b.signal, 12);
    assert_int_equal(b.grace_ms, 5000);
    assert_true(b.checkpoint && b.hold && !b.requeue && b.idempotent);
    assert_int_equal(b.retries, 2);
    assert_int_equal(b.switches, 1);
    assert_int_equal(b.switches_wait_ms, 30 * 60 * 1000);
    assert_int_equal(b.ndeps, 1);
    assert_string_equal(b.deps[0].type, "afternotok");
    assert_int_equal(b.nselectors, 1);
    assert_true(b.selectors[0].negate);
    assert_string_equal(b.array, "1,3");
    /* the names a job uses are kept (never a value: a spec has none) */
    json_t *sec = json_object_get(b.extra, "secrets");
    assert_int_equal(json_array_size(sec), 2);
    assert_string_equal(json_string_value(json_array_get(sec, 1)), "DB_PASS");
    json_t *back = proto_jobspec_to_json(&b);
    assert_true(json_equal(stored, back));
    json_decref(back);
    json_decref(stored);
    json_decref(again);
    free(text);
    proto_jobspec_release(&a);
    proto_jobspec_release(&b);
}

static void load_refuses_damage(void **state)
{
    struct proto_jobspec j;
    struct proto_error e;
    json_t *bad_doc = json_pack("{s:s}", "name", "x");
    assert_int_not_equal(proto_jobspec_load(bad_doc, &j, &e), 0);
    json_decref(bad_doc);
}

static void arrays(void **state)
{
    int32_t *idx = NULL;
    size_t n;
    int limit;
    struct proto_error e;
    assert_int_equal(proto_array_expand("0-9%3", &idx, &n, &limit, &e), 0);
    assert_int_equal(n, 10);
    assert_int_equal(limit, 3);
    assert_int_equal(idx[9], 9);
    free(idx);
    assert_int_equal(proto_array_expand("1,5,7", &idx, &n, &limit, &e), 0);
    assert_int_equal(n, 3);
    assert_int_equal(idx[1], 5);
    free(idx);
    assert_int_equal(proto_array_expand("0-100000", &idx, &n, &limit, &e), -EINVAL);
    assert_string_equal(e.field, "array");
}

/* The "slurm" object of a job read from sbatch options: validated field by field, kept
 * in the stored form and read back. */
static void slurm_object(void **state)
{
    struct proto_jobspec j, back;
    struct proto_error e;
    static const struct {
        const char *body, *field;
    } bad_slurm[] = {
        {"{\"script\": \"x\", \"slurm\": 3}", "slurm"},
        {"{\"script\": \"x\", \"slurm\": {\"ntasks\": 0}}", "slurm.ntasks"},
        {"{\"script\": \"x\", \"slurm\": {\"signal_before\": 70000}}", "slurm.signal_before"},
        {"{\"script\": \"x\", \"slurm\": {\"signal\": 99}}", "slurm.signal"},
        {"{\"script\": \"x\", \"slurm\": {\"signal_batch\": 1}}", "slurm.signal_batch"},
        {"{\"script\": \"x\", \"slurm\": {\"submit_dir\": \"rel\"}}", "slurm.submit_dir"},
        {"{\"script\": \"x\", \"slurm\": {\"step_key\": \"k\"}}", "slurm.step_key"},
        {"{\"script\": \"x\", \"slurm\": {\"args\": \"a b\"}}", "slurm.args"},
        {"{\"script\": \"x\", \"slurm\": {\"args\": [\"a\", 1]}}", "slurm.args"},
        {"{\"script\": \"x\", \"env\": {\"BASH_FUNC_x%%y\": \"1\"}}", "env.BASH_FUNC_x%%y"},
        {"{\"script\": \"x\", \"env\": {\"BASH_FUNC_%%\": \"1\"}}", "env.BASH_FUNC_%%"},
    };
    parse_ok("{\"script\": \"#!/bin/sh\\ntrue\\n\", \"slurm\": {\"ntasks\": 8,"
             " \"ntasks_per_node\": 4, \"cpus_per_task\": 10, \"gpus_per_task\": 1,"
             " \"signal\": 10, \"signal_before\": 20, \"signal_batch\": true,"
             " \"submit_dir\": \"/home/a\", \"args\": [\"one\", \"two words\"]},"
             " \"env\": {\"BASH_FUNC_module%%\": \"() {  eval $(modulecmd bash $*)\\n}\"}}",
             &j);
    json_t *stored = proto_jobspec_to_json(&j);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(stored, "slurm"), "ntasks_per_node")),
        4);
    assert_int_equal(proto_jobspec_load(stored, &back, &e), 0);
    json_t *again = proto_jobspec_to_json(&back);
    assert_true(json_equal(stored, again));
    json_decref(again);
    json_decref(stored);
    proto_jobspec_release(&back);
    proto_jobspec_release(&j);
    parse_ok("{\"command\": [\"true\"]}", &j); /* a native job has none */
    stored = proto_jobspec_to_json(&j);
    assert_null(json_object_get(stored, "slurm"));
    json_decref(stored);
    proto_jobspec_release(&j);
    for (size_t i = 0; i < sizeof(bad_slurm) / sizeof(bad_slurm[0]); i++) {
        memset(&e, 0, sizeof(e));
        if (proto_jobspec_parse_text(bad_slurm[i].body, strlen(bad_slurm[i].body), NOW, &j, &e) !=
            -EINVAL)
            fail_msg("accepted: %s", bad_slurm[i].body);
        if (strcmp(e.field, bad_slurm[i].field))
            fail_msg("%s: field '%s', wanted '%s'", bad_slurm[i].body, e.field, bad_slurm[i].field);
        proto_jobspec_release(&j);
    }
}

static void error_json(void **state)
{
    struct proto_error e;
    proto_errorf(&e, 429, NULL, "project", "project '%s' is full", "p");
    json_t *o = proto_error_json(&e);
    json_t *in = json_object_get(o, "error");
    assert_string_equal(json_string_value(json_object_get(in, "code")), "quota_exceeded");
    assert_string_equal(json_string_value(json_object_get(in, "field")), "project");
    assert_string_equal(json_string_value(json_object_get(in, "message")), "project 'p' is full");
    json_decref(o);
    proto_errorf(&e, 404, NULL, NULL, "gone");
    o = proto_error_json(&e);
    assert_null(json_object_get(json_object_get(o, "error"), "field"));
    json_decref(o);
}

/* A change to a submitted job (PATCH /v1/jobs/ID): what may change is read as the
 * submission reads it; anything else is refused naming it. */
static void patch_fields(void **state)
{
    (void)state;
    struct proto_jobspec j;
    struct proto_error e;
    parse_ok("{\"command\": [\"x\"], \"time_limit\": \"2h\", \"name\": \"a\"}", &j);
    json_t *p =
        json_pack("{s:s,s:i,s:s,s:[{s:s,s:i}],s:s,s:s}", "time_limit", "30m", "nodes", 2, "name",
                  "b", "deps", "type", "afterany", "job", 7, "comment", "a note", "reason", "why");
    memset(&e, 0, sizeof(e));
    assert_int_equal(proto_jobspec_patch(p, NOW, &j, &e), 0);
    assert_int_equal(j.time_limit_ms, 30 * 60 * 1000);
    assert_int_equal(j.nodes, 2);
    assert_string_equal(j.name, "b");
    assert_int_equal(j.ndeps, 1);
    assert_string_equal(json_string_value(json_object_get(j.extra, "comment")), "a note");
    /* the comment is stored and read back */
    json_t *stored = proto_jobspec_to_json(&j);
    struct proto_jobspec back;
    assert_int_equal(proto_jobspec_load(stored, &back, &e), 0);
    assert_string_equal(json_string_value(json_object_get(back.extra, "comment")), "a note");
    proto_jobspec_release(&back);
    json_decref(stored);
    json_decref(p);
    static const struct {
        const char *body, *field;
    } refused[] = {{"{\"gpus\": 2}", "gpus"},
                   {"{\"bogus\": 1}", "bogus"},
                   {"{\"time_limit\": \"soon\"}", "time_limit"},
                   {"{\"nodes\": 0}", "nodes"},
                   {"{\"comment\": \"a\\u0001b\"}", "comment"},
                   {"{\"deps\": [{\"type\": \"before\", \"job\": 1}]}", NULL}};
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        json_t *b = json_loads(refused[i].body, 0, NULL);
        assert_non_null(b);
        memset(&e, 0, sizeof(e));
        assert_int_equal(proto_jobspec_patch(b, NOW, &j, &e), -EINVAL);
        assert_int_equal(e.status, 400);
        if (refused[i].field)
            assert_string_equal(e.field, refused[i].field);
        json_decref(b);
    }
    json_t *arr = json_array();
    assert_int_equal(proto_jobspec_patch(arr, NOW, &j, &e), -EINVAL);
    json_decref(arr);
    proto_jobspec_release(&j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(full_spec),           cmocka_unit_test(defaults),
        cmocka_unit_test(bad_fields),          cmocka_unit_test(stored_round_trip),
        cmocka_unit_test(load_refuses_damage), cmocka_unit_test(arrays),
        cmocka_unit_test(error_json),          cmocka_unit_test(slurm_object),
        cmocka_unit_test(patch_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
