#!/usr/bin/env bats
# slurm_site.bats - a Slurm site moving in: node features and --constraint, GPU types
# as gres.conf names them (any case, site aliases), partitions as node sets, and a
# site imported from its slurm.conf (docs/slurm.md). A real docketd and two real
# docket-node agents on loopback whose GPUs differ: node a 8xA100-80GB with features
# a100,ib,gpu80g; node b 8xV100-32GB with feature v100. One cluster for the file; every
# process it started is stopped by pid in teardown_file.

bats_require_minimum_version 1.5.0

CLUSTER_NAME=slurmsite
AGENT_GPUS_a=8xA100-80GB
AGENT_GPUS_b=8xV100-32GB
AGENT_LABELS_a="features=a100,ib,gpu80g"
AGENT_LABELS_b="features=v100"
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
    wait_for 60 state_in "$1" COMPLETED FAILED TIMEOUT CANCELLED NODE_FAIL OOM
    s=$(job_state "$1")
    [[ $s == COMPLETED ]] || { echo "job $1 is $s"; "$DOCKET" show "$1"; false; }
}

# ran_on ID NODE: job ID ran on node NODE (a or b), as its script saw it
ran_on() {
    done_ok "$1"
    wait_for 30 test -s "$W/where-$1.out"
    [ "$(cat "$W/where-$1.out")" = "$PREFIX-$2" ]
}

@test "-C reads Slurm's grammar over node features: &, |, (), one-node [a|b], a*N" {
    cat >feat.sh <<'EOS'
#!/bin/bash
#SBATCH --account=vision
#SBATCH --gres=gpu:1
#SBATCH --time=5
#SBATCH --output=where-%j.out
echo "$SLURMD_NODENAME"
EOS
    id=$(sbatch --parsable -C 'a100&ib' feat.sh)
    ran_on "$id" a
    id=$(sbatch --parsable --constraint=v100 feat.sh)
    ran_on "$id" b
    id=$(sbatch --parsable -C '(h100|gpu80g)&ib' feat.sh)
    ran_on "$id" a
    id=$(sbatch --parsable -C '[v100|h100]' feat.sh)
    ran_on "$id" b
    id=$(sbatch --parsable -C 'v100*1' feat.sh)
    ran_on "$id" b
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq -r .job.constraint <<<"$output")" = "v100*1" ]
}

@test "-C that no node meets, or that Docket cannot place, is refused with the reason" {
    printf '#!/bin/bash\n#SBATCH -A vision --gres=gpu:1 -t 5\ntrue\n' >r.sh
    run -1 sbatch -C h100 r.sh
    [[ $output == *"can never run"*"constraint"* ]]
    run -1 sbatch -C 'a100&' r.sh
    [[ $output == *"the constraint ends too soon at character 6"* ]]
    run -1 sbatch -N2 -C 'a100*1&v100*1' r.sh
    [[ $output == *"node counts in a constraint"* ]]
    run -1 sbatch -N2 -C '[a100|v100]' r.sh
    [[ $output == *"matching OR"* ]]
    run -1 sbatch -C 'a100;rm' r.sh
    [[ $output == *"not in Slurm's grammar"* ]]
    run -1 "$DOCKET" submit -p vision -g 1 -C 'a100 ib' -- true
    [[ $output == *"constraint"* ]]
}

@test "a held job's constraint survives a docketd restart and still places it" {
    cat >held.sh <<'EOS'
#!/bin/bash
#SBATCH --account=vision --gres=gpu:1 --time=5 --output=where-%j.out
#SBATCH --hold
#SBATCH -C v100|h100
echo "$SLURMD_NODENAME"
EOS
    id=$(sbatch --parsable held.sh)
    kill_pidfile "$T/ctl.pid"
    ctl_start "$PORT"
    wait_for 30 nodes_up 2
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq -r .job.constraint <<<"$output")" = "v100|h100" ]
    "$DOCKET" release "$id"
    ran_on "$id" b
}
