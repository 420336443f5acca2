/* test_templates.c - unit tests of the policy document's `templates` section and of a
 * job's template reference (protocol/templates.h): normalised entries, versions side by
 * side, the latest found by name, every bad part refused naming its field, and the
 * written form read back to the same list. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "protocol/proto.h"
#include "protocol/templates.h"

static struct sched_policy base;

static int setup(void **state)
{
    sched_policy_defaults(&base);
    return 0;
}

static int parse(const char *yaml, struct proto_policy *p, struct proto_error *e)
{
    return proto_policy_parse_text(yaml, strlen(yaml), true, &base, p, e);
}

static void parsed_and_normalised(void **state)
{
    const char *doc = "templates:\n"
                      "  - {name: torch, version: 2, env: {A: '1', B: two}, modules: [cuda/12.1],\n"
                      "     setup: 'echo hi', classes: [training], default_for: [project:vision]}\n"
                      "  - {name: torch, env: {A: old}}\n"
                      "  - {name: jax, owner: group:research, description: JAX}\n";
    struct proto_policy p;
    struct proto_error e;
    if (parse(doc, &p, &e) < 0)
        fail_msg("%s: %s", e.field, e.message);
    assert_non_null(p.templates);
    assert_int_equal(p.templates->n, 3);
    const struct proto_template *t = proto_template_find(p.templates, "torch", 0);
    assert_non_null(t);
    assert_int_equal(t->version, 2); /* the latest */
    assert_int_equal(proto_template_find(p.templates, "torch", 1)->version, 1);
    assert_null(proto_template_find(p.templates, "torch", 3));
    assert_null(proto_template_find(p.templates, "nope", 0));
    /* every key present, defaults filled */
    const json_t *jax = proto_template_find(p.templates, "jax", 0)->doc;
    assert_string_equal(json_string_value(json_object_get(jax, "owner")), "group:research");
    assert_int_equal(json_integer_value(json_object_get(jax, "version")), 1);
    assert_true(json_is_null(json_object_get(jax, "setup")));
    assert_int_equal(json_array_size(json_object_get(jax, "modules")), 0);
    assert_string_equal(json_string_value(json_object_get(t->doc, "setup")), "echo hi");
    assert_true(json_is_null(json_object_get(t->doc, "prepare")));
    /* the written form reads back to the same list */
    json_t *out = json_pack("{s:o}", "templates", proto_templates_json(p.templates));
    struct proto_policy q;
    if (proto_policy_parse(out, &base, &q, &e) < 0)
        fail_msg("%s: %s", e.field, e.message);
    json_t *again = proto_templates_json(q.templates);
    assert_true(json_equal(json_object_get(out, "templates"), again));
    /* a copy is deep */
    struct proto_templates copy;
    proto_templates_copy(&copy, p.templates);
    assert_true(json_equal(copy.t[0].doc, p.templates->t[0].doc));
    assert_ptr_not_equal(copy.t[0].doc, p.templates->t[0].doc);
    proto_templates_release(&copy);
    json_decref(again);
    json_decref(out);
    proto_policy_release(&q);
    proto_policy_release(&p);
}

static void absent_section_is_null(void **state)
{
    struct proto_policy p;
    struct proto_error e;
    assert_int_equal(parse("settings: {backfill_depth: 3}\n", &p, &e), 0);
    assert_null(p.templates);
    proto_policy_release(&p);
}

static void refusals_name_the_field(void **state)
{
    static const struct {
        const char *doc, *field;
    } cases[] = {
        {"templates: {name: x}", "templates"},
        {"templates: [{version: 2}]", "templates[0].name"},
        {"templates: [{name: 'a b'}]", "templates[0].name"},
        {"templates: [{name: x, version: 0}]", "templates[0].version"},
        {"templates: [{name: x, colour: red}]", "templates[0].colour"},
        {"templates: [{name: x, env: {'1A': x}}]", "templates[0].env.1A"},
        {"templates: [{name: x, env: {DOCKET_JOB_ID: '7'}}]", "templates[0].env.DOCKET_JOB_ID"},
        {"templates: [{name: x, env: {A: 1}}]", "templates[0].env.A"},
        {"templates: [{name: x, modules: ['cuda; rm -rf /']}]", "templates[0].modules[0]"},
        {"templates: [{name: x, modules: ['-f']}]", "templates[0].modules[0]"},
        {"templates: [{name: x, modules: [a, a]}]", "templates[0].modules[1]"},
        {"templates: [{name: x, setup: ''}]", "templates[0].setup"},
        {"templates: [{name: x, owner: everyone}]", "templates[0].owner"},
        {"templates: [{name: x, owner: 'project:'}]", "templates[0].owner"},
        {"templates: [{name: x, classes: [nosuchclass]}]", "templates[0].classes[0]"},
        {"templates: [{name: x, default_for: ['class:nosuch']}]", "templates[0].default_for[0]"},
        {"templates: [{name: x, default_for: ['user:bob']}]", "templates[0].default_for[0]"},
        {"templates: [{name: x, image: 'oci-layout:i:1'}]", "templates[0].image"},
        {"templates: [{name: x, image: 'http://i'}]", "templates[0].image"},
        {"templates: [{name: x, image: 7}]", "templates[0].image"},
        {"templates: [{name: x, mounts: ['/a:/dev/x']}]", "templates[0].mounts[0]"},
        {"templates: [{name: x, mounts: ['/a/../b:/b']}]", "templates[0].mounts[0]"},
        {"templates: [{name: x, mounts: 7}]", "templates[0].mounts"},
        {"templates: [{name: x, warm_on: 'zone=a,,b'}]", "templates[0].warm_on"},
        {"templates: [{name: x, warm_on: 'zone=a b'}]", "templates[0].warm_on"},
        {"templates: [{name: x, warm_on: 3}]", "templates[0].warm_on"},
        {"templates: [{name: x, registry_auth: 'not a name'}]", "templates[0].registry_auth"},
        {"templates: [{name: x, registry_auth: 7}]", "templates[0].registry_auth"},
        {"templates: [{name: x}, {name: x}]", "templates[1].version"},
        {"templates: [{name: x, default_for: [site]}, {name: y, default_for: [site]}]",
         "templates[1].default_for[0]"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct proto_policy p;
        struct proto_error e;
        memset(&e, 0, sizeof(e));
        if (parse(cases[i].doc, &p, &e) == 0)
            fail_msg("accepted: %s", cases[i].doc);
        if (strcmp(e.field, cases[i].field) != 0)
            fail_msg("%s: field '%s', want '%s' (%s)", cases[i].doc, e.field, cases[i].field,
                     e.message);
        assert_int_equal(e.status, 400);
        proto_policy_release(&p);
    }
}

static void versions_of_one_name_share_defaults(void **state)
{
    struct proto_policy p;
    struct proto_error e;
    const char *doc = "templates: [{name: x, default_for: [site]},"
                      " {name: x, version: 2, default_for: [site]}]";
    if (parse(doc, &p, &e) < 0)
        fail_msg("%s: %s", e.field, e.message);
    proto_policy_release(&p);
}

static void references(void **state)
{
    static const char *const good[] = {"torch", "torch@1", "a.b-c_d@999999"};
    static const char *const bad[] = {"",        "@1",     "torch@",    "torch@0",      "torch@01",
                                      "torch@x", "to rch", "torch@1@2", "torch@1000001"};
    char name[PROTO_NAME_MAX];
    int v;
    struct proto_error e;
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        assert_int_equal(proto_template_ref_parse(good[i], "template", name, &v, &e), 0);
    assert_int_equal(proto_template_ref_parse("torch@12", "template", name, &v, &e), 0);
    assert_string_equal(name, "torch");
    assert_int_equal(v, 12);
    assert_int_equal(proto_template_ref_parse("torch", "template", name, &v, &e), 0);
    assert_int_equal(v, 0);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (proto_template_ref_parse(bad[i], "template", name, &v, &e) == 0)
            fail_msg("accepted '%s'", bad[i]);
        assert_string_equal(e.field, "template");
    }
}

static void jobspec_field(void **state)
{
    struct proto_jobspec j;
    struct proto_error e;
    const char *ok = "{\"command\": [\"true\"], \"template\": \"torch@3\"}";
    assert_int_equal(proto_jobspec_parse_text(ok, strlen(ok), 0, &j, &e), 0);
    json_t *stored = proto_jobspec_to_json(&j);
    assert_string_equal(json_string_value(json_object_get(stored, "template")), "torch@3");
    struct proto_jobspec back;
    assert_int_equal(proto_jobspec_load(stored, &back, &e), 0);
    assert_string_equal(json_string_value(json_object_get(back.extra, "template")), "torch@3");
    proto_jobspec_release(&back);
    json_decref(stored);
    proto_jobspec_release(&j);
    /* without one: null, so every stored spec has the key */
    const char *none = "{\"command\": [\"true\"]}";
    assert_int_equal(proto_jobspec_parse_text(none, strlen(none), 0, &j, &e), 0);
    assert_true(json_is_null(json_object_get(j.extra, "template")));
    proto_jobspec_release(&j);
    const char *bad = "{\"command\": [\"true\"], \"template\": \"torch@zero\"}";
    assert_int_not_equal(proto_jobspec_parse_text(bad, strlen(bad), 0, &j, &e), 0);
    assert_string_equal(e.field, "template");
    /* what docketd writes at submit is not the client's to send */
    const char *env = "{\"command\": [\"true\"], \"environment\": {}}";
    assert_int_not_equal(proto_jobspec_parse_text(env, strlen(env), 0, &j, &e), 0);
    assert_string_equal(e.field, "environment");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parsed_and_normalised),
        cmocka_unit_test(absent_section_is_null),
        cmocka_unit_test(refusals_name_the_field),
        cmocka_unit_test(versions_of_one_name_share_defaults),
        cmocka_unit_test(references),
        cmocka_unit_test(jobspec_field),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
