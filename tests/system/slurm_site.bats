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

@test "GPU types as gres.conf writes them: any case, and the site's aliases" {
    cat >aliases.yaml <<'EOS'
gpu_aliases:
  a100: A100-80GB
  Volta: V100-32GB
EOS
    "$DOCKET" apply -f aliases.yaml >/dev/null
    cat >gres.sh <<'EOS'
#!/bin/bash
#SBATCH --account=vision --time=5 --output=where-%j.out
echo "$SLURMD_NODENAME"
EOS
    id=$(sbatch --parsable --gres=gpu:a100:1 gres.sh)
    ran_on "$id" a
    [ "$("$DOCKET" show "$id" --json | jq -r .job.gpu_type)" = A100-80GB ]
    id=$(sbatch --parsable --gres=gpu:VOLTA:2 gres.sh)
    ran_on "$id" b
    id=$(sbatch --parsable --gpus-per-node=v100-32gb:1 gres.sh)
    ran_on "$id" b
    [ "$("$DOCKET" show "$id" --json | jq -r .job.gpu_type)" = V100-32GB ]
    # --exclusive sizes the job from the node the alias names
    id=$(sbatch --parsable --gres=gpu:a100:1 --exclusive gres.sh)
    ran_on "$id" a
    [ "$("$DOCKET" show "$id" --json | jq .job.gpus)" -eq 8 ]
    run -1 sbatch --gres=gpu:h100:1 gres.sh
    [[ $output == *"no node has GPU type 'h100'"* ]]
    # an alias named twice, whatever its case, is refused with the field
    printf 'gpu_aliases:\n  a100: A100-80GB\n  A100: V100-32GB\n' >twice.yaml
    run -1 "$DOCKET" apply -f twice.yaml
    [[ $output == *"gpu_aliases.A100"*"named twice"* ]]
}

@test "partitions are node sets: -p, the default, times, projects; squeue -p and sinfo" {
    cat >parts.yaml <<'EOS'
partitions:
  - {name: ampere, nodes: {zone: a}, default_time: 20m, max_time: 2h, default: true}
  - {name: volta, nodes: {zone: b}, max_time: 1h, tier: low, projects: [nlp, vision]}
  - {name: closed, nodes: {zone: b}, projects: [explore]}
EOS
    "$DOCKET" apply -f parts.yaml >/dev/null
    cat >part.sh <<'EOS'
#!/bin/bash
#SBATCH --account=vision --gres=gpu:1 --output=where-%j.out
echo "$SLURMD_NODENAME"
sleep 2
EOS
    id=$(sbatch --parsable part.sh) # the default partition: zone a, its default time
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq -r .job.partition <<<"$output")" = ampere ]
    [ "$(jq .job.time_limit_ms <<<"$output")" -eq 1200000 ]
    squeue -h -p ampere -o '%i %P' | grep -qx "$id ampere"
    [ -z "$(squeue -h -p volta -o '%i' | grep -x "$id")" ]
    ran_on "$id" a
    id=$(sbatch --parsable -p volta -t 30 part.sh)
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq -r .job.tier <<<"$output")" = low ]
    squeue -h -p gpu,volta -o '%i %P' | grep -qx "$id volta"
    ran_on "$id" b
    run -1 sbatch -p volta -t 90 part.sh
    [[ $output == *"partition 'volta' allows at most 60 minutes"* ]]
    run -1 sbatch -p closed part.sh
    [[ $output == *"partition 'closed' does not admit project 'vision'"* ]]
    run -1 sbatch -p nowhere part.sh
    [[ $output == *"invalid partition 'nowhere'"* ]]
    # sinfo: Slurm's columns, per partition and state, the default starred
    run -0 sinfo
    [[ ${lines[0]} == "PARTITION AVAIL  TIMELIMIT NODES  STATE NODELIST" ]]
    [[ $output =~ ampere\*\ +up\ +2:00:00\ +1\ +idle\ $PREFIX-a ]]
    [[ $output =~ volta\ +up\ +1:00:00\ +1\ +idle\ $PREFIX-b ]]
    [[ $output =~ closed\ +up\ +infinite\ +1\ +idle\ $PREFIX-b ]]
    run -0 sinfo -N -h -p volta
    [ "$output" = "$(printf '%-16s %5d %9s %5s' "$PREFIX-b" 1 volta idle)" ]
    # a native job names no partition and keeps every node
    run -0 "$DOCKET" submit -p vision -g 1 --select zone=b --parsable -- true
    done_ok "$output"
    printf 'partitions: []\n' >none.yaml
    "$DOCKET" apply -f none.yaml >/dev/null
    run -0 sinfo -h
    [[ $output == *"docket*"* ]]
}

@test "scontrol update Partition= and Features= move a pending job to other nodes, as checked" {
    # man scontrol, update: Partition=<name> and Features=<features> of a pending job; the
    # new partition's nodes, its MaxTime and AllowAccounts apply as at submission
    cat >moves.yaml <<'EOS'
partitions:
  - {name: ampere, nodes: {zone: a}, max_time: 2h, default: true}
  - {name: volta, nodes: {zone: b}, max_time: 1h, projects: [nlp, vision]}
  - {name: closed, nodes: {zone: b}, projects: [explore]}
EOS
    "$DOCKET" apply -f moves.yaml >/dev/null
    cat >move.sh <<'EOS'
#!/bin/bash
#SBATCH --account=vision --gres=gpu:1 --time=90 --output=where-%j.out --hold
echo "$SLURMD_NODENAME"
EOS
    id=$(sbatch --parsable move.sh) # ampere: zone a
    run -1 scontrol update JobId="$id" Partition=volta # 90 minutes > volta's MaxTime
    [[ $output == *"partition 'volta' allows at most 60 minutes"* ]]
    run -1 scontrol update JobId="$id" Partition=closed TimeLimit=30
    [[ $output == *"partition 'closed' does not admit project 'vision'"* ]]
    run -1 scontrol update JobId="$id" Partition=nowhere
    [[ $output == *"invalid partition 'nowhere'"* ]]
    [ "$("$DOCKET" show "$id" --json | jq -r .job.partition)" = ampere ] # nothing changed
    run -0 scontrol update JobId="$id" Partition=volta TimeLimit=30
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq -r .job.partition <<<"$output")" = volta ]
    [ "$(jq -r .job.selectors.zone <<<"$output")" = b ] # ampere's zone a is gone
    squeue -h -p volta -o '%i %P' | grep -qx "$id volta"
    # the change is the job's for good: a docketd restart rebuilds it from the database
    kill_pidfile "$T/ctl.pid"
    ctl_start "$PORT"
    wait_for 30 nodes_up 2
    [ "$("$DOCKET" show "$id" --json | jq -r .job.partition)" = volta ]
    scontrol release "$id"
    ran_on "$id" b
    # features: a constraint no node of its partition meets is refused, one that is met
    # moves it
    id=$(sbatch --parsable -C v100 -p volta -t 10 move.sh)
    run -1 scontrol update JobId="$id" Features='a100&ib'
    [ "$("$DOCKET" show "$id" --json | jq -r .job.constraint)" = v100 ]
    run -0 scontrol update JobId="$id" Partition=ampere Features='a100&ib'
    scontrol release "$id"
    ran_on "$id" a
    printf 'partitions: []\n' >none.yaml
    "$DOCKET" apply -f none.yaml >/dev/null
}

@test "--exclusive and --mem=0 take a node of the job's partition whole, never another's" {
    # man sbatch, --exclusive: "The job allocation can not share nodes with other running
    # jobs"; the node is one of the partition's (a CPU-only partition: no GPUs)
    cat >whole.yaml <<'EOS'
partitions:
  - {name: volta, nodes: {zone: b}, default: true}
  - {name: nowhere, nodes: {zone: z}}
EOS
    "$DOCKET" apply -f whole.yaml >/dev/null
    id=$(sbatch --parsable -A vision -t 5 --exclusive --hold --wrap true)
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq -c '[.job.partition, .job.gpus, .job.cpus]' <<<"$output")" = '["volta",8,16]' ]
    scancel "$id"
    # a partition without nodes has no node to take whole: refused, as Slurm refuses a
    # request no node can meet
    run -1 sbatch -A vision -t 5 -p nowhere --exclusive --wrap true
    [[ $output == *"no node in the job's partition to take whole; see \`sinfo\`"* ]]
    run -1 sbatch -A vision -t 5 -p nowhere --mem=0 --wrap true
    [[ $output == *"no node in the job's partition to take whole"* ]]
    printf 'partitions: []\n' >none.yaml
    "$DOCKET" apply -f none.yaml >/dev/null
}

@test "SLURM_JOB_PARTITION and squeue's PARTITION: the partition the job runs in, not its tier" {
    # man sbatch, OUTPUT ENVIRONMENT VARIABLES: "SLURM_JOB_PARTITION Name of the partition
    # in which the job is running"; squeue %P "Partition of the job or job step"
    printf 'partitions:\n  - {name: volta, nodes: {zone: b}, tier: low, default: true}\n' >p1.yaml
    "$DOCKET" apply -f p1.yaml >/dev/null
    id=$(sbatch --parsable -A vision -t 5 -o 'part-%j.out' --hold --wrap 'echo "$SLURM_JOB_PARTITION"')
    [ "$(squeue -h -j "$id" -o '%P')" = volta ]
    scontrol release "$id"
    done_ok "$id"
    wait_for 30 test -s "part-$id.out"
    [ "$(cat "part-$id.out")" = volta ]
    # a site without partitions: sinfo's one partition, "docket", for every job
    printf 'partitions: []\n' >p0.yaml
    "$DOCKET" apply -f p0.yaml >/dev/null
    id=$(sbatch --parsable -A vision -t 5 -o 'part-%j.out' --hold --wrap 'echo "$SLURM_JOB_PARTITION"')
    [ "$(squeue -h -j "$id" -o '%P')" = docket ]
    scontrol release "$id"
    done_ok "$id"
    wait_for 30 test -s "part-$id.out"
    [ "$(cat "part-$id.out")" = docket ]
    sinfo -h | grep -q '^docket\*'
}

# import_site DIR OUT: docket import slurm over a sample site's files (tests/data/slurm)
import_site() {
    local d=$BATS_TEST_DIRNAME/../data/slurm/$1 args=()
    args=(--conf "$d/slurm.conf")
    [[ ! -f $d/gres.conf ]] || args+=(--gres "$d/gres.conf")
    [[ ! -f $d/sacctmgr.dump ]] || args+=(--sacctmgr "$d/sacctmgr.dump")
    [[ ! -f $d/qos.txt ]] || args+=(--qos "$d/qos.txt")
    "$DOCKET" import slurm "${args[@]}" -o "$2"
}

@test "import slurm: three sample sites give policies docketd accepts, and say what is left out" {
    run -0 import_site small small.json
    [[ $output == *"1 partitions, 4 nodes, 2 projects"* ]]
    [ "$(jq -c '.partitions[0] | [.name, .default, .default_time, .max_time]' small.json)" = '["gpu",true,7200,86400]' ]
    [ "$(jq -c '[.projects[] | [.name, .guarantee_gpus, .members, .default_for]]' small.json)" = \
        '[["alpha",9.6,["ann","bo"],["ann","bo"]],["beta",6.4,["bo","cy"],["cy"]]]' ]
    [ "$(jq -r '.node_labels.node3["partition.gpu"]' small.json)" = yes ]
    run -0 "$DOCKET" apply --dry-run -f small.json
    [[ $output == "valid, would apply"*"2 projects, 4 members, 3 defaults" ]]

    run -0 import_site gpu-features gpu.json
    [[ $output == *"not mapped: slurm.conf:13: partition cpu: OverSubscribe=YES"* ]]
    [[ $output == *"not mapped: user carol in nlp: MaxJobs=4"* ]]
    [ "$(jq -r '.node_labels.a100n02.features' gpu.json)" = a100,ib,gpu80g ]
    [ "$(jq -r '.node_labels.v100n01["partition.a100"]' gpu.json)" = null ]
    [ "$(jq -c '.partitions[1] | [.name, .nodes, .projects, .max_time]' gpu.json)" = \
        '["a100",{"partition.a100":"yes"},["vision","nlp"],86400]' ]
    [ "$(jq -c '[.groups[0].name, (.projects[] | select(.name == "vision") | [.group, .gpu_limit, .user_max_running])]' gpu.json)" = \
        '["ai",["ai",12,20]]' ]
    [ "$(jq .settings.preemption gpu.json)" = false ]
    run -0 "$DOCKET" apply --dry-run -f gpu.json

    run -0 import_site qos-heavy qos.json
    [ "$(jq -c '[.tiers[].name]' qos.json)" = '["urgent","high","normal","low","scavenger"]' ]
    [ "$(jq -c '.projects[] | select(.name == "chem") | [.tier, .gpu_limit, .max_running, .members]' qos.json)" = \
        '["high",24,40,["hana","ivan"]]' ]
    [ "$(jq -c '.partitions[] | select(.name == "urgent") | [.tier, .projects, .max_time]' qos.json)" = \
        '["urgent",["ops"],43200]' ]
    [[ $output == *"not mapped: qos:5: low preempts urgent, which is not below it in priority"* ]]
    [[ $output == *"not mapped: qos scavenger: PreemptMode=SUSPEND"* ]]
    # QOS limits with a home: high's MaxTRESPU and MaxJobsPU on chem, its project; its
    # GrpTRES=gres/gpu=32 above chem's own 24 (the lower wins); urgent's on ops
    [ "$(jq -c '[.projects[] | select(.name == "chem" or .name == "ops") | [.name, .gpu_limit, .user_gpu_limit, .user_max_running]]' qos.json)" = \
        '[["ops",null,16,null],["chem",24,8,4]]' ]
    [[ $output != *"qos high: MaxTRESPU"* ]]
    [[ $output == *"not mapped: user oli: AdminLevel=Operator"* ]]
    run -0 "$DOCKET" apply --dry-run -f qos.json
    [[ $output == *"5 projects"* || $output == *"4 projects"* ]]
}

@test "import slurm --qos: MaxWall, MaxTRESPU, MaxJobsPU, GrpTRES onto partitions and projects" {
    # sacctmgr show qos: MaxWall bounds a job's time, MaxTRESPU/MaxJobsPU each user's
    # GPUs/jobs, GrpTRES the QOS's GPUs in all; Docket's homes: the partitions that run at
    # the QOS (max_time), the projects at its tier (user_gpu_limit, user_max_running, and
    # gpu_limit when one project alone is there); the rest is said
    d=$BATS_TEST_DIRNAME/../data/slurm/qos-heavy
    cat >limits.qos <<'EOS'
Name|Priority|Preempt|PreemptMode|GrpTRES|MaxWall|MaxTRESPU|MaxJobsPU
urgent|1000|normal,scavenger,low,high|cluster||06:00:00|gres/gpu=16|
high|500|normal,scavenger,low|cluster|gres/gpu=32||gres/gpu=8|4
normal|100|scavenger,low|cluster|gres/gpu=64||cpu=4|
low|50|scavenger|cluster||01:00:00||
scavenger|10||cluster|||gres/gpu=2|
EOS
    run -0 "$DOCKET" import slurm --conf "$d/slurm.conf" --sacctmgr "$d/sacctmgr.dump" --qos limits.qos -o lim.json
    [ "$(jq -c '[.partitions[] | [.name, .max_time]]' lim.json)" = '[["batch",259200],["urgent",21600],["scavenge",86400]]' ]
    [ "$(jq -c '[.projects[] | [.name, .gpu_limit, .user_gpu_limit, .user_max_running]]' lim.json)" = \
        '[["ops",null,16,null],["chem",24,8,4],["bio",64,null,10],["students",null,null,null]]' ]
    [[ $output == *"not mapped: qos normal: MaxTRESPU=cpu=4: only GPU counts map"* ]]
    [[ $output == *"not mapped: qos scavenger: MaxTRESPU=gres/gpu=2: no project is at this tier"* ]]
    [[ $output == *"not mapped: qos low: MaxWall=01:00:00: no partition runs at this QOS"* ]]
    run -0 "$DOCKET" apply --dry-run -f lim.json
}

@test "import slurm --qos: GrpJobs, MaxSubmitPU onto projects and settings; MaxTRES, UsageFactor said" {
    # sacctmgr show qos: GrpJobs bounds the QOS's running jobs, MaxSubmitPU each user's
    # submitted ones, MaxTRES each job, UsageFactor what a job's use is charged. Docket's
    # homes: max_running of the one project at the tier (the lower wins: chem's account
    # has GrpJobs=40), settings.user_max_queued when every QOS with projects gives the
    # same; no home for the other two: said with the reason
    d=$BATS_TEST_DIRNAME/../data/slurm/qos-heavy
    cat >more.qos <<'EOS'
Name|Priority|Preempt|PreemptMode|GrpJobs|MaxSubmitPU|MaxTRES|UsageFactor
urgent|1000|normal,scavenger,low,high|cluster|8|200|gres/gpu=16|2.000000
high|500|normal,scavenger,low|cluster|60|200||1.000000
normal|100|scavenger,low|cluster||200||
low|50|scavenger|cluster||200||0.500000
scavenger|10||cluster|3|||0.000000
EOS
    run -0 "$DOCKET" import slurm --conf "$d/slurm.conf" --sacctmgr "$d/sacctmgr.dump" --qos more.qos -o more.json
    [ "$(jq -c '[.projects[] | [.name, .max_running]]' more.json)" = \
        '[["ops",8],["chem",40],["bio",null],["students",null]]' ]
    [ "$(jq -c .settings more.json)" = '{"user_max_queued":200}' ]
    [[ $output == *"not mapped: qos scavenger: GrpJobs=3: no project is at this tier"* ]]
    [[ $output == *"not mapped: qos urgent: MaxTRES=gres/gpu=16: a cap on each job's size"* ]]
    [[ $output == *"not mapped: qos low: UsageFactor=0.500000: Docket's fair share charges a job by its GPU type"* ]]
    [[ $output != *"MaxSubmitPU"* && $output != *"qos high: GrpJobs"* ]]
    run -0 "$DOCKET" apply --dry-run -f more.json
    # one QOS with projects that gives another MaxSubmitPU: no one cap fits, each is said
    sed -i 's/^high|500|\(.*\)|60|200|/high|500|\1|60|50|/' more.qos
    run -0 "$DOCKET" import slurm --conf "$d/slurm.conf" --sacctmgr "$d/sacctmgr.dump" --qos more.qos -o more.json
    [ "$(jq -c .settings more.json)" = null ]
    [[ $output == *"not mapped: qos high: MaxSubmitPU=50: Docket's cap on a user's queued jobs is one for the site"* ]]
}

@test "import slurm: hostile site files are read as far as they go, never crash the import" {
    printf 'NodeName=n[1-\nPartitionName=p Nodes=n[9-1] MaxTime=banana\nNodeName=x Gres=gpu:a100:zz\\\n' >bad.conf
    printf "Account - 'a b':Fairshare=x\nUser - :::\nnonsense\n" >bad.dump
    printf 'Name|Priority\n|5\nweird|notanumber|extra|cells\n' >bad.qos
    run -0 "$DOCKET" import slurm --conf bad.conf --sacctmgr bad.dump --qos bad.qos -o bad.json
    [[ $output == *"does not read as a host list"* ]]
    [[ $output == *"not an entity line"* ]]
    [[ $output == *"a row without a Name"* ]]
    jq -e . bad.json >/dev/null
    run -1 "$DOCKET" import slurm --conf /nonexistent/slurm.conf
    [[ $output == *"cannot read '/nonexistent/slurm.conf'"* ]]
    run -2 "$DOCKET" import pbs --conf bad.conf
}

@test "an imported site, applied once: features, partitions, GPU names, 3,000 members; jobs placed" {
    cat >site.conf <<EOS
ClusterName=moved
NodeName=$PREFIX-a CPUs=16 Gres=gpu:a100:8 Feature=a100,ib
NodeName=$PREFIX-b CPUs=16 Gres=gpu:v100:8 Feature=v100
PartitionName=ampere Nodes=$PREFIX-a MaxTime=2:00:00 AllowAccounts=vision
PartitionName=all Nodes=$PREFIX-a,$PREFIX-b Default=YES DefaultTime=30
EOS
    {
        echo "Cluster - 'moved':Fairshare=1"
        echo "Parent - 'root'"
        echo "Account - 'vision':Fairshare=3:GrpTRES=gres/gpu=16"
        echo "Account - 'nlp':Fairshare=1"
        echo "Parent - 'vision'"
        for i in $(seq 1 3000); do echo "User - 'u$i':DefaultAccount='vision':Fairshare=1"; done
        echo "Parent - 'nlp'"
        echo "User - 'u1':DefaultAccount='vision':Fairshare=1"
    } >site.dump
    run -0 "$DOCKET" import slurm --conf site.conf --sacctmgr site.dump --cluster -o site.json
    [ "$(jq -c .gpu_aliases site.json)" = '{"a100":"A100-80GB","v100":"V100-32GB"}' ]
    run -0 "$DOCKET" apply -f site.json
    [[ $output == *"2 projects, 3001 members, 3000 defaults" ]]
    run -0 "$DOCKET" nodes --json
    [ "$(jq -r --arg n "$PREFIX-a" '.nodes[] | select(.name == $n) | .labels | [.features, .["partition.ampere"], .zone] | join(" ")' <<<"$output")" = "a100,ib yes a" ]
    run -0 "$DOCKET" projects members list vision --json
    [ "$(jq '.members | length' <<<"$output")" -eq 3000 ]
    cat >moved.sh <<'EOS'
#!/bin/bash
#SBATCH --account=vision --output=where-%j.out
#SBATCH --gres=gpu:a100:1 -C ib
echo "$SLURMD_NODENAME"
EOS
    id=$(sbatch --parsable -p ampere moved.sh)
    ran_on "$id" a
    id=$(sbatch --parsable --gres=gpu:V100:1 -A nlp --wrap 'echo "$SLURMD_NODENAME" >where-$SLURM_JOB_ID.out')
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq -r '[.job.partition, .job.time_limit_ms] | join(" ")' <<<"$output")" = "all 1800000" ]
    ran_on "$id" b
    run -1 sbatch -p ampere -A nlp moved.sh
    [[ $output == *"does not admit project 'nlp'"* ]]
    # labels a node cannot hold with its own: refused before anything is written
    many=$(for i in $(seq 1 13); do printf '"l%d": "v",' "$i"; done)
    printf '{"node_labels": {"%s": {%s "last": "v"}}}' "$PREFIX-a" "$many" >many.json
    run -1 "$DOCKET" apply -f many.json
    [[ $output == *"node $PREFIX-a would have 18 labels with its own: at most 16"* ]]
    run -0 "$DOCKET" nodes --json
    [ "$(jq --arg n "$PREFIX-a" '.nodes[] | select(.name == $n) | .labels | length' <<<"$output")" -eq 4 ]
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
    printf 'partitions:\n  - {name: later, nodes: {zone: b}, max_time: 1h}\n' >later.yaml
    "$DOCKET" apply -f later.yaml >/dev/null
    kill_pidfile "$T/ctl.pid"
    ctl_start "$PORT"
    wait_for 30 nodes_up 2
    run -0 sinfo -h -p later # the partitions came back with the policy
    [[ $output == "later"*"1:00:00"*"$PREFIX-b" ]]
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq -r .job.constraint <<<"$output")" = "v100|h100" ]
    "$DOCKET" release "$id"
    ran_on "$id" b
}
