/* test_parse_num.c - unit tests of util/parse.h: integers, booleans, durations, sizes,
 * signals. Each failure names the input and both values. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "util/parse.h"

#define SENTINEL 0x5a5a5a5a

static void dur_ok(const char *s, int64_t want)
{
    int64_t v = SENTINEL;
    int rc = parse_duration_ms(s, &v);

    if (rc != 0 || v != want)
        fail_msg("parse_duration_ms(\"%s\") = %d, %lld; want 0, %lld", s, rc, (long long)v,
                 (long long)want);
}

static void dur_bad(const char *s, int want_rc)
{
    int64_t v = SENTINEL;
    int rc = parse_duration_ms(s, &v);

    if (rc != want_rc || v != SENTINEL)
        fail_msg("parse_duration_ms(\"%s\") = %d (out %lld); want %d, out untouched", s, rc,
                 (long long)v, want_rc);
}

static void size_ok(const char *s, int64_t want)
{
    int64_t v = SENTINEL;
    int rc = parse_size_mb(s, &v);

    if (rc != 0 || v != want)
        fail_msg("parse_size_mb(\"%s\") = %d, %lld; want 0, %lld", s, rc, (long long)v,
                 (long long)want);
}

static void size_bad(const char *s, int want_rc)
{
    int64_t v = SENTINEL;
    int rc = parse_size_mb(s, &v);

    if (rc != want_rc || v != SENTINEL)
        fail_msg("parse_size_mb(\"%s\") = %d (out %lld); want %d, out untouched", s, rc,
                 (long long)v, want_rc);
}

static void i64_bad(const char *s, int64_t min, int64_t max, int want_rc)
{
    int64_t v = SENTINEL;
    int rc = parse_int64(s, min, max, &v);

    if (rc != want_rc || v != SENTINEL)
        fail_msg("parse_int64(\"%s\") = %d (out %lld); want %d", s, rc, (long long)v, want_rc);
}

static void sig_ok(const char *s, int want)
{
    int v = -1;
    int rc = parse_signal(s, &v);

    if (rc != 0 || v != want)
        fail_msg("parse_signal(\"%s\") = %d, %d; want 0, %d", s, rc, v, want);
}

static void sig_bad(const char *s, int want_rc)
{
    int v = -1;
    int rc = parse_signal(s, &v);

    if (rc != want_rc || v != -1)
        fail_msg("parse_signal(\"%s\") = %d (out %d); want %d", s, rc, v, want_rc);
}

/* ---- integers ---- */

static void int64_plain(void **state)
{
    int64_t v;

    assert_int_equal(parse_int64("42", 0, 100, &v), 0);
    assert_int_equal(v, 42);
}

static void int64_negative_and_plus(void **state)
{
    int64_t v;

    assert_int_equal(parse_int64("-7", -10, 10, &v), 0);
    assert_int_equal(v, -7);
    assert_int_equal(parse_int64("+7", -10, 10, &v), 0);
    assert_int_equal(v, 7);
}

static void int64_extremes(void **state)
{
    int64_t v;

    assert_int_equal(parse_int64("9223372036854775807", INT64_MIN, INT64_MAX, &v), 0);
    assert_true(v == INT64_MAX);
    assert_int_equal(parse_int64("-9223372036854775808", INT64_MIN, INT64_MAX, &v), 0);
    assert_true(v == INT64_MIN);
}

static void int64_overflow(void **state)
{
    i64_bad("9223372036854775808", INT64_MIN, INT64_MAX, -ERANGE);
    i64_bad("-9223372036854775809", INT64_MIN, INT64_MAX, -ERANGE);
    i64_bad("99999999999999999999999999", INT64_MIN, INT64_MAX, -ERANGE);
    i64_bad("-9223372036854775808", -5, 5, -ERANGE);
}

static void int64_out_of_bounds(void **state)
{
    i64_bad("101", 0, 100, -ERANGE);
    i64_bad("-1", 0, 100, -ERANGE);
}

static void int64_syntax(void **state)
{
    i64_bad("", 0, 100, -EINVAL);
    i64_bad("-", 0, 100, -EINVAL);
    i64_bad("+", 0, 100, -EINVAL);
    i64_bad(" 5", 0, 100, -EINVAL);
    i64_bad("5 ", 0, 100, -EINVAL);
    i64_bad("5x", 0, 100, -EINVAL);
    i64_bad("0x10", 0, 100, -EINVAL);
    i64_bad("1e3", 0, 10000, -EINVAL);
    i64_bad("1.0", 0, 100, -EINVAL);
    i64_bad("--5", -10, 100, -EINVAL);
    i64_bad("99999999999999999999x", 0, 100, -EINVAL);
}

static void int_bounds(void **state)
{
    int v = SENTINEL;

    assert_int_equal(parse_int("2147483647", INT32_MIN, INT32_MAX, &v), 0);
    assert_int_equal(v, 2147483647);
    assert_int_equal(parse_int("2147483648", INT32_MIN, INT32_MAX, &v), -ERANGE);
    assert_int_equal(v, 2147483647);
    assert_int_equal(parse_int("-2147483648", INT32_MIN, INT32_MAX, &v), 0);
    assert_int_equal(v, INT32_MIN);
}

static void bool_words(void **state)
{
    const char *yes[] = {"true", "TRUE", "yes", "Yes", "on", "1"};
    const char *no[] = {"false", "False", "no", "NO", "off", "0"};
    bool v;
    size_t i;

    for (i = 0; i < 6; i++) {
        v = false;
        assert_int_equal(parse_bool(yes[i], &v), 0);
        assert_true(v);
        v = true;
        assert_int_equal(parse_bool(no[i], &v), 0);
        assert_false(v);
    }
}

static void bool_bad(void **state)
{
    bool v = true;

    assert_int_equal(parse_bool("", &v), -EINVAL);
    assert_int_equal(parse_bool("2", &v), -EINVAL);
    assert_int_equal(parse_bool("truex", &v), -EINVAL);
    assert_int_equal(parse_bool(" yes", &v), -EINVAL);
    assert_int_equal(parse_bool("y", &v), -EINVAL);
    assert_true(v);
}

/* ---- durations ---- */

static void duration_every_unit(void **state)
{
    dur_ok("250ms", 250);
    dur_ok("90s", 90000);
    dur_ok("15m", 900000);
    dur_ok("4h", 14400000);
    dur_ok("7d", 604800000);
    dur_ok("1w", 604800000);
}

static void duration_bare_integer_is_seconds(void **state)
{
    dur_ok("120", 120000);
    dur_ok("0", 0);
}

static void duration_zero_with_unit(void **state)
{
    dur_ok("0s", 0);
    dur_ok("0ms", 0);
}

static void duration_compound(void **state)
{
    dur_ok("1h30m", 5400000);
    dur_ok("2d3h", 2 * 86400000LL + 3 * 3600000LL);
    dur_ok("1w2d3h4m5s6ms", 9 * 86400000LL + 3 * 3600000LL + 4 * 60000 + 5000 + 6);
    dur_ok("1m500ms", 60500);
}

static void duration_order_and_repeats_refused(void **state)
{
    dur_bad("30m1h", -EINVAL);
    dur_bad("1h1h", -EINVAL);
    dur_bad("1s1m", -EINVAL);
}

static void duration_negative(void **state)
{
    dur_bad("-5s", -ERANGE);
    dur_bad("-5", -ERANGE);
    dur_bad("-", -EINVAL);
}

static void duration_syntax(void **state)
{
    dur_bad("", -EINVAL);
    dur_bad("s", -EINVAL);
    dur_bad("5x", -EINVAL);
    dur_bad("5 s", -EINVAL);
    dur_bad(" 5s", -EINVAL);
    dur_bad("5s ", -EINVAL);
    dur_bad("1h30", -EINVAL);
    dur_bad("1.5h", -EINVAL);
    dur_bad("5S", -EINVAL);
    dur_bad("5sec", -EINVAL);
    dur_bad("+5s", -EINVAL);
    dur_bad("5mss", -EINVAL);
}

static void duration_overflow(void **state)
{
    dur_ok("9223372036854775ms", 9223372036854775LL);
    dur_ok("9223372036854775", 9223372036854775000LL);
    dur_bad("9223372036854776", -ERANGE);
    dur_bad("9223372036854775808ms", -ERANGE);
    dur_bad("99999999999999999999w", -ERANGE);
    dur_ok("15250284452w", 15250284452LL * 604800000LL);
    dur_bad("15250284453w", -ERANGE);
    dur_bad("15250284451w9999999999d", -ERANGE);
}

/* ---- sizes ---- */

static void size_every_unit(void **state)
{
    size_ok("1024K", 1);
    size_ok("512M", 512);
    size_ok("32G", 32768);
    size_ok("1T", 1048576);
}

static void size_bare_integer_is_mib(void **state)
{
    size_ok("64", 64);
    size_ok("0", 0);
}

static void size_case_and_suffixes(void **state)
{
    size_ok("32g", 32768);
    size_ok("32GB", 32768);
    size_ok("32GiB", 32768);
    size_ok("32gib", 32768);
    size_ok("512mb", 512);
    size_ok("2048KiB", 2);
}

static void size_bytes(void **state)
{
    size_ok("1048576B", 1);
    size_ok("1b", 1);
    size_ok("0B", 0);
}

static void size_decimals(void **state)
{
    size_ok("1.5G", 1536);
    size_ok("1.5T", 1572864);
    size_ok("0.5M", 1);
    size_ok("2.25G", 2304);
    size_ok("0.001G", 2); /* 1.024 MiB rounds up */
}

static void size_rounds_up(void **state)
{
    size_ok("1K", 1);
    size_ok("1025K", 2);
    size_ok("1048577B", 2);
    size_ok("1.1", 2);
}

static void size_negative(void **state)
{
    size_bad("-1G", -ERANGE);
    size_bad("-1", -ERANGE);
}

static void size_syntax(void **state)
{
    size_bad("", -EINVAL);
    size_bad("G", -EINVAL);
    size_bad(".5G", -EINVAL);
    size_bad("1.G", -EINVAL);
    size_bad("1..5G", -EINVAL);
    size_bad("1GG", -EINVAL);
    size_bad("1P", -EINVAL);
    size_bad("1Gi", -EINVAL);
    size_bad("1 G", -EINVAL);
    size_bad("1G ", -EINVAL);
    size_bad("+1G", -EINVAL);
    size_bad("1iB", -EINVAL);
    size_bad("1.0000000001G", -EINVAL);
}

static void size_overflow(void **state)
{
    size_ok("9223372036854775807", INT64_MAX);
    size_bad("9223372036854775808", -ERANGE);
    size_bad("8796093022208T", -ERANGE); /* 2^43 TiB = 2^63 MiB */
    size_ok("8796093022207T", 8796093022207LL * 1048576);
    size_bad("9223372036854775807.5T", -ERANGE);
    size_bad("99999999999999999999999G", -ERANGE);
}

/* ---- signals ---- */

static void signal_names(void **state)
{
    sig_ok("TERM", SIGTERM);
    sig_ok("SIGTERM", SIGTERM);
    sig_ok("USR1", SIGUSR1);
    sig_ok("SIGUSR2", SIGUSR2);
    sig_ok("KILL", SIGKILL);
    sig_ok("HUP", SIGHUP);
    sig_ok("INT", SIGINT);
    sig_ok("CONT", SIGCONT);
    sig_ok("sigterm", SIGTERM);
}

static void signal_numbers(void **state)
{
    sig_ok("15", 15);
    sig_ok("1", 1);
    sig_ok("64", 64);
}

static void signal_bad(void **state)
{
    sig_bad("", -EINVAL);
    sig_bad("SIG", -EINVAL);
    sig_bad("TERMX", -EINVAL);
    sig_bad("SIGSIGTERM", -EINVAL);
    sig_bad("SIG15", -EINVAL);
    sig_bad("-15", -EINVAL);
    sig_bad(" TERM", -EINVAL);
    sig_bad("0", -ERANGE);
    sig_bad("65", -ERANGE);
    sig_bad("99999999999999999999", -ERANGE);
    sig_bad("15x", -EINVAL);
}

static void signal_name_round_trip(void **state)
{
    int sig;

    assert_string_equal(signal_name(SIGTERM), "SIGTERM");
    assert_string_equal(signal_name(SIGUSR1), "SIGUSR1");
    assert_string_equal(signal_name(SIGKILL), "SIGKILL");
    for (sig = 1; sig < 32; sig++) {
        int back = -1;
        if (signal_name(sig)[3] == '?')
            continue;
        assert_int_equal(parse_signal(signal_name(sig), &back), 0);
        assert_int_equal(back, sig);
    }
}

static void signal_name_unknown(void **state)
{
    assert_string_equal(signal_name(0), "SIG?");
    assert_string_equal(signal_name(-1), "SIG?");
    assert_string_equal(signal_name(99), "SIG?");
    assert_string_equal(signal_name(40), "SIG?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(int64_plain),
        cmocka_unit_test(int64_negative_and_plus),
        cmocka_unit_test(int64_extremes),
        cmocka_unit_test(int64_overflow),
        cmocka_unit_test(int64_out_of_bounds),
        cmocka_unit_test(int64_syntax),
        cmocka_unit_test(int_bounds),
        cmocka_unit_test(bool_words),
        cmocka_unit_test(bool_bad),
        cmocka_unit_test(duration_every_unit),
        cmocka_unit_test(duration_bare_integer_is_seconds),
        cmocka_unit_test(duration_zero_with_unit),
        cmocka_unit_test(duration_compound),
        cmocka_unit_test(duration_order_and_repeats_refused),
        cmocka_unit_test(duration_negative),
        cmocka_unit_test(duration_syntax),
        cmocka_unit_test(duration_overflow),
        cmocka_unit_test(size_every_unit),
        cmocka_unit_test(size_bare_integer_is_mib),
        cmocka_unit_test(size_case_and_suffixes),
        cmocka_unit_test(size_bytes),
        cmocka_unit_test(size_decimals),
        cmocka_unit_test(size_rounds_up),
        cmocka_unit_test(size_negative),
        cmocka_unit_test(size_syntax),
        cmocka_unit_test(size_overflow),
        cmocka_unit_test(signal_names),
        cmocka_unit_test(signal_numbers),
        cmocka_unit_test(signal_bad),
        cmocka_unit_test(signal_name_round_trip),
        cmocka_unit_test(signal_name_unknown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
