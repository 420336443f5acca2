/* test_xalloc_clock.c - unit tests of util/xalloc.h (the out-of-memory hook) and
 * util/clock.h (clocks move the right way and in the right units). */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "util/clock.h"
#include "util/xalloc.h"

/* Under ASan a huge malloc must return NULL (reaching our hook) instead of aborting. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1";
}

static jmp_buf oom_jump;
static size_t oom_bytes;

static void test_hook(size_t n)
{
    oom_bytes = n;
    longjmp(oom_jump, 1);
}

static void xmalloc_returns_memory(void **state)
{
    char *p = xmalloc(16);

    memset(p, 'a', 16);
    free(p);
}

static void xmalloc_zero_is_not_null(void **state)
{
    void *p = xmalloc(0);

    assert_non_null(p);
    free(p);
}

static void xcalloc_zeroes(void **state)
{
    unsigned char *p = xcalloc(8, 4);
    size_t i;

    for (i = 0; i < 32; i++)
        assert_int_equal(p[i], 0);
    free(p);
}

static void xrealloc_keeps_content(void **state)
{
    char *p = xmalloc(4);

    memcpy(p, "abc", 4);
    p = xrealloc(p, 4096);
    assert_string_equal(p, "abc");
    free(p);
}

static void xstrdup_copies(void **state)
{
    char *p = xstrdup("gpu03");

    assert_string_equal(p, "gpu03");
    free(p);
}

static void xstrndup_stops_at_n(void **state)
{
    char *p = xstrndup("gpu03", 3);

    assert_string_equal(p, "gpu");
    free(p);
    p = xstrndup("ab", 10);
    assert_string_equal(p, "ab");
    free(p);
}

static void hook_runs_on_failure(void **state)
{
    volatile int reached = 0;

    xalloc_set_oom_hook(test_hook);
    oom_bytes = 0;
    if (setjmp(oom_jump) == 0) {
        void *p = xmalloc(SIZE_MAX - 4096); /* no allocator can give this */
        free(p);
        reached = 1;
    }
    xalloc_set_oom_hook(NULL);
    assert_int_equal(reached, 0);
    assert_true(oom_bytes == SIZE_MAX - 4096);
}

/* xnonnull: a foreign allocator's NULL (libevent's event_new) runs the same hook. */
static void hook_runs_on_a_foreign_null(void **state)
{
    volatile int reached = 0;
    int x;

    (void)state;
    assert_ptr_equal(xnonnull(&x, "x"), &x);
    xalloc_set_oom_hook(test_hook);
    oom_bytes = 1;
    if (setjmp(oom_jump) == 0) {
        (void)xnonnull(NULL, "event");
        reached = 1;
    }
    xalloc_set_oom_hook(NULL);
    assert_int_equal(reached, 0);
    assert_true(oom_bytes == 0);
}

static void hook_runs_on_calloc_overflow(void **state)
{
    volatile int reached = 0;

    xalloc_set_oom_hook(test_hook);
    oom_bytes = 0;
    if (setjmp(oom_jump) == 0) {
        void *p = xcalloc(SIZE_MAX / 2, 4);
        free(p);
        reached = 1;
    }
    xalloc_set_oom_hook(NULL);
    assert_int_equal(reached, 0);
    assert_true(oom_bytes == SIZE_MAX);
}

static void clock_realtime_is_epoch_ms(void **state)
{
    int64_t now = clock_now_ms();
    int64_t sec = (int64_t)time(NULL);

    assert_true(now / 1000 >= sec - 1 && now / 1000 <= sec + 1);
}

static void clock_monotonic_moves_forward(void **state)
{
    struct timespec ten_ms = {0, 10 * 1000 * 1000};
    int64_t a_ms = clock_mono_ms(), a_us = clock_mono_us();
    int64_t b_ms, b_us;

    nanosleep(&ten_ms, NULL);
    b_ms = clock_mono_ms();
    b_us = clock_mono_us();
    assert_true(b_ms - a_ms >= 10);
    assert_true(b_us - a_us >= 10000);
    assert_true(b_us / 1000 - b_ms <= 1 && b_us / 1000 - b_ms >= -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(xmalloc_returns_memory),
        cmocka_unit_test(xmalloc_zero_is_not_null),
        cmocka_unit_test(xcalloc_zeroes),
        cmocka_unit_test(xrealloc_keeps_content),
        cmocka_unit_test(xstrdup_copies),
        cmocka_unit_test(xstrndup_stops_at_n),
        cmocka_unit_test(hook_runs_on_failure),
        cmocka_unit_test(hook_runs_on_calloc_overflow),
        cmocka_unit_test(hook_runs_on_a_foreign_null),
        cmocka_unit_test(clock_realtime_is_epoch_ms),
        cmocka_unit_test(clock_monotonic_moves_forward),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
