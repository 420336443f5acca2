# common.bash - shared helpers for the bats system tests: start docketd on a temporary
# state directory (TCP on 127.0.0.1:0, the chosen port read from STATE_DIR/docketd.port),
# talk to it with curl, register fake nodes through the real agent endpoints, and stop
# every process we started, by pid, in teardown.
#
# Use:   load lib/common
#        setup()    { docket_setup; docketd_start; }
#        teardown() { docket_teardown; }
#
# Variables set: DOCKET_BUILD (build dir), DOCKETD (binary), TEST_DIR (temp dir),
# STATE_DIR, DOCKETD_PID, DOCKETD_PORT, DOCKETD_URL, ADMIN_TOKEN.
# After api_* calls: $status_code (HTTP status) and $body (reply body).

DOCKET_BUILD=${DOCKET_BUILD:-$BATS_TEST_DIRNAME/../../build}
DOCKETD=${DOCKETD:-$DOCKET_BUILD/src/controller/docketd}
DOCKET_PIDS=()

docket_setup() {
    TEST_DIR=$(mktemp -d "${BATS_TMPDIR:-/tmp}/docket.XXXXXX")
    STATE_DIR=$TEST_DIR/state
    mkdir -p "$STATE_DIR"
    export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
}

# wait_for: lib/wait.bash
source "${BASH_SOURCE[0]%/*}/wait.bash"
# end_supervisors, sweep_cgroups, agents_sane: lib/sweep.bash
source "${BASH_SOURCE[0]%/*}/sweep.bash"
# capi: lib/capi.bash
source "${BASH_SOURCE[0]%/*}/capi.bash"

# job_state_is ID STATE: the API shows job ID in STATE (sets status_code and body).
job_state_is() {
    api_get "/v1/jobs/$1"
    [[ $(jq -r .job.state <<<"$body") == "$2" ]]
}

# wait_job_state ID STATE: until the API shows the job in STATE (60 s at most: a deadline,
# not a speed), else say which state it is in.
wait_job_state() {
    wait_for 60 job_state_is "$1" "$2" || {
        echo "job $1 is $(jq -r .job.state <<<"$body"), not $2" >&2
        return 1
    }
}

# Remember a pid so docket_teardown stops it.
docket_track_pid() {
    DOCKET_PIDS+=("$1")
}

# docketd_start [EXTRA FLAGS...]: start on STATE_DIR, wait until /healthz answers.
docketd_start() {
    rm -f "$STATE_DIR/docketd.port"
    "$DOCKETD" --state-dir "$STATE_DIR" --listen 127.0.0.1:0 \
        --socket "$STATE_DIR/docketd.sock" "$@" >>"$TEST_DIR/docketd.log" 2>&1 &
    DOCKETD_PID=$!
    docket_track_pid "$DOCKETD_PID"
    docketd_wait
}

# Wait for the port file and a healthy answer (60 s: a sanitizer build on a loaded
# machine can take seconds).
docketd_wait() {
    local deadline=$((SECONDS + 60))
    while ((SECONDS < deadline)); do
        if [[ -s $STATE_DIR/docketd.port ]]; then
            DOCKETD_PORT=$(cat "$STATE_DIR/docketd.port")
            DOCKETD_URL=http://127.0.0.1:$DOCKETD_PORT
            if curl -sf -o /dev/null "$DOCKETD_URL/healthz"; then
                ADMIN_TOKEN=$(cat "$STATE_DIR/admin.token")
                return 0
            fi
        fi
        if ! kill -0 "$DOCKETD_PID" 2>/dev/null; then
            echo "docketd exited early:" >&2
            tail -n 30 "$TEST_DIR/docketd.log" >&2
            return 1
        fi
        sleep 0.05
    done
    echo "docketd did not come up" >&2
    tail -n 30 "$TEST_DIR/docketd.log" >&2
    return 1
}

# Stop docketd with SIGTERM and wait for it (30 s, then SIGKILL).
docketd_stop() {
    [[ -n ${DOCKETD_PID:-} ]] || return 0
    docket_stop_pid "$DOCKETD_PID"
    DOCKETD_PID=
}

# Kill docketd with SIGKILL (crash) and reap it.
docketd_kill9() {
    kill -9 "$DOCKETD_PID" 2>/dev/null || true
    wait "$DOCKETD_PID" 2>/dev/null || true
    DOCKETD_PID=
}

# docket_stop_pid PID: SIGTERM, then SIGKILL if it is still there after 30 s (a sanitizer
# build checks for leaks on its way out, which on a loaded machine takes seconds).
docket_stop_pid() {
    local pid=$1 deadline=$((SECONDS + 30))
    kill -TERM "$pid" 2>/dev/null || return 0
    while ((SECONDS < deadline)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

# Fail when a sanitizer reported anything in docketd's log (ASan, LSan, UBSan, TSan).
docket_check_sanitizers() {
    local log=$TEST_DIR/docketd.log
    local re='ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|ThreadSanitizer'
    [[ -f $log ]] || return 0
    if grep -qE "$re" "$log"; then
        echo "sanitizer report in docketd's log:" >&2
        grep -E -A12 "$re" "$log" | head -n 40 >&2
        return 1
    fi
}

docket_teardown() {
    local pid rc=0
    for pid in "${DOCKET_PIDS[@]}"; do
        docket_stop_pid "$pid"
    done
    DOCKET_PIDS=()
    docket_check_sanitizers || rc=1
    if [[ -n ${TEST_DIR:-} && -d $TEST_DIR ]]; then
        if [[ -n ${BATS_TEST_COMPLETED:-} ]]; then
            rm -rf "$TEST_DIR"
        else
            echo "# kept $TEST_DIR; docketd log tail:" >&3
            tail -n 20 "$TEST_DIR/docketd.log" 2>/dev/null | sed 's/^/# /' >&3 || true
        fi
    fi
    return $rc
}

# api METHOD PATH [BODY] [TOKEN]: sets status_code and body. TOKEN defaults to the
# admin token; "-" sends no Authorization header.
# What docketd's turn log says of one counter (turns.c): "MAX SUM TURNS", the most in one
# turn, all turns together, and how many turns had any.
turn_counts() {
    local values
    values=$(grep -o "$1=[0-9]*" "$TEST_DIR/docketd.log" | cut -d= -f2)
    echo "$(sort -n <<<"$values" | tail -n 1) $(awk '{ s += $1 } END { print s + 0 }' <<<"$values") $(grep -c "$1=[1-9]" "$TEST_DIR/docketd.log")"
}

api() {
    local method=$1 path=$2 data=${3-} tok=${4-$ADMIN_TOKEN}
    local args=(-s -o "$TEST_DIR/body" -w '%{http_code}' -X "$method")
    [[ $tok != "-" ]] && args+=(-H "Authorization: Bearer $tok")
    if [[ -n $data ]]; then
        args+=(-H 'Content-Type: application/json' --data-binary "$data")
    fi
    status_code=$(curl "${args[@]}" "$DOCKETD_URL$path")
    body=$(cat "$TEST_DIR/body")
}

api_get()    { api GET "$1" "" "${2-$ADMIN_TOKEN}"; }
api_post()   { api POST "$1" "${2-}" "${3-$ADMIN_TOKEN}"; }
api_patch()  { api PATCH "$1" "${2-}" "${3-$ADMIN_TOKEN}"; }
api_delete() { api DELETE "$1" "" "${2-$ADMIN_TOKEN}"; }

# api_token USER [ROLE] [TTL]: a fresh API token (admin call), printed; role member and
# docketd's default lifetime unless given
api_token() {
    local ttl=${3:+", \"ttl\": \"$3\""}
    api_post /v1/tokens "{\"user\": \"$1\", \"role\": \"${2:-member}\"$ttl}"
    [[ $status_code == 201 ]] || { echo "token $1: $status_code $body" >&2; return 1; }
    jq -r .token <<<"$body"
}

# api_file METHOD PATH FILE [CONTENT-TYPE]: send a file as the body.
api_file() {
    local method=$1 path=$2 file=$3 ctype=${4:-application/json}
    status_code=$(curl -s -o "$TEST_DIR/body" -w '%{http_code}' -X "$method" \
        -H "Authorization: Bearer $ADMIN_TOKEN" -H "Content-Type: $ctype" \
        --data-binary "@$file" "$DOCKETD_URL$path")
    body=$(cat "$TEST_DIR/body")
}

# Assertions that print both sides on failure.
assert_status() {
    if [[ $status_code != "$1" ]]; then
        echo "expected HTTP $1, got $status_code: $body" >&2
        return 1
    fi
}

# assert_json JQ-EXPR EXPECTED: jq -r of $body must equal EXPECTED.
assert_json() {
    local got
    got=$(jq -r "$1" <<<"$body")
    if [[ $got != "$2" ]]; then
        echo "expected $1 == '$2', got '$got' in: $body" >&2
        return 1
    fi
}

# assert_error STATUS FIELD: a JSON error with that status naming FIELD ("" = no field).
assert_error() {
    assert_status "$1" || return 1
    local f
    f=$(jq -r '.error.field // ""' <<<"$body")
    if [[ $f != "$2" ]]; then
        echo "expected error field '$2', got '$f' in: $body" >&2
        return 1
    fi
    jq -e '.error.code and .error.message' <<<"$body" >/dev/null || {
        echo "not an error object: $body" >&2
        return 1
    }
}

# A join token (admin).
join_token() {
    api_post /v1/join-tokens '{"ttl": "1h"}'
    jq -r .join_token <<<"$body"
}

# fake_node NAME GPUS GPU_TYPE [CPUS] [MEM_MB]: register a node through the real agent
# endpoint; prints its credential. Nothing runs on it unless a test plays the agent.
fake_node() {
    local name=$1 gpus=$2 type=$3 cpus=${4:-64} mem=${5:-512000} jt
    jt=$(join_token)
    api_post /v1/agent/register "{\"join_token\": \"$jt\", \"agent_version\": \"test\",
        \"node\": {\"name\": \"$name\", \"gpu_type\": \"$type\", \"gpus\": $gpus,
                   \"gpu_mem_mb\": 81920, \"cpus\": $cpus, \"mem_mb\": $mem}}" -
    [[ $status_code == 200 ]] || { echo "register $name: $status_code $body" >&2; return 1; }
    jq -r .credential <<<"$body"
}

# heartbeat NODE CREDENTIAL [ACK] [JOBS-JSON]: one non-waiting heartbeat; body = reply.
heartbeat() {
    local node=$1 cred=$2 ack=${3:-0} jobs=${4:-[]}
    api_post /v1/agent/heartbeat "{\"node\": \"$node\", \"ack\": $ack, \"wait_ms\": 0,
        \"jobs\": $jobs}" "$cred"
}

# start_on NODE CRED JOB: the node takes the start command of JOB (acked) and says started.
start_on() {
    local seq
    heartbeat "$1" "$2" 0
    seq=$(jq -r --argjson id "$3" '[.commands[] | select(.job.id == $id)][0].seq' <<<"$body")
    [[ $seq != null ]] || { echo "no start command for job $3 on $1: $body" >&2; return 1; }
    heartbeat "$1" "$2" "$seq" "[{\"id\": $3, \"state\": \"running\", \"pid\": 10}]"
    api_post /v1/agent/events "{\"node\": \"$1\", \"events\": [{\"job\": $3, \"type\": \"started\"}]}" "$2"
    assert_status 200
}

# submit JSON: POST /v1/jobs, prints the id of the job (or array id).
submit() {
    api_post /v1/jobs "$1"
    [[ $status_code == 201 ]] || { echo "submit: $status_code $body" >&2; return 1; }
    jq -r '.job.id // .array_id' <<<"$body"
}
