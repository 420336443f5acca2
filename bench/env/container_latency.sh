#!/usr/bin/env bash
# container_latency.sh [N=200] - what running a job in a container costs its start
# (docs/environments.md "Containers"): on an idle cluster (docketd + one docket-node,
# bench/agent/lib.sh) submit one job at a time, alternating a bare job and the same job
# in a warm container (a busybox OCI layout built here with umoci; the first container
# job unpacks it and is left out), and measure submit -> the job's first output. busybox
# has no nanosecond clock, so both kinds are timed the same way from outside: the time
# the job's stdout file is first seen non-empty (polled every millisecond), minus the time
# just before curl starts. Each job is waited for before the next, so the cluster stays
# idle. Prints the median and p99 of each, the median overhead, and how many times the
# image was unpacked for the N + 1 container jobs (the cache at work: 1).
set -euo pipefail
N=${1:-200}
. "$(dirname "$0")/../agent/lib.sh"
cluster_start --gpus 0 --cpus 4 --mem 8G
IMG=$T/img
busybox_image "$IMG" bb

# one JOB body -> microseconds from just before the submit to its first output
one() {
    local t0 id out t1
    t0=$(now_us)
    id=$(api POST /v1/jobs -d "$1" | jq -r '.job.id')
    out=$T/agent/jobs/$id/stdout
    until [[ -s $out ]]; do sleep 0.001; done
    t1=$(now_us)
    until [[ -e $T/agent/jobs/$id/reported ]]; do sleep 0.001; done
    echo $((t1 - t0))
}

bare='{"project": "lo", "user": "nobody", "workdir": "/tmp", "command": ["echo", "go"]}'
boxed="{\"project\": \"lo\", \"user\": \"nobody\", \"workdir\": \"/tmp\", \"command\": [\"echo\", \"go\"], \"image\": \"oci-layout:$IMG:bb\"}"
one "$boxed" >/dev/null # the unpack: once, not measured
: >"$T/bare"
: >"$T/boxed"
for ((i = 0; i < N; i++)); do
    one "$bare" >>"$T/bare"
    one "$boxed" >>"$T/boxed"
done
b50=$(pct 50 <"$T/bare"); b99=$(pct 99 <"$T/bare")
c50=$(pct 50 <"$T/boxed"); c99=$(pct 99 <"$T/boxed")
printf 'container_launch bare jobs=%d p50=%.1f ms p99=%.1f ms\n' "$N" "$(bc -l <<<"$b50/1000")" "$(bc -l <<<"$b99/1000")"
printf 'container_launch warm_container jobs=%d p50=%.1f ms p99=%.1f ms\n' "$N" "$(bc -l <<<"$c50/1000")" "$(bc -l <<<"$c99/1000")"
printf 'container_launch overhead p50=%.1f ms (warm container - bare)\n' "$(bc -l <<<"($c50-$b50)/1000")"
printf 'container_launch unpacks=%d for %d container jobs\n' "$(wc -l <"$T/agent/images/unpack.log")" $((N + 1))
machine
