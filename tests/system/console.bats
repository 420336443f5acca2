#!/usr/bin/env bats
# console.bats - the web console in a real browser (docs/console.md): headless Debian
# chromium driven by playwright-core (console/test/browser.mjs, one case per test)
# against a real docketd and two agents with declared GPUs (lib/cluster.bash). Users of
# every role log in with their tokens; jobs are submitted through the API; screenshots
# of every page go to $DOCKET_BUILD/console-screenshots.

bats_require_minimum_version 1.5.0

CLUSTER_NAME=console
load lib/cluster
ROOT=$BATS_TEST_DIRNAME/../..
# the nodes are healthy until the overview test makes them sick (a critical alert)
AGENT_EXTRA=(--health-check "$BATS_FILE_TMPDIR/health.sh" --health-interval 1s)

setup_file() {
    [[ -x $DOCKET && -x $DOCKETD_BIN && -x $AGENT_BIN ]] || skip "docket, docketd or docket-node not built"
    command -v node >/dev/null || skip "node not installed (scripts/install-deps.sh)"
    [[ -x /usr/bin/chromium ]] || skip "chromium not installed (scripts/install-deps.sh --test)"
    [[ -d $ROOT/console/node_modules/playwright-core ]] || skip "playwright-core not installed (scripts/build-console.sh)"
    printf '#!/bin/sh\n[ ! -e "%s/sick" ]\n' "$BATS_FILE_TMPDIR" >"$BATS_FILE_TMPDIR/health.sh"
    chmod +x "$BATS_FILE_TMPDIR/health.sh"
    cluster_start
    "$DOCKET" apply -f "$ROOT/examples/policy.yaml" >/dev/null
    export CONSOLE_URL=http://127.0.0.1:$PORT CONSOLE_TOKENS=$T/tokens.json
    export CONSOLE_OUT=$DOCKET_BUILD/console-screenshots
    "$DOCKET" projects members add explore alice >/dev/null
    "$DOCKET" projects members add vision bob --role lead >/dev/null
    local role user tok json='{}'
    for role in operator:oper viewer:vic member:alice lead:bob; do
        user=${role#*:} role=${role%:*}
        tok=$("$DOCKET" token create --user "$user" --role "$([[ $role == lead ]] && echo member || echo "$role")" 2>/dev/null)
        json=$(jq --arg r "$role" --arg u "$user" --arg t "$tok" '.[$r] = {user: $u, token: $t}' <<<"$json")
    done
    jq --arg t "$TOKEN" '.admin = {user: "admin", token: $t}' <<<"$json" >"$CONSOLE_TOKENS"
}

teardown_file() {
    cluster_stop
}

browser() { # CASE ARGS...
    run node "$ROOT/console/test/browser.mjs" "$@"
    echo "$output"
    [ "$status" -eq 0 ]
}

token_of() { jq -r ".$1.token" "$CONSOLE_TOKENS"; }

@test "docketd serves the console at / with its CSP, its files public, nothing else without a token" {
    run -0 curl -sf -o /dev/null -w '%{content_type}' "$CONSOLE_URL/console/app.js"
    [[ $output == text/javascript* ]]
    run -0 curl -s -o /dev/null -w '%{http_code}' "$CONSOLE_URL/console/secrets.db"
    [ "$output" = 404 ]
    run -0 curl -s -o /dev/null -w '%{http_code}' "$CONSOLE_URL/v1/whoami"
    [ "$output" = 401 ]
    browser security
}

@test "the console's page and files carry an ETag and answer 304 to it; a hashed chunk is kept a year" {
    local f tag chunk
    for f in / /console/app.js /console/app.css; do
        run -0 curl -sf -D - -o /dev/null "$CONSOLE_URL$f"
        tag=$(tr -d '\r' <<<"$output" | sed -n 's/^[Ee][Tt]ag: //p')
        [[ $tag == '"'*'"' ]]
        grep -qi '^cache-control: no-cache' <<<"$output"
        run -0 curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $tag" "$CONSOLE_URL$f"
        [ "$output" = 304 ]
        run -0 curl -s -o /dev/null -w '%{http_code}' -H 'If-None-Match: "0000000000000000"' "$CONSOLE_URL$f"
        [ "$output" = 200 ]
        # read as RFC 9110 lists tags (util/etag.c, as the API's lists): one of several,
        # weak or not, matches; the tag glued inside another one does not
        run -0 curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: \"x\", W/$tag" "$CONSOLE_URL$f"
        [ "$output" = 304 ]
        run -0 curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: x$tag" "$CONSOLE_URL$f"
        [ "$output" = 200 ]
    done
    chunk=$(cd "$ROOT/console/dist" && ls chunk-*.js | head -1)
    [ -n "$chunk" ]
    run -0 curl -sf -D - -o /dev/null "$CONSOLE_URL/console/$chunk"
    grep -qi '^cache-control: public, max-age=31536000, immutable' <<<"$output"
}

@test "every role logs in with its token and sees only the pages it may read" {
    for role in admin operator viewer lead member; do
        browser login "$role"
    done
}

@test "the one-time code of docket console logs in once, as its user" {
    local link
    link=$(DOCKET_URL=$CONSOLE_URL DOCKET_TOKEN=$(token_of member) "$DOCKET" console 2>/dev/null)
    [[ $link == "$CONSOLE_URL/#/login?code=dkc_"* ]]
    browser code "$link"
    run -0 --separate-stderr env DOCKET_URL="$CONSOLE_URL" DOCKET_TOKEN="$(token_of viewer)" "$DOCKET" console --json
    [ "$(jq -r .user <<<"$output")" = vic ]
    [[ $(jq -r .url <<<"$output") == "$CONSOLE_URL/#/login?code=$(jq -r .code <<<"$output")" ]]
}

@test "docket console on the Unix socket: a forward that logs in, and passes nothing without a token" {
    "$DOCKET" console --port 0 >"$T/forward.url" 2>"$T/forward.err" &
    echo $! >"$T/forward.pid"
    wait_for 10 test -s "$T/forward.url"
    local link base
    link=$(cat "$T/forward.url")
    base=${link%%/#*}
    run -0 curl -s -o /dev/null -w '%{http_code}' "$base/v1/jobs"
    [ "$output" = 401 ]
    run -0 curl -s -o /dev/null -w '%{http_code}' -H 'Host: evil.example' "$base/"
    [ "$output" = 401 ]
    run -0 curl -s -o /dev/null -w '%{http_code}' "$base/"
    [ "$output" = 200 ]
    browser forward "$link" "$(id -un)"
    kill_pidfile "$T/forward.pid"
}

@test "a job's logs follow on its page" {
    local id
    id=$("$DOCKET" submit --parsable -p vision --class experiment --time 5m -- \
        bash -c 'for i in 1 2 3; do echo "line $i"; sleep 1; done')
    browser logs "$id"
}

@test "the log viewer stays where the reader scrolled, follows at the end, and finds lines" {
    local id
    id=$("$DOCKET" submit --parsable -p vision --class experiment --time 5m -- \
        bash -c 'for i in $(seq 1200); do echo "line $i"; sleep 0.05; done')
    browser logview "$id"
    "$DOCKET" cancel "$id" >/dev/null || true
}

@test "jobs in every state: the search finds a running and a finished job" {
    local run done
    run=$("$DOCKET" submit --parsable -p explore --name findme-run -- sleep 600)
    done=$("$DOCKET" submit --parsable -p explore --name findme-done -- true)
    wait_for 60 state_in "$run" RUNNING
    wait_for 60 state_in "$done" COMPLETED
    browser search "$run" "$done"
    "$DOCKET" cancel "$run" >/dev/null
}

@test "a running job's page draws its CPU, memory and GPU use over time" {
    local id
    id=$("$DOCKET" submit --parsable -p vision --class experiment --time 5m -- \
        bash -c 'end=$((SECONDS + 60)); while ((SECONDS < end)); do :; done')
    wait_for 60 state_in "$id" RUNNING
    samples() { ctl_get "/v1/jobs/$id/usage" | jq -e '.series | length >= 2' >/dev/null; }
    wait_for 60 samples
    browser usage "$id"
    "$DOCKET" cancel "$id" >/dev/null
}

@test "cancel asks first, and its reason goes to the audit trail" {
    run -0 curl -sf -H "Authorization: Bearer $(token_of member)" -H 'Content-Type: application/json' \
        -d '{"project": "explore", "hold": true, "command": ["true"]}' "$CONSOLE_URL/v1/jobs"
    browser confirm "$(jq -r .job.id <<<"$output")"
}

@test "a job submitted through the API appears in the queue with its reason; a click explains it" {
    # fill both nodes, then alice's job waits for GPUs
    "$DOCKET" submit --parsable -p vision --class training -g 8 --time 30m -- sleep 600 >"$T/fill1"
    "$DOCKET" submit --parsable -p vision --class training -g 8 --time 30m -- sleep 600 >"$T/fill2"
    wait_for 30 state_in "$(cat "$T/fill1")" RUNNING
    wait_for 30 state_in "$(cat "$T/fill2")" RUNNING
    run -0 curl -sf -H "Authorization: Bearer $(token_of member)" -H 'Content-Type: application/json' \
        -d '{"project": "explore", "class": "exploration", "gpus": 8, "command": ["true"]}' \
        "$CONSOLE_URL/v1/jobs"
    jq -r .job.id <<<"$output" >"$T/waiting"
    wait_for 10 state_in "$(cat "$T/waiting")" PENDING
    browser queue "$(cat "$T/waiting")"
}

@test "a job's owner holds and releases it from its page; a viewer is offered no action" {
    browser actions "$(cat "$T/waiting")"
}

@test "another user's console shows a job's command hidden, in its page and the queue" {
    # a token in alice's command: bob (lead of vision, not of explore) and a viewer
    # must not read it (issue 33 #6); the API hides it, so the console has nothing to show
    run -0 curl -sf -H "Authorization: Bearer $(token_of member)" -H 'Content-Type: application/json' \
        -d '{"project": "explore", "hold": true, "command": ["curl", "-H", "dkt_console_hidden_0001"]}' \
        "$CONSOLE_URL/v1/jobs"
    browser hidden "$(jq -r .job.id <<<"$output")" dkt_console_hidden_0001
}

@test "a reload draws the first screen saved in the tab, marked, then the live one; no other viewer sees it" {
    run -0 curl -sf -H "Authorization: Bearer $(token_of member)" -H 'Content-Type: application/json' \
        -d '{"project": "explore", "hold": true, "command": ["true"]}' "$CONSOLE_URL/v1/jobs"
    browser saved "$(jq -r .job.id <<<"$output")"
}

@test "every page: controls labelled, tables captioned, usable from the keyboard" {
    local id
    id=$(cat "$T/waiting" 2>/dev/null || "$DOCKET" submit --parsable -p vision --class experiment --time 5m -- true)
    browser a11y "$id"
}

@test "an operator drains and resumes a node in the console; a member is refused" {
    browser drain "$PREFIX-a"
}

@test "a change made elsewhere appears without a reload, brought by the change stream" {
    browser live "$PREFIX-b"
}

@test "an admin boosts a project with a reason and an expiry; a member is offered no boost" {
    browser boost explore
}

@test "a project's page charts its GPU use over 30 days against its limit" {
    local id # a job of vision's that ran: the queue test's, or one of its own when run alone
    id=$(cat "$T/fill1" 2>/dev/null || "$DOCKET" submit --parsable -p vision --class training -g 8 --time 30m -- sleep 600)
    wait_for 60 state_in "$id" RUNNING COMPLETED CANCELLED FAILED TIMEOUT PREEMPTED
    browser projectUse vision
}

@test "a screenshot of every page goes to the test output" {
    local id # the waiting job of the queue test, or one of its own when run alone
    id=$(cat "$T/waiting" 2>/dev/null || "$DOCKET" submit --parsable -p vision --class experiment --time 5m -- true)
    browser screens "$id"
    for p in login overview queue job nodes projects forecast audit; do
        [[ -s $CONSOLE_OUT/console-$p.png ]]
    done
}

@test "the overview puts a critical alert above a wall of job failures, folded per project" {
    local n=0 p
    # node-sick made critical for this site; the nodes turn sick, jobs fail in two projects
    sed 's/{name: node-sick, kind: node_unhealthy, severity: major}/{name: node-sick, kind: node_unhealthy, severity: critical}/' \
        "$ROOT/examples/policy.yaml" >"$T/policy-critical.yaml"
    grep -q 'node-sick, kind: node_unhealthy, severity: critical' "$T/policy-critical.yaml"
    "$DOCKET" apply -f "$T/policy-critical.yaml" >/dev/null
    for p in vision explore vision explore vision explore vision explore; do
        "$DOCKET" submit --parsable -p "$p" --class experiment --time 5m -- false >>"$T/failing"
        n=$((n + 1))
    done
    while read -r id; do wait_for 120 state_in "$id" FAILED; done <"$T/failing"
    touch "$BATS_FILE_TMPDIR/sick"
    firing() { ctl_get /v1/alerts | jq -e "[.alerts[] | select(.state == \"firing\") | .rule] | index(\"$1\") != null" >/dev/null; }
    wait_for 120 firing node-sick
    wait_for 120 firing job-failed
    browser overview "$n"
    rm -f "$BATS_FILE_TMPDIR/sick"
    "$DOCKET" apply -f "$ROOT/examples/policy.yaml" >/dev/null
}
