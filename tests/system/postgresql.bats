#!/usr/bin/env bats
# postgresql.bats - docketd with its state in PostgreSQL (issue 32; docs/operations.md
# "PostgreSQL"): a real docketd on --db postgresql://... and two real agents run jobs, a
# restart of docketd finds its state whole; a SQLite database moves to PostgreSQL with
# --import-sqlite, state intact, and an import never merges into a database with state;
# `docket admin backup` (pg_dump's, taken under submissions) restores into the same
# database or a new one with every acknowledged job, and one that cannot run says why.
# Each PostgreSQL is a throwaway cluster of scripts/pg-test.sh (initdb as `nobody` into a
# temporary directory, a unix socket there, no TCP), stopped by its pid in teardown.

bats_require_minimum_version 1.5.0

CLUSTER_NAME=pg
load lib/cluster
AGENT_EXTRA=()
PG_TEST=$BATS_TEST_DIRNAME/../../scripts/pg-test.sh

setup_file() {
    [[ -x $DOCKET && -x $DOCKETD_BIN && -x $AGENT_BIN ]] || skip "docket, docketd or docket-node not built"
    export DOCKET_TEST_PG=1 # the cluster's docketd on a PostgreSQL of its own ($T/pg.dsn)
    cluster_start
    "$DOCKET" apply -f "$BATS_TEST_DIRNAME/../../examples/policy.yaml" >/dev/null
}

teardown_file() {
    cluster_stop
}

setup() {
    cd "$W"
}

teardown() {
    local p
    for p in ${FEEDER:-} ${SQ_AGENT:-} ${SQ_PID:-}; do
        kill -TERM "$p" 2>/dev/null
        wait "$p" 2>/dev/null || true
    done
    [[ -z ${PG2_DSN:-} ]] || "$PG_TEST" stop "$PG2_DSN"
}

# project_in_db DSN NAME: the database holds project NAME (seen by a connection of the
# test's own)
project_in_db() {
    [ "$(psql -At "$1" -c "SELECT count(*) FROM projects WHERE name = '$2'")" = 1 ]
}

submit_q() {
    "$DOCKET" submit --parsable "$@"
}

@test "docketd on PostgreSQL: jobs run on the agents; a restart of docketd finds them, the nodes and the ids" {
    id=$(submit_q -p explore --class exploration --time 5m -- sh -c 'echo on-postgres')
    wait_for 60 state_in "$id" COMPLETED
    held=$(submit_q --hold -p explore --class exploration --time 5m -- sleep 300)
    wait_for 10 state_in "$held" HELD
    # nothing in the state directory but what is not state: no SQLite file was made
    [[ ! -e $T/ctl/docket.db ]]
    kill_pidfile "$T/ctl.pid"
    ctl_start "$PORT"
    wait_for 30 nodes_up 2
    state_in "$id" COMPLETED
    state_in "$held" HELD
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq -r .job.exit.code <<<"$output")" = 0 ]
    run -0 "$DOCKET" logs "$id"
    [[ $output == *on-postgres* ]]
    # the ids go on where they were, and the restarted docketd writes
    next=$(submit_q -p explore --class exploration --time 5m -- true)
    [ "$next" -gt "$held" ]
    wait_for 60 state_in "$next" COMPLETED
    "$DOCKET" cancel "$held" >/dev/null
    wait_for 10 state_in "$held" CANCELLED
}

@test "a PostgreSQL URI's password never reaches the log; a server that is not there stops docketd" {
    run -1 "$DOCKETD_BIN" --state-dir "$T/bad" --listen none --socket - \
        --db "postgresql://docket:s3cr3t-pw@/docket?host=$T/no-such-dir"
    [[ $output == *"cannot connect to PostgreSQL"* ]]
    [[ $output != *s3cr3t-pw* ]]
}

@test "--import-sqlite: a SQLite database moves to PostgreSQL with its jobs, ids and tokens; never into one with state" {
    local sq=$T/sq
    mkdir -p "$sq"
    # a SQLite docketd of its own, with one agent (a job no node could run is refused)
    "$DOCKETD_BIN" --state-dir "$sq" --listen 127.0.0.1:0 --socket "$sq/docketd.sock" \
        --log-file "$sq/docketd.log" &
    SQ_PID=$!
    wait_for 20 test -S "$sq/docketd.sock"
    export DOCKET_URL=unix:$sq/docketd.sock
    "$DOCKET" apply -f "$BATS_TEST_DIRNAME/../../examples/policy.yaml" >/dev/null
    "$AGENT_BIN" --controller "http://127.0.0.1:$(cat "$sq/docketd.port")" \
        --join-token "$("$DOCKET" token join)" --name "$PREFIX-sq" --gpus 8xH100-80GB \
        --cpus 16 --mem 64G --state-dir "$sq/agent" --allow-root-jobs --no-cgroups \
        --log-file "$sq/agent.log" &
    SQ_AGENT=$!
    wait_for 30 nodes_up 1
    a=$(submit_q --hold -p explore --class exploration --time 5m -- sleep 300)
    b=$(submit_q --hold -p explore --class exploration --time 5m -- sleep 300)
    "$DOCKET" cancel "$b" >/dev/null
    wait_for 10 state_in "$b" CANCELLED
    kill -TERM "$SQ_AGENT" "$SQ_PID"
    wait "$SQ_AGENT" "$SQ_PID" || true
    SQ_PID= SQ_AGENT=
    PG2_DSN=$(PG_TEST_OPTS="-c fsync=off" "$PG_TEST" start)
    run -0 "$DOCKETD_BIN" --db "$PG2_DSN" --import-sqlite "$sq/docket.db"
    [[ $output == *"imported"*"rows"* ]]
    # docketd on PostgreSQL with the same state directory (its admin token, its keys)
    mv "$sq/docket.db" "$sq/docket.db.moved"
    "$DOCKETD_BIN" --state-dir "$sq" --db "$PG2_DSN" --listen none \
        --socket "$sq/docketd.sock" --log-file "$sq/docketd.log" &
    SQ_PID=$!
    wait_for 20 test -S "$sq/docketd.sock"
    wait_for 20 state_in "$a" HELD
    state_in "$b" CANCELLED
    c=$(submit_q --hold -p explore --class exploration --time 5m -- true)
    [ "$c" -gt "$b" ]
    # a second import would merge: refused, and the database is as it was
    run -1 "$DOCKETD_BIN" --db "$PG2_DSN" --import-sqlite "$sq/docket.db.moved"
    [[ $output == *"holds state already"* ]]
    state_in "$c" HELD
}

@test "PostgreSQL goes away under docketd: writes fail and nothing is acknowledged; when it is back, docketd carries on" {
    local pd=$T/pd
    mkdir -p "$pd"
    PG2_DSN=$(PG_TEST_OPTS="-c fsync=off" "$PG_TEST" start)
    "$DOCKETD_BIN" --state-dir "$pd" --db "$PG2_DSN" --listen none --socket "$pd/docketd.sock" \
        --log-file "$pd/docketd.log" &
    SQ_PID=$!
    wait_for 20 test -S "$pd/docketd.sock"
    export DOCKET_URL=unix:$pd/docketd.sock
    run -0 "$DOCKET" apply -f "$BATS_TEST_DIRNAME/../../examples/policy.yaml"
    "$PG_TEST" pause "$PG2_DSN"
    # the policy write needs the database: refused, not acknowledged
    run "$DOCKET" apply -f "$BATS_TEST_DIRNAME/../../examples/policy.yaml"
    [ "$status" -ne 0 ]
    "$PG_TEST" resume "$PG2_DSN"
    # a new connection, made between transactions: docketd was never restarted
    kill -0 "$SQ_PID"
    run -0 "$DOCKET" apply -f "$BATS_TEST_DIRNAME/../../examples/policy.yaml"
    run -0 "$DOCKET" projects --json
    [[ $output == *explore* ]]
}

@test "PostgreSQL restarts before a commit is on its disk: docketd acknowledges none of it and stops" {
    # docketd commits without waiting for the server's disk and a thread of its own flushes
    # the server's WAL before any reply leaves (src/store/pgsync.c); here that flush is held
    # (DOCKETD_TEST_SYNC_HOLD) while the server restarts under a committed submission
    local pd=$T/pr
    mkdir -p "$pd"
    PG2_DSN=$("$PG_TEST" start)
    DOCKETD_TEST_SYNC_HOLD=$pd/hold "$DOCKETD_BIN" --state-dir "$pd" --db "$PG2_DSN" \
        --listen none --socket "$pd/docketd.sock" --log-file "$pd/docketd.log" &
    SQ_PID=$!
    wait_for 20 test -S "$pd/docketd.sock"
    export DOCKET_URL=unix:$pd/docketd.sock
    run -0 "$DOCKET" apply -f "$BATS_TEST_DIRNAME/../../examples/policy.yaml"
    touch "$pd/hold"
    "$DOCKET" projects create pz >"$pd/create.out" 2>&1 &
    local cli=$!
    # committed (another connection sees it), not acknowledged: its flush is held
    wait_for 30 project_in_db "$PG2_DSN" pz
    kill -0 "$cli"
    "$PG_TEST" pause "$PG2_DSN"
    "$PG_TEST" resume "$PG2_DSN"
    rm "$pd/hold"
    # the flush finds a server that started after the commit: docketd stops, and the
    # project is never acknowledged (a restarted docketd reloads what the server kept)
    wait_for 60 grep -q 'event=stopped' "$pd/docketd.log"
    local rc=0
    wait "$SQ_PID" || rc=$?
    SQ_PID=
    [ "$rc" -ne 0 ]
    rc=0
    wait "$cli" || rc=$?
    [ "$rc" -ne 0 ]
    grep -q 'sync_failed.*restarted before the last commits were on its disk' "$pd/docketd.log"
}

# Submit held jobs until $T/stop exists; each acknowledged id to $T/acked.
submitter() {
    local id
    while [[ ! -e $T/stop ]]; do
        id=$(submit_q --hold -p explore --class exploration --time 5m -- true 2>/dev/null) &&
            echo "$id" >>"$T/acked"
    done
}

lines() { [[ -f $1 ]] && wc -l <"$1" || echo 0; }
acked_at_least() { (($(lines "$T/acked") >= $1)); }

@test "on PostgreSQL, a backup taken under submissions restores into a new database with every job acknowledged before it" {
    : >"$T/acked"
    rm -f "$T/stop"
    submitter &
    FEEDER=$!
    wait_for 60 acked_at_least 20
    cp "$T/acked" "$T/acked-before"
    run -0 "$DOCKET" admin backup -o "$T/live.pgdump" --json
    # what arrived is what docketd made: its size and SHA-256 (the CLI checked them too)
    [ "$(jq -r .bytes <<<"$output")" = "$(stat -c %s "$T/live.pgdump")" ]
    [ "$(jq -r .sha256 <<<"$output")" = "$(sha256sum "$T/live.pgdump" | cut -d' ' -f1)" ]
    [ "$(head -c 5 "$T/live.pgdump")" = PGDMP ]
    # the writers went on during and after it
    local n; n=$(lines "$T/acked")
    wait_for 60 acked_at_least $((n + 5))
    touch "$T/stop"
    wait "$FEEDER"
    FEEDER=
    # a new, empty database on a server of its own: nothing to set aside
    PG2_DSN=$(PG_TEST_OPTS="-c fsync=off" "$PG_TEST" start)
    local nd=$T/nd
    mkdir -m 0700 "$nd"
    cp -p "$T/ctl/secrets.key" "$nd/"
    run -0 "$DOCKETD_BIN" --state-dir "$nd" --db "$PG2_DSN" --restore "$T/live.pgdump"
    [[ $output == *"restored"* && $output == *"nothing was set aside"* ]]
    ! ls "$nd"/before-restore-*.pgdump
    "$DOCKETD_BIN" --state-dir "$nd" --db "$PG2_DSN" --listen none --socket "$nd/docketd.sock" \
        --log-file "$nd/docketd.log" &
    SQ_PID=$!
    wait_for 20 test -S "$nd/docketd.sock"
    export DOCKET_URL=unix:$nd/docketd.sock
    wait_for 30 "$DOCKET" queue -n 1
    "$DOCKET" queue --json -n 100000 >"$T/q.json"
    local id missing=0
    while read -r id; do
        jq -e --argjson id "$id" '[.jobs[] | select(.id == $id and .state == "HELD")] | length == 1' \
            "$T/q.json" >/dev/null || { echo "job $id acknowledged before the backup is not there" >&2; missing=$((missing + 1)); }
    done <"$T/acked-before"
    [ "$missing" -eq 0 ]
    run -0 "$DOCKET" audit --verify
    # the restored database takes submissions, its ids past the backup's
    local last; last=$(tail -1 "$T/acked-before")
    next=$(submit_q --hold -p explore --class exploration --time 5m -- true)
    [ "$next" -gt "$last" ]
}

@test "on PostgreSQL, a backup whose pg_dump cannot run: an error naming it, no file left, docketd serves on" {
    PG2_DSN=$(PG_TEST_OPTS="-c fsync=off" "$PG_TEST" start)
    local nd=$T/nopg
    mkdir -m 0700 "$nd"
    # docketd with no pg_dump on its PATH (a host without postgresql-client)
    env PATH=/nonexistent "$DOCKETD_BIN" --state-dir "$nd" --db "$PG2_DSN" --listen none \
        --socket "$nd/docketd.sock" --log-file "$nd/docketd.log" &
    SQ_PID=$!
    wait_for 20 test -S "$nd/docketd.sock"
    export DOCKET_URL=unix:$nd/docketd.sock
    wait_for 30 "$DOCKET" queue -n 1
    run -1 "$DOCKET" admin backup -o "$T/nopg.pgdump"
    [[ $output == *"cannot run pg_dump"*"postgresql-client"* ]]
    [[ ! -e $T/nopg.pgdump && ! -e $T/nopg.pgdump.part ]]
    [[ -z $(ls "$nd" | grep -E '^backup\.tmp') ]]
    grep -q backup_failed "$nd/docketd.log"
    kill -0 "$SQ_PID"
    run -0 "$DOCKET" projects create after-failed-backup
}

@test "on PostgreSQL, docket admin backup is pg_dump's; docketd --restore puts it back, never under a leader" {
    local dsn; dsn=$(cat "$T/pg.dsn")
    id=$(submit_q --hold -p explore --class exploration --time 5m -- true)
    run -0 "$DOCKET" admin backup -o "$T/b.pgdump" --json
    [ "$(jq -r .schema <<<"$output")" -gt 0 ]
    [ "$(head -c 5 "$T/b.pgdump")" = PGDMP ]
    [ "$(stat -c %a "$T/b.pgdump")" = 600 ]
    # the default name says what it is
    (cd "$T" && "$DOCKET" admin backup >/dev/null)
    ls "$T"/docket-backup-*.pgdump
    # after the backup: a project the restore takes back
    run -0 "$DOCKET" projects create after-backup
    # a docketd leads: refused, nothing changed
    run -1 "$DOCKETD_BIN" --state-dir "$T/r" --db "$dsn" --restore "$T/b.pgdump"
    [[ $output == *"a docketd leads this database"* && $output == *"nothing was changed"* ]]
    run -0 "$DOCKET" projects --json
    [[ $output == *after-backup* ]]
    # not a pg_dump archive: refused before anything is touched
    echo "not a backup" >"$T/junk"
    kill_pidfile "$T/ctl.pid"
    run -1 "$DOCKETD_BIN" --state-dir "$T/r" --db "$dsn" --restore "$T/junk"
    [[ $output == *"not a pg_dump archive"* ]]
    run -0 "$DOCKETD_BIN" --state-dir "$T/r" --db "$dsn" --restore "$T/b.pgdump"
    [[ $output == *"restored"* ]]
    aside=$(ls "$T/r"/before-restore-*.pgdump)
    [ "$(head -c 5 "$aside")" = PGDMP ]
    ctl_start "$PORT"
    wait_for 30 nodes_up 2
    run -0 "$DOCKET" projects --json
    [[ $output == *explore* && $output != *after-backup* ]]
    state_in "$id" HELD
    "$DOCKET" cancel "$id" >/dev/null
}
