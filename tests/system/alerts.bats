#!/usr/bin/env bats
# alerts.bats - graded alerts and usage reports end to end (docs/alerts.md,
# docs/reports.md): a real docketd, two real agents with declared GPUs (lib/cluster.bash)
# and a real local webhook receiver (tests/system/hook_receiver.c) that records every body
# it is sent. A job fails, a queue builds up past its wait threshold, an agent is killed
# with kill -9: each alert reaches the receiver with its severity, and resolves when its
# condition clears; a silence stops delivery; `docket report usage` and `capacity` agree
# with the runs and the jobs to the millisecond; after every test /metrics agrees with the
# API (teardown).

bats_require_minimum_version 1.5.0

CLUSTER_NAME=alerts
load lib/cluster
AGENT_EXTRA=()
AGENT_UTIL_FILES=1 # declared GPU utilisation from $T/gpu-util-a/-b (the gpu_idle test)
# a killed node is declared unreachable within ~14 s instead of ~40 s
DOCKETD_EXTRA=(--node-timeout 10s)
RECEIVER=$DOCKET_BUILD/tests/system/hook_receiver

setup_file() {
    [[ -x $DOCKET && -x $DOCKETD_BIN && -x $AGENT_BIN && -x $RECEIVER ]] ||
        skip "docket, docketd, docket-node or hook_receiver not built"
    cluster_start
    "$RECEIVER" "$T/hook.port" "$T/hook.out" &
    echo $! >"$T/hook.pid"
    # a receiver that answers 500 twice before it takes anything: docketd must retry
    "$RECEIVER" "$T/flaky.port" "$T/flaky.out" 2 &
    echo $! >"$T/flaky.pid"
    wait_for 10 test -s "$T/hook.port"
    wait_for 10 test -s "$T/flaky.port"
    local hp fp
    hp=$(cat "$T/hook.port")
    fp=$(cat "$T/flaky.port")
    cat >"$T/policy.yaml" <<YAML
projects:
  - {name: ml}
prices: {H100-80GB: 2.5, currency: EUR}
alerts:
  interval: 1s
  delivery: {attempts: 4, backoff: 200ms, max_backoff: 1s, timeout: 2s}
  rules:
    - {name: node-down, kind: node_unreachable, severity: critical}
    - {name: job-failed, kind: job_failed, severity: major, for: 10m}
    - {name: queue-long, kind: queue_wait, severity: info, threshold: 3s, tier: normal}
    - {name: gpu-idle, kind: gpu_idle, severity: major}
  routes:
    - {severities: [critical, major, info], webhook: "http://127.0.0.1:$hp/generic",
       secret: "s3cret-s3cret-s3cret"}
    - {severities: critical, webhook: "http://127.0.0.1:$hp/slack", shape: slack}
    - {severities: [critical, major, info], log: true}
    - {severities: critical, webhook: "http://127.0.0.1:$fp/flaky"}
YAML
    "$DOCKET" apply -f "$T/policy.yaml" >/dev/null
}

teardown_file() {
    [[ -n ${T:-} && -f $T/hook.pid ]] && kill_pidfile "$T/hook.pid"
    [[ -n ${T:-} && -f $T/flaky.pid ]] && kill_pidfile "$T/flaky.pid"
    cluster_stop
}

setup() {
    cd "$W"
}

# after every step of the scenario, whatever it left running or queued
teardown() {
    wait_for 15 agrees
}

# received STATUS RULE [KEY]: the generic bodies the receiver got for that alert
received() {
    [[ -f $T/hook.out ]] || return 1
    cut -f2 "$T/hook.out" | jq -c --arg s "$1" --arg r "$2" --arg k "${3-}" \
        'select(.status == $s and .alert.rule == $r and ($k == "" or .alert.key == $k))' 2>/dev/null |
        grep .
}

submit_q() {
    "$DOCKET" submit --parsable -p ml "$@"
}

@test "a failed job fires a major alert that reaches the webhook, signed" {
    id=$(submit_q -- false)
    wait_for 30 state_in "$id" FAILED
    wait_for 20 received firing job-failed "job/$id"
    body=$(received firing job-failed "job/$id" | head -1)
    [ "$(jq -r .alert.severity <<<"$body")" = major ]
    [[ $(jq -r .alert.summary <<<"$body") == *"job $id of project ml ended FAILED"* ]]
    # signed with the route's secret: HMAC-SHA256 of the body
    line=$(grep -F "\"key\":\"job/$id\"" "$T/hook.out" | grep -v '"text"' | head -1)
    sig=${line%%$'\t'*}
    raw=${line#*$'\t'}
    want=$(printf '%s' "$raw" | openssl dgst -sha256 -hmac "s3cret-s3cret-s3cret" | sed 's/^.*= //')
    [ "$sig" = "sha256=$want" ]
    # the major route has no Slack target: only the critical severity goes there
    ! grep -F '"text"' "$T/hook.out" | grep -q "job-failed" || false
    run -0 "$DOCKET" alerts --json
    [ "$(jq --arg k "job/$id" '[.alerts[] | select(.key == $k and .state == "firing")] | length' <<<"$output")" = 1 ]
    run -0 "$DOCKET" alerts
    [[ $output == *SEVERITY*RULE*KEY*SINCE* && $output == *"job-failed"*"job/$id"* ]]
}

@test "a queue past its wait threshold fires (info) once, and resolves when it drains" {
    a=$(submit_q -g 8 -- sleep 300)
    b=$(submit_q -g 8 -- sleep 300)
    wait_for 30 state_in "$a" RUNNING
    wait_for 30 state_in "$b" RUNNING
    c=$(submit_q -g 8 -- sleep 1)
    wait_for 30 received firing queue-long normal
    sleep 2 # more rounds: still one firing instance, one notification
    [ "$(received firing queue-long normal | wc -l)" = 1 ]
    [ "$(jq -r .alert.severity <<<"$(received firing queue-long normal)")" = info ]
    "$DOCKET" cancel "$a" "$b" >/dev/null
    wait_for 30 received resolved queue-long normal
    wait_for 30 state_in "$c" COMPLETED
    run -0 "$DOCKET" alerts history --json
    [ "$(jq '[.alerts[] | select(.rule == "queue-long" and .resolved_ms > 0)] | length' <<<"$output")" -ge 1 ]
    run -0 "$DOCKET" alerts history
    [[ $output == *ID*SEVERITY*RULE*FIRED*RESOLVED* && $output == *queue-long* ]]
}

@test "a silence suppresses delivery, is audited, and can be removed" {
    run -2 "$DOCKET" alerts silence job-failed --for 1h
    [[ $output == *"--reason"* ]]
    run -1 "$DOCKET" alerts silence no-such-rule --for 1h --reason x
    [[ $output == *"no alert rule 'no-such-rule'"* ]]
    run -0 "$DOCKET" alerts silence job-failed --for 1h --reason "known flaky" --json
    sid=$(jq -r .silence.id <<<"$output")
    id=$(submit_q -- false)
    wait_for 30 state_in "$id" FAILED
    # recorded as silenced in the history, never delivered
    wait_for 20 bash -c "'$DOCKET' alerts history --json | jq -e --arg k job/$id \
        '.alerts[] | select(.key == \$k and .silenced)' >/dev/null"
    sleep 2
    ! received firing job-failed "job/$id" || false
    run -0 "$DOCKET" alerts silences
    [[ $output == *"known flaky"* && $output == *"job-failed"* ]]
    run -0 "$DOCKET" audit --action alert.silence --json
    [ "$(jq '.entries | length' <<<"$output")" -ge 1 ]
    run -0 "$DOCKET" alerts unsilence "$sid"
    run -0 "$DOCKET" alerts silences --json
    [ "$(jq '.silences | length' <<<"$output")" = 0 ]
}

@test "a killed agent fires critical (generic and Slack shapes) and resolves when it is back" {
    kill -9 "$(cat "$T/agent-b.pid")"
    wait_for 60 received firing node-down "$PREFIX-b"
    [ "$(jq -r .alert.severity <<<"$(received firing node-down "$PREFIX-b")")" = critical ]
    wait_for 10 bash -c "cut -f2 '$T/hook.out' | jq -r '.text // empty' | grep -q 'FIRING node-down ($PREFIX-b)'"
    agent_start b "$("$DOCKET" token join)"
    wait_for 60 received resolved node-down "$PREFIX-b"
    wait_for 10 bash -c "cut -f2 '$T/hook.out' | jq -r '.text // empty' | grep -q 'RESOLVED node-down ($PREFIX-b)'"
    grep -q "event=alert status=firing rule=node-down" "$T/ctl.log"
    # the flaky receiver got it on the third try, after 200 ms then 400 ms (backoff 200ms)
    grep -q "\"rule\":\"node-down\"" "$T/flaky.out"
    grep -q "event=alert_retry status=firing rule=node-down key=$PREFIX-b route=3 attempt=1 retry_in_ms=200" "$T/ctl.log"
    grep -q "event=alert_retry status=firing rule=node-down key=$PREFIX-b route=3 attempt=2 retry_in_ms=400" "$T/ctl.log"
    grep -q "event=alert_delivered status=firing rule=node-down key=$PREFIX-b route=3 attempt=3" "$T/ctl.log"
}

# The GPU time of every run from the database, and of every job from the API.
# changes STATUS RULE KEY N: the receiver got at least N such bodies
changes() {
    [ "$(received "$1" "$2" "$3" | wc -l)" -ge "$4" ]
}

@test "gpu_idle: a job its class's idle rule flags fires (webhook, docket alerts, /metrics), resolves when busy again and when it ends; report usage counts its idle GPU-hours" {
    # the built-in classes, interactive with an idle rule (action alert: it is not preemptible)
    cat >"$T/idle.yaml" <<'YAML'
classes:
  - {name: training, default_limit: 7d, preemptible: true, preempt_order: 2, protect_after: 24h}
  - {name: experiment, default_limit: 4h, preemptible: true, preempt_order: 1, max_retries: 3}
  - {name: exploration, default_limit: 1h, preemptible: true, preempt_order: 0, max_retries: 3}
  - {name: interactive, default_limit: 8h, preemptible: false, preempt_order: 3, requeueable: false,
     idle: {gpu_util_below: 5, for: 2s, action: alert}}
  - {name: service, default_limit: 0s, preemptible: false, preempt_order: 4, restart_on_failure: true}
YAML
    "$DOCKET" apply -f "$T/idle.yaml" >/dev/null
    echo 0 >"$T/gpu-util-a"
    echo 0 >"$T/gpu-util-b"
    id=$(submit_q --class interactive -g 2 -- sleep 600)
    wait_for 30 state_in "$id" RUNNING
    wait_for 60 received firing gpu-idle "job/$id"
    body=$(received firing gpu-idle "job/$id" | head -1)
    [ "$(jq -r '.alert.kind + " " + .alert.severity' <<<"$body")" = "gpu_idle major" ]
    [[ $(jq -r .alert.summary <<<"$body") == *"job $id of project ml (class interactive): GPUs under 5% for"* ]] || { echo "$body"; false; }
    run -0 "$DOCKET" alerts --json
    [ "$(jq --arg k "job/$id" '[.. | objects | select(.rule? == "gpu-idle" and .key? == $k)] | length >= 1' <<<"$output")" = true ] || { echo "$output"; false; }
    run -0 ctl_get /metrics
    grep -qx 'docket_alerts_firing{rule="gpu-idle",severity="major"} 1' <<<"$output" || { grep docket_alerts_firing <<<"$output"; false; }
    grep -qx 'docket_alerts_firing{rule="node-down",severity="critical"} 0' <<<"$output"
    # busy again: the stretch ends, the alert resolves
    echo 90 >"$T/gpu-util-a"
    echo 90 >"$T/gpu-util-b"
    wait_for 30 received resolved gpu-idle "job/$id"
    run -0 ctl_get /metrics
    grep -qx 'docket_alerts_firing{rule="gpu-idle",severity="major"} 0' <<<"$output"
    # idle again: a new stretch is flagged and fires again; the job ends: it resolves
    echo 0 >"$T/gpu-util-a"
    echo 0 >"$T/gpu-util-b"
    wait_for 60 changes firing gpu-idle "job/$id" 2
    "$DOCKET" cancel "$id" >/dev/null
    wait_for 30 state_in "$id" CANCELLED
    wait_for 30 changes resolved gpu-idle "job/$id" 2
    rm -f "$T/gpu-util-a" "$T/gpu-util-b"
    # report usage: the job's idle GPU time is its summary's idle time x its 2 GPUs
    idle_s=$(ctl_get "/v1/jobs/$id/usage" | jq '.summary.gpu_idle_seconds')
    run -0 "$DOCKET" report usage --since 1d --by class --json
    hours=$(jq '[.rows[] | select(.key == "interactive") | .idle_gpu_hours] | add' <<<"$output")
    awk -v h="$hours" -v s="$idle_s" 'BEGIN { exit !(s > 0 && h * 3600 - 2 * s < 0.01 && 2 * s - h * 3600 < 0.01) }' || { echo "report $hours h, summary $idle_s s"; false; }
    run -0 "$DOCKET" report usage --since 1d --by class --csv
    [[ ${lines[0]} == *,idle_gpu_hours,cost ]]
    grep -q "^-,[^,]*,[^,]*,EUR,[^,]*,interactive,.*,[0-9.]*[1-9][0-9.]*,[0-9.]*$" <<<"$output" || { echo "$output"; false; }
}

@test "report usage: GPU time equals the runs' to the millisecond and the jobs' events' to the second" {
    wait_for 60 bash -c "[ \$('$DOCKET' queue --json | jq '[.jobs[] | select(.state != \"COMPLETED\" and .state != \"FAILED\" and .state != \"CANCELLED\")] | length') = 0 ]"
    runs=$(sqlite3 "$T/ctl/docket.db" "SELECT coalesce(sum(j.gpus * j.nnodes * (r.end_ms - r.start_ms)), 0) FROM job_runs r JOIN jobs j ON j.id = r.job WHERE j.project = 'ml' AND r.end_ms > 0")
    open=$(sqlite3 "$T/ctl/docket.db" "SELECT count(*) FROM job_runs WHERE end_ms = 0")
    [ "$open" = 0 ]
    run -0 "$DOCKET" report usage --since 1d --json
    got=$(jq '[.rows[] | select(.key == "ml") | .gpu_ms] | add' <<<"$output")
    [ "$got" = "$runs" ] || { echo "report $got, runs $runs"; false; }
    [ "$got" -gt 0 ]
    # the same from the jobs' own events (GET /v1/jobs/ID/events): each run from the
    # agent's "running" to the state that ends it, x its GPUs; the job's row and its event
    # read the clock once each, so a run may differ by a millisecond at each end
    local jobs=0 nruns=0 id one
    for id in $("$DOCKET" history -p ml --json -n 1000 | jq -r '.jobs[].id'); do
        one=$("$DOCKET" show "$id" --json | jq '(.job.gpus * .job.nodes) as $g |
            [foreach .events[] as $x ({s: null, d: 0, n: 0};
                if $x.type == "running" then .s = $x.time_ms
                elif $x.type == "state" and .s != null and
                     ([$x.to] | inside(["STARTING", "RUNNING", "STOPPING"]) | not)
                then .d += ($x.time_ms - .s) | .n += 1 | .s = null else . end; .)]
            | last // {d: 0, n: 0} | "\(.d * $g) \(.n)"' -r)
        jobs=$((jobs + ${one% *}))
        nruns=$((nruns + ${one#* }))
    done
    diff=$((jobs > got ? jobs - got : got - jobs))
    ((diff <= 2 * 8 * nruns)) || { echo "report $got ms, jobs' events $jobs ms ($nruns runs)"; false; }
    hours=$(jq '[.rows[] | select(.key == "ml") | .gpu_hours] | add' <<<"$output")
    awk -v h="$hours" -v ms="$got" 'BEGIN { exit !(h * 3600000 - ms < 1 && ms - h * 3600000 < 1) }'
    [ "$(jq '[.rows[] | select(.key == "ml") | .jobs.FAILED] | add' <<<"$output")" -ge 2 ]
    [ "$(jq '[.rows[] | select(.key == "ml") | .cost] | add > 0' <<<"$output")" = true ]
    run -0 "$DOCKET" report usage --since 1d --by gpu-type
    [[ $output == *GPU-TYPE*GPU-H*WAIT-P50*IDLE-GPU-H*COST* && $output == *H100-80GB* ]]
    run -0 "$DOCKET" report usage --since 1d --csv
    [[ ${lines[0]} == period,since_utc,until_utc,currency,gpu_rates,project,gpu_hours,gpu_seconds,* ]]
    [[ ${lines[1]} == -,*,EUR,H100-80GB=2.5,ml,* ]]
    run -2 "$DOCKET" report usage --by colour
    [[ $output == *"--by: project, group, user, tier, class or gpu-type"* ]]
}

@test "reports finance can sign: calendar periods, by group, a lead's own project, running jobs counted to now" {
    month=$(date -u +%Y-%m)
    quarter=$(date -u +%Y)-Q$((($(date -u +%-m) - 1) / 3 + 1))
    # a job running through the report: before, it counted to the end of the month
    busy=$(submit_q -p ml --gpus 8 --time 10m -- sleep 600)
    wait_for 60 state_in "$busy" RUNNING
    run -0 "$DOCKET" report capacity --month "$month" --json
    jq -e '[.gpu_types[] | select(.utilisation != null) | .utilisation <= 1] | all' <<<"$output" ||
        { jq -c .gpu_types <<<"$output"; false; }
    run -0 "$DOCKET" report usage --month "$month" --json
    jq -e '.counted_until_ms < .until_ms' <<<"$output" # the month is not over: counted to now
    "$DOCKET" cancel "$busy" >/dev/null
    wait_for 60 state_in "$busy" CANCELLED
    run -0 "$DOCKET" report usage --month "$month" --json
    jq -e --arg m "$month" '.period == $m and .counted_until_ms <= .until_ms' <<<"$output"
    month_ms=$(jq '[.rows[].gpu_ms] | add' <<<"$output")
    run -0 "$DOCKET" report usage --quarter "$quarter" --json
    [ "$(jq '[.rows[].gpu_ms] | add' <<<"$output")" -ge "$month_ms" ]
    run -0 "$DOCKET" report usage --month "$month" --by group --json
    [ "$(jq '[.rows[].gpu_ms] | add' <<<"$output")" = "$month_ms" ]
    run -0 "$DOCKET" report usage --month "$month" --csv
    [[ ${lines[1]} == "$month",*,EUR,H100-80GB=2.5,* ]]
    run -1 "$DOCKET" report usage --month 2026-13
    [[ $output == *"month must be YYYY-MM"* ]]
    run -2 "$DOCKET" report usage --month "$month" --since 1d
    # a lead reads their project's report by project; a member reads none
    "$DOCKET" projects members add ml lee --role lead >/dev/null
    "$DOCKET" projects members add ml mo >/dev/null
    lee=$("$DOCKET" token create --user lee --role member --ttl 1h 2>/dev/null)
    mo=$("$DOCKET" token create --user mo --role member --ttl 1h 2>/dev/null)
    DOCKET_TOKEN=$lee run -0 "$DOCKET" report usage --month "$month" --json
    jq -e '[.rows[].key] == ["ml"]' <<<"$output"
    DOCKET_TOKEN=$lee run -1 "$DOCKET" report usage --month "$month" --by user
    [[ $output == *"by project only"* ]]
    DOCKET_TOKEN=$mo run -1 "$DOCKET" report usage --month "$month"
    [[ $output == *"a project's leads their own"* ]]
}

@test "report capacity: month view in a table, CSV, JSON and self-contained HTML" {
    month=$(date -u +%Y-%m)
    run -0 "$DOCKET" report capacity --month "$month" --json
    [ "$(jq '[.gpu_types[] | select(.gpu_type == "H100-80GB") | .gpus] | add' <<<"$output")" = 16 ]
    # the GPU time it counts is the runs' to the millisecond (every run of the scenario
    # began this month unless the month turned during the test)
    runs=$(sqlite3 "$T/ctl/docket.db" "SELECT coalesce(sum(j.gpus * j.nnodes * (r.end_ms - r.start_ms)), 0) FROM job_runs r JOIN jobs j ON j.id = r.job WHERE r.end_ms > 0")
    used=$(jq '[.gpu_types[].gpu_ms] | add' <<<"$output")
    [ "$(date -u +%Y-%m)" != "$month" ] || [ "$used" = "$runs" ] || { echo "capacity $used ms, runs $runs ms"; false; }
    [ "$used" -gt 0 ]
    [ "$(jq '[.tiers[] | select(.tier == "normal") | .peak_pending_jobs] | add' <<<"$output")" -ge 1 ]
    [ "$(jq '[.repeats[] | select(.project == "ml")] | length' <<<"$output")" -ge 1 ]
    run -0 "$DOCKET" report capacity --month "$month"
    [[ $output == *"GPU TYPE"*UTIL* && $output == *TIER*"PEAK JOBS"* && $output == *fragmentation* ]]
    run -0 "$DOCKET" report capacity --month "$month" --csv
    [[ ${lines[0]} == gpu_type,gpus,* ]]
    run -0 "$DOCKET" report capacity --month "$month" --html
    [[ $output == "<!DOCTYPE html>"* && $output == *"</html>" ]]
    ! grep -qiE '<script|src=|href=|https?://' <<<"$output" || false
    run -1 "$DOCKET" report capacity --month 2026-13
    [[ $output == *"month must be YYYY-MM"* ]]
}

# reports_got: the generic report bodies the receiver got, one per line
reports_got() {
    [[ -f $T/hook.out ]] || return 0
    cut -f2 "$T/hook.out" | jq -c 'select(.status == "report")' 2>/dev/null
}

@test "the month just closed goes to the routes that ask for reports, once, across a restart" {
    local hp last
    hp=$(cat "$T/hook.port")
    last=$(date -u -d "$(date -u +%Y-%m-01) -1 day" +%Y-%m)
    sed "s|^  routes:|  routes:\n    - {severities: critical, webhook: \"http://127.0.0.1:$hp/report\", reports: true}\n    - {severities: critical, webhook: \"http://127.0.0.1:$hp/report-chat\", shape: slack, reports: true}|" \
        "$T/policy.yaml" >"$T/policy-reports.yaml"
    grep -q 'reports: true' "$T/policy-reports.yaml"
    "$DOCKET" apply -f "$T/policy-reports.yaml" >/dev/null
    have_report() { [ "$(reports_got | wc -l)" -ge 1 ]; }
    wait_for 30 have_report
    body=$(reports_got | head -n 1)
    [ "$(jq -r .period <<<"$body")" = "$last" ]
    # the report is the usage report of that month, by project
    run -0 "$DOCKET" report usage --month "$last" --json
    [ "$(jq -c '.report.rows' <<<"$body")" = "$(jq -c .rows <<<"$output")" ]
    [ "$(jq -r .report.currency <<<"$body")" = EUR ]
    wait_for 30 grep -q "Docket usage report $last" "$T/hook.out"
    # a restart of docketd does not send it again
    kill_pidfile "$T/ctl.pid"
    ctl_start "$PORT"
    sleep 3 # a few alert rounds (interval 1s); none may send the month again
    [ "$(reports_got | wc -l)" = 1 ]
    [ "$(grep -c "Docket usage report $last" "$T/hook.out")" = 1 ]
    # the policy reads back with the flag
    [ "$(ctl_get /v1/policy | jq '[.alerts.routes[] | select(.reports == true)] | length')" = 2 ]
    run -0 "$DOCKET" apply -f "$T/policy.yaml"
    wait_for 30 nodes_up 2
}
