#!/usr/bin/env bats
# docket-sim as a user runs it: small hand-made traces with known outcomes, the shipped
# examples on a slice of the shared Philly trace, bad input rejected with the file, line
# and field named, reports byte-identical across runs. No daemon, no network.

bats_require_minimum_version 1.5.0

B=${DOCKET_BUILD:-$BATS_TEST_DIRNAME/../../build}
EX=$BATS_TEST_DIRNAME/../../examples/sim
# A 3,000-job cut of the Philly trace ships with the tests (tests/data/traces/README.md),
# so no test needs ../shared; DOCKET_TRACE names another file of the same schema.
PHILLY=${DOCKET_TRACE:-$BATS_TEST_DIRNAME/../data/traces/philly_vc-3000.csv}
SIM="$B/src/sim/docket-sim"
HDR=job_id,submit_s,runtime_s,gpus,cpus,mem_mb,nodes,project,user,status

setup() {
    T=$(mktemp -d)
    cat >"$T/cluster.yaml" <<'EOF'
node_groups:
  - {name: gpu, count: 1, gpus: 4, gpu_type: A100, cpus: 64, mem: 512G}
EOF
    # A holds 2 of 4 GPUs; B (4 GPUs) must wait for it; C (2 GPUs, short) fits the hole
    printf '%s\nA,0,600,2,,,,p,,\nB,10,600,4,,,,p,,\nC,20,300,2,,,,p,,\n' "$HDR" >"$T/bf.csv"
}

teardown() {
    rm -rf "$T"
}

@test "--help documents every flag the parser accepts" {
    run "$SIM" --help
    [ "$status" -eq 0 ]
    help=$output
    for f in trace format cluster policy baseline compare mapping time-factor time-limit \
             default-tier default-class cpu-unit partition-label pool checkpoint on-signal \
             arrival-scale cluster-scale limit node-failures repair-time seed sample \
             cycle-interval skip-bad-rows check json jobs-csv html quiet no-progress help \
             fractional over-cap csv save label sweep from-db since until start-at \
             switch-nodes topology topology-mode; do
        [[ "$help" == *"--$f"* ]] || { echo "missing --$f"; return 1; }
        run "$SIM" "--$f" 2>&1
        [[ "$output" != *"unrecognized option"* ]] || { echo "--$f not parsed"; return 1; }
    done
}

@test "missing or bad flags are usage errors (exit 2)" {
    run "$SIM" --cluster "$T/cluster.yaml"
    [ "$status" -eq 2 ]
    [[ "$output" == *"--trace (or --from-db) is required"* ]]
    run "$SIM" --trace "$T/bf.csv" --cluster "$T/cluster.yaml" --arrival-scale fast
    [ "$status" -eq 2 ]
    [[ "$output" == *"--arrival-scale: 'fast' is not a number"* ]]
    run "$SIM" --trace "$T/bf.csv" --cluster "$T/cluster.yaml" --baseline lottery
    [ "$status" -eq 2 ]
    [[ "$output" == *"'lottery' is not fifo, easy, sjf, multifactor or tiered"* ]]
    run "$SIM" --trace "$T/bf.csv" --cluster "$T/cluster.yaml" --fractional half
    [ "$status" -eq 2 ]
    [[ "$output" == *"--fractional: 'half' is not round-up, round-down or skip"* ]]
    run "$SIM" --trace "$T/bf.csv" --cluster "$T/cluster.yaml" --over-cap maybe
    [ "$status" -eq 2 ]
    [[ "$output" == *"--over-cap: 'maybe' is not run, kill or skip"* ]]
}

@test "EASY backfill starts the short job in the hole; FIFO does not" {
    run "$SIM" --trace "$T/bf.csv" --cluster "$T/cluster.yaml" --baseline easy \
        --time-factor 1 --jobs-csv "$T/easy.csv" --quiet
    [ "$status" -eq 0 ]
    grep -q '^easy,C,p,normal,2,20.000,20.000,320.000,0.000,' "$T/easy.csv"
    grep -q '^easy,B,p,normal,4,10.000,600.000,' "$T/easy.csv"
    run "$SIM" --trace "$T/bf.csv" --cluster "$T/cluster.yaml" --policy "$EX/policy-fifo.yaml" \
        --time-factor 1 --jobs-csv "$T/fifo.csv" --quiet
    [ "$status" -eq 0 ]
    grep -q '^policy-fifo.yaml,C,p,normal,2,20.000,1200.000,' "$T/fifo.csv"
}

@test "a bad trace row stops the run naming file, line and column" {
    printf '%s\nA,0,60,1,,,,p,,\nB,5,sixty,1,,,,p,,\nC,9,60,1,,,,p,,\n' "$HDR" >"$T/bad.csv"
    run "$SIM" --trace "$T/bad.csv" --cluster "$T/cluster.yaml" --quiet
    [ "$status" -eq 1 ]
    [[ "$output" == *"bad.csv:3: column 'runtime_s': not a non-negative integer: 'sixty'"* ]]
    run "$SIM" --trace "$T/bad.csv" --cluster "$T/cluster.yaml" --skip-bad-rows --json -
    [ "$status" -eq 0 ]
    [[ "$output" == *'"bad_rows": 1'* ]]
    [[ "$output" == *"bad.csv:3: column 'runtime_s'"* ]]
}

@test "--check lists every bad row and exits 1" {
    printf '%s\nA,5,60,1,,,,p,,\nB,6,x,1,,,,p,,\nC,9,60,1,,,,p,,maybe\nD,3,60,1,,,,p,,\n' \
        "$HDR" >"$T/bad.csv"
    run "$SIM" --check --trace "$T/bad.csv"
    [ "$status" -eq 1 ]
    [[ "${lines[0]}" == *"bad.csv:3: column 'runtime_s'"* ]]
    [[ "${lines[1]}" == *"bad.csv:4: column 'status': unknown status 'maybe'"* ]]
    [[ "${lines[2]}" == *"bad.csv:5: column 'submit_s'"*"sorted"* ]]
    [[ "${lines[3]}" == *"4 rows, 3 bad"* ]]
}

@test "a bad cluster file names the field and changes nothing" {
    printf 'node_groups:\n  - {name: gpu, count: many, gpus: 4, gpu_type: A100}\n' >"$T/c.yaml"
    run "$SIM" --trace "$T/bf.csv" --cluster "$T/c.yaml" --json "$T/out.json"
    [ "$status" -eq 2 ]
    [[ "$output" == *"c.yaml: node_groups[0].count: expected an integer"* ]]
    [ ! -e "$T/out.json" ]
}

@test "reports are byte-identical across runs, colourless off a terminal" {
    for i in 1 2; do
        run "$SIM" --trace "$PHILLY" --cluster "$EX/cluster-philly.yaml" \
            --policy "$EX/policy-tiered.yaml" --mapping "$EX/mapping-philly.yaml" --pool \
            --arrival-scale 0.3 --limit 1500 --node-failures 0.05 --seed 9 \
            --json "$T/r$i.json" --jobs-csv "$T/r$i.csv" --html "$T/r$i.html"
        [ "$status" -eq 0 ]
        echo "$output" >"$T/r$i.txt"
    done
    cmp "$T/r1.json" "$T/r2.json"
    cmp "$T/r1.csv" "$T/r2.csv"
    cmp "$T/r1.html" "$T/r2.html"
    cmp "$T/r1.txt" "$T/r2.txt"
    if grep -q $'\033' "$T/r1.txt"; then echo "colour codes off a terminal" >&2; false; fi
    jq -e '.runs[0].jobs == 1500 and .runs[0].node_failures >= 0' "$T/r1.json"
    [ "$(wc -l <"$T/r1.csv")" -eq 1501 ]
    grep -q '<svg' "$T/r1.html"
    ! grep -qiE '<script|<link|https?://[^"]*\.(js|css)' "$T/r1.html"
}

@test "--compare runs the policy and the four baselines side by side" {
    run "$SIM" --trace "$PHILLY" --cluster "$EX/cluster-philly.yaml" \
        --policy "$EX/policy-tiered.yaml" --mapping "$EX/mapping-philly.yaml" --pool \
        --limit 800 --compare --json "$T/c.json" --csv "$T/c.csv" --html "$T/c.html"
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" == *"5 policies on the same trace"* ]]
    [[ "$output" == *"policy-tiered.yaml"*"fifo"*"easy"*"sjf"*"multifactor"* ]]
    [[ "$output" == *"is best on"* ]]
    [[ "$output" == *"Jain share/guarantee"* ]]
    jq -e '[.runs[].policy] == ["policy-tiered.yaml","fifo","easy","sjf","multifactor"]' "$T/c.json"
    jq -e '.comparison.policies | length == 5' "$T/c.json"
    # one table, every policy a column, the same rows in every output
    head -1 "$T/c.csv" | grep -qx 'group,metric,key,policy-tiered.yaml,fifo,easy,sjf,multifactor'
    for k in wait_mean_s wait_p50_s wait_p95_s wait_max_s delay_mean_s lost_preempt_gpu_h \
             timeouts failed gpu_utilisation; do
        grep -q ",$k," "$T/c.csv" || { echo "no $k row"; return 1; }
    done
    [ "$(jq '.comparison.rows | length' "$T/c.json")" -eq "$(($(wc -l <"$T/c.csv") - 1))" ]
    grep -q 'class="verdict"' "$T/c.html"
    grep -q '<th>sjf</th>' "$T/c.html"
    grep -q 'Wait CDF, tier normal' "$T/c.html"
    ! grep -qiE '<script|<link|https?://[^"]*\.(js|css)' "$T/c.html" || false
    # the comparison is deterministic too
    run "$SIM" --trace "$PHILLY" --cluster "$EX/cluster-philly.yaml" \
        --policy "$EX/policy-tiered.yaml" --mapping "$EX/mapping-philly.yaml" --pool \
        --limit 800 --compare --json "$T/c2.json" --csv "$T/c2.csv" --html "$T/c2.html"
    [ "$status" -eq 0 ]
    cmp "$T/c.json" "$T/c2.json"
    cmp "$T/c.csv" "$T/c2.csv"
    cmp "$T/c.html" "$T/c2.html"
}

@test "no guarantees: Jain's share index is n/a, never 0.000" {
    run "$SIM" --trace "$T/bf.csv" --cluster "$T/cluster.yaml" --baseline easy \
        --csv "$T/t.csv" --json "$T/t.json"
    [ "$status" -eq 0 ]
    [[ "$output" == *"Jain share/guarantee"*"n/a"*"n/a"* ]]
    grep -q '^cluster,Jain share/guarantee,jain_share,n/a,n/a$' "$T/t.csv"
    jq -e '.runs[0].jain_share == null' "$T/t.json"
}

@test "fifo baseline: a blocked job in one partition does not hold another back" {
    cat >"$T/parts.yaml" <<'YAML'
node_groups:
  - {name: a, count: 1, gpus: 4, gpu_type: A100, cpus: 64, labels: {vc: pa}}
  - {name: b, count: 1, gpus: 4, gpu_type: A100, cpus: 64, labels: {vc: pb}}
YAML
    # A1 fills partition pa; A2 waits for it; B1 arrives later in partition pb
    printf '%s\nA1,0,100,4,,,,pa,,\nA2,10,100,4,,,,pa,,\nB1,20,50,2,,,,pb,,\n' "$HDR" >"$T/p.csv"
    run "$SIM" --trace "$T/p.csv" --cluster "$T/parts.yaml" --partition-label vc \
        --policy "$EX/policy-fifo.yaml" --baseline fifo --time-factor 1 --jobs-csv "$T/j.csv"
    [ "$status" -eq 0 ]
    grep -q '^fifo,B1,pb,normal,2,20.000,20.000,' "$T/j.csv"                # its own queue
    grep -q '^fifo,A2,pa,normal,4,10.000,100.000,' "$T/j.csv"
    grep -q '^policy-fifo.yaml,B1,pb,normal,2,20.000,100.000,' "$T/j.csv"    # one queue
    [[ "$output" == *"queues (partitions)"*" 1 "*" 2"* ]]
}

@test "fractional, never-run and CPU-only rows follow their rule and are counted" {
    printf '%s\nf,0,10,0.5,,,,p,,\nn,1,,1,,,,p,,cancelled\nc,2,10,0,2.5,,,p,,\nl,3,100,1,,,,p,,\n' \
        "$HDR" >"$T/r.csv"
    run "$SIM" --trace "$T/r.csv" --cluster "$T/cluster.yaml" --json "$T/r.json" \
        --jobs-csv "$T/j.csv" --time-factor 0.5
    [ "$status" -eq 0 ]
    [[ "$output" == *"4 read, 0 bad (refused), 1 never ran (skipped), 2 fractional (round-up), 1 CPU-only (CPU jobs), 1 time limit at or below the runtime (raised past it)"* ]]
    jq -e '.runs[0].rows | .never_ran == 1 and .fractional_rounded == 2 and .cpu_jobs == 1' "$T/r.json"
    grep -q '^docket,f,p,normal,1,' "$T/j.csv"                  # 0.5 GPU -> 1
    grep -q '^docket,c,p,normal,0,.*,completed,0,0.000,3,' "$T/j.csv"  # 2.5 CPUs -> 3, no GPU
    grep -q '^docket,l,p,normal,1,.*,completed,' "$T/j.csv"     # ran its recorded runtime
    run "$SIM" --trace "$T/r.csv" --cluster "$T/cluster.yaml" --fractional skip --json -
    [ "$status" -eq 0 ]
    [[ "$output" == *'"fractional_skipped": 2'* ]]
    [[ "$output" == *'"jobs": 1,'* ]]
}

@test "--save keeps the run; compare A B puts two saved runs side by side" {
    run "$SIM" --trace "$T/bf.csv" --cluster "$T/cluster.yaml" --baseline fifo --quiet \
        --time-factor 1 --save "$T/hist" --label last-month
    [ "$status" -eq 0 ]
    [[ "$output" == *"saved $T/hist/"*"-last-month.json"* ]]
    a=$(ls "$T"/hist/*-last-month.json)
    run "$SIM" --trace "$T/bf.csv" --cluster "$T/cluster.yaml" --baseline easy --quiet \
        --time-factor 1 --json "$T/today.json"
    [ "$status" -eq 0 ]
    run "$SIM" compare "$a" "$T/today.json"
    [ "$status" -eq 0 ]
    [[ "$output" == *"A docket"*"A fifo"*"B docket"*"B easy"*"change docket"* ]]
    [[ "$output" == *"wait p95"* ]]
    run "$SIM" compare "$a" "$T/bf.csv"
    [ "$status" -eq 2 ]
    [[ "$output" == *"bf.csv"* ]]
    run "$SIM" compare "$a"
    [ "$status" -eq 2 ]
    [[ "$output" == *"compare takes two saved runs"* ]]
}

@test "a CPU-only SWF trace runs as CPU jobs on CPU nodes, as GPU units only when asked" {
    cat >"$T/t.swf" <<'EOF'
; Version: 2.2
; Computer: bats
    1     0   -1   100   16  -1 -1   16   200   -1  1  3  7 -1 1 -1 -1 -1
    2    10   -1    50    8  -1 -1    8   100   -1  1  4  7 -1 1 -1 -1 -1
    3    20   -1    30    4  -1 -1    4    60   -1  0  3  2 -1 1 -1 -1 -1
EOF
    run "$SIM" --trace "$T/t.swf" --cluster "$EX/cluster-ricc.yaml" \
        --time-limit requested --jobs-csv "$T/j.csv" --json -
    [ "$status" -eq 0 ]
    [[ "$output" == *'"jobs": 3'* ]]
    [[ "$output" == *'"cpu_jobs": 3'* ]]
    grep -q '^docket,1,g7,normal,0,0.000,0.000,100.000,.*,16,0.000$' "$T/j.csv"  # 16 cores
    grep -q '^docket,3,g2,normal,0,20.000,.*,4,' "$T/j.csv"
    # on a GPU cluster, --cpu-unit turns cores into GPU units, and the report says so
    run "$SIM" --trace "$T/t.swf" --cluster "$T/cluster.yaml" --cpu-unit 8 \
        --time-limit requested --jobs-csv "$T/j.csv"
    [ "$status" -eq 0 ]
    [[ "$output" == *"3 CPU-only (as GPU units: cpu_unit_cores)"* ]]
    grep -q '^docket,1,g7,normal,2,0.000,0.000,100.000,' "$T/j.csv"  # 16 cores = 2 units
    grep -q '^docket,3,g2,normal,1,20.000,' "$T/j.csv"               # 4 cores round up to 1
}

@test "--arrival-scale stretches submissions, --cluster-scale multiplies nodes" {
    run "$SIM" --trace "$T/bf.csv" --cluster "$T/cluster.yaml" --arrival-scale 2 \
        --cluster-scale 2 --time-factor 1 --jobs-csv "$T/j.csv"
    [ "$status" -eq 0 ]
    [[ "$output" == *"cluster 2 nodes, 8 GPUs"* ]]
    grep -q '^docket,B,p,normal,4,20.000,20.000,' "$T/j.csv"   # submitted at 10 s x 2
    grep -q '^docket,C,p,normal,2,40.000,40.000,' "$T/j.csv"   # room for all on 2 nodes
}

@test "a policy the mapping does not fit is refused before running" {
    run "$SIM" --trace "$T/bf.csv" --cluster "$T/cluster.yaml" --default-tier gold
    [ "$status" -eq 2 ]
    [[ "$output" == *"tier 'gold' is not in policy 'docket'"* ]]
}

@test "--sweep runs every point for every policy and tabulates the grid (text, json, csv, html)" {
    # 40 jobs on 2 x 4 GPUs: compressing arrivals or halving the cluster makes waits grow
    { echo "$HDR"; for i in $(seq 1 40); do
        echo "j$i,$((i * 60)),$(((i * 37) % 900 + 60)),$((i % 4 + 1)),,,,p,,"; done; } >"$T/load.csv"
    sed -i 's/count: 1/count: 2/' "$T/cluster.yaml"
    run -0 "$SIM" --trace "$T/load.csv" --cluster "$T/cluster.yaml" --baseline fifo \
        --sweep arrival-scale=0.25,1 --sweep cluster-scale=0.5,1 --json "$T/s.json" \
        --csv "$T/s.csv" --html "$T/s.html"
    # a plain progress line per point on stderr (not a terminal), then the table
    [[ $output == *"sweep point 1/4 (arrival-scale=0.25 cluster-scale=0.5): 2 policies"* ]]
    [[ $output == *"sweep point 4/4 (arrival-scale=1 cluster-scale=1)"* ]]
    [[ $output == *"sweep of 4 points x 2 policies"* ]]
    [[ $output == *"arrival-scale=1 cluster-scale=0.5 · all"*"wait mean"* ]]
    [ "$(jq -r '.sweep.points | join("|")' "$T/s.json")" = \
      "arrival-scale=0.25 cluster-scale=0.5|arrival-scale=0.25 cluster-scale=1|arrival-scale=1 cluster-scale=0.5|arrival-scale=1 cluster-scale=1" ]
    [ "$(jq -r '.sweep.table.policies | join(",")' "$T/s.json")" = "docket,fifo" ]
    # the heavier point waits longer: arrivals 4x faster on half the cluster vs the base
    heavy=$(jq '[.sweep.table.rows[] | select(.group == "arrival-scale=0.25 cluster-scale=0.5 · all" and .key == "wait_mean_s")][0].values[0]' "$T/s.json")
    base=$(jq '[.sweep.table.rows[] | select(.group == "arrival-scale=1 cluster-scale=1 · all" and .key == "wait_mean_s")][0].values[0]' "$T/s.json")
    awk -v h="$heavy" -v b="$base" 'BEGIN { exit !(h > b) }'
    # each point is the same run as without --sweep at those values
    run -0 "$SIM" --trace "$T/load.csv" --cluster "$T/cluster.yaml" --baseline fifo \
        --arrival-scale 0.25 --cluster-scale 0.5 --csv "$T/one.csv" --quiet
    [ "$(grep '^all,wait mean,' "$T/one.csv" | cut -d, -f4-)" = \
      "$(grep '^arrival-scale=0.25 cluster-scale=0.5 · all,wait mean,' "$T/s.csv" | cut -d, -f4-)" ]
    grep -q '<h2>Sweep: every point against every policy</h2>' "$T/s.html"
    grep -q 'arrival-scale=1 cluster-scale=0.5 · tier normal' "$T/s.html"
    # checkpoint points set the interval jobs declare
    run -0 "$SIM" --trace "$T/load.csv" --cluster "$T/cluster.yaml" --sweep checkpoint=none,1h \
        --no-progress --csv "$T/c.csv" --quiet
    [ "$(grep -c '^checkpoint=none · all,' "$T/c.csv")" -eq 5 ]
    [ "$(grep -c '^checkpoint=1h · all,' "$T/c.csv")" -eq 5 ]
}

@test "--sweep values are checked, the error names the option and the value" {
    local base=(--trace "$T/bf.csv" --cluster "$T/cluster.yaml")
    run -2 "$SIM" "${base[@]}" --sweep arrival-scale=0.5,fast
    [[ $output == *"--sweep arrival-scale: 'fast' is not a number in 1e-06..1e+06"* ]]
    run -2 "$SIM" "${base[@]}" --sweep arrival-scale=0.5,,1
    [[ $output == *"--sweep arrival-scale: '' is not a number"* ]]
    run -2 "$SIM" "${base[@]}" --sweep cluster-scale=-1
    [[ $output == *"--sweep cluster-scale: '-1' is not a number"* ]]
    run -2 "$SIM" "${base[@]}" --sweep checkpoint=none,soon
    [[ $output == *"--sweep checkpoint: 'soon' is not none or a duration (30m, 1h)"* ]]
    run -2 "$SIM" "${base[@]}" --sweep speed=1,2
    [[ $output == *"--sweep: 'speed' is not arrival-scale, cluster-scale or checkpoint"* ]]
    run -2 "$SIM" "${base[@]}" --sweep arrival-scale
    [[ $output == *"--sweep: 'arrival-scale' is not NAME=V1,V2,..."* ]]
    run -2 "$SIM" "${base[@]}" --sweep arrival-scale=1,1
    [[ $output == *"--sweep arrival-scale: '1' is given twice"* ]]
    run -2 "$SIM" "${base[@]}" --sweep arrival-scale=1 --sweep arrival-scale=2
    [[ $output == *"--sweep arrival-scale: given twice"* ]]
    run -2 "$SIM" "${base[@]}" --sweep arrival-scale=1,2,3,4,5,6,7,8 --sweep cluster-scale=1,2,3,4,5,6,7,8,9
    [[ $output == *"--sweep: the grid would have 72 points (at most 64)"* ]]
    run -2 "$SIM" "${base[@]}" --sweep arrival-scale=1,2 --jobs-csv "$T/j.csv"
    [[ $output == *"no --jobs-csv or --save with it"* ]]
}

@test "--start-at replays from a point of the trace: earlier rows counted, clock from there" {
    # A and B come before the window; C and D are replayed, D as the second job
    printf '%s\nA,0,100,4,,,,p,,\nB,50,100,4,,,,p,,\nC,1000,100,4,,,,p,,\nD,1010,100,4,,,,p,,\n' \
        "$HDR" >"$T/w.csv"
    run "$SIM" --trace "$T/w.csv" --cluster "$T/cluster.yaml" --start-at 1000s --limit 1 \
        --time-factor 2 --json "$T/w.json" --jobs-csv "$T/w.jobs.csv"
    [ "$status" -eq 0 ]
    [[ "$output" == *"1 read, 0 bad (refused), 2 before --start-at (not replayed)"* ]]
    jq -e '.runs[0].rows.before_start == 2 and .runs[0].jobs == 1 and .input.start_at_s == 1000' \
        "$T/w.json"
    grep -q '^docket,C,p,normal,4,0.000,0.000,' "$T/w.jobs.csv"   # submitted at the clock's 0
    ! grep -q '^docket,[ABD],' "$T/w.jobs.csv" || false
    run "$SIM" --trace "$T/w.csv" --cluster "$T/cluster.yaml" --start-at 1000s --jobs-csv -
    [ "$status" -eq 0 ]
    [[ "$output" == *"docket,D,p,normal,4,10.000,100.000,"* ]]   # waits for C: starts at 100 s
    run "$SIM" --trace "$T/w.csv" --cluster "$T/cluster.yaml" --start-at soon
    [ "$status" -eq 2 ]
    [[ "$output" == *"start-at"* ]]
}

@test "a 2-level topology: gangs that span more switches than needed are counted, 0 required" {
    printf 'node_groups:\n  - {name: n, count: 6, gpus: 8, gpu_type: A100, cpus: 64}\n' \
        >"$T/six.yaml"
    # x takes one node of sw-0002; the 3-node gang g then spans both without a rule
    printf '%s\nx,0,1000,8,,,,p,,\ng,10,60,24,,,3,p,,\n' "$HDR" >"$T/gang.csv"
    run -0 "$SIM" --trace "$T/gang.csv" --cluster "$T/six.yaml" --baseline fifo \
        --switch-nodes 3 --topology-mode none --json -
    jq -e '.runs[0].topology == {"gang_starts": 1, "gangs_spread": 1, "extra_switches": 1}' \
        <<<"$output" >/dev/null
    for mode in required best_effort; do
        run -0 "$SIM" --trace "$T/gang.csv" --cluster "$T/six.yaml" --baseline fifo \
            --switch-nodes 3 --topology-mode "$mode" --json -
        jq -e '[.runs[].topology.gangs_spread] == [0, 0]' <<<"$output" >/dev/null
    done
    # one run: the report's line; several: a row of the table
    printf 'leaf-a 3\nleaf-b 3\n' >"$T/topo.txt"
    run -0 "$SIM" --trace "$T/gang.csv" --cluster "$T/six.yaml" --policy "$EX/policy-fifo.yaml" \
        --topology "$T/topo.txt" --topology-mode required
    [[ $output == *"topology 1 gang starts, 0 spanned more switches than needed"* ]]
    run -0 "$SIM" --trace "$T/gang.csv" --cluster "$T/six.yaml" --baseline fifo \
        --switch-nodes 3 --topology-mode none
    [[ $output == *"gangs over extra switches"*" 1 "*" 1"* ]]
    printf 'leaf-a three\n' >"$T/bad.txt"
    run -2 "$SIM" --trace "$T/gang.csv" --cluster "$T/six.yaml" --topology "$T/bad.txt"
    [[ $output == *"bad.txt:1: want"* ]]
    run -2 "$SIM" --trace "$T/gang.csv" --cluster "$T/six.yaml" --topology-mode always
    [[ $output == *"--topology-mode"* ]]
}
