#!/usr/bin/env bash
# list_bench.sh - how long listing a deep queue takes: N pending jobs (arrays of 1,000
# tasks in one project, on one node registered through the agent API and never started),
# then each listing R times, medians side by side in one run:
#   - `docket queue` (its table: every active job read, the first 1,000 shown)
#   - `docket queue -n 100000` (the whole table), and with --json (full rows, paged)
#   - GET /v1/jobs?limit=10000 full rows, and with ?fields= the queue table's members
#
#   bench/cli/list_bench.sh [BUILD_DIR] [N] [R]     (default: build, 10000, 7)
#
# Build BUILD_DIR as a release build first (make build does). Results go to
# bench/RESULTS.md by hand.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build}
N=${2:-10000}
R=${3:-7}
DOCKET=$PWD/$B/src/cli/docket
DOCKETD=$PWD/$B/src/controller/docketd
[[ -x $DOCKET && -x $DOCKETD ]] || { echo "build $B first (make build)" >&2; exit 1; }

T=$(mktemp -d /tmp/docket-bench-list.XXXXXX)
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
export DOCKET_URL=unix:$T/state/docketd.sock
printf 'projects: [{name: bench, group: b, tier: normal, max_queued: -1}]\n' >"$T/p.yaml"
"$DOCKET" apply -f "$T/p.yaml" >/dev/null
JOIN=$("$DOCKET" token join)
curl -sf -o /dev/null -H 'Content-Type: application/json' "http://127.0.0.1:$PORT/v1/agent/register" \
    -d "{\"join_token\": \"$JOIN\", \"agent_version\": \"bench\", \"node\": {\"name\": \"n1\",
         \"gpu_type\": \"H100-80GB\", \"gpus\": 8, \"cpus\": 64, \"mem_mb\": 512000}}"
for ((i = 0; i < N; i += 1000)); do
    "$DOCKET" submit -p bench --array "0-$((N - i > 1000 ? 999 : N - i - 1))" -g 1 -- sleep 100 >/dev/null
done

median() { # COMMAND...: the median wall time of R runs, in seconds
    local t=()
    for ((k = 0; k < R; k++)); do
        local s e
        s=$(date +%s.%N)
        "$@" >/dev/null
        e=$(date +%s.%N)
        t+=("$(awk -v s="$s" -v e="$e" 'BEGIN { printf "%.4f", e - s }')")
    done
    printf '%s\n' "${t[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
S=$T/state/docketd.sock
F=id,name,project,user,tier,eff_tier,class,state,reason,gpus,gpu_type,nodes,submit_ms,start_ms,time_limit_ms,allocation
echo "jobs: $("$DOCKET" queue | tail -n 2 | head -n 1)"
printf '%-44s %s\n' "docket queue (first 1,000 shown)" "$(median "$DOCKET" queue) s"
printf '%-44s %s\n' "docket queue -n 100000" "$(median "$DOCKET" queue -n 100000) s"
printf '%-44s %s\n' "docket queue -n 100000 --json (full rows)" "$(median "$DOCKET" queue -n 100000 --json) s"
printf '%-44s %s\n' "GET /v1/jobs?limit=10000 (full rows)" \
    "$(median curl -sf --unix-socket "$S" -o /dev/null "http://x/v1/jobs?limit=10000") s"
printf '%-44s %s\n' "GET /v1/jobs?limit=10000&fields=(table's)" \
    "$(median curl -sf --unix-socket "$S" -o /dev/null "http://x/v1/jobs?limit=10000&fields=$F") s"
