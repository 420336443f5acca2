#!/usr/bin/env bats
# logs_runs.bats - job output kept per run at the real docketd (issue 12 #3, issue 11 #5
# and Limits): a requeued job's second run is neither lost nor spliced into the first;
# X-Docket-Eof only once the agent said the run's output is complete (final); a node
# posts events and output only for runs placed on it; the per-job log cap. Nodes are
# played with curl through the real agent endpoints; `docket logs` is the real CLI.

load lib/common

DOCKET=${DOCKET_BUILD}/src/cli/docket

setup() {
    docket_setup
}

teardown() {
    docket_teardown
}

# take_start NODE CRED JOB: heartbeat until the node gets JOB's start command (60 s at
# most); acks it, says started (with its run); sets RUN and ACK.
take_start() {
    local deadline=$((SECONDS + 60))
    while ((SECONDS < deadline)); do
        heartbeat "$1" "$2" "${ACK:-0}"
        RUN=$(jq -r --argjson id "$3" '[.commands[] | select(.type == "start" and .job.id == $id)][0].job.run' <<<"$body")
        if [[ $RUN != null ]]; then
            ACK=$(jq -r '[.commands[].seq] | max' <<<"$body")
            heartbeat "$1" "$2" "$ACK" "[{\"id\": $3, \"state\": \"running\", \"pid\": 10}]"
            api_post /v1/agent/events "{\"node\": \"$1\", \"events\": [{\"job\": $3, \"run\": $RUN, \"type\": \"started\"}]}" "$2"
            assert_status 200
            return 0
        fi
        sleep 0.05
    done
    echo "no start command for job $3 on $1: $body" >&2
    return 1
}

# chunk NODE CRED JOB RUN OFFSET TEXT [final]: post one stdout chunk.
chunk() {
    local fin=""
    [[ ${7:-} == final ]] && fin=', "final": true'
    api_post /v1/agent/logs "{\"node\": \"$1\", \"job\": $3, \"run\": $4, \"stream\": \"stdout\", \"offset\": $5, \"data\": \"$(printf '%s' "$6" | base64 -w0)\"$fin}" "$2"
}

exited() { # NODE CRED JOB RUN KIND CODE
    api_post /v1/agent/events "{\"node\": \"$1\", \"events\": [{\"job\": $3, \"run\": $4, \"type\": \"exited\", \"exit\": {\"kind\": \"$5\", \"code\": $6}}]}" "$2"
}

cli() { DOCKET_URL="$DOCKETD_URL" DOCKET_TOKEN="$ADMIN_TOKEN" "$DOCKET" "$@"; }

@test "a requeued job's second run keeps its own output; the first run's late output stays in the first" {
    docketd_start
    CRED=$(fake_node gpu01 8 H100-80GB)
    id=$(submit '{"command": ["sh", "-c", "echo hi"], "gpus": 8, "gpu_type": "H100-80GB", "requeue": true}')
    take_start gpu01 "$CRED" "$id"
    [ "$RUN" = 1 ]
    chunk gpu01 "$CRED" "$id" 1 0 "run one
"
    assert_json .offset 8
    # requeued while it runs: stopped, then started again (run 2)
    api_post "/v1/jobs/$id/requeue" '{"reason": "test"}'
    assert_status 200
    heartbeat gpu01 "$CRED" "$ACK" "[{\"id\": $id, \"state\": \"running\", \"pid\": 10}]"
    exited gpu01 "$CRED" "$id" 1 signal 15
    assert_status 200
    take_start gpu01 "$CRED" "$id"
    [ "$RUN" = 2 ]
    # the second run ships from its own offset 0: taken, not a repeat of run 1's bytes
    chunk gpu01 "$CRED" "$id" 2 0 "run two
"
    assert_json .offset 8
    # the first run's last bytes arrive late: they go to run 1, not into run 2
    chunk gpu01 "$CRED" "$id" 1 8 "late one
" final
    assert_json .offset 17
    api_get "/v1/jobs/$id/logs?run=1"
    [ "$body" = "run one
late one" ]
    api_get "/v1/jobs/$id/logs?run=2"
    [ "$body" = "run two" ]
    # the latest run without ?run, with the run headers
    curl -s -D "$TEST_DIR/h" -H "Authorization: Bearer $ADMIN_TOKEN" "$DOCKETD_URL/v1/jobs/$id/logs" >"$TEST_DIR/b"
    [ "$(cat "$TEST_DIR/b")" = "run two" ]
    grep -qi '^X-Docket-Run: 2' "$TEST_DIR/h"
    grep -qi '^X-Docket-Runs: 2' "$TEST_DIR/h"
    api_get "/v1/jobs/$id/logs?run=3"
    assert_error 404 run
    api_get "/v1/jobs/$id/logs?run=x"
    assert_error 400 run
    # the CLI: every run after a separator; --run N alone
    run cli logs "$id"
    [ "$status" -eq 0 ]
    [ "$output" = "==> job $id, run 1 <==
run one
late one
==> job $id, run 2 <==
run two" ]
    run cli logs "$id" --run 2
    [ "$status" -eq 0 ]
    [ "$output" = "run two" ]
    run cli logs "$id" --run 0
    [ "$status" -eq 2 ]
}

@test "logs -f ends only once the agent sent the run's final chunk, not at the exit" {
    docketd_start
    CRED=$(fake_node gpu01 8 H100-80GB)
    id=$(submit '{"command": ["echo"], "gpus": 1, "gpu_type": "H100-80GB"}')
    take_start gpu01 "$CRED" "$id"
    chunk gpu01 "$CRED" "$id" 1 0 "first
"
    exited gpu01 "$CRED" "$id" 1 code 0
    wait_job_state "$id" COMPLETED
    # the job has ended but its output is not complete: no Eof
    curl -s -D "$TEST_DIR/h0" -H "Authorization: Bearer $ADMIN_TOKEN" "$DOCKETD_URL/v1/jobs/$id/logs?offset=6" >/dev/null
    ! grep -qi '^X-Docket-Eof' "$TEST_DIR/h0" || false
    cli logs "$id" -f >"$TEST_DIR/follow.out" &
    follower=$!
    sleep 0.5
    kill -0 "$follower" # still following
    chunk gpu01 "$CRED" "$id" 1 6 "last
" final
    assert_status 200
    wait "$follower"
    [ "$(cat "$TEST_DIR/follow.out")" = "first
last" ]
    curl -s -D "$TEST_DIR/h1" -H "Authorization: Bearer $ADMIN_TOKEN" "$DOCKETD_URL/v1/jobs/$id/logs?offset=11" >/dev/null
    grep -qi '^X-Docket-Eof: 1' "$TEST_DIR/h1"
    # a complete run takes a repeat, nothing new
    chunk gpu01 "$CRED" "$id" 1 6 "last
"
    assert_status 200
    chunk gpu01 "$CRED" "$id" 1 11 "more"
    assert_error 409 run
    api_get "/v1/jobs/$id/logs?run=1"
    [ "$body" = "first
last" ]
}

# eof_header JOB OFFSET: the X-Docket-Eof header of a plain read there ("" when absent).
eof_header() {
    curl -s -D "$TEST_DIR/eof.h" -o /dev/null -H "Authorization: Bearer $ADMIN_TOKEN" \
        "$DOCKETD_URL/v1/jobs/$1/logs?offset=$2"
    tr -d '\r' <"$TEST_DIR/eof.h" | awk 'tolower($1) == "x-docket-eof:" {print $2}'
}

@test "logs -f outwaits the settle time while the node still holds the finished job's output" {
    # issue 33 #12: a 200 MB job's follower got end-of-file a fixed time after the exit
    # while the agent was still shipping. Here the settle time is 300 ms; the node's
    # heartbeats list the ended job (its output still going out), and the reader waits on.
    DOCKETD_TEST_LOG_SETTLE_MS=300 docketd_start
    CRED=$(fake_node gpu01 8 H100-80GB)
    id=$(submit '{"command": ["echo"], "gpus": 1, "gpu_type": "H100-80GB"}')
    take_start gpu01 "$CRED" "$id"
    chunk gpu01 "$CRED" "$id" 1 0 "first
"
    exited gpu01 "$CRED" "$id" 1 code 0
    wait_job_state "$id" COMPLETED
    heartbeat gpu01 "$CRED" "$ACK" "[{\"id\": $id, \"state\": \"exited\", \"pid\": 0}]"
    assert_status 200
    sleep 1 # past the settle time: only the node's word ends the output now
    [ "$(eof_header "$id" 6)" = "" ]
    cli logs "$id" -f >"$TEST_DIR/follow.out" &
    follower=$!
    sleep 1
    kill -0 "$follower" # still following
    chunk gpu01 "$CRED" "$id" 1 6 "shipped late
"
    assert_status 200
    heartbeat gpu01 "$CRED" "$ACK" "[{\"id\": $id, \"state\": \"exited\", \"pid\": 0}]"
    chunk gpu01 "$CRED" "$id" 1 19 "" final
    wait "$follower"
    [ "$(cat "$TEST_DIR/follow.out")" = "first
shipped late" ]
}

@test "logs: an agent that let the ended job go without a final chunk ends the output after the settle time" {
    DOCKETD_TEST_LOG_SETTLE_MS=300 docketd_start
    CRED=$(fake_node gpu01 8 H100-80GB)
    id=$(submit '{"command": ["echo"], "gpus": 1, "gpu_type": "H100-80GB"}')
    take_start gpu01 "$CRED" "$id"
    chunk gpu01 "$CRED" "$id" 1 0 "only
"
    exited gpu01 "$CRED" "$id" 1 code 0
    wait_job_state "$id" COMPLETED
    heartbeat gpu01 "$CRED" "$ACK" "[]" # the agent no longer holds it (lost its output)
    assert_status 200
    wait_for 60 bash -c "[ \"\$(curl -s -D - -o /dev/null -H 'Authorization: Bearer $ADMIN_TOKEN' \
        '$DOCKETD_URL/v1/jobs/$id/logs?offset=5' | tr -d '\r' | awk 'tolower(\$1) == \"x-docket-eof:\" {print \$2}')\" = 1 ]"
    run timeout 120 env DOCKET_URL="$DOCKETD_URL" DOCKET_TOKEN="$ADMIN_TOKEN" "$DOCKET" logs -f "$id"
    [ "$status" -eq 0 ]
    [ "$output" = "only" ]
}

@test "hostile node: events and output only for the runs placed on it" {
    docketd_start
    CRED=$(fake_node gpu01 8 H100-80GB)
    id=$(submit '{"command": ["sleep", "100"], "gpus": 8, "gpu_type": "H100-80GB"}')
    take_start gpu01 "$CRED" "$id"
    EVIL=$(fake_node gpu02 8 H100-80GB)
    chunk gpu01 "$CRED" "$id" 1 0 "mine
"
    # gpu02 writes into gpu01's job, with and without a run, and past its end
    chunk gpu02 "$EVIL" "$id" 1 5 "forged
"
    assert_error 403 run
    api_post /v1/agent/logs "{\"node\": \"gpu02\", \"job\": $id, \"stream\": \"stderr\", \"offset\": 0, \"data\": \"eA==\"}" "$EVIL"
    assert_error 403 run
    # gpu02 ends gpu01's job: refused whole, nothing applied
    api_post /v1/agent/events "{\"node\": \"gpu02\", \"events\": [{\"job\": $id, \"type\": \"usage\", \"usage\": {\"cpu_ms\": 1}}, {\"job\": $id, \"type\": \"exited\", \"exit\": {\"kind\": \"code\", \"code\": 0}}]}" "$EVIL"
    assert_error 403 'events[0].job'
    api_post /v1/agent/events "{\"node\": \"gpu02\", \"events\": [{\"job\": 999, \"type\": \"started\"}]}" "$EVIL"
    assert_error 403 'events[0].job'
    api_get "/v1/jobs/$id"
    assert_json .job.state RUNNING
    assert_json .job.usage.cpu_ms 0
    api_get "/v1/jobs/$id/logs?run=1"
    [ "$body" = "mine" ]
    [ ! -e "$STATE_DIR/logs/$id.1.stderr" ]
    # a finished job's old run: the node that ran it may not add to it once complete
    exited gpu01 "$CRED" "$id" 1 code 0
    chunk gpu01 "$CRED" "$id" 1 5 "" final
    assert_status 200
    chunk gpu01 "$CRED" "$id" 1 5 "appended later
"
    assert_error 409 run
    api_get "/v1/jobs/$id/logs?run=1"
    [ "$body" = "mine" ]
    # a stale event of the ended run changes nothing
    exited gpu01 "$CRED" "$id" 1 code 3
    assert_status 200
    api_get "/v1/jobs/$id"
    assert_json .job.exit.code 0
}

@test "log cap: past log_max_bytes the log is cut with a marker and the job's events say so" {
    echo "log_max_bytes: 100" >"$TEST_DIR/docketd.yaml"
    docketd_start --config "$TEST_DIR/docketd.yaml"
    CRED=$(fake_node gpu01 8 H100-80GB)
    id=$(submit '{"command": ["echo"], "gpus": 1, "gpu_type": "H100-80GB"}')
    take_start gpu01 "$CRED" "$id"
    a=$(printf 'a%.0s' $(seq 1 79))
    b=$(printf 'b%.0s' $(seq 1 49))
    chunk gpu01 "$CRED" "$id" 1 0 "$a
"
    assert_json .offset 80
    chunk gpu01 "$CRED" "$id" 1 80 "$b
"
    assert_status 200
    assert_json .offset 130
    # taken and dropped from now on: the agent goes on, the file does not grow
    chunk gpu01 "$CRED" "$id" 1 130 "ccc"
    assert_json .offset 133
    api_post /v1/agent/logs "{\"node\": \"gpu01\", \"job\": $id, \"run\": 1, \"stream\": \"stderr\", \"offset\": 0, \"data\": \"eA==\"}" "$CRED"
    assert_status 200
    api_get "/v1/jobs/$id/logs?run=1"
    [ "${body:0:100}" = "$a
${b:0:20}" ]
    [[ $body == *"[docketd: output cut here: the job's log passed log_max_bytes]" ]]
    [ "$(stat -c %s "$STATE_DIR/logs/$id.1.stdout")" -lt 200 ]
    [ ! -s "$STATE_DIR/logs/$id.1.stderr" ]
    api_get "/v1/jobs/$id/events"
    [ "$(jq '[.events[] | select(.type == "log_cut")] | length' <<<"$body")" -eq 1 ]
    jq -e '.events[] | select(.type == "log_cut") | .detail | contains("log_max_bytes (100)")' <<<"$body"
    # a bad value stops docketd with the key named
    echo "log_max_bytes: 1" >"$TEST_DIR/bad.yaml"
    run "$DOCKETD" --config "$TEST_DIR/bad.yaml" --state-dir "$TEST_DIR/other"
    [ "$status" -ne 0 ]
    [[ $output == *log_max_bytes* ]]
}

@test "log cap: a log that reaches log_max_bytes exactly gets its marker and event with the next byte" {
    # issue 33 #12: a cap that is a multiple of the agent's chunk (the 1 GiB default is)
    # dropped everything past it with no marker and no event
    echo "log_max_bytes: 100" >"$TEST_DIR/docketd.yaml"
    docketd_start --config "$TEST_DIR/docketd.yaml"
    CRED=$(fake_node gpu01 8 H100-80GB)
    id=$(submit '{"command": ["echo"], "gpus": 1, "gpu_type": "H100-80GB"}')
    take_start gpu01 "$CRED" "$id"
    a=$(printf 'a%.0s' $(seq 1 99))
    chunk gpu01 "$CRED" "$id" 1 0 "$a
"
    assert_json .offset 100
    api_get "/v1/jobs/$id/events"
    [ "$(jq '[.events[] | select(.type == "log_cut")] | length' <<<"$body")" -eq 0 ]
    chunk gpu01 "$CRED" "$id" 1 100 "bbbb"
    assert_json .offset 104
    chunk gpu01 "$CRED" "$id" 1 104 "cccc"
    assert_json .offset 108
    api_get "/v1/jobs/$id/logs?run=1"
    [[ $body == "$a
"*"[docketd: output cut here: the job's log passed log_max_bytes]" ]]
    [[ $body != *bbbb* && $body != *cccc* ]]
    api_get "/v1/jobs/$id/events"
    [ "$(jq '[.events[] | select(.type == "log_cut")] | length' <<<"$body")" -eq 1 ]
    # a log of exactly the cap with nothing after it is whole: no marker
    id2=$(submit '{"command": ["echo"], "gpus": 1, "gpu_type": "H100-80GB"}')
    take_start gpu01 "$CRED" "$id2"
    chunk gpu01 "$CRED" "$id2" 1 0 "$a
"
    exited gpu01 "$CRED" "$id2" 1 code 0
    chunk gpu01 "$CRED" "$id2" 1 100 "" final
    assert_status 200
    api_get "/v1/jobs/$id2/logs?run=1"
    [ "$body" = "$a" ]
    api_get "/v1/jobs/$id2/events"
    [ "$(jq '[.events[] | select(.type == "log_cut")] | length' <<<"$body")" -eq 0 ]
}

@test "log cap: the node's own limit (a chunk marked cut) is an event of the job" {
    docketd_start
    CRED=$(fake_node gpu01 8 H100-80GB)
    id=$(submit '{"command": ["echo"], "gpus": 1, "gpu_type": "H100-80GB"}')
    take_start gpu01 "$CRED" "$id"
    chunk gpu01 "$CRED" "$id" 1 0 "four"
    api_post /v1/agent/logs "{\"node\": \"gpu01\", \"job\": $id, \"run\": 1, \"stream\": \"stdout\", \"offset\": 4, \"data\": \"$(printf '\n[cut]\n' | base64 -w0)\", \"cut\": true}" "$CRED"
    assert_json .offset 11
    # the same chunk again (a lost reply) is no second event
    api_post /v1/agent/logs "{\"node\": \"gpu01\", \"job\": $id, \"run\": 1, \"stream\": \"stdout\", \"offset\": 4, \"data\": \"$(printf '\n[cut]\n' | base64 -w0)\", \"cut\": true}" "$CRED"
    assert_status 200
    api_get "/v1/jobs/$id/events"
    [ "$(jq '[.events[] | select(.type == "log_cut" and .reason == "log_limit")] | length' <<<"$body")" -eq 1 ]
    jq -e '.events[] | select(.type == "log_cut") | .detail | contains("gpu01")' <<<"$body"
}

@test "a job logged before runs existed (logs/ID.stdout) reads as its run 1" {
    docketd_start
    CRED=$(fake_node gpu01 8 H100-80GB)
    id=$(submit '{"command": ["echo"], "gpus": 1, "gpu_type": "H100-80GB"}')
    take_start gpu01 "$CRED" "$id"
    mkdir -p "$STATE_DIR/logs"
    printf 'from an older docketd\n' >"$STATE_DIR/logs/$id.stdout"
    api_get "/v1/jobs/$id/logs?run=1"
    [ "$body" = "from an older docketd" ]
    run env DOCKET_URL="$DOCKETD_URL" DOCKET_TOKEN="$ADMIN_TOKEN" "$DOCKET" logs "$id"
    [ "$output" = "from an older docketd" ]
}

@test "logs -f of a job cancelled before it ever started ends at once" {
    docketd_start
    CRED=$(fake_node gpu01 8 H100-80GB)
    id=$(submit '{"command": ["echo"], "gpus": 8, "gpu_type": "H100-80GB", "hold": true}')
    api_post "/v1/jobs/$id/cancel" '{}'
    assert_status 200
    # "at once": the first follow request is answered with the end of the output (no
    # long poll: a parked one would answer after 25 s, without X-Docket-Eof)
    curl -s -D "$TEST_DIR/follow.h" -o "$TEST_DIR/follow.b" --max-time 120 \
        -H "Authorization: Bearer $ADMIN_TOKEN" "$DOCKETD_URL/v1/jobs/$id/logs?follow=1&offset=0"
    grep -qi '^X-Docket-Eof: 1' "$TEST_DIR/follow.h"
    [ ! -s "$TEST_DIR/follow.b" ]
    # and the CLI ends on it, with nothing printed (the timeout only stops a hang)
    run timeout 120 env DOCKET_URL="$DOCKETD_URL" DOCKET_TOKEN="$ADMIN_TOKEN" "$DOCKET" logs -f "$id"
    [ "$status" -eq 0 ]
    [ "$output" = "" ]
}
