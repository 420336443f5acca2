#!/usr/bin/env bash
# Controller benchmarks (issue 3): durable submission rate with 16 concurrent clients,
# restart time with 100k jobs in the database, RSS per pending job.
#   bench/controller/run.sh [BUILD_DIR]   (a release build: meson setup build --buildtype=release)
# Prints the numbers; record them in bench/RESULTS.md under "## Controller".
set -euo pipefail
B=${1:-build}
DOCKETD=$B/src/controller/docketd
LOAD=$B/bench/controller/submit_load
N1=${N1:-20000}
NTOTAL=${NTOTAL:-100000}
T=$(mktemp -d /tmp/docket-bench.XXXXXX)
S=$T/state
pid=
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$T"; }
trap cleanup EXIT

start() {
    rm -f "$S/docketd.port"
    local t0; t0=$(date +%s%N)
    "$DOCKETD" --state-dir "$S" --listen 127.0.0.1:0 --socket - --log-level warn \
        --node-timeout 1h >>"$T/log" 2>&1 &
    pid=$!
    until [[ -s $S/docketd.port ]] && curl -sf -o /dev/null "http://127.0.0.1:$(cat "$S/docketd.port")/healthz"; do
        sleep 0.01
    done
    START_MS=$(( ($(date +%s%N) - t0) / 1000000 ))
}
rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$pid/status"; }

start
PORT=$(cat "$S/docketd.port"); TOK=$(cat "$S/admin.token"); U=http://127.0.0.1:$PORT
JT=$(curl -s -H "Authorization: Bearer $TOK" -X POST -d '{}' "$U/v1/join-tokens" | jq -r .join_token)
curl -s -o /dev/null -X POST -d "{\"join_token\": \"$JT\", \"node\": {\"name\": \"gpu01\",
    \"gpu_type\": \"H100\", \"gpus\": 8, \"cpus\": 64, \"mem_mb\": 512000}}" "$U/v1/agent/register"
BODY='{"command": ["train.py"], "gpus": 8, "gpu_type": "H100", "time_limit": "1h"}'
rss0=$(rss_kb)
echo "== durable submissions: $N1 over 16 connections (pending jobs, 1 node)"
"$LOAD" --port "$PORT" --token-file "$S/admin.token" --n "$N1" --conns 16 --body "$BODY"
echo "== filling to $NTOTAL jobs"
"$LOAD" --port "$PORT" --token-file "$S/admin.token" --n $((NTOTAL - N1)) --conns 16 --body "$BODY"
curl -s -H "Authorization: Bearer $TOK" "$U/metrics" | grep -E 'commit_seconds_(sum|count)'
echo "docketd CPU for all submissions: $(awk '{printf "%.2f s", ($14 + $15) / 100}' "/proc/$pid/stat")"
sleep 1
rss1=$(rss_kb)
pending=$(curl -s -H "Authorization: Bearer $TOK" "$U/healthz" | jq '.jobs.PENDING // 0')
echo "== memory: RSS $rss0 KiB empty, $rss1 KiB with $pending pending:" \
     "$(( (rss1 - rss0) * 1024 / (pending > 0 ? pending : 1) )) bytes per pending job"
kill -TERM "$pid"; wait "$pid" || true; pid=
echo "== restart with $NTOTAL jobs in the database ($(du -h "$S/docket.db" | cut -f1) + WAL)"
start
echo "restart to healthy: $START_MS ms (docketd: $(grep -o 'state_loaded ms=[0-9]*' "$T/log" | tail -n 1 || true))"
grep -o 'event=restored.*' "$T/log" | tail -n 1 || true
echo "RSS after restart: $(rss_kb) KiB"
curl -s -H "Authorization: Bearer $TOK" "$U/metrics" >/dev/null || true
echo "== group commit (last run)"
curl -s -H "Authorization: Bearer $TOK" "http://127.0.0.1:$(cat "$S/docketd.port")/metrics" | grep -E 'commit_seconds_(sum|count)' || true
