#!/usr/bin/env bats
# srun_step.bats - the link between srun and its step hosts under attack (issue 33 item
# 1, docs/security.md "Hostile job"), on a real docketd and two real docket-node agents on
# loopback: a process of another job that holds the old predictable step port and probes
# the real one, a fake step host, srun with a wrong key, a rank that never registers. The
# hostile processes (lib/step_hostile.py) write down every byte they get; the job's key
# and its secret must be in none of it, and every step must run or fail loudly.
# Every process started here is stopped by pid (teardown, cluster_stop).

bats_require_minimum_version 1.5.0

CLUSTER_NAME=srunstep
load lib/cluster
AGENT_EXTRA=(--addr 127.0.0.1 --slurm-cli "$DOCKET")
HOSTILE=$BATS_TEST_DIRNAME/lib/step_hostile.py

setup_file() {
    [[ -x $DOCKET && -x $DOCKETD_BIN && -x $AGENT_BIN ]] || skip "docket, docketd or docket-node not built"
    cluster_start
    "$DOCKET" apply -f "$BATS_TEST_DIRNAME/../../examples/policy.yaml" >/dev/null
    mkdir -p "$T/bin"
    ln -s "$DOCKET" "$T/bin/sbatch"
}

teardown_file() {
    cluster_stop
}

setup() {
    cd "$W"
    PATH=$T/bin:$PATH
    HOSTILE_PIDS=()
}

teardown() {
    local p
    for p in "${HOSTILE_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
}

# ended ID STATE: wait until job ID has ended, and in STATE (its story shown otherwise)
ended() {
    local s
    wait_for 60 state_in "$1" COMPLETED FAILED TIMEOUT CANCELLED NODE_FAIL OOM
    s=$(job_state "$1")
    [[ $s == "$2" ]] || { echo "job $1 is $s, not $2"; "$DOCKET" show "$1"; cat ./*-"$1".out; false; }
}

# all_exited ID N: the job's supervisors on its N nodes have all reported its end
all_exited() {
    [ "$(cat "$T"/agent-*.log | grep -c "event=job_exited job=$1 ")" -ge "$2" ]
}

# step_host ID: where rank 1 of job ID listens, as its rank 0's srun reads it
step_host() {
    cat "$T"/agent-*/scratch/job_"$1"/.slurm-bin/step-host.1 2>/dev/null
}

# rank_err ID: what the job's ranks wrote to stderr on their nodes (the nodes of this
# cluster share one disk: a path the job names, -o, is one file for both)
rank_err() {
    cat "$T"/agent-*/jobs/"$1"/stderr "$W"/*-"$1".out 2>/dev/null
}

# learned_nothing FILE KEY SECRET: a hostile capture holds neither the key nor the secret
learned_nothing() {
    [[ -f $1 ]] || { echo "no capture $1"; false; }
    if grep -aqF -- "$2" "$1" || grep -aqF -- "$3" "$1" || grep -aq STEP_SECRET "$1"; then
        echo "the hostile process learned the key or the environment:"
        od -c "$1" | head -20
        false
    fi
}

@test "a process that holds the old step port, probes and floods the new one learns nothing; the steps run" {
    secret=s3cret-$RANDOM$RANDOM
    # the old port of rank 1 was 40000 + (J*8 + 1) mod 20000: held before the job exists,
    # for the next job ids, as a job of another user on that node did
    prev=$(sbatch --parsable -A vision --wrap true)
    ports=()
    for j in 1 2 3 4; do ports+=($((40000 + ((prev + j) * 8 + 1) % 20000))); done
    python3 "$HOSTILE" squat "$T/squat.bin" "${ports[@]}" 3>&- &
    HOSTILE_PIDS+=($!)
    wait_for 10 test -f "$T/squat.bin"
    cat >squat.sh <<'EOS'
#!/bin/bash
#SBATCH -A vision -N 2 --ntasks-per-node=1
#SBATCH -o squat-%j.out
echo "$DOCKET_STEP_KEY" > key-$SLURM_JOB_ID.txt
while [ ! -e go-$SLURM_JOB_ID ]; do sleep 0.1; done
srun -l bash -c 'echo "rank=$SLURM_PROCID secret=${STEP_SECRET:+set}"'
echo "step status $?"
EOS
    id=$(STEP_SECRET=$secret sbatch --parsable squat.sh)
    [ "$id" -gt "$prev" ] && [ "$id" -le $((prev + 4)) ]
    wait_for 30 test -s "key-$id.txt"
    key=$(cat "key-$id.txt")
    [ -n "$key" ]
    wait_for 30 step_host "$id"
    hostport=$(step_host "$id")
    # not the old port: one the kernel chose
    [[ $hostport == 127.0.0.1:* ]]
    [ "${hostport##*:}" -ne $((40000 + (id * 8 + 1) % 20000)) ]
    python3 "$HOSTILE" probe "$T/probe.bin" "$hostport"
    # and a flood of idle connections held open: srun's own is still served
    python3 "$HOSTILE" hold 100 "$hostport" "$T/held" 3>&- &
    HOSTILE_PIDS+=($!)
    wait_for 120 test -s "$T/held" # 100 connections by python3: slow on a loaded machine
    [ "$(cat "$T/held")" -eq 100 ]
    touch "go-$id"
    ended "$id" COMPLETED
    wait_for 30 grep -q "step status" "squat-$id.out"
    cat "squat-$id.out"
    grep -qx "0: rank=0 secret=set" "squat-$id.out"
    grep -qx "1: rank=1 secret=set" "squat-$id.out"
    grep -qx "step status 0" "squat-$id.out"
    # the holder of the old port saw no connection at all; the probe got no environment
    [ ! -s "$T/squat.bin" ]
    learned_nothing "$T/probe.bin" "$key" "$secret"
    # the step host refused the probes, and said so
    wait_for 30 all_exited "$id" 2
    rank_err "$id" | grep -q "srun step host: refused a connection from 127.0.0.1"
}

@test "srun refuses a fake step host and a wrong key before sending anything; a missing rank fails the step and the job" {
    secret=s3cret-$RANDOM$RANDOM
    cat >wrong.sh <<EOS
#!/bin/bash
#SBATCH -A vision -N 2 --ntasks-per-node=1
#SBATCH -o wrong-%j.out
HOSTILE=$HOSTILE
EOS
    cat >>wrong.sh <<'EOS'
echo "$DOCKET_STEP_KEY" > key-$SLURM_JOB_ID.txt
# someone else's listener named as the step host: it gets a handshake without the key
python3 "$HOSTILE" fake "$PWD/fake-$SLURM_JOB_ID.bin" "$PWD/fakeport-$SLURM_JOB_ID" &
fake=$!
while [ ! -s fakeport-$SLURM_JOB_ID ]; do sleep 0.1; done
mkdir -p fake/.slurm-bin
echo "127.0.0.1:$(cat fakeport-$SLURM_JOB_ID)" > fake/.slurm-bin/step-host.1
DOCKET_SCRATCH=$PWD/fake srun -N 2 -n 2 bash -c 'echo ran-with-fake-host'
echo "fake host: $?"
kill $fake
srun -N 2 -n 2 bash -c 'echo "right key: rank=$SLURM_PROCID"'
echo "right key: $?"
SLURM_NNODES=3 SLURM_JOB_NODELIST=$SLURM_JOB_NODELIST,ghost DOCKET_STEP_WAIT=1 srun -N 3 -n 3 bash -c 'echo ran-without-a-host'
echo "never came: $?"
srun -N 2 -n 2 bash -c 'if [ "$SLURM_PROCID" = 1 ]; then kill -9 $PPID; sleep 1; fi; echo "host-died: rank=$SLURM_PROCID"'
echo "host died: $?"
DOCKET_STEP_KEY=not-the-key srun -N 2 -n 2 bash -c 'echo ran-with-wrong-key'
EOS
    id=$(STEP_SECRET=$secret sbatch --parsable wrong.sh)
    ended "$id" FAILED
    wait_for 30 all_exited "$id" 2
    out=$(cat "wrong-$id.out")
    echo "$out"
    key=$(cat "key-$id.txt")
    # the fake host: refused, no task ran anywhere, and it learned nothing
    grep -q "srun: error: node 1 (127.0.0.1:[0-9]*): TLS handshake failed.*nothing was sent" <<<"$out"
    grep -qx "fake host: 1" <<<"$out"
    learned_nothing "fake-$id.bin" "$key" "$secret"
    # the real host with the real key runs both ranks
    grep -qx "right key: rank=0" <<<"$out"
    grep -qx "right key: rank=1" <<<"$out"
    grep -qx "right key: 0" <<<"$out"
    # a rank whose host never registers fails the step, loudly
    grep -q "srun: error: node 2: its step host never registered in 1 s" <<<"$out"
    grep -qx "never came: 1" <<<"$out"
    # a rank whose step host dies before its task reports an exit fails the step too
    grep -q "srun: error: node 1: the link to its step host ended before 1 task(s) reported an exit" <<<"$out"
    grep -qx "host died: 1" <<<"$out"
    # a wrong key: refused at both ends, nothing ran, and the job fails with the step
    [ "$(grep -c "srun: error: node 1 (127.0.0.1:[0-9]*): TLS handshake failed" <<<"$out")" -eq 2 ]
    grep -q "srun step host: refused .*binder does not verify" <<<"$out"
    ! grep -q "ran-with" <<<"$out"
    ! rank_err "$id" | grep -q "ran-with"
    rank_err "$id" | grep -q "srun step host: refused a connection from 127.0.0.1"
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq -r .job.exit.code <<<"$output")" = 1 ]
}
