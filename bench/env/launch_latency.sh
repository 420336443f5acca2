#!/usr/bin/env bash
# launch_latency.sh [N=200] - what an environment template costs a job's start
# (docs/environments.md): on an idle cluster (docketd + one docket-node, bench/agent/lib.sh)
# submit one job at a time, alternating a bare job and the same job with a warm template
# (variables, a setup sourced from its prepared directory), and measure submit -> the
# job's first instruction (the job is `date +%s%N`; the submit time is taken just before
# curl starts). The template's prepare runs once, before the measured jobs (its first job
# is left out). Each job is waited for before the next, so the cluster stays idle.
# Prints the median and p99 of each and the median overhead.
set -euo pipefail
N=${1:-200}
. "$(dirname "$0")/../agent/lib.sh"
cluster_start --gpus 0 --cpus 4 --mem 8G
cat >"$T/policy.json" <<'JSON'
{"templates": [{"name": "warm", "env": {"FRAMEWORK": "torch", "HF_HOME": "/tmp/hf"},
  "prepare": "mkdir -p \"$DOCKET_ENV_DIR/venv/bin\"\necho 'export VIRTUAL_ENV=$DOCKET_ENV_DIR/venv PATH=$DOCKET_ENV_DIR/venv/bin:$PATH' >\"$DOCKET_ENV_DIR/venv/bin/activate\"\n",
  "setup": ". \"$DOCKET_ENV_DIR/venv/bin/activate\""}]}
JSON
api POST /v1/policy --data-binary @"$T/policy.json" | jq -e '.applied.templates == 1' >/dev/null

# one JOB body -> microseconds from just before the submit to the job's first instruction
one() {
    local t0 id out t1
    t0=$(now_us)
    id=$(api POST /v1/jobs -d "$1" | jq -r '.job.id')
    out=$T/agent/jobs/$id/stdout
    until [[ -s $out ]]; do sleep 0.001; done
    t1=$(tail -n 1 "$out")
    until [[ -e $T/agent/jobs/$id/reported ]]; do sleep 0.001; done
    echo $((t1 / 1000 - t0))
}

bare='{"project": "lo", "user": "nobody", "workdir": "/tmp", "command": ["date", "+%s%N"]}'
warm='{"project": "lo", "user": "nobody", "workdir": "/tmp", "command": ["date", "+%s%N"], "template": "warm"}'
one "$warm" >/dev/null # the prepare: once, not measured
: >"$T/bare"
: >"$T/warm"
for ((i = 0; i < N; i++)); do
    one "$bare" >>"$T/bare"
    one "$warm" >>"$T/warm"
done
b50=$(pct 50 <"$T/bare"); b99=$(pct 99 <"$T/bare")
w50=$(pct 50 <"$T/warm"); w99=$(pct 99 <"$T/warm")
printf 'env_launch bare jobs=%d p50=%.1f ms p99=%.1f ms\n' "$N" "$(bc -l <<<"$b50/1000")" "$(bc -l <<<"$b99/1000")"
printf 'env_launch warm_template jobs=%d p50=%.1f ms p99=%.1f ms\n' "$N" "$(bc -l <<<"$w50/1000")" "$(bc -l <<<"$w99/1000")"
printf 'env_launch overhead p50=%.1f ms (warm template - bare)\n' "$(bc -l <<<"($w50-$b50)/1000")"
machine
