#!/usr/bin/env bash
# shell_bench.sh - interactive sessions (docs/interactive.md, issue 36) on an idle 2-node
# cluster on loopback: a real docketd and two real docket-node agents (declared GPUs),
# started here on a temporary state directory and stopped by pid at the end.
#   0. the floor: the PTY driver (tests/system/lib/pty_drive.py) running /bin/true;
#   1. `docket shell -- true` from start to exit, N times (a new process each time, its
#      terminal a real PTY): submission, scheduling, the start, the terminal's upgrade
#      through docketd and the agent, the command, its exit status back;
#   2. the keystroke echo round trip: one byte typed into docket's terminal comes back from
#      `dd bs=1` on the node's PTY (CLI -> docketd -> agent -> supervisor -> PTY and back),
#      K keystrokes one at a time (echo_rtt.py).
# Prints the medians (and p90) in ms. Results go to bench/RESULTS.md by hand.
#
#   bench/shell/shell_bench.sh [BUILD_DIR] [N] [K]     (default: build, 30, 300)
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build}
N=${2:-30}
K=${3:-300}
NAME=shell
# shellcheck source=bench/lib/cluster.sh
. bench/lib/cluster.sh

bench_docketd
"$DOCKET" apply -f examples/policy.yaml >/dev/null
bench_agents a b

# median and p90 of the numbers on stdin (ms)
stats() { sort -n | awk '{v[NR] = $1} END {printf "median %.1f ms  p90 %.1f ms  (n=%d)\n", v[int((NR + 1) / 2)], v[int(NR * 0.9 + 0.5)], NR}'; }

DRIVE=tests/system/lib/pty_drive.py
# the floor: the same PTY driver running /bin/true (python's start and the PTY's set-up)
for i in $(seq "$N"); do
    t0=$(date +%s%N)
    python3 "$DRIVE" '[]' true >/dev/null
    t1=$(date +%s%N)
    echo "$(((t1 - t0) / 1000))" | awk '{printf "%.3f\n", $1 / 1000}'
done >"$T/floor.ms"
echo "floor, the PTY driver running true: $(stats <"$T/floor.ms")"
for i in $(seq "$N"); do
    t0=$(date +%s%N)
    python3 "$DRIVE" '[]' "$DOCKET" shell -A vision -- true >/dev/null
    t1=$(date +%s%N)
    echo "$(((t1 - t0) / 1000))" | awk '{printf "%.3f\n", $1 / 1000}'
done >"$T/start.ms"
echo "docket shell -- true, start to exit: $(stats <"$T/start.ms")"
python3 "$(dirname "$0")/echo_rtt.py" "$K" "$DOCKET" shell -A vision -- \
    /bin/sh -c "stty -icanon -echo min 1; exec dd bs=1 count=$K status=none" >"$T/echo.ms"
echo "keystroke echo round trip:          $(stats <"$T/echo.ms")"
