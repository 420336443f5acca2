#!/usr/bin/env bash
# list_bench.sh - how long listing a deep queue takes: N pending jobs (arrays of 1,000
# tasks in one project, on one node registered through the agent API and never started),
# then each listing R times: the median wall time of each and the CPU time it cost the
# client and docketd together:
#   - `docket queue` (its table: every active job read, the first 1,000 shown)
#   - `docket queue -n 100000` (the whole table), and with --json (full rows, paged)
#   - GET /v1/jobs?limit=10000 full rows, and with ?fields= the queue table's members
#   - `squeue` (Slurm's, when installed: its own cluster, not this one) for scale
#
#   bench/cli/list_bench.sh [BUILD_DIR] [N] [R] [BEFORE_BUILD_DIR]
#       (default: build, 10000, 5)
#
# With BEFORE_BUILD_DIR the same runs are made on it too (its own docketd and docket,
# after BUILD_DIR's, in the same invocation) and the medians printed side by side: a
# change is measured against what it changed on the same machine at the same load.
# Build BUILD_DIR as a release build first (make build does). Results go to
# bench/RESULTS.md by hand.
set -euo pipefail
cd "$(dirname "$0")/../.."
AFTER=${1:-build}
N=${2:-10000}
R=${3:-5}
BEFORE=${4:-}

# COMMAND...: "WALL CPU DCPU": the median wall time of R runs, the CPU time a run cost
# the command and docketd ($PID) together (their mean), and docketd's share of it, in
# seconds. On a shared machine the wall time moves with the load; the CPU time much less.
median() {
    local t=() ticks0 ticks1 tck cpu
    tck=$(getconf CLK_TCK)
    ticks0=$(awk '{ print $14 + $15 }' "/proc/$PID/stat")
    cpu=$(mktemp)
    for ((k = 0; k < R; k++)); do
        local s e
        s=$(date +%s.%N)
        TIMEFORMAT='%U %S'
        { time "$@" >/dev/null; } 2>>"$cpu"
        e=$(date +%s.%N)
        t+=("$(awk -v s="$s" -v e="$e" 'BEGIN { printf "%.4f", e - s }')")
    done
    ticks1=$(awk '{ print $14 + $15 }' "/proc/$PID/stat")
    printf '%s ' "$(printf '%s\n' "${t[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')"
    awk -v d=$((ticks1 - ticks0)) -v tck="$tck" -v r="$R" '{ c += $1 + $2 }
        END { printf "%.4f %.4f\n", (c + d / tck) / r, d / tck / r }' "$cpu"
    rm -f "$cpu"
}

# measure BUILD_DIR: its docketd with N jobs; one line per listing, "NAME<TAB>SECONDS"
measure() (
    B=$1
    # shellcheck source=bench/cli/lib.sh
    source bench/cli/lib.sh
    for ((i = 0; i < N; i += 1000)); do
        "$DOCKET" submit -p bench --array "0-$((N - i > 1000 ? 999 : N - i - 1))" -g 1 \
            -- sleep 100 >/dev/null
    done
    S=$T/state/docketd.sock
    F=id,name,project,user,tier,eff_tier,class,state,reason,gpus,gpu_type,nodes,submit_ms
    F=$F,start_ms,time_limit_ms,allocation
    echo "jobs: $("$DOCKET" queue | tail -n 2 | head -n 1)" >&2
    printf '%s\t%s\n' "docket queue (first 1,000 shown)" "$(median "$DOCKET" queue)"
    printf '%s\t%s\n' "docket queue -n 100000" "$(median "$DOCKET" queue -n 100000)"
    printf '%s\t%s\n' "docket queue -n 100000 --json (full rows)" \
        "$(median "$DOCKET" queue -n 100000 --json)"
    printf '%s\t%s\n' "GET /v1/jobs?limit=10000 (full rows)" \
        "$(median curl -sf --unix-socket "$S" -o /dev/null "http://x/v1/jobs?limit=10000")"
    printf '%s\t%s\n' "GET /v1/jobs?limit=10000&fields=(table's)" \
        "$(median curl -sf --unix-socket "$S" -o /dev/null \
            "http://x/v1/jobs?limit=10000&fields=$F")"
)

echo "list bench: N=$N, R=$R, $(nproc) CPUs; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
after=$(measure "$AFTER")
if [[ -n $BEFORE ]]; then
    before=$(measure "$BEFORE")
    printf '%-44s %28s %28s\n' "seconds: wall (median of $R) / CPU (mean)" "before" "after"
    printf '%-44s %28s %28s\n' "  (CPU: client and docketd, (docketd's))" "" ""
    paste <(printf '%s\n' "$before") <(printf '%s\n' "$after" | cut -f2) |
        awk -F'\t' '{ split($2, b, " "); split($3, a, " ")
            printf "%-44s %8s / %-6s (%-6s) %8s / %-6s (%-6s)\n", $1, b[1], b[2], b[3], a[1], a[2], a[3] }'
else
    printf '%-44s %28s\n' "seconds: wall (median of $R) / CPU (mean)" "after"
    printf '%-44s %28s\n' "  (CPU: client and docketd, (docketd's))" ""
    printf '%s\n' "$after" | awk -F'\t' '{ split($2, a, " ")
        printf "%-44s %8s / %-6s (%-6s)\n", $1, a[1], a[2], a[3] }'
fi
if command -v squeue >/dev/null 2>&1; then
    PID=$$ # (Slurm's own daemons are not ours to count: its wall time alone)
    printf '%-44s %10s\n' "squeue (Slurm's own, its cluster)" "$(median squeue | cut -d' ' -f1)"
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
