#!/usr/bin/env bats
# sim_history.bats - docket-sim --from-db replays what a real docketd ran: a docketd and two
# real docket-node agents with declared GPUs (lib/cluster.bash) run jobs to completion, then
# docket-sim reads the live database read-only and replays it under the same policy and
# under a different one. Checks: every finished job is replayed (and nothing else), each
# replayed job runs exactly its recorded runtime (end - start), the site's nodes become
# the cluster, and docketd keeps serving while its database is read.

bats_require_minimum_version 1.5.0

CLUSTER_NAME=simdb
load lib/cluster
AGENT_EXTRA=()
SIM=$DOCKET_BUILD/src/sim/docket-sim

setup_file() {
    [[ -x $DOCKET && -x $DOCKETD_BIN && -x $AGENT_BIN && -x $SIM ]] ||
        skip "docket, docketd, docket-node or docket-sim not built"
    cluster_start
    "$DOCKET" apply -f "$BATS_TEST_DIRNAME/../../examples/policy.yaml" >/dev/null
    cd "$W"
    # seven jobs of three projects and tiers, 1-8 GPUs, one of two nodes, different lengths
    local ids=() spec
    for spec in "vision 8 1.2" "vision 4 0.5" "nlp 2 0.8" "nlp 1 0.3" "explore 8 1.0" \
                "explore 2 0.2" "vision 16 0.6"; do
        read -r p g s <<<"$spec"
        if [[ $g -gt 8 ]]; then
            ids+=("$("$DOCKET" submit --parsable -p "$p" --class experiment -g 8 -N 2 \
                --time 10m -- sleep "$s")")
        else
            ids+=("$("$DOCKET" submit --parsable -p "$p" --class experiment -g "$g" \
                --time 10m -- sleep "$s")")
        fi
    done
    for id in "${ids[@]}"; do
        wait_for 60 state_in "$id" COMPLETED FAILED
    done
    printf '%s\n' "${ids[@]}" >"$T/ids"
    # one job still queued (held): not finished, so it is left out of the replay
    "$DOCKET" submit --parsable -p nlp --hold -- true >"$T/held"
}

teardown_file() {
    cluster_stop
}

setup() {
    cd "$W"
}

# recorded JOB: "id runtime_s" with the runtime of its run as docketd recorded it
recorded() {
    "$DOCKET" show "$1" --json |
        jq -r '.job | "\(.id) \(((.end_ms - .start_ms) / 1000) * 1000 | round / 1000)"'
}

# replayed CSV POLICY: "id runtime_s" of each job of POLICY in a --jobs-csv file
replayed() {
    awk -F, -v p="$2" 'NR > 1 && $1 == p { printf "%s %g\n", $2, $10 }' "$1" | sort -n
}

@test "--from-db replays every finished job with its recorded runtime, under the site's policy" {
    local db=$T/ctl/docket.db want
    run -0 "$SIM" --from-db "$db" --jobs-csv "$T/site.csv" --json "$T/site.json" --no-progress
    [[ $output == *"7 finished jobs (1 not finished, left out"* ]]
    [[ $output == *"2 nodes"* ]]
    want=$(while read -r id; do recorded "$id"; done <"$T/ids" | sort -n)
    [ "$(replayed "$T/site.csv" site)" = "$want" ]
    # all seven completed in the replay too, on the site's 2 x 8 GPUs, in their own tiers
    [ "$(jq '.runs[0].all.completed' "$T/site.json")" = 7 ]
    [ "$(jq '.runs[0].gpus' "$T/site.json")" = 16 ]
    [ "$(awk -F, '$1 == "site" && $2 == '"$(head -1 "$T/ids")"' { print $4 }' "$T/site.csv")" = high ]
    # docketd still serves while and after its database is read
    run -0 "$DOCKET" queue --json
}

@test "--from-db under a candidate policy: same jobs, same runtimes, the candidate's tiers" {
    cat >"$T/candidate.yaml" <<'YAML'
tiers:
  - {name: urgent, starve_after: 1h}
  - {name: normal, starve_after: 12h}
  - {name: low, starve_after: 24h}
settings: {ordering: fifo, preemption: false, reserved_min_tier: urgent}
YAML
    run -0 "$SIM" --from-db "$T/ctl/docket.db" --policy "$T/candidate.yaml" --baseline easy \
        --jobs-csv "$T/cand.csv" --no-progress
    local want
    want=$(while read -r id; do recorded "$id"; done <"$T/ids" | sort -n)
    [ "$(replayed "$T/cand.csv" candidate.yaml)" = "$want" ]
    [ "$(replayed "$T/cand.csv" easy)" = "$want" ]
    # vision's tier "high" is not in the candidate: its jobs run in the candidate's tiers
    [ "$(awk -F, '$1 == "candidate.yaml" && $4 == "high"' "$T/cand.csv" | wc -l)" = 0 ]
    [[ $output == *"candidate.yaml"*"easy"* ]]
}

@test "--from-db: --since/--until select jobs; bad input is refused naming the flag" {
    run -2 "$SIM" --from-db "$T/ctl/docket.db" --since 2999-01-01 --no-progress
    [[ $output == *"holds no finished job in --since/--until"* ]]
    run -0 "$SIM" --from-db "$T/ctl/docket.db" --until 2999-01-01 --quiet --no-progress
    [[ $output == *"7 finished jobs"* ]]
    run -2 "$SIM" --from-db "$T/ctl/docket.db" --since yesterday-ish
    [[ $output == *"--since: 'yesterday-ish' is not a UTC date"* ]]
    run -2 "$SIM" --from-db "$T/nope.db"
    [[ $output == *"--from-db: cannot open '$T/nope.db' read-only"* ]]
    echo "not a database" >"$T/junk.db"
    run -2 "$SIM" --from-db "$T/junk.db"
    [[ $output == *"--from-db:"*"junk.db"* ]]
    run -2 "$SIM" --from-db "$T/ctl/docket.db" --trace x.csv
    [[ $output == *"no --trace or --check with it"* ]]
    run -2 "$SIM" --trace x.csv --cluster y.yaml --since 2026-01-01
    [[ $output == *"--since and --until select jobs of --from-db"* ]]
}
