/*
 * fuzz_ttyframe.c - libFuzzer harness for the terminal stream's frames
 * (protocol/ttyframe.h), read by the CLI and by the job's supervisor from bytes docketd
 * passes on unread: any bytes are parsed frame after frame as a peer would.
 * Invariants: a frame never claims more bytes than it was given nor more than its header
 * says; a frame read back through the writer is the same bytes; a window is never 0; a
 * signal is one a client may send; nothing crashes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/ttyframe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const uint8_t *p, int n, const struct tty_frame *f)
{
    static uint8_t back[TTY_FRAME_HEAD + TTY_FRAME_MAX];
    if ((size_t)n != TTY_FRAME_HEAD + f->len)
        abort();
    size_t m = tty_frame_put(back, sizeof back, f->type, f->payload, f->len);
    if (m != (size_t)n || memcmp(back, p, m) != 0)
        abort();
    if ((f->type == TTY_HELLO || f->type == TTY_WINDOW) && (!f->rows || !f->cols))
        abort();
    if (f->type == TTY_SIGNAL && !tty_frame_signal_ok(f->signal))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t at = 0;
    while (at < size) {
        struct tty_frame f;
        int n = tty_frame_parse(data + at, size - at, &f);
        if (n <= 0)
            break;
        if ((size_t)n > size - at)
            abort();
        check(data + at, n, &f);
        at += (size_t)n;
    }
    return 0;
}
