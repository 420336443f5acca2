#!/usr/bin/env bash
# svc_bench.sh - a 2-replica HTTP service behind HAProxy (docs/services.md, issue 36) on a
# 2-node cluster on loopback: a real docketd running Debian's haproxy and two real
# docket-node agents, started here on a temporary state directory and stopped by pid at
# the end. The replica is python3's http.server behind a readiness probe (http /healthz,
# period 200ms). Each of R rounds sends RATE requests a second through the endpoint for
# SECONDS (load.py) and, a second in, kills one replica's process with kill -9; it
# reports the requests that failed (in % of all) and the time from the kill to the
# replica being ready again (its restart, its start and its first passing probe).
# Then one rolling update of the 2 replicas under the same load: its failed requests
# and its duration. Prints medians. Results go to bench/RESULTS.md by hand.
#
#   bench/services/svc_bench.sh [BUILD_DIR] [ROUNDS] [RATE] [SECONDS]
#   (default: build, 5, 200, 8)
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build}
R=${2:-5}
RATE=${3:-200}
SECS=${4:-8}
NAME=svc
# shellcheck source=bench/lib/cluster.sh
. bench/lib/cluster.sh
HAPROXY=$(command -v haproxy) || { echo "haproxy is not installed" >&2; exit 1; }
bench_cleanup_more() {
    [[ ! -s $T/ctl/lb/haproxy.pid ]] || kill "$(cat "$T/ctl/lb/haproxy.pid")" 2>/dev/null || true
}

# shellcheck source=tests/system/lib/ports.bash
. tests/system/lib/ports.bash
base=$(port_block 100)
mkdir -p "$T/w"
bench_docketd --lb-haproxy "$HAPROXY" --lb-ports "$((base + 60))-$((base + 99))"
"$DOCKET" apply -f tests/data/services-policy.yaml >/dev/null
AGENT_FLAGS_a="--addr 127.0.0.1 --service-ports $base-$((base + 29))"
AGENT_FLAGS_b="--addr 127.0.0.1 --service-ports $((base + 30))-$((base + 59))"
bench_agents a b

cat >"$T/server.py" <<'PY'
import http.server, os, sys
rep, port = os.environ["DOCKET_REPLICA"], int(os.environ["PORT"])
with open(os.path.join(sys.argv[1], "pid-" + rep), "w") as f:
    f.write(str(os.getpid()))
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    def do_GET(self):
        body = ("replica %s version %s\n" % (rep, os.environ.get("VERSION", "1"))).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
PY
spec() { # VERSION
    jq -n --arg v "$1" --arg py "$T/server.py" --arg w "$T/w" \
        '{name: "web", project: "web", replicas: 2, restart: {backoff: "100ms"},
          job: {command: ["python3", $py, $w], cpus: 1, env: {VERSION: $v}},
          probes: {readiness: {http: {path: "/"}, period: "200ms", failure_threshold: 1}}}'
}
spec 1 >"$T/v1.json"
"$DOCKET" services create -f "$T/v1.json" >/dev/null
ready2() { [[ $("$DOCKET" services show web --json | jq .service.ready) == 2 ]]; }
restarts() { "$DOCKET" services show web --json | jq '.service.restarts'; }
wait_for 60 ready2
EP=$("$DOCKET" services endpoint web)
echo "endpoint $EP, $R rounds of $RATE req/s for ${SECS}s, one replica killed a second in"

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
fails=() readies=()
for ((i = 1; i <= R; i++)); do
    python3 bench/services/load.py "$EP" "$RATE" "$SECS" "$T/round$i" >"$T/round$i.sum" &
    lp=$!
    sleep 1
    slot=$((i % 2))
    before=$(restarts)
    t0=$(ms)
    kill -9 "$(cat "$T/w/pid-$slot")"
    wait_for 60 bash -c "[[ \$('$DOCKET' services show web --json | jq .service.restarts) -gt $before ]]"
    wait_for 60 ready2
    t1=$(ms)
    wait "$lp"
    read -r _ total _ failed <"$T/round$i.sum"
    pct=$(awk -v f="$failed" -v t="$total" 'BEGIN {printf "%.2f", 100 * f / t}')
    echo "round $i: $failed of $total requests failed ($pct %), replica ready again after $((t1 - t0)) ms"
    [[ $failed == 0 ]] || awk '$2 != 200 { print "    failed:", $2, $3 }' "$T/round$i" | sort | uniq -c
    fails+=("$pct")
    readies+=("$((t1 - t0))")
    sleep 1
done
echo "median failed: $(printf '%s\n' "${fails[@]}" | median) %"
echo "median kill to ready: $(printf '%s\n' "${readies[@]}" | median) ms"

spec 2 >"$T/v2.json"
python3 bench/services/load.py "$EP" "$RATE" "$((SECS + 4))" "$T/update" >"$T/update.sum" &
lp=$!
sleep 1
t0=$(ms)
"$DOCKET" services update web -f "$T/v2.json" --wait >/dev/null
t1=$(ms)
wait "$lp"
read -r _ total _ failed <"$T/update.sum"
echo "rolling update of 2 replicas: $((t1 - t0)) ms, $failed of $total requests failed"
