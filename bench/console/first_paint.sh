#!/usr/bin/env bash
# first_paint.sh BUILD - the console's first meaningful paint with 10,000 jobs waiting and
# 2,500 finished (issue 40: at most 300 ms a page, measured to the paint). A real docketd
# and two agents (tests/system/lib/cluster.bash, 16 declared GPUs, filled by two 8-GPU
# jobs), FINISHED jobs submitted held and cancelled (terminal, in the Overview's history),
# then JOBS pending jobs (arrays of 1000 one-GPU tasks); then bench/console/first_paint.mjs
# in headless chromium: the Overview and the Queue page, RUNS times each, each time to the
# paint of the first render from data (Element Timing) and to the app's mark, and the
# longest task during a refresh. Prints the load average before and after: the figures
# mean little without it. Stops what it started by pid.
# Needs console/node_modules (scripts/build-console.sh) and /usr/bin/chromium.
#   JOBS=10000 FINISHED=2500 RUNS=9 bench/console/first_paint.sh build-rel
# RELOAD=1: each run loads the page a second time in its tab (the saved first screen);
# BREAKDOWN=1: where each run's time went (requests with their sizes, long tasks);
# API_DELAY_MS=N: every API reply N ms later (a docketd further away than loopback).
# BUILD may be another checkout's build (a "before"): this script and the page's
# measurement stay this checkout's.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${1:-build-rel}
[[ $B == /* ]] || B=$ROOT/$B
JOBS=${JOBS:-10000}
FINISHED=${FINISHED:-2500}
RUNS=${RUNS:-9}
export DOCKET_BUILD=$B BATS_TEST_DIRNAME=$ROOT/tests/system CLUSTER_NAME=benchpaint
# shellcheck source=../../tests/system/lib/cluster.bash
source "$ROOT/tests/system/lib/cluster.bash"
trap 'set +e; cluster_stop' EXIT # (cluster_stop is written for bats, without errexit)
cluster_start
"$DOCKET" apply -f "$ROOT/examples/policy.yaml" >/dev/null
"$DOCKET" projects set explore max_queued=$((JOBS + FINISHED + 1000)) >/dev/null
for _ in 1 2; do
    "$DOCKET" submit --parsable -p vision --class training -g 8 --time 1h -- sleep 3600 >/dev/null
done
api() { curl -sf -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT$1"; }
for ((i = 0; i < FINISHED; i += 1000)); do
    n=$((FINISHED - i > 1000 ? 999 : FINISHED - i - 1))
    "$DOCKET" submit --parsable -p explore --class exploration -g 1 --time 10m --hold \
        --array "0-$n" -- true >/dev/null
done
api "/v1/jobs?state=HELD&fields=id&limit=10000" | jq -r '.jobs[].id' |
    xargs -n 64 "$DOCKET" cancel >/dev/null # (64 jobs a command at most)
for ((i = 0; i < JOBS / 1000; i++)); do
    "$DOCKET" submit --parsable -p explore --class exploration -g 1 --time 10m \
        --array 0-999 -- true >/dev/null
done
pending=$(api /metrics | awk '/^docket_jobs\{state="PENDING"/ { n += $2 } END { print n }')
finished=$(api "/v1/jobs?state=terminal&fields=id&limit=10000" | jq '.jobs | length')
echo "console paint bench: $pending jobs pending, $finished finished, 2 running, 2 nodes; $(nproc) CPUs"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
node "$ROOT/bench/console/first_paint.mjs" "http://127.0.0.1:$PORT" "$TOKEN" "$RUNS" overview queue
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
