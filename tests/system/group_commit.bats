#!/usr/bin/env bats
# The group commit seen from outside (docs/controller.md "One loop, group commit",
# "Answered at once", "Checkpoints"): with the WAL sync held back by the test (while the
# file DOCKETD_TEST_SYNC_HOLD names exists; read by sync.c only), a write's reply waits for
# its sync and so does a read of what it wrote, while /healthz and /metrics answer
# meanwhile, and so does a GET of a job no unsynced commit wrote ("Reads that leave at
# once"); and docketd checkpoints its WAL on a thread of its own. Nothing here is timed:
# "at once" is "answered while the sync is held", "waits" is "still unanswered while it is
# held, answered once it is let go", both true at any speed.

load lib/common

setup() {
    docket_setup
}

teardown() {
    rm -f "$TEST_DIR/hold" # never leave docketd's sync held
    docket_teardown
}

# bg OUT CURL-ARGS...: one request in the background, "HTTP_CODE" in OUT once answered,
# the body in OUT.body; $BG its pid.
bg() {
    local out=$1
    shift
    curl -s -o "$out.body" -w '%{http_code}\n' --max-time 120 "$@" >"$out" &
    BG=$!
}
# code CURL-ARGS...: the status of one request (answered, since it returns).
code() {
    curl -s -o /dev/null -w '%{http_code}' --max-time 120 "$@"
}
# pending PID: that background request has not been answered yet.
pending() {
    kill -0 "$1" 2>/dev/null || { echo "answered while the sync was held" >&2; return 1; }
}
db() {
    sqlite3 -cmd ".timeout 5000" "$STATE_DIR/docket.db" "$1"
}
committed() { # SQL: the query counts something committed (in the WAL, maybe not on disk)
    [[ $(db "$1") -ge 1 ]]
}

@test "group commit: /healthz and /metrics answer at once while a write and a read of it wait for the WAL sync" {
    DOCKETD_TEST_SYNC_HOLD=$TEST_DIR/hold docketd_start
    touch "$TEST_DIR/hold"
    bg "$TEST_DIR/post" -X POST -H "Authorization: Bearer $ADMIN_TOKEN" -d '{"name": "p1"}' \
        "$DOCKETD_URL/v1/projects"
    local post=$BG
    # the project is committed, not on disk: its sync is held
    wait_for 60 committed "SELECT count(*) FROM projects WHERE name = 'p1'"
    [ "$(code "$DOCKETD_URL/healthz")" = 200 ]
    [ "$(code -H "Authorization: Bearer $ADMIN_TOKEN" "$DOCKETD_URL/healthz")" = 200 ]
    [ "$(code -H "Authorization: Bearer $ADMIN_TOKEN" "$DOCKETD_URL/metrics")" = 200 ]
    pending "$post"
    # a read of the project shows it only once its commit is on disk
    bg "$TEST_DIR/get" -H "Authorization: Bearer $ADMIN_TOKEN" "$DOCKETD_URL/v1/projects/p1"
    local get=$BG
    [ "$(code "$DOCKETD_URL/healthz")" = 200 ] # answered after the GET was sent
    pending "$get"
    pending "$post"
    rm "$TEST_DIR/hold"
    wait "$get" "$post"
    [ "$(cat "$TEST_DIR/get")" = 200 ]
    jq -e '.project.name == "p1"' "$TEST_DIR/get.body"
    [ "$(cat "$TEST_DIR/post")" = 201 ]
}

@test "group commit: a GET of a job no unsynced commit wrote answers at once, one of a job it wrote waits for its sync" {
    DOCKETD_TEST_SYNC_HOLD=$TEST_DIR/hold docketd_start
    fake_node gpu01 8 H100-80GB >/dev/null
    # two held jobs, each on disk once its 201 came
    old=$(submit '{"command": ["x"], "gpus": 1, "hold": true}')
    other=$(submit '{"command": ["x"], "gpus": 1, "hold": true}')
    new=$((other + 1))
    # commits that change `other` and make a new job, their syncs held back
    touch "$TEST_DIR/hold"
    bg "$TEST_DIR/release" -X POST -H "Authorization: Bearer $ADMIN_TOKEN" "$DOCKETD_URL/v1/jobs/$other/release"
    local release=$BG
    bg "$TEST_DIR/post" -X POST -H "Authorization: Bearer $ADMIN_TOKEN" -H 'Content-Type: application/json' \
        -d '{"command": ["x"], "gpus": 1, "hold": true}' "$DOCKETD_URL/v1/jobs"
    local post=$BG
    wait_for 60 committed "SELECT count(*) FROM jobs WHERE id = $new"
    wait_for 60 committed "SELECT count(*) FROM jobs WHERE id = $other AND state <> 'HELD'"
    # nothing of the old job is ahead of the disk: it leaves at once (before h-get it
    # waited for the syncs of the others)
    [ "$(code -H "Authorization: Bearer $ADMIN_TOKEN" "$DOCKETD_URL/v1/jobs/$old")" = 200 ]
    api_get "/v1/jobs/$old"
    assert_json .job.state HELD
    pending "$release"
    pending "$post"
    # the job the other commit made, and the job the unsynced commit released (it may
    # have started since): each waits for the sync
    bg "$TEST_DIR/new" -H "Authorization: Bearer $ADMIN_TOKEN" "$DOCKETD_URL/v1/jobs/$new"
    local getnew=$BG
    bg "$TEST_DIR/other" -H "Authorization: Bearer $ADMIN_TOKEN" "$DOCKETD_URL/v1/jobs/$other"
    local getother=$BG
    [ "$(code "$DOCKETD_URL/healthz")" = 200 ] # answered after both GETs were sent
    pending "$getnew"
    pending "$getother"
    rm "$TEST_DIR/hold"
    wait "$getnew" "$getother" "$release" "$post"
    [ "$(cat "$TEST_DIR/other")" = 200 ]
    [ "$(jq -r .job.state "$TEST_DIR/other.body")" != HELD ]
    [ "$(cat "$TEST_DIR/new")" = 200 ]
    [ "$(cat "$TEST_DIR/release")" = 200 ]
    [ "$(cat "$TEST_DIR/post")" = 201 ]
    # once on disk, it leaves at once too: answered while the next sync is held
    touch "$TEST_DIR/hold"
    api_post /v1/projects '{"name": "after"}' >/dev/null &
    local more=$!
    wait_for 60 committed "SELECT count(*) FROM projects WHERE name = 'after'"
    [ "$(code -H "Authorization: Bearer $ADMIN_TOKEN" "$DOCKETD_URL/v1/jobs/$other")" = 200 ]
    pending "$more"
    rm "$TEST_DIR/hold"
    wait "$more"
}

@test "checkpoints: docketd copies its WAL back on its own thread, never in COMMIT" {
    docketd_start --log-level info
    fake_node gpu01 8 H100-80GB >/dev/null
    # ~60 jobs of a 100 KB script: ~1,500 WAL pages, past the 1,000 that start a checkpoint
    script=$(head -c 100000 /dev/zero | tr '\0' x)
    jq -n --arg s "#!/bin/sh
# $script
true" '{script: $s, gpus: 1, hold: true}' >"$TEST_DIR/job.json"
    for _ in $(seq 1 60); do
        api_file POST /v1/jobs "$TEST_DIR/job.json"
        assert_status 201
    done
    # the checkpoint thread runs after a sync once the WAL is past 1,000 pages: it has
    # when the database file holds what the WAL had (the 60 scripts, ~6 MB)
    checkpointed() { (($(stat -c %s "$STATE_DIR/docket.db") > 4000000)); }
    wait_for 60 checkpointed
    docketd_stop
    line=$(grep 'event=checkpoints' "$TEST_DIR/docketd.log")
    echo "$line"
    ! grep -q checkpoint_thread_failed "$TEST_DIR/docketd.log" || false
    passive=$(sed -n 's/.*passive=\([0-9]*\).*/\1/p' <<<"$line")
    frames=$(sed -n 's/.*max_wal_frames=\([0-9]*\).*/\1/p' <<<"$line")
    [ "$passive" -ge 1 ]
    [ "$frames" -ge 1000 ]
    [[ $line == *" failed=0 "* ]]
    # clean exit: the last connection's close checkpointed and removed the WAL; all there
    [ ! -s "$STATE_DIR/docket.db-wal" ]
    docketd_start
    api_get "/v1/jobs?limit=100"
    assert_json '.jobs | length' 60
}
