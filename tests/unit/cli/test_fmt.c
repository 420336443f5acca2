/* test_fmt.c - unit tests of what docket prints for people (src/cli/fmt.c): aligned
 * tables shrunk to the terminal, colour only when asked, relative times and sizes. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <unistd.h>

#include "cli/fmt.h"

/* Render t into a string (caller frees). */
static char *render(const struct table *t, int width, bool color)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    assert_non_null(f);
    table_print(t, f, width, color);
    fclose(f);
    return buf;
}

static struct table *sample(void)
{
    static const char *const h[] = {"ID", "NAME", "STATE"};
    struct table *t = table_create(h, 3);

    assert_non_null(t);
    table_set_flags(t, 0, TABLE_RIGHT);
    table_set_flags(t, 1, TABLE_FLEX);
    table_row(t);
    table_cell(t, FMT_PLAIN, "%d", 7);
    table_cell(t, FMT_PLAIN, "%s", "resnet-training-run");
    table_cell(t, FMT_GREEN, "%s", "RUNNING");
    table_row(t);
    table_cell(t, FMT_PLAIN, "%d", 1234);
    table_cell(t, FMT_PLAIN, "%s", "bert");
    table_cell(t, FMT_YELLOW, "%s", "PENDING");
    return t;
}

static void columns_align(void **state)
{
    struct table *t = sample();
    char *out = render(t, 0, false);

    assert_string_equal(out, "  ID  NAME                 STATE\n"
                             "   7  resnet-training-run  RUNNING\n"
                             "1234  bert                 PENDING\n");
    free(out);
    table_destroy(t);
}

static void flexible_column_shrinks_to_width(void **state)
{
    struct table *t = sample();
    char *out = render(t, 26, false);

    assert_string_equal(out, "  ID  NAME         STATE\n"
                             "   7  resnet-tra…  RUNNING\n"
                             "1234  bert         PENDING\n");
    free(out);
    table_destroy(t);
}

static void never_below_header_or_eight(void **state)
{
    struct table *t = sample();
    char *out = render(t, 5, false);

    assert_non_null(strstr(out, "resnet-…")); /* 8 columns kept */
    free(out);
    table_destroy(t);
}

static void colour_only_when_asked(void **state)
{
    struct table *t = sample();
    char *plain = render(t, 0, false), *col = render(t, 0, true);

    assert_null(strchr(plain, '\033'));
    assert_non_null(strstr(col, "\033[32mRUNNING"));
    assert_non_null(strstr(col, "\033[1m"));
    free(plain);
    free(col);
    table_destroy(t);
}

static void control_characters_cannot_break_rows(void **state)
{
    static const char *const h[] = {"A"};
    struct table *t = table_create(h, 1);
    char *out;

    table_row(t);
    table_cell(t, FMT_PLAIN, "%s", "evil\nrow\033[2J");
    out = render(t, 0, false);
    assert_string_equal(out, "A\nevil\\nrow\\x1b[2J\n");
    free(out);
    table_destroy(t);
}

static void expect_safe(const char *in, bool keep_lines, const char *want)
{
    char *got = fmt_safe(in, keep_lines);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

/* issue 33 #11: what users and jobs chose never reaches the terminal raw */
static void unsafe_strings_are_escaped(void **state)
{
    (void)state;
    /* plain text, UTF-8 included, is left alone */
    expect_safe("train-résumé ✓ 日本", false, "train-résumé ✓ 日本");
    /* C0 controls and DEL: OSC 52 (clipboard), a title, a clear screen, a bell, CR */
    expect_safe("\033]52;c;ZXZpbA==\007", true, "\\x1b]52;c;ZXZpbA==\\x07");
    expect_safe("ok\rFAILED\x7f", true, "ok\\x0dFAILED\\x7f");
    /* lines kept or escaped */
    expect_safe("a\n\tb", true, "a\n\tb");
    expect_safe("a\n\tb", false, "a\\n\\tb");
    /* C1 CSI (U+009B) and a right-to-left override */
    expect_safe("x\xc2\x9b\x32Jy", true, "x\\u009b2Jy");
    expect_safe("\xe2\x80\xaetxt.exe", true, "\\u202etxt.exe");
    /* bytes that are not UTF-8: a lone CSI byte, a stray continuation, an overlong
     * slash, a surrogate, a sequence cut short */
    expect_safe("\x9b\x32J", true, "\\x9b2J");
    expect_safe("\xc0\xaf", true, "\\xc0\\xaf");
    expect_safe("\xed\xa0\x80", true, "\\xed\\xa0\\x80");
    expect_safe("\xe2\x82", true, "\\xe2\\x82");
    expect_safe("\xf4\x90\x80\x80", true, "\\xf4\\x90\\x80\\x80");
    expect_safe("", true, "");
}

static void missing_and_extra_cells(void **state)
{
    static const char *const h[] = {"A", "B"};
    struct table *t = table_create(h, 2);
    char *out;

    table_row(t);
    table_cell(t, FMT_PLAIN, "x");
    table_row(t);
    table_cell(t, FMT_PLAIN, "1");
    table_cell(t, FMT_PLAIN, "2");
    table_cell(t, FMT_PLAIN, "dropped");
    out = render(t, 0, false);
    assert_string_equal(out, "A  B\nx  \n1  2\n");
    assert_int_equal(table_rows(t), 2);
    free(out);
    table_destroy(t);
}

static void many_rows_grow(void **state)
{
    static const char *const h[] = {"N"};
    struct table *t = table_create(h, 1);
    char *out;

    for (int i = 0; i < 1000; i++) {
        assert_int_equal(table_row(t), 0);
        table_cell(t, FMT_PLAIN, "%d", i);
    }
    out = render(t, 0, false);
    assert_non_null(strstr(out, "\n999\n"));
    free(out);
    table_destroy(t);
}

static void utf8_width(void **state)
{
    assert_int_equal(fmt_width("abc"), 3);
    assert_int_equal(fmt_width("normal→high"), 11);
    assert_int_equal(fmt_width("…"), 1);
    assert_int_equal(fmt_width(""), 0);
}

static void no_color_respected(void **state)
{
    setenv("NO_COLOR", "1", 1);
    assert_false(fmt_use_color(1));
    unsetenv("NO_COLOR");
    setenv("TERM", "dumb", 1);
    assert_false(fmt_use_color(1));
    /* the test's stdout is a pipe or a file under meson: never coloured */
    setenv("TERM", "xterm", 1);
    if (!isatty(1))
        assert_false(fmt_use_color(1));
}

static void state_colours(void **state)
{
    assert_int_equal(fmt_state_color("RUNNING"), FMT_GREEN);
    assert_int_equal(fmt_state_color("FAILED"), FMT_RED);
    assert_int_equal(fmt_state_color("PENDING"), FMT_YELLOW);
    assert_int_equal(fmt_state_color("whatever"), FMT_PLAIN);
    assert_int_equal(fmt_state_color(NULL), FMT_PLAIN);
}

static void times_and_sizes(void **state)
{
    char buf[32];
    int64_t now = 1700000000000;

    fmt_when(now - 3 * 60000, now, buf, sizeof(buf));
    assert_string_equal(buf, "3m ago");
    fmt_when(now + 2 * 3600000, now, buf, sizeof(buf));
    assert_string_equal(buf, "in ~2h");
    fmt_when(0, now, buf, sizeof(buf));
    assert_string_equal(buf, "-");
    fmt_duration(5400000, buf, sizeof(buf));
    assert_string_equal(buf, "1h30m");
    fmt_duration(-1, buf, sizeof(buf));
    assert_string_equal(buf, "-");
    fmt_size(65536, buf, sizeof(buf));
    assert_string_equal(buf, "64G");
    fmt_size(0, buf, sizeof(buf));
    assert_string_equal(buf, "-");
}

static void term_width_from_columns(void **state)
{
    setenv("COLUMNS", "132", 1);
    if (!isatty(5))
        assert_int_equal(fmt_term_width(5), 132);
    setenv("COLUMNS", "junk", 1);
    if (!isatty(5))
        assert_int_equal(fmt_term_width(5), 0);
    unsetenv("COLUMNS");
}

/* sparklines: Unicode blocks or ASCII levels scaled to max, unknown values blank; cut to
 * the buffer; no UTF-8 drawing off a terminal or with TERM=dumb */
static void sparklines(void **state)
{
    (void)state;
    double v[] = {0, 50, 100, -1, 200};
    char b[64];
    fmt_spark(v, 5, 100, false, b, sizeof(b));
    assert_string_equal(b, "_+@ @");
    fmt_spark(v, 3, 100, true, b, sizeof(b));
    assert_string_equal(b, "\u2581\u2585\u2588");
    fmt_spark(v, 3, 100, true, b, 7); /* room for two blocks of 3 bytes */
    assert_string_equal(b, "\u2581\u2585");
    fmt_spark(v, 2, 0, false, b, sizeof(b)); /* no scale: the lowest level */
    assert_string_equal(b, "__");
    setenv("TERM", "dumb", 1);
    setenv("LANG", "en_US.UTF-8", 1);
    assert_false(fmt_use_utf8(STDOUT_FILENO));
    setenv("TERM", "xterm", 1);
    assert_false(fmt_use_utf8(-1)); /* not a terminal */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(columns_align),
        cmocka_unit_test(flexible_column_shrinks_to_width),
        cmocka_unit_test(never_below_header_or_eight),
        cmocka_unit_test(colour_only_when_asked),
        cmocka_unit_test(control_characters_cannot_break_rows),
        cmocka_unit_test(unsafe_strings_are_escaped),
        cmocka_unit_test(missing_and_extra_cells),
        cmocka_unit_test(many_rows_grow),
        cmocka_unit_test(utf8_width),
        cmocka_unit_test(no_color_respected),
        cmocka_unit_test(state_colours),
        cmocka_unit_test(times_and_sizes),
        cmocka_unit_test(term_width_from_columns),
        cmocka_unit_test(sparklines),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
