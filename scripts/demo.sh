#!/usr/bin/env bash
# demo.sh - `make demo`: Docket on this machine in one command. Installs what is missing,
# builds, starts docketd and two docket-node agents with declared GPUs (8xH100-80GB each,
# no real GPU needed) on a temporary state directory, applies examples/policy.yaml
# (three projects on three tiers, one with a quota) and plays a short scenario whose
# every claim is checked ("ok:" lines; exit 1 if one fails):
#   2. strict tier order   3. a project waiting on its quota while others run
#   4. a short job backfilled   5. a preemption with grace, checkpoint and requeue
#   6. `docket explain`: why is this job waiting?
# The cluster is left running; it prints how to use it and how to stop it. Works
# without a terminal (tests/system/demo.bats runs it end to end).
#
#   scripts/demo.sh          start (or, if it runs already, say how to use it)
#   scripts/demo.sh --stop   `make demo-stop`: cancel the jobs, stop every process the
#                            demo started (by pid), remove its state directory
#
# Environment: BUILD (build dir, default build), DOCKET_DEMO_DIR (default
# /tmp/docket-demo), DOCKET_DEMO_NODES (node name prefix, default gpu), DOCKET_DEMO_PAUSE
# (seconds between steps, default 0).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
if [[ $BUILD == /* ]]; then B=$BUILD; else B=$ROOT/$BUILD; fi
DIR=${DOCKET_DEMO_DIR:-/tmp/docket-demo}
NODES=${DOCKET_DEMO_NODES:-gpu}
PAUSE=${DOCKET_DEMO_PAUSE:-0}
DOCKET=$B/src/cli/docket

say() { printf "\n\033[1m%s\033[0m\n" "$*"; }
[[ -t 1 ]] || say() { printf "\n== %s\n" "$*"; }
note() { printf "   %s\n" "$*"; }
die() { printf 'demo: %s\n' "$*" >&2; exit 1; }

# show CMD...: print the command as a user would type it, then run it.
show() {
    printf '\n$ %s\n' "$*" | sed "s|$DOCKET|docket|g"
    "$@"
}

wait_for() { # SECONDS CMD...
    local deadline=$((SECONDS + $1))
    shift
    until "$@"; do
        ((SECONDS < deadline)) || return 1
        sleep 0.1
    done
}

state() { "$DOCKET" show "$1" --json | jq -r .job.state; }
state_is() { # ID STATE...
    local s want
    s=$(state "$1")
    shift
    for want in "$@"; do [[ $s == "$want" ]] && return 0; done
    return 1
}
field() { "$DOCKET" show "$1" --json | jq -r ".job.$2"; }
pause() { [[ $PAUSE == 0 ]] || sleep "$PAUSE"; }

# check TEXT CMD...: the scenario's claims are checked, not just printed
check() {
    local what=$1
    shift
    if "$@"; then
        printf '   ok: %s\n' "$what"
    else
        printf '   FAILED: %s\n' "$what"
        FAILED=$((FAILED + 1))
    fi
}

# ------------------------------------------------------------------------------------
# Stop

pid_alive() { kill -0 "$1" 2>/dev/null; }

stop_pid() { # PID
    pid_alive "$1" || return 0
    kill -TERM "$1" 2>/dev/null || return 0
    wait_for 10 bash -c "! kill -0 $1 2>/dev/null" || kill -9 "$1" 2>/dev/null || true
}

stop() {
    [[ -f $DIR/pids ]] || { echo "demo: nothing to stop (no $DIR/pids)"; return 0; }
    local name pid f cg d g
    if [[ -S $DIR/ctl/docketd.sock ]]; then
        export DOCKET_URL=unix:$DIR/ctl/docketd.sock
        local ids
        ids=$("$DOCKET" queue --json 2>/dev/null | jq -r '.jobs[].id' 2>/dev/null || true)
        if [[ -n $ids ]]; then
            # shellcheck disable=SC2086
            "$DOCKET" cancel $ids --reason "demo stopped" >/dev/null 2>&1 || true
            wait_for 15 bash -c "[[ -z \$('$DOCKET' queue --json | jq -r '.jobs[] | select(.state != \"PENDING\" and .state != \"HELD\") | .id') ]]" || true
        fi
    fi
    # agents first, then the controller (pids file order is controller, agents)
    tac "$DIR/pids" | while read -r name pid; do
        stop_pid "$pid"
        echo "stopped $name (pid $pid)"
    done
    # a job supervisor outlives its agent by design: end the ones ours left
    for f in "$DIR"/agent-*/jobs/*/state.json; do
        [[ -f $f ]] || continue
        pid=$(jq -r '.sup_pid // 0' "$f")
        [[ $(jq -r '.state' "$f") != exited && $pid -gt 0 ]] && kill -9 "$pid" 2>/dev/null || true
    done
    while read -r name pid; do
        [[ $name == agent-* ]] || continue
        for cg in memory cpu cpuacct pids freezer devices blkio ""; do
            d=/sys/fs/cgroup/${cg:+$cg/}docket/${name#agent-}
            [[ -d $d ]] || continue
            for g in "$d"/job_*; do
                [[ -d $g ]] || continue
                xargs -r kill -9 <"$g/cgroup.procs" 2>/dev/null || true
                rmdir "$g" 2>/dev/null || true
            done
            rmdir "$d" 2>/dev/null || true
        done
    done <"$DIR/pids"
    rm -rf "$DIR"
    echo "demo stopped; $DIR removed"
}

if [[ ${1:-} == --stop ]]; then
    stop
    exit 0
fi
[[ $# -eq 0 ]] || die "usage: scripts/demo.sh [--stop]"

usage_text() {
    cat <<USAGE

Docket is running: docketd and two agents ($NODES-01, $NODES-02, 8 declared H100 GPUs each),
state in $DIR. Use it from this shell:

  export DOCKET_URL=unix:$DIR/ctl/docketd.sock
  export PATH=$B/src/cli:\$PATH
  docket queue                 # jobs, and why each pending one waits
  docket submit -p explore --class exploration -g 2 --time 10m -- sleep 300
  docket explain JOB           # why is this job waiting?
  docket top                   # a live view (Ctrl-C quits)
  docket help                  # every verb

Over TCP: DOCKET_URL=http://127.0.0.1:$(cat "$DIR/ctl/docketd.port" 2>/dev/null) DOCKET_TOKEN=\$(cat $DIR/ctl/admin.token)
Web console: http://127.0.0.1:$(cat "$DIR/ctl/docketd.port" 2>/dev/null)/ (log in with the token in
  $DIR/ctl/admin.token, or open the one-time link that \`docket console\` prints)
Logs: $DIR/docketd.log, $DIR/agent-*.log
Stop everything: make demo-stop
USAGE
}

if [[ -f $DIR/pids ]] && pid_alive "$(awk 'NR == 1 { print $2 }' "$DIR/pids")"; then
    echo "demo: already running"
    usage_text
    exit 0
fi

# ------------------------------------------------------------------------------------
# Install, build, start

say "Docket demo: installing what is missing and building"
"$ROOT/scripts/install-deps.sh" || die "install the packages above, then run make demo again"
if [[ ! -x $DOCKET || ! -x $B/src/controller/docketd || ! -x $B/src/agent/docket-node ]]; then
    make -s -C "$ROOT" build BUILD="$BUILD"
fi
for bin in "$DOCKET" "$B/src/controller/docketd" "$B/src/agent/docket-node"; do
    [[ -x $bin ]] || die "$bin was not built (make build)"
done

# A failure before the cluster is up and the scenario played: show why, stop what started.
STARTED=0
on_exit() {
    local rc=$?
    ((STARTED)) && return 0
    echo "demo: failed (exit $rc); the last lines of the logs:" >&2
    tail -n 15 "$DIR"/*.log >&2 2>/dev/null || true
    stop >/dev/null 2>&1 || true
}
trap on_exit EXIT

rm -rf "$DIR"
mkdir -p "$DIR/ctl" "$DIR/work"
chmod 0755 "$DIR"
: >"$DIR/pids"
FAILED=0

say "Starting docketd and two agents (8 declared H100-80GB GPUs each) in $DIR"
"$B/src/controller/docketd" --state-dir "$DIR/ctl" --listen 127.0.0.1:0 \
    --socket "$DIR/ctl/docketd.sock" --heartbeat-wait 2s --log-file "$DIR/docketd.log" \
    </dev/null >/dev/null 2>&1 &
echo "docketd $!" >>"$DIR/pids"
wait_for 20 test -S "$DIR/ctl/docketd.sock" || die "docketd did not start; see $DIR/docketd.log"
wait_for 20 test -s "$DIR/ctl/docketd.port" || die "docketd did not start; see $DIR/docketd.log"
export DOCKET_URL=unix:$DIR/ctl/docketd.sock
PORT=$(cat "$DIR/ctl/docketd.port")
JOIN=$("$DOCKET" token join)
agent_flags=(--allow-root-jobs)
[[ $(id -u) == 0 ]] || agent_flags=(--no-cgroups)
for i in 01 02; do
    "$B/src/agent/docket-node" --controller "http://127.0.0.1:$PORT" --join-token "$JOIN" \
        --name "$NODES-$i" --gpus 8xH100-80GB --cpus 32 --mem 256G --label "rack=r$i" \
        --state-dir "$DIR/agent-$NODES-$i" --usage-interval 2s \
        --log-file "$DIR/agent-$NODES-$i.log" "${agent_flags[@]}" </dev/null >/dev/null 2>&1 &
    echo "agent-$NODES-$i $!" >>"$DIR/pids"
done
nodes_up() {
    [[ $("$DOCKET" nodes --json | jq '[.nodes[] | select(.state == "UP")] | length') -ge 2 ]]
}
wait_for 30 nodes_up || die "the agents did not register; see $DIR/agent-*.log"
show "$DOCKET" nodes

say "1. The policy: three projects on three tiers, nlp held to a quota of 4 GPUs"
show "$DOCKET" apply -f "$ROOT/examples/policy.yaml"
show "$DOCKET" projects
pause

# ------------------------------------------------------------------------------------
say "2. Strict tier order: jobs queued low first, high last; the high one starts first"
note "both nodes are drained for maintenance while the jobs arrive"
"$DOCKET" nodes drain "$NODES-01" "$NODES-02" --reason "demo: maintenance" >/dev/null
cd "$DIR/work"
sub() { "$DOCKET" submit --parsable --workdir "$DIR/work" "$@"; }
BIG=$(sub -p explore --class exploration -g 8 --time 10m --name big-sweep -- sleep 600)
CKPT=$(sub -p explore -t low --class exploration -g 2 --time 10m --signal USR1@5s --name ckpt-explore \
    --env EPOCHS=600 --env CKPT_DIR="$DIR/work" "$ROOT/examples/jobs/train-checkpoint.sh")
N1=$(sub -p nlp -g 4 --time 10m --name nlp-finetune -- sleep 600)
N2=$(sub -p nlp -g 2 --time 10m --name nlp-eval -- sleep 600)
V1=$(sub -p vision --class training -g 8 --time 3m --name resnet -- sleep 180)
show "$DOCKET" queue
note "now the maintenance ends:"
show "$DOCKET" nodes resume "$NODES-01" "$NODES-02"
wait_for 30 state_is "$V1" RUNNING || true
wait_for 30 state_is "$CKPT" RUNNING || true
sleep 1
show "$DOCKET" queue
check "resnet (vision, high), submitted last, runs" state_is "$V1" RUNNING
check "big-sweep (explore, low), submitted first, still waits" state_is "$BIG" PENDING
pause

# ------------------------------------------------------------------------------------
say "3. A project waiting on its quota while others run"
note "nlp may use 4 GPUs; nlp-eval would make it 6, so it waits although GPUs are free"
show "$DOCKET" explain "$N2"
check "nlp-finetune runs" state_is "$N1" RUNNING
check "nlp-eval waits with QuotaLimit" test "$(field "$N2" reason)" = QuotaLimit
check "explore's ckpt-explore runs meanwhile on the GPUs nlp may not use" state_is "$CKPT" RUNNING
pause

# ------------------------------------------------------------------------------------
say "4. Backfill: a short job starts now, ahead of big-sweep, without delaying it"
note "big-sweep needs a whole node: it holds a reservation on the node resnet frees first"
SHORT=$(sub -p explore --class exploration -g 2 --time 1m --name quick-test -- sleep 45)
wait_for 20 state_is "$SHORT" RUNNING || true
show "$DOCKET" queue -p explore
check "quick-test (2 GPUs, 1 minute) runs while big-sweep, queued before it, waits" \
    bash -c "[[ \$('$DOCKET' show $SHORT --json | jq -r .job.state) == RUNNING &&
               \$('$DOCKET' show $BIG --json | jq -r .job.state) == PENDING ]]"
pause

# ------------------------------------------------------------------------------------
say "5. Preemption with grace and requeue: vision needs 4 GPUs now"
note "no 4 GPUs are free: the lowest-tier jobs on one node are signalled (USR1), keep"
note "running for their grace (5 s) to save a checkpoint, then go back to the queue"
V2=$(sub -p vision --class training -g 4 --time 5m --name detector -- sleep 300)
wait_for 40 state_is "$V2" RUNNING || true
wait_for 20 bash -c "[[ \$('$DOCKET' show $CKPT --json | jq -r .job.preempt_count) -ge 1 ]]" || true
sleep 1
show "$DOCKET" queue
show "$DOCKET" show "$CKPT"
show "$DOCKET" logs "$CKPT"
check "detector (vision, high) runs" state_is "$V2" RUNNING
check "ckpt-explore was preempted and requeued with the same id" \
    bash -c "[[ \$('$DOCKET' show $CKPT --json | jq -r .job.preempt_count) -ge 1 ]]"
check "ckpt-explore saved its checkpoint on the signal" \
    bash -c "'$DOCKET' logs $CKPT | grep -q 'checkpoint saved'"
pause

# ------------------------------------------------------------------------------------
say "6. Why is this job waiting?"
show "$DOCKET" explain "$BIG"
check "explain answers for big-sweep" bash -c "'$DOCKET' explain $BIG --json | jq -e '.explain.reason | length > 0' >/dev/null"
show "$DOCKET" forecast

STARTED=1
if ((FAILED)); then
    say "The scenario did not go as described ($FAILED check(s) failed); logs in $DIR"
else
    say "Every step of the scenario was checked"
fi
usage_text
exit $((FAILED ? 1 : 0))
