#!/usr/bin/env bash
# failover.sh [BUILD_DIR] - how long an active/standby pair on PostgreSQL is without a
# leader after kill -9 of the leader (issue 32; docs/operations.md "Active and standby").
# Each of ROUNDS (default 5) rounds: a fresh PostgreSQL (scripts/pg-test.sh), a leader and
# a standby docketd, one agent (declared GPUs: the jobs need a node that could run them),
# WORKERS (default 16) loops submitting held jobs through the CLI with
# both URLs; after SETTLE_S (2) seconds the leader is killed (-9) and the standby's
# /healthz is polled every 20 ms until it answers 200. Prints each round's seconds from the
# kill to that answer, with the submissions acknowledged before and after, then the median.
# BURST=N (e.g. 2000): N concurrent keep-alive connections of bench/controller/burst.py
# submit instead of the CLI loops, and each round then checks in the database that every
# acknowledged submission is there once, under its id (lost / doubled). The burst comes from
# one address, where the issue means 2,000 clients: docketd then gets max_unproven_per_peer
# = N (PEER_CAP=32, the default, sheds all but 32 of a new leader's new connections each
# loop turn, as it would a slowloris from one address; docs/security.md).
# KEYS=1 (the default): every submission carries an Idempotency-Key and one cut by the kill
# is sent again with it (the CLI always does; burst.py --keys), so "unknown" counts only
# what stayed unanswered; KEYS=0: the burst as before the keys, a cut one never sent again.
# The CLI loops' "outcome is unknown" errors are counted too.
# Use a release build: meson setup build-r --buildtype=release && ninja -C build-r.
set -euo pipefail
B=${1:-build-r}
ROUNDS=${ROUNDS:-5}
WORKERS=${WORKERS:-16}
SETTLE_S=${SETTLE_S:-2}
AFTER_S=${AFTER_S:-1} # submissions go on this long after the standby serves
BURST=${BURST:-}
KEYS=${KEYS:-1}
[[ -z $BURST ]] || ulimit -n $((BURST * 2 + 1024))
PEER_CAP=${PEER_CAP:-${BURST:-32}}
PG=$(dirname "$0")/../../scripts/pg-test.sh
DOCKET=$B/src/cli/docket
T=$(mktemp -d /tmp/docket-bench-failover.XXXXXX)
pids=()
dsn=""
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    [[ -z $dsn ]] || "$PG" stop "$dsn" >/dev/null 2>&1 || true
    rm -rf "$T"
}
trap cleanup EXIT
ctl() { # NAME
    mkdir -p "$T/$1"
    [[ -f $T/a/secrets.key && ! -f $T/$1/secrets.key ]] && cp "$T/a/secrets.key" "$T/$1/"
    echo "max_unproven_per_peer: $PEER_CAP" >"$T/docketd.yaml"
    "$B/src/controller/docketd" --config "$T/docketd.yaml" --state-dir "$T/$1" \
        --listen 127.0.0.1:0 --socket - --db "$dsn" --log-file "$T/$1.log" &
    pids+=($!)
    echo $! >"$T/$1.pid"
    while [[ ! -s $T/$1/docketd.port ]]; do sleep 0.05; done
}
ms() { date +%s%3N; }
results=()
for r in $(seq "$ROUNDS"); do
    rm -rf "$T/a" "$T/b" "$T/agent" "$T"/*.log
    dsn=$(PG_TEST_OPTS="-c fsync=off" "$PG" start)
    ctl a
    pa=$(cat "$T/a/docketd.port")
    until curl -sf -o /dev/null "http://127.0.0.1:$pa/healthz"; do sleep 0.05; done
    DOCKET_URL=http://127.0.0.1:$pa DOCKET_TOKEN=$(cat "$T/a/admin.token") \
        "$DOCKET" token join >"$T/join"
    "$B/src/agent/docket-node" --controller "http://127.0.0.1:$pa" --join-token "$(cat "$T/join")" \
        --name "failover$$" --gpus 8xH100-80GB --cpus 16 --mem 64G --state-dir "$T/agent" \
        --allow-root-jobs --log-file "$T/agent.log" &
    pids+=($!)
    echo $! >"$T/agent.pid"
    until DOCKET_URL=http://127.0.0.1:$pa DOCKET_TOKEN=$(cat "$T/a/admin.token") "$DOCKET" nodes --json |
        jq -e '.nodes | length == 1' >/dev/null; do sleep 0.1; done
    ctl b
    pb=$(cat "$T/b/docketd.port")
    until grep -q event=standby "$T/b.log"; do sleep 0.05; done
    export DOCKET_URL="http://127.0.0.1:$pa,http://127.0.0.1:$pb" DOCKET_TOKEN
    DOCKET_TOKEN=$(cat "$T/a/admin.token")
    : >"$T/acked"
    workers=()
    if [[ -n $BURST ]]; then
        python3 "$(dirname "$0")/burst.py" --urls "$DOCKET_URL" --token-file "$T/a/admin.token" \
            --conns "$BURST" --stop "$T/stop" --acked "$T/acked" \
            $([[ $KEYS == 0 ]] || echo --keys) >"$T/burst.out" &
        workers+=($!)
    fi
    for w in $(seq "$([[ -n $BURST ]] && echo 0 || echo "$WORKERS")"); do
        (while [[ ! -e $T/stop ]]; do
            "$DOCKET" submit --parsable --hold -- true >>"$T/acked" 2>>"$T/cli.err" || true
        done) &
        workers+=($!)
    done
    sleep "$SETTLE_S"
    before=$(wc -l <"$T/acked")
    t0=$(ms)
    kill -9 "$(cat "$T/a.pid")"
    until curl -sf -o /dev/null "http://127.0.0.1:$pb/healthz"; do sleep 0.02; done
    t1=$(ms)
    sleep "$AFTER_S"
    touch "$T/stop"
    wait "${workers[@]}"
    rm -f "$T/stop"
    after=$(($(wc -l <"$T/acked") - before))
    s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1000 }')
    unknown=$(grep -c "outcome is unknown" "$T/cli.err" 2>/dev/null || true)
    rm -f "$T/cli.err"
    echo "round $r: serving again $s s after kill -9 of the leader ($before submissions acknowledged before, $after after; CLI outcomes unknown: ${unknown:-0})"
    if [[ -n $BURST ]]; then # every acknowledged name once in the database, with its id
        psql -At "$dsn" -c "SELECT name || ' ' || id FROM jobs" | sort >"$T/stored"
        sort "$T/acked" >"$T/acked.sorted"
        lost=$(comm -23 "$T/acked.sorted" "$T/stored" | wc -l)
        doubled=$(psql -At "$dsn" -c "SELECT count(*) FROM (SELECT name FROM jobs GROUP BY name HAVING count(*) > 1) d")
        echo "round $r: $BURST connections ($(cat "$T/burst.out")): $(wc -l <"$T/acked") acknowledged, $lost lost, $doubled doubled"
    fi
    results+=("$s")
    kill -9 "$(cat "$T/b.pid")" "$(cat "$T/agent.pid")" 2>/dev/null || true
    rm -rf "$T/agent"
    "$PG" stop "$dsn" >/dev/null
    dsn=""
done
printf '%s\n' "${results[@]}" | sort -n | awk '{ v[NR] = $1 } END { printf "median of %d rounds: %s s\n", NR, v[int((NR + 1) / 2)] }'
