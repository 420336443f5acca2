#!/usr/bin/env bash
# array_latency.sh [BUILD_DIR] - how long one big array submission holds docketd's loop
# (issue 11): a /healthz probe every ~10 ms while an array of 1,000 tasks (the default
# max_array_tasks before they were written in slices) and one of 10,000 (SIZES="1000 10000
# 50000" for others, up to 100,000) are submitted, each once with a
# one-line command and once with a 131 KB script; NODES fake nodes (default 1, 8 GPUs
# each) take what fits, so the cycle after each submission starts up to 8 x NODES tasks. Prints the submit time and the worst
# /healthz round trip seen during it, then the same during a list of 10,000 jobs. Use a
# release build (meson setup build-r --buildtype=release); record the figures in
# bench/RESULTS.md under "Controller".
set -euo pipefail
B=${1:-build}
NODES=${NODES:-1}
T=$(mktemp -d /tmp/docket-bench-arr.XXXXXX)
S=$T/state
pid=
probe=
cleanup() {
    [[ -n $probe ]] && kill "$probe" 2>/dev/null
    [[ -n $pid ]] && kill "$pid" 2>/dev/null
    wait 2>/dev/null || true
    rm -rf "$T"
}
trap cleanup EXIT
"$B/src/controller/docketd" --state-dir "$S" --listen 127.0.0.1:0 --socket - --log-level warn \
    --node-timeout 1h --max-array-tasks 100000 --submit-rate 0 >>"$T/log" 2>&1 &
pid=$!
until [[ -s $S/docketd.port ]] && curl -sf -o /dev/null "http://127.0.0.1:$(cat "$S/docketd.port")/healthz"; do
    sleep 0.01
done
U=http://127.0.0.1:$(cat "$S/docketd.port")
TOK=$(cat "$S/admin.token")
JT=$(curl -s -H "Authorization: Bearer $TOK" -X POST -d '{}' "$U/v1/join-tokens" | jq -r .join_token)
for ((i = 0; i < NODES; i++)); do
    curl -s -o /dev/null -X POST -d "{\"join_token\": \"$JT\", \"node\": {\"name\": \"n$i\",
        \"gpu_type\": \"H100\", \"gpus\": 8, \"cpus\": 64, \"mem_mb\": 512000}}" "$U/v1/agent/register"
done
line=$(head -c 1000 /dev/zero | tr '\0' x)
bodies() { # TASKS: small.json and big.json
    printf '{"gpus": 1, "array": "0-%d", "command": ["true"]}' $(($1 - 1)) >"$T/small.json"
    {
        printf '{"gpus": 1, "array": "0-%d", "script": "#!/bin/sh\\n' $(($1 - 1))
        for ((i = 0; i < 131; i++)); do printf 'echo %s\\n' "$line"; done
        printf '"}'
    } >"$T/big.json"
}

run() {
    local name=$1 file=$2 t
    : >"$T/probe"
    (while :; do curl -s -o /dev/null -w '%{time_total}\n' "$U/healthz" >>"$T/probe"; sleep 0.01; done) &
    probe=$!
    sleep 0.2
    t=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' -H "Authorization: Bearer $TOK" \
        -H 'Content-Type: application/json' --data-binary "@$file" "$U/v1/jobs")
    sleep 0.3
    kill "$probe"; wait "$probe" 2>/dev/null || true; probe=
    sort -n "$T/probe" | awk -v n="$name" -v t="$t" '{ a[NR] = $1 } END {
        printf "%s: submit %s s (HTTP %s); /healthz during it: %d probes, p50 %.1f ms, worst %.1f ms\n",
            n, substr(t, 5), substr(t, 1, 3), NR, a[int(NR / 2) + 1] * 1000, a[NR] * 1000 }'
}
for TASKS in ${SIZES:-1000 10000}; do
    bodies "$TASKS"
    run "array of $TASKS, one-line command" "$T/small.json"
    run "array of $TASKS, 131 KB script" "$T/big.json"
done
# the same probe while the first page of GET /v1/jobs?limit=10000 streams (limits.bats
# checks it goes out a slice a loop turn; this is how long /healthz waits meanwhile)
: >"$T/probe"
(while :; do curl -s -o /dev/null -w '%{time_total}\n' "$U/healthz" >>"$T/probe"; sleep 0.01; done) &
probe=$!
sleep 0.2
t=$(curl -s -o /dev/null -w '%{http_code} %{time_total} %{size_download}' -H "Authorization: Bearer $TOK" \
    "$U/v1/jobs?limit=10000")
sleep 0.3
kill "$probe"; wait "$probe" 2>/dev/null || true; probe=
sort -n "$T/probe" | awk -v t="$t" '{ a[NR] = $1 } END { split(t, f, " ");
    printf "list of 10,000: %s s, %d bytes (HTTP %s); /healthz during it: %d probes, p50 %.1f ms, worst %.1f ms\n",
        f[2], f[3], f[1], NR, a[int(NR / 2) + 1] * 1000, a[NR] * 1000 }'
echo "database + WAL: $(du -cb "$S"/docket.db* | tail -n 1 | cut -f1) bytes"
