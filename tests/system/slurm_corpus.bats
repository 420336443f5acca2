#!/usr/bin/env bats
# slurm_corpus.bats - the corpus of 40 Slurm batch scripts (tests/system/slurm_corpus/,
# its README says what each is and what stands in for python) on a site imported from
# its own slurm.conf, gres.conf and sacctmgr dump with `docket import slurm`: one
# cluster (a real docketd and four real docket-node agents on loopback: two A100 nodes,
# an H100 node, a CPU node, as site/slurm.conf names them), every script submitted as
# expect.tsv says, then each compared with what Slurm does. The last test prints the
# score, "N of 40 accepted as Slurm accepts them, M ran unchanged". Every process it
# started is stopped by pid in teardown_file.

bats_require_minimum_version 1.5.0

CLUSTER_NAME=corpus
CLUSTER_NODES="a b c d"
AGENT_GPUS_a=8xA100-80GB
AGENT_GPUS_b=8xA100-80GB
AGENT_GPUS_c=8xH100-80GB
AGENT_GPUS_d=0
load lib/cluster
AGENT_EXTRA=(--addr 127.0.0.1 --slurm-cli "$DOCKET")
CORPUS=$BATS_TEST_DIRNAME/slurm_corpus

# site_names: the site's node names as this cluster's (slurm.conf names a100n01 ...)
site_names() {
    sed -e "s/a100n01/$PREFIX-a/g" -e "s/a100n02/$PREFIX-b/g" -e "s/h100n01/$PREFIX-c/g" \
        -e "s/cpun01/$PREFIX-d/g"
}

setup_file() {
    [[ -x $DOCKET && -x $DOCKETD_BIN && -x $AGENT_BIN ]] || skip "docket, docketd or docket-node not built"
    cluster_start
    mkdir -p "$T/bin" "$T/site"
    for c in sbatch squeue scancel scontrol srun sinfo sacct; do ln -s "$DOCKET" "$T/bin/$c"; done
    # the site as its admin would move it: tiers and classes first, then the import
    "$DOCKET" apply -f "$BATS_TEST_DIRNAME/../../examples/policy.yaml" >/dev/null
    site_names <"$CORPUS/site/slurm.conf" >"$T/site/slurm.conf"
    site_names <"$CORPUS/site/gres.conf" >"$T/site/gres.conf"
    "$DOCKET" import slurm --conf "$T/site/slurm.conf" --gres "$T/site/gres.conf" \
        --sacctmgr "$CORPUS/site/sacctmgr.dump" --cluster -o "$T/site.json" 2>"$T/import.err"
    "$DOCKET" apply -f "$T/site.json" >/dev/null
    cp "$CORPUS"/*.sh "$CORPUS/data/params.txt" "$W/"
}

teardown_file() {
    cluster_stop
}

setup() {
    cd "$W"
    PATH=$T/bin:$CORPUS/bin:$PATH
}

# rows: expect.tsv without its comments
rows() {
    grep -v '^#' "$CORPUS/expect.tsv"
}

# submit_all: each row's sbatch, in order, from the submitting shell a user has (the
# site's exported `module`, CONDA_ROOT); $T/ids has "LABEL ID" (ID "refused" when sbatch
# refused it), $T/err-LABEL what sbatch said, $T/rc-LABEL its status
submit_all() {
    source "$CORPUS/bin/modules.bash"
    export CONDA_ROOT=$CORPUS/conda
    echo "corpus: 27 ok run 0 (an earlier run's line)" >log-exp-append.txt
    : >"$T/ids"
    local label script opts args slurm marker count docket o a id rc
    while IFS=$'\t' read -r label script opts args slurm marker count docket; do
        o=() a=()
        [[ $opts == - ]] || read -ra o <<<"$(with_ids "$opts")"
        [[ $args == - ]] || read -ra a <<<"$(with_ids "$args")"
        rc=0
        id=$(sbatch --parsable "${o[@]}" "$script" "${a[@]}" 2>"$T/err-$label") || rc=$?
        echo "$rc" >"$T/rc-$label"
        [[ $rc -eq 0 || -n $id ]] || id=refused
        echo "$label ${id:-refused}" >>"$T/ids"
    done < <(rows)
}

with_ids() { # WORDS: each @LABEL replaced by that row's job id (a row above it)
    local w=$1 l
    while [[ $w =~ @([0-9a-z]+) ]]; do
        l=${BASH_REMATCH[1]}
        w=${w//@$l/$(id_of "$l")}
    done
    echo "$w"
}

id_of() { # LABEL: the job id sbatch gave that row
    awk -v l="$1" '$1 == l { print $2 }' "$T/ids"
}

# settled: nothing left in the queue but jobs that can never run
settled() {
    local reasons
    reasons=$(squeue -h -o '%r') || return 1
    [ -z "$(grep -vx DependencyNeverSatisfied <<<"$reasons")" ]
}

# outcome LABEL SLURM: what Docket did with the row, in expect.tsv's words
outcome() {
    local id states
    id=$(id_of "$1")
    if [[ $id == refused ]]; then
        echo "REFUSED:$(tr '\n' ' ' <"$T/err-$1")"
        return
    fi
    if [[ $(squeue -h -j "$id" -o '%r' 2>/dev/null) == DependencyNeverSatisfied ]]; then
        echo NEVER
        return
    fi
    states=$(sacct -j "$id" -X -n -P --format=State | sort -u | tr '\n' ' ')
    echo "${states% }"
}

# judge: one line per row, "LABEL accepted|refused matches|differs ran|not: why"
judge() {
    local label script opts args slurm marker count docket got n acc ran
    while IFS=$'\t' read -r label script opts args slurm marker count docket; do
        got=$(outcome "$label")
        n=$(grep -h -- "^$(site_names <<<"$marker")" "$W"/*.out "$W"/*.txt 2>/dev/null | wc -l)
        if [[ $slurm == REFUSED:* ]]; then
            [[ $got == REFUSED:*"${slurm#REFUSED:}"* ]] && acc=yes || acc=no
        else
            [[ $got != REFUSED:* ]] && acc=yes || acc=no
        fi
        ran=no
        if [[ $acc == yes && $n -eq $count ]]; then
            case $slurm in
            REFUSED:* | NEVER) [[ $got == "${slurm%%:*}"* ]] && ran=yes ;;
            *) [[ $got == "$slurm" ]] && ran=yes ;;
            esac
        fi
        printf '%s %s %s (%s; %s of %s marker lines)\n' "$label" "$acc" "$ran" "$got" "$n" "$count"
    done < <(rows)
}

@test "the site imports from its slurm.conf, gres.conf and sacctmgr dump, and says what it left" {
    [ "$(jq -c '[.partitions[] | .name]' "$T/site.json")" = '["gpu","cpu","debug","h100priv"]' ]
    [ "$(jq -c .gpu_aliases "$T/site.json")" = '{"a100":"A100-80GB","h100":"H100-80GB"}' ]
    run -0 "$DOCKET" nodes --json
    [ "$(jq -r --arg n "$PREFIX-a" '.nodes[] | select(.name == $n) | .labels.features' <<<"$output")" = a100,ib,gpu80g ]
    [ "$("$DOCKET" projects default --json | jq -r .default_project)" = vision ]
    cat "$T/import.err"
    grep -q "not mapped:" "$T/import.err"
}

@test "the 40 scripts are submitted as their users would; the queue settles" {
    (trap - DEBUG; submit_all)
    [ "$(wc -l <"$T/ids")" -eq "$(rows | wc -l)" ]
    # 38: held, trimmed and renamed, released (man scontrol, update and release)
    id=$(id_of 38)
    run -0 scontrol update JobId="$id" TimeLimit=10 JobName=eval-small
    run -0 scontrol release "$id"
    wait_for 240 settled
}

node_of() { # LABEL: the node (a, b, c, d) the row's job ran on
    local n
    n=$("$DOCKET" show "$(id_of "$1")" --json | jq -r '.job.allocation[0].node')
    echo "${n#"$PREFIX"-}"
}

@test "features, GPU types and partitions placed the scripts on the nodes slurm.conf meant" {
    [[ $(node_of 02) == [ab] ]] # --gres=gpu:a100:2
    [[ $(node_of 03) == [ab] ]] # --gres=gpu:A100:1
    [ "$(node_of 04)" = c ]     # --gpus-per-node=h100:1 -C h100
    [[ $(node_of 05) == [ab] ]] # -N2 -C ib: a gang of one GPU type, the two A100 nodes
    [[ $(node_of 11) == [ab] ]] # -C "a100&ib"
    [ "$(node_of 14)" = d ]     # -p cpu
    [ "$(node_of 35)" = d ]     # -p cpu --exclusive: the CPU node whole
    [ "$("$DOCKET" show "$(id_of 35)" --json | jq -c '[.job.gpus, .job.cpus]')" = '[0,16]' ]
}

@test "sbatch -W returned the job's exit code; a refused script ran nothing" {
    [ "$(cat "$T/rc-37")" -eq 3 ] # man sbatch, -W: "the same as the exit code of the submitted job"
    for l in 13 16 17; do
        [ "$(cat "$T/rc-$l")" -ne 0 ]
        ! grep -q "^corpus: $l" "$W"/*.out 2>/dev/null
    done
}

@test "the singleton pair never overlapped; the appended log kept the earlier run's line" {
    run -0 cat nightly.log
    [ "${#lines[@]}" -eq 4 ]
    [[ ${lines[0]} == start* && ${lines[1]} == end* && ${lines[2]} == start* && ${lines[3]} == end* ]]
    [ "$(head -n 1 log-exp-append.txt)" = "corpus: 27 ok run 0 (an earlier run's line)" ]
}

@test "every script: accepted or refused as Slurm does, and ran as it does under Slurm" {
    (trap - DEBUG; judge) >"$T/judged"
    cat "$T/judged"
    # a row whose docket column names a known difference shows it, as that column says:
    # not Slurm's outcome, Docket's own (docs/slurm.md "What differs on purpose")
    unlike=
    while IFS=$'\t' read -r label script opts args slurm marker count docket; do
        [[ $docket != - ]] || continue
        got=$(outcome "$label")
        case $docket in
        REFUSED:*) [[ $got == REFUSED:*"${docket#REFUSED:}"* ]] || unlike+=" $label" ;;
        *) [[ $got == "$docket" ]] || unlike+=" $label" ;;
        esac
        grep -q "^$label \(no\|yes no\) " "$T/judged" || unlike+=" $label"
    done < <(rows)
    [ -z "$unlike" ] || { echo "known differences not as expect.tsv says:$unlike"; false; }
    accepted=$(awk '$2 == "yes"' "$T/judged" | grep -c -v '^24b ')
    ran=$(awk '$2 == "yes" && $3 == "yes"' "$T/judged" | grep -c -v '^24b ')
    echo "# $accepted of 40 accepted as Slurm accepts them, $ran ran unchanged" >&3
    # the rows without a known difference all match
    want=$(rows | awk -F'\t' '$8 == "-" && $1 != "24b"' | wc -l)
    [ "$ran" -ge "$want" ]
}
