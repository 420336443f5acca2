#!/usr/bin/env bats
# slurm_scripts.bats - batch scripts as Slurm users write them, run unchanged on a real
# docketd and two real docket-node agents (8xH100-80GB each) on loopback: srun's options
# in steps (per-task files, --wait, -K, -w, --exclusive, --cpu-bind, -m cyclic, tuning
# options, refusals), script arguments, bash functions exported from the submitting shell
# (`module`), sbatch -W, and only Slurm's variables in a Slurm-style job. Each test says
# which line of `man srun` / `man sbatch` (Slurm 23.11) it checks. One cluster per file;
# every process it started is stopped by pid in teardown_file.

bats_require_minimum_version 1.5.0

CLUSTER_NAME=slurmscripts
load lib/cluster
AGENT_EXTRA=(--addr 127.0.0.1 --slurm-cli "$DOCKET")

setup_file() {
    [[ -x $DOCKET && -x $DOCKETD_BIN && -x $AGENT_BIN ]] || skip "docket, docketd or docket-node not built"
    cluster_start
    "$DOCKET" apply -f "$BATS_TEST_DIRNAME/../../examples/policy.yaml" >/dev/null
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
    wait_for 90 state_in "$1" COMPLETED FAILED TIMEOUT CANCELLED NODE_FAIL OOM
    s=$(job_state "$1")
    [[ $s == COMPLETED ]] || { echo "job $1 is $s"; cat ./*"$1"* 2>/dev/null; false; }
}

# all_exited ID N: the job's supervisors on its N nodes have all reported its end
all_exited() {
    [ "$(cat "$T"/agent-*.log | grep -c "event=job_exited job=$1 ")" -ge "$2" ]
}

array_running() { # ARRAY_ID: squeue shows one of its tasks running
    squeue -j "$1" -h -o %t | grep -qx R
}

array_gone() { # ARRAY_ID: squeue shows none of its tasks
    [ -z "$(squeue -j "$1" -h)" ]
}

never_satisfied() { # ID: pending with reason DependencyNeverSatisfied
    [ "$(squeue -j "$1" -h -o %r)" = DependencyNeverSatisfied ]
}

node_of() { # ID RANK: the job's node of that rank
    "$DOCKET" show "$1" --json | jq -r ".job.allocation[$2].node"
}

@test "-N2 -n3: srun starts 3 tasks in blocks (2,1); only Slurm's variables, no WORLD_SIZE" {
    # man sbatch, OUTPUT ENVIRONMENT VARIABLES: SLURM_TASKS_PER_NODE "2(x3),1" form;
    # man srun, -m block: "consecutive tasks share a node"; -n: within an allocation
    # srun takes the job's task count (SLURM_NTASKS)
    cat >n3.sh <<'EOS'
#!/bin/bash
#SBATCH -A vision -N 2 -n 3
#SBATCH -o n3-%j.out
echo "tpn=$SLURM_TASKS_PER_NODE ws=${WORLD_SIZE:-unset} mp=${MASTER_PORT:-unset} nr=${NODE_RANK:-unset}"
srun bash -c 'echo "rank=$SLURM_PROCID node=$SLURM_NODEID n=$SLURM_NTASKS"' | sort
EOS
    id=$(sbatch --parsable n3.sh)
    done_ok "$id"
    wait_for 30 all_exited "$id" 2
    grep -qx "tpn=2,1 ws=unset mp=unset nr=unset" "n3-$id.out"
    [ "$(grep -c '^rank=' "n3-$id.out")" -eq 3 ]
    grep -qx "rank=0 node=0 n=3" "n3-$id.out"
    grep -qx "rank=1 node=0 n=3" "n3-$id.out"
    grep -qx "rank=2 node=1 n=3" "n3-$id.out"
}

@test "srun -o/-e per task with %j %t %n %N, -m cyclic, -w the second node, -x, -D" {
    # man srun, filename pattern: %t "creates a separate IO file per task", %n node
    # relative to the job, %N short host name; -m cyclic: "consecutive tasks on
    # consecutive nodes"; -w: "the job step will contain all of these hosts"
    cat >files.sh <<'EOS'
#!/bin/bash
#SBATCH -A vision -N 2 --ntasks-per-node=2
#SBATCH -o files-%j.out
srun -o out-%j-%t.txt -e err-%j-%2t.txt bash -c 'echo "rank=$SLURM_PROCID"; echo "oops $SLURM_PROCID" >&2'
srun -n 2 -o node-%j-%n-%N.txt hostname
srun -m cyclic -l bash -c 'echo "node=$SLURM_NODEID"' | sort
srun -w "$(scontrol show hostnames | tail -n 1)" bash -c 'echo "w=$SLURMD_NODENAME n=$SLURM_NTASKS"'
srun -x "$(scontrol show hostnames | head -n 1)" -n 1 bash -c 'echo "x=$SLURMD_NODENAME"'
mkdir -p sub && srun -n 1 -D sub -o rel.txt pwd
EOS
    id=$(sbatch --parsable files.sh)
    done_ok "$id"
    wait_for 30 all_exited "$id" 2
    a=$(node_of "$id" 0) b=$(node_of "$id" 1)
    for r in 0 1 2 3; do
        [ "$(cat "out-$id-$r.txt")" = "rank=$r" ]
        [ "$(cat "err-$id-0$r.txt")" = "oops $r" ]
    done
    [ "$(cat "node-$id-0-$a.txt")" = "$(hostname)" ]
    [ "$(cat "node-$id-1-$b.txt")" = "$(hostname)" ]
    # cyclic: ranks 0 and 2 on node 0, 1 and 3 on node 1
    grep -qx "0: node=0" "files-$id.out"
    grep -qx "1: node=1" "files-$id.out"
    grep -qx "2: node=0" "files-$id.out"
    grep -qx "3: node=1" "files-$id.out"
    [ "$(grep -c "^w=$b n=2$" "files-$id.out")" -eq 2 ]
    grep -qx "x=$b" "files-$id.out"
    [ "$(cat sub/rel.txt)" = "$W/sub" ]
}

@test "--kill-on-bad-exit and --wait end the step's other tasks; srun's status is the worst" {
    # man srun, -K: "Controls whether or not to terminate a step if any task exits with a
    # non-zero exit code"; -W: "how long to wait after the first task terminates before
    # terminating all remaining tasks"
    cat >kill.sh <<'EOS'
#!/bin/bash
#SBATCH -A vision -N 2 --ntasks-per-node=1
#SBATCH -o kill-%j.out
srun --kill-on-bad-exit=1 bash -c 'if [ $SLURM_PROCID = 1 ]; then exit 3; fi; sleep 300'
echo "K status $?"
srun --wait=2 bash -c 'if [ $SLURM_PROCID = 0 ]; then exit 0; fi; sleep 300'
echo "wait status $?"
EOS
    id=$(sbatch --parsable kill.sh)
    done_ok "$id"
    wait_for 30 all_exited "$id" 2
    grep -q "srun: error: task 1: Exited with exit code 3" "kill-$id.out"
    grep -qx "K status 137" "kill-$id.out"
    grep -q "terminating the step (--wait)" "kill-$id.out"
    grep -qx "wait status 137" "kill-$id.out"
}

@test "srun knows every option: tuning ones in one warning line, --het-group refused with why" {
    # man srun, --het-group: "Identify each component in a heterogeneous job allocation";
    # the tuning options (--mpi, --hint, --mem, --gres ...) leave the step as it is
    cat >opts.sh <<'EOS'
#!/bin/bash
#SBATCH -A vision -n 2
#SBATCH -o opts-%j.out
srun --mpi=pmix --hint=nomultithread --mem=4G --gres=gpu:1 -u --overlap --comment=x -J step --jobid=$SLURM_JOB_ID --cpu_bind=rank bash -c 'echo "task $SLURM_PROCID cpus=$(grep Cpus_allowed_list /proc/self/status | cut -f2)"'
srun --het-group=0 true
echo "het status $?"
srun --gress=gpu:1 true
echo "typo status $?"
EOS
    id=$(sbatch --parsable opts.sh)
    done_ok "$id"
    grep -qx "srun: warning: ignored here, they only tune a step: --mpi=pmix, --hint=nomultithread, --mem=4G, --gres=gpu:1, --comment=x" "opts-$id.out"
    # --cpu-bind=rank: each task on one CPU of its own
    [ "$(grep -Ec '^task [01] cpus=[0-9]+$' "opts-$id.out")" -eq 2 ]
    grep -q "het-group is not supported: docket jobs are not heterogeneous" "opts-$id.out"
    grep -qx "het status 2" "opts-$id.out"
    grep -q "unrecognized option '--gress'" "opts-$id.out"
    grep -qx "typo status 2" "opts-$id.out"
}

@test "srun --exclusive steps share the job's CPUs: never more at once than fit" {
    # man srun, --exclusive: "the job step will be allocated dedicated CPUs" and "if
    # insufficient resources are available, the step waits" (a farm of -n1 steps)
    cat >farm.sh <<'EOS'
#!/bin/bash
#SBATCH -A vision -n 2 -c 1
#SBATCH -o farm-%j.out
for i in 1 2 3 4 5; do
    srun --exclusive -n 1 -c 1 bash -c "mkdir run.$SLURM_JOB_ID.$i; ls -d run.$SLURM_JOB_ID.* | wc -l >> conc.$SLURM_JOB_ID; sleep 1; rmdir run.$SLURM_JOB_ID.$i" &
done
wait
echo farm done
EOS
    id=$(sbatch --parsable farm.sh)
    done_ok "$id"
    wait_for 30 grep -q "farm done" "farm-$id.out"
    [ "$(wc -l <"conc.$id")" -eq 5 ]
    [ "$(sort -n "conc.$id" | tail -n 1)" -le 2 ]
}

@test "sbatch job.sh ARG...: the script's \$1 ...; --wrap takes none" {
    # man sbatch, SYNOPSIS: sbatch [OPTIONS...] executable [args...]
    printf '#!/bin/bash\n#SBATCH -A vision -o args-%%j.out\necho "n=$# 1=$1 2=$2"\n' >args.sh
    id=$(sbatch --parsable args.sh one "two words")
    done_ok "$id"
    wait_for 30 grep -qx "n=2 1=one 2=two words" "args-$id.out"
    run -2 sbatch --wrap true extra
}

@test "a bash function exported from the submitting shell (module) reaches the job" {
    # man sbatch, --export=ALL: "all of the user's environment will be loaded"; bash
    # carries exported functions in it (BASH_FUNC_module%%), as Lmod's module is
    module() { echo "module called with: $*"; }
    export -f module
    cat >mod.sh <<'EOS'
#!/bin/bash
#SBATCH -A vision -o mod-%j.out
module load cuda/12.1
EOS
    id=$(sbatch --parsable mod.sh)
    unset -f module
    done_ok "$id"
    wait_for 30 grep -qx "module called with: load cuda/12.1" "mod-$id.out"
}

@test "sbatch -W waits for the job and exits with its status (an array: the highest)" {
    # man sbatch, -W: "Do not exit until the submitted job terminates. The exit code of
    # the sbatch command will be the same as the exit code of the submitted job"; for an
    # array "the highest exit code of all array tasks"
    run -3 sbatch -W -A vision --wrap 'exit 3'
    [[ $output =~ ^Submitted\ batch\ job\ [0-9]+$ ]]
    id=${output##* }
    [ "$(job_state "$id")" = FAILED ]
    run -0 sbatch -W --parsable -A vision --wrap true
    run -5 sbatch -W -A vision --array=1-3 --wrap 'exit $((SLURM_ARRAY_TASK_ID + 2))'
}

@test "an array as a whole: squeue folds pending tasks, -j ARRAY_ID; scancel ARRAY_ID_IDX, ARRAY_ID" {
    # man squeue, -r: "By default, pending job array elements are combined on one line";
    # %i: "<base_job_id>_<index>"; man scancel: "ARRAY_ID_IDX" one task, ARRAY_ID "all"
    aid=$(sbatch --parsable -A vision --hold --array=0-9%3 -J fold --wrap 'sleep 60')
    run -0 squeue -j "$aid" -h -o '%i %t'
    [ "$output" = "${aid}_[0-9%3] PD" ]
    run -0 scancel "${aid}_4"
    run -0 squeue -j "${aid}_[3-5]" -h -o '%i'
    [ "$output" = "${aid}_[3,5%3]" ]
    run -0 scontrol release "$aid"
    wait_for 30 array_running "$aid"
    run -0 squeue -j "$aid" -h -o '%i %t'
    grep -Eq "^${aid}_[0-9] R$" <<<"$output"
    run -0 scancel "$aid"
    wait_for 30 array_gone "$aid"
    run -1 scancel "${aid}_42"
    [[ $output == *"Invalid job id specified"* ]]
}

@test "dependencies as Slurm reads them: afterok on an ARRAY_ID waits for every task; _IDX, singleton, after, ?" {
    # man sbatch, -d: "afterok:job_id[:jobid...]"; an array's id means all of its tasks;
    # "singleton: ... after any previously launched jobs sharing the same job name and
    # user have terminated"; "after: ... after the specified jobs start or are cancelled"
    aid=$(sbatch --parsable -A vision --array=1-3 -o 'dep-%A_%a.out' --wrap 'sleep $SLURM_ARRAY_TASK_ID; echo done')
    id=$(sbatch --parsable -A vision -d "afterok:$aid" -o 'after-array-%j.out' --wrap "cat dep-${aid}_*.out | wc -l")
    done_ok "$id"
    wait_for 30 grep -qx 3 "after-array-$id.out"
    one=$(sbatch --parsable -A vision -d "afterany:${aid}_2" --wrap true)
    done_ok "$one"
    a=$(sbatch --parsable -A vision -J solo --wrap 'sleep 3')
    b=$(sbatch --parsable -A vision -J solo -d singleton --wrap true)
    run -0 "$DOCKET" show "$b" --json
    [ "$(jq -c '[.job.deps[].job]' <<<"$output")" = "[$a]" ]
    done_ok "$b"
    wait_for 30 state_in "$a" RUNNING COMPLETED
    c=$(sbatch --parsable -A vision -d "after:$a" --wrap true)
    done_ok "$c"
    # after: on a job not yet started waits for its start, not its end
    h=$(sbatch --parsable -A vision --hold -J late-start --wrap 'sleep 30')
    w=$(sbatch --parsable -A vision -d "after:$h" --wrap true)
    wait_for 30 test "$(squeue -h -j "$w" -o '%T %R')" = "PENDING (Dependency)"
    scontrol release "$h"
    done_ok "$w"
    [ "$(job_state "$h")" = RUNNING ] # it ran while $h still runs
    scancel "$h"
    # ... or for its cancellation before it starts
    h=$(sbatch --parsable -A vision --hold --wrap true)
    w=$(sbatch --parsable -A vision -d "after:$h" --wrap true)
    scancel "$h"
    done_ok "$w"
    # '?': "any of the dependencies are satisfied" (man sbatch, -d); one that failed
    # leaves the job waiting on the others, not DependencyNeverSatisfied
    x=$(sbatch --parsable -A vision --hold --wrap 'exit 1')
    y=$(sbatch --parsable -A vision --hold --wrap true)
    z=$(sbatch --parsable -A vision -d "afterok:$x?afterok:$y" --wrap true)
    [ "$("$DOCKET" show "$z" --json | jq .job.deps_any)" = true ]
    scontrol release "$x"
    wait_for 60 state_in "$x" FAILED
    wait_for 30 test "$(squeue -h -j "$z" -o '%T %R')" = "PENDING (Dependency)"
    scontrol release "$y"
    done_ok "$z"
    # met already by one of them: it starts at once; ',' and '?' together: refused
    done_ok "$(sbatch --parsable -A vision -d "afterok:$x?afterok:$y" --wrap true)"
    run -2 sbatch -A vision -d "afterok:$x?afterok:$y,afterok:$a" --wrap true
    [[ $output == *"cannot be mixed"* ]]
}

# tasks_completed ARRAY_ID N: at least N of the array's tasks COMPLETED
tasks_completed() {
    [ "$(ctl_get "/v1/jobs?array_id=$1&state=all&limit=1000&fields=state" |
        jq '[.jobs[] | select(.state == "COMPLETED")] | length')" -ge "$2" ]
}

@test "afterok on an ARRAY_ID of 300 tasks is one dependency: it waits for all of them, across a restart" {
    # man sbatch, -d: "afterok:job_id" of a job array's id waits for every task of the
    # array; docketd holds it as one dependency, whatever the array's size
    aid=$(sbatch --parsable -A vision --array=1-300 --hold -o 'big-%A_%a.out' --wrap 'echo $SLURM_ARRAY_TASK_ID')
    id=$(sbatch --parsable -A vision -d "afterok:$aid" -o 'after-big-%j.out' --wrap "cat big-${aid}_*.out | wc -l")
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq -c '.job.deps' <<<"$output")" = "[{\"type\":\"afterok\",\"job\":$aid,\"array\":true}]" ]
    wait_for 30 test "$(squeue -h -j "$id" -o '%T %R')" = "PENDING (Dependency)"
    # half of it runs and ends; docketd restarts: the ended half still counts
    scontrol release "${aid}_[1-150]"
    wait_for 240 tasks_completed "$aid" 150
    kill_pidfile "$T/ctl.pid"
    ctl_start "$PORT"
    wait_for 30 nodes_up 2
    sleep 2 # a cycle or two: it must still wait for the other half
    [ "$(squeue -h -j "$id" -o '%T %R')" = "PENDING (Dependency)" ]
    scontrol release "$aid"
    wait_for 240 tasks_completed "$aid" 300
    done_ok "$id"
    wait_for 30 grep -qx 300 "after-big-$id.out"
    # a whole array is one of the 128: four of them are four
    done_ok "$(sbatch --parsable -A vision -d "afterok:$aid,afterany:$aid,after:$aid,afterok:$aid" --wrap true)"
}

@test "one failed task of an array: afterok on it never runs, afternotok runs once every task ended" {
    # man sbatch, -d: afterok "ran successfully (ran to completion with an exit code of
    # zero)", afternotok "in some failed state"; for an array, every task counts; a job
    # whose dependency can never be met stays pending, DependencyNeverSatisfied
    aid=$(sbatch --parsable -A vision --array=1-4 -o 'fail-%A_%a.out' --wrap '[ "$SLURM_ARRAY_TASK_ID" != 3 ]')
    ok=$(sbatch --parsable -A vision -d "afterok:$aid" --wrap true)
    notok=$(sbatch --parsable -A vision -d "afternotok:$aid" --wrap true)
    any=$(sbatch --parsable -A vision -d "afterany:$aid" --wrap true)
    wait_for 60 never_satisfied "$ok"
    done_ok "$notok"
    done_ok "$any"
    never_satisfied "$ok"
    # the array has ended: a new afterok on it is never met either, afternotok is met
    late=$(sbatch --parsable -A vision -d "afterok:$aid" --wrap true)
    wait_for 30 never_satisfied "$late"
    done_ok "$(sbatch --parsable -A vision -d "afternotok:$aid" --wrap true)"
    # one task of it names that task alone
    done_ok "$(sbatch --parsable -A vision -d "afterok:${aid}_1" --wrap true)"
    three=$(sbatch --parsable -A vision -d "afterok:${aid}_3" --wrap true)
    wait_for 30 never_satisfied "$three"
    scancel "$ok" "$late" "$three"
}

@test "scancel --signal: to the steps by default, -b to the batch shell alone; the job goes on" {
    # man scancel, -s: "The name or number of the signal to send"; -b: "signals only the
    # batch step, but not any other steps"; by default "not sent to the batch step"
    cat >sig.sh <<'EOS'
#!/bin/bash
#SBATCH -A vision -o sig-%j.out
trap 'echo "batch got USR2"; touch got-batch.$SLURM_JOB_ID' USR2
srun bash -c 'trap "echo step got USR1; exit 0" USR1; touch ready.$SLURM_JOB_ID; while :; do sleep 1; done'
echo "step ended $?"
while [ ! -e got-batch.$SLURM_JOB_ID ]; do sleep 1; done
echo done
EOS
    id=$(sbatch --parsable sig.sh)
    wait_for 60 test -e "ready.$id"
    run -0 scancel --signal=USR1 "$id"
    wait_for 30 grep -qx "step ended 0" "sig-$id.out"
    grep -qx "step got USR1" "sig-$id.out"
    ! grep -q "batch got" "sig-$id.out"
    run -0 scancel -b -s SIGUSR2 "$id"
    done_ok "$id"
    wait_for 30 grep -qx done "sig-$id.out"
    grep -qx "batch got USR2" "sig-$id.out"
    h=$(sbatch --parsable -A vision --hold --wrap true)
    run -1 scancel -s USR1 "$h"
    [[ $output == *"only a running job takes a signal"* ]]
    run -2 scancel -s NOSUCH "$h"
    scancel "$h"
}

@test "afterok on a job that failed: pending, DependencyNeverSatisfied, until cancelled" {
    # man squeue, JOB REASON CODES: "DependencyNeverSatisfied: The job's dependency can
    # never be satisfied"; the job stays pending (no kill_invalid_depend) until scancel
    bad=$(sbatch --parsable -A vision --wrap 'exit 1')
    wait_for 60 state_in "$bad" FAILED
    late=$(sbatch --parsable -A vision -d "afterok:$bad" --wrap true)
    early=$(sbatch --parsable -A vision -d "afterok:$(sbatch --parsable -A vision --wrap 'sleep 2; exit 4')" --wrap true)
    for id in "$late" "$early"; do
        wait_for 60 never_satisfied "$id"
        run -0 squeue -j "$id" -h -o '%T %R'
        [ "$output" = "PENDING (DependencyNeverSatisfied)" ]
    done
    run -0 scontrol show job "$late"
    [[ $output == *"Reason=DependencyNeverSatisfied"* ]]
    # the way out, as in Slurm: scontrol update Dependency= (an empty list) lets it run
    run -0 scontrol update JobId="$late" Dependency=
    [ -z "$output" ]
    done_ok "$late"
    run -0 scancel "$early"
    wait_for 30 state_in "$early" CANCELLED
}

@test "scontrol update of a pending job: TimeLimit, JobName, Dependency, Comment; as sbatch checks" {
    # man scontrol, "JOBS - SPECIFICATIONS FOR UPDATE COMMAND": TimeLimit=, JobName=,
    # Dependency=, Comment= change a pending job, silently; "Only the Slurm administrator or
    # root can increase job's TimeLimit"; a bad value changes nothing
    first=$(sbatch --parsable -A vision --hold --wrap true)
    id=$(sbatch --parsable -A vision --hold -t 30 -J before -o 'upd-%j.out' \
        --wrap 'echo "name=$SLURM_JOB_NAME"')
    run -0 scontrol update JobId="$id" TimeLimit=10 JobName=after Comment="checked by hand" \
        Dependency="afterok:$first"
    [ -z "$output" ]
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq -r .job.state <<<"$output")" = HELD ] # an update is no release
    [ "$(jq .job.time_limit_ms <<<"$output")" -eq 600000 ]
    [ "$(jq -r .job.name <<<"$output")" = after ]
    [ "$(jq -r .job.comment <<<"$output")" = "checked by hand" ]
    [ "$(jq -r '.job.deps[0].job' <<<"$output")" = "$first" ]
    # a dependency that closes a cycle would never be met: refused
    run -1 scontrol update JobId="$first" Dependency="afterany:$id"
    [[ $output == *"would wait on itself"* ]]
    # refused whole, naming what: the job is as it was
    run -1 scontrol update JobId="$id" JobName=other Foo=bar
    [[ $output == *"Update of this parameter is not supported: Foo=bar"* ]]
    run -1 scontrol update JobId="$id" TimeLimit=banana
    [[ $output == *"Invalid TimeLimit value: banana"* ]]
    run -1 "$DOCKET" update "$id" --name other --nodes 9
    [[ $output == *"nodes"* ]]
    run -1 "$DOCKET" update "$id" --name other --dependency afterok:999999
    [[ $output == *"no such job 999999"* ]]
    run -0 curl -s -X PATCH -H "Authorization: Bearer $TOKEN" -d '{"name": "x", "gpus": 2}' \
        "http://127.0.0.1:$PORT/v1/jobs/$id"
    [ "$(jq -r .error.field <<<"$output")" = gpus ] # 400 naming it, the name not changed
    [ "$("$DOCKET" show "$id" --json | jq -r .job.name)" = after ]
    # a member lowers her own job's limit, may not raise it, and may not touch another's
    "$DOCKET" projects members add vision alice >/dev/null
    tok=$("$DOCKET" token create --user alice --role member --ttl 1d 2>/dev/null)
    as_alice() { DOCKET_URL=http://127.0.0.1:$PORT DOCKET_TOKEN=$tok "$@"; }
    a=$(as_alice sbatch --parsable -A vision --hold -t 30 --wrap true)
    run -1 as_alice scontrol update JobId="$a" TimeLimit=1:00:00
    [[ $output == *"only an admin raises a job's time limit"* ]]
    run -0 as_alice scontrol update JobId="$a" TimeLimit=20
    run -1 as_alice scontrol update JobId="$id" TimeLimit=5
    run -0 scontrol update JobId="$a" TimeLimit=45 # the admin may
    [ "$("$DOCKET" show "$a" --json | jq .job.time_limit_ms)" -eq 2700000 ]
    # each change is in the audit trail and the job's events
    run -0 "$DOCKET" audit --action job.update --target "job:$id" --json
    jq -e '.entries | length == 1 and .[0].after.name == "after" and .[0].before.name == "before"' <<<"$output"
    "$DOCKET" show "$id" --json | jq -e '[.events[] | select(.type == "update")] | length == 1'
    # released, it waits for its new dependency, then runs under its new name
    scontrol release "$id" "$first" "$a"
    done_ok "$id"
    wait_for 30 test -s "upd-$id.out"
    grep -qx name=after "upd-$id.out"
    run -1 scontrol update JobId="$id" TimeLimit=5
    [[ $output == *"already COMPLETED"* ]]
}

@test "scontrol update TimeLimit of a running job: only lowered; past, it ends as TIMEOUT" {
    # Slurm lets users only lower a job's time limit; a limit already passed ends the job
    # at once with TIMEOUT, as the time limit would
    id=$(sbatch --parsable -A vision -t 30 --wrap 'sleep 300')
    wait_for 60 state_in "$id" RUNNING
    run -1 scontrol update JobId="$id" TimeLimit=60
    [[ $output == *"may only go down"* ]]
    run -1 scontrol update JobId="$id" JobName=renamed
    [[ $output == *"only its time limit changes"* ]]
    run -0 scontrol update JobId="$id" TimeLimit=20
    [ "$("$DOCKET" show "$id" --json | jq .job.time_limit_ms)" -eq 1200000 ]
    run -0 "$DOCKET" update "$id" --time 1s
    wait_for 60 state_in "$id" TIMEOUT
}
