#!/usr/bin/env bats
# cli.bats - the docket CLI against a real docketd and two real docket-node agents with
# declared GPUs (8xH100-80GB each) on loopback: every verb, --json parsed with jq,
# #DOCKET and #SBATCH scripts, errors and exit codes (0 done, 1 refused/failed, 2 usage).
# One cluster per file (setup_file); every process it started is stopped by pid in
# teardown_file, with the job supervisors the agents leave and their cgroups.

bats_require_minimum_version 1.5.0

CLUSTER_NAME=cli
load lib/cluster
AGENT_EXTRA=()

# --------------------------------------------------------------------------------------

setup_file() {
    [[ -x $DOCKET && -x $DOCKETD_BIN && -x $AGENT_BIN ]] || skip "docket, docketd or docket-node not built"
    cluster_start
    "$DOCKET" apply -f "$BATS_TEST_DIRNAME/../../examples/policy.yaml" >/dev/null
}

teardown_file() {
    cluster_stop
}

setup() {
    cd "$W"
}

# submit_q ARGS...: submit, print the id only
submit_q() {
    "$DOCKET" submit --parsable "$@"
}

@test "help: docket help, docket help VERB and VERB --help for every verb exit 0" {
    run "$DOCKET" help
    [ "$status" -eq 0 ]
    [[ $output == *"submit "* && $output == *"explain "* && $output == *"top "* ]]
    for v in submit queue q show cancel hold release requeue update logs explain forecast nodes \
             projects tiers classes history apply top token secret audit alerts report console help; do
        run "$DOCKET" "$v" --help
        [ "$status" -eq 0 ] || { echo "$v --help: $status $output"; false; }
        [[ $output == usage:* ]] || { echo "$v --help: $output"; false; }
        run "$DOCKET" help "$v"
        [ "$status" -eq 0 ]
    done
    run -0 "$DOCKET" help --json
    [ "$(jq '[.verbs[].name] | index("explain") != null' <<<"$output")" = true ]
    run -2 "$DOCKET" help nosuchverb
    run "$DOCKET" --version
    [ "$status" -eq 0 ]
    [[ $output == "docket "* ]]
}

@test "usage errors exit 2 and say what to do; nothing is sent" {
    run -2 "$DOCKET" frobnicate
    [[ $output == *"unknown verb 'frobnicate'"* ]]
    run -2 "$DOCKET" submit --gpuz 8 -- true
    [[ $output == *"unknown option '--gpuz'"* && $output == *"docket help submit"* ]]
    run -2 "$DOCKET" submit -p explore
    [[ $output == *"nothing to run"* ]]
    run -2 "$DOCKET" submit -g lots -- true
    [[ $output == *"--gpus: bad GPU count 'lots'"* ]]
    run -2 "$DOCKET" submit --time 3x -- true
    run -2 "$DOCKET" show
    run -2 "$DOCKET" show abc
    [[ $output == *"bad job id 'abc'"* ]]
    run -2 "$DOCKET" queue --limit 0
    run -2 "$DOCKET" nodes label "$PREFIX-a" "bad label"
    run -2 "$DOCKET" projects boost vision --levels 1
    [[ $output == *"--reason"* ]]
    run -2 "$DOCKET"
    # nothing reached the queue
    run "$DOCKET" q --all --json
    [ "$(jq '[.jobs[] | select(.command == ["true"])] | length' <<<"$output")" -eq 0 ]
}

@test "an unreachable controller: exit 1 and how to start it" {
    DOCKET_URL=unix:$T/none.sock run -1 "$DOCKET" queue
    [[ $output == *"cannot reach docketd at unix:$T/none.sock"* ]]
    [[ $output == *"start it with \`docketd --state-dir DIR\`, or set DOCKET_URL"* ]]
    DOCKET_URL=http://127.0.0.1:1 run -1 "$DOCKET" nodes
    [[ $output == *"cannot reach docketd at http://127.0.0.1:1"* ]]
    DOCKET_URL=ftp://x run -1 "$DOCKET" nodes
    [[ $output == *"bad url 'ftp://x'"* ]]
    # a token never crosses the network in plain http (refused before any connection or
    # name lookup); on loopback it may
    DOCKET_URL=http://docketd.invalid:8420 DOCKET_TOKEN=dk_x run -1 "$DOCKET" nodes
    [[ $output == *"refusing to send the token over plain http:// to 'docketd.invalid'"* ]]
    [[ $output == *"use https://docketd.invalid:8420"* ]]
    DOCKET_URL=http://127.0.0.1:1 DOCKET_TOKEN=dk_x run -1 "$DOCKET" nodes
    [[ $output == *"cannot reach docketd at http://127.0.0.1:1"* ]]
    # https:// goes through libcurl, loaded only then
    DOCKET_URL=https://127.0.0.1:1 run -1 "$DOCKET" nodes
    [[ $output == *"cannot reach docketd at https://127.0.0.1:1"* ]]
}

@test "DOCKET_URL may list controllers: one that cannot be reached is passed over" {
    # the first cannot be reached (nothing is sent to it), the second answers
    DOCKET_URL="unix:$T/none.sock,http://127.0.0.1:1,$DOCKET_URL" run -0 "$DOCKET" nodes --json
    jq -e '.nodes | length == 2' <<<"$output"
    # none answers: the last one's error, with how to start it
    DOCKET_URL="unix:$T/none.sock,http://127.0.0.1:1" run -1 "$DOCKET" nodes
    [[ $output == *"cannot reach docketd at http://127.0.0.1:1"* ]]
    DOCKET_URL="unix:$T/none.sock,ftp://x" run -1 "$DOCKET" nodes
    [[ $output == *"bad url 'ftp://x'"* ]]
}

@test "tiers, classes and projects from the applied policy (--json)" {
    run -0 "$DOCKET" tiers --json
    [ "$(jq -r '[.tiers[].name] | join(",")' <<<"$output")" = "critical,high,normal,low" ]
    run -0 "$DOCKET" classes --json
    [ "$(jq -r '.classes[] | select(.name == "exploration") | .preemptible' <<<"$output")" = true ]
    run -0 "$DOCKET" projects --json
    [ "$(jq -r '.projects[] | select(.name == "nlp") | .gpu_limit' <<<"$output")" = 4 ]
    [ "$(jq -r '.projects[] | select(.name == "vision") | .tier' <<<"$output")" = high ]
    run -0 "$DOCKET" tiers
    [[ ${lines[0]} == *RANK*TIER*"STARVE AFTER"* ]]
    [[ $output == *"low "*"1d"* ]]
    run -0 "$DOCKET" classes
    [[ $output == *"training "*"7d"* ]]
    run -0 "$DOCKET" classes set experiment max_grace=2m max_retries=2
    [[ $output == "updated class experiment" ]]
    run -0 "$DOCKET" classes --json
    [ "$(jq -r '.classes[] | select(.name == "experiment") | .max_grace_ms' <<<"$output")" = 120000 ]
    [ "$(jq -r '.classes[] | select(.name == "experiment") | .max_retries' <<<"$output")" = 2 ]
    run -2 "$DOCKET" classes set experiment max_grace=soon
    run -2 "$DOCKET" classes set experiment colour=blue
    run -1 "$DOCKET" classes set nosuchclass max_retries=1
    run -0 "$DOCKET" projects nlp
    [[ $output == *"nlp "*"lang"*"normal"* ]]
}

@test "apply: --dry-run, a bad file is refused with the field named and changes nothing" {
    run -0 "$DOCKET" apply -f "$BATS_TEST_DIRNAME/../../examples/policy.yaml" --dry-run
    [[ $output == "valid, would apply"*"4 tiers, 5 classes, 3 projects" ]]
    printf 'projects:\n  - {name: nlp, group: lang, tier: nosuchtier}\n' >"$T/bad.yaml"
    run -1 "$DOCKET" apply -f "$T/bad.yaml"
    [[ $output == *"nosuchtier"* ]]
    run -0 "$DOCKET" projects nlp --json
    [ "$(jq -r '.project.tier // .tier' <<<"$output")" = normal ]
    run -1 "$DOCKET" apply -f "$T/missing.yaml"
    [[ $output == *"cannot read '$T/missing.yaml'"* ]]
    printf '{"projects": [{"name": "tmpproj", "group": "g", "tier": "low"}]}' >"$T/p.json"
    run -0 "$DOCKET" apply -f "$T/p.json" --json
    [ "$(jq -r .applied.projects <<<"$output")" = 1 ]
}

@test "nodes: two agents with 8 declared GPUs each; label, drain and resume" {
    run -0 "$DOCKET" nodes --json
    [ "$(jq "[.nodes[] | select(.name | startswith(\"$PREFIX\")) | .gpus] | add" <<<"$output")" -eq 16 ]
    [ "$(jq -r ".nodes[] | select(.name == \"$PREFIX-a\") | .gpu_type" <<<"$output")" = H100-80GB ]
    run -0 "$DOCKET" nodes
    [[ $output == *"$PREFIX-a"*UP*"/8"*H100-80GB*"zone=a"* ]]
    run -0 "$DOCKET" nodes label "$PREFIX-b" rack=r2
    run -0 "$DOCKET" nodes "$PREFIX-b" --json
    [ "$(jq -r '.node.labels.rack' <<<"$output")" = r2 ]
    run -0 "$DOCKET" nodes label "$PREFIX-b" rack-
    run -0 "$DOCKET" nodes "$PREFIX-b" --json
    [ "$(jq -r '.node.labels.rack // "gone"' <<<"$output")" = gone ]
    run -0 "$DOCKET" nodes drain "$PREFIX-b" --reason "bats maintenance"
    run -0 "$DOCKET" nodes "$PREFIX-b" --json
    [[ $(jq -r .node.state <<<"$output") == DRAIN* ]]
    run -0 "$DOCKET" nodes resume "$PREFIX-b"
    run -0 "$DOCKET" nodes "$PREFIX-b" --json
    [ "$(jq -r .node.state <<<"$output")" = UP ]
    run -1 "$DOCKET" nodes drain nosuchnode
}

@test "submit with flags: the job runs, logs, show and history tell its story" {
    id=$(submit_q -p explore --class exploration -g 1 --time 5m --name hello \
        --env GREETING=bonjour --label run=bats -- sh -c 'echo "$GREETING from $DOCKET_JOB_ID"; echo warn >&2')
    [[ $id =~ ^[0-9]+$ ]]
    wait_for 30 state_in "$id" COMPLETED FAILED
    [ "$(job_state "$id")" = COMPLETED ]
    run -0 "$DOCKET" logs "$id"
    [ "$output" = "bonjour from $id" ]
    run -0 "$DOCKET" logs "$id" --stderr
    [ "$output" = warn ]
    run -0 "$DOCKET" logs "$id" --json
    [ "$(jq -r .data <<<"$output")" = "bonjour from $id" ]
    [ "$(jq -r .eof <<<"$output")" = true ]
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq -r .job.name <<<"$output")" = hello ]
    [ "$(jq -r .job.labels.run <<<"$output")" = bats ]
    [ "$(jq -r .job.exit.code <<<"$output")" = 0 ]
    [ "$(jq -r '[.events[].to] | index("RUNNING") != null' <<<"$output")" = true ]
    run -0 "$DOCKET" show "$id"
    [[ ${lines[0]} == "job $id  hello  COMPLETED" ]]
    [[ $output == *"exit code 0"* && $output == *"events:"* ]]
    run -0 "$DOCKET" history --json
    [ "$(jq "[.jobs[] | select(.id == $id)] | length" <<<"$output")" -eq 1 ]
    run -0 "$DOCKET" history -p explore
    [[ $output == *"$id"*hello*explore*COMPLETED* ]]
    run -0 "$DOCKET" explain "$id"
    [[ ${lines[0]} == "job $id is COMPLETED"* ]]
}

@test "submit --json and --parsable; a refused submission exits 1 naming the field" {
    run -0 "$DOCKET" submit --json -p explore --class exploration -- true
    [ "$(jq -r .job.project <<<"$output")" = explore ]
    [ "$(jq -r .job.tier <<<"$output")" = low ]
    run -1 "$DOCKET" submit -p nosuchproject -- true
    [[ $output == *"field project"* ]]
    run -1 --separate-stderr "$DOCKET" submit --json -p explore -g 64 -- true
    [ "$(jq -r .error.code <<<"$output")" = invalid_argument ]
    [[ $stderr == "docket submit: "* ]]
    run -1 "$DOCKET" submit -p explore -t critical -- true
    [[ $output == *tier* ]]
}

@test "a #DOCKET script: directives apply, flags on the command line win" {
    cat >"$W/job.sh" <<'SCRIPT'
#!/bin/sh
#DOCKET -p explore --class exploration
#DOCKET --gpus 2 --time 10m --name from-script
#DOCKET --env WHO=script --env KEEP=yes
echo "who=$WHO keep=$KEEP gpus=$CUDA_VISIBLE_DEVICES"
SCRIPT
    id=$(submit_q --env WHO=flag --name from-flag "$W/job.sh")
    wait_for 30 state_in "$id" COMPLETED FAILED
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq -r .job.name <<<"$output")" = from-flag ]
    [ "$(jq -r .job.gpus <<<"$output")" = 2 ]
    [ "$(jq -r .job.time_limit_ms <<<"$output")" = 600000 ]
    [ "$(jq -r .job.state <<<"$output")" = COMPLETED ]
    run -0 "$DOCKET" logs "$id"
    [[ $output == "who=flag keep=yes gpus="*,* ]]
    # a script on stdin
    id=$(printf '#!/bin/sh\n#DOCKET -p explore --class exploration\necho from-stdin\n' |
        "$DOCKET" submit --parsable -)
    wait_for 30 state_in "$id" COMPLETED FAILED
    run -0 "$DOCKET" logs "$id"
    [ "$output" = from-stdin ]
    # arguments after a script are refused (they would be lost)
    run -2 "$DOCKET" submit "$W/job.sh" extra
    [[ $output == *"docket submit [FLAGS] -- "* ]]
}

@test "an #SBATCH script: Slurm options mapped, partition through DOCKET_PARTITION_MAP, unknown ones warned" {
    cat >"$W/slurm.sh" <<'SCRIPT'
#!/bin/bash
#SBATCH --job-name=from-slurm
#SBATCH --account=explore
#SBATCH --partition=debug
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=2 --mem=1G
#SBATCH --time=05:00
#SBATCH --mail-type=END
echo "slurm job on $DOCKET_NODE"
SCRIPT
    DOCKET_PARTITION_MAP="debug=exploration" run -0 --separate-stderr "$DOCKET" submit --parsable "$W/slurm.sh"
    id=$output
    [[ $stderr == *"line 8: #SBATCH --mail-type=END changes nothing in docket; ignored"* ]]
    wait_for 30 state_in "$id" COMPLETED FAILED
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq -r .job.name <<<"$output")" = from-slurm ]
    [ "$(jq -r .job.project <<<"$output")" = explore ]
    [ "$(jq -r .job.class <<<"$output")" = exploration ]
    [ "$(jq -r .job.gpus <<<"$output")" = 1 ]
    [ "$(jq -r .job.cpus <<<"$output")" = 2 ]
    [ "$(jq -r .job.mem_mb <<<"$output")" = 1024 ]
    [ "$(jq -r .job.time_limit_ms <<<"$output")" = 300000 ]
    run -0 "$DOCKET" logs "$id"
    [[ $output == "slurm job on $PREFIX-"* ]]
    # without a map the partition goes to docketd by name (the site's partitions decide)
    run -0 --separate-stderr "$DOCKET" submit --dry-run "$W/slurm.sh"
    [ "$(jq -r .partition <<<"$output")" = debug ]
    [ "$(jq -r .class <<<"$output")" = null ]
}

@test "node selectors: --select zone=b and --select zone!=b" {
    a=$(submit_q -p explore --class exploration --select zone=b -- true)
    b=$(submit_q -p explore --class exploration --select 'zone!=b' -- true)
    wait_for 30 state_in "$a" COMPLETED FAILED
    wait_for 30 state_in "$b" COMPLETED FAILED
    [ "$("$DOCKET" show "$a" --json | jq -r '.job.allocation[0].node')" = "$PREFIX-b" ]
    [ "$("$DOCKET" show "$b" --json | jq -r '.job.allocation[0].node')" = "$PREFIX-a" ]
    [ "$("$DOCKET" show "$b" --json | jq -r '.job.selectors.zone')" = '!b' ]
}

@test "hold, release, cancel, requeue: states change and refusals exit 1" {
    id=$(submit_q --hold -p explore --class exploration --time 5m -- sleep 300)
    [ "$(job_state "$id")" = HELD ]
    run -0 "$DOCKET" release "$id"
    [[ $output == "released job $id (now "* ]]
    wait_for 30 state_in "$id" RUNNING
    run -0 "$DOCKET" requeue "$id" --reason "bats requeue" --json
    [ "$(jq -r ".jobs[0].id" <<<"$output")" = "$id" ]
    wait_for 30 state_in "$id" RUNNING PENDING
    run -0 "$DOCKET" cancel "$id" --reason "bats done"
    wait_for 30 state_in "$id" CANCELLED
    run -1 "$DOCKET" cancel "$id"
    [[ $output == *"docket cancel: "* ]]
    run -1 "$DOCKET" hold 999999
    run -0 "$DOCKET" show "$id"
    [[ $output == *CANCELLED* ]]
}

# no_raw_controls TEXT: no ESC, BEL, CR, C1 CSI (UTF-8 or a lone byte) or RLO in TEXT
no_raw_controls() {
    ! LC_ALL=C grep -q $'[\x1b\x07\x0d\x9b]' <<<"$1" || { echo "raw control in: $(od -c <<<"$1" | head)" >&2; return 1; }
    [[ $1 != *$'\xe2\x80\xae'* ]]
}

@test "show, queue, history and explain write the escapes a user chose escaped, never raw" {
    # issue 33 #11: a job's command wrote its terminal escapes raw to whoever ran
    # docket show (OSC 52 sets the reader's clipboard; a clear screen, a CR over a line)
    esc=$'\e]52;c;ZXZpbA==\a\e[2J\rFAKE'
    id=$(submit_q --hold -p explore --class exploration --time 5m --name $'name\xc2\x9b2J\xe2\x80\xaeexe' \
        -- echo "${esc}" $'line\nforged: COMPLETED')
    "$DOCKET" hold "$id" --reason "${esc}reason" >/dev/null
    run -0 "$DOCKET" show "$id"
    no_raw_controls "$output"
    [[ $output == *'\x1b]52;c;ZXZpbA==\x07\x1b[2J\x0dFAKE'* ]]
    [[ ${lines[0]} == "job $id  name\\u009b2J\\u202eexe  HELD" ]]
    [[ $output == *'line\nforged: COMPLETED'* ]] # one line: a newline cannot forge one
    ! grep -q '^forged' <<<"$output"
    for verb in "queue" "history" "explain $id"; do
        run -0 "$DOCKET" $verb
        no_raw_controls "$output"
    done
    # --json keeps the value as it is (JSON escapes controls itself)
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq -r '.job.command[1]' <<<"$output")" = "$esc" ]
    "$DOCKET" cancel "$id" >/dev/null
}

@test "a project on its quota waits with QuotaLimit, and explain says why" {
    a=$(submit_q -p nlp -g 4 --time 5m -- sleep 300)
    b=$(submit_q -p nlp -g 4 --time 5m -- sleep 300)
    wait_for 30 state_in "$a" RUNNING
    run -0 "$DOCKET" explain "$b" --json
    [ "$(jq -r .explain.reason <<<"$output")" = QuotaLimit ]
    [ "$(jq -r .explain.state <<<"$output")" = PENDING ]
    run -0 "$DOCKET" explain "$b"
    [[ ${lines[0]} == "job $b is PENDING: QuotaLimit" ]]
    [[ $output == *"limit"*"4 in use of 4"* ]]
    [[ $output == *"forecast   as soon as the limit allows"* ]]
    run -0 "$DOCKET" explain "$a"
    [[ ${lines[0]} == "job $a is RUNNING"* ]]
    [[ $output == *preempt* ]]
    run -0 "$DOCKET" queue -p nlp
    [[ $output == *"$b"*PENDING*QuotaLimit* ]]
    run -0 "$DOCKET" queue -p nlp --json
    [ "$(jq '[.jobs[] | .project] | unique | length' <<<"$output")" -eq 1 ]
    run -0 "$DOCKET" q -p nlp --json     # the alias
    [ "$(jq '[.jobs[] | .project] | unique | length' <<<"$output")" -eq 1 ]
    run -0 "$DOCKET" forecast --json
    jq -e '.releases | type == "array"' <<<"$output"
    run -0 "$DOCKET" forecast
    run -0 "$DOCKET" cancel "$a" "$b"
    wait_for 30 state_in "$a" CANCELLED
}

@test "the controller's refusals name what is wrong and exit 1" {
    run -1 "$DOCKET" show 999999
    [[ $output == "docket show: "* ]]
    run -1 --separate-stderr "$DOCKET" show 999999 --json
    [ "$(jq -r .error.code <<<"$output")" = not_found ]
    run -1 "$DOCKET" logs 999999
    run -1 "$DOCKET" explain 999999
    run -1 "$DOCKET" nodes nosuchnode
    run -1 "$DOCKET" projects nosuchproject
    printf 'tiers: [\n' >"$T/broken.yaml"
    run -1 "$DOCKET" apply -f "$T/broken.yaml"
    [[ $output == *line* ]]
    run -1 "$DOCKET" submit -p nosuchproject -- true
    [[ $output == *nosuchproject* ]]
}

@test "queue: running first, then pending by tier (highest first); --by-id keeps ids" {
    run -0 "$DOCKET" nodes drain "$PREFIX-a" "$PREFIX-b" --reason "bats: queue order"
    lo=$(submit_q -p explore --class exploration -- true)
    mid=$(submit_q -p nlp -- true)
    hi=$(submit_q -p vision -- true)
    run -0 "$DOCKET" queue
    order=$(awk -v a="$lo" -v b="$mid" -v c="$hi" '$1 == a || $1 == b || $1 == c { printf "%s ", $1 }' <<<"$output")
    [ "$order" = "$hi $mid $lo " ]
    run -0 "$DOCKET" queue --by-id
    order=$(awk -v a="$lo" -v b="$mid" -v c="$hi" '$1 == a || $1 == b || $1 == c { printf "%s ", $1 }' <<<"$output")
    [ "$order" = "$lo $mid $hi " ]
    run -0 "$DOCKET" cancel "$lo" "$mid" "$hi"
    run -0 "$DOCKET" nodes resume "$PREFIX-a" "$PREFIX-b"
}

@test "queue -n N shows N rows and counts every job; ?fields= keeps the members named" {
    local ids=() id
    for _ in 1 2 3 4 5; do ids+=("$(submit_q -p explore --name qcount --hold -- true)"); done
    run -0 "$DOCKET" queue --name qcount -n 2
    [ "$(grep -c " qcount " <<<"$output")" = 2 ]
    [[ $output == *"0 running, 0 pending, 5 held"* ]]
    [[ $output == *"showing the first 2 of 5 (-n 5 shows all)"* ]]
    run -0 "$DOCKET" queue --name qcount
    [[ $output != *"showing the first"* ]]
    # the API's projection: only the members asked for, the same values as a whole row
    body=$(ctl_get "/v1/jobs?name=qcount&fields=id,state,gpus,time_limit_ms")
    [ "$(jq -c '[.jobs[0] | keys[]]' <<<"$body")" = '["gpus","id","state","time_limit_ms"]' ]
    narrow=$(jq -c '[.jobs[] | {id, state, gpus, time_limit_ms}]' <<<"$body")
    body=$(ctl_get "/v1/jobs?name=qcount")
    [ "$(jq -c '[.jobs[] | {id, state, gpus, time_limit_ms}]' <<<"$body")" = "$narrow" ]
    body=$(ctl_get "/v1/jobs?name=qcount&fields=id,command")
    [ "$(jq -r '.jobs[0].command[0]' <<<"$body")" = true ]
    body=$(curl -s -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/v1/jobs?fields=id,nosuch")
    [ "$(jq -r .error.field <<<"$body")" = fields ]
    run -0 "$DOCKET" cancel "${ids[@]}"
}

@test "queue: a list's kept rows are the rows made, and follow each change" {
    local a b
    a=$(submit_q -p explore --name kept --hold --time 1h -- true)
    b=$(submit_q -p explore --name kept --hold -- sleep 300)
    run -0 "$DOCKET" update "$b" --comment "one"
    # the first list makes the rows, the second serves them kept: the same bytes
    # (docs/controller.md "The list's row cache")
    run -0 "$DOCKET" queue --name kept --json
    first=$output
    run -0 "$DOCKET" queue --name kept --json
    [ "$output" = "$first" ]
    [ "$(jq -c '[.jobs[] | [.name, .state]]' <<<"$output")" = '[["kept","HELD"],["kept","HELD"]]' ]
    [ "$(jq '.jobs[0].time_limit_ms' <<<"$output")" = 3600000 ]
    # a change to a job's request, its name, its state: the next list shows it
    run -0 "$DOCKET" update "$a" --time 30m --name kept2
    run -0 "$DOCKET" update "$b" --comment "two"
    run -0 "$DOCKET" release "$b"
    body=$(ctl_get "/v1/jobs?state=all&fields=id,name,time_limit_ms,state")
    [ "$(jq -c --argjson a "$a" '.jobs[] | select(.id == $a) | [.name, .time_limit_ms, .state]' <<<"$body")" = '["kept2",1800000,"HELD"]' ]
    [ "$(jq -r --argjson b "$b" '.jobs[] | select(.id == $b) | .state' <<<"$body")" != HELD ]
    body=$(ctl_get "/v1/jobs?state=all")
    [ "$(jq -r --argjson b "$b" '.jobs[] | select(.id == $b) | .comment' <<<"$body")" = two ]
    run -0 "$DOCKET" queue --name kept2
    [[ $output == *" kept2 "* && $output == *"0 running, 0 pending, 1 held"* ]]
    run -0 "$DOCKET" cancel "$a" "$b"
    body=$(ctl_get "/v1/jobs?state=terminal&name=kept2")
    [ "$(jq -r '.jobs[0].state' <<<"$body")" = CANCELLED ]
}

@test "queue: lists of many slices, filters in turn, each change shown (issue 40)" {
    # docket queue reads the rows' text in one pass and docketd serves the table's
    # projected rows from its row cache, each list's slices from one kept statement
    # (docs/cli.md "queue"): two filters listed in turn, past one slice (256 rows) each
    run -0 "$DOCKET" submit --json -p explore --class exploration --hold --name lsa --array 0-599 -- true
    first=$(jq -r '.jobs[0].id' <<<"$output")
    run -0 "$DOCKET" submit --json -p explore --class exploration --hold --name lsb --array 0-299 -- true
    for _ in 1 2; do
        run -0 "$DOCKET" queue --name lsa -n 100000
        [ "$(grep -c " lsa " <<<"$output")" = 600 ]
        [[ $output == *"0 running, 0 pending, 600 held"* ]]
        run -0 "$DOCKET" queue --name lsb -n 100000 --by-id
        [ "$(grep -c " lsb " <<<"$output")" = 300 ]
        [[ $output == *"0 running, 0 pending, 300 held"* ]]
    done
    # --json: the API's rows, every member, in its order (the same values, re-laid out)
    run -0 "$DOCKET" queue --name lsa -n 100000 --json
    [ "$(jq -c .jobs <<<"$output")" = "$(ctl_get "/v1/jobs?name=lsa&limit=10000" | jq -c .jobs)" ]
    [ "$(jq '.jobs | length' <<<"$output")" = 600 ]
    run -0 "$DOCKET" queue --name lsa -n 250 --json
    [ "$(jq '.jobs | length' <<<"$output")" = 250 ]
    # a change to a row the table showed kept: the next table shows it
    run -0 "$DOCKET" update "$first" --name lsa2
    run -0 "$DOCKET" release "$((first + 1))"
    run -0 "$DOCKET" queue --name lsa -n 100000
    [[ $output == *", 598 held"* ]] # (the released one may have run and ended by now)
    [ "$(awk -v id="$((first + 1))" '$1 == id { print $7 }' <<<"$output")" != HELD ]
    run -0 "$DOCKET" queue --name lsa2
    [ "$(awk -v id="$first" '$1 == id { print $2, $7 }' <<<"$output")" = "lsa2 HELD" ]
    run -0 "$DOCKET" cancel "$first"
    run -0 "$DOCKET" queue --name lsa2
    [[ $output == *"0 running, 0 pending, 0 held"* ]]
    ids=$(ctl_get "/v1/jobs?state=HELD&limit=10000&fields=id,name" |
        jq -r '.jobs[] | select(.name == "lsa" or .name == "lsb") | .id')
    xargs -n 64 "$DOCKET" cancel >/dev/null <<<"$ids" # (64 ids a command at most)
    "$DOCKET" cancel "$((first + 1))" >/dev/null 2>&1 || true # (unless it ended)
}

@test "an array: one job per index, at most %N at once" {
    run -0 "$DOCKET" submit --json -p explore --class exploration --array 0-3%2 -- sh -c 'echo "index $DOCKET_ARRAY_INDEX"'
    [ "$(jq '.jobs | length' <<<"$output")" -eq 4 ]
    arr=$(jq -r .array_id <<<"$output")
    last=$(jq -r '.jobs[3].id' <<<"$output")
    wait_for 60 state_in "$last" COMPLETED FAILED
    run -0 "$DOCKET" logs "$last"
    [ "$output" = "index 3" ]
    run -0 "$DOCKET" history --json
    [ "$(jq "[.jobs[] | select(.array_id == $arr)] | length" <<<"$output")" -eq 4 ]
}

@test "logs -f follows a job to its end" {
    id=$(submit_q -p explore --class exploration -- sh -c 'for i in 1 2 3; do echo line $i; sleep 0.3; done')
    run -0 timeout 60 "$DOCKET" logs -f "$id"
    [ "$output" = "$(printf 'line 1\nline 2\nline 3')" ]
}

@test "top prints one frame off a terminal; --json is one snapshot" {
    run -0 "$DOCKET" top
    [[ $output == *"docket top"* && $output == *"H100-80GB"*"GPUs"* ]]
    [[ $output != *$'\033'* ]]
    run -0 "$DOCKET" top --json
    jq -e '.nodes | length >= 2' <<<"$output"
    jq -e '.jobs | type == "array"' <<<"$output"
    run -0 timeout 20 "$DOCKET" top -n 2 -d 1
    [ "$(grep -c '^docket top' <<<"$output")" -eq 2 ]
    [[ $output == *"$PREFIX-a"*UP* ]]
    run -2 "$DOCKET" top -d 0
}

@test "projects set, boost, pause and resume are applied and audited" {
    run -0 "$DOCKET" projects create bats-proj group=g tier=low gpu_limit=2
    [[ $output == "created project bats-proj" ]]
    run -0 "$DOCKET" projects bats-proj --json
    [ "$(jq -r '(.project // .).gpu_limit' <<<"$output")" = 2 ]
    run -1 "$DOCKET" projects create bats-proj group=g tier=low
    run -0 "$DOCKET" projects set explore max_queued=4000
    run -0 "$DOCKET" projects explore --json
    [ "$(jq -r '.project.max_queued // .max_queued' <<<"$output")" = 4000 ]
    run -0 "$DOCKET" projects boost explore --levels 1 --for 1h --reason "bats deadline"
    run -0 "$DOCKET" projects explore --json
    [ "$(jq -r '(.project // .).eff_tier' <<<"$output")" = normal ]
    run -0 "$DOCKET" projects boost explore --remove
    run -0 "$DOCKET" projects pause explore
    run -1 "$DOCKET" submit -p explore -- true
    run -0 "$DOCKET" projects resume explore
    run -2 "$DOCKET" projects set explore colour=blue
    [[ $output == *"unknown key 'colour'"* ]]
    run -1 "$DOCKET" projects set nosuchproject max_queued=1
    run -2 "$DOCKET" projects set explore gpu_limit=many
    run -0 "$DOCKET" audit --json
    jq -e '.entries | length > 0' <<<"$output"
    run -0 "$DOCKET" audit --target explore
    [[ $output == *explore* ]]
}

@test "tokens: a member token works over TCP; a bad one exits 1 with a hint" {
    run -0 --separate-stderr "$DOCKET" token create --user alice --role member --ttl 1d
    tok=$output
    [[ $tok == dkt_* ]]
    [[ $stderr == *"token for alice"* ]]
    DOCKET_URL=http://127.0.0.1:$PORT DOCKET_TOKEN=$tok run -0 "$DOCKET" tiers --json
    jq -e '.tiers | length == 4' <<<"$output"
    DOCKET_URL=http://localhost:$PORT DOCKET_TOKEN=$TOKEN run -0 "$DOCKET" nodes --json
    DOCKET_URL=http://127.0.0.1:$PORT DOCKET_TOKEN=dkt_forged run -1 "$DOCKET" queue
    [[ $output == *"hint: over TCP set DOCKET_TOKEN"* ]]
    run -0 "$DOCKET" --url "http://127.0.0.1:$PORT" --token "$TOKEN" q --json
    run -2 "$DOCKET" token create
}

@test "the config file: url and token from ~/.config/docket/config" {
    mkdir -p "$T/home/.config/docket"
    printf '# test\nurl = http://127.0.0.1:%s\ntoken = %s\n' "$PORT" "$TOKEN" >"$T/home/.config/docket/config"
    chmod 600 "$T/home/.config/docket/config"
    HOME=$T/home DOCKET_URL= XDG_CONFIG_HOME= run -0 --separate-stderr "$DOCKET" tiers --json
    [ -z "$stderr" ]
    chmod 644 "$T/home/.config/docket/config"
    HOME=$T/home DOCKET_URL= XDG_CONFIG_HOME= run -0 --separate-stderr "$DOCKET" tiers --json
    [[ $stderr == *"holds a token and others may read it; chmod 600"* ]]
    printf 'colour = blue\n' >"$T/home/.config/docket/config"
    HOME=$T/home DOCKET_URL= XDG_CONFIG_HOME= run -1 "$DOCKET" tiers
    [[ $output == *"config:1: unknown key 'colour'"* ]]
}

@test "output for scripts: no colour off a terminal or with NO_COLOR; --json is valid everywhere" {
    run -0 "$DOCKET" queue --all
    [[ $output != *$'\033'* ]]
    NO_COLOR=1 run -0 "$DOCKET" nodes
    [[ $output != *$'\033'* ]]
    # on a terminal (script(1), from bsdutils, gives one) that can show colour: colour,
    # unless NO_COLOR or --no-color; a dumb terminal gets none. The test
    # names the TERM it needs rather than inheriting the caller's.
    run -0 env TERM=xterm-256color script -qec "'$DOCKET' nodes" /dev/null
    [[ $output == *$'\033['* ]]
    run -0 env TERM=xterm-256color NO_COLOR=1 script -qec "'$DOCKET' nodes" /dev/null
    [[ $output != *$'\033['* ]]
    run -0 env TERM=xterm-256color script -qec "'$DOCKET' --no-color nodes" /dev/null
    [[ $output != *$'\033['* ]]
    run -0 env TERM=dumb script -qec "'$DOCKET' nodes" /dev/null
    [[ $output != *$'\033['* ]]
    for v in queue history nodes projects tiers classes forecast audit; do
        run -0 "$DOCKET" "$v" --json
        jq -e . <<<"$output" >/dev/null || { echo "$v --json: $output"; false; }
    done
}

@test "bash completion: verbs, flags, live job ids and project names" {
    id=$(submit_q --hold -p explore --class exploration -- true)
    run -0 bash -c "
        PATH=$(dirname "$DOCKET"):\$PATH
        source '$BATS_TEST_DIRNAME/../../contrib/bash-completion/docket'
        COMP_WORDS=(docket ex); COMP_CWORD=1; _docket; echo \"verbs: \${COMPREPLY[*]}\"
        COMP_WORDS=(docket submit --ar); COMP_CWORD=2; _docket; echo \"flags: \${COMPREPLY[*]}\"
        COMP_WORDS=(docket release ''); COMP_CWORD=2; _docket; echo \"held: \${COMPREPLY[*]}\"
        COMP_WORDS=(docket submit -p ''); COMP_CWORD=3; _docket; echo \"projects: \${COMPREPLY[*]}\""
    [[ $output == *"verbs: explain"* ]]
    [[ $output == *"flags: --array"* ]]
    [[ $output == *"held: "*"$id"* ]]
    [[ $output == *"projects: "*nlp* ]]
    "$DOCKET" cancel "$id" >/dev/null
}
