#!/usr/bin/env python3
"""trickle.py PORT MODE SECONDS [TOKEN]: a client of docketd on 127.0.0.1:PORT, for limits.bats.

slow:      a request head sent one byte every 0.2 s, as a slowloris does, for at most
           SECONDS (the third argument; a generous bound, not a speed); prints "closed
           after N bytes" when docketd closes the connection before the head is whole,
           "never closed" when the bound passes first.
slowbody:  a whole head of a POST (with the token given as the fourth argument) whose
           body of 4,000 bytes is then sent one byte every 0.2 s; prints as slow does.
held:      SECONDS is "N:SECONDS": N connections, each proven by a request with the token
           (fourth argument) and its answer, then held open, idle, for SECONDS; prints
           "held N" (flushed) once all are, or "refused after K" when one is not answered.
keepalive: a whole request, its answer, then nothing for SECONDS (the third argument)
           on the same connection, then a second request; prints "second answered" or
           "closed".
"""
import socket
import sys
import time

REQ = b"GET /healthz HTTP/1.1\r\nHost: docketd\r\n\r\n"


def closed(sock):
    """True when the peer closed: readable with nothing to read (or reset)."""
    sock.setblocking(False)
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except ConnectionError:
        return True
    finally:
        sock.setblocking(True)


def answer(sock):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = sock.recv(4096)
        if not chunk:
            return None
        body += chunk
    return head.split(b"\r\n")[0]


def slow(port, seconds):
    sock = socket.create_connection(("127.0.0.1", port))
    head = b"GET /healthz HTTP/1.1\r\nHost: docketd\r\n" + b"X-Slow: " + b"a" * 4000
    deadline = time.monotonic() + seconds
    for sent in range(len(head)):
        if time.monotonic() > deadline:
            break
        if closed(sock):
            print(f"closed after {sent} bytes")
            return
        try:
            sock.sendall(head[sent:sent + 1])
        except (BrokenPipeError, ConnectionError):
            print(f"closed after {sent} bytes")
            return
        time.sleep(0.2)
    print("never closed")


def slowbody(port, seconds, token):
    sock = socket.create_connection(("127.0.0.1", port))
    body = b"{" + b" " * 3998 + b"}"
    sock.sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: docketd\r\nAuthorization: Bearer " +
                 token.encode() + b"\r\nContent-Type: application/json\r\n" +
                 b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n")
    deadline = time.monotonic() + seconds
    for sent in range(len(body)):
        if time.monotonic() > deadline:
            break
        if closed(sock):
            print(f"closed after {sent} bytes")
            return
        try:
            sock.sendall(body[sent:sent + 1])
        except (BrokenPipeError, ConnectionError):
            print(f"closed after {sent} bytes")
            return
        time.sleep(0.2)
    print("never closed")


def held(port, spec, token):
    n, seconds = spec.split(":")
    req = (b"GET /healthz HTTP/1.1\r\nHost: docketd\r\nAuthorization: Bearer " +
           token.encode() + b"\r\n\r\n")
    socks = []
    for i in range(int(n)):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(req)
        line = answer(sock)
        if not line or b" 200 " not in line:
            print(f"refused after {i}", flush=True)
            return
        socks.append(sock)
    print(f"held {len(socks)}", flush=True)
    time.sleep(float(seconds))


def keepalive(port, seconds):
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(REQ)
    if not answer(sock):
        print("first not answered")
        return
    time.sleep(seconds)
    try:
        sock.sendall(REQ)
        print("second answered" if answer(sock) else "closed")
    except (BrokenPipeError, ConnectionError):
        print("closed")


if __name__ == "__main__":
    if sys.argv[2] == "slow":
        slow(int(sys.argv[1]), float(sys.argv[3]))
    elif sys.argv[2] == "held":
        held(int(sys.argv[1]), sys.argv[3], sys.argv[4])
    elif sys.argv[2] == "slowbody":
        slowbody(int(sys.argv[1]), float(sys.argv[3]), sys.argv[4])
    else:
        keepalive(int(sys.argv[1]), float(sys.argv[3]))
