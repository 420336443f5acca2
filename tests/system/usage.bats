#!/usr/bin/env bats
# usage.bats - per-job usage end to end on a real docketd and two real agents with
# declared GPUs (lib/cluster), each declaring its GPUs' utilisation from a file
# (--declared-gpu-util-file): node a idles (0 %), node b is busy (80 %). Samples reach
# GET /v1/jobs/ID/usage, `docket show` (summary and sparklines, --json), `docket top` and
# /metrics; an idle job is flagged by its class's idle rule: an event "idle", and for an
# exploration job (action requeue) a requeue audited as docketd's; an experiment job
# (action alert) keeps running; `docket explain` says when a running job was last busy.

bats_require_minimum_version 1.5.0

CLUSTER_NAME=usage
load lib/cluster
AGENT_EXTRA=()
AGENT_UTIL_FILES=1

setup_file() {
    [[ -x $DOCKET && -x $DOCKETD_BIN && -x $AGENT_BIN ]] || skip "docket, docketd or docket-node not built"
    cluster_start
    echo 0 >"$T/gpu-util-a"
    echo 80 >"$T/gpu-util-b"
    "$DOCKET" apply -f "$BATS_TEST_DIRNAME/../../examples/policy.yaml" >/dev/null
    # the example's classes, with idle rules short enough for a test
    cat >"$T/idle.yaml" <<'YAML'
classes:
  - {name: training, default_limit: 7d, preemptible: true, preempt_order: 2, protect_after: 24h}
  - {name: experiment, default_limit: 4h, preemptible: true, preempt_order: 1,
     idle: {gpu_util_below: 5, for: 3s, action: alert}}
  - {name: exploration, default_limit: 1h, preemptible: true, preempt_order: 0,
     idle: {gpu_util_below: 5, for: 3s, action: requeue}}
  - {name: interactive, default_limit: 8h, preemptible: false, requeueable: false}
  - {name: service, default_limit: 0s, preemptible: false, restart_on_failure: true}
YAML
    "$DOCKET" apply -f "$T/idle.yaml" >/dev/null
}

teardown_file() {
    cluster_stop
}

setup() {
    cd "$W"
}

samples_at_least() { # ID N
    local n
    n=$(ctl_get "/v1/jobs/$1/usage" | jq '.summary.samples // 0')
    [[ $n -ge $2 ]]
}

has_event() { # ID TYPE
    "$DOCKET" show "$1" --json | jq -e --arg t "$2" '[.events[] | select(.type == $t)] | length > 0' >/dev/null
}

@test "an idle GPU rule is refused by field when it is malformed or stops a non-preemptible class" {
    run -1 "$DOCKET" apply -f - <<<'classes: [{name: interactive, preemptible: false, idle: {gpu_util_below: 5, for: 1m, action: cancel}}]'
    [[ $output == *"classes[0].idle.action"* ]]
    run -1 "$DOCKET" apply -f - <<<'classes: [{name: exploration, preemptible: true, idle: {gpu_util_below: 500, for: 1m}}]'
    [[ $output == *"classes[0].idle.gpu_util_below"* ]]
    run -0 "$DOCKET" classes --json
    [ "$(jq -r '.classes[] | select(.name == "exploration") | .idle.action' <<<"$output")" = requeue ]
}

@test "samples reach the usage API, docket show, docket top and /metrics; declared GPUs say so" {
    local id cpu
    id=$("$DOCKET" submit --parsable -p explore --class experiment -g 2 --select zone=b -- \
        sh -c 'while :; do :; done')
    cpu=$("$DOCKET" submit --parsable -p explore --class experiment --select zone=b -- sleep 300)
    wait_for 30 state_in "$id" RUNNING
    wait_for 30 samples_at_least "$id" 3
    wait_for 30 samples_at_least "$cpu" 2
    run -0 ctl_get "/v1/jobs/$id/usage"
    [ "$(jq -r .summary.gpu_source <<<"$output")" = declared ]
    [ "$(jq -r .summary.gpu_util_mean <<<"$output")" = 80 ]
    [ "$(jq -r .resolution <<<"$output")" = raw ]
    [ "$(jq '.series | length >= 3' <<<"$output")" = true ]
    [ "$(jq '[.series[] | .gpu_util] | all(. == 80)' <<<"$output")" = true ]
    [ "$(jq '.summary.idle_since_ms' <<<"$output")" = null ]
    if [[ $(id -u) == 0 ]]; then # cgroup counters: a busy loop burns CPU
        wait_for 30 bash -c "[[ \$(curl -sf -H 'Authorization: Bearer $TOKEN' http://127.0.0.1:$PORT/v1/jobs/$id/usage | jq '.summary.cpu_seconds > 0.5') == true ]]"
    fi
    run -0 ctl_get "/v1/jobs/$cpu/usage"
    [ "$(jq -r .summary.gpu_source <<<"$output")" = none ]
    [ "$(jq -r .summary.gpu_util_mean <<<"$output")" = null ]
    run -0 ctl_get "/v1/jobs/$id/usage?resolution=minute"
    [ "$(jq -r .resolution <<<"$output")" = minute ]
    run -1 "$DOCKET" show 999999
    # show: a summary and ASCII sparklines off a UTF-8 terminal (TERM=dumb)
    TERM=dumb run -0 "$DOCKET" show "$id"
    [[ $output == *"usage:"* && $output == *"mean 80% (declared)"* ]] || { echo "$output"; false; }
    grep -qE '^  gpu util +#+$' <<<"$output" || { echo "$output"; false; }
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq -r .usage.summary.gpu_source <<<"$output")" = declared ]
    # top: the node's mean utilisation and one row per sampled GPU
    run -0 "$DOCKET" top
    grep -qE "^$PREFIX-b +UP +[0-9]+/8 +H100-80GB +80%" <<<"$output" || { echo "$output"; false; }
    [ "$(grep -cE "^$PREFIX-b +[0-9] +$id +80%" <<<"$output")" -eq 2 ] || { echo "$output"; false; }
    run -0 ctl_get /metrics
    [ "$(grep -cE "^docket_gpu_utilization_percent\{node=\"$PREFIX-b\",gpu=\"[0-9]\",source=\"declared\"\} 80$" <<<"$output")" -ge 2 ]
    run -0 "$DOCKET" explain "$id"
    [[ $output == *"GPUs last busy (5% or more)"* ]] || { echo "$output"; false; }
    "$DOCKET" cancel "$id" "$cpu" >/dev/null
}

@test "an idle exploration job is flagged and requeued (audited); an experiment one is only flagged" {
    local x e
    x=$("$DOCKET" submit --parsable -p explore --class exploration -g 1 --select zone=a -- sleep 300)
    e=$("$DOCKET" submit --parsable -p explore --class experiment -g 1 --select zone=a -- sleep 300)
    wait_for 30 state_in "$e" RUNNING
    wait_for 60 has_event "$x" idle
    wait_for 60 requeued "$x"
    run -0 "$DOCKET" show "$x" --json
    [ "$(jq -r '[.events[] | select(.type == "idle")][0].reason' <<<"$output")" = requeue ]
    run -0 "$DOCKET" audit --actor docketd --json
    [ "$(jq --arg t "job:$x" '[.entries[] | select(.target == $t and .action == "job.requeue")] | length >= 1' <<<"$output")" = true ] || { echo "$output"; false; }
    wait_for 60 has_event "$e" idle
    run -0 "$DOCKET" show "$e" --json
    [ "$(jq -r '[.events[] | select(.type == "idle")][0].reason' <<<"$output")" = alert ]
    [ "$(jq -r .job.state <<<"$output")" = RUNNING ]
    grep -q "event=job_idle job=$e .*action=alert" "$T/ctl.log"
    run -0 "$DOCKET" explain "$e"
    [[ $output == *"GPUs never at 5% or more"* && $output == *"under 5% since"* && $output == *"flagged"* ]] || { echo "$output"; false; }
    run -0 ctl_get "/v1/jobs/$e/usage"
    [ "$(jq '.summary.gpu_idle_seconds > 0' <<<"$output")" = true ]
    [ "$(jq '.summary.last_busy_ms' <<<"$output")" = null ]
    # busy again: the stretch ends (no new flag while busy)
    echo 90 >"$T/gpu-util-a"
    wait_for 30 bash -c "[[ \$(curl -sf -H 'Authorization: Bearer $TOKEN' http://127.0.0.1:$PORT/v1/jobs/$e/usage | jq '.summary.idle_since_ms') == null ]]"
    echo 0 >"$T/gpu-util-a"
    "$DOCKET" cancel "$x" "$e" >/dev/null
}
