#!/usr/bin/env python3
"""burst.py - CONNS concurrent keep-alive connections submitting held jobs to docketd
until STOP_FILE exists (bench/controller/failover.sh BURST=N, issue 32). Each connection
POSTs /v1/jobs with a name of its own (cCONN-SEQ) over and over; a 201 is an acknowledged
submission and its "name id" line goes to ACKED. A connection refused, or a 503 of a
standby, moves to the next URL of the list and goes on (what the CLI and the agents do); a
request whose connection breaks after it was sent has an unknown outcome: without --keys it
is counted, never sent again (a job may have been made), and the connection goes on with
the next name. With --keys (what the CLI does since issue 32's follow-up) each submission
carries an Idempotency-Key of its own and one cut is sent again, same name, same key, to
the next URL until it is answered (a 200 of a repeat is acknowledged as a 201 is), even
past STOP_FILE for up to 60 s: only what is still unanswered then counts as unknown;
"retried" counts the sends again, "replayed" the 200s (stored before the cut, its reply
lost: without the key each would have been lost to its client or stored twice).

    burst.py --urls http://127.0.0.1:P1,http://127.0.0.1:P2 --token-file F \
             --conns 2000 --stop STOP_FILE --acked ACKED [--keys]
"""
import argparse
import asyncio
import json
import os
import time
import urllib.parse


async def one_request(reader, writer, host, token, body, key):
    idem = f"Idempotency-Key: {key}\r\n" if key else ""
    req = (f"POST /v1/jobs HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
           f"{idem}Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}")
    writer.write(req.encode())
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    payload = await reader.readexactly(length) if length else b""
    return status, payload


async def worker(k, urls, token, stop, acked, counts, keys):
    seq, u = 0, k % len(urls)
    pending = False  # (--keys) the submission seq was cut: it goes again, same key
    deadline = None

    def going():
        nonlocal deadline
        if not os.path.exists(stop):
            return True
        if not pending:
            return False
        deadline = deadline or time.monotonic() + 60
        return time.monotonic() < deadline

    while going():
        url = urllib.parse.urlsplit(urls[u])
        try:
            reader, writer = await asyncio.open_connection(url.hostname, url.port)
        except OSError:
            u = (u + 1) % len(urls)
            await asyncio.sleep(0.05)
            continue
        try:
            while going():
                name = f"c{k}-{seq}"
                body = json.dumps({"command": ["true"], "name": name, "hold": True})
                key = f"burst-{os.getpid()}-{name}" if keys else None
                status, payload = await one_request(reader, writer, url.netloc, token, body, key)
                if status in (200, 201):
                    acked.write(f"{name} {json.loads(payload)['job']['id']}\n")
                    counts["acked"] += 1
                    counts["replayed"] += status == 200  # stored before the cut
                    seq += 1
                    pending = False
                elif status == 503:
                    break  # a standby: the other one leads
                else:
                    counts["refused"] += 1
                    await asyncio.sleep(0.05)
        except (OSError, asyncio.IncompleteReadError, ValueError):
            if keys:
                counts["retried"] += 1
                pending = True  # the same name and key again, to the next URL
            else:
                counts["unknown"] += 1
                seq += 1  # its outcome is unknown: never the same name again
        writer.close()
        u = (u + 1) % len(urls)
        await asyncio.sleep(0.01)
    if pending:
        counts["unknown"] += 1


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--urls", required=True)
    ap.add_argument("--token-file", required=True)
    ap.add_argument("--conns", type=int, default=2000)
    ap.add_argument("--stop", required=True)
    ap.add_argument("--acked", required=True)
    ap.add_argument("--keys", action="store_true")
    a = ap.parse_args()
    token = open(a.token_file).read().strip()
    urls = a.urls.split(",")
    counts = {"acked": 0, "refused": 0, "unknown": 0, "retried": 0, "replayed": 0}
    with open(a.acked, "a", buffering=1) as acked:
        await asyncio.gather(*(worker(k, urls, token, a.stop, acked, counts, a.keys)
                               for k in range(a.conns)))
    print(f"acked {counts['acked']} refused {counts['refused']} unknown {counts['unknown']}"
          f" retried {counts['retried']} replayed {counts['replayed']}")


asyncio.run(main())
