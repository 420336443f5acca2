#!/usr/bin/env bash
# submit_bench.sh - 1,000 sequential `docket submit` calls from a shell loop, a new
# process each time as users and workflow tools call it, against a real docketd on a
# temporary state directory: submissions per second, over the Unix socket and over TCP
# with a token. Jobs are submitted held to one node registered through the agent API
# (nothing runs them, so no agent is needed).
#
#   bench/cli/submit_bench.sh [BUILD_DIR] [N]     (default: build, 1000)
#
# Build BUILD_DIR as a release build first (make build does). Prints one line per
# transport: "unix: 1000 submits in 2.345 s = 426/s". Results go to bench/RESULTS.md by hand.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build}
N=${2:-1000}
DOCKET=$B/src/cli/docket
DOCKETD=$B/src/controller/docketd
[[ -x $DOCKET && -x $DOCKETD ]] || { echo "build $B first (make build)" >&2; exit 1; }

T=$(mktemp -d /tmp/docket-bench-cli.XXXXXX)
cleanup() {
    [[ -n ${PID:-} ]] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT

mkdir -p "$T/state"
"$DOCKETD" --state-dir "$T/state" --listen 127.0.0.1:0 --socket "$T/state/docketd.sock" \
    --log-level warn --log-file "$T/docketd.log" &
PID=$!
for _ in $(seq 200); do [[ -S $T/state/docketd.sock && -s $T/state/docketd.port ]] && break; sleep 0.05; done
PORT=$(cat "$T/state/docketd.port")
TOKEN=$(cat "$T/state/admin.token")
export DOCKET_URL=unix:$T/state/docketd.sock
printf 'projects: [{name: bench, group: b, tier: normal, max_queued: -1}]\n' >"$T/p.yaml"
"$DOCKET" apply -f "$T/p.yaml" >/dev/null
# one node, registered through the agent endpoint, so jobs pass "could it ever fit"
JOIN=$("$DOCKET" token join)
curl -sf -o /dev/null -H 'Content-Type: application/json' "http://127.0.0.1:$PORT/v1/agent/register" \
    -d "{\"join_token\": \"$JOIN\", \"agent_version\": \"bench\", \"node\": {\"name\": \"n1\",
         \"gpu_type\": \"H100-80GB\", \"gpus\": 8, \"cpus\": 64, \"mem_mb\": 512000}}"

run() { # LABEL
    local start end i
    start=$(date +%s.%N)
    for ((i = 0; i < N; i++)); do
        "$DOCKET" submit -p bench --hold --parsable -- true >/dev/null
    done
    end=$(date +%s.%N)
    awk -v l="$1" -v n="$N" -v s="$start" -v e="$end" \
        'BEGIN { printf "%s: %d submits in %.3f s = %.0f/s\n", l, n, e - s, n / (e - s) }'
}

# the floor: the same loop starting a process that does nothing
start=$(date +%s.%N)
for ((i = 0; i < N; i++)); do /bin/true; done
end=$(date +%s.%N)
awk -v n="$N" -v s="$start" -v e="$end" \
    'BEGIN { printf "floor (/bin/true): %d in %.3f s = %.0f/s\n", n, e - s, n / (e - s) }'

# docket's own start-up: a verb that sends nothing
start=$(date +%s.%N)
for ((i = 0; i < N; i++)); do "$DOCKET" help >/dev/null; done
end=$(date +%s.%N)
awk -v n="$N" -v s="$start" -v e="$end" \
    'BEGIN { printf "docket help (no request): %d in %.3f s = %.0f/s\n", n, e - s, n / (e - s) }'

run "unix socket"
DOCKET_URL=http://127.0.0.1:$PORT DOCKET_TOKEN=$TOKEN run "tcp + token"
count=$("$DOCKET" queue -p bench --state HELD --limit 100000 --json | jq '.jobs | length')
echo "held jobs in docketd: $count (expected $((2 * N)))"
