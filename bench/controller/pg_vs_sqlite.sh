#!/usr/bin/env bash
# SQLite against PostgreSQL, side by side in one run (issue 32): durable submissions per
# second with 16 concurrent clients (RUNS runs each, alternating, the median printed), and
# the restart to a healthy /healthz with NTOTAL jobs in the database (RESTARTS times, the
# median printed), for each engine.
#   bench/controller/pg_vs_sqlite.sh [BUILD_DIR]   (a release build)
# PostgreSQL is a throwaway cluster of scripts/pg-test.sh (fsync on: as durable as
# SQLite's synchronous commit), on the same disk as SQLite's state directory. Prints the
# figures; record them in bench/RESULTS.md under "PostgreSQL and SQLite side by side".
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build-rel}
DOCKETD=$B/src/controller/docketd
LOAD=$B/bench/controller/submit_load
N=${N:-5000}
RUNS=${RUNS:-3}
NTOTAL=${NTOTAL:-100000}
RESTARTS=${RESTARTS:-3} # the first comes right after the load: the rest show a steady start
T=$(mktemp -d /tmp/docket-bench-pg.XXXXXX)
pid= dsn=
cleanup() {
    [[ -z $pid ]] || kill "$pid" 2>/dev/null
    wait 2>/dev/null || true
    [[ -z $dsn ]] || scripts/pg-test.sh stop "$dsn"
    rm -rf "$T"
}
trap cleanup EXIT
dsn=$(scripts/pg-test.sh start)
BODY='{"command": ["train.py"], "gpus": 8, "gpu_type": "H100", "time_limit": "1h"}'

# start ENGINE: docketd on a state directory of its own; START_MS: to a healthy /healthz
start() {
    local db=()
    [[ $1 == postgresql ]] && db=(--db "$dsn")
    rm -f "$T/$1/docketd.port"
    mkdir -p "$T/$1"
    local t0; t0=$(date +%s%N)
    "$DOCKETD" --state-dir "$T/$1" "${db[@]}" --listen 127.0.0.1:0 --socket - \
        --log-level warn --node-timeout 1h >>"$T/$1.log" 2>&1 &
    pid=$!
    until [[ -s $T/$1/docketd.port ]] &&
        curl -sf -o /dev/null "http://127.0.0.1:$(cat "$T/$1/docketd.port")/healthz"; do
        kill -0 "$pid" 2>/dev/null || { cat "$T/$1.log" >&2; exit 1; }
        sleep 0.01
    done
    START_MS=$((($(date +%s%N) - t0) / 1000000))
    PORT=$(cat "$T/$1/docketd.port")
}

stop() {
    kill -TERM "$pid"
    wait "$pid" || true
    pid=
}

# fresh ENGINE: an empty database (SQLite: a new file; PostgreSQL: the schema dropped)
fresh() {
    rm -rf "$T/$1"
    if [[ $1 == postgresql ]]; then
        psql -q "$dsn" -c 'SET client_min_messages = warning' \
            -c 'DROP SCHEMA public CASCADE' -c 'CREATE SCHEMA public' >/dev/null
    fi
}

# one node, so every job but the first stays pending (as bench/controller/run.sh); no
# project queue cap (the policy's default max_queued, 50,000, would refuse half of the
# restart's 100,000 jobs)
register() {
    local tok jt
    tok=$(cat "$T/$1/admin.token")
    curl -sf -o /dev/null -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' \
        -d '{"settings": {"max_queued": 0}}' "http://127.0.0.1:$PORT/v1/policy"
    jt=$(curl -s -H "Authorization: Bearer $tok" -X POST -d '{}' \
        "http://127.0.0.1:$PORT/v1/join-tokens" | jq -r .join_token)
    curl -s -o /dev/null -X POST -d "{\"join_token\": \"$jt\", \"node\": {\"name\": \"gpu01\",
        \"gpu_type\": \"H100\", \"gpus\": 8, \"cpus\": 64, \"mem_mb\": 512000}}" \
        "http://127.0.0.1:$PORT/v1/agent/register"
}

load() { # ENGINE N: submit_load's line
    "$LOAD" --port "$PORT" --token-file "$T/$1/admin.token" --n "$2" --conns 16 --body "$BODY"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

declare -A rates
echo "== durable submissions: $N over 16 connections, $RUNS runs each, alternating"
for r in $(seq 1 "$RUNS"); do
    for e in sqlite postgresql; do
        fresh "$e"
        start "$e"
        register "$e"
        line=$(load "$e" "$N")
        stop
        echo "$e run $r: $line"
        rates[$e]+="$(awk '{ for (i = 1; i < NF; i++) if ($i == "rate") print $(i + 1) }' <<<"$line") "
    done
done
for e in sqlite postgresql; do
    echo "$e median: $(tr ' ' '\n' <<<"${rates[$e]}" | grep . | median) jobs/s"
done

echo "== restart with $NTOTAL jobs in the database, $RESTARTS restarts each"
for e in sqlite postgresql; do
    fresh "$e"
    start "$e"
    register "$e"
    load "$e" "$NTOTAL" >"$T/load.out" || { cat "$T/load.out" >&2; exit 1; }
    stop
    times=
    for r in $(seq 1 "$RESTARTS"); do
        start "$e"
        stop
        echo "$e restart $r: to healthy $START_MS ms"
        times+="$START_MS "
    done
    echo "$e restart median: $(tr ' ' '\n' <<<"$times" | grep . | median) ms"
done
