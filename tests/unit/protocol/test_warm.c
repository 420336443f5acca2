/* test_warm.c - unit tests of protocol/warm.h: an order and a state read back exactly
 * from their writers; what each reader refuses, naming the field; the node selector of
 * `docket templates warm --nodes` and a template's `warm_on`. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "protocol/warm.h"

static json_t *doc(const char *text)
{
    json_error_t je;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &je);
    if (!j)
        fail_msg("bad test json: %s", je.text);
    return j;
}

static void order_round_trip(void **state)
{
    (void)state;
    struct warm_order o = {.gen = 7, .prepare = "set -e\necho hi", .auth = "{\"auths\": {}}"};
    strcpy(o.tmpl, "torch@3");
    strcpy(o.image, "oci-layout:/shared/images:torch");
    json_t *list = json_pack("[o]", warm_order_json(&o));
    struct warm_order *out;
    size_t n;
    struct proto_error e = {0};
    assert_int_equal(warm_orders_parse(list, &out, &n, &e), 0);
    assert_int_equal(n, 1);
    assert_string_equal(out[0].tmpl, "torch@3");
    assert_int_equal(out[0].gen, 7);
    assert_string_equal(out[0].image, o.image);
    assert_string_equal(out[0].prepare, o.prepare);
    assert_string_equal(out[0].auth, o.auth);
    warm_orders_free(out, n);
    json_decref(list);
    /* neither image nor prepare: both absent */
    list = doc("[{\"template\": \"a@1\", \"gen\": 1, \"image\": null}]");
    assert_int_equal(warm_orders_parse(list, &out, &n, &e), 0);
    assert_string_equal(out[0].image, "");
    assert_null(out[0].prepare);
    assert_null(out[0].auth);
    warm_orders_free(out, n);
    json_decref(list);
}

static void state_round_trip(void **state)
{
    (void)state;
    struct warm_state s = {.gen = 2, .state = WARM_FAILED};
    strcpy(s.tmpl, "box@1");
    strcpy(s.reason, "image oci-layout:/x:y: no manifest has that tag ('y')");
    json_t *list = json_pack("[o]", warm_state_json(&s));
    struct warm_state *out;
    size_t n;
    struct proto_error e = {0};
    assert_int_equal(warm_states_parse(list, &out, &n, &e), 0);
    assert_int_equal(n, 1);
    assert_memory_equal(&out[0], &s, sizeof(s));
    free(out);
    json_decref(list);
    for (int k = WARM_WARMING; k <= WARM_EVICTED; k++) {
        enum warm_state_kind back;
        assert_int_equal(warm_state_kind_parse(warm_state_name(k), &back), 0);
        assert_int_equal(back, k);
    }
}

/* The orders parse refuses text, naming field. */
static void order_refused(const char *text, const char *field)
{
    json_t *j = doc(text);
    struct warm_order *out = (void *)1;
    size_t n = 9;
    struct proto_error e = {0};
    assert_true(warm_orders_parse(j, &out, &n, &e) < 0);
    assert_null(out);
    assert_int_equal(n, 0);
    assert_string_equal(e.field, field);
    json_decref(j);
}

static void state_refused(const char *text, const char *field)
{
    json_t *j = doc(text);
    struct warm_state *out;
    size_t n;
    struct proto_error e = {0};
    assert_true(warm_states_parse(j, &out, &n, &e) < 0);
    assert_null(out);
    assert_string_equal(e.field, field);
    json_decref(j);
}

static void refusals(void **state)
{
    (void)state;
    order_refused("{}", "warm");
    order_refused("[1]", "warm[0]");
    order_refused("[{\"template\": \"a\", \"gen\": 1}]", "warm[0].template");
    order_refused("[{\"template\": \"a/b@1\"}]", "warm[0].template");
    order_refused("[{\"template\": \"a@1\", \"gen\": -1}]", "warm[0].gen");
    order_refused("[{\"template\": \"a@1\", \"image\": \"ftp://x\"}]", "warm[0].image");
    order_refused("[{\"template\": \"a@1\", \"prepare\": 3}]", "warm[0].prepare");
    order_refused("[{\"template\": \"a@1\", \"run\": \"x\"}]", "warm[0].run");
    order_refused("[{\"template\": \"a@1\", \"registry_auth\": {}}]", "warm[0].registry_auth");
    /* a second order bad: the first one's text is not leaked (ASan) */
    order_refused("[{\"template\": \"a@1\", \"prepare\": \"x\"}, {\"template\": \"b\"}]",
                  "warm[1].template");
    char big[8192];
    size_t at = (size_t)snprintf(big, sizeof big, "[");
    for (int i = 0; i <= WARM_MAX; i++)
        at += (size_t)snprintf(big + at, sizeof big - at, "%s{\"template\": \"a@%d\"}",
                               i ? "," : "", i + 1);
    snprintf(big + at, sizeof big - at, "]");
    order_refused(big, "warm");
    state_refused("[{\"template\": \"a@1\", \"state\": \"hot\"}]", "warm[0].state");
    state_refused("[{\"template\": \"a@1\"}]", "warm[0].state");
    state_refused("[{\"template\": \"a@1\", \"state\": \"ready\", \"reason\": 5}]",
                  "warm[0].reason");
}

static void selectors(void **state)
{
    (void)state;
    json_t *labels = doc("{\"zone\": \"a\", \"gpu\": \"h100\"}");
    assert_true(warm_selector_match(NULL, "n1", labels));
    assert_true(warm_selector_match("", "n1", labels));
    assert_true(warm_selector_match("n1", "n1", labels));
    assert_false(warm_selector_match("n2", "n1", labels));
    assert_true(warm_selector_match("n2,n1", "n1", labels));
    assert_true(warm_selector_match("n*", "n1", labels));
    assert_true(warm_selector_match("zone=a", "n1", labels));
    assert_false(warm_selector_match("zone=b", "n1", labels));
    assert_false(warm_selector_match("zone=a,gpu=a100", "n1", labels));
    assert_true(warm_selector_match("zone=a,gpu=h100,n*", "n1", labels));
    assert_false(warm_selector_match("zone=a,x*", "n1", labels));
    assert_false(warm_selector_match("rack=1", "n1", labels)); /* a label it lacks */
    json_decref(labels);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(order_round_trip),
        cmocka_unit_test(state_round_trip),
        cmocka_unit_test(refusals),
        cmocka_unit_test(selectors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
