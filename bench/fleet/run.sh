#!/usr/bin/env bash
# run.sh [BUILD_DIR] - the fleet benchmark (issue 11): AGENTS simulated agents (default
# 10000; bench/fleet/fleet.c) speak the agent protocol to a real docketd on loopback, one
# GPU each (GPUS). Measures, printing one line each (bench/RESULTS.md "Fleet"):
#   1. registration of the whole fleet and docketd's RSS per node;
#   2. TASKS (default 10000) one-line tasks submitted while the fleet runs, as arrays of
#      ARRAY tasks each (default TASKS: one array; ARRAY=1000 is the default
#      max_array_tasks), one after the other: the submit time of each, the starts/s until every task has started, /healthz round trips
#      (p50/p99/max, a probe every 10 ms) from the first submission to the last 201 and
#      from the first submission to the last start, the
#      scheduling cycle's histogram (docket_cycle_seconds) over the run;
#   3. no false UNREACHABLE: agents told their node is not UP, nodes not UP in /v1/nodes;
#   4. a restart of docketd with the fleet connected: the time until every agent has had
#      a heartbeat answered again, and the kernel's count of dropped connection attempts
#      (TcpExt ListenOverflows/ListenDrops, for the whole machine: run it quiet).
# HOLD=1 submits the tasks held and stops after the submissions: /healthz during them with
# no start to compete (the fleet still heartbeating). A second probe GETs /v1/jobs/ID of one
# held job (authenticated; since a8a659f its reply leaves at once, as nothing unsynced
# wrote that job: docs/controller.md "Reads that leave at once") every 10 ms, beside
# /healthz (answered at once since h-ckpt); the largest
# size of the WAL seen (sampled every 0.2 s) is printed with the starts. RESTART=0 skips
# part 4. FLEET=PATH takes the fleet binary from elsewhere (to run an older docketd,
# B, with this script's probes). KEEP_LOG=FILE copies docketd's log there at the end
# (with DOCKETD_TURN_LOG_MS=N in the environment it holds a `turn` line for every loop
# turn of N ms or more, src/controller/turns.c). PERF_OUT=FILE: perf record --call-graph fp
# of docketd from the first submission to the last start (a -fno-omit-frame-pointer build).
# STARTS=N applies the policy setting max_starts_per_cycle=N before the submissions.
# Use a release build: meson setup build-r --buildtype=release && ninja -C build-r.
# The fleet and docketd each hold one descriptor per agent: ulimit -n must exceed AGENTS.
set -euo pipefail
B=${1:-build-r}
AGENTS=${AGENTS:-10000}
TASKS=${TASKS:-10000}
ARRAY=${ARRAY:-$TASKS}
GPUS=${GPUS:-1}
JOB_MS=${JOB_MS:-0}
WAIT=${WAIT:-25s}
T=$(mktemp -d /tmp/docket-bench-fleet.XXXXXX)
S=$T/state
FLEET=${FLEET:-$B/bench/fleet/fleet}
dpid=
fpid=
ppid_=
p2pid=
walpid=
cleanup() {
    [[ -n $fpid ]] && kill "$fpid" 2>/dev/null
    [[ -n $ppid_ ]] && kill "$ppid_" 2>/dev/null
    [[ -n $p2pid ]] && kill "$p2pid" 2>/dev/null
    [[ -n $walpid ]] && kill "$walpid" 2>/dev/null
    [[ -n ${perfpid:-} ]] && kill -INT "$perfpid" 2>/dev/null
    [[ -n $dpid ]] && kill "$dpid" 2>/dev/null
    wait 2>/dev/null || true
    [[ -n ${KEEP_LOG:-} ]] && cp "$T/log" "$KEEP_LOG"
    rm -rf "$T"
}
trap cleanup EXIT

start_docketd() {
    rm -f "$S/docketd.port"
    "$B/src/controller/docketd" --state-dir "$S" --listen 127.0.0.1:${PORT:-0} --socket - \
        --log-level warn --node-timeout 60s --heartbeat-wait "$WAIT" \
        --expected-nodes "$AGENTS" --max-array-tasks "$ARRAY" --submit-rate 0 >>"$T/log" 2>&1 &
    dpid=$!
    until [[ -s $S/docketd.port ]] && curl -sf -o /dev/null "http://127.0.0.1:$(cat "$S/docketd.port")/healthz"; do
        sleep 0.02
    done
    PORT=$(cat "$S/docketd.port")
}
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$dpid/status"; }
st() { jq -r "$1" "${2:-$T/status.json}" 2>/dev/null || echo 0; }
pst() { st "$1" "$T/probe.json"; }
p2st() { st "$1" "$T/probe2.json"; }
mark() { kill -USR1 "$fpid" "$ppid_" "$p2pid"; }
probe_line() { # LABEL STATUS_FN
    echo "$1: n=$($2 .healthz_ms_mark.n) p50 $($2 '.healthz_ms_mark.p50*100|floor/100') ms p99 $($2 '.healthz_ms_mark.p99*100|floor/100') ms max $($2 '.healthz_ms_mark.max*100|floor/100') ms"
}
# Nodes not UP, over every page of /v1/nodes.
nodes_not_up() {
    local next="" n=0 page
    while :; do
        page=$(curl -s -H "Authorization: Bearer $TOK" "$U/v1/nodes?limit=10000${next:+&after=$next}")
        n=$((n + $(jq '[.nodes[] | select(.state != "UP")] | length' <<<"$page")))
        next=$(jq -r '.next // ""' <<<"$page")
        [[ -n $next ]] || break
    done
    echo "$n"
}
wait_for() { # JQ_CONDITION TIMEOUT_S
    local end=$((SECONDS + $2))
    until [[ $(st "$1") == true ]]; do
        ((SECONDS < end)) || { echo "timeout waiting for $1: $(cat "$T/status.json")" >&2; return 1; }
        sleep 0.2
    done
}
drops() { awk '/^TcpExt:/ {if (!h) {split($0, k); h=1} else {for (i=2;i<=NF;i++) if (k[i]=="ListenOverflows"||k[i]=="ListenDrops") s+=$i}} END {print s+0}' /proc/net/netstat; }
cycle_hist() {
    curl -s -H "Authorization: Bearer $TOK" "$U/metrics" |
        awk -F'[{}" ]+' '/^docket_cycle_seconds_bucket/ {le[n] = $3; cum[n++] = $NF}
            /^docket_cycle_seconds_sum/ {sum = $NF} /^docket_cycle_seconds_count/ {cnt = $NF}
            END {for (i = 0; i < n; i++) {if (!p50 && cum[i] >= cnt * 0.5) p50 = le[i]
                                          if (!p99 && cum[i] >= cnt * 0.99) p99 = le[i]}
                 printf "%d cycles, mean %.3f ms, p50 <= %s s, p99 <= %s s (histogram buckets)\n",
                        cnt, cnt ? sum / cnt * 1000 : 0, p50, p99}'
}

start_docketd
U=http://127.0.0.1:$PORT
TOK=$(cat "$S/admin.token")
JT=$(curl -s -H "Authorization: Bearer $TOK" -X POST -d '{"ttl": "24h"}' "$U/v1/join-tokens" | jq -r .join_token)
echo "== fleet of $AGENTS agents, $GPUS GPU each, heartbeat wait $WAIT ($(nproc) CPUs, ulimit -n $(ulimit -n))"
rss0=$(rss_kib)
t0=$(date +%s.%N)
"$FLEET" --port "$PORT" --join-token "$JT" --agents "$AGENTS" --gpus "$GPUS" \
    --job-ms "$JOB_MS" --probe-ms 0 --status "$T/status.json" 2>>"$T/fleet.log" &
fpid=$!
"$FLEET" --port "$PORT" --agents 0 --probe-ms 10 --status "$T/probe.json" \
    2>>"$T/fleet.log" &
ppid_=$!
wait_for ".registered == $AGENTS" 600
t1=$(date +%s.%N)
JID=$(curl -s -H "Authorization: Bearer $TOK" -d '{"gpus": 1, "command": ["true"], "hold": true}' \
    "$U/v1/jobs" | jq -r '.id // .job.id // .jobs[0].id')
"$FLEET" --port "$PORT" --agents 0 --probe-ms 10 --probe-path "/v1/jobs/$JID" \
    --probe-token "$TOK" --status "$T/probe2.json" 2>>"$T/fleet.log" &
p2pid=$!
sleep 2
rss1=$(rss_kib)
echo "registered: $AGENTS in $(echo "$t1 - $t0" | bc) s; docketd RSS ${rss0} KiB -> ${rss1} KiB: $(((rss1 - rss0) * 1024 / AGENTS)) bytes per node"

if [[ -n ${STARTS:-} ]]; then # the policy's max_starts_per_cycle
    c=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOK" \
        -H "Content-Type: application/json" -d "{\"settings\": {\"max_starts_per_cycle\": $STARTS}}" "$U/v1/policy")
    echo "policy max_starts_per_cycle=$STARTS: HTTP $c"
fi
echo "== $TASKS tasks (one-line command) in arrays of $ARRAY while the fleet runs"
(while :; do stat -c %s "$S/docket.db-wal" 2>/dev/null; sleep 0.2; done >"$T/walsizes") &
walpid=$!
mark
if [[ -n ${PERF_OUT:-} ]]; then # perf record of docketd from the first submission to the last start
    perf record -q --call-graph fp -p "$dpid" -o "$PERF_OUT" 2>>"$T/fleet.log" &
    perfpid=$!
fi
sleep 0.5
for ((first = 0; first < TASKS; first += ARRAY)); do
    last=$((first + ARRAY - 1 < TASKS - 1 ? first + ARRAY - 1 : TASKS - 1))
    ts=$(date +%s.%N)
    code=$(curl -s -o "$T/submit.json" -w '%{http_code}' -H "Authorization: Bearer $TOK" \
        -d "{\"gpus\": 1, \"array\": \"0-$((last - first))\", \"command\": [\"true\"]${HOLD:+, \"hold\": true}}" "$U/v1/jobs")
    te=$(date +%s.%N)
    echo "$code $(echo "($te - $ts) * 1000" | bc | cut -d. -f1)" >>"$T/submits"
done
kill -USR2 "$ppid_" "$p2pid"
sleep 0.2
probe_line "healthz from the first submit to the last 201" pst
probe_line "GET /v1/jobs/$JID from the first submit to the last 201" p2st
if [[ -n ${HOLD:-} ]]; then # held: the submissions alone, no start follows
    echo "submits (HTTP status, ms): $(sort -n -k2 "$T/submits" | awk '{c[$1]++; t[NR]=$2} END {for (k in c) printf "%s x%d ", k, c[k]; printf "median %s ms, max %s ms", t[int((NR+1)/2)], t[NR]}')"
    exit 0
fi
echo "submits (HTTP status, ms): $(sort -n -k2 "$T/submits" | awk '{c[$1]++; t[NR]=$2} END {for (k in c) printf "%s x%d ", k, c[k]; printf "median %s ms, max %s ms", t[int((NR+1)/2)], t[NR]}')"
wait_for ".starts_mark >= $TASKS" 900
sleep 1.2
if [[ -n ${perfpid:-} ]]; then kill -INT "$perfpid"; wait "$perfpid" 2>/dev/null || true; fi
perfpid=
echo "started: $(st .starts_mark) tasks at $(st '.starts_per_s_mark | floor') starts/s"
probe_line "healthz during submit + starts" pst
probe_line "GET /v1/jobs/$JID during submit + starts" p2st
kill "$walpid" 2>/dev/null
walpid=
echo "WAL: largest seen $(sort -n "$T/walsizes" | tail -n 1 | awk '{printf "%.1f MiB", $1 / 1048576}'), now $(stat -c %s "$S/docket.db-wal" 2>/dev/null | awk '{printf "%.1f MiB", $1 / 1048576}')"
wait_for ".finished >= $TASKS" 300 || true
echo "cycles: $(cycle_hist)"
notup=$(nodes_not_up)
echo "false UNREACHABLE: agents told not UP $(st .not_up); nodes not UP $notup; heartbeat errors $(st .hb_errors)"
# The big reads an operator makes at fleet scale, one at a time with the fleet running:
# each one's round trip and size (with DOCKETD_TURN_LOG_MS, the turn log shows how long
# each held the loop).
for path in "/v1/nodes?limit=10000" "/metrics" "/v1/jobs?limit=10000" "/v1/projects"; do
    curl -s -o /dev/null -w "big read GET $path: %{http_code} in %{time_total} s, %{size_download} bytes\n" \
        -H "Authorization: Bearer $TOK" "$U$path"
    sleep 0.3
done

[[ ${RESTART:-1} == 0 ]] && exit 0
echo "== restart of docketd with $AGENTS agents connected"
d0=$(drops)
mark
kill "$dpid"
wait "$dpid" 2>/dev/null || true
tr0=$(date +%s.%N)
start_docketd
tr1=$(date +%s.%N)
wait_for ".heard_mark >= $AGENTS" 300
tr2=$(date +%s.%N)
d1=$(drops)
echo "restart to healthy $(echo "($tr1 - $tr0) * 1000" | bc | cut -d. -f1) ms; every agent answered again after $(echo "$tr2 - $tr0" | bc) s; connection attempts dropped (ListenOverflows+ListenDrops): $((d1 - d0)); heartbeat errors $(st .hb_errors)"
notup=$(nodes_not_up)
echo "after restart: nodes not UP $notup; agents told not UP $(st .not_up)"
grep -c UNREACHABLE "$T/log" | sed 's/^/docketd log lines naming UNREACHABLE: /' || true
