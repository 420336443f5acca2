#!/usr/bin/env bash
# throughput.sh [N=10000] - N trivial jobs (`true`, 1 CPU each) through one docket-node
# with 64 CPU slots, submitted as one array; time from the first submit to the last
# completion (no live job left in /healthz), in jobs per second.
set -euo pipefail
N=${1:-10000}
. "$(dirname "$0")/lib.sh"
cluster_start --gpus 0 --cpus 64 --mem 256G
t0=$(now_us)
reply=$(api POST /v1/jobs -d "{\"project\": \"lo\", \"user\": \"nobody\", \"workdir\": \"/tmp\",
    \"cpus\": 1, \"array\": \"0-$((N - 1))\", \"command\": [\"true\"]}")
[[ $(jq -r '.jobs | length' <<<"$reply") == "$N" ]] || { echo "submit failed: ${reply:0:300}"; exit 1; }
t1=$(now_us)
# poll lightly (no jq): /healthz lists live jobs by state, "jobs":{} when none is left
while :; do
    h=$(curl -s -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/healthz")
    [[ $h == *'"jobs":{}'* || $h == *'"jobs": {}'* ]] && break
    sleep 0.1
done
t2=$(now_us)
done_ok=$(api GET "/v1/jobs?state=COMPLETED&limit=10000" | jq '.jobs | length')
printf 'throughput jobs=%d completed=%d submit=%.2f s total=%.2f s rate=%.0f jobs/s\n' "$N" "$done_ok" \
    "$(bc -l <<<"($t1-$t0)/1000000")" "$(bc -l <<<"($t2-$t0)/1000000")" "$(bc -l <<<"$N*1000000/($t2-$t0)")"
# CPU spent by each side (the agent's figure includes its reaped supervisors and jobs)
self() { awk '{printf "%.1f", ($14 + $15) / 100}' "/proc/$1/stat"; }
kids() { awk '{printf "%.1f", ($16 + $17) / 100}' "/proc/$1/stat"; }
echo "cpu seconds: docketd $(self "${PIDS[0]}"), docket-node $(self "${PIDS[1]}"), supervisors+jobs $(kids "${PIDS[1]}")"
machine
