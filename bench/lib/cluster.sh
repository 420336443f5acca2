# cluster.sh - what the loopback cluster benchmarks share (bench/shell, bench/services): a
# real docketd and docket-node agents on a temporary state directory, started by the bench
# and stopped by pid at exit. Source it after setting B (the build directory) and NAME (a
# word for the temporary directory); it sets DOCKET, DOCKETD, AGENT, T and PIDS, and gives
# wait_for, ms, bench_docketd, bench_agents and bench_nodes_up. A bench that starts more
# than this adds its pids to PIDS, or defines bench_cleanup_more.
DOCKET=$B/src/cli/docket
DOCKETD=$B/src/controller/docketd
AGENT=$B/src/agent/docket-node
[[ -x $DOCKET && -x $DOCKETD && -x $AGENT ]] || { echo "build $B first (make build)" >&2; exit 1; }

T=$(mktemp -d "/tmp/docket-bench-$NAME.XXXXXX")
PIDS=()
NODES=()
# end_supervisors, sweep_cgroups: the system tests' teardown does the same
# shellcheck source=tests/system/lib/sweep.bash
. tests/system/lib/sweep.bash
bench_cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    if declare -F bench_cleanup_more >/dev/null; then bench_cleanup_more; fi
    # supervisors outlive their agent by design: end them and their jobs' groups
    end_supervisors "$T"
    ((${#NODES[@]} == 0)) || sweep_cgroups "bench$$" "${NODES[@]}"
    rm -rf "$T"
}
trap bench_cleanup EXIT

wait_for() { # SECONDS CMD...
    local deadline=$((SECONDS + $1))
    shift
    until "$@"; do ((SECONDS < deadline)) || return 1; sleep 0.05; done
}
ms() { date +%s%3N; }

# bench_docketd [DOCKETD FLAGS...]: docketd on loopback, PORT and DOCKET_URL set
bench_docketd() {
    mkdir -p "$T/ctl"
    "$DOCKETD" --state-dir "$T/ctl" --listen 127.0.0.1:0 --socket "$T/ctl/docketd.sock" \
        --heartbeat-wait 2s --log-level warn --log-file "$T/docketd.log" "$@" &
    PIDS+=($!)
    wait_for 20 test -S "$T/ctl/docketd.sock"
    wait_for 20 test -s "$T/ctl/docketd.port"
    PORT=$(cat "$T/ctl/docketd.port")
    export DOCKET_URL=unix:$T/ctl/docketd.sock
}

# bench_agents NAMES...: one agent per name (8 declared GPUs each), with the flags in
# AGENT_FLAGS_<name> if set; then waits until all of them are UP
bench_agents() {
    local join n extra cg=()
    join=$("$DOCKET" token join)
    [[ $(id -u) == 0 ]] || cg=(--no-cgroups)
    for n in "$@"; do
        extra="AGENT_FLAGS_$n"
        # shellcheck disable=SC2086 # the flags are words
        NODES+=("$n")
        "$AGENT" --controller "http://127.0.0.1:$PORT" --join-token "$join" --name "bench$$-$n" \
            --gpus 8xH100-80GB --cpus 16 --mem 64G --state-dir "$T/agent-$n" --allow-root-jobs \
            --log-level warn --log-file "$T/agent-$n.log" ${!extra:-} "${cg[@]}" &
        PIDS+=($!)
    done
    wait_for 30 bench_nodes_up "$#"
}

bench_nodes_up() { # COUNT
    [[ $("$DOCKET" nodes --json | jq '[.nodes[] | select(.state == "UP")] | length') == "$1" ]]
}
