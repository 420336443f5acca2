#!/usr/bin/env bats
# docketd black-box tests: the real binary on a temporary state directory, driven with
# curl over loopback (docs/api.md). Nodes are registered through the real agent
# endpoints; a test plays the agent where it needs one.

load lib/common

setup() {
    docket_setup
    docketd_start
}

teardown() {
    docket_teardown
}

# A cluster of one 8-GPU node; sets CRED.
one_node() {
    CRED=$(fake_node gpu01 8 H100-80GB)
}

# json_until PATH JQ-EXPR EXPECTED: GET PATH until jq -r EXPR of the reply is EXPECTED
# (a cycle ran, an event was applied; 60 s at most: a deadline, not a speed). Leaves the
# reply in $body.
json_is() {
    api_get "$1"
    [[ $(jq -r "$2" <<<"$body") == "$3" ]]
}
json_until() {
    wait_for 60 json_is "$@" || {
        echo "$1: expected $2 == '$3', got '$(jq -r "$2" <<<"$body")'" >&2
        return 1
    }
}

@test "submit, list, show, explain, cancel" {
    one_node
    id=$(submit '{"name": "train \"quoted\"", "command": ["sleep", "100"], "gpus": 2, "gpu_type": "H100-80GB", "time_limit": "1h", "env": {"A": "1"}}')
    [ "$id" = 1 ]
    api_get /v1/jobs/1
    assert_status 200
    assert_json .job.name 'train "quoted"'
    assert_json .job.user admin
    assert_json .job.project default
    assert_json .job.gpus 2
    assert_json .job.time_limit_ms 3600000
    assert_json .job.env.A 1
    api_get /v1/jobs
    assert_status 200
    assert_json '.jobs | length' 1
    assert_json '.jobs[0].id' 1
    api_get /v1/jobs/1/explain
    assert_status 200
    assert_json .explain.job 1
    api_post /v1/jobs/1/cancel '{"reason": "changed my mind"}'
    assert_status 200
    api_get /v1/jobs/1/events
    assert_json '.events[0].type' submit
    api_get '/v1/audit?action=job.cancel'
    assert_json '.entries | length' 1
    assert_json '.entries[0].reason' "changed my mind"
    # the submit reply and show describe the same job with the same fields
    api_post /v1/jobs '{"name": "x\"y\\z é", "command": ["a b"], "hold": true, "env": {"Q": "\"\\"}, "labels": {"k": "v"}}'
    assert_status 201
    submitted=$body
    api_get "/v1/jobs/$(jq -r .job.id <<<"$submitted")"
    diff <(jq -S '.job | del(.hold)' <<<"$submitted") <(jq -S .job <<<"$body")
}

@test "a pending job explains why it waits and cancel ends it at once" {
    one_node
    first=$(submit '{"command": ["true"], "gpus": 8, "gpu_type": "H100-80GB"}')
    id=$(submit '{"command": ["true"], "gpus": 8, "gpu_type": "H100-80GB"}')
    json_until "/v1/jobs/$first" .job.state STARTING # a cycle ran
    api_get "/v1/jobs/$id/explain"
    assert_json .explain.state PENDING
    [ "$(jq -r .explain.reason <<<"$body")" != "" ]
    jq -e '.explain.position.overall >= 1' <<<"$body"
    api_post "/v1/jobs/$id/cancel"
    assert_status 200
    assert_json .job.state CANCELLED
    api_post "/v1/jobs/$id/cancel"
    assert_error 409 ""
    api_get "/v1/jobs?state=terminal"
    assert_json '.jobs[0].id' "$id"
}

@test "hold and release a pending job" {
    one_node
    id=$(submit '{"command": ["true"], "hold": true}')
    api_get "/v1/jobs/$id"
    assert_json .job.state HELD
    api_post "/v1/jobs/$id/release"
    assert_status 200
    api_post "/v1/jobs/$id/hold"
    assert_error 409 ""   # it started (or is starting): no longer pending
}

@test "the agent flow: start command, started, logs, exited" {
    one_node
    id=$(submit '{"command": ["echo", "hi"], "gpus": 1, "gpu_type": "H100-80GB"}')
    json_until "/v1/jobs/$id" .job.state STARTING
    heartbeat gpu01 "$CRED" 0
    assert_status 200
    assert_json '.commands[0].type' start
    assert_json '.commands[0].job.id' "$id"
    assert_json '.commands[0].job.command[0]' echo
    seq=$(jq -r '.commands[0].seq' <<<"$body")
    # not acknowledged: sent again, same seq
    heartbeat gpu01 "$CRED" 0 "[{\"id\": $id, \"state\": \"starting\", \"pid\": 10}]"
    assert_json '.commands[0].seq' "$seq"
    assert_json '.commands[0].job.id' "$id"
    heartbeat gpu01 "$CRED" "$seq" "[{\"id\": $id, \"state\": \"running\", \"pid\": 10}]"
    assert_json '.commands | length' 0
    api_post /v1/agent/events "{\"node\": \"gpu01\", \"events\": [{\"job\": $id, \"type\": \"started\", \"time_ms\": 1, \"pid\": 10}]}" "$CRED"
    assert_status 200
    api_get "/v1/jobs/$id"
    assert_json .job.state RUNNING
    api_post /v1/agent/logs "{\"node\": \"gpu01\", \"job\": $id, \"stream\": \"stdout\", \"offset\": 0, \"data\": \"aGkK\"}" "$CRED"
    assert_json .offset 3
    # a repeated chunk is ignored
    api_post /v1/agent/logs "{\"node\": \"gpu01\", \"job\": $id, \"stream\": \"stdout\", \"offset\": 0, \"data\": \"aGkK\"}" "$CRED"
    assert_json .offset 3
    api_get "/v1/jobs/$id/logs"
    [ "$body" = hi ]
    api_post /v1/agent/events "{\"node\": \"gpu01\", \"events\": [{\"job\": $id, \"type\": \"exited\", \"time_ms\": 2, \"exit\": {\"kind\": \"code\", \"code\": 0}, \"usage\": {\"cpu_ms\": 7}}]}" "$CRED"
    assert_status 200
    json_until "/v1/jobs/$id" .job.state COMPLETED
    assert_json .job.exit.kind code
    assert_json .job.usage.cpu_ms 7
    # a second exit is ignored
    api_post /v1/agent/events "{\"node\": \"gpu01\", \"events\": [{\"job\": $id, \"type\": \"exited\", \"exit\": {\"kind\": \"code\", \"code\": 1}}]}" "$CRED"
    assert_status 200
    api_get "/v1/jobs/$id"
    assert_json .job.state COMPLETED
}

@test "heartbeat long poll returns as soon as a command is queued" {
    # a wait far longer than the test may last (600 s, the protocol's most), and docketd
    # set so that neither its heartbeat_wait nor the cap from the fencing lease (a third of
    # node_timeout - margin) cuts it: a reply that comes at all, within curl's 120 s, was
    # woken by the command, not by the end of the wait. Every loop turn is logged, with
    # the polls it parked.
    docketd_stop
    DOCKETD_TURN_LOG_MS=0 docketd_start --log-level warn --node-timeout 1h --heartbeat-wait 10m
    [ "$(grep -c 'event=heartbeat_wait_capped' "$TEST_DIR/docketd.log")" = 0 ]
    one_node
    curl -s -o "$TEST_DIR/hb.json" -w '%{http_code}' --max-time 120 -H "Authorization: Bearer $CRED" \
        -H 'Content-Type: application/json' \
        --data-binary '{"node": "gpu01", "ack": 0, "wait_ms": 600000, "jobs": []}' \
        "$DOCKETD_URL/v1/agent/heartbeat" >"$TEST_DIR/hb.code" &
    local hb=$!
    # the poll is parked (a turn is logged when the next begins: /healthz makes one)
    parked() {
        curl -s -o /dev/null "$DOCKETD_URL/healthz"
        grep -q ' parked=1 ' "$TEST_DIR/docketd.log"
    }
    wait_for 60 parked
    kill -0 "$hb" # not answered yet: nothing to send
    submit '{"command": ["true"], "gpus": 1, "gpu_type": "H100-80GB"}' >/dev/null
    wait "$hb"
    [ "$(cat "$TEST_DIR/hb.code")" = 200 ]
    jq -e '.commands[0].type == "start"' "$TEST_DIR/hb.json"
}

@test "restart keeps jobs, nodes, projects, tokens and the audit trail" {
    one_node
    api_post /v1/projects '{"name": "vision", "tier": "high", "gpu_limit": 16}'
    assert_status 201
    submit '{"command": ["true"], "project": "vision", "gpus": 8, "gpu_type": "H100-80GB"}' >/dev/null
    id=$(submit '{"command": ["true"], "project": "vision", "gpus": 8, "gpu_type": "H100-80GB", "name": "second"}')
    dep=$(submit "{\"command\": [\"true\"], \"project\": \"vision\", \"gpus\": 1, \"gpu_type\": \"H100-80GB\", \"deps\": [{\"type\": \"afterok\", \"job\": $id}], \"selectors\": {\"zone\": \"!b\"}, \"mem\": \"1G\", \"time_limit\": \"2h\", \"signal\": \"USR1\", \"checkpoint\": true}")
    json_until "/v1/jobs/$dep/explain" .explain.reason Dependency
    api_post /v1/projects/vision/boost '{"levels": 1, "duration": "2h", "reason": "paper deadline"}'
    assert_status 200
    api_get /v1/audit
    naudit=$(jq '.entries | length' <<<"$body")
    docketd_stop
    docketd_start
    api_get /v1/projects/vision
    assert_json .project.boost.reason "paper deadline"
    assert_json .project.eff_tier critical
    api_get "/v1/jobs/$dep/explain"
    assert_json .explain.reason Dependency
    api_get "/v1/jobs/$dep"
    assert_json .job.time_limit_ms 7200000
    assert_json .job.selectors.zone '!b'
    assert_json .job.signal 10
    api_get "/v1/jobs/$id"
    assert_status 200
    assert_json .job.name second
    assert_json .job.state PENDING
    api_get /v1/projects/vision
    assert_json .project.gpu_limit 16
    api_get /v1/nodes/gpu01
    assert_status 200
    assert_json .node.gpus 8
    api_get /v1/audit
    [ "$(jq '.entries | length' <<<"$body")" -ge "$naudit" ]
    # new ids continue after the old ones
    id2=$(submit '{"command": ["true"], "project": "vision"}')
    [ "$id2" -gt "$id" ]
    # the node credential still works
    heartbeat gpu01 "$CRED" 0
    assert_status 200
}

@test "restart: a running job unknown to the agent is requeued" {
    one_node
    id=$(submit '{"command": ["sleep", "100"], "gpus": 1, "gpu_type": "H100-80GB"}')
    json_until "/v1/jobs/$id" .job.state STARTING
    heartbeat gpu01 "$CRED" 0
    seq=$(jq -r '.commands[0].seq' <<<"$body")
    api_post /v1/agent/events "{\"node\": \"gpu01\", \"events\": [{\"job\": $id, \"type\": \"started\"}]}" "$CRED"
    api_get "/v1/jobs/$id"
    assert_json .job.state RUNNING
    docketd_kill9
    docketd_start
    api_get "/v1/jobs/$id"
    assert_json .job.state RUNNING
    heartbeat gpu01 "$CRED" "$seq" '[]'
    assert_status 200
    sleep 0.2
    api_get "/v1/jobs/$id/events"
    jq -e '[.events[] | select(.reason == "node_fail")] | length >= 1' <<<"$body"
    api_get "/v1/jobs/$id"
    # requeued (and maybe already started again on the same node)
    [[ "$(jq -r .job.state <<<"$body")" =~ ^(PENDING|STARTING)$ ]]
}

# running_on_gpu01: one fake node gpu01 ($CRED) and a job running there ($id), its start
# acknowledged and "started" said once; the node says nothing more.
running_on_gpu01() {
    one_node
    id=$(submit '{"command": ["sleep", "100"], "gpus": 1, "gpu_type": "H100-80GB"}')
    json_until "/v1/jobs/$id" .job.state STARTING
    heartbeat gpu01 "$CRED" 0
    api_post /v1/agent/events "{\"node\": \"gpu01\", \"events\": [{\"job\": $id, \"type\": \"started\"}]}" "$CRED"
}

@test "a silent node is UNREACHABLE, its job runs on under its lease, then it is requeued" {
    docketd_stop
    docketd_start --node-timeout 1s
    api_post /v1/policy '{"classes": [{"name": "training"}, {"name": "experiment", "lease": "4s"},
        {"name": "exploration"}, {"name": "interactive"}, {"name": "service"}]}'
    assert_status 200
    running_on_gpu01
    # node_timeout 1 s + the fencing margin (a third of it) + the 1 s tick, or later
    json_until /v1/nodes/gpu01 .node.state UNREACHABLE
    # no new work goes there, but the job is not lost while its 4 s lease may hold: the
    # node, the job and explain say until when (a lower bound below, true at any speed)
    api_get "/v1/jobs/$id/explain"
    if [[ $(jq -r .explain.state <<<"$body") == RUNNING ]]; then
        jq -e '.explain.lease.node == "gpu01" and .explain.lease.ends_ms > 0' <<<"$body"
    fi
    json_until "/v1/jobs/$id" .job.state PENDING
    silent=$(grep "event=lease_expired job=$id node=gpu01 " "$TEST_DIR/docketd.log" | sed 's/.*silent_ms=//')
    echo "declared lost after $silent ms of silence" >&3
    [ "$silent" -ge 4333 ] # the lease + the margin (a third of node_timeout)
    api_get "/v1/jobs/$id/events"
    jq -e '[.events[] | select(.type == "lease_expired" and .node == "gpu01")] | length == 1' <<<"$body"
    api_get "/v1/jobs/$id"
    jq -e '.job.exit.kind == "lost" and (.job.exit.message | test("lease ran out"))' <<<"$body"
    # the start it never acknowledged is not sent again: the job was requeued
    heartbeat gpu01 "$CRED" 0 '[]'
    assert_json '.commands | length' 0
    api_get /v1/nodes/gpu01
    assert_json .node.state UP
    assert_json .node.leases_end_ms 0
}

@test "a silent node's job with the default lease outlives node_timeout many times over" {
    docketd_stop
    docketd_start --node-timeout 1s
    running_on_gpu01
    json_until /v1/nodes/gpu01 .node.state UNREACHABLE
    api_get /v1/nodes/gpu01
    # 15 min (the default) from the last heartbeat at the soonest
    jq -e --argjson now "$(date +%s%3N)" '.node.leases_end_ms > $now + 14 * 60000' <<<"$body"
    api_get "/v1/jobs/$id"
    assert_json .job.state RUNNING
    # a restart of docketd keeps the run's lease: still running, the lease counted anew
    docketd_stop
    docketd_start --node-timeout 1s
    json_until /v1/nodes/gpu01 .node.state UNREACHABLE
    api_get "/v1/jobs/$id"
    assert_json .job.state RUNNING
    api_get /v1/nodes/gpu01
    jq -e --argjson now "$(date +%s%3N)" '.node.leases_end_ms > $now + 14 * 60000' <<<"$body"
    # the agent comes back: reconciled, the job goes on
    heartbeat gpu01 "$CRED" 1 "[{\"id\": $id, \"state\": \"running\"}]"
    json_until /v1/nodes/gpu01 .node.state UP
    api_get "/v1/jobs/$id"
    assert_json .job.state RUNNING
}

@test "down: an admin declares a silent node's jobs lost at once; a node heard from is refused" {
    docketd_stop
    docketd_start --node-timeout 1s
    running_on_gpu01
    api_post /v1/nodes/gpu01/down '{"reason": "machine off"}'
    if [[ $status_code == 409 ]]; then # heard from: refused, nothing changed
        jq -e '.error.message | test("drain it instead")' <<<"$body"
        api_get "/v1/jobs/$id"
        assert_json .job.state RUNNING
    fi
    json_until /v1/nodes/gpu01 .node.state UNREACHABLE
    api_post /v1/nodes/gpu01/down '{"reason": "machine off"}'
    assert_status 200
    assert_json .node.state DOWN
    json_until "/v1/jobs/$id" .job.state PENDING
    api_get "/v1/audit?target=gpu01"
    jq -e '[.entries[] | select(.action == "node.down")] | length == 1' <<<"$body"
    # the agent comes back: nothing queued for it (the start it never acknowledged) is sent
    heartbeat gpu01 "$CRED" 0 '[]'
    assert_json '.commands | length' 0
}

@test "a gang that loses a node: every state change is an event with from and to" {
    # issue 33 #12: the kill of the gang's other rank had empty from/to and no event said
    # the job left RUNNING. The node is lost once its 4 s lease runs out.
    docketd_stop
    docketd_start --node-timeout 1s
    api_post /v1/policy '{"classes": [{"name": "training"}, {"name": "experiment", "lease": "4s"},
        {"name": "exploration"}, {"name": "interactive"}, {"name": "service"}]}'
    assert_status 200
    c1=$(fake_node gpu01 8 H100-80GB)
    c2=$(fake_node gpu02 8 H100-80GB)
    id=$(submit '{"command": ["torchrun"], "gpus": 8, "gpu_type": "H100-80GB", "nodes": 2}')
    json_until "/v1/jobs/$id" .job.state STARTING
    for n in 1 2; do
        cred=c$n
        heartbeat gpu0$n "${!cred}" 0
        api_post /v1/agent/events "{\"node\": \"gpu0$n\", \"events\": [{\"job\": $id, \"type\": \"started\"}]}" "${!cred}"
        assert_status 200
    done
    json_until "/v1/jobs/$id" .job.state RUNNING
    # gpu02 falls silent; gpu01 goes on heartbeating with the job running, until gpu02's
    # lease ran out and the gang is stopped
    alive='[{"id": '$id', "state": "running", "pid": 10}]'
    deadline=$((SECONDS + 60))
    until api_get "/v1/jobs/$id" && [[ $(jq -r .job.state <<<"$body") == STOPPING ]]; do
        ((SECONDS < deadline))
        heartbeat gpu01 "$c1" 1 "$alive"
        sleep 0.2
    done
    api_post /v1/agent/events "{\"node\": \"gpu01\", \"events\": [{\"job\": $id, \"type\": \"exited\", \"exit\": {\"kind\": \"signal\", \"code\": 9}}]}" "$c1"
    assert_status 200
    api_get "/v1/jobs/$id"
    final=$(jq -r .job.state <<<"$body")
    [[ $final != RUNNING && $final != STOPPING ]]
    api_get "/v1/jobs/$id/events?limit=100"
    echo "$body" | jq -c '.events[] | [.type, .from, .to, .reason]' >&3
    # no event without its states, and the states chain from PENDING to the end
    [ "$(jq '[.events[] | select(.type != "submit" and (.from == "" or .to == ""))
              | select(.type == "kill" or .type == "state" or .type == "start" or .type == "running")] | length' <<<"$body")" -eq 0 ]
    jq -e '.events[] | select(.type == "kill" and .from == "RUNNING" and .to == "STOPPING" and .reason == "node_fail")' <<<"$body"
    jq -e --arg f "$final" '.events[] | select(.from == "STOPPING" and .to == $f)' <<<"$body"
}

@test "afterok on a job that has just completed is taken before a cycle writes the end" {
    docketd_stop
    printf 'cycle_delay: 5s\n' >"$TEST_DIR/slow-cycle.yaml" # the window, held open
    docketd_start --config "$TEST_DIR/slow-cycle.yaml"
    one_node
    a=$(submit '{"command": ["true"], "gpus": 1, "gpu_type": "H100-80GB"}')
    json_until "/v1/jobs/$a" .job.state STARTING
    start_on gpu01 "$CRED" "$a"
    api_post /v1/agent/events "{\"node\": \"gpu01\", \"events\": [{\"job\": $a, \"type\": \"exited\", \"exit\": {\"kind\": \"code\", \"code\": 0}}]}" "$CRED"
    assert_status 200
    # the core has ended it; the cycle that writes COMPLETED is seconds away
    api_post /v1/jobs "{\"command\": [\"true\"], \"deps\": [{\"type\": \"afterok\", \"job\": $a}]}"
    assert_status 201
    # one that can never be met is taken too, and waits as Slurm's DependencyNeverSatisfied
    api_post /v1/jobs "{\"command\": [\"true\"], \"deps\": [{\"type\": \"afternotok\", \"job\": $a}]}"
    assert_status 201
    never=$(jq -r .job.id <<<"$body")
    json_until "/v1/jobs/$never" .job.reason DependencyNeverSatisfied
}

@test "DependencyNeverSatisfied: afterok on a job that failed waits, across a restart" {
    one_node
    a=$(submit '{"command": ["false"], "gpus": 1, "gpu_type": "H100-80GB"}')
    b=$(submit "{\"command\": [\"true\"], \"deps\": [{\"type\": \"afterok\", \"job\": $a}]}")
    json_until "/v1/jobs/$a" .job.state STARTING
    start_on gpu01 "$CRED" "$a"
    api_post /v1/agent/events "{\"node\": \"gpu01\", \"events\": [{\"job\": $a, \"type\": \"exited\", \"exit\": {\"kind\": \"code\", \"code\": 1}}]}" "$CRED"
    assert_status 200
    json_until "/v1/jobs/$a" .job.state FAILED
    json_until "/v1/jobs/$b" .job.reason DependencyNeverSatisfied
    c=$(submit "{\"command\": [\"true\"], \"deps\": [{\"type\": \"afterok\", \"job\": $a}]}")
    json_until "/v1/jobs/$c" .job.reason DependencyNeverSatisfied
    docketd_stop
    docketd_start
    json_until "/v1/jobs/$b" .job.reason DependencyNeverSatisfied
    json_until "/v1/jobs/$c" .job.reason DependencyNeverSatisfied
    assert_json .job.state PENDING
    api_post "/v1/jobs/$b/cancel" '{}'
    assert_status 200
}

@test "kill -9 in a burst of concurrent submissions loses no acknowledged job" {
    one_node
    workers=()
    for w in 1 2 3 4 5 6 7 8; do
        # each worker stops at its first failed call (docketd is gone: the rest of its 200
        # would only be refused) and runs without bats' per-command DEBUG trap
        (trap - DEBUG
         for i in $(seq 1 200); do
            curl -s -w '%{http_code} ' -H "Authorization: Bearer $ADMIN_TOKEN" \
                -X POST -d "{\"command\": [\"true\"], \"name\": \"w$w-$i\"}" \
                -o "$TEST_DIR/b$w.$i" "$DOCKETD_URL/v1/jobs" || break
          done) >"$TEST_DIR/codes$w" 2>/dev/null &
        workers+=($!)
    done
    sleep 1
    docketd_kill9
    wait "${workers[@]}"
    docketd_start
    # the acknowledged submissions, "ID NAME" each (a body the kill cut short is no JSON);
    # in a subshell without bats' DEBUG trap, which runs before every command
    (
        trap - DEBUG
        for f in "$TEST_DIR"/b[1-8].*; do
            jq -r '.job | select(.id != null) | "\(.id) \(.name)"' "$f" 2>/dev/null || true
        done
    ) >"$TEST_DIR/acked"
    ok=$(wc -l <"$TEST_DIR/acked")
    echo "acknowledged: $ok" >&3
    [ "$ok" -gt 0 ]
    # each one is there after the restart, under its name: one curl asks for them all, in
    # order (a curl and two jq per job took most of this test's time)
    awk -v url="$DOCKETD_URL" -v tok="$ADMIN_TOKEN" -v dir="$TEST_DIR" '{
        if (NR > 1) print "next"
        print "silent"
        printf "url = \"%s/v1/jobs/%s\"\n", url, $1
        printf "header = \"Authorization: Bearer %s\"\n", tok
        printf "output = \"%s/got.%d\"\n", dir, NR
        print "write-out = \"%{http_code}\\n\"" }' "$TEST_DIR/acked" >"$TEST_DIR/get.curl"
    curl -K "$TEST_DIR/get.curl" >"$TEST_DIR/codes"
    [ "$(grep -cx 200 "$TEST_DIR/codes")" -eq "$ok" ] || { sort "$TEST_DIR/codes" | uniq -c; false; }
    mapfile -t got < <(seq -f "$TEST_DIR/got.%.0f" 1 "$ok")
    jq -r '"\(.job.id) \(.job.name)"' "${got[@]}" | diff "$TEST_DIR/acked" -
}

@test "bad job specs are refused naming the field, and store nothing" {
    one_node
    check() { # BODY STATUS FIELD
        api_post /v1/jobs "$1"
        assert_error "$2" "$3"
    }
    check '{"command": ["x"], "gpus": 1' 400 ""
    check '[1, 2]' 400 ""
    check '{"command": ["x"], "gpus": "two"}' 400 gpus
    check '{"command": ["x"], "gpus": -1}' 400 gpus
    check '{"command": ["x"], "gpus": 100000}' 400 gpus
    check '{"command": ["x"], "cpus": 0}' 400 cpus
    check '{"command": ["x"], "mem": "lots"}' 400 mem
    check '{"command": ["x"], "mem": -5}' 400 mem
    check '{"command": ["x"], "mem": "999999T"}' 400 mem
    check '{"command": ["x"], "time_limit": "forever"}' 400 time_limit
    check '{"command": ["x"], "time_limit": -1}' 400 time_limit
    check '{"command": ["x"], "nodes": 0}' 400 nodes
    check '{"command": ["x"], "colour": "blue"}' 400 colour
    check '{"command": "x"}' 400 command
    check '{"command": ["x", 3]}' 400 "command[1]"
    check '{"command": []}' 400 command
    check '{"gpus": 1}' 400 command
    check '{"command": ["x"], "script": "echo"}' 400 script
    check '{"command": ["x"], "env": {"BAD-NAME": "1"}}' 400 "env.BAD-NAME"
    check '{"command": ["x"], "env": {"PATH": 1}}' 400 "env.PATH"
    check '{"command": ["x"], "deps": [{"type": "afterok", "job": 999}]}' 400 "deps[0].job"
    check '{"command": ["x"], "deps": [{"type": "aftercorr", "job": 1}]}' 400 "deps[0].type"
    check '{"command": ["x"], "deps": [{"type": "afterok", "job": 1, "x": 1}]}' 400 "deps[0].x"
    check '{"command": ["x"], "deps": [{"type": "afterok", "job": 999, "array": true}]}' 400 "deps[0].job"
    check '{"command": ["x"], "deps": [{"type": "afterok", "job": 1, "array": "yes"}]}' 400 "deps[0].array"
    check '{"command": ["x"], "signal": "SIGNOPE"}' 400 signal
    check '{"command": ["x"], "array": "9-1"}' 400 array
    check '{"command": ["x"], "array": "0-100000"}' 400 array
    check '{"command": ["x"], "project": "nope"}' 400 project
    check '{"command": ["x"], "tier": "platinum"}' 400 tier
    check '{"command": ["x"], "class": "party"}' 400 class
    check '{"command": ["x"], "gpus": 1, "gpu_type": "TPU"}' 400 gpu_type
    check '{"command": ["x"], "gpus": 9, "gpu_type": "H100-80GB"}' 400 gpus
    check '{"command": ["x"], "cpus": 65}' 400 cpus
    check '{"command": ["x"], "project": "bad name"}' 400 project
    check '{"command": ["x"], "workdir": "relative"}' 400 workdir
    check '{"command": ["x"], "selectors": {"zone": 1}}' 400 selectors.zone
    check '{"command": ["x"], "user": "mallory", "name": 5}' 400 name
    check '{"command": ["x"], "tier": "critical"}' 400 tier
    check '{"command": ["x"], "begin": "yesterday"}' 400 begin
    check '{"command": ["x"], "retries": 3}' 400 retries
    check '{"command": ["x"], "grace": "5d"}' 400 grace
    check '{"command": ["x"], "time_limit": "400d"}' 400 time_limit
    api_get '/v1/jobs?state=all'
    assert_json '.jobs | length' 0
    api_get '/v1/audit?action=job.submit'
    assert_json '.entries | length' 0
}

@test "oversize bodies get 413, bad methods 405, unknown paths 404" {
    head -c 1500000 /dev/zero | tr '\0' 'a' >"$TEST_DIR/big"
    api_file POST /v1/jobs "$TEST_DIR/big"
    assert_error 413 ""
    api DELETE /v1/jobs
    assert_error 405 ""
    api_get /v1/nothing
    assert_error 404 ""
    api_get /v1/jobs/999
    assert_error 404 ""
    api_get '/v1/jobs?limit=0'
    assert_error 400 limit
    api_get '/v1/jobs?state=SLEEPY'
    assert_error 400 state
}

@test "max_queued reached gets 429 and stores nothing" {
    one_node
    api_post /v1/projects '{"name": "tiny", "max_queued": 2}'
    assert_status 201
    submit '{"command": ["x"], "project": "tiny", "hold": true}' >/dev/null
    submit '{"command": ["x"], "project": "tiny", "hold": true}' >/dev/null
    api_post /v1/jobs '{"command": ["x"], "project": "tiny", "hold": true}'
    assert_error 429 project
    assert_json .error.code quota_exceeded
    api_post /v1/jobs '{"command": ["x"], "project": "tiny", "array": "0-3"}'
    assert_error 429 project
    api_get '/v1/jobs?project=tiny&state=all'
    assert_json '.jobs | length' 2
}

@test "credentials: none, forged, stale, node credential on user endpoints" {
    one_node
    api_get /v1/jobs -
    assert_error 401 ""
    api_get /v1/jobs dkt_forged000000000000000000000000000000
    assert_error 401 ""
    api_post /v1/agent/heartbeat '{"node": "gpu01", "ack": 0, "wait_ms": 0}' dkn_forged00000000000000000000000000
    assert_error 401 ""
    api_post /v1/agent/register '{"join_token": "dkj_forged0000000000000000", "node": {"name": "x", "cpus": 1, "mem_mb": 1}}' -
    assert_error 401 join_token
    api_post /v1/agent/register '{"node": {"name": "x", "cpus": 1, "mem_mb": 1}}' -
    assert_error 401 join_token
    api_get /v1/jobs "$CRED"
    assert_error 403 ""
    api_post /v1/agent/heartbeat '{"node": "gpu02", "ack": 0, "wait_ms": 0}' "$CRED"
    assert_error 403 node
    # re-registration with the credential issues a new one; the old one is stale
    api_post /v1/agent/register '{"node": {"name": "gpu01", "gpu_type": "H100-80GB", "gpus": 8, "cpus": 64, "mem_mb": 512000}}' "$CRED"
    assert_status 200
    new=$(jq -r .credential <<<"$body")
    heartbeat gpu01 "$CRED" 0
    assert_error 401 ""
    heartbeat gpu01 "$new" 0
    assert_status 200
    # bad agent bodies
    api_post /v1/agent/events '{"node": "gpu01", "events": [{"job": 1, "type": "exploded"}]}' "$new"
    assert_error 400 "events[0].type"
    api_post /v1/agent/events '{"node": "gpu01", "events": [{"job": 1, "type": "exited"}]}' "$new"
    assert_error 400 "events[0].exit"
    api_post /v1/agent/heartbeat '{"node": "gpu01", "ack": -1}' "$new"
    assert_error 400 ack
}

@test "a member token: submits as itself, cannot act as admin or touch others' jobs" {
    one_node
    api_post /v1/tokens '{"user": "alice", "role": "member", "ttl": "1d"}'
    assert_status 201
    alice=$(jq -r .token <<<"$body")
    api_post /v1/tokens '{"user": "bob"}'
    bob=$(jq -r .token <<<"$body")
    # not yet a member of the (only) project: refused, naming it
    api_get /v1/projects
    proj=$(jq -r '.projects[0].name' <<<"$body")
    api_post /v1/jobs '{"command": ["x"], "hold": true}' "$alice"
    assert_error 403 project
    [[ $body == *"$proj"* ]]
    for u in alice bob; do
        api_post "/v1/projects/$proj/members" "{\"user\": \"$u\"}"
        assert_status 201
    done
    api_post /v1/jobs '{"command": ["x"], "hold": true}' "$alice"
    assert_status 201
    assert_json .job.user alice
    id=$(jq -r .job.id <<<"$body")
    api_post /v1/jobs '{"command": ["x"], "user": "bob"}' "$alice"
    assert_error 403 user
    api_post "/v1/jobs/$id/cancel" "" "$bob"
    assert_error 403 ""
    api_post "/v1/jobs/$id/cancel" "" "$alice"
    assert_status 200
    api_post /v1/projects '{"name": "p"}' "$alice"
    assert_error 403 ""
    api_get /v1/audit "$alice"
    assert_error 403 ""
}

@test "the unix socket identifies the caller by its uid" {
    run curl -s --unix-socket "$STATE_DIR/docketd.sock" http://localhost/v1/jobs
    [ "$status" -eq 0 ]
    jq -e '.jobs' <<<"$output"
    run curl -s --unix-socket "$STATE_DIR/docketd.sock" -X POST -d '{"name": "p2"}' http://localhost/v1/projects
    jq -e '.project.name == "p2"' <<<"$output"
    api_get '/v1/audit?action=project.create'
    assert_json '.entries[0].actor' "$(id -un)"
}

@test "projects: create, patch, boost, pause, bad input" {
    api_post /v1/projects '{"name": "nlp", "group": "lang", "tier": "normal", "guarantee_gpus": 8}'
    assert_status 201
    api_post /v1/projects '{"name": "nlp"}'
    assert_error 409 name
    api_post /v1/projects '{"name": "x", "tier": "mythic"}'
    assert_error 400 tier
    api_post /v1/projects '{"name": "x", "gpu_limit": "many"}'
    assert_error 400 gpu_limit
    api_post /v1/projects '{"name": "x", "owner": "me"}'
    assert_error 400 owner
    api_patch /v1/projects/nlp '{"max_running": 4}'
    assert_status 200
    assert_json .project.max_running 4
    assert_json .project.group lang
    api_patch /v1/projects/nlp '{"name": "other"}'
    assert_error 400 name
    api_post /v1/projects/nlp/boost '{"levels": 1, "duration": "48h", "reason": "deadline"}'
    assert_status 200
    assert_json .project.boost.levels 1
    assert_json .project.boost.reason deadline
    assert_json .project.eff_tier high
    api_post /v1/projects/nlp/boost '{"levels": 1, "duration": "48h"}'
    assert_error 400 reason
    api_delete /v1/projects/nlp/boost
    assert_status 200
    assert_json .project.boost null
    fake_node gpu01 8 H100-80GB >/dev/null
    submit '{"command": ["x"], "project": "nlp", "gpus": 8, "gpu_type": "H100-80GB"}' >/dev/null
    id=$(submit '{"command": ["x"], "project": "nlp", "gpus": 8, "gpu_type": "H100-80GB", "hold": true}')
    api_post /v1/projects/nlp/pause
    assert_json .project.paused true
    api_post /v1/jobs '{"command": ["x"], "project": "nlp"}'
    assert_error 409 project
    api_post "/v1/jobs/$id/release"
    json_until "/v1/jobs/$id" .job.reason AdmissionPaused
    assert_json .job.state PENDING
    api_post /v1/projects/nlp/resume
    assert_json .project.paused false
    json_until "/v1/jobs/$id" '.job.reason != "AdmissionPaused"' true
    assert_json .job.state PENDING
    api_get /v1/projects/none
    assert_error 404 ""
}

@test "policy apply: YAML and JSON, dry run, whole-or-nothing, 415" {
    cat >"$TEST_DIR/policy.yaml" <<'EOF'
tiers: [{name: critical, starve_after: 1h}, {name: high}, {name: normal}, {name: low, starve_after: 24h}]
settings: {min_runtime: 5m, max_preemptions: 2}
projects:
  - {name: vision, group: cv, tier: high, guarantee_gpus: 16, gpu_limit: 32, max_queued: 1000}
  - {name: speech, tier: low}
EOF
    api_file POST '/v1/policy?dry_run=1' "$TEST_DIR/policy.yaml" application/yaml
    assert_status 200
    api_get /v1/projects/vision
    assert_error 404 ""
    api_file POST /v1/policy "$TEST_DIR/policy.yaml" application/yaml
    assert_status 200
    assert_json .applied.projects 2
    api_get /v1/projects/vision
    assert_json .project.gpu_limit 32
    api_get /v1/policy
    assert_json .settings.min_runtime 300s
    api_post /v1/policy '{"projects": [{"name": "ok"}, {"name": "bad", "tier": "nope"}]}'
    assert_error 400 "projects[1].tier"
    api_get /v1/projects/ok
    assert_error 404 ""
    api_post /v1/policy '{"settings": {"min_runtime": "soon"}}'
    assert_error 400 settings.min_runtime
    api_post /v1/policy '{"tiers": [{"name": "a"}]}'
    assert_error 400 tiers
    api_post /v1/policy '{"colours": []}'
    assert_error 400 colours
    echo 'x' >"$TEST_DIR/p.txt"
    api_file POST /v1/policy "$TEST_DIR/p.txt" text/plain
    assert_error 415 ""
    api_get '/v1/audit?action=policy.apply'
    assert_json '.entries | length' 1
    # a tier still in use cannot go: 409, and the policy is unchanged
    fake_node gpu01 8 H100-80GB >/dev/null
    submit '{"command": ["x"], "project": "speech", "tier": "low", "hold": true}' >/dev/null
    api_post /v1/policy '{"tiers": [{"name": "critical"}, {"name": "high"}, {"name": "normal"}]}'
    assert_error 409 tiers
    api_get /v1/tiers
    assert_json '.tiers | length' 4
    api_get '/v1/audit?action=policy.apply'
    assert_json '.entries | length' 1
}

@test "tiers, classes, class patch" {
    api_get /v1/tiers
    assert_json '.tiers[0].name' critical
    api_get /v1/classes
    jq -e '[.classes[].name] | index("training") != null' <<<"$body"
    api_patch /v1/classes/experiment '{"max_grace": "2m"}'
    assert_status 200
    assert_json .class.max_grace_ms 120000
    api_patch /v1/classes/experiment '{"max_grace": "soon"}'
    assert_error 400 max_grace
    api_patch /v1/classes/none '{}'
    assert_error 404 ""
}

@test "nodes: list, drain, resume, labels" {
    one_node
    api_get /v1/nodes
    assert_json '.nodes[0].name' gpu01
    api_post /v1/nodes/gpu01/drain '{"reason": "maintenance"}'
    assert_status 200
    api_get /v1/nodes/gpu01
    [[ $(jq -r .node.state <<<"$body") =~ ^DRAIN ]]
    assert_json .node.reason maintenance
    api_post /v1/nodes/gpu01/resume
    assert_json .node.state UP
    api_post /v1/nodes/gpu01/labels '{"labels": {"zone": "a", "pool": "x"}}'
    assert_json .node.labels.zone a
    api_post /v1/nodes/gpu01/labels '{"labels": {"pool": null}}'
    assert_json .node.labels.pool null
    api_post /v1/nodes/gpu01/labels '{"labels": {"bad key": "v"}}'
    assert_error 400 "labels.bad key"
    api_post /v1/nodes/none/drain
    assert_error 404 ""
}

@test "arrays expand into one job per index sharing array_id" {
    one_node
    api_post /v1/jobs '{"command": ["x"], "array": "0-9%2", "hold": true}'
    assert_status 201
    assert_json '.jobs | length' 10
    aid=$(jq -r .array_id <<<"$body")
    assert_json '.jobs[9].array_index' 9
    api_get "/v1/jobs?array_id=$aid&limit=4"
    assert_json '.jobs | length' 4
    next=$(jq -r .next <<<"$body")
    api_get "/v1/jobs?array_id=$aid&limit=100&after=$next"
    assert_json '.jobs | length' 6
}

@test "healthz and metrics" {
    one_node
    submit '{"command": ["x"], "hold": true}' >/dev/null
    # open without a token, but then with no detail (issue 11)
    api_get /healthz -
    assert_json .status ok
    assert_json .jobs null
    api_get /healthz
    assert_json .jobs.HELD 1
    api_get /metrics -
    assert_error 401 ""
    run curl -s -H "Authorization: Bearer $ADMIN_TOKEN" "$DOCKETD_URL/metrics"
    [[ $output == *'docket_jobs{state="HELD",tier="normal",project="default"} 1'* ]]
    [[ $output == *'docket_cycle_seconds_count'* ]]
    [[ $output == *'docket_gpus{state="idle",gpu_type="H100-80GB"} 8'* ]]
    [[ $output == *'docket_submissions_total 1'* ]]
}

@test "SIGTERM shuts down cleanly and the state directory has its files" {
    [ -f "$STATE_DIR/docket.db" ]
    [ "$(stat -c %a "$STATE_DIR/admin.token")" = 600 ]
    pid=$DOCKETD_PID
    kill -TERM "$pid"
    gone() { ! kill -0 "$pid" 2>/dev/null; }
    wait_for 60 gone
    wait "$pid" || rc=$?
    [ "${rc:-0}" = 0 ]
    DOCKETD_PID=
}

@test "logs: follow waits for the agent's next chunk" {
    one_node
    id=$(submit '{"command": ["echo"], "gpus": 1, "gpu_type": "H100-80GB"}')
    json_until "/v1/jobs/$id" .job.state STARTING
    heartbeat gpu01 "$CRED" 0
    api_post /v1/agent/events "{\"node\": \"gpu01\", \"events\": [{\"job\": $id, \"type\": \"started\"}]}" "$CRED"
    curl -s -D "$TEST_DIR/follow.h" -H "Authorization: Bearer $ADMIN_TOKEN" \
        "$DOCKETD_URL/v1/jobs/$id/logs?follow=1&offset=0" >"$TEST_DIR/follow.b" &
    follower=$!
    sleep 0.3
    api_post /v1/agent/logs "{\"node\": \"gpu01\", \"job\": $id, \"stream\": \"stdout\", \"offset\": 0, \"data\": \"aGkK\"}" "$CRED"
    wait "$follower"
    [ "$(cat "$TEST_DIR/follow.b")" = hi ]
    grep -qi '^X-Docket-Offset: 3' "$TEST_DIR/follow.h"
    # a gap is refused with the current end
    api_post /v1/agent/logs "{\"node\": \"gpu01\", \"job\": $id, \"stream\": \"stdout\", \"offset\": 10, \"data\": \"aGkK\"}" "$CRED"
    assert_error 409 offset
    api_post /v1/agent/logs "{\"node\": \"gpu01\", \"job\": $id, \"stream\": \"stdout\", \"offset\": 3, \"data\": \"!!\"}" "$CRED"
    assert_error 400 data
    api_get "/v1/jobs/$id/logs?stream=both"
    assert_error 400 stream
}

@test "forecast lists the next releases" {
    one_node
    id=$(submit '{"command": ["sleep", "1"], "gpus": 8, "gpu_type": "H100-80GB", "time_limit": "1h"}')
    next=$(submit '{"command": ["sleep", "1"], "gpus": 8, "gpu_type": "H100-80GB"}')
    json_until "/v1/jobs/$id" .job.state STARTING # a cycle ran
    api_get /v1/forecast
    assert_status 200
    assert_json '.releases[0].job' "$id"
    assert_json '.releases[0].next_job' "$next"
    api_get '/v1/forecast?limit=0'
    assert_error 400 limit
}

@test "a bad configuration or flag stops docketd with a message" {
    printf 'listen: 127.0.0.1:0\ncolour: blue\n' >"$TEST_DIR/bad.yaml"
    run "$DOCKETD" --config "$TEST_DIR/bad.yaml" --state-dir "$TEST_DIR/s2"
    [ "$status" -eq 2 ]
    [[ $output == *"unknown field 'colour'"* ]]
    printf 'node_timeout: soon\n' >"$TEST_DIR/bad2.yaml"
    run "$DOCKETD" --config "$TEST_DIR/bad2.yaml" --state-dir "$TEST_DIR/s2"
    [ "$status" -eq 2 ]
    [[ $output == *node_timeout* ]]
    run "$DOCKETD" --state-dir "$TEST_DIR/s2" --max-body-bytes 12
    [ "$status" -eq 2 ]
    run timeout 10 "$DOCKETD" --state-dir "$TEST_DIR/s2" --listen nonsense
    [ "$status" -eq 1 ]
    run timeout 10 "$DOCKETD" --state-dir "$TEST_DIR/s3" --listen 127.0.0.1:0 --socket - --policy /nonexistent.yaml
    [ "$status" -eq 1 ]
    [[ $output == *nonexistent.yaml* ]]
}

@test "SIGHUP reopens the log file; JSON log lines on request" {
    docketd_stop
    docketd_start --log-file "$TEST_DIR/d.log" --log-format json
    mv "$TEST_DIR/d.log" "$TEST_DIR/d.log.1"
    kill -HUP "$DOCKETD_PID"
    wait_for 60 test -s "$TEST_DIR/d.log"
    api_post /v1/projects '{"name": "after-hup"}'
    docketd_stop
    grep -q '"event":"log_reopened"' "$TEST_DIR/d.log"
    grep -q '"event":"started"' "$TEST_DIR/d.log.1"
    jq -e . "$TEST_DIR/d.log" >/dev/null
}

@test "a gang job starts on two nodes at once with ranks and a master" {
    c1=$(fake_node gpu01 8 H100-80GB)
    c2=$(fake_node gpu02 8 H100-80GB)
    id=$(submit '{"command": ["torchrun"], "gpus": 8, "gpu_type": "H100-80GB", "nodes": 2}')
    json_until "/v1/jobs/$id" .job.state STARTING
    heartbeat gpu01 "$c1" 0
    assert_json '.commands[0].job.id' "$id"
    assert_json '.commands[0].job.world_size' 2
    r1=$(jq -r '.commands[0].job.node_rank' <<<"$body")
    m1=$(jq -r '.commands[0].job.master_addr' <<<"$body")
    heartbeat gpu02 "$c2" 0
    assert_json '.commands[0].job.id' "$id"
    r2=$(jq -r '.commands[0].job.node_rank' <<<"$body")
    [ "$m1" = "$(jq -r '.commands[0].job.master_addr' <<<"$body")" ]
    [ $((r1 + r2)) -eq 1 ]
    api_get "/v1/jobs/$id"
    assert_json '.job.allocation | length' 2
    api_get "/v1/jobs?node=gpu02"
    assert_json '.jobs[0].id' "$id"
    api_get "/v1/nodes/gpu02"
    assert_json '.node.jobs[0]' "$id"
    assert_json .node.gpus_used 8
}

@test "restart keeps queued jobs even after their project's max_queued was lowered" {
    one_node
    api_post /v1/projects '{"name": "p", "max_queued": 5}'
    for i in 1 2 3; do submit '{"command": ["x"], "project": "p", "hold": true}' >/dev/null; done
    api_patch /v1/projects/p '{"max_queued": 1}'
    assert_status 200
    docketd_stop
    docketd_start
    api_get /healthz
    assert_json .jobs.HELD 3
    api_get /v1/projects/p
    assert_json .project.max_queued 1
    assert_json .project.usage.queued 3
    api_post /v1/jobs '{"command": ["x"], "project": "p"}'
    assert_error 429 project
    grep -q restore_project_failed "$TEST_DIR/docketd.log" && return 1
    ! grep -q restore_job_failed "$TEST_DIR/docketd.log"
}

@test "restart: a running job whose node record is gone is requeued, or ended when nothing fits" {
    c1=$(fake_node gpu01 8 H100-80GB)
    c2=$(fake_node gpu02 8 H100-80GB)
    id=$(submit '{"command": ["sleep", "100"], "gpus": 8, "gpu_type": "H100-80GB"}')
    json_until "/v1/jobs/$id" .job.state STARTING
    node=$(jq -r '.job.allocation[0].node' <<<"$body")
    docketd_stop
    # fault injection: the record of the node the job runs on is gone
    sqlite3 "$STATE_DIR/docket.db" "DELETE FROM nodes WHERE name = '$node'"
    docketd_start
    grep -q "restore_requeued.*job=$id" "$TEST_DIR/docketd.log"
    api_get "/v1/jobs/$id"
    [[ $(jq -r .job.state <<<"$body") =~ ^(PENDING|STARTING)$ ]]
    api_get "/v1/jobs/$id/events"
    jq -e '[.events[] | select(.detail | test("could not be restored"))] | length == 1' <<<"$body"
    # now no node at all: nothing can take it back, it ends as NODE_FAIL with the reason
    docketd_stop
    sqlite3 "$STATE_DIR/docket.db" "DELETE FROM nodes"
    sqlite3 "$STATE_DIR/docket.db" "UPDATE jobs SET state = 'RUNNING' WHERE id = $id"
    docketd_start
    api_get "/v1/jobs/$id"
    assert_json .job.state NODE_FAIL
    assert_json .job.exit.kind lost
    api_get /healthz
    assert_json '.jobs | length' 0
}

# ------------------------------------------------------------------------------------------
# Fault injection: a write that fails inside the running docketd. Another connection adds
# a trigger to the live database that makes SQLite refuse one kind of write (RAISE(ABORT)),
# exactly as a full disk, a constraint or an I/O error reaches docketd: a failing
# sqlite3_step. Afterwards the API answers 500, and the core (/healthz counts what it
# holds) and the database agree; they still agree after a restart.

# fault_on NAME "BEFORE INSERT ON jobs [WHEN ...]": arm; fault_off NAME: disarm.
fault_on() {
    sqlite3 -cmd ".timeout 5000" "$STATE_DIR/docket.db" \
        "CREATE TRIGGER fault_$1 $2 BEGIN SELECT RAISE(ABORT, 'injected fault $1'); END;"
}
fault_off() {
    sqlite3 -cmd ".timeout 5000" "$STATE_DIR/docket.db" "DROP TRIGGER fault_$1"
}
# no_log EVENT: docketd logged no such event (`! grep` would not fail a bats test)
no_log() {
    if grep "event=$1" "$TEST_DIR/docketd.log"; then
        echo "docketd logged $1" >&2
        return 1
    fi
}
db() {
    sqlite3 -cmd ".timeout 5000" "$STATE_DIR/docket.db" "$1"
}
# The number of live jobs in the core (healthz) and of unfinished jobs in the database.
core_jobs() {
    api_get /healthz
    jq '[.jobs[]] | add // 0' <<<"$body"
}
store_jobs() {
    db "SELECT count(*) FROM jobs WHERE state IN ('PENDING', 'HELD', 'STARTING', 'RUNNING', 'STOPPING')"
}

@test "fault: a failed write on submit answers 500; the core never holds the job, no decision names it" {
    one_node
    # the third task of an array fails: the two before it were in the core already
    fault_on task3 "BEFORE INSERT ON jobs WHEN NEW.array_index = 2"
    api_post /v1/jobs '{"command": ["sleep", "100"], "gpus": 1, "array": "0-4"}'
    assert_error 500 ""
    [[ $(jq -r .error.message <<<"$body") == *"injected fault task3"* ]]
    # the audit row fails for a single job: the job row was written, then rolled back
    fault_on audit "BEFORE INSERT ON audit"
    api_post /v1/jobs '{"command": ["sleep", "100"], "gpus": 1}'
    assert_error 500 ""
    api_get /v1/jobs
    assert_json '.jobs | length' 0
    [ "$(core_jobs)" -eq 0 ]
    [ "$(db 'SELECT count(*) FROM jobs')" -eq 0 ]
    [ "$(db 'SELECT count(*) FROM job_events')" -eq 0 ]
    api_get /v1/projects/default
    assert_json .project.usage.queued 0
    assert_json .project.usage.gpus_in_use 0
    sleep 0.1 # a cycle ran: no decision, command or event for a job that was never stored
    no_log decision_for_unknown_job
    heartbeat gpu01 "$CRED"
    assert_json '.commands | length' 0
    fault_off task3
    fault_off audit
    # the ids were not used up, and the next submission runs: nothing meant for the jobs
    # that were refused (a decision the core still held) lands on the new job 1
    id=$(submit '{"command": ["sleep", "100"], "gpus": 1}')
    [ "$id" = 1 ]
    wait_job_state 1 STARTING
    [ "$(core_jobs)" -eq 1 ]
    [ "$(store_jobs)" -eq 1 ]
    api_get /v1/jobs/1
    assert_json .job.state STARTING
    [ "$(db "SELECT state FROM jobs WHERE id = 1")" = STARTING ]
    [ "$(db "SELECT count(*) FROM job_events WHERE to_state = 'CANCELLED'")" -eq 0 ]
    no_log decision_for_unknown_job
    docketd_stop
    docketd_start
    [ "$(core_jobs)" -eq 1 ]
    api_get /v1/jobs
    assert_json '.jobs | length' 1
}

@test "fault: a failed write on policy apply answers 500 and the live policy is unchanged" {
    api_get /v1/tiers
    tiers_before=$body
    policy='{"tiers": [{"name": "top"}, {"name": "critical"}, {"name": "high"}, {"name": "normal"}, {"name": "low"}],
             "projects": [{"name": "vision", "group": "cv", "tier": "high", "guarantee_gpus": 8}]}'
    # the policy document, a project document, then only the audit row fails
    for f in "policy:BEFORE INSERT ON policy" "projects:BEFORE INSERT ON projects" "audit:BEFORE INSERT ON audit"; do
        fault_on "${f%%:*}" "${f#*:}"
        api_post /v1/policy "$policy"
        assert_error 500 ""
        fault_off "${f%%:*}"
        api_get /v1/tiers
        [ "$body" = "$tiers_before" ]
        api_get /v1/projects/vision
        assert_status 404
    done
    [ "$(db "SELECT count(*) FROM projects WHERE name = 'vision'")" -eq 0 ]
    [ "$(db "SELECT count(*) FROM audit WHERE action = 'policy.apply'")" -eq 0 ]
    db "SELECT doc FROM policy" | jq -e '[.tiers[].name] | index("top") == null'
    # a class patch that cannot be saved changes nothing either
    fault_on cls "BEFORE UPDATE ON policy"
    api_get /v1/classes
    classes_before=$body
    api_patch /v1/classes/experiment '{"max_grace": "2m"}'
    assert_error 500 ""
    fault_off cls
    api_get /v1/classes
    [ "$body" = "$classes_before" ]
    # disarmed: applied, saved and audited together
    api_post /v1/policy "$policy"
    assert_status 200
    api_get /v1/projects/vision
    assert_status 200
    [ "$(db "SELECT count(*) FROM audit WHERE action = 'policy.apply'")" -eq 1 ]
    docketd_stop
    docketd_start
    api_get /v1/tiers
    assert_json '.tiers[0].name' top
}

@test "fault: a failed write on node registration answers 500 and the core has no such node" {
    one_node
    jt=$(join_token)
    reg="{\"join_token\": \"$jt\", \"agent_version\": \"test\", \"node\": {\"name\": \"gpu09\",
          \"gpu_type\": \"A100-80GB\", \"gpus\": 8, \"gpu_mem_mb\": 81920, \"cpus\": 64, \"mem_mb\": 512000}}"
    for f in "nodes:BEFORE INSERT ON nodes" "tokens:BEFORE INSERT ON tokens WHEN NEW.kind = 'node'" "audit:BEFORE INSERT ON audit"; do
        fault_on "${f%%:*}" "${f#*:}"
        api_post /v1/agent/register "$reg" -
        assert_error 500 ""
        fault_off "${f%%:*}"
        api_get /v1/nodes
        assert_json '.nodes | length' 1
        api_get /healthz
        assert_json '.nodes.UP' 1
        # the core knows no A100 node: a job for one can never run
        api_post /v1/jobs '{"command": ["true"], "gpus": 8, "gpu_type": "A100-80GB"}'
        assert_error 400 gpu_type
    done
    [ "$(db "SELECT count(*) FROM nodes WHERE name = 'gpu09'")" -eq 0 ]
    [ "$(db "SELECT count(*) FROM tokens WHERE user_name = 'gpu09'")" -eq 0 ]
    # disarmed: it registers, and a job for it starts there
    api_post /v1/agent/register "$reg" -
    assert_status 200
    id=$(submit '{"command": ["sleep", "100"], "gpus": 8, "gpu_type": "A100-80GB"}')
    wait_job_state "$id" STARTING
    api_get "/v1/jobs/$id"
    assert_json .job.state STARTING
    [ "$(db "SELECT count(*) FROM nodes WHERE name = 'gpu09'")" -eq 1 ]
}

@test "fault: a failed write on job end answers 500 to the agent; it resends and the job ends once" {
    one_node
    id=$(submit '{"command": ["sleep", "100"], "gpus": 8}')
    wait_job_state "$id" STARTING
    heartbeat gpu01 "$CRED" 0
    seq=$(jq -r '.commands[0].seq' <<<"$body")
    heartbeat gpu01 "$CRED" "$seq" "[{\"id\": $id, \"state\": \"running\", \"pid\": 10}]"
    # the start event fails first: the job stays STARTING in both
    fault_on started "BEFORE INSERT ON job_events WHEN NEW.type = 'running'"
    api_post /v1/agent/events "{\"node\": \"gpu01\", \"events\": [{\"job\": $id, \"type\": \"started\"}]}" "$CRED"
    assert_error 500 ""
    api_get "/v1/jobs/$id"
    assert_json .job.state STARTING
    [ "$(db "SELECT state FROM jobs WHERE id = $id")" = STARTING ]
    fault_off started
    # the exit cannot be recorded: the job keeps its node and its state in both
    fault_on exit "BEFORE UPDATE ON jobs WHEN NEW.exit IS NOT NULL AND OLD.exit IS NULL"
    evs="{\"node\": \"gpu01\", \"events\": [{\"job\": $id, \"type\": \"started\"},
          {\"job\": $id, \"type\": \"exited\", \"exit\": {\"kind\": \"code\", \"code\": 0}}]}"
    api_post /v1/agent/events "$evs" "$CRED"
    assert_error 500 ""
    sleep 0.1
    api_get "/v1/jobs/$id"
    assert_json .job.state RUNNING
    assert_json .job.exit null
    [ "$(db "SELECT state FROM jobs WHERE id = $id")" = RUNNING ]
    api_get /v1/nodes/gpu01
    assert_json .node.gpus_used 8
    [ "$(core_jobs)" -eq "$(store_jobs)" ]
    # the agent sends the same events again once the store takes them
    fault_off exit
    api_post /v1/agent/events "$evs" "$CRED"
    assert_status 200
    wait_job_state "$id" COMPLETED
    api_get "/v1/jobs/$id"
    assert_json .job.state COMPLETED
    [ "$(db "SELECT state FROM jobs WHERE id = $id")" = COMPLETED ]
    [ "$(db "SELECT count(*) FROM job_events WHERE job = $id AND type = 'running'")" -eq 1 ]
    [ "$(core_jobs)" -eq 0 ]
    [ "$(store_jobs)" -eq 0 ]
}

@test "fault: projects, boosts, drains and labels that cannot be saved change nothing" {
    one_node
    api_post /v1/projects '{"name": "vision", "tier": "high", "gpu_limit": 16}'
    assert_status 201
    fault_on proj "BEFORE UPDATE ON projects"
    api_patch /v1/projects/vision '{"gpu_limit": 4}'
    assert_error 500 ""
    api_post /v1/projects/vision/boost '{"levels": 1, "duration": "2h", "reason": "deadline"}'
    assert_error 500 ""
    api_post /v1/projects/vision/pause '{"reason": "onboarding"}'
    assert_error 500 ""
    fault_off proj
    api_get /v1/projects/vision
    assert_json .project.gpu_limit 16
    assert_json .project.boost null
    assert_json .project.paused false
    fault_on node "BEFORE UPDATE ON nodes"
    api_post /v1/nodes/gpu01/drain '{"reason": "maintenance"}'
    assert_error 500 ""
    api_post /v1/nodes/gpu01/labels '{"labels": {"zone": "a"}}'
    assert_error 500 ""
    fault_off node
    api_get /v1/nodes/gpu01
    assert_json .node.state UP
    assert_json .node.labels.zone null
    api_get /healthz
    assert_json .nodes.UP 1
    [ "$(db "SELECT state FROM nodes WHERE name = 'gpu01'")" = UP ]
    # the audit trail has none of them
    [ "$(db "SELECT count(*) FROM audit WHERE action IN ('project.update', 'project.boost', 'project.pause', 'node.drain', 'node.labels')")" -eq 0 ]
}

@test "fault: a decision of the cycle that cannot be saved stops docketd; the restart reloads what was committed" {
    one_node
    fault_on start "BEFORE UPDATE ON jobs WHEN NEW.state = 'STARTING'"
    # a begin time 2 s away: the start is decided by a timed cycle of its own, so the
    # submission's reply never shares a commit with the failing decision (on a loaded
    # machine a cycle right after the submission can run before its group commit)
    id=$(submit '{"command": ["sleep", "100"], "gpus": 8, "begin": "2s"}')
    # the core decided to start it; the write failed: docketd stops (exit 1) rather than
    # run on with the core ahead of the database
    for _ in $(seq 1 200); do kill -0 "$DOCKETD_PID" 2>/dev/null || break; sleep 0.05; done
    run wait "$DOCKETD_PID"
    [ "$status" -eq 1 ]
    DOCKETD_PID=
    grep -q "event=store_diverged what=job_decision job=$id" "$TEST_DIR/docketd.log"
    [ "$(db "SELECT state FROM jobs WHERE id = $id")" = PENDING ]
    fault_off start
    docketd_start
    wait_job_state "$id" STARTING
    api_get "/v1/jobs/$id"
    assert_json .job.state STARTING
    [ "$(db "SELECT state FROM jobs WHERE id = $id")" = STARTING ]
}

# A running job of gpu01 (CRED set): submitted, its start acknowledged, `started` posted.
running_job() {
    local id seq
    id=$(submit '{"command": ["sleep", "100"], "gpus": 8}')
    wait_job_state "$id" STARTING
    heartbeat gpu01 "$CRED" 0
    seq=$(jq -r '.commands[0].seq' <<<"$body")
    heartbeat gpu01 "$CRED" "$seq" "[{\"id\": $id, \"state\": \"running\", \"pid\": 10}]"
    api_post /v1/agent/events "{\"node\": \"gpu01\", \"events\": [{\"job\": $id, \"type\": \"started\"}]}" "$CRED"
    assert_status 200
    echo "$id"
}

@test "agent events: a big batch is applied 64 events a loop turn, in order, and answered once whole" {
    docketd_stop
    export DOCKETD_TURN_LOG_MS=0 # every loop turn logged with the agent events it applied
    docketd_start --log-level warn
    unset DOCKETD_TURN_LOG_MS
    one_node
    id=$(running_job)
    api_get /healthz # a turn is logged when the next begins: this one logs the last before
    : >"$TEST_DIR/docketd.log"
    # 1,000 usage events in one batch (an agent back after an outage sends up to 2,000),
    # then, once its first slice is applied, one more batch of the same node: it waits
    # behind the first, whole, so the job's usage ends as the second one says
    evs=$(jq -nc --argjson id "$id" '[range(1000) | {job: $id, type: "usage", usage: {cpu_ms: .}}]')
    curl -s -o "$TEST_DIR/big.body" -w '%{http_code}' -H "Authorization: Bearer $CRED" \
        -H 'Content-Type: application/json' --data-binary "{\"node\": \"gpu01\", \"events\": $evs}" \
        "$DOCKETD_URL/v1/agent/events" >"$TEST_DIR/big.code" &
    big=$!
    wait_for 60 grep -q 'agent_events=64' "$TEST_DIR/docketd.log"
    api_post /v1/agent/events "{\"node\": \"gpu01\", \"events\": [{\"job\": $id, \"type\": \"usage\", \"usage\": {\"cpu_ms\": 1000}}]}" "$CRED"
    assert_status 200
    wait "$big"
    [ "$(cat "$TEST_DIR/big.code")" = 200 ]
    api_get "/v1/jobs/$id"
    assert_json .job.usage.cpu_ms 1000
    grep -o 'agent_events=[0-9]*' "$TEST_DIR/docketd.log" | cut -d= -f2 | sort -n | tail -n 1 >"$TEST_DIR/max"
    total=$(grep -o 'agent_events=[0-9]*' "$TEST_DIR/docketd.log" | cut -d= -f2 | awk '{ s += $1 } END { print s + 0 }')
    turns=$(grep -o 'agent_events=[1-9][0-9]*' "$TEST_DIR/docketd.log" | wc -l)
    echo "max per turn $(cat "$TEST_DIR/max"), total $total, turns $turns" >&2
    [ "$(cat "$TEST_DIR/max")" -le 64 ]
    [ "$total" -eq 1001 ]
    [ "$turns" -ge 16 ]
    # the node posts as before once nothing is queued
    api_post /v1/agent/events "{\"node\": \"gpu01\", \"events\": [{\"job\": $id, \"type\": \"usage\", \"usage\": {\"cpu_ms\": 5}}]}" "$CRED"
    assert_status 200
    api_get "/v1/jobs/$id"
    assert_json .job.usage.cpu_ms 5
}

# many_nodes N: register nodes n001..nN at once (one join token, curl in parallel); their
# credentials in $TEST_DIR/reg/I.json; $TEST_DIR/hb.cfg: one non-waiting heartbeat of
# each, for `curl -K` (each reply in $TEST_DIR/hb/I.json, the statuses on stdout).
many_nodes() {
    local n=$1 jt i
    jt=$(join_token)
    mkdir -p "$TEST_DIR/reg" "$TEST_DIR/hb"
    for i in $(seq 1 "$n"); do
        ((i > 1)) && echo next
        printf 'url = "%s/v1/agent/register"\nheader = "Content-Type: application/json"\n' "$DOCKETD_URL"
        printf 'data = "{\\"join_token\\": \\"%s\\", \\"agent_version\\": \\"test\\", \\"node\\": {\\"name\\": \\"n%03d\\", \\"gpu_type\\": \\"H100-80GB\\", \\"gpus\\": 8, \\"gpu_mem_mb\\": 81920, \\"cpus\\": 64, \\"mem_mb\\": 512000}}"\n' "$jt" "$i"
        printf 'output = "%s/reg/%d.json"\n' "$TEST_DIR" "$i"
    done >"$TEST_DIR/reg.cfg"
    curl -sS --no-progress-meter --parallel --parallel-max 16 -K "$TEST_DIR/reg.cfg"
    for i in $(seq 1 "$n"); do
        ((i > 1)) && echo next
        printf 'url = "%s/v1/agent/heartbeat"\nheader = "Content-Type: application/json"\n' "$DOCKETD_URL"
        printf 'header = "Authorization: Bearer %s"\n' "$(jq -r .credential "$TEST_DIR/reg/$i.json")"
        printf 'data = "{\\"node\\": \\"n%03d\\", \\"ack\\": 0, \\"wait_ms\\": 0, \\"jobs\\": []}"\n' "$i"
        printf 'output = "%s/hb/%d.json"\nwrite-out = "%%{http_code}\\n"\n' "$TEST_DIR" "$i"
    done >"$TEST_DIR/hb.cfg"
}

# heartbeat_burst N: every node's heartbeat at once, all in one loop turn: docketd is
# stopped (SIGSTOP) until the N connections are established and their requests sent
# (curl allows 300 at once), then let go. Fails unless every one is answered 200.
heartbeat_burst() {
    local n=$1 i cpid
    kill -STOP "$DOCKETD_PID"
    curl -sS --no-progress-meter --parallel --parallel-immediate --parallel-max "$n" -K "$TEST_DIR/hb.cfg" >"$TEST_DIR/hb.codes" &
    cpid=$!
    for i in $(seq 1 200); do
        (($(ss -Htn state established "( dport = :$DOCKETD_PORT )" | wc -l) >= n)) && break
        sleep 0.05
    done
    sleep 0.2 # their requests written
    kill -CONT "$DOCKETD_PID"
    wait "$cpid"
    [[ $(sort -u "$TEST_DIR/hb.codes") == 200 ]] || { sort "$TEST_DIR/hb.codes" | uniq -c >&2; return 1; }
}

@test "heartbeats: a burst is handled at most 128 a loop turn, every one answered, commands included" {
    docketd_stop
    export DOCKETD_TURN_LOG_MS=0 # every loop turn logged with the heartbeats it handled
    docketd_start --log-level warn --expected-nodes 1000
    unset DOCKETD_TURN_LOG_MS
    many_nodes 300
    api_get /healthz # a turn is logged when the next begins: this one logs the last before
    : >"$TEST_DIR/docketd.log"
    # three bursts: libevent's poll returns 32 events at first and doubles its array each
    # time one fills it, so only the later bursts come in whole (300 in one turn without
    # the bound)
    heartbeat_burst 300
    heartbeat_burst 300
    # the last with a command waiting for one node: a deferred poll still carries it
    local id node
    id=$(submit '{"command": ["sleep", "100"], "gpus": 8}')
    wait_job_state "$id" STARTING
    api_get "/v1/jobs/$id"
    node=$(jq -r '.job.allocation[0].node' <<<"$body")
    heartbeat_burst 300
    api_get /healthz
    local max sum turns
    read -r max sum turns < <(turn_counts heartbeats)
    echo "heartbeats: $sum in $turns turns, at most $max a turn" >&3
    ((max <= 128))
    ((sum == 900))
    ((turns >= 8)) # 900 / 128
    # the node's reply has the start command, and no other reply has one
    [[ $(cat "$TEST_DIR"/hb/*.json | jq -s '[.[] | select(.commands | length > 0)] | length') == 1 ]]
    jq -e --argjson id "$id" '.node_state == "UP" and .commands[0].type == "start" and .commands[0].job.id == $id' \
        "$TEST_DIR/hb/$((10#${node#n})).json" >/dev/null
    # every node is UP, its last heartbeat recorded
    api_get '/v1/nodes?limit=1000'
    assert_json '[.nodes[] | select(.state == "UP")] | length' 300
}
