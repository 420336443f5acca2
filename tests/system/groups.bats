#!/usr/bin/env bats
# The group level of the hierarchy (org -> group -> project -> user) through docketd: a
# policy's `groups` bound their projects together, explain names the group that holds a
# job back, `docket projects` lists the groups, and they survive a restart.

load lib/common

setup() {
    docket_setup
    docketd_start
    DOCKET=$DOCKET_BUILD/src/cli/docket
}

teardown() {
    docket_teardown
}

apply_groups() {
    cat >"$TEST_DIR/policy.yaml" <<'EOF'
groups:
  - {name: cv, gpu_limit: 4, guarantee_gpus: 4}
projects:
  - {name: vision, group: cv, guarantee_gpus: 4}
  - {name: video, group: cv}
  - {name: speech}
EOF
    api_file POST /v1/policy "$TEST_DIR/policy.yaml" application/yaml
    assert_status 200
}

@test "a group's GPU limit holds its projects together and explain names the group" {
    CRED=$(fake_node gpu01 8 H100-80GB)
    apply_groups
    a=$(submit '{"command": ["true"], "project": "vision", "gpus": 3, "gpu_type": "H100-80GB"}')
    b=$(submit '{"command": ["true"], "project": "video", "gpus": 2, "gpu_type": "H100-80GB"}')
    c=$(submit '{"command": ["true"], "project": "speech", "gpus": 2, "gpu_type": "H100-80GB"}')
    starting() { api_get "/v1/jobs/$1"; [[ $(jq -r .job.state <<<"$body") == STARTING ]]; }
    wait_for 60 starting "$a"
    wait_for 60 starting "$c"
    api_get "/v1/jobs/$b/explain"
    assert_json .explain.state PENDING
    assert_json .explain.reason QuotaLimit
    assert_json .explain.limit.name "group cv gpu_limit"
    assert_json .explain.limit.value 4
    assert_json .explain.limit.in_use 3
    api_get /v1/projects
    assert_json '.groups[0].name' cv
    assert_json '.groups[0].gpu_limit' 4
    assert_json '.groups[0].usage.gpus_in_use' 3
    assert_json '.groups[0].usage.projects' 2
    run env DOCKET_URL="$DOCKETD_URL" DOCKET_TOKEN="$ADMIN_TOKEN" "$DOCKET" projects
    [ "$status" -eq 0 ]
    [[ $output == *GROUP*GUARANTEE*LIMIT* ]]
    grep -Eq '^cv +4 +4 +3 ' <<<"$output"
}

@test "groups are part of the policy: bad ones are refused naming the field, and they survive a restart" {
    api_post /v1/policy '{"groups": [{"name": "cv"}, {"name": "cv"}]}'
    assert_error 400 "groups[1]"
    api_post /v1/policy '{"groups": [{"name": "cv", "gpu_limit": -3}]}'
    assert_error 400 "groups[0].gpu_limit"
    api_post /v1/policy '{"groups": [{"name": "cv", "colour": "red"}]}'
    assert_error 400 "groups[0].colour"
    api_get /v1/policy
    [ "$(jq '.policy.groups // .groups | length' <<<"$body")" -eq 0 ]
    apply_groups
    docketd_stop
    docketd_start
    api_get /v1/policy
    [ "$(jq -r '(.policy.groups // .groups)[0].name' <<<"$body")" = cv ]
    api_get /v1/projects
    assert_json '.groups[0].gpu_limit' 4
    assert_json '.groups[0].guarantee_gpus' 4
}
