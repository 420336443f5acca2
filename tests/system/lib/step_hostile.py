#!/usr/bin/env python3
"""step_hostile.py - a hostile process against srun's step link (srun_step.bats).

  squat OUT PORT...    hold each PORT (every interface, as the old step host did) and
                       write to OUT whatever any connection sends; runs until killed
  probe OUT HOST:PORT  connect to a step host as a client without the key: an old-style
                       request line with a guessed key, silence, then bytes that look like
                       a TLS hello; write to OUT every byte the host sends back
  hold N HOST:PORT FILE  open N connections to a step host and keep them, saying
                       nothing (a flood of idle connections); writes FILE once all are
                       open; runs until killed
  fake OUT PORTFILE    pose as a step host (no key): listen on 127.0.0.1:0, write the port
                       to PORTFILE, and write to OUT every byte a client sends, answering
                       with an old-style exit frame; runs until killed

Whatever it captures, the test greps for the job's key and secret.
"""
import os
import socket
import struct
import sys
import threading


def capture(out, data):
    with open(out, "ab") as f:
        f.write(data)


def drain(conn, out, reply=b""):
    conn.settimeout(3)
    try:
        while True:
            data = conn.recv(65536)
            if not data:
                break
            capture(out, data)
            if reply:
                conn.sendall(reply)
                reply = b""
    except OSError:
        pass
    conn.close()


def serve(lsock, out, reply=b""):
    while True:
        conn, _ = lsock.accept()
        threading.Thread(target=drain, args=(conn, out, reply), daemon=True).start()


def squat(out, ports):
    open(out, "ab").close()
    socks = []
    for p in ports:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", int(p)))
        except OSError as e:
            print("cannot hold port %s: %s" % (p, e), file=sys.stderr)
            continue
        s.listen(16)
        socks.append(s)
        threading.Thread(target=serve, args=(s, out), daemon=True).start()
    print("holding %d port(s)" % len(socks), flush=True)
    threading.Event().wait()


def probe(out, hostport):
    host, port = hostport.rsplit(":", 1)
    open(out, "ab").close()
    guesses = [
        b'{"key":"guess","argv":["env"],"node":1,"nodes":2,"ntasks":2,"count":1,"first":1}\n',
        b"",
        bytes([0x16, 0x03, 0x01, 0x00, 0x40]) + os.urandom(64),
    ]
    for g in guesses:
        try:
            c = socket.create_connection((host, int(port)), timeout=5)
            if g:
                c.sendall(g)
            drain(c, out)
        except OSError as e:
            print("probe: %s" % e, file=sys.stderr)


def hold(n, hostport, done):
    host, port = hostport.rsplit(":", 1)
    conns = []
    for _ in range(n):
        try:
            conns.append(socket.create_connection((host, int(port)), timeout=5))
        except OSError as e:
            print("hold: %s" % e, file=sys.stderr)
    with open(done, "w") as f:
        f.write("%d\n" % len(conns))
    threading.Event().wait()


def fake(out, portfile):
    open(out, "ab").close()
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    with open(portfile + ".tmp", "w") as f:
        f.write("%d\n" % s.getsockname()[1])
    os.rename(portfile + ".tmp", portfile)
    # what the old host sent when its task ended well: FR_EXIT, task 1, status 0
    serve(s, out, struct.pack("!BII", 3, 1, 4) + struct.pack("!I", 0))


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "squat":
        squat(sys.argv[2], sys.argv[3:])
    elif mode == "probe":
        probe(sys.argv[2], sys.argv[3])
    elif mode == "hold":
        hold(int(sys.argv[2]), sys.argv[3], sys.argv[4])
    elif mode == "fake":
        fake(sys.argv[2], sys.argv[3])
    else:
        sys.exit("usage: step_hostile.py squat|probe|hold|fake ...")
