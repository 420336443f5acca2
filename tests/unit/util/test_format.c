/* test_format.c - unit tests of the formatters in util/parse.h: durations, relative
 * times and sizes, including truncation into small buffers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "util/parse.h"

static void dur_is(int64_t ms, const char *want)
{
    char buf[64];

    format_duration(ms, buf, sizeof(buf));
    if (strcmp(buf, want) != 0)
        fail_msg("format_duration(%lld) = '%s'; want '%s'", (long long)ms, buf, want);
}

static void rel_is(int64_t then, int64_t now, const char *want)
{
    char buf[64];

    format_relative(then, now, buf, sizeof(buf));
    if (strcmp(buf, want) != 0)
        fail_msg("format_relative(%lld, %lld) = '%s'; want '%s'", (long long)then, (long long)now,
                 buf, want);
}

static void size_is(int64_t mb, const char *want)
{
    char buf[64];

    format_size_mb(mb, buf, sizeof(buf));
    if (strcmp(buf, want) != 0)
        fail_msg("format_size_mb(%lld) = '%s'; want '%s'", (long long)mb, buf, want);
}

static void duration_zero(void **state)
{
    dur_is(0, "0s");
}

static void duration_single_units(void **state)
{
    dur_is(45000, "45s");
    dur_is(60000, "1m");
    dur_is(3600000, "1h");
    dur_is(86400000, "1d");
}

static void duration_two_largest_units(void **state)
{
    dur_is(5400000, "1h30m");
    dur_is(2 * 86400000LL + 3 * 3600000LL, "2d3h");
    dur_is(2 * 86400000LL + 3 * 3600000LL + 59 * 60000, "2d3h");
    dur_is(61000, "1m1s");
}

static void duration_skips_zero_second_unit(void **state)
{
    dur_is(86400000LL + 5 * 60000, "1d");
}

static void duration_sub_second(void **state)
{
    dur_is(250, "250ms");
    dur_is(1500, "1s");
}

static void duration_negative(void **state)
{
    dur_is(-90000, "-1m30s");
    dur_is(INT64_MIN, "-106751991167d7h");
}

static void duration_large(void **state)
{
    dur_is(INT64_MAX, "106751991167d7h");
    dur_is(30LL * 86400000, "30d");
}

static void duration_truncates_safely(void **state)
{
    char buf[4];

    format_duration(5400000, buf, sizeof(buf));
    assert_string_equal(buf, "1h3");
    format_duration(5400000, buf, 0); /* must not write */
}

static void relative_just_now(void **state)
{
    rel_is(1000000, 1000000, "just now");
    rel_is(1000000, 1004999, "just now");
    rel_is(1004999, 1000000, "just now");
}

static void relative_past(void **state)
{
    rel_is(0, 5000, "5s ago");
    rel_is(0, 3 * 60000 + 59000, "3m ago");
    rel_is(0, 2 * 3600000, "2h ago");
    rel_is(0, 3 * 86400000LL, "3d ago");
}

static void relative_future(void **state)
{
    rel_is(2 * 3600000 + 1000, 1000, "in ~2h");
    rel_is(60000, 0, "in ~1m");
    rel_is(10000, 0, "in ~10s");
}

static void relative_extremes(void **state)
{
    rel_is(INT64_MIN, INT64_MAX, "213503982334d ago");
    rel_is(INT64_MAX, INT64_MIN, "in ~213503982334d");
}

static void size_units(void **state)
{
    size_is(0, "0M");
    size_is(512, "512M");
    size_is(1023, "1023M");
    size_is(1024, "1G");
    size_is(32768, "32G");
    size_is(1048576, "1T");
    size_is(1073741824LL, "1P");
}

static void size_one_decimal(void **state)
{
    size_is(1536, "1.5G");
    size_is(1572864, "1.5T");
    size_is(1280, "1.3G");
}

static void size_rounds_to_whole(void **state)
{
    size_is(1025, "1G");
}

static void size_negative_and_huge(void **state)
{
    size_is(-2048, "-2G");
    size_is(INT64_MAX, "8388608E");
}

static void size_round_trip(void **state)
{
    const int64_t cases[] = {1, 512, 1024, 1536, 32768, 1572864};
    char buf[32];
    int64_t back;
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        format_size_mb(cases[i], buf, sizeof(buf));
        assert_int_equal(parse_size_mb(buf, &back), 0);
        assert_int_equal(back, cases[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(duration_zero),
        cmocka_unit_test(duration_single_units),
        cmocka_unit_test(duration_two_largest_units),
        cmocka_unit_test(duration_skips_zero_second_unit),
        cmocka_unit_test(duration_sub_second),
        cmocka_unit_test(duration_negative),
        cmocka_unit_test(duration_large),
        cmocka_unit_test(duration_truncates_safely),
        cmocka_unit_test(relative_just_now),
        cmocka_unit_test(relative_past),
        cmocka_unit_test(relative_future),
        cmocka_unit_test(relative_extremes),
        cmocka_unit_test(size_units),
        cmocka_unit_test(size_one_decimal),
        cmocka_unit_test(size_rounds_to_whole),
        cmocka_unit_test(size_negative_and_huge),
        cmocka_unit_test(size_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
