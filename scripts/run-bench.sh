#!/usr/bin/env bash
# Every benchmark, one after the other, on a release build (build-rel/). The figures are
# printed, not kept: copy them into bench/RESULTS.md with the date and the machine.
#   scripts/run-bench.sh            all (the agent's need root: real cgroups)
#   scripts/run-bench.sh core sim   only these: core controller agent cli sim console fleet pg
# (pg: SQLite against PostgreSQL side by side, bench/controller/pg_vs_sqlite.sh; not in "all")
# (fleet: 10,000 simulated agents, AGENTS= for fewer; it needs ulimit -n above that)
set -uo pipefail
cd "$(dirname "$0")/.."
B=${BENCH_BUILD:-build-rel}
want=("$@")
[[ ${#want[@]} -eq 0 ]] && want=(core controller agent cli sim console fleet)

if [[ ! -f $B/build.ninja ]]; then
    meson setup "$B" --buildtype=release >/dev/null || exit 1
fi
ninja -C "$B" >/dev/null || { echo "build failed: ninja -C $B" >&2; exit 1; }

status=0
for w in "${want[@]}"; do
    echo "== $w"
    case $w in
    core)       "$B/bench/core/core_bench" || status=1 ;;
    controller) bench/controller/run.sh "$B" || status=1 ;;
    agent)
        if [[ $(id -u) -ne 0 ]]; then
            echo "agent benchmarks need root (real cgroups); skipped"
        else
            DOCKET_BUILD=$PWD/$B bench/agent/run.sh || status=1
        fi ;;
    cli)        bench/cli/submit_bench.sh "$B" || status=1 ;;
    sim)        bench/sim/run.sh "$B" || status=1 ;;
    console)    { scripts/build-console.sh && bench/console/run.sh "$B" && bench/console/first_paint.sh "$B"; } || status=1 ;;
    fleet)      bench/fleet/run.sh "$B" || status=1 ;;
    pg)         bench/controller/pg_vs_sqlite.sh "$B" || status=1 ;;
    *)          echo "unknown benchmark '$w' (core controller agent cli sim console fleet pg)" >&2; status=2 ;;
    esac
done
exit $status
