/*
 * ttyframe.h - the frames of an interactive session's terminal stream (docs/interactive.md
 * "Frames"): what the CLI, docketd, docket-node and the job's supervisor pass over an
 * upgraded connection (`Upgrade: docket-tty`). This file owns their one reader and their
 * one writer.
 *
 * A frame is a type byte, a payload length (2 bytes, big-endian, at most TTY_FRAME_MAX)
 * and the payload. Each type has its own payload rule, checked by the reader, so a peer
 * never sees a window of 0 rows or a signal it may not send.
 */
#ifndef DOCKET_PROTOCOL_TTYFRAME_H
#define DOCKET_PROTOCOL_TTYFRAME_H

#include <stddef.h>
#include <stdint.h>

enum { TTY_FRAME_HEAD = 3, TTY_FRAME_MAX = 16384 };

enum tty_frame_type {
    TTY_DATA = 'D',   /* terminal bytes: keystrokes to the PTY, or the PTY's output */
    TTY_HELLO = 'H',  /* the client attaches (rows, cols): the recent output is replayed */
    TTY_WINDOW = 'W', /* the client's window changed (rows, cols) */
    TTY_SIGNAL = 'S', /* a signal for the session's foreground process group (1 byte) */
    TTY_NOTICE = 'N', /* a line for the person, not the terminal (idle warning, end) */
    TTY_EXIT = 'X',   /* the command ended: kind (0 exit code, 1 signal), value */
};

enum { TTY_EXIT_CODE = 0, TTY_EXIT_SIGNAL = 1 };

struct tty_frame {
    int type;
    const uint8_t *payload; /* into the parsed buffer */
    size_t len;
    /* decoded per type */
    unsigned rows, cols; /* HELLO, WINDOW: 1..65535 */
    int signal;          /* SIGNAL: one of tty_frame_signal_ok's */
    int exit_kind, exit_value;
};

/* One frame at the start of buf[0..len). Returns the bytes it takes (> 0), 0 when buf
 * holds only part of it, or -EPROTO for a frame no peer may send (unknown type, a length
 * past TTY_FRAME_MAX, a payload of the wrong size or value). */
int tty_frame_parse(const uint8_t *buf, size_t len, struct tty_frame *f);

/* Writes one frame into out[0..cap); returns its size, or 0 when it does not fit or the
 * payload is longer than TTY_FRAME_MAX. */
size_t tty_frame_put(uint8_t *out, size_t cap, int type, const void *payload, size_t n);
size_t tty_frame_put_size(uint8_t *out, size_t cap, int type, unsigned rows, unsigned cols);
size_t tty_frame_put_exit(uint8_t *out, size_t cap, int kind, int value);

/* The signals a client may send: INT, QUIT, TSTP, HUP, TERM, CONT, WINCH, USR1, USR2. */
int tty_frame_signal_ok(int sig);

#endif
