/* test_alerts.c - unit tests of the alerts' pure part (controller/alert_eval.h): an
 * instance fires once its condition has held the rule's `for` (dedupe: once, however
 * many rounds see it), resolves when a round no longer sees it, is forgotten silently
 * while pending; silences match a rule, or one key of it, until they end; event rules
 * fire at once; the retry schedule doubles up to its cap; the two body shapes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "controller/alert_eval.h"

struct log {
    char text[1024];
};

static void record(void *arg, enum alert_change_kind what, struct alert_inst *inst, bool silenced,
                   int64_t now)
{
    struct log *l = arg;
    snprintf(l->text + strlen(l->text), sizeof l->text - strlen(l->text), "%s %s/%s%s@%lld;",
             what == ALERT_FIRED ? "FIRE" : "RESOLVE", inst->rule, inst->key,
             silenced ? " (silenced)" : "", (long long)now);
    inst->history_id = 7;
}

static struct proto_alert_rule rule(const char *name, enum proto_alert_kind kind, int64_t for_ms)
{
    struct proto_alert_rule r;
    memset(&r, 0, sizeof r);
    snprintf(r.name, sizeof r.name, "%s", name);
    r.kind = kind;
    r.severity = PROTO_SEV_CRITICAL;
    r.for_ms = for_ms;
    return r;
}

/* One round at `now` observing `keys` (NULL-terminated) of rule r[0]. */
static void round_(struct alert_eval *e, const struct proto_alert_rule *r, int nr,
                   const char *const *keys, const struct alert_silence *s, int ns, int64_t now,
                   struct log *l)
{
    alert_eval_begin(e);
    for (; keys && *keys; keys++)
        assert_int_equal(alert_eval_observe(e, &r[0], *keys, "summary", now), 0);
    alert_eval_end(e, r, nr, s, ns, now, record, l);
}

static void fires_once_then_resolves(void **state)
{
    struct alert_eval *e = alert_eval_create();
    struct proto_alert_rule r = rule("down", PROTO_AK_NODE_UNREACHABLE, 0);
    const char *both[] = {"gpu01", "gpu02", NULL}, *one[] = {"gpu02", NULL};
    struct log l = {""};
    round_(e, &r, 1, both, NULL, 0, 100, &l);
    round_(e, &r, 1, both, NULL, 0, 200, &l); /* dedupe: nothing new */
    assert_string_equal(l.text, "FIRE down/gpu01@100;FIRE down/gpu02@100;");
    assert_int_equal(alert_eval_count(e), 2);
    assert_int_equal(alert_eval_at(e, 0)->history_id, 7);
    round_(e, &r, 1, one, NULL, 0, 300, &l);
    assert_string_equal(l.text, "FIRE down/gpu01@100;FIRE down/gpu02@100;RESOLVE down/gpu01@300;");
    assert_int_equal(alert_eval_count(e), 1);
    assert_string_equal(alert_eval_at(e, 0)->key, "gpu02");
    /* seen again after resolving: a new firing */
    round_(e, &r, 1, both, NULL, 0, 400, &l);
    assert_non_null(strstr(l.text, "FIRE down/gpu01@400;"));
    alert_eval_destroy(e);
}

static void pending_until_for(void **state)
{
    struct alert_eval *e = alert_eval_create();
    struct proto_alert_rule r = rule("quota", PROTO_AK_PROJECT_OVER_QUOTA, 1000);
    const char *k[] = {"vision", NULL};
    struct log l = {""};
    round_(e, &r, 1, k, NULL, 0, 0, &l);
    round_(e, &r, 1, k, NULL, 0, 999, &l);
    assert_string_equal(l.text, "");
    assert_int_equal(alert_eval_at(e, 0)->fired_ms, 0); /* pending, listed */
    round_(e, &r, 1, NULL, NULL, 0, 1500, &l);          /* cleared while pending: no news */
    assert_string_equal(l.text, "");
    assert_int_equal(alert_eval_count(e), 0);
    round_(e, &r, 1, k, NULL, 0, 2000, &l);
    round_(e, &r, 1, k, NULL, 0, 3000, &l);
    assert_string_equal(l.text, "FIRE quota/vision@3000;");
    alert_eval_destroy(e);
}

/* An event rule's `for` is how long it is observed: it fires at once. */
static void event_rules_fire_at_once(void **state)
{
    struct alert_eval *e = alert_eval_create();
    struct proto_alert_rule r = rule("failed", PROTO_AK_JOB_FAILED, 3600000);
    const char *k[] = {"job/12", NULL};
    struct log l = {""};
    round_(e, &r, 1, k, NULL, 0, 50, &l);
    assert_string_equal(l.text, "FIRE failed/job/12@50;");
    alert_eval_destroy(e);
}

static void silences(void **state)
{
    struct alert_eval *e = alert_eval_create();
    struct proto_alert_rule r = rule("down", PROTO_AK_NODE_UNREACHABLE, 0);
    struct alert_silence s[2] = {{.id = 1, .until_ms = 1000}, {.id = 2, .until_ms = 5000}};
    snprintf(s[0].rule, sizeof s[0].rule, "down");
    snprintf(s[1].rule, sizeof s[1].rule, "down");
    snprintf(s[1].key, sizeof s[1].key, "gpu02");
    const char *both[] = {"gpu01", "gpu02", NULL};
    struct log l = {""};
    /* the whole rule silenced until 1000, gpu02 until 5000 */
    round_(e, &r, 1, both, s, 2, 500, &l);
    assert_string_equal(l.text, "FIRE down/gpu01 (silenced)@500;FIRE down/gpu02 (silenced)@500;");
    /* a change of an instance that fired silenced stays silent */
    memset(&l, 0, sizeof l);
    round_(e, &r, 1, NULL, s, 2, 2000, &l);
    assert_string_equal(l.text,
                        "RESOLVE down/gpu01 (silenced)@2000;RESOLVE down/gpu02 (silenced)@2000;");
    /* after the rule's silence ended only gpu02 is silenced */
    memset(&l, 0, sizeof l);
    round_(e, &r, 1, both, s, 2, 3000, &l);
    assert_string_equal(l.text, "FIRE down/gpu01@3000;FIRE down/gpu02 (silenced)@3000;");
    assert_true(alert_silence_matches(&s[1], "down", "gpu02", 4999));
    assert_false(alert_silence_matches(&s[1], "down", "gpu02", 5000));
    assert_false(alert_silence_matches(&s[1], "down", "gpu01", 10));
    assert_false(alert_silence_matches(&s[0], "up", "gpu01", 10));
    alert_eval_destroy(e);
}

/* A rule taken out of the policy resolves its instances; a restored one fires on. */
static void removed_rule_resolves_and_restore(void **state)
{
    struct alert_eval *e = alert_eval_create();
    struct proto_alert_rule r = rule("down", PROTO_AK_NODE_UNREACHABLE, 0);
    struct alert_inst old;
    memset(&old, 0, sizeof old);
    snprintf(old.rule, sizeof old.rule, "down");
    snprintf(old.key, sizeof old.key, "gpu09");
    old.fired_ms = old.since_ms = 10;
    old.history_id = 3;
    assert_int_equal(alert_eval_restore(e, &old), 0);
    const char *k[] = {"gpu09", NULL};
    struct log l = {""};
    round_(e, &r, 1, k, NULL, 0, 100, &l);
    assert_string_equal(l.text, ""); /* already firing: no second notification */
    round_(e, &r, 0, k, NULL, 0, 200, &l);
    assert_string_equal(l.text, "RESOLVE down/gpu09@200;");
    alert_eval_destroy(e);
}

static void backoff_schedule(void **state)
{
    assert_int_equal(alert_backoff_ms(0, 1000, 60000), 0);
    assert_int_equal(alert_backoff_ms(1, 1000, 60000), 1000);
    assert_int_equal(alert_backoff_ms(2, 1000, 60000), 2000);
    assert_int_equal(alert_backoff_ms(3, 1000, 60000), 4000);
    assert_int_equal(alert_backoff_ms(6, 1000, 60000), 32000);
    assert_int_equal(alert_backoff_ms(7, 1000, 60000), 60000);
    assert_int_equal(alert_backoff_ms(60, 1000, 60000), 60000); /* no overflow */
    assert_int_equal(alert_backoff_ms(3, 200, 500), 500);
}

static void body_shapes(void **state)
{
    struct alert_inst a;
    memset(&a, 0, sizeof a);
    snprintf(a.rule, sizeof a.rule, "down");
    snprintf(a.key, sizeof a.key, "gpu01");
    snprintf(a.summary, sizeof a.summary, "node gpu01 is unreachable");
    a.severity = PROTO_SEV_MAJOR;
    a.kind = PROTO_AK_NODE_UNREACHABLE;
    a.fired_ms = 100;
    a.history_id = 5;
    json_t *g = alert_body(&a, ALERT_RESOLVED, PROTO_SHAPE_GENERIC, 900);
    assert_string_equal(json_string_value(json_object_get(g, "status")), "resolved");
    json_t *x = json_object_get(g, "alert");
    assert_string_equal(json_string_value(json_object_get(x, "severity")), "major");
    assert_string_equal(json_string_value(json_object_get(x, "kind")), "node_unreachable");
    assert_int_equal(json_integer_value(json_object_get(x, "id")), 5);
    assert_int_equal(json_integer_value(json_object_get(x, "resolved_ms")), 900);
    json_decref(g);
    json_t *s = alert_body(&a, ALERT_FIRED, PROTO_SHAPE_SLACK, 100);
    assert_int_equal(json_object_size(s), 1);
    assert_string_equal(json_string_value(json_object_get(s, "text")),
                        "[major] FIRING down (gpu01): node gpu01 is unreachable");
    json_decref(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fires_once_then_resolves),
        cmocka_unit_test(pending_until_for),
        cmocka_unit_test(event_rules_fire_at_once),
        cmocka_unit_test(silences),
        cmocka_unit_test(removed_rule_resolves_and_restore),
        cmocka_unit_test(backoff_schedule),
        cmocka_unit_test(body_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
