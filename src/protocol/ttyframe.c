/*
 * ttyframe.c - the one reader and writer of the terminal stream's frames (ttyframe.h,
 * docs/interactive.md "Frames").
 */
#include "protocol/ttyframe.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

int tty_frame_signal_ok(int sig)
{
    static const int ok[] = {SIGINT,  SIGQUIT,  SIGTSTP, SIGHUP, SIGTERM,
                             SIGCONT, SIGWINCH, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (ok[i] == sig)
            return 1;
    return 0;
}

static unsigned be16(const uint8_t *p)
{
    return (unsigned)p[0] << 8 | p[1];
}

static int parse_payload(struct tty_frame *f)
{
    const uint8_t *p = f->payload;
    switch (f->type) {
    case TTY_DATA:
    case TTY_NOTICE:
        return 0;
    case TTY_HELLO:
    case TTY_WINDOW:
        if (f->len != 4)
            return -EPROTO;
        f->rows = be16(p);
        f->cols = be16(p + 2);
        return f->rows && f->cols ? 0 : -EPROTO;
    case TTY_SIGNAL:
        if (f->len != 1 || !tty_frame_signal_ok(p[0]))
            return -EPROTO;
        f->signal = p[0];
        return 0;
    case TTY_EXIT:
        if (f->len != 2 || p[0] > TTY_EXIT_SIGNAL)
            return -EPROTO;
        f->exit_kind = p[0];
        f->exit_value = p[1];
        return 0;
    default:
        return -EPROTO;
    }
}

int tty_frame_parse(const uint8_t *buf, size_t len, struct tty_frame *f)
{
    memset(f, 0, sizeof *f);
    if (len < 1)
        return 0;
    f->type = buf[0];
    /* an unknown type is refused at its first byte: a peer speaking something else
     * (an HTTP error page) is cut at once rather than waited on */
    static const char types[] = {TTY_DATA, TTY_HELLO, TTY_WINDOW, TTY_SIGNAL, TTY_NOTICE, TTY_EXIT};
    if (!memchr(types, f->type, sizeof types))
        return -EPROTO;
    if (len < TTY_FRAME_HEAD)
        return 0;
    f->len = be16(buf + 1);
    if (f->len > TTY_FRAME_MAX)
        return -EPROTO;
    if (len < TTY_FRAME_HEAD + f->len)
        return 0;
    f->payload = buf + TTY_FRAME_HEAD;
    int rc = parse_payload(f);
    return rc < 0 ? rc : (int)(TTY_FRAME_HEAD + f->len);
}

size_t tty_frame_put(uint8_t *out, size_t cap, int type, const void *payload, size_t n)
{
    if (n > TTY_FRAME_MAX || cap < TTY_FRAME_HEAD + n)
        return 0;
    out[0] = (uint8_t)type;
    out[1] = (uint8_t)(n >> 8);
    out[2] = (uint8_t)n;
    if (n)
        memcpy(out + TTY_FRAME_HEAD, payload, n);
    return TTY_FRAME_HEAD + n;
}

size_t tty_frame_put_size(uint8_t *out, size_t cap, int type, unsigned rows, unsigned cols)
{
    uint8_t p[4] = {(uint8_t)(rows >> 8), (uint8_t)rows, (uint8_t)(cols >> 8), (uint8_t)cols};
    return tty_frame_put(out, cap, type, p, sizeof p);
}

size_t tty_frame_put_exit(uint8_t *out, size_t cap, int kind, int value)
{
    uint8_t p[2] = {(uint8_t)kind, (uint8_t)value};
    return tty_frame_put(out, cap, TTY_EXIT, p, sizeof p);
}
