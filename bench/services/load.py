#!/usr/bin/env python3
"""load.py - a steady HTTP load on a service's endpoint (bench/services/svc_bench.sh).

    load.py HOST:PORT RATE SECONDS OUT

Sends RATE requests a second for SECONDS (each on its own connection, from a pool of
threads so one slow answer does not hold the others back) and writes one line per
request to OUT: its start time (seconds since the epoch), its HTTP status (0: no
answer) and the body's first line. Prints the count and the failed ones.
"""
import sys
import threading
import time
import urllib.request

def main():
    addr, rate, seconds, out = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    lines, lock = [], threading.Lock()

    def one(at):
        status, body = 0, ""
        try:
            with urllib.request.urlopen("http://%s/" % addr, timeout=10) as r:
                status, body = r.status, r.read().decode(errors="replace").splitlines()[0]
        except urllib.error.HTTPError as e:
            status = e.code
        except Exception as e:  # refused, reset, timed out: no answer
            body = type(e).__name__
        with lock:
            lines.append("%.3f %d %s" % (at, status, body))

    threads, start = [], time.time()
    n = int(rate * seconds)
    for i in range(n):
        at = start + i / rate
        delay = at - time.time()
        if delay > 0:
            time.sleep(delay)
        t = threading.Thread(target=one, args=(at,))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    lines.sort()
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    failed = sum(1 for l in lines if l.split()[1] != "200")
    print("requests %d failed %d" % (len(lines), failed))

if __name__ == "__main__":
    main()
