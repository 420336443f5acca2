#!/usr/bin/env bats
# metrics.bats - /metrics against the API it summarises, on a real docketd and two real
# agents with declared GPUs (lib/cluster): after jobs start, end, are held and requeued,
# docket_jobs equals GET /v1/jobs counted by state, tier and project; the per-node and
# per-GPU gauges equal GET /v1/nodes; `docket nodes` and `docket top` count the same jobs.
# The dashboard and alert rules in contrib/ query only metric names that exist.

bats_require_minimum_version 1.5.0

CLUSTER_NAME=metrics
load lib/cluster
AGENT_EXTRA=()
AGENT_UTIL_FILES=1

setup_file() {
    [[ -x $DOCKET && -x $DOCKETD_BIN && -x $AGENT_BIN ]] || skip "docket, docketd or docket-node not built"
    cluster_start
    echo 50 >"$T/gpu-util-a"
    echo 50 >"$T/gpu-util-b"
    "$DOCKET" apply -f "$BATS_TEST_DIRNAME/../../examples/policy.yaml" >/dev/null
}

teardown_file() {
    cluster_stop
}

setup() {
    cd "$W"
}

@test "once a job has ended, docket_jobs and each node's jobs still count every live job" {
    local done_id a b n
    # the job that ends was submitted first: the live ones sit after its free slot
    done_id=$("$DOCKET" submit --parsable -p explore --class exploration -- sleep 2)
    a=$("$DOCKET" submit --parsable -p explore --class exploration -g 1 -- sleep 300)
    b=$("$DOCKET" submit --parsable -p explore --class exploration -g 1 -- sleep 300)
    wait_for 30 state_in "$a" RUNNING
    wait_for 30 state_in "$b" RUNNING
    wait_for 30 state_in "$done_id" COMPLETED || { "$DOCKET" show "$done_id"; "$DOCKET" queue; tail -20 "$T/ctl.log"; false; }
    n=$(ctl_get /metrics | sed -nE 's/^docket_jobs\{state="RUNNING".*\} ([0-9]+)$/\1/p' | awk '{s += $1} END {print s + 0}')
    [ "$n" -eq 2 ] || { ctl_get /metrics | grep docket_jobs; false; }
    n=$("$DOCKET" nodes --json | jq '[.nodes[].jobs[]] | length')
    [ "$n" -eq 2 ]
    agrees
    "$DOCKET" cancel "$a" "$b" >/dev/null
    wait_for 30 state_in "$a" CANCELLED
    wait_for 30 state_in "$b" CANCELLED
}

@test "docket top counts held jobs apart from pending ones" {
    local h
    h=$("$DOCKET" submit --parsable --hold -p explore --class exploration -- true)
    wait_for 10 state_in "$h" HELD
    run -0 "$DOCKET" top
    # the low tier's row: TIER RUNNING GPUS-RUNNING PENDING GPUS-WANTED HELD
    [[ $(grep -E '^low ' <<<"$output" | awk '{print $4, $6}') == "0 1" ]] || { echo "$output"; false; }
    run -0 "$DOCKET" top --json
    "$DOCKET" cancel "$h" >/dev/null
}

@test "after jobs start, end, are held and requeued, /metrics agrees with the API at every step" {
    local a b c h
    a=$("$DOCKET" submit --parsable -p explore --class exploration -g 2 -- sleep 300)
    b=$("$DOCKET" submit --parsable -p vision --class training -g 4 -- sleep 300)
    c=$("$DOCKET" submit --parsable -p nlp --class experiment -g 1 -- sleep 1)
    wait_for 30 state_in "$a" RUNNING
    wait_for 30 state_in "$b" RUNNING
    wait_for 10 agrees # started
    wait_for 30 state_in "$c" COMPLETED
    wait_for 10 agrees # one ended
    h=$("$DOCKET" submit --parsable --hold -p nlp --class experiment -g 1 -- sleep 300)
    wait_for 10 agrees # held
    "$DOCKET" requeue "$a" >/dev/null
    wait_for 30 requeued "$a"
    wait_for 30 state_in "$a" RUNNING
    wait_for 10 agrees # requeued and running again
    # the queue wait histogram counts every start: 4 so far (a twice, b, c)
    run -0 ctl_get /metrics
    [ "$(sed -nE 's/^docket_queue_wait_seconds_count\{tier="[a-z]+"\} ([0-9]+)$/\1/p' <<<"$output" | awk '{s += $1} END {print s}')" -ge 4 ]
    grep -qE '^docket_queue_wait_seconds_bucket\{tier="low",le="\+Inf"\} [0-9]+$' <<<"$output"
    grep -qE '^docket_cycle_seconds_sum [0-9.]+$' <<<"$output"
    # GPUs by state add up to the GPUs there are; the busy ones to what the API says
    [ "$(sed -nE 's/^docket_gpus\{state="[a-z]+",gpu_type="H100-80GB"\} ([0-9]+)$/\1/p' <<<"$output" | awk '{s += $1} END {print s}')" -eq 16 ]
    [ "$(sed -nE 's/^docket_gpus\{state="busy",gpu_type="H100-80GB"\} ([0-9]+)$/\1/p' <<<"$output")" -eq "$(ctl_get /v1/nodes | jq '[.nodes[].gpus_used] | add')" ]
    "$DOCKET" cancel "$a" "$b" "$h" >/dev/null
    wait_for 30 state_in "$b" CANCELLED
    wait_for 10 agrees # cancelled
}

@test "contrib: every metric the Grafana dashboard and the alert rules query is exported" {
    local id m name base missing=()
    id=$("$DOCKET" submit --parsable -p explore --class exploration -g 1 -- sleep 300)
    wait_for 30 state_in "$id" RUNNING
    wait_for 30 bash -c "curl -sf -H 'Authorization: Bearer $TOKEN' http://127.0.0.1:$PORT/metrics | grep -q '^docket_gpu_utilization_percent{'"
    m=$(ctl_get /metrics)
    local names
    names=$(grep -ohE 'docket_[a-z0-9_]+' "$BATS_TEST_DIRNAME/../../contrib/grafana/docket.json" \
        "$BATS_TEST_DIRNAME/../../contrib/prometheus/docket-alerts.yml" | sort -u)
    [ "$(wc -l <<<"$names")" -ge 15 ]
    for name in $names; do
        base=$name
        [[ $name =~ ^(.*)_(bucket|sum|count)$ ]] && grep -q "^# TYPE ${BASH_REMATCH[1]} histogram$" <<<"$m" && base=${BASH_REMATCH[1]}
        grep -qE "^# TYPE $base (gauge|counter|histogram)$" <<<"$m" || missing+=("$name")
    done
    [ ${#missing[@]} -eq 0 ] || { echo "not in /metrics: ${missing[*]}"; false; }
    # the families with samples here (declared GPUs have a utilisation, nothing else)
    for name in docket_jobs docket_gpus docket_nodes docket_node_gpus docket_node_up \
                docket_gpu_utilization_percent docket_queue_wait_seconds_bucket; do
        grep -qE "^$name[{ ]" <<<"$m" || { echo "no sample of $name"; false; }
    done
    "$DOCKET" cancel "$id" >/dev/null
}

@test "quotas and queues per project, group and tier: what a chart over time and the rules read" {
    local id held m
    id=$("$DOCKET" submit --parsable -p explore --class exploration -g 1 -- sleep 300)
    wait_for 30 state_in "$id" RUNNING
    held=$("$DOCKET" submit --parsable --hold -p explore --class exploration -g 1 -- true)
    m=$(ctl_get /metrics)
    for name in docket_project_gpus_used docket_project_gpus_guaranteed \
                docket_project_jobs_queued docket_group_gpus_used docket_tier_jobs_pending \
                docket_tier_oldest_wait_seconds; do
        grep -qE "^# TYPE $name gauge$" <<<"$m" || { echo "no family $name"; false; }
    done
    # the running job's GPU counts for its project, the held one is queued, not pending
    grep -qE '^docket_project_gpus_used\{project="explore",group="[^"]*"\} [1-9]' <<<"$m" ||
        { grep '^docket_project' <<<"$m"; false; }
    grep -qE '^docket_project_jobs_queued\{project="explore",group="[^"]*"\} [1-9]' <<<"$m"
    # tiers in the policy's rank order, as `docket tiers` lists them
    [ "$(grep -oP '^docket_tier_jobs_pending\{tier="\K[^"]+' <<<"$m" | paste -sd,)" = \
        "$("$DOCKET" tiers --json | jq -r '[.tiers[].name] | join(",")')" ]
    "$DOCKET" cancel "$id" "$held" >/dev/null
}
