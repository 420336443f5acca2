#!/usr/bin/env bats
# big_arrays.bats - arrays written across loop turns (issue 11, "any request is answered
# within 50 ms"; docs/controller.md "Big submissions"): /healthz is answered while a
# 20,000-task array is written (between its slices, not after it), no task starts before
# the array is whole on disk, and a crash, a failed write or a client that leaves leave
# nothing half-done. No test here times anything: how fast /healthz answers meanwhile is
# measured by bench/controller/array_latency.sh (bench/RESULTS.md "Big arrays in slices").

load lib/common

setup() {
    docket_setup
}

teardown() {
    docket_teardown
}

db() {
    sqlite3 -cmd ".timeout 5000" "$STATE_DIR/docket.db" "$1"
}
fault_on() {
    db "CREATE TRIGGER fault_$1 $2 BEGIN SELECT RAISE(ABORT, 'injected fault $1'); END;"
}
fault_off() {
    db "DROP TRIGGER fault_$1"
}
core_jobs() {
    api_get /healthz
    jq '[.jobs[]] | add // 0' <<<"$body"
}

# No trace of any array: no rows, events, spec, marker or audit row, nothing in the core.
nothing_left() {
    [[ $(db "SELECT count(*) FROM jobs") == 0 ]]
    [[ $(db "SELECT count(*) FROM job_events") == 0 ]]
    [[ $(db "SELECT count(*) FROM job_specs") == 0 ]]
    [[ $(db "SELECT count(*) FROM arrays_writing") == 0 ]]
    [[ $(db "SELECT count(*) FROM audit WHERE action = 'job.submit'") == 0 ]]
    [[ $(core_jobs) == 0 ]]
}

# submit_bg OUT BODY: POST /v1/jobs in the background; OUT.code gets the status and the
# time to the status line; $SUBMIT_PID the curl's pid.
submit_bg() {
    local out=$1
    curl -s -o "$out" -w '%{http_code} %{time_starttransfer}\n' -H "Authorization: Bearer $ADMIN_TOKEN" \
        -H 'Content-Type: application/json' --data-binary "$2" "$DOCKETD_URL/v1/jobs" >"$out.code" &
    SUBMIT_PID=$!
}

# Until the array's marker exists and at least $1 of its rows are committed (60 s).
writing() {
    [[ $(db "SELECT (SELECT count(*) FROM arrays_writing) > 0 AND (SELECT count(*) FROM jobs) >= $1") == 1 ]]
}
wait_writing() {
    wait_for 60 writing "$1" || { echo "the array never showed up being written" >&2; return 1; }
}

# probe_inside OUT ARRAY: one /healthz probe bracketed by two snapshots of the database
# (arrays marked as being written, the rows of array ARRAY, those of them not PENDING).
# Appends "BEFORE CODE AFTER" to OUT, each snapshot as "MARKED|ROWS|NOT_PENDING".
probe_inside() {
    local before code after q="SELECT (SELECT count(*) FROM arrays_writing),
        (SELECT count(*) FROM jobs WHERE array_id = $2),
        (SELECT count(*) FROM jobs WHERE array_id = $2 AND state <> 'PENDING')"
    before=$(db "$q")
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 60 "$DOCKETD_URL/healthz")
    after=$(db "$q")
    echo "$before $code $after" >>"$1"
}

# inside_count FILE TOTAL: the probes of FILE sent after a committed state in which the
# array was partly written (marked, some of its TOTAL rows there) and answered 200 before
# it was whole (still marked in the snapshot after the reply). An array written in one
# turn is never seen partly written, so no probe would count.
inside_count() {
    awk -v total="$2" '{ split($1, b, "|"); split($3, a, "|") }
        b[1] == 1 && b[2] > 0 && b[2] < total && $2 == 200 && a[1] == 1 { n++ }
        END { print n + 0 }' "$1"
}

@test "big arrays: /healthz is answered while a 20,000-task array is written; none starts before it is whole" {
    # the slices 40 ms apart (a timer: the loop is free meanwhile), so the array is being
    # written for at least 78 x 40 ms at any speed and the probes below fall inside it.
    # How fast /healthz answers during a big array is a benchmark's question:
    # bench/controller/array_latency.sh (SIZES=20000), bench/RESULTS.md "Big arrays in slices".
    DOCKETD_TEST_ARRAY_SLICE_DELAY_MS=40 docketd_start
    fake_node gpu01 8 H100-80GB >/dev/null
    # a small array: the reply's shape the big one must keep
    api_post /v1/jobs '{"command": ["x"], "array": "0-9", "hold": true}'
    assert_status 201
    local small_keys
    small_keys=$(jq -c '[keys, (.jobs[0] | keys)]' <<<"$body")
    submit_bg "$TEST_DIR/big.json" '{"command": ["x"], "gpus": 1, "array": "0-19999"}'
    : >"$TEST_DIR/probes"
    while kill -0 "$SUBMIT_PID" 2>/dev/null; do
        probe_inside "$TEST_DIR/probes" 11
    done
    wait "$SUBMIT_PID"
    local n inside
    n=$(wc -l <"$TEST_DIR/probes")
    inside=$(inside_count "$TEST_DIR/probes" 20000)
    echo "healthz: $n probes during the submission, $inside of them inside the write; $(cat "$TEST_DIR/big.json.code")" >&3
    [[ $(cut -d' ' -f1 "$TEST_DIR/big.json.code") == 201 ]]
    # every probe answered
    awk '$2 != 200 { bad = 1; print "not answered: " $0 } END { exit bad }' "$TEST_DIR/probes" >&2
    # while the array is marked, no task of it has started (each snapshot)
    awk '{ split($1, b, "|"); split($3, a, "|") }
        (b[1] > 0 && b[3] > 0) || (a[1] > 0 && a[3] > 0) { bad = 1; print "started while marked: " $0 }
        END { exit bad }' "$TEST_DIR/probes" >&2
    # at least one probe was sent and answered while the array was still being written
    ((inside >= 1))
    jq -e '.array_id == 11 and (.jobs | length) == 20000 and .jobs[0].id == 11
           and .jobs[19999].id == 20010 and .jobs[19999].array_index == 19999' \
        "$TEST_DIR/big.json" >/dev/null
    [[ $(jq -c '[keys, (.jobs[0] | keys)]' "$TEST_DIR/big.json") == "$small_keys" ]]
    jq -e '[.jobs[] | select(.state != "PENDING")] | length == 0' "$TEST_DIR/big.json" >/dev/null
    # all of it in the database and the core, one audit row, the counter past it
    [[ $(db "SELECT count(*) FROM jobs WHERE array_id = 11") == 20000 ]]
    [[ $(db "SELECT count(*) FROM arrays_writing") == 0 ]]
    [[ $(db "SELECT count(*) FROM audit WHERE action = 'job.submit' AND target = 'array:11'") == 1 ]]
    [[ $(db "SELECT value FROM counters WHERE name = 'next_job_id'") == 20011 ]]
    [[ $(core_jobs) == 20010 ]]
    api_get '/v1/jobs?array_id=11&limit=1&state=all'
    assert_json '.jobs[0].id' 11
    # the next job takes the next id
    api_post /v1/jobs '{"command": ["x"], "hold": true}'
    assert_status 201
    assert_json .job.id 20011
}

@test "big arrays: kill -9 while an array is written, restart: nothing of it is left, nor its marker" {
    DOCKETD_TEST_ARRAY_SLICE_DELAY_MS=40 docketd_start
    fake_node gpu01 8 H100-80GB >/dev/null
    submit_bg "$TEST_DIR/big.json" '{"command": ["x"], "gpus": 1, "array": "0-19999"}'
    wait_writing 600
    # while written it is not listed, and the core does not have it
    api_get '/v1/jobs?state=all'
    assert_json '.jobs | length' 0
    api_get /v1/jobs/1
    assert_status 404
    api_post /v1/jobs/1/cancel
    assert_status 404
    [[ $(core_jobs) == 0 ]]
    docketd_kill9
    wait "$SUBMIT_PID" || true
    [[ $(cut -d' ' -f1 "$TEST_DIR/big.json.code") != 201 ]]
    local written
    written=$(db "SELECT count(*) FROM jobs")
    echo "rows committed before the kill: $written" >&3
    ((written >= 600 && written < 20000))
    [[ $(db "SELECT count(*) FROM arrays_writing") == 1 ]]
    docketd_start
    grep -q 'event=arrays_rolled_back arrays=1' "$TEST_DIR/docketd.log"
    nothing_left
    # its ids stay used (the counter was written with the marker); the next array is whole
    api_post /v1/jobs '{"command": ["x"], "array": "0-999", "hold": true}'
    assert_status 201
    assert_json '.jobs | length' 1000
    assert_json .array_id 20001
}

@test "big arrays: a write that fails mid-way answers 500 and leaves nothing, in the core or the database" {
    docketd_start
    fake_node gpu01 8 H100-80GB >/dev/null
    fault_on task15000 "BEFORE INSERT ON jobs WHEN NEW.array_index = 15000"
    api_post /v1/jobs '{"command": ["x"], "gpus": 1, "array": "0-19999"}'
    assert_error 500 ""
    [[ $(jq -r .error.message <<<"$body") == *"injected fault task15000"* ]]
    grep -q 'event=array_write_failed' "$TEST_DIR/docketd.log"
    nothing_left
    fault_off task15000
    # the marker row itself cannot be written: refused before any task row
    fault_on mark "BEFORE INSERT ON arrays_writing"
    api_post /v1/jobs '{"command": ["x"], "gpus": 1, "array": "0-19999"}'
    assert_error 500 ""
    [[ $(db "SELECT count(*) FROM jobs") == 0 ]]
    fault_off mark
    # and after a restart nothing comes back
    docketd_stop
    docketd_start
    [[ $(core_jobs) == 0 ]]
    api_post /v1/jobs '{"command": ["x"], "gpus": 1, "array": "0-19999", "hold": true}'
    assert_status 201
    assert_json '.jobs | length' 20000
    [[ $(core_jobs) == 20000 ]]
}

@test "big arrays: a client that leaves mid-write: the array is finished whole" {
    DOCKETD_TEST_ARRAY_SLICE_DELAY_MS=10 docketd_start
    fake_node gpu01 8 H100-80GB >/dev/null
    curl -s -o /dev/null --max-time 0.5 -H "Authorization: Bearer $ADMIN_TOKEN" \
        --data-binary '{"command": ["x"], "array": "0-19999", "hold": true}' "$DOCKETD_URL/v1/jobs" || true
    core_has() { [[ $(core_jobs) == "$1" ]]; }
    wait_for 60 core_has 20000
    [[ $(db "SELECT count(*) FROM jobs") == 20000 ]]
    [[ $(db "SELECT count(*) FROM arrays_writing") == 0 ]]
    [[ $(db "SELECT count(*) FROM audit WHERE action = 'job.submit'") == 1 ]]
    docketd_stop
    docketd_start
    [[ $(core_jobs) == 20000 ]]
}

@test "big arrays: two written at once each get their own range of ids; queue room counts both" {
    DOCKETD_TEST_ARRAY_SLICE_DELAY_MS=5 docketd_start
    fake_node gpu01 8 H100-80GB >/dev/null
    submit_bg "$TEST_DIR/a.json" '{"command": ["x"], "array": "0-11999", "hold": true}'
    local pa=$SUBMIT_PID
    wait_writing 1
    submit_bg "$TEST_DIR/b.json" '{"command": ["x"], "array": "0-7999", "hold": true}'
    local pb=$SUBMIT_PID
    wait "$pa"
    wait "$pb"
    [[ $(cut -d' ' -f1 "$TEST_DIR/a.json.code") == 201 ]]
    [[ $(cut -d' ' -f1 "$TEST_DIR/b.json.code") == 201 ]]
    jq -e '.array_id == 1 and ([.jobs[].id] == [range(1; 12001)])' "$TEST_DIR/a.json" >/dev/null
    jq -e '.array_id == 12001 and ([.jobs[].id] == [range(12001; 20001)])' "$TEST_DIR/b.json" >/dev/null
    [[ $(core_jobs) == 20000 ]]
    [[ $(db "SELECT count(*) FROM jobs") == 20000 ]]
    # max_queued counts the tasks of an array still being written
    api_patch /v1/projects/default '{"max_queued": 30000}'
    assert_status 200
    submit_bg "$TEST_DIR/c.json" '{"command": ["x"], "array": "0-7999", "hold": true}'
    pa=$SUBMIT_PID
    wait_writing 20001
    api_post /v1/jobs '{"command": ["x"], "array": "0-2999", "hold": true}'
    assert_error 429 project
    wait "$pa"
    [[ $(cut -d' ' -f1 "$TEST_DIR/c.json.code") == 201 ]]
    [[ $(core_jobs) == 28000 ]]
}

@test "big arrays: SIGTERM while an array is written: 503, and the next start rolls it back" {
    DOCKETD_TEST_ARRAY_SLICE_DELAY_MS=40 docketd_start
    fake_node gpu01 8 H100-80GB >/dev/null
    submit_bg "$TEST_DIR/big.json" '{"command": ["x"], "array": "0-19999", "hold": true}'
    wait_writing 300
    docketd_stop
    wait "$SUBMIT_PID" || true
    [[ $(cut -d' ' -f1 "$TEST_DIR/big.json.code") == 503 ]]
    grep -q 'was not stored' "$TEST_DIR/big.json"
    [[ $(db "SELECT count(*) FROM arrays_writing") == 1 ]]
    docketd_start
    grep -q 'event=arrays_rolled_back arrays=1' "$TEST_DIR/docketd.log"
    [[ $(db "SELECT count(*) FROM jobs") == 0 ]]
    [[ $(core_jobs) == 0 ]]
}

# api_count STATE: the jobs the API lists in STATE (one page of at most 10,000).
api_count() {
    api_get "/v1/jobs?state=$1&limit=10000"
    assert_status 200
    jq '.jobs | length' <<<"$body"
}
# The live jobs /metrics counts (docket_jobs summed over its labels).
metrics_jobs() {
    curl -s -H "Authorization: Bearer $ADMIN_TOKEN" "$DOCKETD_URL/metrics" |
        awk '/^docket_jobs[{ ]/ { n += $NF } END { print n + 0 }'
}
# docket_submissions_total: a task the core refused is not counted.
metrics_submissions() {
    curl -s -H "Authorization: Bearer $ADMIN_TOKEN" "$DOCKETD_URL/metrics" |
        awk '$1 == "docket_submissions_total" { print $2 }'
}

@test "big arrays: the class removed while an array is written: its tasks end FAILED with an event, none left in the core" {
    DOCKETD_TEST_ARRAY_SLICE_DELAY_MS=40 docketd_start
    fake_node gpu01 8 H100-80GB >/dev/null
    local classes='{"name": "training"}, {"name": "experiment"}, {"name": "exploration"},
                   {"name": "interactive"}, {"name": "service"}'
    api_post /v1/policy "{\"classes\": [$classes, {\"name\": \"sweep\"}]}"
    assert_status 200
    submit_bg "$TEST_DIR/big.json" '{"command": ["x"], "gpus": 1, "class": "sweep", "array": "0-2999"}'
    wait_writing 256
    # while it is written the core has none of its tasks: the class is not in use
    api_post /v1/policy "{\"classes\": [$classes]}"
    assert_status 200
    wait "$SUBMIT_PID"
    [[ $(cut -d' ' -f1 "$TEST_DIR/big.json.code") == 201 ]]
    # the reply says what became of each task
    jq -e '(.jobs | length) == 3000 and ([.jobs[] | select(.state != "FAILED")] | length) == 0' \
        "$TEST_DIR/big.json" >/dev/null
    # each ended with an event saying why
    [[ $(db "SELECT count(*) FROM jobs WHERE state = 'FAILED' AND end_ms > 0") == 3000 ]]
    [[ $(db "SELECT count(DISTINCT job) FROM job_events WHERE type = 'state' AND from_state = 'PENDING'
             AND to_state = 'FAILED' AND reason = 'submit' AND detail LIKE 'refused by the scheduler: %sweep%'") == 3000 ]]
    # logged once with the first, then counted (not one line a task)
    [[ $(grep -c 'event=array_task_refused job=1 array=1 field=class' "$TEST_DIR/docketd.log") == 1 ]]
    [[ $(grep -c 'event=array_task_refused' "$TEST_DIR/docketd.log") == 1 ]]
    grep -q 'event=array_tasks_refused array=1 refused=3000 tasks=3000' "$TEST_DIR/docketd.log"
    api_get /v1/jobs/1500/events
    assert_status 200
    jq -e '[.events[] | select(.to == "FAILED" and (.detail | test("refused by the scheduler.*sweep")))]
           | length == 1' <<<"$body" >/dev/null
    api_get /v1/jobs/1500
    assert_json .job.state FAILED
    # nothing half-done: the API, the core's counts and /metrics agree on no live job
    [[ $(api_count active) == 0 ]]
    [[ $(api_count FAILED) == 3000 ]]
    [[ $(core_jobs) == 0 ]]
    [[ $(metrics_jobs) == 0 ]]
    [[ $(metrics_submissions) == 0 ]]
    api_post /v1/jobs/1500/cancel
    assert_status 409
    # docketd keeps answering, and takes the next job as ever
    curl -sf -o /dev/null "$DOCKETD_URL/healthz"
    api_post /v1/jobs '{"command": ["x"], "gpus": 1}'
    assert_status 201
    assert_json .job.id 3001
    # and a restart brings back what was stored: the FAILED tasks stay ended
    docketd_stop
    docketd_start
    [[ $(db "SELECT count(*) FROM jobs WHERE state = 'FAILED'") == 3000 ]]
    [[ $(core_jobs) == 1 ]]
    [[ $(api_count active) == 1 ]]
}

@test "big arrays: max_queued lowered while an array is written: the tasks past it end FAILED, the rest queue" {
    DOCKETD_TEST_ARRAY_SLICE_DELAY_MS=40 docketd_start
    fake_node gpu01 8 H100-80GB >/dev/null
    submit_bg "$TEST_DIR/big.json" '{"command": ["x"], "gpus": 1, "array": "0-2999", "hold": true}'
    wait_writing 256
    api_patch /v1/projects/default '{"max_queued": 1000}'
    assert_status 200
    wait "$SUBMIT_PID"
    [[ $(cut -d' ' -f1 "$TEST_DIR/big.json.code") == 201 ]]
    jq -e '[.jobs[] | .state] | (.[0:1000] | unique) == ["HELD"] and (.[1000:] | unique) == ["FAILED"]' \
        "$TEST_DIR/big.json" >/dev/null
    [[ $(db "SELECT count(*) FROM jobs WHERE state = 'FAILED'") == 2000 ]]
    [[ $(db "SELECT min(id) FROM jobs WHERE state = 'FAILED'") == 1001 ]]
    [[ $(metrics_submissions) == 1000 ]]
    [[ $(db "SELECT count(*) FROM job_events WHERE to_state = 'FAILED' AND reason = 'submit'
             AND detail LIKE 'refused by the scheduler: %max_queued%'") == 2000 ]]
    grep -q 'event=array_tasks_refused array=1 refused=2000 tasks=3000' "$TEST_DIR/docketd.log"
    # the database, the API, the core and /metrics agree: 1,000 held, nothing else live
    [[ $(db "SELECT count(*) FROM jobs WHERE state = 'HELD'") == 1000 ]]
    [[ $(api_count HELD) == 1000 ]]
    [[ $(api_count active) == 1000 ]]
    [[ $(core_jobs) == 1000 ]]
    [[ $(metrics_jobs) == 1000 ]]
    # a held task is a real job: it can be released and cancelled
    api_post /v1/jobs/1000/cancel
    assert_status 200
    [[ $(core_jobs) == 999 ]]
    curl -sf -o /dev/null "$DOCKETD_URL/healthz"
    docketd_stop
    docketd_start
    [[ $(core_jobs) == 999 ]]
    [[ $(db "SELECT count(*) FROM jobs WHERE state = 'FAILED'") == 2000 ]]
}

@test "big arrays: a failed array is deleted 256 tasks a loop turn; /healthz is answered meanwhile" {
    export DOCKETD_TURN_LOG_MS=0 # every loop turn logged, with the tasks of failed arrays it deleted
    # the slices and the steps of the cleanup 40 ms apart (a timer, the loop free
    # meanwhile): the cleanup lasts at least 73 x 40 ms at any speed, time for the probes
    # below to fall inside it. The speed of /healthz meanwhile is not asserted here.
    DOCKETD_TEST_ARRAY_SLICE_DELAY_MS=40 docketd_start --log-level warn
    unset DOCKETD_TURN_LOG_MS
    fake_node gpu01 8 H100-80GB >/dev/null
    fault_on task19000 "BEFORE INSERT ON jobs WHEN NEW.array_index = 19000"
    submit_bg "$TEST_DIR/big.json" '{"command": ["x"], "gpus": 1, "array": "0-19999"}'
    # /healthz, probed from the fault on, while what was written is deleted
    : >"$TEST_DIR/probes"
    while kill -0 "$SUBMIT_PID" 2>/dev/null; do
        if grep -q 'event=array_write_failed' "$TEST_DIR/docketd.log"; then
            probe_inside "$TEST_DIR/probes" 1
        else
            sleep 0.01
        fi
    done
    wait "$SUBMIT_PID" || true
    [[ $(cut -d' ' -f1 "$TEST_DIR/big.json.code") == 500 ]]
    grep -q 'injected fault task19000 (nothing of array 1 was kept)' "$TEST_DIR/big.json"
    fault_off task19000
    nothing_left
    # the turns that deleted: none more than 256 tasks, all of them together what was
    # written before the fault (the slices before task 19,000: at least 18,744 tasks)
    api_get /healthz # a turn is logged when the next begins
    local max sum turns n inside
    read -r max sum turns < <(turn_counts array_discarded)
    n=$(wc -l <"$TEST_DIR/probes")
    # probes sent once the cleanup had deleted some of it (fewer rows than the 18,744 at
    # least that were written) and answered before it was done (the marker goes last)
    inside=$(inside_count "$TEST_DIR/probes" 18744)
    echo "cleanup: $sum tasks in $turns turns, at most $max a turn; healthz: $n probes, $inside inside the cleanup" >&3
    ((max <= 256))
    ((sum >= 18744 && sum < 19000))
    ((turns >= sum / 256))
    awk '$2 != 200 { bad = 1; print "not answered: " $0 } END { exit bad }' "$TEST_DIR/probes" >&2
    ((inside >= 1))
}

@test "big arrays: kill -9 during the cleanup of a failed array, restart: nothing of it is left" {
    DOCKETD_TEST_ARRAY_SLICE_DELAY_MS=40 docketd_start
    fake_node gpu01 8 H100-80GB >/dev/null
    fault_on task8000 "BEFORE INSERT ON jobs WHEN NEW.array_index = 8000"
    submit_bg "$TEST_DIR/big.json" '{"command": ["x"], "gpus": 1, "array": "0-19999"}'
    # until the fault has struck and the cleanup has deleted some of what was written, not all
    local left=0 deadline=$((SECONDS + 60))
    while ((SECONDS < deadline)); do
        if grep -q 'event=array_write_failed' "$TEST_DIR/docketd.log"; then
            left=$(db "SELECT count(*) FROM jobs")
            ((left > 0 && left < 7000)) && break
        fi
        sleep 0.05
    done
    echo "rows left at the kill: $left" >&3
    ((left > 0 && left < 7000))
    [[ $(db "SELECT count(*) FROM arrays_writing") == 1 ]] # the marker goes last
    docketd_kill9
    wait "$SUBMIT_PID" || true
    [[ $(cut -d' ' -f1 "$TEST_DIR/big.json.code") != 500 ]] # never answered
    fault_off task8000
    docketd_start
    grep -q 'event=arrays_rolled_back arrays=1' "$TEST_DIR/docketd.log"
    nothing_left
    api_post /v1/jobs '{"command": ["x"], "array": "0-999", "hold": true}'
    assert_status 201
    assert_json .array_id 20001
}
