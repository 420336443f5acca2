#!/usr/bin/env bash
# step_latency.sh [N=100] - what running a step's task in a container costs srun
# (docs/slurm.md "Steps in a container"): on an idle cluster (docketd + one docket-node
# with the CLI for Slurm's commands, bench/agent/lib.sh) one Slurm-style job of user
# nobody runs N pairs of steps, alternating `srun -n 1 echo go` and the same step with
# `--container-image` of a warm busybox OCI layout (built here with umoci; a first
# container step unpacks it and is left out). Each srun is timed whole inside the job
# (bash's EPOCHREALTIME before it starts and after it returns: the task handed to the
# node's supervisor, the image held, the bundle written, crun's start, the exit status
# back). Prints the median and p99 of each, the median overhead, and the image's unpacks.
set -euo pipefail
N=${1:-100}
. "$(dirname "$0")/../agent/lib.sh"
cluster_start --gpus 0 --cpus 4 --mem 8G --slurm-cli "$B/src/cli/docket"
IMG=$T/img
busybox_image "$IMG" bb

script="#!/bin/bash
box=(--container-image=oci-layout:$IMG:bb)
srun -n 1 \"\${box[@]}\" echo go >/dev/null # the unpack: once, not measured
for ((i = 0; i < $N; i++)); do
    t0=\${EPOCHREALTIME/./}; srun -n 1 echo go >/dev/null; t1=\${EPOCHREALTIME/./}
    echo \$((t1 - t0)) >>$W/bare
    t0=\${EPOCHREALTIME/./}; srun -n 1 \"\${box[@]}\" echo go >/dev/null; t1=\${EPOCHREALTIME/./}
    echo \$((t1 - t0)) >>$W/boxed
done
"
body=$(jq -c -n --arg s "$script" --arg w "$W" \
    '{project: "lo", user: "nobody", workdir: $w, script: $s, slurm: {ntasks: 1}, time_limit: "1h"}')
id=$(api POST /v1/jobs -d "$body" | jq -r '.job.id')
until [[ -e $T/agent/jobs/$id/reported ]]; do sleep 0.2; done
[[ $(wc -l <"$W/boxed") -eq $N ]] || { echo "the job did not run every step:"; cat "$T/agent/jobs/$id/stderr"; exit 1; }
b50=$(pct 50 <"$W/bare"); b99=$(pct 99 <"$W/bare")
c50=$(pct 50 <"$W/boxed"); c99=$(pct 99 <"$W/boxed")
printf 'step_launch bare steps=%d p50=%.1f ms p99=%.1f ms\n' "$N" "$(bc -l <<<"$b50/1000")" "$(bc -l <<<"$b99/1000")"
printf 'step_launch warm_container steps=%d p50=%.1f ms p99=%.1f ms\n' "$N" "$(bc -l <<<"$c50/1000")" "$(bc -l <<<"$c99/1000")"
printf 'step_launch overhead p50=%.1f ms (warm container - bare)\n' "$(bc -l <<<"($c50-$b50)/1000")"
printf 'step_launch unpacks=%d for %d container steps\n' "$(wc -l <"$T/agent/images/unpack.log")" $((N + 1))
machine
