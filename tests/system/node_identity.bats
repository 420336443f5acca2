#!/usr/bin/env bats
# node_identity.bats - a hostile node against the real docketd (issue 11 #2 and #5): a
# join token registers only a NEW node name; a live node's name is taken only after an
# admin's `docket nodes replace`; a node posts events and logs only for the runs placed
# on it. Nodes are played with curl through the real agent endpoints.

load lib/common

DOCKET=${DOCKET_BUILD}/src/cli/docket

setup() {
    docket_setup
    docketd_start
}

teardown() {
    docket_teardown
}

register_body() { # NAME JOIN-TOKEN
    echo "{\"join_token\": \"$2\", \"agent_version\": \"test\", \"node\": {\"name\": \"$1\",
        \"gpu_type\": \"H100-80GB\", \"gpus\": 8, \"gpu_mem_mb\": 81920, \"cpus\": 64,
        \"mem_mb\": 512000}}"
}

@test "takeover: a join token under a live node's name is refused; the node keeps its jobs" {
    CRED=$(fake_node gpu01 8 H100-80GB)
    id=$(submit '{"command": ["sleep", "100"], "gpus": 8, "gpu_type": "H100-80GB"}')
    wait_job_state "$id" STARTING
    start_on gpu01 "$CRED" "$id"
    wait_job_state "$id" RUNNING
    # the impostor: a valid join token, the live node's name
    jt=$(join_token)
    api_post /v1/agent/register "$(register_body gpu01 "$jt")" -
    assert_error 409 node.name
    [[ $(jq -r .error.message <<<"$body") == *"docket nodes replace gpu01"* ]]
    # the real node's credential still works, its job was not touched
    heartbeat gpu01 "$CRED" 0 "[{\"id\": $id, \"state\": \"running\", \"pid\": 10}]"
    assert_status 200
    api_get "/v1/jobs/$id"
    assert_json .job.state RUNNING
    api_get "/v1/jobs/$id/events"
    ! jq -e '.events[] | select(.reason == "node_fail" or .type == "lost")' <<<"$body" || false
    # a new job's start command goes to the real node only
    id2=$(submit '{"command": ["true"], "cpus": 1}')
    wait_job_state "$id2" STARTING
    heartbeat gpu01 "$CRED" 0 "[{\"id\": $id, \"state\": \"running\", \"pid\": 10}]"
    jq -e --argjson id "$id2" '.commands[] | select(.job.id == $id)' <<<"$body" >/dev/null
    # nothing was audited as a registration of the impostor
    [ "$(sqlite3 "$STATE_DIR/docket.db" "SELECT count(*) FROM audit WHERE action = 'node.register'")" -eq 1 ]
}

@test "takeover: re-registering with the node's own credential still works" {
    CRED=$(fake_node gpu01 8 H100-80GB)
    api_post /v1/agent/register '{"node": {"name": "gpu01", "gpu_type": "H100-80GB", "gpus": 8, "cpus": 64, "mem_mb": 512000}}' "$CRED"
    assert_status 200
    NEW=$(jq -r .credential <<<"$body")
    heartbeat gpu01 "$NEW" 0
    assert_status 200
}

@test "nodes replace: admin only, audited, revokes the credential, then a join token takes the name" {
    CRED=$(fake_node gpu01 8 H100-80GB)
    # not an admin: a user token, and the node's own credential
    api_post /v1/tokens '{"user": "alice"}'
    assert_status 201
    ALICE=$(jq -r .token <<<"$body")
    api_post /v1/nodes/gpu01/replace '' "$ALICE"
    assert_status 403
    api_post /v1/nodes/gpu01/replace '' "$CRED"
    assert_status 403
    api_post /v1/nodes/nosuch/replace ''
    assert_status 404
    api_post /v1/nodes/gpu01/replace '{"reason": 5}'
    assert_error 400 reason
    heartbeat gpu01 "$CRED" 0
    assert_status 200
    # the CLI, as the admin
    run env DOCKET_URL="$DOCKETD_URL" DOCKET_TOKEN="$ADMIN_TOKEN" "$DOCKET" nodes replace gpu01 --reason "disk swapped"
    [ "$status" -eq 0 ]
    [[ $output == *"gpu01: credential revoked"* ]]
    [ "$(sqlite3 "$STATE_DIR/docket.db" "SELECT count(*) FROM audit WHERE action = 'node.replace' AND target = 'gpu01' AND reason = 'disk swapped'")" -eq 1 ]
    # the old credential is refused
    heartbeat gpu01 "$CRED" 0
    assert_status 401
    # the new machine registers under the name
    jt=$(join_token)
    api_post /v1/agent/register "$(register_body gpu01 "$jt")" -
    assert_status 200
    NEW=$(jq -r .credential <<<"$body")
    heartbeat gpu01 "$NEW" 0
    assert_status 200
    # and the name is its own again: a second join is refused
    api_post /v1/agent/register "$(register_body gpu01 "$jt")" -
    assert_error 409 node.name
}

@test "nodes replace: a parked heartbeat of the old agent is answered 401 at once" {
    CRED=$(fake_node gpu01 8 H100-80GB)
    curl -s -o "$TEST_DIR/parked.b" -w '%{http_code}' -H "Authorization: Bearer $CRED" \
        -H 'Content-Type: application/json' \
        --data-binary '{"node": "gpu01", "ack": 0, "wait_ms": 20000}' \
        "$DOCKETD_URL/v1/agent/heartbeat" >"$TEST_DIR/parked.code" &
    parked=$!
    sleep 0.3
    api_post /v1/nodes/gpu01/replace ''
    assert_status 200
    assert_json .credential_revoked true
    # a job submitted now never reaches the old agent
    submit '{"command": ["true"], "cpus": 1}' >/dev/null
    wait "$parked"
    [ "$(cat "$TEST_DIR/parked.code")" = 401 ]
}

@test "node credentials expire; a rotated one replaces the old at its first use" {
    # rotation with credentials that outlive the test: what it asserts holds at any speed
    printf 'node_credential_ttl: 1h\n' >"$TEST_DIR/docketd.yaml"
    docketd_stop
    docketd_start --config "$TEST_DIR/docketd.yaml"
    jt=$(join_token)
    api_post /v1/agent/register "$(register_body gpu01 "$jt")" -
    assert_status 200
    OLD=$(jq -r .credential <<<"$body")
    # rotation: only the node itself, for itself
    api_post /v1/agent/rotate '{"node": "gpu02"}' "$OLD"
    assert_error 403 node
    api_post /v1/agent/rotate '{"node": "gpu01", "x": 1}' "$OLD"
    assert_error 400 x
    api_post /v1/agent/rotate '{"node": "gpu01"}'
    assert_status 403
    api_post /v1/agent/rotate '{"node": "gpu01"}' "$OLD"
    assert_status 200
    NEW=$(jq -r .credential <<<"$body")
    [[ $NEW == dkn_* && $NEW != "$OLD" ]]
    # the old one works until the new one is used...
    heartbeat gpu01 "$OLD" 0
    assert_status 200
    heartbeat gpu01 "$NEW" 0
    assert_status 200
    # ...and not after
    heartbeat gpu01 "$OLD" 0
    assert_status 401
    heartbeat gpu01 "$NEW" 0
    assert_status 200
    [ "$(sqlite3 "$STATE_DIR/docket.db" "SELECT count(*) FROM audit WHERE action = 'node.credential_rotate' AND target = 'gpu01'")" -eq 1 ]
    # expiry, with a TTL of 3 s: the credential says when it expires (issued between the
    # times before and after the request, plus 3 s), and it is refused from then on,
    # never before (bounds, true at any speed)
    printf 'node_credential_ttl: 3s\n' >"$TEST_DIR/docketd.yaml"
    docketd_stop
    docketd_start --config "$TEST_DIR/docketd.yaml"
    jt=$(join_token)
    local t0 t1 exp refused_at
    t0=$(($(date +%s%N) / 1000000))
    api_post /v1/agent/register "$(register_body gpu03 "$jt")" -
    t1=$(($(date +%s%N) / 1000000))
    assert_status 200
    CRED=$(jq -r .credential <<<"$body")
    exp=$(jq -r .credential_expires_ms <<<"$body")
    [ "$exp" -ge $((t0 + 3000)) ] && [ "$exp" -le $((t1 + 3000)) ]
    refused() {
        heartbeat gpu03 "$CRED" 0
        [[ $status_code == 401 ]]
    }
    wait_for 60 refused
    refused_at=$(($(date +%s%N) / 1000000))
    assert_status 401
    [ "$refused_at" -ge "$exp" ]
    # past its expiry the name is free for a join token again
    api_post /v1/agent/register "$(register_body gpu03 "$jt")" -
    assert_status 200
}

@test "the real agent rotates its credential before it expires and keeps working" {
    printf 'node_credential_ttl: 3s\n' >"$TEST_DIR/docketd.yaml"
    docketd_stop
    docketd_start --config "$TEST_DIR/docketd.yaml" --heartbeat-wait 1s
    jt=$(join_token)
    DOCKET_JOIN_TOKEN=$jt "$DOCKET_BUILD/src/agent/docket-node" --controller "$DOCKETD_URL" --name rot01 \
        --gpus 0 --cpus 1 --mem 1G --state-dir "$TEST_DIR/agent" --no-cgroups \
        --log-file "$TEST_DIR/agent.log" 2>>"$TEST_DIR/agent.err" &
    docket_track_pid $!
    wait_for 60 test -s "$TEST_DIR/agent/credential"
    first=$(cat "$TEST_DIR/agent/credential")
    [[ $first == dkn_* ]]
    # until it has rotated twice: past two lifetimes of a credential, whatever the speed
    rotated_twice() { (($(grep -c 'event=node_credential_rotated node=rot01' "$TEST_DIR/docketd.log") >= 2)); }
    wait_for 60 rotated_twice
    api_get /v1/nodes/rot01
    assert_json .node.state UP
    grep -q 'event=credential_rotated' "$TEST_DIR/agent.log"
    [ "$(grep -c 'event=node_credential_rotated node=rot01' "$TEST_DIR/docketd.log")" -ge 2 ]
    now=$(cat "$TEST_DIR/agent/credential")
    [[ $now != "$first" ]]
    heartbeat rot01 "$first" 0
    assert_status 401
    # never locked out: registered once, never again with the join token
    [ "$(grep -c 'event=registered' "$TEST_DIR/agent.log")" -eq 1 ]
}

@test "fencing margin: a silent node's jobs are not lost before their lease + margin" {
    docketd_stop
    docketd_start --node-timeout 3s
    # lease 0s: the node timeout's lease, the shortest a class may have
    api_post /v1/policy '{"classes": [{"name": "training"}, {"name": "experiment", "lease": "0s"},
        {"name": "exploration"}, {"name": "interactive"}, {"name": "service"}]}'
    [[ $status_code == 200 ]]
    CRED=$(fake_node gpu01 8 H100-80GB)
    id=$(submit '{"command": ["sleep", "100"], "gpus": 8, "gpu_type": "H100-80GB", "requeue": true}')
    wait_job_state "$id" STARTING
    start_on gpu01 "$CRED" "$id"
    # the agent falls silent (stopped, cut off): its own fence stops the job at
    # 3 s - 1 s; docketd must wait 3 s + 1 s (margin = min(10 s, 3 s / 3)). docketd's own
    # record of the silence says it did: a lower bound, true at any speed
    node_unreachable() {
        api_get /v1/nodes/gpu01
        [[ $(jq -r .node.state <<<"$body") == UNREACHABLE ]]
    }
    wait_for 60 node_unreachable
    silent=$(grep 'event=node_unreachable node=gpu01 ' "$TEST_DIR/docketd.log" | sed 's/.*silent_ms=//')
    echo "declared unreachable after $silent ms of silence" >&3
    [ "$silent" -ge 4000 ]
    # the job is declared lost when its lease ends, no sooner, and requeued
    wait_for 60 grep -q "event=lease_expired job=$id node=gpu01 " "$TEST_DIR/docketd.log"
    silent=$(grep "event=lease_expired job=$id " "$TEST_DIR/docketd.log" | sed 's/.*silent_ms=//')
    [ "$silent" -ge 4000 ]
    wait_job_state "$id" PENDING # its only node is silent: it waits
}
