#!/usr/bin/env bats
# class_limits.bats - a class's pids.max and default memory limit reach the agent in the
# start command (issue 12 "Isolation"), from the policy document, through a restart of
# the real docketd. The node is played with curl through the real agent endpoints.

load lib/common

setup() {
    docket_setup
    docketd_start
}

teardown() {
    docket_teardown
}

# start_of JOB: the start command's job object for JOB (heartbeats until it comes).
start_of() {
    local deadline=$((SECONDS + 60)) # a deadline, not a speed
    while ((SECONDS < deadline)); do
        heartbeat gpu01 "$CRED" "${ACK:-0}"
        local j
        j=$(jq -c --argjson id "$1" '[.commands[] | select(.type == "start" and .job.id == $id)][0].job' <<<"$body")
        if [[ $j != null ]]; then
            ACK=$(jq -r '[.commands[].seq] | max' <<<"$body")
            echo "$j"
            return 0
        fi
        sleep 0.05
    done
    return 1
}

@test "a class's pids_max and default_mem go in the start command; the node decides without them" {
    CRED=$(fake_node gpu01 8 H100-80GB 64 512000)
    # without: 0, the node's own defaults (--job-pids-max, --job-mem-default)
    id=$(submit '{"command": ["true"], "cpus": 1, "class": "experiment"}')
    job=$(start_of "$id")
    [ "$(jq .pids_max <<<"$job")" = 0 ]
    [ "$(jq .mem_mb <<<"$job")" = 0 ]
    api_post /v1/policy '{"classes": [{"name": "experiment", "pids_max": 64, "default_mem": "2G"},
        {"name": "training"}, {"name": "interactive"}, {"name": "service"}, {"name": "batch"}]}'
    if [[ $status_code != 200 ]]; then
        api_get /v1/classes
        echo "classes: $body" >&2
        false
    fi
    id=$(submit '{"command": ["true"], "cpus": 1, "class": "experiment"}')
    job=$(start_of "$id")
    [ "$(jq .pids_max <<<"$job")" = 64 ]
    [ "$(jq .mem_mb <<<"$job")" = 2048 ]
    # a job's own mem wins over the class default
    id=$(submit '{"command": ["true"], "cpus": 1, "mem": "1G", "class": "experiment"}')
    job=$(start_of "$id")
    [ "$(jq .mem_mb <<<"$job")" = 1024 ]
    [ "$(jq .pids_max <<<"$job")" = 64 ]
    # shown, kept by an apply that does not name them, and across a restart
    api_get /v1/classes
    assert_json '.classes[] | select(.name == "experiment") | .pids_max' 64
    api_post /v1/policy '{"classes": [{"name": "experiment", "max_retries": 1},
        {"name": "training"}, {"name": "interactive"}, {"name": "service"}, {"name": "batch"}]}'
    assert_status 200
    docketd_stop
    docketd_start
    api_get /v1/policy
    assert_json '.classes[] | select(.name == "experiment") | .pids_max' 64
    assert_json '.classes[] | select(.name == "experiment") | .default_mem' 2G
    # refused, naming the field: bad values, and a class PATCH (the policy document sets them)
    api_post /v1/policy '{"classes": [{"name": "experiment", "pids_max": -1}]}'
    assert_error 400 'classes[0].pids_max'
    api_post /v1/policy '{"classes": [{"name": "experiment", "default_mem": "lots"}]}'
    assert_error 400 'classes[0].default_mem'
    api_patch /v1/classes/experiment '{"pids_max": 5}'
    assert_error 400 pids_max
}
