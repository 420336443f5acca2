#!/usr/bin/env bats
# The group commit seen from outside (docs/controller.md "One loop, group commit",
# "Answered at once", "Checkpoints"): with the WAL sync slowed down on purpose
# (DOCKETD_TEST_SYNC_DELAY_MS, read by sync.c only), a write's reply waits for its sync and
# so does a read of what it wrote, while /healthz and /metrics answer at once, and so does
# a GET of a job no unsynced commit wrote ("Reads that leave at once"); and docketd
# checkpoints its WAL on a thread of its own.

load lib/common

setup() {
    docket_setup
}

teardown() {
    docket_teardown
}

# timed CURL-ARGS...: "HTTP_CODE SECONDS" of one request.
timed() {
    curl -s -o /dev/null -w '%{http_code} %{time_total}\n' "$@"
}

@test "group commit: /healthz and /metrics answer at once while a write and a read of it wait for the WAL sync" {
    export DOCKETD_TEST_SYNC_DELAY_MS=2000
    docketd_start
    unset DOCKETD_TEST_SYNC_DELAY_MS
    timed -X POST -H "Authorization: Bearer $ADMIN_TOKEN" -d '{"name": "p1"}' \
        "$DOCKETD_URL/v1/projects" >"$TEST_DIR/post" &
    post=$!
    # by now the project is committed, not yet on disk: its sync sleeps for 2 s
    sleep 0.5
    read -r code t < <(timed "$DOCKETD_URL/healthz")
    echo "healthz: $code in $t s"
    [ "$code" = 200 ]
    awk -v t="$t" 'BEGIN {exit !(t < 0.5)}'
    read -r code t < <(timed -H "Authorization: Bearer $ADMIN_TOKEN" "$DOCKETD_URL/healthz")
    echo "healthz with a token: $code in $t s"
    [ "$code" = 200 ]
    awk -v t="$t" 'BEGIN {exit !(t < 0.5)}'
    read -r code t < <(timed -H "Authorization: Bearer $ADMIN_TOKEN" "$DOCKETD_URL/metrics")
    echo "metrics: $code in $t s"
    [ "$code" = 200 ]
    awk -v t="$t" 'BEGIN {exit !(t < 0.5)}'
    # a read of the project shows it only once its commit is on disk
    read -r code t < <(timed -H "Authorization: Bearer $ADMIN_TOKEN" "$DOCKETD_URL/v1/projects/p1")
    echo "GET /v1/projects/p1: $code in $t s"
    [ "$code" = 200 ]
    awk -v t="$t" 'BEGIN {exit !(t >= 0.5)}'
    wait "$post"
    read -r code t <"$TEST_DIR/post"
    echo "POST /v1/projects: $code in $t s"
    [ "$code" = 201 ]
    awk -v t="$t" 'BEGIN {exit !(t >= 1.5)}'
}

@test "group commit: a GET of a job no unsynced commit wrote answers at once, one of a job it wrote waits for its sync" {
    export DOCKETD_TEST_SYNC_DELAY_MS=1500
    docketd_start
    unset DOCKETD_TEST_SYNC_DELAY_MS
    fake_node gpu01 8 H100-80GB >/dev/null
    # two held jobs, each on disk once its 201 came
    old=$(submit '{"command": ["x"], "gpus": 1, "hold": true}')
    other=$(submit '{"command": ["x"], "gpus": 1, "hold": true}')
    new=$((other + 1))
    # commits that change `other` and make a new job, their syncs held back for 1.5 s
    timed -X POST -H "Authorization: Bearer $ADMIN_TOKEN" \
        "$DOCKETD_URL/v1/jobs/$other/release" >"$TEST_DIR/release" &
    release=$!
    timed -X POST -H "Authorization: Bearer $ADMIN_TOKEN" -H 'Content-Type: application/json' \
        -d '{"command": ["x"], "gpus": 1, "hold": true}' "$DOCKETD_URL/v1/jobs" >"$TEST_DIR/post" &
    post=$!
    sleep 0.5
    # nothing of the old job is ahead of the disk: it leaves at once (before h-get it
    # waited for the syncs of the others)
    read -r code t < <(timed -H "Authorization: Bearer $ADMIN_TOKEN" "$DOCKETD_URL/v1/jobs/$old")
    echo "GET old job $old: $code in $t s"
    [ "$code" = 200 ]
    awk -v t="$t" 'BEGIN {exit !(t < 0.5)}'
    api_get "/v1/jobs/$old"
    assert_json .job.state HELD
    # the job the other commit made, asked meanwhile
    timed -H "Authorization: Bearer $ADMIN_TOKEN" "$DOCKETD_URL/v1/jobs/$new" >"$TEST_DIR/new" &
    getnew=$!
    # the job the unsynced commit released (it may have started since): it shows the
    # release only with the sync
    curl -s -o "$TEST_DIR/other" -w '%{http_code} %{time_total}\n' \
        -H "Authorization: Bearer $ADMIN_TOKEN" "$DOCKETD_URL/v1/jobs/$other" >"$TEST_DIR/other.t"
    read -r code t <"$TEST_DIR/other.t"
    echo "GET released job $other: $code in $t s: $(cat "$TEST_DIR/other")"
    [ "$code" = 200 ]
    awk -v t="$t" 'BEGIN {exit !(t >= 0.5)}'
    [ "$(jq -r .job.state "$TEST_DIR/other")" != HELD ]
    wait "$getnew"
    read -r code t <"$TEST_DIR/new"
    echo "GET new job $new: $code in $t s"
    [ "$code" = 200 ]
    awk -v t="$t" 'BEGIN {exit !(t >= 0.5)}'
    wait "$release" "$post"
    read -r code t <"$TEST_DIR/release"
    echo "POST release: $code in $t s"
    [ "$code" = 200 ]
    read -r code t <"$TEST_DIR/post"
    echo "POST /v1/jobs: $code in $t s"
    [ "$code" = 201 ]
    # once on disk, both leave at once too
    read -r code t < <(timed -H "Authorization: Bearer $ADMIN_TOKEN" "$DOCKETD_URL/v1/jobs/$other")
    echo "GET released job $other after its sync: $code in $t s"
    [ "$code" = 200 ]
    awk -v t="$t" 'BEGIN {exit !(t < 0.5)}'
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
    # the checkpoint thread runs after a sync once the WAL is past 1,000 pages
    sleep 1
    docketd_stop
    line=$(grep 'event=checkpoints' "$TEST_DIR/docketd.log")
    echo "$line"
    ! grep -q checkpoint_thread_failed "$TEST_DIR/docketd.log"
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
