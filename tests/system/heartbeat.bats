#!/usr/bin/env bats
# heartbeat.bats - the long poll against the fencing lease (docs/agent.md "Fencing and leases"): a
# reply renews the agent's lease to (poll sent) + node_timeout - margin and a quiet node is
# answered once a wait, so a wait of half the lease or more let every quiet node's jobs be
# fenced, reported lost and requeued over and over with nothing down (the caveat seen with
# --node-timeout 5s). docketd cuts its wait to a third of the lease and says so; a node
# with a running job then stays UP through many node timeouts and its job keeps its run.

bats_require_minimum_version 1.5.0

CLUSTER_NAME=hb
load lib/cluster
AGENT_EXTRA=()
# node_timeout 3 s: the margin is 1 s, so the lease is 2 s and the wait is cut to 666 ms
DOCKETD_EXTRA=(--node-timeout 3s --heartbeat-wait 25s)

setup_file() {
    [[ -x $DOCKET && -x $DOCKETD_BIN && -x $AGENT_BIN ]] || skip "docket, docketd or docket-node not built"
    cluster_start
    "$DOCKET" apply -f "$BATS_TEST_DIRNAME/../../examples/policy.yaml" >/dev/null
}

teardown_file() {
    cluster_stop
}

@test "a heartbeat wait longer than the fencing lease is cut: quiet nodes stay UP and their jobs keep running" {
    grep -q "event=heartbeat_wait_capped heartbeat_wait_ms=25000 cap_ms=666 node_timeout_ms=3000" "$T/ctl.log" ||
        { grep heartbeat "$T/ctl.log"; false; }
    id=$("$DOCKET" submit --parsable -p explore -g 1 -- sleep 120)
    wait_for 30 state_in "$id" RUNNING
    # quiet: no command for the agents for more than three node timeouts (+ margin)
    sleep 13
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq -r .job.state <<<"$output")" = RUNNING ] || { echo "$output" | jq .events; false; }
    [ "$(jq -c '[.events[].to]' <<<"$output")" = '["PENDING","STARTING","RUNNING"]' ] || { echo "$output" | jq -c .events; false; }
    ! grep -q "event=node_unreachable" "$T/ctl.log" || { grep node_unreachable "$T/ctl.log"; false; }
    ! grep -qE "event=(controller_silent|fence_too_tight)" "$T"/agent-*.log || { grep -E "fenc" "$T"/agent-*.log; false; }
    nodes_up 2
    "$DOCKET" cancel "$id" >/dev/null
}
