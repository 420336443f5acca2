#!/usr/bin/env bash
# run.sh BUILD - the console's first screen with 10,000 jobs in the queue (issue 15:
# under 300 ms). A real docketd and two agents (tests/system/lib/cluster.bash, 16
# declared GPUs, filled by two 8-GPU jobs), then JOBS pending jobs (arrays of 1000
# one-GPU tasks), then bench/console/first_screen.mjs in headless chromium: the overview
# (the first screen) and the queue page, RUNS times each. Stops what it started by pid.
# Needs console/node_modules (scripts/build-console.sh) and /usr/bin/chromium.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${1:-build-rel}
[[ $B == /* ]] || B=$ROOT/$B
JOBS=${JOBS:-10000}
RUNS=${RUNS:-9}
export DOCKET_BUILD=$B BATS_TEST_DIRNAME=$ROOT/tests/system CLUSTER_NAME=benchconsole
# shellcheck source=../../tests/system/lib/cluster.bash
source "$ROOT/tests/system/lib/cluster.bash"
trap 'set +e; cluster_stop' EXIT # (cluster_stop is written for bats, without errexit)
cluster_start
"$DOCKET" apply -f "$ROOT/examples/policy.yaml" >/dev/null
"$DOCKET" projects set explore max_queued=$((JOBS + 1000)) >/dev/null
for _ in 1 2; do
    "$DOCKET" submit --parsable -p vision --class training -g 8 --time 1h -- sleep 3600 >/dev/null
done
for ((i = 0; i < JOBS / 1000; i++)); do
    "$DOCKET" submit --parsable -p explore --class exploration -g 1 --time 10m \
        --array 0-999 -- true >/dev/null
done
pending=$(curl -sf -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/metrics" |
    awk '/^docket_jobs\{state="PENDING"/ { n += $2 } END { print n }')
echo "console bench: $pending jobs pending, 2 running, 2 nodes"
curl -s -o /dev/null -w "GET /v1/jobs?state=PENDING,HELD&limit=10000: %{size_download} bytes in %{time_total} s\n" \
    -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/v1/jobs?state=PENDING,HELD&limit=10000"
node "$ROOT/bench/console/first_screen.mjs" "http://127.0.0.1:$PORT" "$TOKEN" "$RUNS" overview queue
