/* test_anchor.c - unit tests of the audit anchor's reader and writer (util/anchor.c): what
 * the writer writes reads back the same; every malformed anchor is refused with a reason
 * (not JSON, an unknown field, a missing or bad id, hash or chain_from). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "util/anchor.h"

#define H64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void round_trip(void **state)
{
    (void)state;
    struct audit_anchor a = {42, H64, 3, 1796556719397LL}, b;
    char why[160];
    char *text = audit_anchor_text(&a);
    assert_non_null(text);
    assert_int_equal(text[strlen(text) - 1], '\n');
    assert_int_equal(audit_anchor_parse(text, strlen(text), &b, why, sizeof(why)), 0);
    assert_int_equal(b.id, a.id);
    assert_string_equal(b.hash, a.hash);
    assert_int_equal(b.chain_from, a.chain_from);
    assert_int_equal(b.time_ms, a.time_ms);
    free(text);
    assert_true(audit_hash_valid(H64));
    assert_false(audit_hash_valid("0123"));
    assert_false(audit_hash_valid(NULL));
}

static void refusals(void **state)
{
    (void)state;
    static const struct {
        const char *text, *why;
    } bad[] = {
        {"nope", "not JSON"},
        {"[1]", "not a JSON object"},
        {"{\"id\":1,\"hash\":\"" H64 "\",\"chain_from\":1,\"x\":1}", "unknown field"},
        {"{\"hash\":\"" H64 "\",\"chain_from\":1}", "id"},
        {"{\"id\":0,\"hash\":\"" H64 "\",\"chain_from\":1}", "id"},
        {"{\"id\":2,\"hash\":\"" H64 "\"}", "chain_from"},
        {"{\"id\":2,\"hash\":\"" H64 "\",\"chain_from\":3}", "chain_from"},
        {"{\"id\":2,\"hash\":\"ABC\",\"chain_from\":1}", "hash"},
        {"{\"id\":2,\"hash\":\"" H64 "\",\"chain_from\":1,\"time_ms\":\"x\"}", "time_ms"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct audit_anchor a;
        char why[160] = "";
        assert_int_equal(audit_anchor_parse(bad[i].text, strlen(bad[i].text), &a, why, sizeof(why)),
                         -22);
        assert_non_null(strstr(why, bad[i].why));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip),
        cmocka_unit_test(refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
