#!/usr/bin/env bash
# What an online backup costs the loop (issue 32): docketd with JOBS held jobs, then
# `/healthz` probed every 10 ms and SUBMITS durable submissions over 16 connections
# (bench/submit_load.c), once with nothing else going on and once while
# `docket admin backup` runs. Prints the backup's size and time and, for each phase, the
# probe's p50/p99/max and submit_load's line.
#   bench/controller/backup.sh [BUILD_DIR]   (a release build: meson setup build --buildtype=release)
# Record the numbers in bench/RESULTS.md under "## Controller".
set -euo pipefail
B=${1:-build}
DOCKETD=$B/src/controller/docketd
DOCKET=$B/src/cli/docket
LOAD=$B/bench/controller/submit_load
JOBS=${JOBS:-300000}
SUBMITS=${SUBMITS:-5000}
T=$(mktemp -d /tmp/docket-bench.XXXXXX)
S=$T/state
pid= probe=
cleanup() {
    [[ -n $probe ]] && kill "$probe" 2>/dev/null
    [[ -n $pid ]] && kill "$pid" 2>/dev/null
    wait 2>/dev/null || true
    rm -rf "$T"
}
trap cleanup EXIT

"$DOCKETD" --state-dir "$S" --listen 127.0.0.1:0 --socket "$S/sock" --log-level info \
    --node-timeout 1h --max-array-tasks 100000 >>"$T/log" 2>&1 &
pid=$!
until [[ -s $S/docketd.port ]] && curl -sf -o /dev/null "http://127.0.0.1:$(cat "$S/docketd.port")/healthz"; do
    sleep 0.01
done
PORT=$(cat "$S/docketd.port"); TOK=$(cat "$S/admin.token"); U=http://127.0.0.1:$PORT
JT=$(curl -s -H "Authorization: Bearer $TOK" -X POST -d '{}' "$U/v1/join-tokens" | jq -r .join_token)
curl -s -o /dev/null -X POST -d "{\"join_token\": \"$JT\", \"node\": {\"name\": \"gpu01\",
    \"gpu_type\": \"H100\", \"gpus\": 8, \"cpus\": 64, \"mem_mb\": 512000}}" "$U/v1/agent/register"
echo "== filling with $JOBS held jobs (arrays of at most 100,000)"
left=$JOBS
while ((left > 0)); do
    n=$((left < 100000 ? left : 100000))
    curl -sf -o /dev/null -H "Authorization: Bearer $TOK" -H 'Content-Type: application/json' \
        -d "{\"command\": [\"train.py\"], \"gpus\": 1, \"gpu_type\": \"H100\", \"time_limit\": \"1h\",
             \"hold\": true, \"array\": \"0-$((n - 1))\"}" "$U/v1/jobs"
    left=$((left - n))
done
until [[ $(curl -s -H "Authorization: Bearer $TOK" "$U/healthz" | jq '.jobs | add') -ge $JOBS ]] 2>/dev/null; do
    sleep 0.5
done
ls -l "$S"/docket.db* | awk '{ print "  " $5, $9 }'

# probe FILE: GET /healthz every 10 ms, its time in ms, one a line, until killed
probe_start() {
    (while :; do
        curl -s -o /dev/null -w '%{time_total}\n' "$U/healthz"
        sleep 0.01
    done) >"$1" &
    probe=$!
}
probe_stop() { kill "$probe"; wait "$probe" 2>/dev/null || true; probe=; }
stats() {
    sort -n "$1" | awk '{ v[NR] = $1 * 1000 } END {
        printf "  /healthz: %d probes, p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
            NR, v[int(NR * 0.5) + 1], v[int(NR * 0.99) + 1], v[NR] }'
}
BODY='{"command": ["train.py"], "gpus": 8, "gpu_type": "H100", "time_limit": "1h", "hold": true}'

echo "== nothing else going on"
probe_start "$T/idle"
"$LOAD" --port "$PORT" --token-file "$S/admin.token" --n "$SUBMITS" --conns 16 --body "$BODY" | sed 's/^/  /'
sleep 2
probe_stop
stats "$T/idle"

echo "== while docket admin backup runs"
probe_start "$T/busy"
t0=$(date +%s%N)
(DOCKET_URL=$U DOCKET_TOKEN=$TOK "$DOCKET" admin backup -o "$T/b.db" --json >"$T/backup.json" &&
    date +%s%N >"$T/t1") &
bk=$!
"$LOAD" --port "$PORT" --token-file "$S/admin.token" --n "$SUBMITS" --conns 16 --body "$BODY" | sed 's/^/  /'
wait "$bk"
probe_stop
stats "$T/busy"
echo "  backup: $(jq -r .bytes "$T/backup.json") bytes, $(( ($(cat "$T/t1") - t0) / 1000000 )) ms for the CLI;" \
    "docketd's log (ms since the request: copy made, checked and hashed; all sent):"
grep -oE 'event=backup_(ready|sent).* ms=[0-9]+' "$T/log" | sed -E 's/ (bytes|schema|sha256)=[^ ]+//g; s/^/    /' || true
