#!/usr/bin/env bash
# list_bench.sh - how long listing a deep queue takes: N pending jobs (arrays of 1,000
# tasks in one project, on one node registered through the agent API and never started),
# then each listing R times, medians side by side in one run:
#   - `docket queue` (its table: every active job read, the first 1,000 shown)
#   - `docket queue -n 100000` (the whole table), and with --json (full rows, paged)
#   - GET /v1/jobs?limit=10000 full rows, and with ?fields= the queue table's members
#
#   bench/cli/list_bench.sh [BUILD_DIR] [N] [R]     (default: build, 10000, 7)
#
# Build BUILD_DIR as a release build first (make build does). Results go to
# bench/RESULTS.md by hand.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build}
N=${2:-10000}
R=${3:-7}
# shellcheck source=bench/cli/lib.sh
source bench/cli/lib.sh
for ((i = 0; i < N; i += 1000)); do
    "$DOCKET" submit -p bench --array "0-$((N - i > 1000 ? 999 : N - i - 1))" -g 1 -- sleep 100 >/dev/null
done

median() { # COMMAND...: the median wall time of R runs, in seconds
    local t=()
    for ((k = 0; k < R; k++)); do
        local s e
        s=$(date +%s.%N)
        "$@" >/dev/null
        e=$(date +%s.%N)
        t+=("$(awk -v s="$s" -v e="$e" 'BEGIN { printf "%.4f", e - s }')")
    done
    printf '%s\n' "${t[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
S=$T/state/docketd.sock
F=id,name,project,user,tier,eff_tier,class,state,reason,gpus,gpu_type,nodes,submit_ms,start_ms,time_limit_ms,allocation
echo "jobs: $("$DOCKET" queue | tail -n 2 | head -n 1)"
printf '%-44s %s\n' "docket queue (first 1,000 shown)" "$(median "$DOCKET" queue) s"
printf '%-44s %s\n' "docket queue -n 100000" "$(median "$DOCKET" queue -n 100000) s"
printf '%-44s %s\n' "docket queue -n 100000 --json (full rows)" "$(median "$DOCKET" queue -n 100000 --json) s"
printf '%-44s %s\n' "GET /v1/jobs?limit=10000 (full rows)" \
    "$(median curl -sf --unix-socket "$S" -o /dev/null "http://x/v1/jobs?limit=10000") s"
printf '%-44s %s\n' "GET /v1/jobs?limit=10000&fields=(table's)" \
    "$(median curl -sf --unix-socket "$S" -o /dev/null "http://x/v1/jobs?limit=10000&fields=$F") s"
