#!/usr/bin/env bats
# backup.bats - `docket admin backup` (GET /v1/admin/backup) and `docketd --restore`
# (docs/operations.md "Back up and restore the state"): a backup taken while submissions
# stream in, restored into a fresh state directory, has every job acknowledged before it
# began and an audit chain that verifies; only an admin may take one, one at a time; a
# client that leaves, docketd stopping or killed leaves no temporary file; a copy that
# cannot be made is a 500 that says why; a damaged file is refused by the restore, and so
# is a restore (or a second docketd) under a running docketd, while a restart waits for
# the old one to let the state directory go.

load lib/common
bats_require_minimum_version 1.5.0

setup() {
    docket_setup
    DOCKET=$DOCKET_BUILD/src/cli/docket
    HOLD=$TEST_DIR/hold-backup
}

teardown() {
    docket_teardown
}

# The CLI as the admin, over TCP.
docket_admin() {
    DOCKET_URL=$DOCKETD_URL DOCKET_TOKEN=${TOKEN:-$ADMIN_TOKEN} "$DOCKET" "$@"
}

# A backup held by docketd after its copy is made, for as long as $HOLD exists
# (DOCKETD_TEST_BACKUP_HOLD): curl in the background, its pid in CURL_PID.
held_backup_start() {
    touch "$HOLD"
    curl -s -o "$TEST_DIR/held.db" -w '%{http_code}' -H "Authorization: Bearer $ADMIN_TOKEN" \
        "$DOCKETD_URL/v1/admin/backup" >"$TEST_DIR/held.status" &
    CURL_PID=$!
    docket_track_pid "$CURL_PID"
    wait_for 60 test -e "$STATE_DIR/backup.tmp"
}

# Submit held jobs until $TEST_DIR/stop exists; each acknowledged id to $TEST_DIR/acked.
submitter() {
    local out id
    while [[ ! -e $TEST_DIR/stop ]]; do
        out=$(curl -s -H "Authorization: Bearer $ADMIN_TOKEN" -H 'Content-Type: application/json' \
            --data-binary '{"command": ["true"], "hold": true}' "$DOCKETD_URL/v1/jobs") || continue
        id=$(jq -r '.job.id // empty' <<<"$out")
        [[ -n $id ]] && echo "$id" >>"$TEST_DIR/acked"
    done
}

lines() { [[ -f $1 ]] && wc -l <"$1" || echo 0; }
acked_at_least() { (($(lines "$TEST_DIR/acked") >= $1)); }

@test "a backup taken under a stream of submits restores every job acknowledged before it" {
    docketd_start
    fake_node gpu01 8 H100 >/dev/null
    submitter &
    docket_track_pid $!
    wait_for 60 acked_at_least 20
    cp "$TEST_DIR/acked" "$TEST_DIR/acked-before"
    run -0 docket_admin admin backup -o "$TEST_DIR/b.db" --json
    [[ $(jq -r .file <<<"$output") == "$TEST_DIR/b.db" ]]
    [[ $(jq -r .bytes <<<"$output") == $(stat -c %s "$TEST_DIR/b.db") ]]
    [[ $(jq -r .sha256 <<<"$output") == $(sha256sum "$TEST_DIR/b.db" | cut -d' ' -f1) ]]
    [[ $(jq -r .schema <<<"$output") -ge 1 ]]
    [[ $(stat -c %a "$TEST_DIR/b.db") == 600 && ! -e $TEST_DIR/b.db.part ]]
    # the writers went on: more submissions were acknowledged after it
    n=$(lines "$TEST_DIR/acked")
    wait_for 60 acked_at_least $((n + 5))
    touch "$TEST_DIR/stop"
    docketd_stop
    [[ ! -e $STATE_DIR/backup.tmp ]]
    # into a fresh state directory: the secrets key goes with it (docs/operations.md)
    mkdir -m 0700 "$TEST_DIR/state2"
    cp -p "$STATE_DIR/secrets.key" "$TEST_DIR/state2/"
    run -0 "$DOCKETD" --state-dir "$TEST_DIR/state2" --restore "$TEST_DIR/b.db"
    [[ $output == *"restored"* ]]
    [[ $(stat -c %a "$TEST_DIR/state2/docket.db") == 600 ]]
    STATE_DIR=$TEST_DIR/state2
    docketd_start
    missing=0
    while read -r id; do
        api_get "/v1/jobs/$id"
        [[ $status_code == 200 ]] || { echo "job $id acknowledged before the backup: $status_code" >&2; missing=$((missing + 1)); }
    done <"$TEST_DIR/acked-before"
    [ "$missing" -eq 0 ]
    api_get /v1/audit/verify
    assert_status 200
    assert_json .ok true
}

@test "the default name, -o - to stdout, and a member's token gets 403 and no file" {
    docketd_start
    cd "$TEST_DIR"
    run -0 docket_admin admin backup
    f=$(ls docket-backup-*.db)
    [[ $f =~ ^docket-backup-[0-9]{8}-[0-9]{6}\.db$ ]]
    [[ $output == *"wrote $f"* && $output == *"docketd --restore $f"* ]]
    docket_admin admin backup -o - >stdout.db
    cmp "$f" stdout.db || [[ $(sqlite3 stdout.db "PRAGMA integrity_check") == ok ]]
    # a name that exists is never overwritten
    run -1 docket_admin admin backup -o "$f"
    [[ $output == *"exists"* ]]
    api_post /v1/tokens '{"user": "mem", "role": "member"}'
    TOKEN=$(jq -r .token <<<"$body")
    run -1 docket_admin admin backup -o m.db
    [[ $output == *"admin"* || $output == *"forbidden"* || $output == *"permission"* ]]
    [[ ! -e m.db && ! -e m.db.part ]]
    api_get /v1/admin/backup "$TOKEN"
    assert_status 403
    run -2 docket_admin admin
    run -0 "$DOCKET" help admin
    [[ $output == *"docket admin backup"* ]]
}

@test "one backup at a time: a second gets 409; the first then completes" {
    DOCKETD_TEST_BACKUP_HOLD=$HOLD docketd_start
    held_backup_start
    api_get /v1/admin/backup
    assert_status 409
    [[ $body == *"already running"* ]]
    run -1 docket_admin admin backup -o "$TEST_DIR/second.db"
    [[ $output == *"already running"* ]]
    [[ ! -e $TEST_DIR/second.db.part ]]
    rm "$HOLD"
    wait "$CURL_PID"
    [[ $(cat "$TEST_DIR/held.status") == 200 ]]
    [[ $(sqlite3 "$TEST_DIR/held.db" "PRAGMA integrity_check") == ok ]]
    [[ ! -e $STATE_DIR/backup.tmp ]]
    run -0 docket_admin admin backup -o "$TEST_DIR/third.db"
}

@test "a client that leaves, docketd stopping or killed: no temporary file is left" {
    DOCKETD_TEST_BACKUP_HOLD=$HOLD docketd_start
    # the client leaves while the copy waits: the thread stops, the file goes
    held_backup_start
    kill "$CURL_PID"
    wait "$CURL_PID" || true
    wait_for 60 bash -c "[[ ! -e '$STATE_DIR/backup.tmp' ]]"
    grep -q backup_abandoned "$TEST_DIR/docketd.log"
    # a client that leaves in the middle of the stream: the next backup is not refused
    rm -f "$HOLD"
    curl -s --limit-rate 1K -o /dev/null -H "Authorization: Bearer $ADMIN_TOKEN" \
        "$DOCKETD_URL/v1/admin/backup" &
    slow=$!
    docket_track_pid "$slow"
    wait_for 60 grep -q backup_ready "$TEST_DIR/docketd.log"
    [[ ! -e $STATE_DIR/backup.tmp ]] # unlinked as the stream starts
    kill "$slow"
    wait "$slow" || true
    wait_for 60 bash -c "curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer $ADMIN_TOKEN' '$DOCKETD_URL/v1/admin/backup' | grep -qx 200"
    # docketd stopping: the waiting client hears 503, the file goes
    held_backup_start
    docketd_stop
    wait "$CURL_PID" || true
    [[ $(cat "$TEST_DIR/held.status") == 503 ]]
    [[ ! -e $STATE_DIR/backup.tmp ]]
    # killed: the next start removes what it left
    DOCKETD_TEST_BACKUP_HOLD=$HOLD docketd_start
    held_backup_start
    docketd_kill9
    [[ -e $STATE_DIR/backup.tmp ]]
    rm "$HOLD"
    docketd_start
    [[ ! -e $STATE_DIR/backup.tmp ]]
    grep -q backup_tmp_removed "$TEST_DIR/docketd.log"
}

@test "a copy that cannot be made: 500 saying why, no file left, the next one works" {
    docketd_start
    mkdir "$STATE_DIR/backup.tmp" # where the copy goes is taken (as a full disk would fail it)
    run -1 docket_admin admin backup -o "$TEST_DIR/b.db"
    [[ $output == *"backup failed"*"backup.tmp"* ]]
    [[ ! -e $TEST_DIR/b.db && ! -e $TEST_DIR/b.db.part ]]
    grep -q backup_failed "$TEST_DIR/docketd.log"
    rmdir "$STATE_DIR/backup.tmp"
    run -0 docket_admin admin backup -o "$TEST_DIR/b.db"
    api_get /healthz
    assert_status 200
}

@test "restore refuses a damaged file, a newer schema, and a running docketd; the old database is kept aside" {
    docketd_start
    run -0 docket_admin admin backup -o "$TEST_DIR/b.db"
    api_post /v1/tokens '{"user": "after", "role": "member"}' # after the backup
    # a second docketd on the same state directory is refused, and so is a restore
    run -1 "$DOCKETD" --state-dir "$STATE_DIR" --listen 127.0.0.1:0 --socket -
    [[ $output == *"a docketd is running"* ]]
    run -1 "$DOCKETD" --state-dir "$STATE_DIR" --restore "$TEST_DIR/b.db"
    [[ $output == *"a docketd is running"* && $output == *"nothing was changed"* ]]
    docketd_stop
    sum=$(sha256sum "$STATE_DIR/docket.db" | cut -d' ' -f1)
    # truncated, overwritten in the middle, not a database, another program's, newer
    size=$(stat -c %s "$TEST_DIR/b.db")
    head -c $((size / 2)) "$TEST_DIR/b.db" >"$TEST_DIR/half.db"
    cp "$TEST_DIR/b.db" "$TEST_DIR/holes.db"
    dd if=/dev/zero of="$TEST_DIR/holes.db" bs=4096 seek=2 count=8 conv=notrunc status=none
    head -c 65536 /dev/urandom >"$TEST_DIR/noise.db"
    sqlite3 "$TEST_DIR/other.db" "CREATE TABLE t(x); PRAGMA user_version = 3"
    cp "$TEST_DIR/b.db" "$TEST_DIR/newer.db"
    sqlite3 "$TEST_DIR/newer.db" "PRAGMA user_version = 9999"
    for f in half holes noise other newer missing; do
        run -1 "$DOCKETD" --state-dir "$STATE_DIR" --restore "$TEST_DIR/$f.db"
        [[ $output == *"nothing was changed"* || $output == *"not a backup docketd can run on"* ]] ||
            { echo "$f: $output" >&2; false; }
    done
    run -1 "$DOCKETD" --state-dir "$STATE_DIR" --restore "$TEST_DIR/newer.db"
    [[ $output == *"newer"* ]]
    [[ $(sha256sum "$STATE_DIR/docket.db" | cut -d' ' -f1) == "$sum" ]]
    [[ ! -e $STATE_DIR/docket.db.restoring ]]
    ! ls -d "$STATE_DIR"/before-restore-* 2>/dev/null
    # the good one: the current database goes aside whole, the backup comes in
    run -0 "$DOCKETD" --state-dir "$STATE_DIR" --restore "$TEST_DIR/b.db"
    aside=$(ls -d "$STATE_DIR"/before-restore-*)
    [[ $(sha256sum "$aside/docket.db" | cut -d' ' -f1) == "$sum" ]]
    [[ $output == *"$aside"* ]]
    docketd_start
    run -0 docket_admin token list --json
    [[ $(jq -r '[.tokens[].user] | join(",")' <<<"$output") != *after* ]]
    api_get /v1/audit/verify
    assert_json .ok true
}

@test "a restart waits for the old docketd to let the state directory go" {
    docketd_start
    rm -f "$STATE_DIR/docketd.port"
    "$DOCKETD" --state-dir "$STATE_DIR" --listen 127.0.0.1:0 --socket "$STATE_DIR/new.sock" \
        >>"$TEST_DIR/new.log" 2>&1 &
    new=$!
    docket_track_pid "$new"
    sleep 0.5 # (no assertion on time: the new one is simply not up while the old one runs)
    [[ ! -s $STATE_DIR/docketd.port ]]
    docketd_stop
    wait_for 60 test -s "$STATE_DIR/docketd.port"
    wait_for 60 curl -sf -o /dev/null "http://127.0.0.1:$(cat "$STATE_DIR/docketd.port")/healthz"
    kill -0 "$new"
}
