#!/usr/bin/env bats
# seams_budget.bats - issue 33's budgets, attacked (docs/security.md "The connection
# budget"): a slowloris of many connections from several addresses that reopens whatever
# is closed never locks a token holder or an agent out; a trickled body is cut like a
# trickled head.

load lib/common

bats_require_minimum_version 1.5.0

DOCKET=$DOCKET_BUILD/src/cli/docket

setup() {
    docket_setup
}

teardown() {
    [[ -n ${LORIS_PID:-} ]] && { touch "$TEST_DIR/loris.stop"; wait "$LORIS_PID" || true; }
    LORIS_PID=
    docket_teardown
}

# metric NAME: its value from /metrics (admin token).
metric() {
    curl -s -H "Authorization: Bearer $ADMIN_TOKEN" "$DOCKETD_URL/metrics" |
        awk -v m="$1" '$1 == m { print $2 }'
}

# loris_start N ADDR...: a slowloris of N connections from those source addresses, in
# the background, until the test ends (lib/slowloris.py).
loris_start() {
    local n=$1
    shift
    SLOWLORIS_STOP=$TEST_DIR/loris.stop SLOWLORIS_STATUS=$TEST_DIR/loris.status \
        python3 "$BATS_TEST_DIRNAME/lib/slowloris.py" "$DOCKETD_PORT" "$n" 600 "$@" &
    LORIS_PID=$!
}

# loris_opened_at_least N: the slowloris has opened N connections in all.
loris_opened_at_least() {
    local opened
    opened=$(grep -o 'opened=[0-9]*' "$TEST_DIR/loris.status" 2>/dev/null | cut -d= -f2)
    [[ ${opened:-0} -ge $1 ]]
}

@test "budget: a slowloris from four addresses holding twice the cap locks out neither the CLI with a token nor an agent" {
    # a cap of 32, 8 of it for proven connections; the slowloris wants 64 and reopens what
    # is closed at once, from 127.0.0.2-5 (16 each, at most 12 held unproven per address)
    docketd_start --max-connections 32 --reserved-connections 8 --max-unproven-per-peer 12
    local cred user
    cred=$(fake_node n1 8 H100-80GB)
    api_post /v1/tokens '{"user": "alice", "role": "member", "ttl": "1d"}'
    user=$(jq -r .token <<<"$body")
    [[ $user == dkt_* ]]
    loris_start 64 127.0.0.2 127.0.0.3 127.0.0.4 127.0.0.5
    # it has filled the cap and more (32 unanswered connections, then reopened ones)
    wait_for 60 loris_opened_at_least 100
    cat "$TEST_DIR/loris.status" >&3
    # the reserve: unproven connections never hold more than the cap less the reserve
    # (32 - 8), so 8 slots stay for connections that showed a token (agents' parked
    # heartbeats, a CLI's kept-alive connection) however the slowloris bursts
    local i u
    for i in 1 2 3 4 5; do
        u=$(metric docket_connections_unproven)
        [[ $u -le 24 ]] || { echo "unproven connections: $u, past the cap less the reserve" >&3; false; }
        sleep 0.2
    done
    [[ $(metric docket_connections_reserved) == 8 ]]
    for i in 1 2 3 4 5; do
        # the CLI with a member's token
        DOCKET_URL=$DOCKETD_URL DOCKET_TOKEN=$user run -0 "$DOCKET" nodes
        [[ $output == *n1* ]]
        # an agent's heartbeat with its node credential
        heartbeat n1 "$cred"
        assert_status 200
    done
    cat "$TEST_DIR/loris.status" >&3
    # the slowloris still holds connections: it was made to give way, not beaten by time
    [[ $(grep -o 'open=[0-9]*' "$TEST_DIR/loris.status" | cut -d= -f2) -ge 24 ]]
    grep -q 'event=connection_shed' "$TEST_DIR/docketd.log"
    [[ $(metric docket_connections_shed_total) -gt 0 ]]
    # (refused: only connections of a burst that found no older one to make room)
}

@test "budget: one address is held to max_unproven_per_peer; another address is not touched" {
    docketd_start --max-connections 200 --max-unproven-per-peer 5
    loris_start 40 127.0.0.2
    wait_for 60 loris_opened_at_least 60
    # 127.0.0.2 holds at most 5 unproven connections of earlier loop turns, plus what one
    # turn brings (the slowloris opens at most 8 a round): 13, not the 40 it wants (the
    # /metrics reader's own connection is proven by its token)
    few() { [[ $(metric docket_connections_unproven) -le 13 ]]; }
    for _ in 1 2 3; do few; sleep 0.3; done
    grep -q 'event=connection_shed peer=127.0.0.2 reason=peer_cap' "$TEST_DIR/docketd.log"
    # a client from 127.0.0.1 (no token: /healthz is public) is answered
    run curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$DOCKETD_URL/healthz"
    [[ $output == 200 ]]
}

@test "budget: a cap full of proven connections refuses a new one with 503; an unproven one never pushes them out" {
    docketd_start --max-connections 20 --reserved-connections 5 --idle-timeout 60s
    python3 "$BATS_TEST_DIRNAME/lib/trickle.py" "$DOCKETD_PORT" held 20:120 "$ADMIN_TOKEN" \
        >"$TEST_DIR/held" &
    local holder=$!
    docket_track_pid "$holder"
    held() { grep -q '^held 20$' "$TEST_DIR/held"; }
    wait_for 60 held || { cat "$TEST_DIR/held" >&3; false; }
    # every slot is proven: the new connection is the one refused, politely, in JSON
    run curl -s -w ' %{http_code}' --max-time 10 "$DOCKETD_URL/healthz"
    echo "at the cap: $output" >&3
    [[ $output == *'"code":"unavailable"'*' 503' ]]
    wait_for 30 grep -q 'event=connection_refused' "$TEST_DIR/docketd.log"
    ! grep -q 'event=connection_shed' "$TEST_DIR/docketd.log"
    docket_stop_pid "$holder"
    # the holder gone, a token holder is answered again
    wait_for 60 curl -sf -o /dev/null -H "Authorization: Bearer $ADMIN_TOKEN" "$DOCKETD_URL/metrics"
    [[ $(metric docket_connections_refused_total) -ge 1 ]]
}

@test "budget: a request body trickled after a whole head is cut at request_timeout" {
    docketd_start --idle-timeout 30s --request-timeout 1s
    run python3 "$BATS_TEST_DIRNAME/lib/trickle.py" "$DOCKETD_PORT" slowbody 60 "$ADMIN_TOKEN"
    echo "$output" >&3
    [[ $output == "closed after "* ]]
    grep -q "event=request_timed_out" "$TEST_DIR/docketd.log"
}

@test "budget: config keys of the budget are validated" {
    printf 'max_unproven_per_peer: 0\n' >"$TEST_DIR/d.yaml"
    run "$DOCKETD" --config "$TEST_DIR/d.yaml" --state-dir "$STATE_DIR"
    [[ $status -ne 0 && $output == *max_unproven_per_peer* ]]
    printf 'reserved_connections: -1\n' >"$TEST_DIR/d.yaml"
    run "$DOCKETD" --config "$TEST_DIR/d.yaml" --state-dir "$STATE_DIR"
    [[ $status -ne 0 && $output == *reserved_connections* ]]
    run "$DOCKETD" --max-unproven-per-peer x --state-dir "$STATE_DIR"
    [[ $status -ne 0 && $output == *max-unproven-per-peer* ]]
    docketd_start --max-connections 40 --reserved-connections 100
    # kept below the cap, and said at start
    grep -q 'max_connections=40 reserved_connections=39 ' "$TEST_DIR/docketd.log"
}

# ------------------------------------------------------------------------------------
# Queue caps (issue 33, item 9)

# member_token USER: a member token for USER, who is made a member of project default
member_token() {
    api_post /v1/projects/default/members "{\"user\": \"$1\", \"role\": \"member\"}"
    assert_status 201 >/dev/null
    api_token "$1"
}

# stored_jobs: the jobs in the database (whatever their state).
stored_jobs() {
    sqlite3 "$STATE_DIR/docket.db" "SELECT count(*) FROM jobs"
}

@test "queue: an array past user_max_queued or a project's max_queued is refused whole, 429 naming the cap" {
    docketd_start --submit-rate 0
    fake_node gpu01 8 H100-80GB >/dev/null
    # the defaults are there without a policy saying so
    api_get /v1/policy
    assert_json '.settings.user_max_queued' 10000
    assert_json '.settings.max_queued' 50000
    api_post /v1/policy '{"settings": {"user_max_queued": 50, "max_queued": 80}}'
    assert_status 200
    local bob carol
    bob=$(member_token bob)
    carol=$(member_token carol)
    api_post /v1/jobs '{"command": ["x"], "array": "0-39", "hold": true}' "$bob"
    assert_status 201
    # 40 + 11 > 50: the whole array is refused, not its first 10 tasks
    api_post /v1/jobs '{"command": ["x"], "array": "0-10", "hold": true}' "$bob"
    assert_error 429 user
    [[ $body == *"user_max_queued is 50"* ]]
    [[ $(stored_jobs) == 40 ]]
    api_post /v1/jobs '{"command": ["x"], "array": "0-9", "hold": true}' "$bob"
    assert_status 201
    # the project (default: no max_queued of its own) holds 80 whoever asks: 50 + 31 > 80
    api_post /v1/jobs '{"command": ["x"], "array": "0-30", "hold": true}' "$carol"
    assert_error 429 project
    [[ $body == *"max_queued is 80"* ]]
    api_post /v1/jobs '{"command": ["x"], "array": "0-29", "hold": true}' "$carol"
    assert_status 201
    # an admin is exempt from the per-user cap, not from the project's
    api_post /v1/jobs '{"command": ["x"], "hold": true}'
    assert_error 429 project
    [[ $(stored_jobs) == 80 ]]
    # a job that leaves the queue makes room again
    api_post /v1/jobs/1/cancel ''
    assert_status 200
    api_post /v1/jobs '{"command": ["x"], "hold": true}' "$carol"
    assert_status 201
    # the CLI says which cap and what to do
    DOCKET_URL=$DOCKETD_URL DOCKET_TOKEN=$bob run "$DOCKET" submit --hold -- x
    [[ $status -ne 0 && $output == *user_max_queued* ]]
}

@test "queue: the submission rate limit counts an array's tasks, not the request" {
    docketd_start --submit-rate 1 --submit-burst 5
    fake_node gpu01 8 H100-80GB >/dev/null
    local bob h
    bob=$(member_token bob)
    # one array of 10 passes (the bucket had tokens) and leaves it 5 in debt
    api_post /v1/jobs '{"command": ["x"], "array": "0-9", "hold": true}' "$bob"
    assert_status 201
    h=$(curl -s -D - -o "$TEST_DIR/body" -H "Authorization: Bearer $bob" \
        -H 'Content-Type: application/json' --data-binary '{"command": ["x"], "hold": true}' \
        "$DOCKETD_URL/v1/jobs")
    [[ $h == "HTTP/1.1 429"* ]]
    # (at 1 a second, the debt takes seconds to pay: Retry-After says how many)
    [[ $(sed -n 's/^Retry-After: \([0-9]*\).*/\1/p' <<<"$h") -ge 3 ]]
    grep -q "an array's tasks count each" "$TEST_DIR/body"
}

# ------------------------------------------------------------------------------------
# The audit anchor (issue 33, item 10)

# anchor_id FILE: the id the anchor file names (0 when there is none yet).
anchor_id() {
    jq -r '.id // 0' "$1" 2>/dev/null || echo 0
}
anchor_past() { [[ $(anchor_id "$1") -ge $2 ]]; }

# verify [ARGS...]: docket audit --verify ARGS as the admin (sets status and output).
verify() {
    DOCKET_URL=$DOCKETD_URL DOCKET_TOKEN=$ADMIN_TOKEN run "$DOCKET" audit --verify "$@"
    echo "verify $*: $output" >&3
}

# db_back: the database as it was at the last db_keep (docketd stopped).
db_keep() { cp "$STATE_DIR/docket.db" "$TEST_DIR/kept.db"; }
db_back() { cp "$TEST_DIR/kept.db" "$STATE_DIR/docket.db"; rm -f "$STATE_DIR"/docket.db-wal "$STATE_DIR"/docket.db-shm; }

@test "audit anchor: the head is published; a trail cut short, blanked or re-chained fails --verify against it" {
    local anchor=$TEST_DIR/anchor.json # outside the state directory: kept elsewhere
    docketd_start --audit-anchor "$anchor"
    api_post /v1/projects '{"name": "pa"}'
    assert_status 201
    api_post /v1/tokens '{"user": "alice", "role": "member"}'
    api_post /v1/projects/pa/members '{"user": "alice", "role": "member"}'
    assert_status 201
    # published once on disk: the file, the log line, /metrics
    wait_for 60 anchor_past "$anchor" 4
    local id hash
    id=$(anchor_id "$anchor")
    hash=$(jq -r .hash "$anchor")
    [[ $(jq -r .chain_from "$anchor") == 1 ]]
    wait_for 30 grep -q "event=audit_head id=$id hash=$hash chain_from=1" "$TEST_DIR/docketd.log"
    curl -s -H "Authorization: Bearer $ADMIN_TOKEN" "$DOCKETD_URL/metrics" >"$TEST_DIR/metrics"
    grep -q "^docket_audit_head_id $id\$" "$TEST_DIR/metrics"
    grep -q "^docket_audit_head_info{hash=\"$hash\",chain_from=\"1\"} 1\$" "$TEST_DIR/metrics"
    cp "$anchor" "$TEST_DIR/copy.json" # a copy somewhere else again (a ticket, a log store)
    verify --anchor "$TEST_DIR/copy.json"
    [[ $status == 0 && $output == *"intact"*"anchored entry $id is there"* ]]
    verify # docketd checks its own anchor file
    [[ $status == 0 && $output == *"anchor from the file"* ]]
    docketd_stop
    db_keep

    # 1. every hash blanked: without an anchor this read "older entries predate the chain"
    sqlite3 "$STATE_DIR/docket.db" "DROP TRIGGER audit_no_update;
        UPDATE audit SET hash = '', prev_hash = '';"
    docketd_start --audit-anchor "$anchor"
    verify --anchor "$TEST_DIR/copy.json"
    [[ $status == 1 && $output == *"BROKEN at entry 1"*"blanked"* ]]
    verify
    [[ $status == 1 && $output == *"blanked"* ]]
    # docketd saw it at start and kept the file as it was, even after a new entry
    grep -q "event=audit_anchor_mismatch" "$TEST_DIR/docketd.log"
    api_post /v1/projects '{"name": "pb"}'
    assert_status 201
    sleep 1
    [[ $(jq -r .hash "$anchor") == "$hash" ]]
    docketd_stop
    db_back

    # 2. cut short: a valid, shorter chain
    sqlite3 "$STATE_DIR/docket.db" "DROP TRIGGER audit_no_delete;
        DELETE FROM audit WHERE id >= $((id - 1));"
    docketd_start --audit-anchor "$anchor"
    verify --anchor "$TEST_DIR/copy.json"
    [[ $status == 1 && $output == *"cut off its end"* ]]
    docketd_stop
    db_back

    # 3. re-chained: entry 2 changed and every hash rebuilt from the first, as docketd
    # computes them: a valid chain on its own ...
    python3 "$BATS_TEST_DIRNAME/lib/audit_rechain.py" "$STATE_DIR/docket.db" 2 nobody
    docketd_start
    verify
    [[ $status == 0 ]]
    # ... that its anchor gives away
    verify --anchor "$TEST_DIR/copy.json"
    [[ $status == 1 && $output == *"BROKEN at entry $id"*"rebuilt"* ]]
    docketd_stop
    db_back

    # the trail as it was passes again, and a bad anchor file is refused, not ignored
    docketd_start --audit-anchor "$anchor"
    verify --anchor "$TEST_DIR/copy.json"
    [[ $status == 0 ]]
    echo '{"id": 1}' >"$TEST_DIR/bad.json"
    verify --anchor "$TEST_DIR/bad.json"
    [[ $status == 2 && $output == *"chain_from"* ]]
}
