#!/usr/bin/env bash
# preemption.sh [N=20] - a low-tier job holds all 8 GPUs of the node and records the moment
# SIGTERM reaches it; a high-tier job asking for 8 GPUs is submitted; the figure is
# submit (taken just before curl starts) -> SIGTERM in the victim. Median over N rounds.
set -euo pipefail
N=${1:-20}
. "$(dirname "$0")/lib.sh"
cluster_start --gpus 8xH100-80GB --cpus 16 --mem 64G
cat >"$W/victim.sh" <<'VICTIM'
#!/bin/bash
trap 'echo ${EPOCHREALTIME/./} > "$DOCKET_WORK/term.$DOCKET_JOB_ID"; exit 0' TERM
echo up > "$DOCKET_WORK/up.$DOCKET_JOB_ID"
sleep 1000 & wait
VICTIM
chmod 755 "$W/victim.sh"
lat=$T/latencies
: >"$lat"
for ((i = 0; i < N; i++)); do
    v=$(api POST /v1/jobs -d "{\"project\": \"lo\", \"tier\": \"low\", \"class\": \"training\", \"gpus\": 8,
        \"user\": \"nobody\", \"workdir\": \"/tmp\", \"signal\": \"TERM\", \"grace\": \"5s\",
        \"env\": {\"DOCKET_WORK\": \"$W\"}, \"command\": [\"$W/victim.sh\"]}" | jq -r '.job.id')
    until [[ -e $W/up.$v ]]; do sleep 0.005; done
    t0=$(now_us)
    h=$(api POST /v1/jobs -d '{"project": "hi", "tier": "high", "class": "experiment", "gpus": 8,
        "user": "nobody", "workdir": "/tmp", "command": ["true"]}' | jq -r '.job.id')
    until [[ -s $W/term.$v ]]; do sleep 0.001; done
    echo $(($(cat "$W/term.$v") - t0)) >>"$lat"
    until [[ $(api GET "/v1/jobs/$h" | jq -r '.job.state') == COMPLETED ]]; do sleep 0.01; done
    api POST "/v1/jobs/$v/cancel" >/dev/null || true
    until [[ $(api GET "/v1/jobs/$v" | jq -r '.job.state') =~ ^(CANCELLED|COMPLETED|FAILED|PREEMPTED)$ ]]; do sleep 0.01; done
done
p50=$(pct 50 <"$lat"); max=$(pct 100 <"$lat")
printf 'preemption rounds=%d median=%.1f ms max=%.1f ms (high submit -> SIGTERM in the victim)\n' \
    "$N" "$(bc -l <<<"$p50/1000")" "$(bc -l <<<"$max/1000")"
machine
