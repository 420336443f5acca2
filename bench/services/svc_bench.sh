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
DOCKET=$B/src/cli/docket
DOCKETD=$B/src/controller/docketd
AGENT=$B/src/agent/docket-node
[[ -x $DOCKET && -x $DOCKETD && -x $AGENT ]] || { echo "build $B first (make build)" >&2; exit 1; }
HAPROXY=$(command -v haproxy) || { echo "haproxy is not installed" >&2; exit 1; }

T=$(mktemp -d /tmp/docket-bench-svc.XXXXXX)
PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    [[ ! -s $T/ctl/lb/haproxy.pid ]] || kill "$(cat "$T/ctl/lb/haproxy.pid")" 2>/dev/null || true
    rm -rf "$T"
}
trap cleanup EXIT
wait_for() { # SECONDS CMD...
    local deadline=$((SECONDS + $1))
    shift
    until "$@"; do ((SECONDS < deadline)) || return 1; sleep 0.05; done
}
ms() { date +%s%3N; }

base=$((40000 + ($$ % 200) * 100))
mkdir -p "$T/ctl" "$T/w"
"$DOCKETD" --state-dir "$T/ctl" --listen 127.0.0.1:0 --socket "$T/ctl/docketd.sock" \
    --heartbeat-wait 2s --log-level warn --log-file "$T/docketd.log" \
    --lb-haproxy "$HAPROXY" --lb-ports "$((base + 60))-$((base + 99))" &
PIDS+=($!)
wait_for 20 test -S "$T/ctl/docketd.sock"
wait_for 20 test -s "$T/ctl/docketd.port"
PORT=$(cat "$T/ctl/docketd.port")
export DOCKET_URL=unix:$T/ctl/docketd.sock
cat >"$T/policy.yaml" <<'YAML'
tiers: [{name: high}, {name: normal}, {name: low}]
classes:
  - {name: training}
  - {name: experiment}
  - {name: exploration}
  - {name: interactive}
  - {name: service, default_limit: 0s, preemptible: false, restart_on_failure: true}
settings: {service_restart_delay: 0s}
projects: [{name: web, tier: normal}]
YAML
"$DOCKET" apply -f "$T/policy.yaml" >/dev/null
JOIN=$("$DOCKET" token join)
cg=()
[[ $(id -u) == 0 ]] || cg=(--no-cgroups)
for n in a b; do
    off=$([[ $n == a ]] && echo 0 || echo 30)
    "$AGENT" --controller "http://127.0.0.1:$PORT" --join-token "$JOIN" --name "bench-$n" \
        --addr 127.0.0.1 --service-ports "$((base + off))-$((base + off + 29))" \
        --gpus 8xH100-80GB --cpus 16 --mem 64G --state-dir "$T/agent-$n" --allow-root-jobs \
        --log-level warn --log-file "$T/agent-$n.log" "${cg[@]}" &
    PIDS+=($!)
done
wait_for 30 bash -c "[[ \$('$DOCKET' nodes --json | jq '[.nodes[] | select(.state == \"UP\")] | length') == 2 ]]"

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
