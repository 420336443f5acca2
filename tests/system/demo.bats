#!/usr/bin/env bats
# demo.bats - `make demo` end to end, without a terminal: scripts/demo.sh starts docketd
# and two agents on a temporary state directory, applies examples/policy.yaml and plays
# its scenario (strict tier order, a project on its quota, backfill, a preemption with
# grace and requeue, explain), checking each claim. Then the cluster must be left running
# and usable, and `make demo-stop` must stop every process the demo started.

bats_require_minimum_version 1.5.0

ROOT=$BATS_TEST_DIRNAME/../..
DOCKET_BUILD=${DOCKET_BUILD:-$ROOT/build}

setup_file() {
    for b in src/cli/docket src/controller/docketd src/agent/docket-node; do
        [[ -x $DOCKET_BUILD/$b ]] || skip "$b not built"
    done
    export BUILD=$DOCKET_BUILD
    export DOCKET_DEMO_DIR DOCKET_DEMO_NODES
    DOCKET_DEMO_DIR=$(mktemp -d /tmp/docket-bats-demo.XXXXXX)/demo
    DOCKET_DEMO_NODES=demo$$
}

teardown_file() {
    # only if a test failed before demo-stop ran: stop what the demo started
    if [[ -f $DOCKET_DEMO_DIR/pids ]]; then
        "$ROOT/scripts/demo.sh" --stop >/dev/null 2>&1 || true
    fi
    rm -rf "$(dirname "$DOCKET_DEMO_DIR")"
}

@test "the demo plays its whole scenario without a terminal, every step checked" {
    run timeout 300 "$ROOT/scripts/demo.sh" </dev/null
    echo "$output" | tail -n 40
    [ "$status" -eq 0 ]
    [[ $output == *"== 2. Strict tier order"* ]]
    [[ $output == *"== 3. A project waiting on its quota while others run"* ]]
    [[ $output == *"== 4. Backfill"* ]]
    [[ $output == *"== 5. Preemption with grace and requeue"* ]]
    [[ $output == *"== 6. Why is this job waiting?"* ]]
    [[ $output == *"ok: nlp-eval waits with QuotaLimit"* ]]
    [[ $output == *"ok: ckpt-explore saved its checkpoint on the signal"* ]]
    [[ $output == *"Every step of the scenario was checked"* ]]
    [[ $output != *FAILED* ]]
    # it says how to use it and how to stop it, and prints no colour codes off a terminal
    [[ $output == *"export DOCKET_URL=unix:$DOCKET_DEMO_DIR/ctl/docketd.sock"* ]]
    [[ $output == *"make demo-stop"* ]]
    [[ $output == *"Web console: http://127.0.0.1:"* ]]
    [[ $output != *$'\033'* ]]
}

@test "the demo cluster is left running and usable with the printed DOCKET_URL" {
    export DOCKET_URL=unix:$DOCKET_DEMO_DIR/ctl/docketd.sock
    run -0 "$DOCKET_BUILD/src/cli/docket" nodes --json
    [ "$(jq '[.nodes[] | select(.state == "UP")] | length' <<<"$output")" -eq 2 ]
    run -0 "$DOCKET_BUILD/src/cli/docket" queue --json
    [ "$(jq '[.jobs[] | select(.state == "RUNNING")] | length' <<<"$output")" -ge 2 ]
    run -0 "$DOCKET_BUILD/src/cli/docket" projects --json
    [ "$(jq '[.projects[].name] | index("nlp") != null' <<<"$output")" = true ]
}

@test "running the demo again while it runs only says how to use it" {
    run -0 "$ROOT/scripts/demo.sh" </dev/null
    [[ $output == *"demo: already running"* ]]
    [[ $output == *"make demo-stop"* ]]
}

@test "make demo-stop stops every process the demo started and removes its state" {
    pids=$(awk '{ print $2 }' "$DOCKET_DEMO_DIR/pids")
    [ -n "$pids" ]
    run -0 make -s -C "$ROOT" demo-stop
    [[ $output == *"stopped docketd"* ]]
    for p in $pids; do
        ! kill -0 "$p" 2>/dev/null || { echo "pid $p still alive"; false; }
    done
    [ ! -e "$DOCKET_DEMO_DIR" ]
    run -0 "$ROOT/scripts/demo.sh" --stop
    [[ $output == *"nothing to stop"* ]]
    # no job of the demo survives it
    ! pgrep -f "$DOCKET_DEMO_DIR" >/dev/null
}
