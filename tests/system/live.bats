#!/usr/bin/env bats
# live.bats - conditional requests and change notices (docs/api.md "Conditional requests
# and change notices"), black-box against docketd: the lists the console polls answer
# 304 to their own ETag while nothing they show changed and 200 with a new tag once it
# did; a tag is the viewer's, the query's and the process's; nothing a hostile header
# sends gets a 304 it should not; GET /v1/changes says which topics changed, needs a
# token and is capped per user.

load lib/common
bats_require_minimum_version 1.5.0

setup() {
    docket_setup
    docketd_start
    api_post /v1/projects '{"name": "pa"}'
    assert_status 201
    fake_node gpu01 8 H100 >/dev/null # a node the held jobs could run on
}

teardown() {
    docket_teardown
}

# tag_of PATH [TOKEN]: the ETag of a GET (empty when none).
tag_of() {
    curl -s -o /dev/null -D - -H "Authorization: Bearer ${2:-$ADMIN_TOKEN}" "$DOCKETD_URL$1" |
        tr -d '\r' | sed -n 's/^[Ee][Tt][Aa][Gg]: //p'
}

# cond_get PATH TAG [TOKEN]: the status of a GET with If-None-Match: TAG (body in $TEST_DIR/body).
cond_get() {
    rm -f "$TEST_DIR/body" # (curl writes no file for an empty body)
    curl -s -o "$TEST_DIR/body" -w '%{http_code}' -H "Authorization: Bearer ${3:-$ADMIN_TOKEN}" \
        -H "If-None-Match: $2" "$DOCKETD_URL$1"
}

# settled PATH: a tag read, then a 304 for it (docketd's first cycles are behind it).
settled() {
    TAG=$(tag_of "$1")
    [[ -n $TAG && $(cond_get "$1" "$TAG") == 304 ]]
}

submit_held() {
    api_post /v1/jobs '{"project": "pa", "command": ["true"], "hold": true}'
    assert_status 201
}

@test "each polled list answers 304 to its own tag while unchanged, 200 and a new tag after a change" {
    local path
    for path in "/v1/jobs?state=all" /v1/nodes /v1/projects /v1/alerts; do
        wait_for 60 settled "$path" || { echo "$path never answered 304" >&2; return 1; }
        [[ ! -s $TEST_DIR/body ]] # a 304 has no body
    done
    wait_for 60 settled "/v1/jobs?state=all"
    local before=$TAG
    submit_held
    [[ $(cond_get "/v1/jobs?state=all" "$before") == 200 ]]
    jq -e '.jobs | length == 1' "$TEST_DIR/body"
    [[ $(tag_of "/v1/jobs?state=all") != "$before" ]]
    # a project made is a change of /v1/projects
    wait_for 60 settled /v1/projects
    before=$TAG
    api_post /v1/projects '{"name": "pb"}'
    assert_status 201
    [[ $(cond_get /v1/projects "$before") == 200 ]]
}

@test "a tag is the viewer's, the query's and this process's: each of them gets a 200" {
    local tok
    api_post /v1/tokens '{"user": "mem", "role": "member"}'
    tok=$(jq -r .token <<<"$body")
    wait_for 60 settled "/v1/jobs?state=all"
    [[ $(cond_get "/v1/jobs?state=all" "$TAG" "$tok") == 200 ]]      # another viewer
    [[ $(tag_of "/v1/jobs?state=all" "$tok") != "$TAG" ]]
    [[ $(cond_get "/v1/jobs?state=all&project=pa" "$TAG") == 200 ]] # another query
    docketd_stop
    docketd_start
    [[ $(cond_get "/v1/jobs?state=all" "$TAG") == 200 ]] # another process
}

@test "hostile conditional requests: no 304 without a token, for a bad list or a bad header" {
    wait_for 60 settled "/v1/jobs?state=all"
    # authentication and authorization come first
    [[ $(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $TAG" \
        "$DOCKETD_URL/v1/jobs?state=all") == 401 ]]
    # an error carries no tag, so it can never be answered 304
    [[ -z $(tag_of "/v1/jobs?state=nonsense") ]]
    [[ $(cond_get "/v1/jobs?state=nonsense" "$TAG") == 400 ]]
    # malformed, glued or oversized headers match nothing
    local bad long
    long=$(printf 'W/"0-0-0", %.0s' {1..400})$TAG # over 4 KiB: not read
    for bad in "${TAG%\"}" "${TAG}x" "x, $TAG" "*x" "$long"; do
        [[ $(cond_get "/v1/jobs?state=all" "$bad") == 200 ]] || { echo "matched: ${bad:0:80}" >&2; return 1; }
    done
    # a list of tags with ours among them, and "*", are a 304
    [[ $(cond_get "/v1/jobs?state=all" "W/\"0-0-0\", $TAG") == 304 ]]
    [[ $(cond_get "/v1/jobs?state=all" "*") == 304 ]]
}

@test "the change stream says what changed, needs a token, and is capped per user" {
    local out=$TEST_DIR/changes pid i tok
    curl -sN --max-time 120 -H "Authorization: Bearer $ADMIN_TOKEN" "$DOCKETD_URL/v1/changes" >"$out" &
    docket_track_pid $!
    wait_for 60 grep -q '^event: ready' "$out"
    submit_held
    wait_for 60 notice_of jobs "$out"
    [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$DOCKETD_URL/v1/changes") == 401 ]]
    # a user holds at most 8 streams; closing one makes room
    api_post /v1/tokens '{"user": "mem", "role": "member"}'
    tok=$(jq -r .token <<<"$body")
    local pids=()
    for i in 1 2 3 4 5 6 7 8; do
        curl -sN --max-time 120 -H "Authorization: Bearer $tok" "$DOCKETD_URL/v1/changes" >"$out.$i" &
        pids+=($!)
        docket_track_pid $!
    done
    for i in 1 2 3 4 5 6 7 8; do wait_for 60 grep -q '^event: ready' "$out.$i"; done
    [[ $(curl -s -o "$TEST_DIR/body" -w '%{http_code}' --max-time 5 -H "Authorization: Bearer $tok" \
        "$DOCKETD_URL/v1/changes") == 429 ]]
    jq -e '.error.message | test("too many change streams")' "$TEST_DIR/body"
    # another user is not held back by mem's streams
    [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 1 -H "Authorization: Bearer $ADMIN_TOKEN" \
        "$DOCKETD_URL/v1/changes") == 200 ]]
    docket_stop_pid "${pids[0]}"
    wait_for 60 stream_opens "$tok"
    # docketd stops with streams open: they end, and nothing leaks (teardown's sanitizers)
    docketd_stop
}

# notice_of TOPIC FILE: the stream in FILE said TOPIC changed.
notice_of() {
    sed -n '/^event: changed/,$p' "$2" | grep -qE "^data: .*$1"
}

# stream_opens TOKEN: a change stream opens for that token (a 200 within a second).
stream_opens() {
    [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 1 -H "Authorization: Bearer $1" \
        "$DOCKETD_URL/v1/changes") == 200 ]]
}
