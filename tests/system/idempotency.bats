#!/usr/bin/env bats
# idempotency.bats - submissions that can be sent again (docs/api.md "Retrying a
# submission"; issue 32): POST /v1/jobs with an Idempotency-Key answers a repeat with the
# job or array the first request made (200, the same ids) and stores nothing more; the key
# with another body is 409, a malformed key 400, both naming the header; the key holds
# across a restart of docketd. DOCKET_TEST_PG=1 runs it on PostgreSQL. The CLI's retry
# through a killed leader is standby.bats's.

bats_require_minimum_version 1.5.0

CLUSTER_NAME=idem
load lib/cluster

setup_file() {
    [[ -x $DOCKET && -x $DOCKETD_BIN && -x $AGENT_BIN ]] || skip "docket, docketd or docket-node not built"
    cluster_start
}

teardown_file() {
    cluster_stop
}

# post KEY BODY: POST /v1/jobs over TCP with that key ("-": none); sets code, reply, hdr
post() {
    local key=(-H "Idempotency-Key: $1")
    [[ $1 != - ]] || key=()
    code=$(curl -s -D "$T/hdr" -o "$T/reply" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" \
        -H 'Content-Type: application/json' "${key[@]}" --data-binary "$2" \
        "http://127.0.0.1:$PORT/v1/jobs")
    reply=$(cat "$T/reply")
    hdr=$(cat "$T/hdr")
}

# stored NAME: how many jobs have that name
stored() {
    "$DOCKET" queue --all --name "$1" --json -n 100000 | jq '.jobs | length'
}

@test "a repeat with the same key and body returns the first job, 200, and stores nothing" {
    body='{"name": "idem-one", "command": ["true"], "hold": true}'
    post k-one "$body"
    [[ $code == 201 ]] || { echo "$code $reply" >&2; false; }
    id=$(jq -r .job.id <<<"$reply")
    for i in 1 2 3; do
        post k-one "$body"
        [[ $code == 200 ]] || { echo "$code $reply" >&2; false; }
        jq -e --argjson id "$id" '.job.id == $id and .job.name == "idem-one" and .job.state == "HELD"' <<<"$reply"
        grep -qi '^Idempotent-Replayed: true' <<<"$hdr"
    done
    [[ $(stored idem-one) == 1 ]]
    # the same body without a key is a new submission, as before
    post - "$body"
    [[ $code == 201 ]]
    [[ $(stored idem-one) == 2 ]]
}

@test "the same key with another body is 409 naming the header; a malformed key is 400" {
    post k-two '{"name": "idem-two", "command": ["true"], "hold": true}'
    [[ $code == 201 ]]
    post k-two '{"name": "idem-two", "command": ["false"], "hold": true}'
    [[ $code == 409 ]] || { echo "$code $reply" >&2; false; }
    jq -e '.error.field == "Idempotency-Key" and (.error.message | test("another request body"))' <<<"$reply"
    [[ $(stored idem-two) == 1 ]]
    long=$(printf 'k%.0s' $(seq 1 129))
    post "$long" '{"name": "idem-bad", "command": ["true"], "hold": true}'
    [[ $code == 400 ]]
    jq -e '.error.field == "Idempotency-Key"' <<<"$reply"
    post $'k\x01x' '{"name": "idem-bad", "command": ["true"], "hold": true}'
    [[ $code == 400 ]]
    [[ $(stored idem-bad) == 0 ]]
    # 128 characters, spaces and punctuation among them, is a key
    ok=$(printf 'k%.0s' $(seq 1 120))' a/b:=+!'
    post "$ok" '{"name": "idem-long", "command": ["true"], "hold": true}'
    [[ $code == 201 ]] || { echo "$code $reply" >&2; false; }
}

@test "an array's repeat returns the same array and tasks; a refused submission keeps no key" {
    body='{"name": "idem-arr", "command": ["true"], "hold": true, "array": "0-4"}'
    post k-arr "$body"
    [[ $code == 201 ]]
    first=$(jq -c '{a: .array_id, ids: [.jobs[].id]}' <<<"$reply")
    post k-arr "$body"
    [[ $code == 200 ]]
    [[ $(jq -c '{a: .array_id, ids: [.jobs[].id]}' <<<"$reply") == "$first" ]]
    [[ $(stored idem-arr) == 5 ]]
    # refused (no such project): nothing stored, so the key is still free for a good body
    post k-ref '{"name": "idem-ref", "project": "nope", "command": ["true"], "hold": true}'
    [[ $code == 400 ]]
    post k-ref '{"name": "idem-ref", "command": ["true"], "hold": true}'
    [[ $code == 201 ]] || { echo "$code $reply" >&2; false; }
}

@test "a big array (written across loop turns) keeps its key with its last slice" {
    body='{"name": "idem-big", "command": ["true"], "hold": true, "array": "0-299"}'
    post k-big "$body"
    [[ $code == 201 ]] || { echo "$code $reply" >&2; false; }
    first=$(jq -c '{a: .array_id, n: (.jobs | length), last: .jobs[299].id}' <<<"$reply")
    post k-big "$body"
    [[ $code == 200 ]] || { echo "$code $reply" >&2; false; }
    [[ $(jq -c '{a: .array_id, n: (.jobs | length), last: .jobs[299].id}' <<<"$reply") == "$first" ]]
    jq -e '[.jobs[] | has("script") or has("env")] | any | not' <<<"$reply"
    [[ $(stored idem-big) == 300 ]]
}

@test "the key holds across a restart of docketd" {
    body='{"name": "idem-restart", "command": ["true"], "hold": true}'
    post k-restart "$body"
    [[ $code == 201 ]]
    id=$(jq -r .job.id <<<"$reply")
    kill_pidfile "$T/ctl.pid"
    ctl_start "$PORT"
    post k-restart "$body"
    [[ $code == 200 ]] || { echo "$code $reply" >&2; false; }
    [[ $(jq -r .job.id <<<"$reply") == "$id" ]]
    [[ $(stored idem-restart) == 1 ]]
    # and the CLI sends a key of its own with each submission: two runs, two jobs
    run -0 "$DOCKET" submit --parsable --hold --name idem-cli -- true
    run -0 "$DOCKET" submit --parsable --hold --name idem-cli -- true
    [[ $(stored idem-cli) == 2 ]]
}
