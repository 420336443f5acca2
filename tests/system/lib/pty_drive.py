#!/usr/bin/env python3
"""pty_drive.py - run a command on a real pseudo-terminal and drive it as a person at a
keyboard would, for the bats tests of interactive sessions (tests/system/shell.bats).

    pty_drive.py STEPS_JSON COMMAND [ARGS...]

STEPS_JSON is a list of steps, done in order:
    {"expect": "REGEX"}       wait (60 s at most) until the output since the last match
                              matches; fail (exit 124) otherwise
    {"send": "TEXT"}          type TEXT (a "\\u0003" is Ctrl-C)
    {"resize": [ROWS, COLS]}  change the terminal's size (the command gets SIGWINCH)
    {"signal": "TERM"}        send a signal to the command
    {"idle": SECONDS}         type nothing for SECONDS (the output is still read)
    {"close": true}           hang up: the terminal goes away (the command gets SIGHUP)
    {"touch": "PATH"}         create the file PATH: a test waits on it to know the steps
                              before it are done (the output itself comes only at the end)
The whole output is written on stdout at the end; the exit status is the command's
(128 + N for a signal N), or 124 when an expectation was not met in time.
"""
import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import sys
import termios
import time

TIMEOUT = 60


def set_size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def read_some(fd, wait):
    ready, _, _ = select.select([fd], [], [], wait)
    if not ready:
        return b""
    try:
        return os.read(fd, 65536)
    except OSError:
        return None  # EIO: the command and everything on its terminal are gone


def main():
    steps = json.loads(sys.argv[1])
    cmd = sys.argv[2:]
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(cmd[0], cmd)
    set_size(fd, 24, 80)
    out = b""
    mark = 0
    failed = None
    for step in steps:
        if "expect" in step:
            pat = re.compile(step["expect"].encode(), re.S)
            deadline = time.monotonic() + step.get("timeout", TIMEOUT)
            while True:
                m = pat.search(out, mark)
                if m:
                    mark = m.end()
                    break
                left = deadline - time.monotonic()
                chunk = read_some(fd, max(left, 0)) if left > 0 else b""
                if chunk is None or (left <= 0):
                    failed = "expected %r, not seen" % step["expect"]
                    break
                out += chunk
            if failed:
                break
        elif "idle" in step:
            until = time.monotonic() + step["idle"]
            while time.monotonic() < until:
                chunk = read_some(fd, until - time.monotonic())
                if chunk is None:
                    break
                out += chunk
        elif "send" in step:
            os.write(fd, step["send"].encode())
        elif "resize" in step:
            set_size(fd, *step["resize"])
        elif "signal" in step:
            os.kill(pid, getattr(signal, "SIG" + step["signal"]))
        elif "touch" in step:
            open(step["touch"], "a").close()
        elif "close" in step:
            os.close(fd)
            fd = None
            break
    deadline = time.monotonic() + TIMEOUT
    while fd is not None and not failed and time.monotonic() < deadline:
        chunk = read_some(fd, deadline - time.monotonic())
        if not chunk:
            break
        out += chunk
    if failed:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    sys.stdout.write(out.decode("utf-8", "replace"))
    sys.stdout.flush()
    if failed:
        sys.stderr.write("pty_drive: %s\n" % failed)
        sys.exit(124)
    if os.WIFSIGNALED(status):
        sys.exit(128 + os.WTERMSIG(status))
    sys.exit(os.WEXITSTATUS(status))


if __name__ == "__main__":
    main()
