/* test_parse_decl.c - unit tests of util/parse.h: GPU declarations, labels and job-array
 * specs. Each failure names the input. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "util/parse.h"

static void gpu_ok(const char *s, int count, const char *type, int64_t mem)
{
    char t[64] = "?";
    int c = -1;
    int64_t m = -1;
    int rc = parse_gpu_decl(s, &c, t, sizeof(t), &m);

    if (rc != 0 || c != count || strcmp(t, type) != 0 || m != mem)
        fail_msg("parse_gpu_decl(\"%s\") = %d, %d, '%s', %lld; want 0, %d, '%s', %lld", s, rc, c, t,
                 (long long)m, count, type, (long long)mem);
}

static void gpu_bad(const char *s, int want_rc)
{
    char t[64] = "?";
    int c = -1;
    int64_t m = -1;
    int rc = parse_gpu_decl(s, &c, t, sizeof(t), &m);

    if (rc != want_rc || c != -1 || strcmp(t, "?") != 0 || m != -1)
        fail_msg("parse_gpu_decl(\"%s\") = %d; want %d and outputs untouched", s, rc, want_rc);
}

static void label_bad(const char *s, int want_rc)
{
    char k[64] = "?", v[64] = "?";
    int rc = parse_label(s, k, sizeof(k), v, sizeof(v));

    if (rc != want_rc || strcmp(k, "?") != 0 || strcmp(v, "?") != 0)
        fail_msg("parse_label(\"%s\") = %d; want %d and outputs untouched", s, rc, want_rc);
}

static void array_bad(const char *s, int want_rc)
{
    int32_t idx[16] = {-1};
    size_t count = 777;
    int limit = -1;
    int rc = parse_array_spec(s, idx, 16, &count, &limit);

    if (rc != want_rc || count != 777 || limit != -1 || idx[0] != -1)
        fail_msg("parse_array_spec(\"%s\") = %d; want %d and outputs untouched", s, rc, want_rc);
}

/* ---- GPUs ---- */

static void gpu_count_and_type(void **state)
{
    gpu_ok("8xH100-80GB", 8, "H100-80GB", 81920);
    gpu_ok("4xL4", 4, "L4", 0);
    gpu_ok("1XA10", 1, "A10", 0);
}

static void gpu_count_only(void **state)
{
    gpu_ok("8", 8, "", 0);
    gpu_ok("0", 0, "", 0);
}

static void gpu_memory_after_colon(void **state)
{
    gpu_ok("2xA100:40G", 2, "A100", 40960);
    gpu_ok("2xA100:40960", 2, "A100", 40960);
    gpu_ok("2xA100-80GB:40G", 2, "A100-80GB", 40960);
}

static void gpu_memory_from_type_name(void **state)
{
    gpu_ok("2xA100-40GB", 2, "A100-40GB", 40960);
    gpu_ok("2xMI300X-192G", 2, "MI300X-192G", 196608);
    gpu_ok("2xRTX-4090", 2, "RTX-4090", 0); /* no unit: a model number, not memory */
}

static void gpu_null_outputs_allowed(void **state)
{
    int c = 0;

    assert_int_equal(parse_gpu_decl("2xA100:40G", &c, NULL, 0, NULL), 0);
    assert_int_equal(c, 2);
}

static void gpu_syntax(void **state)
{
    gpu_bad("", -EINVAL);
    gpu_bad("x", -EINVAL);
    gpu_bad("H100", -EINVAL);
    gpu_bad("8x", -EINVAL);
    gpu_bad("8xH100:", -EINVAL);
    gpu_bad("8:40G", -EINVAL);
    gpu_bad("8 x H100", -EINVAL);
    gpu_bad("-8xH100", -EINVAL);
    gpu_bad("8xH100:40Q", -EINVAL);
    gpu_bad("8x-H100", -EINVAL);
    gpu_bad("8xH 100", -EINVAL);
    gpu_bad("8xH100:4:0", -EINVAL);
    gpu_bad("8*H100", -EINVAL);
}

static void gpu_ranges(void **state)
{
    gpu_bad("4097", -ERANGE);
    gpu_bad("99999999999999999999xH100", -ERANGE);
    gpu_bad("0xH100", -ERANGE);
    gpu_bad("8xH100:0", -ERANGE);
    gpu_bad("8xH100:-1G", -ERANGE);
}

static void gpu_type_too_long(void **state)
{
    char s[80] = "2x";
    char t[16] = "?";
    int c = -1;

    memset(s + 2, 'a', 64);
    s[66] = '\0';
    gpu_bad(s, -ERANGE);
    s[2 + 20] = '\0'; /* 20 chars: valid, but not into t[16] */
    assert_int_equal(parse_gpu_decl(s, &c, t, sizeof(t), NULL), -ERANGE);
    assert_int_equal(c, -1);
    assert_string_equal(t, "?");
}

/* ---- labels ---- */

static void label_split(void **state)
{
    char k[64], v[64];

    assert_int_equal(parse_label("pool=reserved", k, sizeof(k), v, sizeof(v)), 0);
    assert_string_equal(k, "pool");
    assert_string_equal(v, "reserved");
}

static void label_value_chars(void **state)
{
    char k[64], v[64];

    assert_int_equal(parse_label("img=repo/x:1.2_a-b", k, sizeof(k), v, sizeof(v)), 0);
    assert_string_equal(v, "repo/x:1.2_a-b");
}

static void label_value_with_equals_refused(void **state)
{
    label_bad("a=b=c", -EINVAL);
}

static void label_key_rules(void **state)
{
    label_bad("=x", -EINVAL);
    label_bad("-a=x", -EINVAL);
    label_bad("a b=x", -EINVAL);
    label_bad("a/b=x", -EINVAL);
    label_bad("zone", -EINVAL);
    label_bad("", -EINVAL);
}

static void label_value_rules(void **state)
{
    label_bad("zone=", -EINVAL);
    label_bad("zone=a b", -EINVAL);
    label_bad("zone=a\n", -EINVAL);
    label_bad("zone=\"a\"", -EINVAL);
}

static void label_length_limits(void **state)
{
    char s[160], k[64], v[64];

    memset(s, 'k', 63);
    s[63] = '=';
    memset(s + 64, 'v', 63);
    s[127] = '\0';
    assert_int_equal(parse_label(s, k, sizeof(k), v, sizeof(v)), 0);
    assert_int_equal(strlen(k), 63);
    assert_int_equal(strlen(v), 63);
    s[127] = 'v';
    s[128] = '\0';
    label_bad(s, -EINVAL);
}

static void label_small_buffers(void **state)
{
    char k[4] = "?", v[64] = "?";

    assert_int_equal(parse_label("zone=a", k, sizeof(k), v, sizeof(v)), -ERANGE);
    assert_string_equal(k, "?");
    assert_string_equal(v, "?");
}

/* ---- arrays ---- */

static void array_range(void **state)
{
    int32_t idx[100];
    size_t n = 0;
    int limit = -1;

    assert_int_equal(parse_array_spec("0-99", idx, 100, &n, &limit), 0);
    assert_int_equal(n, 100);
    assert_int_equal(limit, 0);
    assert_int_equal(idx[0], 0);
    assert_int_equal(idx[99], 99);
}

static void array_range_with_limit(void **state)
{
    int32_t idx[100];
    size_t n = 0;
    int limit = 0;

    assert_int_equal(parse_array_spec("0-99%8", idx, 100, &n, &limit), 0);
    assert_int_equal(n, 100);
    assert_int_equal(limit, 8);
}

static void array_list_and_step(void **state)
{
    const int32_t want[] = {1, 3, 5, 7, 9};
    int32_t idx[16];
    size_t n = 0;
    int limit = -1;

    assert_int_equal(parse_array_spec("1,3,5-9:2", idx, 16, &n, &limit), 0);
    assert_int_equal(n, 5);
    assert_memory_equal(idx, want, sizeof(want));
}

static void array_sorted_and_deduplicated(void **state)
{
    const int32_t want[] = {1, 2, 3, 7};
    int32_t idx[16];
    size_t n = 0;

    assert_int_equal(parse_array_spec("7,3,1-3,2", idx, 16, &n, NULL), 0);
    assert_int_equal(n, 4);
    assert_memory_equal(idx, want, sizeof(want));
}

static void array_step_not_landing_on_end(void **state)
{
    const int32_t want[] = {0, 4, 8};
    int32_t idx[16];
    size_t n = 0;

    assert_int_equal(parse_array_spec("0-10:4", idx, 16, &n, NULL), 0);
    assert_int_equal(n, 3);
    assert_memory_equal(idx, want, sizeof(want));
}

static void array_single_index(void **state)
{
    int32_t idx[1];
    size_t n = 0;

    assert_int_equal(parse_array_spec("42", idx, 1, &n, NULL), 0);
    assert_int_equal(n, 1);
    assert_int_equal(idx[0], 42);
}

static void array_count_only(void **state)
{
    size_t n = 0;
    int limit = 0;

    assert_int_equal(parse_array_spec("0-99999%4", NULL, 0, &n, &limit), 0);
    assert_int_equal(n, 100000);
    assert_int_equal(limit, 4);
}

static void array_cap(void **state)
{
    int32_t *idx = malloc(100001 * sizeof(*idx));
    size_t n = 0;

    assert_non_null(idx);
    assert_int_equal(parse_array_spec("0-99999", idx, 100001, &n, NULL), 0);
    assert_int_equal(n, 100000);
    assert_int_equal(idx[99999], 99999);
    n = 7;
    assert_int_equal(parse_array_spec("0-100000", idx, 100001, &n, NULL), -ERANGE);
    assert_int_equal(parse_array_spec("0-2147483647", idx, 100001, &n, NULL), -ERANGE);
    assert_int_equal(parse_array_spec("0-99999,0-9", idx, 100001, &n, NULL), -ERANGE);
    assert_int_equal(n, 7);
    free(idx);
}

static void array_sparse_large_indices(void **state)
{
    int32_t idx[4];
    size_t n = 0;

    assert_int_equal(parse_array_spec("0-2147483647:1073741824", idx, 4, &n, NULL), 0);
    assert_int_equal(n, 2);
    assert_int_equal(idx[1], 1073741824);
}

static void array_too_many_for_buffer(void **state)
{
    array_bad("0-16", -ERANGE);
}

static void array_syntax(void **state)
{
    array_bad("", -EINVAL);
    array_bad(",", -EINVAL);
    array_bad("1,", -EINVAL);
    array_bad(",1", -EINVAL);
    array_bad("1,,2", -EINVAL);
    array_bad("5-1", -EINVAL);
    array_bad("1-", -EINVAL);
    array_bad("-1", -EINVAL);
    array_bad("1--3", -EINVAL);
    array_bad("a-b", -EINVAL);
    array_bad("1-3:", -EINVAL);
    array_bad("1:2", -EINVAL);
    array_bad("1-9:+2", -EINVAL);
    array_bad("+1-3", -EINVAL);
    array_bad("1 - 3", -EINVAL);
    array_bad("0-9%", -EINVAL);
    array_bad("%4", -EINVAL);
    array_bad("0-9%+4", -EINVAL);
    array_bad("0-9%4%2", -EINVAL);
    array_bad("0-9%x", -EINVAL);
}

static void array_ranges(void **state)
{
    array_bad("1-3:0", -ERANGE);
    array_bad("0-9%0", -ERANGE);
    array_bad("0-9%-1", -ERANGE);
    array_bad("2147483648", -ERANGE);
    array_bad("0-9%100001", -ERANGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gpu_count_and_type),
        cmocka_unit_test(gpu_count_only),
        cmocka_unit_test(gpu_memory_after_colon),
        cmocka_unit_test(gpu_memory_from_type_name),
        cmocka_unit_test(gpu_null_outputs_allowed),
        cmocka_unit_test(gpu_syntax),
        cmocka_unit_test(gpu_ranges),
        cmocka_unit_test(gpu_type_too_long),
        cmocka_unit_test(label_split),
        cmocka_unit_test(label_value_chars),
        cmocka_unit_test(label_value_with_equals_refused),
        cmocka_unit_test(label_key_rules),
        cmocka_unit_test(label_value_rules),
        cmocka_unit_test(label_length_limits),
        cmocka_unit_test(label_small_buffers),
        cmocka_unit_test(array_range),
        cmocka_unit_test(array_range_with_limit),
        cmocka_unit_test(array_list_and_step),
        cmocka_unit_test(array_sorted_and_deduplicated),
        cmocka_unit_test(array_step_not_landing_on_end),
        cmocka_unit_test(array_single_index),
        cmocka_unit_test(array_count_only),
        cmocka_unit_test(array_cap),
        cmocka_unit_test(array_sparse_large_indices),
        cmocka_unit_test(array_too_many_for_buffer),
        cmocka_unit_test(array_syntax),
        cmocka_unit_test(array_ranges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
