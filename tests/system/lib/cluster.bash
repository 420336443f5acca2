# cluster.bash - a real docketd and two real docket-node agents with declared GPUs
# (8xH100-80GB each, zones a and b) on loopback, one cluster per bats file, for the files
# that drive the CLI end to end (cli.bats, slurm.bats). Every process it starts is stopped
# by pid in cluster_stop, with the job supervisors the agents leave and their cgroups.
#
# Use:   CLUSTER_NAME=name; load lib/cluster; AGENT_EXTRA=(extra agent flags)
#        CLUSTER_NODES: the agents to start (default "a b"; each is node PREFIX-LETTER)
#        AGENT_GPUS_a, AGENT_GPUS_b: node a's, b's --gpus (default 8xH100-80GB);
#        AGENT_LABELS_a, AGENT_LABELS_b: more --label KEY=VALUE words for node a, b
#        AGENT_UTIL_FILES=1: each agent declares its GPUs' utilisation from the file
#        $T/gpu-util-a or -b (--declared-gpu-util-file; write a number 0..100 into it)
#        DOCKETD_EXTRA=(extra docketd flags: they come last, so they override)
#        DOCKET_TEST_PG=1: docketd keeps its state in a PostgreSQL of the cluster's own
#        (scripts/pg-test.sh start; its DSN in $T/pg.dsn), stopped in cluster_stop
#        setup_file() { cluster_start; }   teardown_file() { cluster_stop; }
# ctl_start PORT and agent_start a|b JOIN start one again after a stop (kill_pidfile).
# Sets: DOCKET, DOCKETD_BIN, AGENT_BIN; after cluster_start T (temp dir), W (work dir),
# PREFIX (node names PREFIX-a, PREFIX-b), PORT, TOKEN, DOCKET_URL (the unix socket).

CLUSTER_NAME=${CLUSTER_NAME:-cluster}
CLUSTER_NODES=${CLUSTER_NODES:-a b}
DOCKET_BUILD=${DOCKET_BUILD:-$BATS_TEST_DIRNAME/../../build}
DOCKET=$DOCKET_BUILD/src/cli/docket
DOCKETD_BIN=$DOCKET_BUILD/src/controller/docketd
AGENT_BIN=$DOCKET_BUILD/src/agent/docket-node

# wait_for: lib/wait.bash
source "${BASH_SOURCE[0]%/*}/wait.bash"
# end_supervisors, sweep_cgroups: lib/sweep.bash
source "${BASH_SOURCE[0]%/*}/sweep.bash"
# capi: lib/capi.bash
source "${BASH_SOURCE[0]%/*}/capi.bash"

# cluster_start: docketd on 127.0.0.1:0 + its socket, two agents (8xH100-80GB each).
cluster_start() {
    export T W PREFIX DOCKET_URL PORT TOKEN
    T=$(mktemp -d "/tmp/docket-bats-$CLUSTER_NAME.XXXXXX")
    W=$T/work
    PREFIX="$CLUSTER_NAME$$"
    mkdir -p "$T/ctl" "$W"
    chmod 0755 "$T"
    if [[ -n ${DOCKET_TEST_PG:-} ]]; then
        PG_TEST_OPTS="-c fsync=off" "$BATS_TEST_DIRNAME/../../scripts/pg-test.sh" start >"$T/pg.dsn"
    fi
    ctl_start 0
    PORT=$(cat "$T/ctl/docketd.port")
    TOKEN=$(cat "$T/ctl/admin.token")
    DOCKET_URL=unix:$T/ctl/docketd.sock
    local join
    join=$("$DOCKET" token join)
    [[ $join == dkj_* ]]
    local n nodes=($CLUSTER_NODES)
    for n in "${nodes[@]}"; do agent_start "$n" "$join"; done
    wait_for 30 nodes_up "${#nodes[@]}"
}

ctl_start() { # PORT: docketd on $T/ctl (0: any port; after a stop, $PORT again)
    local db=()
    [[ ! -s $T/pg.dsn ]] || db=(--db "$(cat "$T/pg.dsn")")
    rm -f "$T/ctl/docketd.port"
    "$DOCKETD_BIN" --state-dir "$T/ctl" --listen "127.0.0.1:$1" --socket "$T/ctl/docketd.sock" \
        --heartbeat-wait 2s --node-timeout 30s --log-file "$T/ctl.log" "${db[@]}" \
        "${DOCKETD_EXTRA[@]}" &
    echo $! >"$T/ctl.pid"
    wait_for 20 test -s "$T/ctl/docketd.port"
    wait_for 20 test -S "$T/ctl/docketd.sock"
    # on PostgreSQL the listener opens before the state is loaded (a standby answers 503
    # from it until it leads): ready once /healthz says so
    wait_for 60 curl -sf -o /dev/null "http://127.0.0.1:$(cat "$T/ctl/docketd.port")/healthz"
}

agent_start() { # a|b JOIN (AGENT_EXTRA_a, AGENT_EXTRA_b: more flags for one agent, split on spaces)
    local cg=() util=() own=AGENT_EXTRA_$1
    local gpus_var="AGENT_GPUS_$1" labels_var="AGENT_LABELS_$1" labels=() l
    for l in ${!labels_var:-}; do labels+=(--label "$l"); done
    [[ $(id -u) == 0 ]] || cg=(--no-cgroups)
    [[ -z ${AGENT_UTIL_FILES:-} ]] || util=(--declared-gpu-util-file "$T/gpu-util-$1")
    "$AGENT_BIN" --controller "http://127.0.0.1:$PORT" --join-token "$2" \
        --name "$PREFIX-$1" --gpus "${!gpus_var:-8xH100-80GB}" --cpus 16 --mem 64G \
        --label "zone=$1" "${labels[@]}" \
        --state-dir "$T/agent-$1" --allow-root-jobs --usage-interval 1s \
        --log-file "$T/agent-$1.log" "${AGENT_EXTRA[@]}" ${!own:-} "${cg[@]}" "${util[@]}" &
    echo $! >"$T/agent-$1.pid"
}

nodes_up() { # N: at least N nodes UP
    local n
    n=$("$DOCKET" nodes --json 2>/dev/null | jq '[.nodes[] | select(.state == "UP")] | length')
    [[ ${n:-0} -ge $1 ]]
}

kill_pidfile() { # FILE
    local pid
    pid=$(cat "$1" 2>/dev/null) || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    wait_for 10 bash -c "! kill -0 $pid 2>/dev/null" || kill -9 "$pid" 2>/dev/null || true
}

# cluster_stop: agents, controller, then the job supervisors the agents left (they
# outlive an agent by design), their cgroups, and the temp dir.
cluster_stop() {
    [[ -n ${T:-} && -d $T ]] || return 0
    local n
    for n in $CLUSTER_NODES; do kill_pidfile "$T/agent-$n.pid"; done
    kill_pidfile "$T/ctl.pid"
    [[ ! -s $T/pg.dsn ]] || "$BATS_TEST_DIRNAME/../../scripts/pg-test.sh" stop "$(cat "$T/pg.dsn")"
    end_supervisors "$T"
    sweep_cgroups "$PREFIX" $CLUSTER_NODES
    rm -rf "$T"
}

# The state of job ID.
job_state() {
    "$DOCKET" show "$1" --json | jq -r .job.state
}

state_in() { # ID STATE...
    local s
    s=$(job_state "$1")
    shift
    for want in "$@"; do [[ $s == "$want" ]] && return 0; done
    return 1
}

# ctl_get PATH: the body of GET PATH as the admin, over TCP (what a scraper sees).
ctl_get() {
    curl -sf -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT$1"
}

# requeued ID: the job went back to PENDING at least once since its submission.
requeued() {
    [[ $("$DOCKET" show "$1" --json | jq '[.events[] | select(.to == "PENDING")] | length') -ge 2 ]]
}

# /metrics against the API (metrics.bats, alerts.bats)

# docket_jobs as "STATE TIER PROJECT N" lines, sorted
metrics_jobs() {
    ctl_get /metrics | sed -nE 's/^docket_jobs\{state="([^"]*)",tier="([^"]*)",project="([^"]*)"\} ([0-9]+)$/\1 \2 \3 \4/p' |
        awk '$4 > 0' | sort
}

api_jobs() {
    ctl_get '/v1/jobs?state=active&limit=10000' |
        jq -r '.jobs | group_by([.state, .tier, .project])[] | "\(.[0].state) \(.[0].tier) \(.[0].project) \(length)"' |
        sort
}

# the per-node gauges as "NODE GPUS GPUS_BUSY JOBS" lines, and the same from /v1/nodes
metrics_nodes() {
    local m
    m=$(ctl_get /metrics)
    jq -r '.nodes[].name' <<<"$(ctl_get /v1/nodes)" | sort | while read -r n; do
        printf '%s %s %s %s\n' "$n" \
            "$(sed -nE "s/^docket_node_gpus\{node=\"$n\"\} ([0-9]+)$/\1/p" <<<"$m")" \
            "$(sed -nE "s/^docket_node_gpus_busy\{node=\"$n\"\} ([0-9]+)$/\1/p" <<<"$m")" \
            "$(sed -nE "s/^docket_node_jobs\{node=\"$n\"\} ([0-9]+)$/\1/p" <<<"$m")"
    done
}

api_nodes() {
    ctl_get /v1/nodes | jq -r '.nodes | sort_by(.name)[] | "\(.name) \(.gpus) \(.gpus_used) \(.jobs | length)"'
}

# agrees: /metrics counts the jobs (by state, tier, project) and each node's GPUs and jobs
# as the API lists them
agrees() {
    local a b
    a=$(metrics_jobs)
    b=$(api_jobs)
    [[ $a == "$b" ]] || { printf 'metrics:\n%s\napi:\n%s\n' "$a" "$b"; return 1; }
    a=$(metrics_nodes)
    b=$(api_nodes)
    [[ $a == "$b" ]] || { printf 'metrics:\n%s\napi:\n%s\n' "$a" "$b"; return 1; }
}
