# lib.sh - what the CLI benchmarks share: a docketd of their own on a temporary state
# directory, a project `bench` without a queue cap, and one node registered through the
# agent API (nothing runs its jobs: no agent is started). Source it after setting B (the
# build directory); it sets T, PID, PORT, TOKEN, DOCKET, DOCKETD and DOCKET_URL and stops
# docketd at exit.
[[ $B == /* ]] || B=$PWD/$B
DOCKET=$B/src/cli/docket
DOCKETD=$B/src/controller/docketd
[[ -x $DOCKET && -x $DOCKETD ]] || { echo "build $B first (make build)" >&2; exit 1; }

T=$(mktemp -d /tmp/docket-bench-cli.XXXXXX)
cleanup() {
    [[ -n ${PID:-} ]] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT

mkdir -p "$T/state"
"$DOCKETD" --state-dir "$T/state" --listen 127.0.0.1:0 --socket "$T/state/docketd.sock" \
    --log-level warn --log-file "$T/docketd.log" &
PID=$!
for _ in $(seq 200); do [[ -S $T/state/docketd.sock && -s $T/state/docketd.port ]] && break; sleep 0.05; done
PORT=$(cat "$T/state/docketd.port")
TOKEN=$(cat "$T/state/admin.token")
export DOCKET_URL=unix:$T/state/docketd.sock
printf 'projects: [{name: bench, group: b, tier: normal, max_queued: -1}]\n' >"$T/p.yaml"
"$DOCKET" apply -f "$T/p.yaml" >/dev/null
# one node, registered through the agent endpoint, so jobs pass "could it ever fit"
JOIN=$("$DOCKET" token join)
curl -sf -o /dev/null -H 'Content-Type: application/json' "http://127.0.0.1:$PORT/v1/agent/register" \
    -d "{\"join_token\": \"$JOIN\", \"agent_version\": \"bench\", \"node\": {\"name\": \"n1\",
         \"gpu_type\": \"H100-80GB\", \"gpus\": 8, \"cpus\": 64, \"mem_mb\": 512000}}"
