#!/usr/bin/env bash
# submit_bench.sh - 1,000 sequential `docket submit` calls from a shell loop, a new
# process each time as users and workflow tools call it, against a real docketd on a
# temporary state directory: submissions per second, over the Unix socket and over TCP
# with a token. Jobs are submitted held to one node registered through the agent API
# (nothing runs them, so no agent is needed).
#
#   bench/cli/submit_bench.sh [BUILD_DIR] [N]     (default: build, 1000)
#
# Build BUILD_DIR as a release build first (make build does). Prints one line per
# transport: "unix: 1000 submits in 2.345 s = 426/s". Results go to bench/RESULTS.md by hand.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build}
N=${2:-1000}
# shellcheck source=bench/cli/lib.sh
source bench/cli/lib.sh

run() { # LABEL
    local start end i
    start=$(date +%s.%N)
    for ((i = 0; i < N; i++)); do
        "$DOCKET" submit -p bench --hold --parsable -- true >/dev/null
    done
    end=$(date +%s.%N)
    awk -v l="$1" -v n="$N" -v s="$start" -v e="$end" \
        'BEGIN { printf "%s: %d submits in %.3f s = %.0f/s\n", l, n, e - s, n / (e - s) }'
}

# the floor: the same loop starting a process that does nothing
start=$(date +%s.%N)
for ((i = 0; i < N; i++)); do /bin/true; done
end=$(date +%s.%N)
awk -v n="$N" -v s="$start" -v e="$end" \
    'BEGIN { printf "floor (/bin/true): %d in %.3f s = %.0f/s\n", n, e - s, n / (e - s) }'

# docket's own start-up: a verb that sends nothing
start=$(date +%s.%N)
for ((i = 0; i < N; i++)); do "$DOCKET" help >/dev/null; done
end=$(date +%s.%N)
awk -v n="$N" -v s="$start" -v e="$end" \
    'BEGIN { printf "docket help (no request): %d in %.3f s = %.0f/s\n", n, e - s, n / (e - s) }'

run "unix socket"
DOCKET_URL=http://127.0.0.1:$PORT DOCKET_TOKEN=$TOKEN run "tcp + token"
count=$("$DOCKET" queue -p bench --state HELD --limit 100000 --json | jq '.jobs | length')
echo "held jobs in docketd: $count (expected $((2 * N)))"
