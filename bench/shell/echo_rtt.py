#!/usr/bin/env python3
"""echo_rtt.py - the keystroke echo round trip of an interactive session (shell_bench.sh).

    echo_rtt.py K COMMAND [ARGS...]

Runs COMMAND (a `docket shell` whose remote command writes back each byte it reads and
ends after K: `dd bs=1 count=K` on a terminal without echo or line editing) on a
pseudo-terminal, waits for it to attach, then types K keystrokes one at a time, each only
once the previous one came back, and prints each round trip in ms, one a line.
"""
import os
import pty
import select
import sys
import time


def read_until(fd, want, timeout=60):
    got = b""
    deadline = time.monotonic() + timeout
    while want not in got:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise SystemExit("echo_rtt: %r did not come back" % want)
        got += os.read(fd, 4096)
    return got


def main():
    k = int(sys.argv[1])
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(sys.argv[2], sys.argv[2:])
    head = read_until(fd, b"session ")
    if b"\n" not in head.split(b"session ", 1)[1]:
        read_until(fd, b"\n")
    time.sleep(0.5)  # the remote stty has run
    for i in range(k):
        key = bytes([ord("a") + i % 26])
        t0 = time.perf_counter()
        os.write(fd, key)
        read_until(fd, key)
        print("%.3f" % ((time.perf_counter() - t0) * 1000))
    os.waitpid(pid, 0)


if __name__ == "__main__":
    main()
