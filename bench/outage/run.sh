#!/usr/bin/env bash
# run.sh [BUILD_DIR] - the controller outage benchmark (issue 32, docs/agent.md "Fencing
# and leases"): a real docketd (node_timeout 60 s, the default) and two real docket-node
# agents with declared GPUs on loopback; JOBS (default 16) jobs that write a line a second
# for RUN_S (default OUTAGE_S + 240) seconds; docketd stopped (SIGTERM) for OUTAGE_S
# (default 600: the issue's 10 minutes) once every job runs, then started again. Prints
# one line each, for bench/RESULTS.md "A controller outage":
#   stopped during the outage (a job whose supervisor ended while docketd was away),
#   restarted (jobs with more than one start event), not COMPLETED at the end, jobs whose
#   event list lacks start/running/COMPLETED, lines of output lost (RUN_S per job expected),
#   and the agents' controller_silent lines (proof that the outage passed node_timeout).
# LEASE=DUR applies that lease to the jobs' class (experiment) first: LEASE=0s is the node
# timeout's lease, what every job had before leases (the comparison in RESULTS.md).
# Use a release build: meson setup build-r --buildtype=release && ninja -C build-r.
set -euo pipefail
B=${1:-build-r}
JOBS=${JOBS:-16}
OUTAGE_S=${OUTAGE_S:-600}
RUN_S=${RUN_S:-$((OUTAGE_S + 240))}
T=$(mktemp -d /tmp/docket-bench-outage.XXXXXX)
DOCKET=$B/src/cli/docket
pids=()
cleanup() {
    local p
    for p in "${pids[@]}" $(cat "$T/ctl.pid" 2>/dev/null); do kill "$p" 2>/dev/null || true; done
    for f in "$T"/agent-*/jobs/*/state.json; do
        [[ -f $f ]] && kill -9 "$(jq -r '.sup_pid // 0' "$f")" 2>/dev/null || true
    done
    for g in /sys/fs/cgroup/*/docket/outage$$-*/job_*; do # what the supervisors left
        [[ -d $g ]] || continue
        xargs -r kill -9 <"$g/cgroup.procs" 2>/dev/null || true
        rmdir "$g" 2>/dev/null || true
    done
    rmdir /sys/fs/cgroup/*/docket/outage$$-* 2>/dev/null || true
    rm -rf "$T"
}
trap cleanup EXIT
ctl_start() { # PORT
    "$B/src/controller/docketd" --state-dir "$T/ctl" --listen "127.0.0.1:$1" \
        --socket "$T/ctl/docketd.sock" --log-file "$T/ctl.log" &
    echo $! >"$T/ctl.pid"
    for _ in $(seq 200); do [[ -S $T/ctl/docketd.sock && -s $T/ctl/docketd.port ]] && break; sleep 0.1; done
}
mkdir -p "$T/ctl"
ctl_start 0
PORT=$(cat "$T/ctl/docketd.port")
export DOCKET_URL=unix:$T/ctl/docketd.sock
join=$("$DOCKET" token join)
for n in a b; do
    "$B/src/agent/docket-node" --controller "http://127.0.0.1:$PORT" --join-token "$join" \
        --name "outage$$-$n" --gpus 8xH100-80GB --cpus 16 --mem 64G --state-dir "$T/agent-$n" \
        --allow-root-jobs --log-file "$T/agent-$n.log" &
    pids+=($!)
done
until [[ $("$DOCKET" nodes --json | jq '[.nodes[] | select(.state == "UP")] | length') == 2 ]]; do sleep 0.5; done
if [[ -n ${LEASE:-} ]]; then
    printf 'classes: [{name: training}, {name: experiment, lease: %s}, {name: exploration},\n  {name: interactive}, {name: service}]\n' \
        "$LEASE" >"$T/lease.yaml"
    "$DOCKET" apply -f "$T/lease.yaml" >/dev/null
fi
ids=()
for _ in $(seq "$JOBS"); do
    ids+=("$("$DOCKET" submit --json --gpus 1 -- sh -c "for i in \$(seq $RUN_S); do echo tick; sleep 1; done" | jq -r .job.id)")
done
for id in "${ids[@]}"; do
    until [[ $("$DOCKET" show "$id" --json | jq -r .job.state) == RUNNING ]]; do sleep 0.5; done
done
echo "$(date -u +%FT%TZ) $JOBS jobs running; docketd stopped for $OUTAGE_S s"
kill -TERM "$(cat "$T/ctl.pid")"
while kill -0 "$(cat "$T/ctl.pid")" 2>/dev/null; do sleep 0.2; done
sleep "$OUTAGE_S"
stopped=0
for id in "${ids[@]}"; do
    # a supervisor writes final.json when its job has ended (src/agent/supervisor.h)
    compgen -G "$T/agent-*/jobs/$id/final.json" >/dev/null && stopped=$((stopped + 1))
done
ctl_start "$PORT"
echo "$(date -u +%FT%TZ) docketd back; waiting for the jobs to end"
for id in "${ids[@]}"; do
    until "$DOCKET" show "$id" --json | jq -e '.job.state | test("COMPLETED|FAILED|NODE_FAIL|CANCELLED|TIMEOUT")' >/dev/null; do sleep 2; done
done
restarted=0 notdone=0 incomplete=0 lost_lines=0
for id in "${ids[@]}"; do
    j=$("$DOCKET" show "$id" --json)
    [[ $(jq '[.events[] | select(.type == "start")] | length' <<<"$j") -gt 1 ]] && restarted=$((restarted + 1))
    [[ $(jq -r .job.state <<<"$j") == COMPLETED ]] || notdone=$((notdone + 1))
    jq -e '([.events[] | .to] | index("STARTING") and index("RUNNING") and index("COMPLETED"))' <<<"$j" >/dev/null ||
        incomplete=$((incomplete + 1))
    got=$("$DOCKET" logs "$id" --run 1 | grep -c tick || true) # the first run's output
    lost_lines=$((lost_lines + RUN_S - got))
done
silent=$(cat "$T"/agent-*.log | grep -c event=controller_silent || true)
echo "outage ${OUTAGE_S} s${LEASE:+, lease $LEASE}, $JOBS jobs on 2 agents: stopped during the outage $stopped, restarted $restarted," \
    "not COMPLETED $notdone, events incomplete $incomplete, output lines lost $lost_lines," \
    "agents' controller_silent lines $silent"
