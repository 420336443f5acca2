#!/usr/bin/env bash
# run.sh - every agent benchmark in turn against a build (DOCKET_BUILD, default build/):
# launch latency (200 jobs), throughput (10,000 jobs, 64 slots), preemption (20 rounds).
# Needs root (cgroups). Results are recorded by hand in bench/RESULTS.md "## Agent".
set -euo pipefail
d=$(dirname "$0")
"$d/launch_latency.sh" "${LAUNCH_JOBS:-200}"
"$d/throughput.sh" "${THROUGHPUT_JOBS:-10000}"
"$d/preemption.sh" "${PREEMPT_ROUNDS:-20}"
