#!/usr/bin/env bats
# project_usage.bats - a project's GPU use over time (GET /v1/projects/NAME/usage,
# docs/api.md), black-box against docketd with a registered node: the steps hold exactly
# the GPU time of the project's runs, another project's runs are not in them, and the
# arguments are checked.

load lib/common
bats_require_minimum_version 1.5.0

setup() {
    docket_setup
    docketd_start
    api_post /v1/projects '{"name": "pa"}'
    assert_status 201
    api_post /v1/projects '{"name": "pb"}'
    assert_status 201
    fake_node gpu01 8 H100 >/dev/null
}

teardown() {
    docket_teardown
}

started() {
    [[ $(sqlite3 "$STATE_DIR/docket.db" "SELECT count(*) FROM job_runs WHERE start_ms > 0") == "$1" ]]
}

@test "a project's steps hold exactly its runs' GPU time; another project's are not there" {
    api_post /v1/jobs '{"project": "pa", "command": ["x"], "gpus": 2}'
    assert_status 201
    api_post /v1/jobs '{"project": "pb", "command": ["x"], "gpus": 4}'
    assert_status 201
    wait_for 60 started 2
    api_get "/v1/projects/pa/usage?days=2&step=hour"
    assert_status 200
    assert_json .step_ms 3600000
    assert_json '.t | length' 48
    assert_json '.gpus | length' 48
    assert_json .gpus_in_use 2
    # the GPU-ms of the steps (each averaged over its part up to until_ms) against the run's
    local start got want
    start=$(sqlite3 "$STATE_DIR/docket.db" "SELECT r.start_ms FROM job_runs r JOIN jobs j ON j.id = r.job WHERE j.project = 'pa'")
    got=$(jq '. as $o | [range(0; .t | length) | ($o.gpus[.] * ([$o.t[.] + $o.step_ms, $o.until_ms] | min) - $o.gpus[.] * $o.t[.])] | add' <<<"$body")
    want=$(jq --argjson s "$start" '2 * (.until_ms - $s)' <<<"$body")
    jq -en --argjson g "$got" --argjson w "$want" '($g - $w) | fabs < 1'
    # days by default, 30 of them; the last step is the one in progress
    api_get /v1/projects/pb/usage
    assert_status 200
    assert_json .step_ms 86400000
    assert_json '.t | length' 30
    jq -e '.gpus[-1] > 0 and (.gpus[:-1] | all(. == 0)) and .t[-1] <= .until_ms' <<<"$body"
}

@test "project usage: an unknown project is 404, bad arguments are 400" {
    api_get /v1/projects/nope/usage
    assert_status 404
    local q
    for q in days=0 days=91 days=x step=week "days=15&step=hour"; do
        api_get "/v1/projects/pa/usage?$q"
        [[ $status_code == 400 ]] || { echo "$q: $status_code" >&2; return 1; }
    done
}
