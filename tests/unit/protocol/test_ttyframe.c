/* test_ttyframe.c - unit tests of the terminal stream's frames (protocol/ttyframe.h), the
 * one reader the CLI and the supervisor share: each type's payload rule, frames split at
 * every byte, and what no peer may send refused at once. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "protocol/ttyframe.h"

static void data_round_trip(void **state)
{
    uint8_t buf[64];
    size_t n = tty_frame_put(buf, sizeof buf, TTY_DATA, "ls\r", 3);
    assert_int_equal(n, TTY_FRAME_HEAD + 3);
    struct tty_frame f;
    assert_int_equal(tty_frame_parse(buf, n, &f), (int)n);
    assert_int_equal(f.type, TTY_DATA);
    assert_int_equal(f.len, 3);
    assert_memory_equal(f.payload, "ls\r", 3);
}

static void window_and_exit(void **state)
{
    uint8_t buf[16];
    struct tty_frame f;
    size_t n = tty_frame_put_size(buf, sizeof buf, TTY_WINDOW, 33, 1001);
    assert_int_equal(tty_frame_parse(buf, n, &f), (int)n);
    assert_int_equal(f.rows, 33);
    assert_int_equal(f.cols, 1001);
    n = tty_frame_put_exit(buf, sizeof buf, TTY_EXIT_SIGNAL, SIGKILL);
    assert_int_equal(tty_frame_parse(buf, n, &f), (int)n);
    assert_int_equal(f.exit_kind, TTY_EXIT_SIGNAL);
    assert_int_equal(f.exit_value, SIGKILL);
}

/* Every prefix of a frame is "more, please", never a frame or an error. */
static void split_anywhere(void **state)
{
    uint8_t buf[32];
    size_t n = tty_frame_put(buf, sizeof buf, TTY_NOTICE, "idle", 4);
    struct tty_frame f;
    for (size_t i = 0; i < n; i++)
        assert_int_equal(tty_frame_parse(buf, i, &f), 0);
    assert_int_equal(tty_frame_parse(buf, n, &f), (int)n);
}

static void refused(void **state)
{
    struct tty_frame f;
    /* unknown type: refused at its first byte (an HTTP error page is cut at once) */
    assert_int_equal(tty_frame_parse((const uint8_t *)"HTTP/1.1", 8, &f), -EPROTO);
    /* longer than TTY_FRAME_MAX */
    uint8_t big[3] = {TTY_DATA, 0xff, 0xff};
    assert_int_equal(tty_frame_parse(big, 3, &f), -EPROTO);
    /* a window of 0 rows, a window of the wrong size */
    uint8_t w0[7] = {TTY_WINDOW, 0, 4, 0, 0, 0, 80};
    assert_int_equal(tty_frame_parse(w0, 7, &f), -EPROTO);
    uint8_t w3[6] = {TTY_HELLO, 0, 3, 0, 24, 0};
    assert_int_equal(tty_frame_parse(w3, 6, &f), -EPROTO);
    /* a signal a client may not send (KILL, STOP), or none at all */
    uint8_t kill9[4] = {TTY_SIGNAL, 0, 1, SIGKILL};
    assert_int_equal(tty_frame_parse(kill9, 4, &f), -EPROTO);
    uint8_t stop[4] = {TTY_SIGNAL, 0, 1, SIGSTOP};
    assert_int_equal(tty_frame_parse(stop, 4, &f), -EPROTO);
    uint8_t intr[4] = {TTY_SIGNAL, 0, 1, SIGINT};
    assert_int_equal(tty_frame_parse(intr, 4, &f), 4);
    assert_int_equal(f.signal, SIGINT);
    /* an exit of an unknown kind */
    uint8_t x[5] = {TTY_EXIT, 0, 2, 7, 0};
    assert_int_equal(tty_frame_parse(x, 5, &f), -EPROTO);
}

static void writer_limits(void **state)
{
    static uint8_t big[TTY_FRAME_MAX + 1], out[TTY_FRAME_MAX + 8];
    assert_int_equal(tty_frame_put(out, sizeof out, TTY_DATA, big, sizeof big), 0);
    assert_int_equal(tty_frame_put(out, 4, TTY_DATA, big, 2), 0);
    assert_int_equal(tty_frame_put(out, sizeof out, TTY_DATA, big, TTY_FRAME_MAX),
                     TTY_FRAME_HEAD + TTY_FRAME_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(data_round_trip), cmocka_unit_test(window_and_exit),
        cmocka_unit_test(split_anywhere),  cmocka_unit_test(refused),
        cmocka_unit_test(writer_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
