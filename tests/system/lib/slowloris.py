#!/usr/bin/env python3
"""slowloris.py PORT N SECONDS ADDR...: a slowloris against docketd on 127.0.0.1:PORT,
for seams_budget.bats.

Holds N connections open, spread over the source addresses given (127.0.0.2, 127.0.0.3,
...: every 127/8 address is this machine's on Linux), each trickling a request head with
no token one byte a round (a round every 0.2 s), and opens new ones for those that docketd
closes, as a slowloris does (up to 8 a round: 40 a second, a trickle, not a flood), until SECONDS pass or the file named by the
environment variable SLOWLORIS_STOP exists.
Writes "open=O opened=T closed=C" to the file SLOWLORIS_STATUS after every round: how
many it holds now, how many it ever opened, how many docketd closed.
"""
import os
import socket
import sys
import time

HEAD = b"GET /v1/nodes HTTP/1.1\r\nHost: docketd\r\n" + b"X-Slow: " + b"a" * 4000


class Conn:
    def __init__(self, port, addr):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind((addr, 0))
        self.sock.settimeout(5)
        self.sock.connect(("127.0.0.1", port))  # loopback: the kernel completes it at once
        self.sock.setblocking(False)
        self.sent = 0

    def alive(self):
        """Send the next byte; False once docketd closed (or answered: a 503 is closed too)."""
        try:
            self.sock.recv(1, socket.MSG_PEEK)
            return False  # an answer (a 503) or the end: either way this one is done
        except BlockingIOError:
            pass
        except OSError:
            return False
        try:
            self.sock.send(HEAD[self.sent:self.sent + 1])
            self.sent += 1
        except BlockingIOError:
            pass
        except OSError:
            return False
        return True


def main():
    port, n, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    addrs = sys.argv[4:]
    stop, status = os.environ["SLOWLORIS_STOP"], os.environ["SLOWLORIS_STATUS"]
    conns, opened, closed = [], 0, 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not os.path.exists(stop):
        kept = []
        for c in conns:
            if c.alive():
                kept.append(c)
            else:
                c.sock.close()
                closed += 1
        conns = kept
        fresh = 0
        while len(conns) < n and fresh < 8:
            fresh += 1
            try:
                conns.append(Conn(port, addrs[opened % len(addrs)]))
                opened += 1
            except OSError:
                break
        with open(status + ".tmp", "w") as f:
            f.write(f"open={len(conns)} opened={opened} closed={closed}\n")
        os.replace(status + ".tmp", status)
        time.sleep(0.2)
    for c in conns:
        c.sock.close()


if __name__ == "__main__":
    main()
