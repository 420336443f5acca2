# sweep.bash - what a system test's teardown ends after its agents are stopped: the
# supervisors that outlive their agent by design, the cgroups of the test's nodes (with a
# job's own nested group, frozen or mounted over by a hostile job), and the verdict on the
# agents' sanitizer reports. Sourced by common.bash and cluster.bash.

# end_supervisors DIR: kill -9 the supervisor of every run under DIR/agent-*/jobs that has
# not ended (no final.json, state not "exited")
end_supervisors() {
    local f pid
    for f in "$1"/agent-*/jobs/*/state.json; do
        [[ -f $f && ! -f ${f%/*}/final.json ]] || continue
        [[ $(jq -r '.state' "$f") != exited ]] || continue
        pid=$(jq -r '.sup_pid // 0' "$f")
        [[ $pid -gt 0 ]] && kill -9 "$pid" 2>/dev/null
    done
    return 0
}

# sweep_cgroups PREFIX NODE...: end every process left in the nodes' job groups (v1
# controllers and the v2 tree) and remove the groups
sweep_cgroups() {
    local prefix=$1 n c d g
    shift
    for n in "$@"; do
        for c in memory cpu cpuacct pids freezer devices blkio ""; do
            d=/sys/fs/cgroup/${c:+$c/}docket/$prefix-$n
            [[ -d $d ]] || continue
            for g in "$d"/job_*; do
                [[ -d $g ]] || continue
                if [[ -d $g/inner ]]; then # a job's own group: thawed, emptied, unmounted
                    { [[ ! -f $g/inner/freezer.state ]] || echo THAWED >"$g/inner/freezer.state"
                      xargs -r kill -9 <"$g/inner/cgroup.procs"
                      umount -l "$g/inner"
                      rmdir "$g/inner" || { sleep 0.2; rmdir "$g/inner"; }; } 2>/dev/null
                fi
                xargs -r kill -9 <"$g/cgroup.procs" 2>/dev/null
                # a process killed just now leaves the group busy until it is reaped
                rmdir "$g" 2>/dev/null || { sleep 0.2; rmdir "$g" 2>/dev/null; }
            done
            rmdir "$d" 2>/dev/null
        done
    done
    return 0
}

# agents_sane DIR: fails (printing the reports) when an agent's stderr under DIR has a
# sanitizer report (ASan, LSan at exit, UBSan)
agents_sane() {
    local pat='ERROR: (Address|Leak)Sanitizer|runtime error:'
    grep -q -E "$pat" "$1"/agent-*.err 2>/dev/null || return 0
    grep -h -A20 -E "$pat" "$1"/agent-*.err | head -60
    return 1
}
