#!/usr/bin/env bats
# docket-node against the real docketd on loopback: one controller, two agents with
# declared GPUs (8xH100-80GB each, labelled zone=a and zone=b), jobs submitted with curl.
# Jobs run as 'nobody' in a world-writable work dir. Every process started here is
# stopped by its pid in teardown_file, and every cgroup of the two nodes is removed.
# Needs root (cgroups); skipped otherwise.

bats_require_minimum_version 1.5.0

B=${DOCKET_BUILD:-$BATS_TEST_DIRNAME/../../build}
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}

load lib/common

# capi METHOD PATH [curl args]: prints the reply (common.bash's api sets variables instead,
# which does not fit $(...) and pipes)
start_ctl() { # [PORT]: the first start lets the kernel choose, a restart reuses it
    rm -f "$T/ctl/docketd.port"
    "$B/src/controller/docketd" --state-dir "$T/ctl" --listen "127.0.0.1:${1:-0}" --socket - \
        --heartbeat-wait 5s --node-timeout 30s --log-file "$T/ctl.log" &
    echo $! >"$T/ctl.pid"
    wait_for 20 test -s "$T/ctl/docketd.port"
    PORT=$(cat "$T/ctl/docketd.port")
    echo "$PORT" >"$T/port"
}

start_agent() { # a|b
    local n=$1
    "$B/src/agent/docket-node" --controller "http://127.0.0.1:$PORT" --join-token "$JOIN" \
        --name "$PREFIX-$n" --gpus 8xH100-80GB --cpus 16 --mem 64G --label "zone=$n" \
        --state-dir "$T/agent-$n" --usage-interval 1s --log-file "$T/agent-$n.log" 2>>"$T/agent-$n.err" &
    echo $! >"$T/agent-$n.pid"
}

kill_pidfile() { # FILE: SIGTERM, then SIGKILL after 30 s (common.bash)
    local pid
    pid=$(cat "$1" 2>/dev/null) || return 0
    docket_stop_pid "$pid"
}

node_up() { # NAME
    [[ $(capi GET "/v1/nodes/$1" | jq -r '.node.state') == UP ]]
}

submit() { # JSON fields merged over the defaults; prints the id
    local body
    body=$(jq -c -n --argjson extra "$1" --arg wd "$W" \
        '{project: "lo", tier: "low", class: "experiment", user: "nobody", workdir: $wd,
          cpus: 1, time_limit: "5m"} + $extra')
    capi POST /v1/jobs -d "$body" | jq -r '.job.id'
}

job() { capi GET "/v1/jobs/$1"; }
state() { job "$1" | jq -r '.job.state'; }
state_is() { # ID STATE...
    local s
    s=$(state "$1")
    shift
    for want in "$@"; do [[ $s == "$want" ]] && return 0; done
    return 1
}
logs() { capi GET "/v1/jobs/$1/logs?stream=${2:-stdout}"; }

alive() { # PID: running, not a zombie
    [[ -r /proc/$1/stat ]] || return 1
    local st
    st=$(awk '{sub(/.*\) /, ""); print $1}' "/proc/$1/stat" 2>/dev/null)
    [[ -n $st && $st != Z && $st != X ]]
}

setup_file() {
    [[ $(id -u) == 0 ]] || skip "needs root for cgroups"
    [[ -x $B/src/controller/docketd && -x $B/src/agent/docket-node ]] || skip "docketd or docket-node not built"
    export T W PREFIX
    T=$(mktemp -d /tmp/docket-bats-agent.XXXXXX)
    W=$T/work
    mkdir -p "$W" && chmod 1777 "$W" && chmod 0755 "$T"
    PREFIX="bats$$"
    mkdir -p "$T/ctl"
    start_ctl
    export PORT TOKEN JOIN
    TOKEN=$(cat "$T/ctl/admin.token")
    capi POST /v1/policy -d '{"settings": {"min_runtime": "0s"},
        "projects": [{"name": "hi", "group": "g", "tier": "high"},
                     {"name": "lo", "group": "g", "tier": "low"}]}' >/dev/null
    JOIN=$(capi POST /v1/join-tokens -d '{"ttl": "1h"}' | jq -r '.join_token')
    [[ $JOIN == dkj_* ]]
    start_agent a
    start_agent b
    wait_for 20 node_up "$PREFIX-a"
    wait_for 20 node_up "$PREFIX-b"
}

teardown_file() {
    [[ -n ${T:-} && -d $T ]] || return 0
    kill_pidfile "$T/agent-a.pid"
    kill_pidfile "$T/agent-b.pid"
    kill_pidfile "$T/agent-h.pid"
    kill_pidfile "$T/agent-c.pid"
    kill_pidfile "$T/agent-r.pid"
    for n in ga1 gb1 ga2 gb2; do kill_pidfile "$T/agent-$n.pid"; done
    kill_pidfile "$T/ctl.pid"
    # supervisors outlive their agent by design: end them (and their jobs) by pid
    end_supervisors "$T"
    # a spare removes its own group once its agent is gone: give it a moment
    wait_for 10 bash -c "! compgen -G '/sys/fs/cgroup/freezer/docket/$PREFIX-*/spare_*' >/dev/null" || true
    sweep_cgroups "$PREFIX" a b h c r ga1 gb1 ga2 gb2
    # a sanitizer report from any agent (ASan, LSan at exit, UBSan) fails the file
    local bad=0
    agents_sane "$T" || bad=1
    rm -rf "$T"
    return $bad
}

@test "a job runs: its output, exit code and usage come back" {
    id=$(submit '{"command": ["sh", "-c", "echo hello; echo oops >&2; exit 3"]}')
    wait_for 20 state_is "$id" FAILED COMPLETED
    run job "$id"
    [[ $(jq -r '.job.state' <<<"$output") == FAILED ]]
    [[ $(jq -r '.job.exit.kind' <<<"$output") == code ]]
    [[ $(jq -r '.job.exit.code' <<<"$output") == 3 ]]
    wait_for 10 bash -c "[[ \$(curl -s -H 'Authorization: Bearer $TOKEN' 'http://127.0.0.1:$PORT/v1/jobs/$id/logs?stream=stdout') == hello ]]"
    [[ $(logs "$id" stderr) == oops ]]
    # usage measured by the job's cgroup: CPU time and peak memory
    id2=$(submit '{"command": ["sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"]}')
    wait_for 60 state_is "$id2" COMPLETED
    run job "$id2"
    [[ $(jq -r '.job.usage.cpu_ms' <<<"$output") -ge 20 ]]
    [[ $(jq -r '.job.usage.max_rss_mb' <<<"$output") -ge 1 ]]
}

@test "the environment carries the job, the project, the tier and the GPU binding" {
    id=$(submit '{"gpus": 2, "gpu_type": "H100-80GB", "env": {"EPOCHS": "90"}, "command": ["sh", "-c",
        "echo $DOCKET_JOB_ID $DOCKET_PROJECT $DOCKET_TIER $EPOCHS $DOCKET_NODELIST; echo $CUDA_VISIBLE_DEVICES; echo $NVIDIA_VISIBLE_DEVICES; echo $DOCKET_GPUS; id -un"]}')
    wait_for 20 state_is "$id" COMPLETED
    wait_for 10 bash -c "[[ \$(curl -s -H 'Authorization: Bearer $TOKEN' 'http://127.0.0.1:$PORT/v1/jobs/$id/logs' | wc -l) -ge 5 ]]"
    run logs "$id"
    node=$(job "$id" | jq -r '.job.allocation[0].node')
    gpus=$(job "$id" | jq -r '.job.allocation[0].gpus | map(tostring) | join(",")')
    [[ ${lines[0]} == "$id lo low 90 $node" ]]
    [[ ${lines[1]} == "$gpus" && ${lines[2]} == "$gpus" && ${lines[3]} == "$gpus" ]]
    [[ $(tr ',' '\n' <<<"${lines[1]}" | wc -l) == 2 ]]
    [[ ${lines[4]} == nobody ]]
}

@test "a secret reaches the job's environment (through a spare supervisor) and no file of the agent" {
    local v='agent-s3cr3t-91d2' h
    capi PUT /v1/projects/lo/secrets/API_KEY -d "{\"value\": \"$v\"}" | jq -e '.secret.name' >/dev/null
    id=$(submit "{\"secrets\": [\"API_KEY\"], \"command\": [\"sh\", \"-c\",
        \"printf %s \\\"\$API_KEY\\\" | sha256sum | cut -c1-64 >$W/secret-$$\"]}")
    wait_for 20 state_is "$id" COMPLETED
    h=$(printf %s "$v" | sha256sum | cut -c1-64)
    [[ $(cat "$W/secret-$$") == "$h" ]]
    if grep -rqF -- "$v" "$T/agent-a" "$T/agent-b" "$T"/agent-*.log "$T/ctl"; then
        echo "the secret's value is in: $(grep -rlF -- "$v" "$T"/agent-* "$T/ctl")" >&2
        return 1
    fi
}

@test "two 4-GPU jobs on one 8-GPU node get disjoint CUDA_VISIBLE_DEVICES" {
    a=$(submit '{"gpus": 4, "selectors": {"zone": "a"}, "command": ["sh", "-c", "echo $CUDA_VISIBLE_DEVICES; sleep 2"]}')
    b=$(submit '{"gpus": 4, "selectors": {"zone": "a"}, "command": ["sh", "-c", "echo $CUDA_VISIBLE_DEVICES; sleep 2"]}')
    wait_for 20 state_is "$a" RUNNING COMPLETED
    wait_for 20 state_is "$b" RUNNING COMPLETED
    [[ $(job "$a" | jq -r '.job.allocation[0].node') == "$PREFIX-a" ]]
    [[ $(job "$b" | jq -r '.job.allocation[0].node') == "$PREFIX-a" ]]
    wait_for 20 state_is "$a" COMPLETED
    wait_for 20 state_is "$b" COMPLETED
    ga=$(logs "$a")
    gb=$(logs "$b")
    [[ $(tr ',' '\n' <<<"$ga" | wc -l) == 4 && $(tr ',' '\n' <<<"$gb" | wc -l) == 4 ]]
    # no index in both
    [[ -z $(comm -12 <(tr ',' '\n' <<<"$ga" | sort) <(tr ',' '\n' <<<"$gb" | sort)) ]]
}

@test "a job over its memory limit is killed and reported as oom" {
    id=$(submit '{"mem": "64M", "command": ["sh", "-c", "head -c 400000000 /dev/zero | tail -n 1 >/dev/null"]}')
    wait_for 30 state_is "$id" FAILED COMPLETED
    [[ $(job "$id" | jq -r '.job.exit.kind') == oom ]]
    [[ $(state "$id") == FAILED ]]
}

@test "a time limit ends a job as TIMEOUT" {
    # `sleep 100` outlives any deadline here: a job that ends before it did not end by
    # its command, and TIMEOUT says its limit ended it
    id=$(submit '{"time_limit": "2s", "command": ["sleep", "100"]}')
    wait_for 90 state_is "$id" TIMEOUT FAILED COMPLETED
    [[ $(state "$id") == TIMEOUT ]]
    # its own record: the limit's signal ended it (SIGTERM, the job's signal), not its
    # command, which exits 0 after 100 s
    job "$id" | jq -e '.job.exit.kind == "signal" and .job.exit.code == 15' >/dev/null ||
        { job "$id" | jq -c '.job | {start_ms, end_ms, exit}'; false; }
}

@test "cancel kills a job and the daemon it double-forked; nothing survives" {
    id=$(submit "{\"command\": [\"sh\", \"-c\", \"setsid sh -c 'sleep 1000 & echo \$! > $W/daemon.\$DOCKET_JOB_ID' & sleep 1000\"]}")
    wait_for 20 test -s "$W/daemon.$id"
    dpid=$(cat "$W/daemon.$id")
    alive "$dpid"
    capi POST "/v1/jobs/$id/cancel" -d '{"reason": "test"}' >/dev/null
    wait_for 60 state_is "$id" CANCELLED
    ! alive "$dpid" || false
    node=$(job "$id" | jq -r '.job.allocation[0].node // empty')
    [[ ! -d /sys/fs/cgroup/freezer/docket/$node/job_$id ]]
    [[ ! -d /sys/fs/cgroup/memory/docket/$node/job_$id ]]
}

@test "preemption: checkpoint signal to the whole tree, exact grace, kill, requeue, runs again" {
    # the victim's leader and its child both trap USR1 and keep running through the grace;
    # its second run (after the requeue) just completes
    cat >"$W/victim.sh" <<'EOF'
#!/bin/sh
f=$DOCKET_WORK/victim.$DOCKET_JOB_ID
echo start >>"$f"
[ "$(grep -c start "$f")" -ge 2 ] && exit 0
trap 'echo leader $(date +%s.%N) >>"$f"' USR1
(trap 'echo child >>"$f"' USR1; while :; do sleep 0.05; done) &
while :; do sleep 0.05; done
EOF
    chmod 755 "$W/victim.sh"
    victim=$(submit "$(jq -c -n --arg w "$W" '{project: "lo", tier: "low", class: "training", gpus: 8,
        selectors: {zone: "b"}, signal: "USR1", grace: "2s", checkpoint: true, requeue: true,
        env: {DOCKET_WORK: $w}, command: ["/bin/sh", ($w + "/victim.sh")]}')")
    wait_for 20 state_is "$victim" RUNNING
    wait_for 10 grep -q start "$W/victim.$victim"
    sleep 0.5
    t0=$(date +%s.%N)
    hi=$(submit '{"project": "hi", "tier": "high", "class": "experiment", "gpus": 8, "selectors": {"zone": "b"}, "command": ["sleep", "1"]}')
    wait_for 60 grep -q leader "$W/victim.$victim"
    wait_for 60 grep -q child "$W/victim.$victim"
    tsig=$(awk '/^leader/ {print $2; exit}' "$W/victim.$victim")
    # the signal reached the job after the high submit (how soon is a benchmark's
    # question: bench/agent/preemption.sh)
    awk -v a="$t0" -v b="$tsig" 'BEGIN { exit !(b >= a) }'
    wait_for 60 state_is "$hi" RUNNING COMPLETED
    # the grace was kept: in the victim's own record, 2 s or more from STOPPING (the
    # signal sent) to its end, the state change out of STOPPING (not the kill, which is an
    # event from STOPPING too, at the grace's end by the core's clock; a lower bound, true
    # at any speed)
    grace_ms() {
        capi GET "/v1/jobs/$victim/events" | jq -e '([.events[] | select(.to == "STOPPING")][0].time_ms) as $s
            | [.events[] | select(.type == "state" and .from == "STOPPING")][0].time_ms - $s'
    }
    wait_for 60 grace_ms >/dev/null
    echo "grace kept: $(grace_ms) ms" >&3
    (($(grace_ms) >= 2000))
    wait_for 60 state_is "$hi" COMPLETED
    # requeued with the same id, ran again (second start line), and completed
    wait_for 30 state_is "$victim" COMPLETED || { job "$victim"; capi GET "/v1/jobs/$victim/explain"; false; }
    [[ $(grep -c start "$W/victim.$victim") == 2 ]]
    [[ $(job "$victim" | jq -r '.job.preempt_count') == 1 ]]
}

@test "kill -9 of the agent while a job runs: restarted, the job finishes and is reported once" {
    id=$(submit "{\"selectors\": {\"zone\": \"a\"}, \"command\": [\"sh\", \"-c\", \"echo run >> $W/once.\$DOCKET_JOB_ID; sleep 3; echo done\"]}")
    wait_for 20 state_is "$id" RUNNING
    kill -9 "$(cat "$T/agent-a.pid")"
    sleep 1
    state_is "$id" RUNNING
    start_agent a
    wait_for 30 state_is "$id" COMPLETED FAILED NODE_FAIL
    [[ $(state "$id") == COMPLETED ]]
    [[ $(grep -c run "$W/once.$id") == 1 ]]
    [[ $(capi GET "/v1/jobs/$id/events" | jq '[.events[] | select(.to == "COMPLETED")] | length') == 1 ]]
    wait_for 10 bash -c "curl -s -H 'Authorization: Bearer $TOKEN' 'http://127.0.0.1:$PORT/v1/jobs/$id/logs' | grep -qx done"
}

@test "kill -9 of the controller while jobs run: agents reconnect, jobs end in the right states" {
    ok=$(submit '{"selectors": {"zone": "a"}, "command": ["sh", "-c", "sleep 3; echo fine"]}')
    bad=$(submit '{"selectors": {"zone": "b"}, "command": ["sh", "-c", "sleep 3; exit 7"]}')
    wait_for 20 state_is "$ok" RUNNING
    wait_for 20 state_is "$bad" RUNNING
    kill -9 "$(cat "$T/ctl.pid")"
    sleep 4          # both jobs end while the controller is away
    start_ctl "$PORT"
    wait_for 30 state_is "$ok" COMPLETED FAILED NODE_FAIL
    wait_for 30 state_is "$bad" COMPLETED FAILED NODE_FAIL
    [[ $(state "$ok") == COMPLETED ]]
    [[ $(state "$bad") == FAILED ]]
    [[ $(job "$bad" | jq -r '.job.exit.code') == 7 ]]
    wait_for 20 node_up "$PREFIX-a"
    wait_for 20 node_up "$PREFIX-b"
    # and the cluster works afterwards
    id=$(submit '{"command": ["true"]}')
    wait_for 20 state_is "$id" COMPLETED
}

@test "a failing health check marks the node UNHEALTHY and a passing one brings it back" {
    printf '#!/bin/sh\n[ -e %s/sick ] && { echo disk on fire; exit 1; }\nexit 0\n' "$T" >"$T/health.sh"
    chmod +x "$T/health.sh"
    "$B/src/agent/docket-node" --controller "http://127.0.0.1:$PORT" --join-token "$JOIN" \
        --name "$PREFIX-h" --gpus 0 --state-dir "$T/agent-h" --health-check "$T/health.sh" \
        --health-interval 200ms --log-file "$T/agent-h.log" 2>>"$T/agent-h.err" &
    echo $! >"$T/agent-h.pid"
    wait_for 20 node_up "$PREFIX-h"
    touch "$T/sick"
    wait_for 20 bash -c "[[ \$(curl -s -H 'Authorization: Bearer $TOKEN' http://127.0.0.1:$PORT/v1/nodes/$PREFIX-h | jq -r .node.state) == UNHEALTHY ]]"
    [[ $(capi GET "/v1/nodes/$PREFIX-h" | jq -r '.node.reason') == "disk on fire" ]]
    rm "$T/sick"
    wait_for 20 node_up "$PREFIX-h"
    capi POST "/v1/nodes/$PREFIX-h/drain" -d '{"reason": "test over"}' >/dev/null   # no work for a stopped node
    kill_pidfile "$T/agent-h.pid"
}

@test "logs are shipped while the job runs, not only at its end" {
    id=$(submit '{"selectors": {"zone": "a"}, "command": ["sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10; do echo tick $i; sleep 0.3; done"]}')
    wait_for 20 state_is "$id" RUNNING
    wait_for 10 bash -c "curl -s -H 'Authorization: Bearer $TOKEN' 'http://127.0.0.1:$PORT/v1/jobs/$id/logs' | grep -q 'tick 2'"
    state_is "$id" RUNNING          # seen before the end
    wait_for 20 state_is "$id" COMPLETED
    wait_for 10 bash -c "[[ \$(curl -s -H 'Authorization: Bearer $TOKEN' 'http://127.0.0.1:$PORT/v1/jobs/$id/logs' | wc -l) == 10 ]]"
}

@test "agent and supervisor both killed: the restarted agent reclaims the job and reports it lost" {
    id=$(submit "{\"requeue\": false, \"selectors\": {\"zone\": \"a\"}, \"command\": [\"sh\", \"-c\", \"echo \$\$ > $W/lost.\$DOCKET_JOB_ID; sleep 1000\"]}")
    wait_for 20 state_is "$id" RUNNING
    wait_for 10 test -s "$W/lost.$id"
    jpid=$(cat "$W/lost.$id")
    wait_for 10 test -f "$T/agent-a/jobs/$id/state.json"
    sup=$(jq -r '.sup_pid' "$T/agent-a/jobs/$id/state.json")
    kill -9 "$(cat "$T/agent-a.pid")"
    kill -9 "$sup"
    alive "$jpid"                   # the job itself still runs, unsupervised
    start_agent a
    wait_for 30 state_is "$id" NODE_FAIL FAILED COMPLETED
    [[ $(state "$id") == NODE_FAIL ]]
    [[ $(job "$id" | jq -r '.job.exit.kind') == lost ]]
    wait_for 10 bash -c "! [[ -r /proc/$jpid/stat ]] || [[ \$(awk '{sub(/.*\\) /, \"\"); print \$1}' /proc/$jpid/stat) == Z ]]"
    [[ ! -d /sys/fs/cgroup/freezer/docket/$PREFIX-a/job_$id ]]
}

@test "a YAML config gives the name, GPUs and labels; flags win over it" {
    cat >"$T/node-c.yaml" <<YAML
controller: http://127.0.0.1:$PORT
join_token: $JOIN
name: from-yaml
gpus: 2xA100:40G
labels: {rack: r7, zone: c}
state_dir: $T/agent-c
YAML
    "$B/src/agent/docket-node" --config "$T/node-c.yaml" --name "$PREFIX-c" --log-file "$T/agent-c.log" 2>>"$T/agent-c.err" &
    echo $! >"$T/agent-c.pid"
    wait_for 20 node_up "$PREFIX-c"
    run capi GET "/v1/nodes/$PREFIX-c"
    [[ $(jq -r '.node.gpus' <<<"$output") == 2 ]]
    [[ $(jq -r '.node.gpu_type' <<<"$output") == A100 ]]
    [[ $(jq -r '.node.labels.rack' <<<"$output") == r7 ]]
    capi POST "/v1/nodes/$PREFIX-c/drain" -d '{"reason": "test over"}' >/dev/null
    kill_pidfile "$T/agent-c.pid"
    # a bad key is refused by name and nothing starts
    printf 'controller: http://127.0.0.1:1\ncolour: red\n' >"$T/bad.yaml"
    run "$B/src/agent/docket-node" --config "$T/bad.yaml"
    [[ $status == 2 && $output == *"unknown key 'colour'"* ]]
}

@test "--help lists the flags; bad flags are refused naming them" {
    run "$B/src/agent/docket-node" --help
    [[ $status == 0 ]]
    for f in --controller --join-token --join-token-file --name --gpus --cpus --mem --label \
             --state-dir --cgroup-root --allow-root-jobs --health-check --health-interval --config \
             --fence-margin --log-limit --job-pids-max --node-pids-reserve --job-mem-default \
             --max-queued-events; do
        [[ $output == *"$f"* ]]
    done
    run "$B/src/agent/docket-node" --controller http://127.0.0.1:1 --gpus lots
    [[ $status == 2 && $output == *"bad GPU declaration 'lots'"* ]]
    run "$B/src/agent/docket-node" --controller http://127.0.0.1:1 --label nokey
    [[ $status == 2 && $output == *"bad --label 'nokey'"* ]]
    run "$B/src/agent/docket-node" --controller ftp://x --state-dir "$T/agent-x"
    [[ $status == 2 && $output == *"bad controller URL 'ftp://x'"* ]]
    run "$B/src/agent/docket-node" --health-check /nonexistent --controller http://127.0.0.1:1
    [[ $status == 2 && $output == *"health check '/nonexistent' is not executable"* ]]
    run "$B/src/agent/docket-node" --controller http://127.0.0.1:1 --job-pids-max lots
    [[ $status == 2 && $output == *"bad --job-pids-max 'lots'"* ]]
    run "$B/src/agent/docket-node" --controller http://127.0.0.1:1 --node-pids-reserve "$(cat /proc/sys/kernel/pid_max)"
    [[ $status == 2 && $output == *"bad --node-pids-reserve"*"below this machine's pid_max"* ]]
    run "$B/src/agent/docket-node" --controller http://127.0.0.1:1 --log-limit 0
    [[ $status == 2 && $output == *"bad --log-limit '0'"* ]]
    run "$B/src/agent/docket-node" --controller http://127.0.0.1:1 --fence-margin 5ms
    [[ $status == 2 && $output == *"bad duration '5ms' for --fence-margin"* ]]
}

@test "a reclaim that cannot finish is reported and the node turns UNHEALTHY" {
    # a root job (this agent allows them) pins a sub-group of its own with a bind mount
    "$B/src/agent/docket-node" --controller "http://127.0.0.1:$PORT" --join-token "$JOIN" \
        --name "$PREFIX-r" --gpus 0 --label zone=r --allow-root-jobs --state-dir "$T/agent-r" \
        --log-file "$T/agent-r.log" 2>>"$T/agent-r.err" &
    echo $! >"$T/agent-r.pid"
    wait_for 20 node_up "$PREFIX-r"
    mkdir -p "$T/pin"
    id=$(submit "$(jq -c -n --arg p "$PREFIX-r" --arg src "$T/pin" '{user: "root", selectors: {zone: "r"},
        command: ["sh", "-c", ("g=/sys/fs/cgroup/freezer/docket/" + $p + "/job_$DOCKET_JOB_ID/inner; mkdir $g && mount --bind " + $src + " $g")]}')")
    wait_for 30 state_is "$id" COMPLETED FAILED
    inner=/sys/fs/cgroup/freezer/docket/$PREFIX-r/job_$id/inner
    wait_for 20 bash -c "[[ \$(curl -s -H 'Authorization: Bearer $TOKEN' http://127.0.0.1:$PORT/v1/nodes/$PREFIX-r | jq -r .node.state) == UNHEALTHY ]]" || { umount -l "$inner"; false; }
    reason=$(capi GET "/v1/nodes/$PREFIX-r" | jq -r '.node.reason')
    umount -l "$inner"
    [[ $reason == *"reclaim failed for job $id"* ]]
    grep -q "event=reclaim_failed job=$id" "$T/agent-r.log"
    capi POST "/v1/nodes/$PREFIX-r/drain" -d '{"reason": "test over"}' >/dev/null
    kill_pidfile "$T/agent-r.pid"
}

# gang_on_pinned_gb N: nodes gaN and gbN of their own (root jobs allowed) and a 2-node job on
# them (gang) whose rank on gb leaves a process in a frozen sub-group of its freezer group,
# which SIGKILL cannot end until it is thawed (thaw): gb's reclaim of it takes as long as
# the test wants. A job w for gb's 8 GPUs waits behind it; then the rank on ga ends it.
# The controller gives gb's GPUs to w at once (it frees the whole allocation when the
# first node ends and kills the other ranks): gb must hold w's start until the reclaim.
gang_on_pinned_gb() {
    local n
    GA=ga$1 GB=gb$1
    for n in $GA $GB; do
        "$B/src/agent/docket-node" --controller "http://127.0.0.1:$PORT" --join-token "$JOIN" \
            --name "$PREFIX-$n" --gpus 8xH100-80GB --label zone=$n --label pair=g --allow-root-jobs \
            --state-dir "$T/agent-$n" --log-file "$T/agent-$n.log" 2>>"$T/agent-$n.err" &
        echo $! >"$T/agent-$n.pid"
    done
    wait_for 20 node_up "$PREFIX-$GA"
    wait_for 20 node_up "$PREFIX-$GB"
    rm -f "$T/pinned" "$T/go"
    local inner_of="/sys/fs/cgroup/freezer/docket/$PREFIX-$GB/job_\$DOCKET_JOB_ID/inner"
    gang=$(submit "$(jq -c -n --arg gb "$PREFIX-$GB" --arg inner "$inner_of" --arg t "$T" \
        '{user: "root", gpus: 8, nodes: 2, selectors: {pair: "g"}, command: ["sh", "-c",
          ("if [ \"$DOCKET_NODE\" = " + $gb + " ]; then mkdir " + $inner + " && sleep 1000 & " +
           "p=$!; sleep 0.1; echo $p > " + $inner + "/cgroup.procs && echo FROZEN > " + $inner +
           "/freezer.state && touch " + $t + "/pinned; exec sleep 1000; fi; " +
           "while [ ! -e " + $t + "/go ]; do sleep 0.05; done")]}')")
    wait_for 30 test -e "$T/pinned"
    inner=/sys/fs/cgroup/freezer/docket/$PREFIX-$GB/job_$gang/inner
    w=$(submit '{"gpus": 8, "selectors": {"zone": "'"$GB"'"}, "command": ["sh", "-c", "echo ran"]}')
    wait_for 10 state_is "$w" PENDING || { thaw; false; }
    touch "$T/go"
    wait_for 30 state_is "$gang" COMPLETED || { thaw; false; }
    wait_for 20 grep -q "event=launch_deferred job=$w" "$T/agent-$GB.log" || { thaw; false; }
}

thaw() { echo THAWED >"$inner/freezer.state" 2>/dev/null || true; }

gang_nodes_stop() {
    local n
    for n in $GA $GB; do
        capi POST "/v1/nodes/$PREFIX-$n/drain" -d '{"reason": "test over"}' >/dev/null
        kill_pidfile "$T/agent-$n.pid"
    done
}

@test "a gang's other rank still being reclaimed: a start given its GPUs waits for them, then runs" {
    gang_on_pinned_gb 1
    sleep 0.5
    state_is "$w" STARTING || { thaw; state "$w"; false; }
    thaw # the frozen process dies of its SIGKILL, the reclaim ends, w launches
    wait_for 30 state_is "$w" COMPLETED FAILED
    job "$w" | jq -e '.job.state == "COMPLETED" and .job.exit.code == 0' >/dev/null
    [[ $(logs "$w") == ran ]]
    # deferred ("launch_deferred ... still in use"), never refused
    ! grep -q "event=launch_refused job=$w" "$T/agent-$GB.log" || false
    gang_nodes_stop
}

@test "a start waiting for its GPUs and cancelled meanwhile never launches: CANCELLED" {
    gang_on_pinned_gb 2
    capi POST "/v1/jobs/$w/cancel" >/dev/null
    wait_for 10 state_is "$w" CANCELLED || { thaw; state "$w"; false; }
    grep -q "event=launch_dropped job=$w" "$T/agent-$GB.log" || { thaw; false; }
    thaw
    wait_for 20 bash -c "[[ ! -d /sys/fs/cgroup/freezer/docket/$PREFIX-$GB/job_$gang ]]"
    sleep 0.3
    ! grep -q "event=job_started job=$w" "$T/agent-$GB.log" || false
    gang_nodes_stop
}
