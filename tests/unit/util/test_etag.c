/* test_etag.c - unit tests of util/etag.h: a tag written is matched by an If-None-Match
 * that names it (alone, in a list, weak or strong, or "*"), any change of epoch, version
 * or salt is a different tag, and malformed headers match nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "util/etag.h"

static void written_then_matched(void **state)
{
    char t[ETAG_TEXTLEN], hdr[3 * ETAG_TEXTLEN];
    (void)state;
    etag_format(t, sizeof(t), 0x1234, 7, 0xabc);
    assert_string_equal(t, "W/\"1234-7-abc\"");
    assert_true(etag_match(t, t));
    assert_true(etag_match("\"1234-7-abc\"", t)); /* weak comparison: W/ ignored */
    snprintf(hdr, sizeof(hdr), "\"x\", W/\"y\" ,%s", t);
    assert_true(etag_match(hdr, t));
    assert_true(etag_match("*", t));
    assert_true(etag_match(" * ", t));
}

static void any_change_is_another_tag(void **state)
{
    char t[ETAG_TEXTLEN], u[ETAG_TEXTLEN];
    (void)state;
    etag_format(t, sizeof(t), 1, 2, 3);
    etag_format(u, sizeof(u), 1, 3, 3); /* a change */
    assert_false(etag_match(t, u));
    etag_format(u, sizeof(u), 2, 2, 3); /* a restart */
    assert_false(etag_match(t, u));
    etag_format(u, sizeof(u), 1, 2, 4); /* another viewer or query */
    assert_false(etag_match(t, u));
    etag_format(u, sizeof(u), UINT64_MAX, UINT64_MAX, UINT64_MAX);
    assert_true(strlen(u) < ETAG_TEXTLEN);
}

static void malformed_matches_nothing(void **state)
{
    char t[ETAG_TEXTLEN];
    static char big[ETAG_HEADER_MAX + 64];
    (void)state;
    etag_format(t, sizeof(t), 1, 2, 3);
    assert_false(etag_match(NULL, t));
    assert_false(etag_match("", t));
    assert_false(etag_match("W/", t));
    assert_false(etag_match("\"1-2-3", t));        /* unterminated */
    assert_false(etag_match("1-2-3", t));          /* unquoted */
    assert_false(etag_match("\"1-2-3\"x", t));     /* junk after the tag */
    assert_false(etag_match("bad, \"1-2-3\"", t)); /* a bad item ends the list */
    assert_false(etag_match("*x", t));
    assert_false(etag_match("\"1-2-3\"", "no tag"));
    memset(big, ' ', sizeof(big) - 1); /* too long to read: no 304 */
    memcpy(big + sizeof(big) - 1 - strlen(t), t, strlen(t));
    assert_false(etag_match(big, t));
}

static void salt_separates_fields(void **state)
{
    (void)state;
    uint64_t a = etag_hash(etag_hash(ETAG_HASH_SEED, "ab"), "c");
    uint64_t b = etag_hash(etag_hash(ETAG_HASH_SEED, "a"), "bc");
    assert_true(a != b);
    assert_true(etag_hash(ETAG_HASH_SEED, NULL) == etag_hash(ETAG_HASH_SEED, ""));
    assert_true(etag_hash(ETAG_HASH_SEED, "alice") != etag_hash(ETAG_HASH_SEED, "bob"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(written_then_matched),
        cmocka_unit_test(any_change_is_another_tag),
        cmocka_unit_test(malformed_matches_nothing),
        cmocka_unit_test(salt_separates_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
