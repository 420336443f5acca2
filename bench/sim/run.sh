#!/usr/bin/env bash
# docket-sim benchmarks: wall time, CPU time and peak memory of the largest shared traces
# and of a 1M-job synthetic trace, then the comparison of Docket's tiered policy with the
# four baselines (fifo, easy, sjf, multifactor: one queue per partition, docs/sim.md
# "Baselines") on each shared trace. Results go by hand into bench/RESULTS.md
# ("Simulator"). Usage:
#   bench/sim/run.sh [BUILD_DIR]        default build-bench-sim (release build, made here)
#   SIM_BENCH=perf|compare|scales|contention bench/sim/run.sh   only one part
# scales: each shared trace with the tiered policy at arrival scales 1, 0.5 and 0.25
# (target: each in 60 s or less), and --compare of the four baselines on Philly (30 s).
# contention: the tiered policy against the four baselines with arrivals compressed and
# the cluster shrunk (bench/RESULTS.md, "Under contention").
# Traces: $DOCKET_TRACES (default ../shared/traces). Outputs: $BUILD_DIR/bench-sim/.
# The pooled Philly comparison (all VCs share the cluster, arrivals twice as fast) takes
# the first 30000 jobs: under that contention the core's preemption search makes the
# tiered run of the whole trace take far longer than the rest of the script.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build-bench-sim}
TR=${DOCKET_TRACES:-../shared/traces}
WHAT=${SIM_BENCH:-all}
if [[ ! -f $B/build.ninja ]]; then
    meson setup "$B" --buildtype=release >/dev/null
fi
ninja -C "$B" src/sim/docket-sim >/dev/null
SIM=$B/src/sim/docket-sim
OUT=$B/bench-sim
mkdir -p "$OUT"
EX=examples/sim

echo "# docket-sim benchmarks, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, $(uname -m)"

measure() { # NAME ARGS...: one run, its summary line and the resources it used
    local name=$1
    shift
    /usr/bin/time -f "$name: wall %e s, cpu %U+%S s, peak RSS %M KB" \
        "$SIM" "$@" --no-progress --json "$OUT/$name.json" >"$OUT/$name.txt" 2>"$OUT/$name.err" || {
        tail -n 5 "$OUT/$name.err"; return 1; }
    tail -n 1 "$OUT/$name.err"
    sed -n 3,4p "$OUT/$name.txt"
}

PHILLY=(--trace "$TR/philly_vc.csv" --cluster "$EX/cluster-philly.yaml"
        --policy "$EX/policy-tiered.yaml" --mapping "$EX/mapping-philly.yaml")
# RICC: the first RICC_LIMIT jobs (default 30000, about 3 weeks). Past that the trace's
# queue grows to thousands of pending jobs and the core's cycle slows to a crawl (see
# bench/RESULTS.md, "Simulator"); RICC_LIMIT=0 runs it all.
RICC_LIMIT=${RICC_LIMIT:-30000}
RICC_ALL=(--trace "$TR/ricc2010.csv" --cluster "$EX/cluster-ricc.yaml"
          --policy "$EX/policy-tiered.yaml" --mapping "$EX/mapping-ricc.yaml")
RICC=("${RICC_ALL[@]}")
if [[ $RICC_LIMIT -gt 0 ]]; then
    RICC+=(--limit "$RICC_LIMIT")
fi

if [[ $WHAT == all || $WHAT == perf ]]; then
    cc -O2 -o "$OUT/gen_trace" bench/sim/gen_trace.c -lm
    "$OUT/gen_trace" 1000000 1 >"$OUT/synthetic-1m.csv"
    measure philly-per-vc "${PHILLY[@]}"
    measure ricc "${RICC[@]}"
    measure synthetic-1m --trace "$OUT/synthetic-1m.csv" --cluster "$EX/cluster-philly.yaml" \
        --policy "$EX/policy-tiered.yaml" --mapping bench/sim/mapping-synthetic.yaml
fi

if [[ $WHAT == all || $WHAT == compare ]]; then
    for run in "philly-per-vc:${PHILLY[*]}" \
               "philly-pooled-x2:${PHILLY[*]} --pool --arrival-scale 0.5 --limit 30000" \
               "ricc:${RICC[*]}"; do
        name=${run%%:*}
        # shellcheck disable=SC2086 # the argument lists above hold no blanks
        "$SIM" ${run#*:} --compare --no-progress --json "$OUT/compare-$name.json" \
            --csv "$OUT/compare-$name.csv" --html "$OUT/compare-$name.html" \
            >"$OUT/compare-$name.txt" 2>"$OUT/compare-$name.err"
        echo
        echo "## $name: docket-sim ${run#*:} --compare"
        cat "$OUT/compare-$name.txt"
    done
fi

if [[ $WHAT == all || $WHAT == scales ]]; then
    measure philly-compare "${PHILLY[@]}" --compare
    for a in 1 0.5 0.25; do
        measure "philly-a$a" "${PHILLY[@]}" --arrival-scale "$a"
        measure "ricc-a$a" "${RICC_ALL[@]}" --arrival-scale "$a" # the whole trace
    done
fi

if [[ $WHAT == all || $WHAT == contention ]]; then
    # Philly: all VCs pooled, the first 10,000 jobs, arrivals twice as fast, a tenth and a
    # fifth of the nodes. RICC: the first 10,000 jobs with its groups in tiers
    # (mapping-ricc-tiers.yaml), arrivals 6.7x as fast, then a sweep of arrival scales.
    RICC_TIERS="--trace $TR/ricc2010.csv --cluster $EX/cluster-ricc.yaml --policy $EX/policy-tiered.yaml --mapping $EX/mapping-ricc-tiers.yaml --limit 10000"
    for run in "philly-pooled-c01-a05:${PHILLY[*]} --pool --limit 10000 --arrival-scale 0.5 --cluster-scale 0.1" \
               "philly-pooled-c02-a05:${PHILLY[*]} --pool --limit 10000 --arrival-scale 0.5 --cluster-scale 0.2" \
               "ricc-10k-tiers-a015:$RICC_TIERS --arrival-scale 0.15" \
               "ricc-10k-tiers-sweep:$RICC_TIERS --sweep arrival-scale=0.3,0.5,1"; do
        name=${run%%:*}
        # shellcheck disable=SC2086 # the argument lists above hold no blanks
        /usr/bin/time -f "$name: wall %e s, cpu %U+%S s" "$SIM" ${run#*:} --compare --no-progress \
            --json "$OUT/contention-$name.json" --csv "$OUT/contention-$name.csv" \
            --html "$OUT/contention-$name.html" >"$OUT/contention-$name.txt" 2>"$OUT/contention-$name.err"
        echo
        echo "## $name: docket-sim ${run#*:} --compare"
        tail -n 1 "$OUT/contention-$name.err"
        cat "$OUT/contention-$name.txt"
    done
    # The whole RICC trace at its own pace (about 89 % busy), the tiered policy against EASY
    # (about 12 CPU minutes for the two).
    # shellcheck disable=SC2086
    "$SIM" ${RICC_TIERS/--limit 10000/} --baseline easy --no-progress \
        --csv "$OUT/contention-ricc-all-tiers-easy.csv" >"$OUT/contention-ricc-all-tiers-easy.txt"
    cat "$OUT/contention-ricc-all-tiers-easy.txt"
fi
