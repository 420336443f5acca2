# lib.sh - shared by the agent benchmarks: start docketd and docket-node from a build on
# loopback (AGENT_FLAGS adds flags to docket-node, e.g. --no-spare), talk to docketd with
# curl (the port chosen by the kernel), stop what was
# started by pid. Sourced, not run. Needs root (the agent makes cgroups).
B=${DOCKET_BUILD:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build}
T=$(mktemp -d /tmp/docket-bench-agent.XXXXXX)
W=$T/work
mkdir -p "$W" "$T/ctl" && chmod 1777 "$W" && chmod 0755 "$T"
PIDS=()
NODE=bench$$

api() { # METHOD PATH [curl args]
    local m=$1 p=$2
    shift 2
    curl -sS -X "$m" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
        "http://127.0.0.1:$PORT$p" "$@"
}

now_us() { echo "${EPOCHREALTIME/./}"; }

cluster_start() { # AGENT FLAGS...
    "$B/src/controller/docketd" --state-dir "$T/ctl" --listen 127.0.0.1:0 --socket - \
        --log-level warn --log-file "$T/ctl.log" --max-array-tasks 10000 &
    PIDS+=($!)
    until [[ -s $T/ctl/docketd.port ]]; do sleep 0.05; done
    PORT=$(cat "$T/ctl/docketd.port")
    until curl -sf -o /dev/null "http://127.0.0.1:$PORT/healthz"; do sleep 0.05; done
    TOKEN=$(cat "$T/ctl/admin.token")
    api POST /v1/policy -d '{"settings": {"min_runtime": "0s"},
        "projects": [{"name": "hi", "group": "g", "tier": "high", "max_queued": -1, "max_running": -1},
                     {"name": "lo", "group": "g", "tier": "low", "max_queued": -1, "max_running": -1}]}' >/dev/null
    JOIN=$(api POST /v1/join-tokens -d '{"ttl": "1h"}' | jq -r '.join_token')
    "$B/src/agent/docket-node" --controller "http://127.0.0.1:$PORT" --join-token "$JOIN" \
        --name "$NODE" --state-dir "$T/agent" --log-level warn --log-file "$T/agent.log" "$@" \
        ${AGENT_FLAGS:-} &
    PIDS+=($!)
    until [[ $(api GET "/v1/nodes/$NODE" | jq -r '.node.state') == UP ]]; do sleep 0.05; done
}

cluster_stop() {
    set +e
    local pid
    for pid in "${PIDS[@]}"; do
        kill "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    # supervisors outlive their agent by design: end any still running, by pid
    for f in "$T"/agent/jobs/*/state.json; do
        [[ -f $f && ! -f ${f%/*}/final.json ]] || continue
        pid=$(jq -r '.sup_pid' "$f")
        [[ $pid -gt 0 ]] && kill -9 "$pid" 2>/dev/null
    done
    for c in memory cpu cpuacct pids freezer; do
        for g in /sys/fs/cgroup/$c/docket/$NODE/job_*; do
            [[ -d $g ]] || continue
            xargs -r kill -9 <"$g/cgroup.procs" 2>/dev/null
            sleep 0.05
            rmdir "$g" 2>/dev/null
        done
        rmdir "/sys/fs/cgroup/$c/docket/$NODE" 2>/dev/null
    done
    rm -rf "$T"
}
trap cluster_stop EXIT

# busybox_image LAYOUT TAG: an OCI image layout at LAYOUT holding TAG, a rootfs of
# busybox-static with `echo` (umoci, no network), readable by the jobs' users
busybox_image() {
    local img=$1 tag=$2
    umoci init --layout "$img"
    umoci new --image "$img:$tag"
    umoci unpack --image "$img:$tag" "$T/bundle" >/dev/null
    mkdir -p "$T/bundle/rootfs/bin"
    cp "$(command -v busybox)" "$T/bundle/rootfs/bin/busybox"
    ln -s busybox "$T/bundle/rootfs/bin/echo"
    umoci repack --image "$img:$tag" "$T/bundle" >/dev/null
    chmod -R a+rX "$img"
}

# Percentile P (0..100) of the numbers on stdin (nearest rank).
pct() {
    sort -n | awk -v p="$1" '{ v[NR] = $1 } END { i = int((p / 100) * NR + 0.999999); if (i < 1) i = 1; print v[i] }'
}

machine() {
    echo "machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(. /etc/os-release; echo "$PRETTY_NAME"), kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
}
