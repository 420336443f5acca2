#!/usr/bin/env bats
# Gangs placed by switch (docs/scheduling.md §3, "Topology"), end to end: the real docketd
# and five real docket-node agents on loopback, labelled into two switches (sw-1: s1a,
# s1b; sw-2: s2a, s2b, s2c) and each by its own zone. The training class requires one
# switch (PATCH /v1/classes); a job of another class asks with Slurm's switches. Jobs run
# as root in a world-writable work dir. Every process started here is stopped by its pid
# in teardown_file, and every cgroup of the five nodes is removed. Needs root (cgroups).

bats_require_minimum_version 1.5.0

B=${DOCKET_BUILD:-$BATS_TEST_DIRNAME/../../build}
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
NODES=(s1a s1b s2a s2b s2c)

load lib/common

kill_pidfile() { # FILE
    local pid
    pid=$(cat "$1" 2>/dev/null) || return 0
    docket_stop_pid "$pid"
}

node_up() { [[ $(capi GET "/v1/nodes/$1" | jq -r '.node.state') == UP ]]; }

submit() { # JSON fields over the defaults; prints the id
    local body
    body=$(jq -c -n --argjson extra "$1" --arg wd "$W" \
        '{project: "lab", user: "root", workdir: $wd, gpus: 8, cpus: 1, time_limit: "5m",
          command: ["sleep", "1000"]} + $extra')
    capi POST /v1/jobs -d "$body" | jq -r '.job.id'
}

state() { capi GET "/v1/jobs/$1" | jq -r '.job.state'; }
reason_is() { [[ $(capi GET "/v1/jobs/$1" | jq -r '.job.reason') == "$2" ]]; }
state_is() { [[ $(state "$1") == "$2" ]]; }
cancel() { capi POST "/v1/jobs/$1/cancel" >/dev/null; }
gone() { state_is "$1" CANCELLED || state_is "$1" COMPLETED; }

# The switches of a job's nodes, sorted and unique, one a line.
switches_of() {
    local n
    for n in $(capi GET "/v1/jobs/$1" | jq -r '.job.allocation[].node'); do
        capi GET "/v1/nodes/$n" | jq -r '.node.labels.switch'
    done | sort -u
}

start_ctl() { # PORT (0: any; after a stop, the same again)
    rm -f "$T/ctl/docketd.port"
    "$B/src/controller/docketd" --state-dir "$T/ctl" --listen "127.0.0.1:$1" --socket - \
        --heartbeat-wait 2s --node-timeout 30s --log-file "$T/ctl.log" &
    echo $! >"$T/ctl.pid"
    wait_for 20 test -s "$T/ctl/docketd.port"
    PORT=$(cat "$T/ctl/docketd.port")
    wait_for 60 curl -sf -o /dev/null "http://127.0.0.1:$PORT/healthz"
}

setup_file() {
    [[ $(id -u) == 0 ]] || skip "needs root for cgroups"
    [[ -x $B/src/controller/docketd && -x $B/src/agent/docket-node ]] || skip "not built"
    export T W PREFIX PORT TOKEN
    T=$(mktemp -d /tmp/docket-bats-topo.XXXXXX)
    W=$T/work
    mkdir -p "$W" "$T/ctl" && chmod 1777 "$W" && chmod 0755 "$T"
    PREFIX="topo$$"
    start_ctl 0
    TOKEN=$(cat "$T/ctl/admin.token")
    capi POST /v1/policy -d '{"settings": {"min_runtime": "0s"},
        "projects": [{"name": "lab", "tier": "normal"}]}' >/dev/null
    capi PATCH /v1/classes/training -d '{"topology": {"level": "switch", "mode": "required"}}' |
        jq -e '.class.topology.mode == "required"' >/dev/null
    local join n
    join=$(capi POST /v1/join-tokens -d '{"ttl": "1h"}' | jq -r '.join_token')
    for n in "${NODES[@]}"; do
        "$B/src/agent/docket-node" --controller "http://127.0.0.1:$PORT" --join-token "$join" \
            --name "$PREFIX-$n" --gpus 8xH100-80GB --cpus 4 --mem 8G --label "zone=$n" \
            --label "switch=sw-${n:1:1}" --allow-root-jobs --state-dir "$T/agent-$n" \
            --log-file "$T/agent-$n.log" 2>>"$T/agent-$n.err" &
        echo $! >"$T/agent-$n.pid"
    done
    for n in "${NODES[@]}"; do wait_for 30 node_up "$PREFIX-$n"; done
}

teardown_file() {
    [[ -n ${T:-} && -d $T ]] || return 0
    local n bad=0
    for n in "${NODES[@]}"; do kill_pidfile "$T/agent-$n.pid"; done
    kill_pidfile "$T/ctl.pid"
    end_supervisors "$T"
    sweep_cgroups "$PREFIX" "${NODES[@]}"
    agents_sane "$T" || bad=1
    rm -rf "$T"
    return $bad
}

@test "a gang that requires one switch waits rather than split, and explain says why" {
    blocker=$(submit '{"class": "experiment", "selectors": {"zone": "s2a"}}')
    wait_for 60 state_is "$blocker" RUNNING
    # 4 nodes free, 2 under each switch: a 3-node training gang does not start
    gang=$(submit '{"class": "training", "nodes": 3}')
    wait_for 30 reason_is "$gang" Resources
    state_is "$gang" PENDING
    run -0 capi GET "/v1/jobs/$gang/explain"
    [[ $(jq -r .explain.sentence <<<"$output") == "waiting for 3 nodes under one switch: 2 free under sw-"* ]]
    jq -e '.explain.topology.mode == "required" and .explain.topology.best_free == 2' \
        <<<"$output" >/dev/null
    # a 2-node training gang that may run past the big gang's promised start on sw-2
    # (10 min against 5) starts under sw-1: backfill keeps the promise
    small=$(submit '{"class": "training", "nodes": 2, "time_limit": "10m",
                     "command": ["sh", "-c", "sleep 0.2"]}')
    wait_for 60 gone "$small"
    [[ $(state "$small") == COMPLETED ]]
    [[ $(switches_of "$small") == sw-1 ]]
    # the room comes under sw-2: the gang starts there, whole
    cancel "$blocker"
    wait_for 60 state_is "$gang" RUNNING
    [[ $(switches_of "$gang") == sw-2 ]]
    cancel "$gang"
    wait_for 60 gone "$gang"
}

@test "Slurm's switches asks one job for one switch; without it the gang spans two" {
    a=$(submit '{"class": "experiment", "selectors": {"zone": "s1a"}}')
    b=$(submit '{"class": "experiment", "selectors": {"zone": "s2a"}}')
    c=$(submit '{"class": "experiment", "selectors": {"zone": "s2b"}}')
    for j in "$a" "$b" "$c"; do wait_for 60 state_is "$j" RUNNING; done
    # free: s1b under sw-1, s2c under sw-2: a gang without a rule takes both
    any=$(submit '{"class": "experiment", "nodes": 2, "command": ["sh", "-c", "sleep 0.2"]}')
    wait_for 60 gone "$any"
    [[ $(switches_of "$any" | wc -l) == 2 ]]
    one=$(submit '{"class": "experiment", "nodes": 2, "switches": "1@10m"}')
    capi GET "/v1/jobs/$one" | jq -e '.job.switches == 1 and .job.switches_wait_ms == 600000' \
        >/dev/null
    wait_for 30 reason_is "$one" Resources
    state_is "$one" PENDING
    run -0 capi GET "/v1/jobs/$one/explain"
    [[ $(jq -r .explain.sentence <<<"$output") == "waiting for 2 nodes under one switch: 1 free under sw-"* ]]
    cancel "$b" # sw-2 has two free nodes now
    wait_for 60 state_is "$one" RUNNING
    [[ $(switches_of "$one") == sw-2 ]]
    for j in "$a" "$c" "$one"; do cancel "$j"; done
    for j in "$a" "$c" "$one"; do wait_for 60 gone "$j"; done
}

@test "a bad topology in a class or a bad switches value is refused, naming the field" {
    run -0 capi PATCH /v1/classes/training -d '{"topology": {"mode": "always"}}'
    jq -e '.error.field | test("topology")' <<<"$output" >/dev/null
    capi GET /v1/classes | jq -e '.classes[] | select(.name == "training") |
        .topology.mode == "required"' >/dev/null
    run -0 capi POST /v1/jobs -d '{"project": "lab", "command": ["true"], "nodes": 2,
        "switches": "two"}'
    jq -e '.error.field == "switches"' <<<"$output" >/dev/null
}

@test "a docketd restart keeps a job's switches and its class's rule" {
    a=$(submit '{"class": "experiment", "selectors": {"zone": "s1a"}}')
    b=$(submit '{"class": "experiment", "selectors": {"zone": "s2a"}}')
    c=$(submit '{"class": "experiment", "selectors": {"zone": "s2b"}}')
    for j in "$a" "$b" "$c"; do wait_for 60 state_is "$j" RUNNING; done
    one=$(submit '{"class": "experiment", "nodes": 2, "switches": "1@1h"}')
    gang=$(submit '{"class": "training", "nodes": 2}')
    wait_for 30 reason_is "$one" Resources
    wait_for 30 reason_is "$gang" Resources
    kill_pidfile "$T/ctl.pid"
    start_ctl "$PORT"
    for n in "${NODES[@]}"; do wait_for 60 node_up "$PREFIX-$n"; done
    wait_for 30 reason_is "$one" Resources
    state_is "$one" PENDING
    state_is "$gang" PENDING
    capi GET "/v1/jobs/$one/explain" | jq -e '.explain.topology.mode == "required"' >/dev/null
    capi GET "/v1/jobs/$gang/explain" | jq -e '.explain.topology.mode == "required"' >/dev/null
    capi GET "/v1/jobs/$one" | jq -e '.job.switches == 1 and .job.switches_wait_ms == 3600000' \
        >/dev/null
    for j in "$a" "$b" "$c" "$one" "$gang"; do cancel "$j"; done
    for j in "$a" "$b" "$c" "$one" "$gang"; do wait_for 60 gone "$j"; done
}
