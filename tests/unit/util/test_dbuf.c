/* test_dbuf.c - unit tests of util/dbuf.h: growth, cap, sticky failure, NUL, detach. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "util/dbuf.h"

static void init_is_empty_string(void **state)
{
    struct dbuf b;

    dbuf_init(&b, 100);
    assert_non_null(b.data);
    assert_string_equal(b.data, "");
    assert_int_equal(b.len, 0);
    assert_false(b.failed);
    dbuf_release(&b);
}

static void append_keeps_nul(void **state)
{
    struct dbuf b;

    dbuf_init(&b, 100);
    assert_int_equal(dbuf_append(&b, "abc", 3), 0);
    assert_int_equal(b.len, 3);
    assert_int_equal(b.data[3], '\0');
    assert_string_equal(b.data, "abc");
    dbuf_release(&b);
}

static void append_binary_with_nul(void **state)
{
    struct dbuf b;

    dbuf_init(&b, 100);
    assert_int_equal(dbuf_append(&b, "a\0b", 3), 0);
    assert_int_equal(b.len, 3);
    assert_memory_equal(b.data, "a\0b", 4);
    dbuf_release(&b);
}

static void append_zero_bytes(void **state)
{
    struct dbuf b;

    dbuf_init(&b, 10);
    assert_int_equal(dbuf_append(&b, "", 0), 0);
    assert_int_equal(b.len, 0);
    assert_string_equal(b.data, "");
    dbuf_release(&b);
}

static void grows_past_initial_block(void **state)
{
    struct dbuf b;
    int i;

    dbuf_init(&b, 100000);
    for (i = 0; i < 1000; i++)
        assert_int_equal(dbuf_puts(&b, "0123456789"), 0);
    assert_int_equal(b.len, 10000);
    assert_int_equal(strlen(b.data), 10000);
    assert_memory_equal(b.data + 9990, "0123456789", 10);
    dbuf_release(&b);
}

static void cap_exact_fits(void **state)
{
    struct dbuf b;

    dbuf_init(&b, 5);
    assert_int_equal(dbuf_puts(&b, "12345"), 0);
    assert_int_equal(b.len, 5);
    assert_false(b.failed);
    assert_true(b.alloc <= 6);
    dbuf_release(&b);
}

static void cap_exceeded_fails_and_keeps_content(void **state)
{
    struct dbuf b;

    dbuf_init(&b, 5);
    assert_int_equal(dbuf_puts(&b, "123"), 0);
    assert_int_equal(dbuf_puts(&b, "456"), -ENOSPC);
    assert_true(b.failed);
    assert_int_equal(b.len, 3);
    assert_string_equal(b.data, "123");
    dbuf_release(&b);
}

static void failure_is_sticky(void **state)
{
    struct dbuf b;

    dbuf_init(&b, 4);
    assert_int_equal(dbuf_puts(&b, "too long"), -ENOSPC);
    assert_int_equal(dbuf_puts(&b, "a"), -ENOSPC);
    assert_int_equal(dbuf_printf(&b, "%d", 1), -ENOSPC);
    assert_int_equal(b.len, 0);
    assert_true(b.failed);
    dbuf_release(&b);
}

static void reset_clears_failure(void **state)
{
    struct dbuf b;

    dbuf_init(&b, 4);
    assert_int_equal(dbuf_puts(&b, "abc"), 0);
    assert_int_equal(dbuf_puts(&b, "de"), -ENOSPC);
    dbuf_reset(&b);
    assert_false(b.failed);
    assert_int_equal(b.len, 0);
    assert_string_equal(b.data, "");
    assert_int_equal(dbuf_puts(&b, "wxyz"), 0);
    assert_string_equal(b.data, "wxyz");
    dbuf_release(&b);
}

static void reset_unused_buffer(void **state)
{
    struct dbuf b;

    dbuf_init(&b, 4);
    dbuf_reset(&b);
    assert_string_equal(b.data, "");
    dbuf_release(&b);
}

static void huge_append_does_not_wrap(void **state)
{
    struct dbuf b;

    dbuf_init(&b, 0);
    assert_int_equal(dbuf_puts(&b, "x"), 0);
    assert_int_equal(dbuf_append(&b, "y", SIZE_MAX), -ENOSPC);
    assert_int_equal(b.len, 1);
    dbuf_release(&b);
}

static void printf_formats(void **state)
{
    struct dbuf b;

    dbuf_init(&b, 100);
    assert_int_equal(dbuf_printf(&b, "job=%d node=%s", 12, "gpu03"), 0);
    assert_int_equal(dbuf_printf(&b, " %s", "x"), 0);
    assert_string_equal(b.data, "job=12 node=gpu03 x");
    assert_int_equal(b.len, strlen("job=12 node=gpu03 x"));
    dbuf_release(&b);
}

static void printf_over_cap_appends_nothing(void **state)
{
    struct dbuf b;

    dbuf_init(&b, 8);
    assert_int_equal(dbuf_puts(&b, "ab"), 0);
    assert_int_equal(dbuf_printf(&b, "%s", "1234567"), -ENOSPC);
    assert_string_equal(b.data, "ab");
    assert_true(b.failed);
    dbuf_release(&b);
}

static void printf_empty_result(void **state)
{
    struct dbuf b;

    dbuf_init(&b, 8);
    assert_int_equal(dbuf_printf(&b, "%s", ""), 0);
    assert_string_equal(b.data, "");
    dbuf_release(&b);
}

static void detach_hands_over_and_reinits(void **state)
{
    struct dbuf b;
    size_t len = 0;
    char *p;

    dbuf_init(&b, 16);
    dbuf_puts(&b, "hello");
    p = dbuf_detach(&b, &len);
    assert_string_equal(p, "hello");
    assert_int_equal(len, 5);
    assert_int_equal(b.len, 0);
    assert_string_equal(b.data, "");
    assert_int_equal(b.max, 16);
    assert_int_equal(dbuf_puts(&b, "again"), 0);
    assert_string_equal(b.data, "again");
    free(p);
    dbuf_release(&b);
}

static void detach_empty_is_freeable(void **state)
{
    struct dbuf b;
    size_t len = 99;
    char *p;

    dbuf_init(&b, 16);
    p = dbuf_detach(&b, &len);
    assert_non_null(p);
    assert_string_equal(p, "");
    assert_int_equal(len, 0);
    free(p);
    dbuf_release(&b);
}

static void release_twice_is_safe(void **state)
{
    struct dbuf b;

    dbuf_init(&b, 16);
    dbuf_puts(&b, "x");
    dbuf_release(&b);
    dbuf_release(&b);
    assert_string_equal(b.data, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(init_is_empty_string),
        cmocka_unit_test(append_keeps_nul),
        cmocka_unit_test(append_binary_with_nul),
        cmocka_unit_test(append_zero_bytes),
        cmocka_unit_test(grows_past_initial_block),
        cmocka_unit_test(cap_exact_fits),
        cmocka_unit_test(cap_exceeded_fails_and_keeps_content),
        cmocka_unit_test(failure_is_sticky),
        cmocka_unit_test(reset_clears_failure),
        cmocka_unit_test(reset_unused_buffer),
        cmocka_unit_test(huge_append_does_not_wrap),
        cmocka_unit_test(printf_formats),
        cmocka_unit_test(printf_over_cap_appends_nothing),
        cmocka_unit_test(printf_empty_result),
        cmocka_unit_test(detach_hands_over_and_reinits),
        cmocka_unit_test(detach_empty_is_freeable),
        cmocka_unit_test(release_twice_is_safe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
