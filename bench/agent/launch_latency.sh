#!/usr/bin/env bash
# launch_latency.sh [N=200] - on an idle cluster (docketd + one docket-node), submit one
# job at a time and measure submit -> the job's first instruction: the job is
# `date +%s%N`, whose output is the moment it ran; the submit time is taken just before
# curl starts (so the figure includes curl's own start-up). Each job is waited for (its
# exit acknowledged by the controller) before the next, so the cluster stays idle.
set -euo pipefail
N=${1:-200}
. "$(dirname "$0")/lib.sh"
cluster_start --gpus 0 --cpus 4 --mem 8G
lat=$T/latencies
: >"$lat"
for ((i = 0; i < N; i++)); do
    t0=$(now_us)
    id=$(api POST /v1/jobs -d "{\"project\": \"lo\", \"user\": \"nobody\", \"workdir\": \"/tmp\",
        \"command\": [\"date\", \"+%s%N\"]}" | jq -r '.job.id')
    out=$T/agent/jobs/$id/stdout
    until [[ -s $out ]]; do sleep 0.001; done
    t1=$(cat "$out")
    echo $(((t1 / 1000 - t0))) >>"$lat"          # microseconds
    until [[ -e $T/agent/jobs/$id/reported ]]; do sleep 0.001; done
    # the same from the moment docketd took the submission (its submit_ms), without curl
    sub=$(api GET "/v1/jobs/$id" | jq -r '.job.submit_ms')
    echo $(((t1 / 1000 - sub * 1000))) >>"$lat.ctl"
done
# curl's own cost, for reference: a round trip to /healthz
c0=$(now_us); curl -s -o /dev/null "http://127.0.0.1:$PORT/healthz"; c1=$(now_us)
p50=$(pct 50 <"$lat"); p99=$(pct 99 <"$lat"); max=$(pct 100 <"$lat")
printf 'launch_latency jobs=%d p50=%.1f ms p99=%.1f ms max=%.1f ms (curl /healthz round trip %.1f ms)\n' \
    "$N" "$(bc -l <<<"$p50/1000")" "$(bc -l <<<"$p99/1000")" "$(bc -l <<<"$max/1000")" "$(bc -l <<<"($c1-$c0)/1000")"
q50=$(pct 50 <"$lat.ctl"); q99=$(pct 99 <"$lat.ctl")
printf 'launch_latency_from_docketd jobs=%d p50=%.1f ms p99=%.1f ms (submit_ms, 1 ms resolution -> first instruction)\n' \
    "$N" "$(bc -l <<<"$q50/1000")" "$(bc -l <<<"$q99/1000")"
machine
