#!/usr/bin/env bats
# slurm.bats - Slurm users' scripts and commands, unchanged, on a real docketd and two
# real docket-node agents with declared GPUs (8xH100-80GB each) on loopback: #SBATCH
# scripts as sbatch reads them, `docket sbatch` / `sbatch`, the SLURM_* environment, the
# batch script on the first node only, srun, scontrol, squeue, scancel (docs/slurm.md).
# One cluster per file; every process it started is stopped by pid in teardown_file.

bats_require_minimum_version 1.5.0

CLUSTER_NAME=slurm
load lib/cluster
AGENT_EXTRA=(--addr 127.0.0.1 --slurm-cli "$DOCKET")

# --------------------------------------------------------------------------------------

setup_file() {
    [[ -x $DOCKET && -x $DOCKETD_BIN && -x $AGENT_BIN ]] || skip "docket, docketd or docket-node not built"
    cluster_start
    "$DOCKET" apply -f "$BATS_TEST_DIRNAME/../../examples/policy.yaml" >/dev/null
    # the Slurm commands, as `make install-slurm-compat` links them
    mkdir -p "$T/bin"
    for c in sbatch squeue scancel scontrol srun sinfo sacct; do ln -s "$DOCKET" "$T/bin/$c"; done
}

teardown_file() {
    cluster_stop
}

setup() {
    cd "$W"
    PATH=$T/bin:$PATH
}

# done_ok ID: wait until job ID is COMPLETED (fail on another terminal state)
done_ok() {
    local s
    wait_for 60 state_in "$1" COMPLETED FAILED TIMEOUT CANCELLED NODE_FAIL OOM
    s=$(job_state "$1")
    [[ $s == COMPLETED ]] || { echo "job $1 is $s"; "$DOCKET" show "$1"; grep -h "job=$1 \|job $1[: ]" "$T"/agent-*.log "$T"/ctl.log | tail -5; false; }
}

# all_exited ID N: the job's supervisors on its N nodes have all reported its end
all_exited() {
    [ "$(cat "$T"/agent-*.log | grep -c "event=job_exited job=$1 ")" -ge "$2" ]
}

# wait_file PATH: the job's output file has appeared and its job has finished writing
wait_file() {
    wait_for 30 test -s "$1"
}

@test "sbatch --parsable --wrap in a pipeline; slurm-ID.out with the job's SLURM_* environment" {
    id=$(sbatch --parsable -A vision --wrap 'echo "id=$SLURM_JOB_ID n=$SLURM_NNODES t=$SLURM_NTASKS dir=$SLURM_SUBMIT_DIR name=$SLURM_JOB_NAME"')
    [[ $id =~ ^[0-9]+$ ]]
    done_ok "$id"
    wait_file "$W/slurm-$id.out"
    [ "$(cat "$W/slurm-$id.out")" = "id=$id n=1 t=1 dir=$W name=wrap" ]
    run -0 sbatch -A vision --wrap true
    [[ $output =~ ^Submitted\ batch\ job\ [0-9]+$ ]]
}

@test "a single-GPU script: gres, time rounded up to minutes, %x-%j output, stderr with it" {
    cat >one.sh <<'EOS'
#!/bin/bash
#SBATCH --job-name=one-gpu
#SBATCH --account=vision
#SBATCH --gres=gpu:1
#SBATCH --time=0:30
#SBATCH --output=%x-%j.out
echo "gpus=$SLURM_GPUS_ON_NODE cuda=$CUDA_VISIBLE_DEVICES cpus=$SLURM_CPUS_PER_TASK"
echo "to stderr" >&2
EOS
    id=$(sbatch --parsable one.sh)
    done_ok "$id"
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq .job.time_limit_ms <<<"$output")" -eq 60000 ]
    [ "$(jq .job.gpus <<<"$output")" -eq 1 ]
    wait_for 30 grep -q "to stderr" "one-gpu-$id.out"
    grep -qx "gpus=1 cuda=[0-7] cpus=1" "one-gpu-$id.out"
}

@test "an array with %A_%a outputs: one file per task, SLURM_ARRAY_* set" {
    cat >arr.sh <<'EOS'
#!/bin/sh
#SBATCH -A vision
#SBATCH --array=0-2
#SBATCH -o arr-%A_%a.log
echo "job=$SLURM_ARRAY_JOB_ID task=$SLURM_ARRAY_TASK_ID"
EOS
    aid=$(sbatch --parsable arr.sh)
    for i in 0 1 2; do
        wait_for 60 grep -qx "job=$aid task=$i" "arr-${aid}_$i.log"
    done
}

@test "a two-node job: the script runs once, on the first node, and sees the allocation" {
    cat >two.sh <<'EOS'
#!/bin/bash
#SBATCH -A vision -N 2 --ntasks-per-node=1 --gpus-per-node=2
#SBATCH -o two-%j.out
hostname >> ran-$SLURM_JOB_ID.txt
echo "nodes=$SLURM_NNODES list=$SLURM_JOB_NODELIST node=$SLURMD_NODENAME nodeid=$SLURM_NODEID tasks=$SLURM_NTASKS"
scontrol show hostnames "$SLURM_JOB_NODELIST" | wc -l
master=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)
echo "master=$master"
EOS
    id=$(sbatch --parsable two.sh)
    done_ok "$id"
    wait_for 30 grep -q "^master=" "two-$id.out"
    [ "$(wc -l <"ran-$id.txt")" -eq 1 ]
    first=$("$DOCKET" show "$id" --json | jq -r '.job.allocation[0].node')
    grep -qx "nodes=2 list=$first,.* node=$first nodeid=0 tasks=2" "two-$id.out"
    grep -qx 2 "two-$id.out"
    grep -qx "master=$first" "two-$id.out"
    # the other node held the allocation until the script ended; let it be reaped
    # before the next test's jobs land there (see "What differs" in docs/slurm.md)
    wait_for 30 all_exited "$id" 2
}

@test "#SBATCH --switches=1@30 reaches the job; nodes without switch labels are one switch" {
    printf '#!/bin/bash\n#SBATCH -A vision -N 2 --switches=1@30\ntrue\n' >sw.sh
    id=$(sbatch --parsable sw.sh)
    "$DOCKET" show "$id" --json | jq -e '.job.switches == 1 and .job.switches_wait_ms == 1800000' \
        >/dev/null
    done_ok "$id"
    wait_for 30 all_exited "$id" 2
    run -2 sbatch -A vision -N 2 --switches=0 --wrap true
    [[ $output == *"--switches"* ]]
}

@test "srun starts the step's tasks: ranks, local ids, --gpus-per-task slices, -l labels" {
    cat >steps.sh <<'EOS'
#!/bin/bash
#SBATCH -A vision --ntasks-per-node=4 --gpus-per-task=1 -c 2
#SBATCH -o steps-%j.out
srun -l bash -c 'echo "rank=$SLURM_PROCID local=$SLURM_LOCALID gpus=$CUDA_VISIBLE_DEVICES cpt=$SLURM_CPUS_PER_TASK"' | sort
srun -n 2 false
echo "srun status $?"
EOS
    id=$(sbatch --parsable steps.sh)
    done_ok "$id"
    wait_for 30 grep -q "srun status" "steps-$id.out"
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq .job.gpus <<<"$output")" -eq 4 ]
    [ "$(jq .job.cpus <<<"$output")" -eq 8 ]
    for r in 0 1 2 3; do
        grep -qx "$r: rank=$r local=$r gpus=[0-7] cpt=2" "steps-$id.out"
    done
    [ "$(grep -o 'gpus=[0-7]' "steps-$id.out" | sort -u | wc -l)" -eq 4 ]
    grep -qx "srun status 1" "steps-$id.out"
}

@test "a two-node srun torchrun-style step: ranks across both nodes, each with its node's GPUs" {
    cat >dist.sh <<'EOS'
#!/bin/bash
#SBATCH -A vision -N 2 --ntasks-per-node=2 --gpus-per-task=1 -c 1
#SBATCH -o dist-%j.out
export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
export MASTER_PORT=29512
srun -l bash -c 'echo "rank=$SLURM_PROCID/$SLURM_NTASKS node=$SLURM_NODEID local=$SLURM_LOCALID host=$SLURMD_NODENAME gpus=$CUDA_VISIBLE_DEVICES master=$MASTER_ADDR:$MASTER_PORT first=$(scontrol show hostnames | head -n 1)"'
srun -N 2 -n 2 bash -c 'exit $SLURM_NODEID'
echo "failed step: $?"
EOS
    id=$(sbatch --parsable dist.sh)
    done_ok "$id"
    wait_for 30 grep -q "failed step" "dist-$id.out"
    wait_for 30 all_exited "$id" 2
    cat "dist-$id.out"
    a=$("$DOCKET" show "$id" --json | jq -r '.job.allocation[0].node')
    b=$("$DOCKET" show "$id" --json | jq -r '.job.allocation[1].node')
    for r in 0 1 2 3; do
        node=$((r / 2)) host=$a
        [ $node -eq 1 ] && host=$b
        grep -Eqx "$r: rank=$r/4 node=$node local=$((r % 2)) host=$host gpus=[0-7] master=$a:29512 first=$a" "dist-$id.out"
    done
    # the two tasks of a node have different GPUs
    [ "$(grep -E '^[01]: ' "dist-$id.out" | grep -o 'gpus=[0-7]' | sort -u | wc -l)" -eq 2 ]
    [ "$(grep -E '^[23]: ' "dist-$id.out" | grep -o 'gpus=[0-7]' | sort -u | wc -l)" -eq 2 ]
    grep -q "srun: error: task 1: Exited with exit code 1" "dist-$id.out"
    grep -qx "failed step: 1" "dist-$id.out"
}

@test "--mem=0 takes all of a node's memory; --exclusive all of its GPUs and CPUs" {
    printf '#!/bin/sh\n#SBATCH -A vision --mem=0 --gres=gpu:1\ntrue\n' >mem0.sh
    id=$(sbatch --parsable mem0.sh)
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq .job.mem_mb <<<"$output")" -eq 65536 ]
    [ "$(jq .job.gpus <<<"$output")" -eq 1 ]
    printf '#!/bin/sh\n#SBATCH -A vision --exclusive\ntrue\n' >excl.sh
    id=$(sbatch --parsable excl.sh)
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq .job.gpus <<<"$output")" -eq 8 ]
    [ "$(jq .job.cpus <<<"$output")" -eq 16 ]
    done_ok "$id"
}

@test "--signal=B:USR1@55 reaches the batch shell 55 s before a 1-minute limit, in time to checkpoint" {
    cat >ckpt.sh <<'EOS'
#!/bin/bash
#SBATCH -A vision --time=1 --signal=B:USR1@55
#SBATCH -o ckpt-%j.out
trap 'echo "checkpoint at $SECONDS"; exit 0' USR1
echo started
sleep 120 &
wait
EOS
    id=$(sbatch --parsable ckpt.sh)
    wait_for 40 grep -q checkpoint "ckpt-$id.out"
    done_ok "$id"
    s=$(grep -o 'at [0-9]*' "ckpt-$id.out" | cut -d' ' -f2)
    [ "$s" -ge 3 ] && [ "$s" -le 15 ]
}

@test "scontrol update TimeLimit= of a running job: its --signal warning comes T before the new limit" {
    # man sbatch, --signal: "send it sig_time seconds before its end time"; man scontrol,
    # TimeLimit: a running job's limit lowered moves its end time, and so the warning
    cat >lower.sh <<'EOS'
#!/bin/bash
#SBATCH -A vision --time=10 --signal=B:USR1@50
#SBATCH -o lower-%j.out
trap 'echo "warned at $SECONDS"; exit 0' USR1
echo started
sleep 600 &
wait
EOS
    id=$(sbatch --parsable lower.sh)
    wait_for 60 grep -q started "lower-$id.out"
    scontrol update JobId="$id" TimeLimit=1
    # 50 s before the new 1-minute limit: before the limit ends it, the trap saves it
    wait_for 60 grep -q warned "lower-$id.out"
    done_ok "$id"
    grep -q 'command="limit 60000"' "$T"/agent-*.log
}

@test "a --dependency chain from --parsable ids; squeue --me -o parsed by a script" {
    a=$(sbatch --parsable -A vision --wrap 'sleep 2')
    b=$(sbatch --parsable -A vision -d afterok:"$a" --wrap 'echo second')
    run -0 squeue --me -h -o "%i %T %j"
    grep -qx "$b PENDING wrap" <<<"$output" || grep -qx "$b RUNNING wrap" <<<"$output" || { echo "$output"; false; }
    run -0 squeue -j "$a,$b" -o "%.8i %.2t"
    [[ ${lines[0]} == "   JOBID ST" ]]
    done_ok "$b"
    wait_file "slurm-$b.out"
    grep -qx second "slurm-$b.out"
}

@test "scancel by id and by name; scontrol hold/release" {
    id=$(sbatch --parsable -A vision -J victim --hold --wrap 'sleep 60')
    run -0 scontrol release "$id"
    [ -z "$output" ] # as scontrol: silent on success
    run -0 scancel -n victim
    later=$(sbatch --parsable -A vision --begin=now+300 --wrap true)
    run -0 scontrol hold "$later"
    [ -z "$output" ]
    scancel "$later"
    wait_for 20 state_in "$id" CANCELLED
    id=$(sbatch --parsable -A vision --wrap 'sleep 60')
    run -0 scancel "$id"
    wait_for 20 state_in "$id" CANCELLED
    run -1 scontrol frobnicate
    run -2 scancel
}

@test "sbatch refuses as sbatch does: no #!, unknown or misspelt directives (naming the line)" {
    printf '#SBATCH -A vision\necho hi\n' >nobang.sh
    run -2 sbatch nobang.sh
    [[ $output == *"#!"* ]]
    printf '#!/bin/sh\n#SBATCH -A vision\n#SBATCH --gress=gpu:1\necho hi\n' >typo.sh
    run -2 sbatch typo.sh
    [[ $output == *"line 3: unrecognized option '--gress'"* ]]
    run -2 "$DOCKET" submit typo.sh
    [[ $output == *"line 3"* ]]
    printf '#!/bin/sh\n#SBATCH -w somenode\ntrue\n' >nodelist.sh
    run -2 sbatch nodelist.sh
    [[ $output == *"--nodelist is not supported"* ]]
    # docket submit reads sbatch's command line too: -t TIME, -o, -J, --wrap
    run -0 "$DOCKET" submit --dry-run -A vision -t 1:00:00 -o x-%j.out -J named --wrap 'echo hi'
    [ "$(jq .time_limit <<<"$output")" -eq 3600 ]
    [ "$(jq -r .name <<<"$output")" = named ]
}

@test "tasks per node times cpus per task; --mem-per-cpu" {
    printf '#!/bin/sh\n#SBATCH -A vision --ntasks-per-node=8 -c 2 --mem-per-cpu=1G\ntrue\n' >tpn.sh
    id=$(sbatch --parsable tpn.sh)
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq .job.cpus <<<"$output")" -eq 16 ]
    [ "$(jq .job.mem_mb <<<"$output")" -eq 16384 ]
    done_ok "$id"
}

@test "a default project per user: used when a script names no account; admins set it" {
    printf '#!/bin/sh\n#SBATCH -J noacct\necho "account=$SLURM_JOB_ACCOUNT"\n' >noacct.sh
    run -1 sbatch noacct.sh
    [[ $output == *"project is required"*"docket projects default"* ]]
    user=$("$DOCKET" show "$(sbatch --parsable -A vision --wrap true)" --json | jq -r .job.user)
    run -0 "$DOCKET" projects default "$user" nlp
    [[ $output == "$user: default project nlp" ]]
    run -0 "$DOCKET" projects default --json # yours: the login name, here the token's user
    [ "$(jq -r .user <<<"$output")" = "$user" ]
    [ "$(jq -r .default_project <<<"$output")" = nlp ]
    id=$(sbatch --parsable noacct.sh)
    [ "$("$DOCKET" show "$id" --json | jq -r .job.project)" = nlp ]
    done_ok "$id"
    wait_file "slurm-$id.out"
    grep -qx "account=nlp" "slurm-$id.out"
    # an account on the line still wins
    id=$(sbatch --parsable -A vision noacct.sh)
    [ "$("$DOCKET" show "$id" --json | jq -r .job.project)" = vision ]
    # only an existing project; only an admin
    run -1 "$DOCKET" projects default "$user" nosuch
    [[ $output == *"no such project 'nosuch'"* ]]
    tok=$("$DOCKET" token create --user alice --role member --ttl 1d 2>/dev/null)
    DOCKET_URL=http://127.0.0.1:$PORT DOCKET_TOKEN=$tok run -1 "$DOCKET" projects default alice nlp
    DOCKET_URL=http://127.0.0.1:$PORT DOCKET_TOKEN=$tok USER=alice run -0 "$DOCKET" projects default --json
    [ "$(jq -r .default_project <<<"$output")" = null ]
    run -0 "$DOCKET" projects default "$user" none
    run -1 sbatch noacct.sh
    run -0 "$DOCKET" audit --target "$user" --json
    jq -e '[.entries[] | select(.action == "user.default_project")] | length == 2' <<<"$output"
}

@test "sinfo, sacct, scontrol show node: Slurm's shapes over docket's nodes and jobs" {
    run -0 sinfo
    [[ ${lines[0]} == "PARTITION AVAIL  TIMELIMIT NODES  STATE NODELIST" ]]
    [[ $output == *"docket*"*"up"*"infinite"* ]]
    run -0 sinfo -N -h
    [ "${#lines[@]}" -eq 2 ]
    id=$(sbatch --parsable -A vision --wrap 'exit 3')
    wait_for 60 state_in "$id" FAILED
    run -0 sacct -j "$id" -n -P --format=JobID,JobName,Account,State,ExitCode
    [ "$output" = "$id|wrap|vision|FAILED|3:0" ]
    run -0 sacct -j "$id" -S now-1hours -n -P --format=JobID
    [ "$output" = "$id" ]
    run -0 sacct -j "$id" -S now+1hours -n -P --format=JobID
    [ -z "$output" ]
    run -2 sacct -S yesterday
    run -0 sacct -j "$id"
    [[ ${lines[0]} == *JobID*JobName*Partition*Account*AllocCPUS*State*ExitCode* ]]
    [[ ${lines[1]} == -* ]]
    run -2 sacct --format=JobID,Bogus
    run -0 scontrol show node "$PREFIX-a"
    [[ $output == "NodeName=$PREFIX-a State="* && $output == *"Gres=gpu:H100-80GB:8"* ]]
}

@test "--export: ALL carries the submitting shell's variables, NONE only what it names" {
    printf '#!/bin/bash\n#SBATCH -A vision -o exp-%%j.out\necho "mine=${MY_SETTING:-unset} extra=${EXTRA:-unset}"\n' >exp.sh
    id=$(MY_SETTING=from-shell sbatch --parsable exp.sh)
    done_ok "$id"
    wait_file "exp-$id.out"
    grep -qx "mine=from-shell extra=unset" "exp-$id.out"
    id=$(MY_SETTING=from-shell sbatch --parsable --export=NONE,EXTRA=1 exp.sh)
    done_ok "$id"
    wait_file "exp-$id.out"
    grep -qx "mine=unset extra=1" "exp-$id.out"
}

@test "an HPC-centre style script: %u and %N in the output name, --gpus spread over nodes, SLURM_TASKS_PER_NODE" {
    cat >hpc.sh <<'EOS'
#!/bin/bash -l
#SBATCH --account=vision
#SBATCH --nodes=2
#SBATCH --gpus=4
#SBATCH --ntasks-per-node=2
#SBATCH --cpus-per-task=3
#SBATCH --time=00:10:00
#SBATCH --output=%x.%u.%N.%4j.log
#SBATCH --job-name=hpc
echo "tpn=$SLURM_TASKS_PER_NODE cpn=$SLURM_JOB_CPUS_PER_NODE gpus=$SLURM_GPUS_ON_NODE"
srun hostname | sort | uniq -c | awk '{print $1}' | tr '\n' ' '; echo
EOS
    id=$(sbatch --parsable hpc.sh)
    done_ok "$id"
    wait_for 30 all_exited "$id" 2
    user=$("$DOCKET" show "$id" --json | jq -r .job.user)
    first=$("$DOCKET" show "$id" --json | jq -r '.job.allocation[0].node')
    f=$(printf 'hpc.%s.%s.%04d.log' "$user" "$first" "$id")
    wait_file "$f"
    grep -qx "tpn=2(x2) cpn=6(x2) gpus=2" "$f"
    [ "$("$DOCKET" show "$id" --json | jq .job.time_limit_ms)" -eq 600000 ]
}

@test "sbatch --hold, --begin and --array on the command line; squeue shows Slurm's states" {
    id=$(sbatch --parsable -A vision --hold --wrap true)
    run -0 squeue -j "$id" -h -o "%t %R"
    [ "$output" = "PD (JobHeldUser)" ]
    run -0 scancel "$id"
    aid=$(sbatch --parsable -A vision --array=1-3 -o 'a-%A_%a.out' --wrap 'echo $SLURM_ARRAY_TASK_ID')
    for i in 1 2 3; do wait_for 60 grep -qx "$i" "a-${aid}_$i.out"; done
    id=$(sbatch --parsable -A vision --begin=now+1hour --wrap true)
    run -0 squeue -j "$id" -h -o "%T %r"
    [[ $output == "PENDING "* ]]
    run -0 scancel "$id"
}

@test "a fine-tuning script as ML labs write it: whole-day time, --gpus-per-node, mail lines" {
    mkdir -p logs
    cat >ft.sh <<'EOS'
#!/bin/bash
#SBATCH --job-name=ft-llama
#SBATCH --account=vision
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=2
#SBATCH --cpus-per-task=4
#SBATCH --mem=16G
#SBATCH --time=1-00:00:00
#SBATCH --output=logs/%x_%j.out
#SBATCH --mail-type=END,FAIL
#SBATCH --mail-user=someone@example.org
set -euo pipefail
echo "node=$SLURMD_NODENAME gpus=$SLURM_GPUS_ON_NODE cpus=$SLURM_CPUS_PER_TASK job=$SLURM_JOB_NAME"
EOS
    id=$(sbatch --parsable ft.sh)
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq .job.time_limit_ms <<<"$output")" -eq 86400000 ]
    [ "$(jq .job.gpus <<<"$output")" -eq 2 ]
    [ "$(jq .job.cpus <<<"$output")" -eq 4 ]
    [ "$(jq .job.mem_mb <<<"$output")" -eq 16384 ]
    done_ok "$id"
    wait_for 30 grep -q "gpus=2 cpus=4 job=ft-llama" "logs/ft-llama_$id.out"
}

@test "a parameter sweep: --array with a step, the task id picks the parameter" {
    cat >sweep.sh <<'EOS'
#!/bin/bash
#SBATCH -A vision
#SBATCH --array=0-4:2
#SBATCH --gres=gpu:1
#SBATCH -t 10
#SBATCH -o sweep_%a.out
lrs=(0.1 0.03 0.01 0.003 0.001)
echo "task=$SLURM_ARRAY_TASK_ID lr=${lrs[$SLURM_ARRAY_TASK_ID]}"
EOS
    aid=$(sbatch --parsable sweep.sh)
    wait_for 60 grep -qx "task=0 lr=0.1" sweep_0.out
    wait_for 60 grep -qx "task=2 lr=0.01" sweep_2.out
    wait_for 60 grep -qx "task=4 lr=0.001" sweep_4.out
    [ ! -e sweep_1.out ] && [ ! -e sweep_3.out ]
    [ -n "$aid" ]
}

@test "a CPU preprocessing job before a GPU job: --dependency=afterok, minutes-only time" {
    printf '#!/bin/sh\n#SBATCH -A vision -c 2 -t 5 -o prep.out\necho prepared > data.txt\n' >prep.sh
    pid=$(sbatch --parsable prep.sh)
    printf '#!/bin/sh\n#SBATCH -A vision --gres=gpu:1 -t 5 -o train.out\ncat data.txt\n' >train.sh
    tid=$(sbatch --parsable --dependency=afterok:"$pid" train.sh)
    run -0 "$DOCKET" show "$pid" --json
    [ "$(jq .job.time_limit_ms <<<"$output")" -eq 300000 ]
    done_ok "$tid"
    wait_for 30 grep -qx prepared train.out
}
