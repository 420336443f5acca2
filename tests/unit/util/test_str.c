/* test_str.c - unit tests of util/str.h: copies, prefixes, trimming, names. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "util/host.h"
#include "util/str.h"

static void copy_fits(void **state)
{
    char buf[8];

    assert_int_equal(str_copy(buf, sizeof(buf), "abc"), 0);
    assert_string_equal(buf, "abc");
}

static void copy_exactly_full(void **state)
{
    char buf[4];

    assert_int_equal(str_copy(buf, sizeof(buf), "abc"), 0);
    assert_string_equal(buf, "abc");
}

static void copy_truncates_and_reports(void **state)
{
    char buf[4];

    assert_int_equal(str_copy(buf, sizeof(buf), "abcd"), -ENAMETOOLONG);
    assert_string_equal(buf, "abc");
}

static void copy_into_zero_length(void **state)
{
    char buf[1] = {'x'};

    assert_int_equal(str_copy(buf, 0, "a"), -ENAMETOOLONG);
    assert_int_equal(buf[0], 'x');
}

static void copy_empty(void **state)
{
    char buf[1] = {'x'};

    assert_int_equal(str_copy(buf, 1, ""), 0);
    assert_string_equal(buf, "");
}

static void prefix(void **state)
{
    assert_true(str_has_prefix("docket", "dock"));
    assert_true(str_has_prefix("docket", ""));
    assert_false(str_has_prefix("dock", "docket"));
    assert_false(str_has_prefix("docket", "ket"));
}

static void suffix(void **state)
{
    assert_true(str_has_suffix("file.yaml", ".yaml"));
    assert_true(str_has_suffix("x", ""));
    assert_false(str_has_suffix("yaml", "file.yaml"));
    assert_false(str_has_suffix("file.yml", ".yaml"));
}

static void trim_both_ends(void **state)
{
    char s[] = " \t a b \r\n";

    assert_string_equal(str_trim(s), "a b");
}

static void trim_all_blank(void **state)
{
    char s[] = " \n\t ";

    assert_string_equal(str_trim(s), "");
}

static void trim_nothing(void **state)
{
    char s[] = "ab";

    assert_ptr_equal(str_trim(s), s);
    assert_string_equal(s, "ab");
}

/* Where plain HTTP may go: this machine only (util/host.h). */
static void loopback_hosts(void **state)
{
    assert_true(host_is_loopback("localhost"));
    assert_true(host_is_loopback("127.0.0.1"));
    assert_true(host_is_loopback("127.8.9.10"));
    assert_true(host_is_loopback("::1"));
    assert_true(host_is_loopback("::ffff:127.0.0.1"));
    assert_false(host_is_loopback("0.0.0.0"));
    assert_false(host_is_loopback("::"));
    assert_false(host_is_loopback("10.0.0.1"));
    assert_false(host_is_loopback("128.0.0.1"));
    assert_false(host_is_loopback("::ffff:10.0.0.1"));
    assert_false(host_is_loopback("localhost.example.org"));
    assert_false(host_is_loopback(""));
}

static void name_valid(void **state)
{
    assert_true(str_is_name("gpu03"));
    assert_true(str_is_name("H100-80GB"));
    assert_true(str_is_name("a.b_c-d"));
    assert_true(str_is_name("9"));
}

static void name_invalid(void **state)
{
    assert_false(str_is_name(""));
    assert_false(str_is_name("-a"));
    assert_false(str_is_name(".a"));
    assert_false(str_is_name("a b"));
    assert_false(str_is_name("a/b"));
    assert_false(str_is_name("a=b"));
    assert_false(str_is_name("caf\xc3\xa9"));
}

static void name_length_limit(void **state)
{
    char s[65];

    memset(s, 'a', 63);
    s[63] = '\0';
    assert_true(str_is_name(s));
    s[63] = 'a';
    s[64] = '\0';
    assert_false(str_is_name(s));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(loopback_hosts),
        cmocka_unit_test(copy_fits),
        cmocka_unit_test(copy_exactly_full),
        cmocka_unit_test(copy_truncates_and_reports),
        cmocka_unit_test(copy_into_zero_length),
        cmocka_unit_test(copy_empty),
        cmocka_unit_test(prefix),
        cmocka_unit_test(suffix),
        cmocka_unit_test(trim_both_ends),
        cmocka_unit_test(trim_all_blank),
        cmocka_unit_test(trim_nothing),
        cmocka_unit_test(name_valid),
        cmocka_unit_test(name_invalid),
        cmocka_unit_test(name_length_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
