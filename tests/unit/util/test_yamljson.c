/* test_yamljson.c - unit tests of util/yamljson.h: scalar typing, nesting, what is
 * refused (aliases, tags, duplicates, depth, size) and that errors carry a line. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "util/yamljson.h"

static json_t *parse(const char *text, char *err, size_t errlen)
{
    return yaml_to_json(text, strlen(text), err, errlen);
}

/* Parses text and compares with the JSON `want` (compact, keys in document order). */
static void yaml_is(const char *text, const char *want)
{
    char err[256] = "";
    json_t *v = parse(text, err, sizeof(err));
    char *got;

    if (!v)
        fail_msg("yaml '%s' refused: %s; want %s", text, err, want);
    got = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
    json_decref(v);
    if (!got || strcmp(got, want) != 0) {
        print_error("yaml '%s' -> %s; want %s\n", text, got ? got : "(null)", want);
        free(got);
        fail();
    }
    free(got);
}

/* Parses text, expects a refusal whose message starts with `prefix` and holds `part`. */
static void yaml_refused(const char *text, const char *prefix, const char *part)
{
    char err[256] = "";
    json_t *v = parse(text, err, sizeof(err));

    if (v) {
        json_decref(v);
        fail_msg("yaml '%s' accepted; want error '%s...%s'", text, prefix, part);
    }
    if (strncmp(err, prefix, strlen(prefix)) != 0 || !strstr(err, part))
        fail_msg("yaml '%s' error '%s'; want '%s...%s'", text, err, prefix, part);
}

static void plain_integers(void **state)
{
    yaml_is("a: 42", "{\"a\":42}");
    yaml_is("a: -7", "{\"a\":-7}");
    yaml_is("a: +7", "{\"a\":7}");
    yaml_is("a: 0", "{\"a\":0}");
    yaml_is("a: 9223372036854775807", "{\"a\":9223372036854775807}");
}

static void plain_floats(void **state)
{
    yaml_is("a: 1.5", "{\"a\":1.5}");
    yaml_is("a: -0.25", "{\"a\":-0.25}");
    yaml_is("a: 1e3", "{\"a\":1000.0}");
    yaml_is("a: .5", "{\"a\":0.5}");
}

static void plain_booleans_and_null(void **state)
{
    yaml_is("a: true\nb: false\nc: True\nd: FALSE",
            "{\"a\":true,\"b\":false,\"c\":true,\"d\":false}");
    yaml_is("a: null\nb: ~\nc:\nd: NULL", "{\"a\":null,\"b\":null,\"c\":null,\"d\":null}");
}

static void plain_other_words_are_strings(void **state)
{
    yaml_is("a: yes\nb: no\nc: on", "{\"a\":\"yes\",\"b\":\"no\",\"c\":\"on\"}");
    yaml_is("a: 90s\nb: 64G\nc: 8xH100-80GB",
            "{\"a\":\"90s\",\"b\":\"64G\",\"c\":\"8xH100-80GB\"}");
    yaml_is("a: 0x1F\nb: .inf\nc: 1.2.3", "{\"a\":\"0x1F\",\"b\":\".inf\",\"c\":\"1.2.3\"}");
    yaml_is("a: hello world", "{\"a\":\"hello world\"}");
}

static void leading_zeros_stay_strings(void **state)
{
    yaml_is("a: 007\nb: 0700\nc: 00.5", "{\"a\":\"007\",\"b\":\"0700\",\"c\":\"00.5\"}");
}

static void quoted_scalars_are_strings(void **state)
{
    yaml_is("a: \"42\"\nb: '1.5'\nc: \"true\"\nd: 'null'\ne: \"\"",
            "{\"a\":\"42\",\"b\":\"1.5\",\"c\":\"true\",\"d\":\"null\",\"e\":\"\"}");
}

static void block_scalars_are_strings(void **state)
{
    yaml_is("a: |\n  42\n", "{\"a\":\"42\\n\"}");
    yaml_is("a: >\n  x\n  y\n", "{\"a\":\"x y\\n\"}");
}

static void str_tag_forces_string(void **state)
{
    yaml_is("a: !!str 42", "{\"a\":\"42\"}");
}

static void keys_are_strings(void **state)
{
    yaml_is("1: a\ntrue: b\nnull: c", "{\"1\":\"a\",\"true\":\"b\",\"null\":\"c\"}");
}

static void nested_maps_and_lists(void **state)
{
    yaml_is("cluster:\n  nodes:\n    - name: gpu03\n      gpus: 8\n    - name: gpu04\n"
            "  tiers: [critical, high]\n",
            "{\"cluster\":{\"nodes\":[{\"name\":\"gpu03\",\"gpus\":8},{\"name\":\"gpu04\"}],"
            "\"tiers\":[\"critical\",\"high\"]}}");
}

static void flow_style(void **state)
{
    yaml_is("{a: [1, {b: c}], d: []}", "{\"a\":[1,{\"b\":\"c\"}],\"d\":[]}");
}

static void top_level_list_and_scalar(void **state)
{
    yaml_is("- 1\n- two\n", "[1,\"two\"]");
    yaml_is("42", "42");
    yaml_is("hello", "\"hello\"");
}

static void empty_document_is_null(void **state)
{
    yaml_is("", "null");
    yaml_is("# only a comment\n", "null");
    yaml_is("---\n", "null");
}

static void document_markers(void **state)
{
    yaml_is("---\na: 1\n...\n", "{\"a\":1}");
}

static void utf8_strings(void **state)
{
    yaml_is("name: caf\xc3\xa9", "{\"name\":\"caf\xc3\xa9\"}");
}

static void alias_refused(void **state)
{
    yaml_refused("a: &x 1\nb: *x\n", "line 1: ", "anchors and aliases");
}

static void anchor_alone_refused(void **state)
{
    yaml_refused("a: 1\nb: &x [1, 2]\n", "line 2: ", "anchors and aliases");
}

static void billion_laughs_refused(void **state)
{
    yaml_refused("a: &a [\"x\",\"x\"]\nb: &b [*a,*a]\nc: &c [*b,*b]\n", "line 1: ", "anchors");
}

static void merge_key_alias_refused(void **state)
{
    yaml_refused("base: &b {x: 1}\nderived:\n  <<: *b\n", "line 1: ", "anchors");
}

static void custom_tag_refused(void **state)
{
    yaml_refused("a: !!python/object x", "line 1: ", "unsupported tag");
    yaml_refused("a: !!map {}", "line 1: ", "unsupported tag");
}

static void duplicate_key_refused(void **state)
{
    yaml_refused("a: 1\nb: 2\na: 3\n", "line 3: ", "duplicate key 'a'");
}

static void complex_key_refused(void **state)
{
    yaml_refused("? [a, b]\n: 1\n", "line 1: ", "keys must be scalars");
}

static void syntax_error_has_line(void **state)
{
    yaml_refused("a: 1\nb: 2\nc: [1, 2\n", "line ", "");
    yaml_refused("a: 1\nb: 2\n  c: 3\n", "line 3: ", "");
}

static void bad_indentation_line(void **state)
{
    yaml_refused("a:\n  b: 1\n c: 2\n", "line 3: ", "");
}

static void tab_indentation_refused(void **state)
{
    yaml_refused("a:\n\tb: 1\n", "line 2: ", "");
}

static void unterminated_quote(void **state)
{
    yaml_refused("a: 1\nb: \"abc\n", "line ", "");
}

static void two_documents_refused(void **state)
{
    yaml_refused("a: 1\n---\nb: 2\n", "line 2: ", "more than one document");
}

static void invalid_utf8_refused(void **state)
{
    yaml_refused("a: 1\nb: \xff\xfe\n", "line 2: ", "");
}

static void integer_overflow_refused(void **state)
{
    yaml_refused("a: 1\nb: 9223372036854775808\n", "line 2: ", "out of range");
}

static void float_overflow_refused(void **state)
{
    yaml_refused("a: 1e999\n", "line 1: ", "out of range");
}

static char *nested(int depth)
{
    char *s = malloc((size_t)depth * 2 + 2);
    int i;

    for (i = 0; i < depth; i++)
        s[i] = '[';
    for (i = 0; i < depth; i++)
        s[depth + i] = ']';
    s[2 * depth] = '\0';
    return s;
}

static void depth_64_accepted(void **state)
{
    char *s = nested(64);
    json_t *v = parse(s, NULL, 0);

    assert_non_null(v);
    json_decref(v);
    free(s);
}

static void depth_65_refused(void **state)
{
    char *s = nested(65);
    char err[128];

    assert_null(parse(s, err, sizeof(err)));
    assert_non_null(strstr(err, "deeper than 64"));
    assert_int_equal(strncmp(err, "line 1: ", 8), 0);
    free(s);
}

static void size_cap(void **state)
{
    size_t n = (4u << 20) + 1;
    char *s = malloc(n);
    char err[128];

    memset(s, ' ', n);
    assert_null(yaml_to_json(s, n, err, sizeof(err)));
    assert_non_null(strstr(err, "4 MiB"));
    assert_null(yaml_to_json(s, n, NULL, 0)); /* no message buffer: still refused */
    free(s);
}

static void size_just_under_cap(void **state)
{
    size_t n = 4u << 20;
    char *s = malloc(n);
    json_t *v;

    memset(s, ' ', n);
    memcpy(s, "a: 1", 4);
    v = yaml_to_json(s, n, NULL, 0);
    assert_non_null(v);
    assert_int_equal(json_integer_value(json_object_get(v, "a")), 1);
    json_decref(v);
    free(s);
}

static void not_nul_terminated_input(void **state)
{
    const char text[] = "a: 12345";
    json_t *v = yaml_to_json(text, 5, NULL, 0);

    assert_non_null(v);
    assert_int_equal(json_integer_value(json_object_get(v, "a")), 12);
    json_decref(v);
}

static void error_buffer_small(void **state)
{
    char err[6];

    assert_null(parse("a: *x", err, sizeof(err)));
    assert_string_equal(err, "line ");
}

static void file_round_trip(void **state)
{
    char path[] = "/tmp/docket-yj-XXXXXX";
    int fd = mkstemp(path);
    char err[256] = "";
    json_t *v;

    assert_true(fd >= 0);
    assert_int_equal(write(fd, "listen: 127.0.0.1:0\nworkers: 4\n", 31), 31);
    close(fd);
    v = yaml_file_to_json(path, err, sizeof(err));
    unlink(path);
    assert_non_null(v);
    assert_string_equal(json_string_value(json_object_get(v, "listen")), "127.0.0.1:0");
    assert_int_equal(json_integer_value(json_object_get(v, "workers")), 4);
    json_decref(v);
}

static void file_missing(void **state)
{
    char err[256] = "";

    assert_null(yaml_file_to_json("/nonexistent/docket.yaml", err, sizeof(err)));
    assert_string_equal(err, "cannot read '/nonexistent/docket.yaml': No such file or directory");
}

static void file_is_directory(void **state)
{
    char err[256] = "";

    assert_null(yaml_file_to_json("/tmp", err, sizeof(err)));
    assert_true(strncmp(err, "cannot read '/tmp': ", 20) == 0);
}

static void file_bad_yaml_has_line(void **state)
{
    char path[] = "/tmp/docket-yj-XXXXXX";
    int fd = mkstemp(path);
    char err[256] = "";

    assert_true(fd >= 0);
    assert_int_equal(write(fd, "a: 1\nb: [\n", 10), 10);
    close(fd);
    assert_null(yaml_file_to_json(path, err, sizeof(err)));
    unlink(path);
    assert_int_equal(strncmp(err, "line ", 5), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plain_integers),
        cmocka_unit_test(plain_floats),
        cmocka_unit_test(plain_booleans_and_null),
        cmocka_unit_test(plain_other_words_are_strings),
        cmocka_unit_test(leading_zeros_stay_strings),
        cmocka_unit_test(quoted_scalars_are_strings),
        cmocka_unit_test(block_scalars_are_strings),
        cmocka_unit_test(str_tag_forces_string),
        cmocka_unit_test(keys_are_strings),
        cmocka_unit_test(nested_maps_and_lists),
        cmocka_unit_test(flow_style),
        cmocka_unit_test(top_level_list_and_scalar),
        cmocka_unit_test(empty_document_is_null),
        cmocka_unit_test(document_markers),
        cmocka_unit_test(utf8_strings),
        cmocka_unit_test(alias_refused),
        cmocka_unit_test(anchor_alone_refused),
        cmocka_unit_test(billion_laughs_refused),
        cmocka_unit_test(merge_key_alias_refused),
        cmocka_unit_test(custom_tag_refused),
        cmocka_unit_test(duplicate_key_refused),
        cmocka_unit_test(complex_key_refused),
        cmocka_unit_test(syntax_error_has_line),
        cmocka_unit_test(bad_indentation_line),
        cmocka_unit_test(tab_indentation_refused),
        cmocka_unit_test(unterminated_quote),
        cmocka_unit_test(two_documents_refused),
        cmocka_unit_test(invalid_utf8_refused),
        cmocka_unit_test(integer_overflow_refused),
        cmocka_unit_test(float_overflow_refused),
        cmocka_unit_test(depth_64_accepted),
        cmocka_unit_test(depth_65_refused),
        cmocka_unit_test(size_cap),
        cmocka_unit_test(size_just_under_cap),
        cmocka_unit_test(not_nul_terminated_input),
        cmocka_unit_test(error_buffer_small),
        cmocka_unit_test(file_round_trip),
        cmocka_unit_test(file_missing),
        cmocka_unit_test(file_is_directory),
        cmocka_unit_test(file_bad_yaml_has_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
