#!/usr/bin/env bats
# secrets.bats - a project's secrets (docs/security.md "Secrets") against the real
# docketd and a real docket-node (no cgroups) on loopback: docket secret set/list/rm,
# a job that names a secret gets it in its environment (it writes the value's hash to a
# file outside its log), and the value is nowhere else: not in the database file, the
# agent's state directory, docketd's or the agent's log, nor any API output. A byte
# changed in the stored ciphertext fails the launch with a clear error (the GCM tag).
# Every process started here is stopped by pid.

bats_require_minimum_version 1.5.0

load lib/common

DOCKET=$DOCKET_BUILD/src/cli/docket
AGENT_BIN=$DOCKET_BUILD/src/agent/docket-node
VALUE='s3cr3t-Value-4f9a1c7e-do-not-leak'

setup() {
    docket_setup
    unset DOCKET_URL DOCKET_TOKEN DOCKET_CA DOCKET_FINGERPRINT
    docketd_start --heartbeat-wait 2s
    export DOCKET_URL=$DOCKETD_URL DOCKET_TOKEN=$ADMIN_TOKEN
}

teardown() {
    docket_teardown
}

agent_start() { # NAME
    local jt
    jt=$("$DOCKET" token join)
    DOCKET_JOIN_TOKEN=$jt "$AGENT_BIN" --controller "$DOCKETD_URL" --name "$1" --gpus 0 \
        --cpus 2 --mem 2G --no-cgroups --allow-root-jobs --state-dir "$TEST_DIR/agent-$1" \
        --log-file "$TEST_DIR/agent-$1.log" 2>>"$TEST_DIR/agent-$1.err" &
    docket_track_pid $!
    wait_for 20 node_up "$1"
}
node_up() { [[ $("$DOCKET" nodes --json | jq -r ".nodes[] | select(.name == \"$1\") | .state") == UP ]]; }
job_state() { "$DOCKET" show "$1" --json | jq -r .job.state; }
job_ended() { [[ $(job_state "$1") =~ ^(COMPLETED|FAILED|CANCELLED|TIMEOUT)$ ]]; }

# absent PATH...: the secret's value is in none of these files (recursively). (A bare
# `! grep` would not fail a bats test: errexit ignores negated commands.)
absent() {
    if grep -rqF -- "$VALUE" "$@"; then
        echo "the secret's value is in: $(grep -rlF -- "$VALUE" "$@" | tr '\n' ' ')" >&2
        return 1
    fi
}

# user_token: a token for the user running the tests (jobs run as that user), a member of
# the project default (submissions need membership).
user_token() {
    "$DOCKET" projects members add default "$(id -un)" >/dev/null &&
        "$DOCKET" token create --user "$(id -un)" --role member 2>/dev/null
}

@test "secret set/list/rm: values from stdin or a file, names only back" {
    run "$DOCKET" secret set default API_KEY <<<"$VALUE"
    [[ $status -eq 0 && $output == "set secret API_KEY of project default" ]]
    printf 'from-a-file\n' >"$TEST_DIR/v"
    run "$DOCKET" secret set default DB_PASS --from-file "$TEST_DIR/v"
    [[ $status -eq 0 ]]
    run "$DOCKET" secret list default
    [[ $status -eq 0 ]]
    [[ $output == *API_KEY*admin*DB_PASS*admin* ]]
    [[ $output != *"$VALUE"* && $output != *from-a-file* ]]
    run "$DOCKET" secret list default --json
    [[ $(jq -r '[.secrets[].name] | join(",")' <<<"$output") == API_KEY,DB_PASS ]]
    [[ $(jq -r '.secrets[0] | keys | join(",")' <<<"$output") == allow,name,project,set_by,set_ms ]]
    # the value is never an argument
    run "$DOCKET" secret set default API_KEY "$VALUE"
    [[ $status -eq 2 ]]
    # replaced, then removed
    run "$DOCKET" secret set default API_KEY <<<"other"
    [[ $status -eq 0 ]]
    run "$DOCKET" secret rm default DB_PASS
    [[ $status -eq 0 && $output == "removed secret DB_PASS of project default" ]]
    run "$DOCKET" secret rm default DB_PASS
    [[ $status -eq 1 && $output == *"has no secret 'DB_PASS'"* ]]
    run "$DOCKET" secret list default --json
    [[ $(jq -r '[.secrets[].name] | join(",")' <<<"$output") == API_KEY ]]
    # the audit trail names them, never their values
    api_get "/v1/audit?limit=100"
    assert_status 200
    [[ $(jq '[.. | objects | .action? | strings | select(startswith("secret."))] | length' <<<"$body") -eq 4 ]]
    [[ $body != *"$VALUE"* && $body != *from-a-file* && $body != *other\"* ]]
}

@test "secret API: bad input is refused naming the field; only the project's lead or an admin may use it" {
    api PUT /v1/projects/default/secrets/9BAD '{"value": "x"}'
    assert_error 400 name
    api PUT /v1/projects/nosuch/secrets/OK '{"value": "x"}'
    assert_error 404 project
    api PUT /v1/projects/default/secrets/OK '{"value": ""}'
    assert_error 400 value
    api PUT /v1/projects/default/secrets/OK '{"value": "a\u0000b"}'
    assert_status 400 # the JSON reader refuses a NUL before the value is looked at
    api PUT /v1/projects/default/secrets/OK '{"value": "x", "colour": 1}'
    assert_error 400 colour
    api PUT /v1/projects/default/secrets/OK '{"value": 5}'
    assert_error 400 value
    # none of those stored anything
    api_get /v1/projects/default/secrets
    assert_status 200
    assert_json '.secrets | length' 0
    # a member may neither set nor list (the project's lead or an admin only)
    local member me
    me=$(id -un)
    member=$(user_token)
    api PUT /v1/projects/default/secrets/OK '{"value": "x"}' "$member"
    assert_status 403
    api_get /v1/projects/default/secrets "$member"
    assert_status 403
    # a lead of the project may, in its project only
    api_post /v1/projects/default/members "{\"user\": \"$me\", \"role\": \"lead\"}"
    assert_status 200
    api PUT /v1/projects/default/secrets/LEAD_KEY '{"value": "x"}' "$member"
    assert_status 201
    api_get /v1/projects/default/secrets "$member"
    assert_status 200
    assert_json '.secrets[0].set_by' "$me"
    api_post /v1/projects '{"name": "other"}'
    assert_status 201
    api PUT /v1/projects/other/secrets/OK '{"value": "x"}' "$member"
    assert_status 403
    api_delete /v1/projects/default/secrets/LEAD_KEY "$member"
    assert_status 200
    api_post /v1/projects/default/members "{\"user\": \"$me\", \"role\": \"member\"}"
    assert_status 200
    # a job naming a secret the project lacks is refused at submit
    run env DOCKET_TOKEN="$member" "$DOCKET" submit -p default -c 1 --time 1m --secret NOPE -- true
    [[ $status -eq 1 && $output == *"has no secret 'NOPE'"*"secrets[0]"* ]]
}

@test "a job gets its secret in its environment, and the value is nowhere else" {
    "$DOCKET" secret set default API_KEY --allow members <<<"$VALUE"
    # another secret of the project the job may use but does not name: it gets none of it
    "$DOCKET" secret set default OTHER_KEY --allow members <<<"other-$VALUE"
    agent_start s1
    mkdir -p "$TEST_DIR/w" && chmod 0777 "$TEST_DIR/w"
    local tok id
    tok=$(user_token)
    # the job writes the hash of what it got to a file outside its log
    run env DOCKET_TOKEN="$tok" "$DOCKET" submit -p default -c 1 --time 5m --json \
        --workdir "$TEST_DIR/w" --secret API_KEY --env PLAIN=visible -- \
        sh -c "printf %s \"\$API_KEY\" | sha256sum | cut -d' ' -f1 >$TEST_DIR/w/hash; echo \"\${OTHER_KEY:-unset}\" >$TEST_DIR/w/other; echo done"
    [[ $status -eq 0 ]]
    id=$(jq -r .job.id <<<"$output")
    wait_for 30 job_ended "$id"
    [[ $(job_state "$id") == COMPLETED ]]
    [[ $(cat "$TEST_DIR/w/hash") == $(printf %s "$VALUE" | sha256sum | cut -d' ' -f1) ]]
    [[ $(cat "$TEST_DIR/w/other") == unset ]] # only the secrets it names
    # the job's record shows the names it uses, not the values
    api_get "/v1/jobs/$id"
    assert_json '.job.secrets | join(",")' API_KEY
    assert_json '.job.env.PLAIN' visible
    local out=$TEST_DIR/api-output
    for p in "/v1/jobs/$id" "/v1/jobs/$id/events" "/v1/jobs?state=terminal" "/v1/audit?limit=500" \
        "/v1/projects/default/secrets" "/v1/jobs/$id/logs?stream=stdout" \
        "/v1/jobs/$id/logs?stream=stderr" "/v1/nodes/s1"; do
        api_get "$p"
        printf '%s\n' "$body" >>"$out"
    done
    grep -q API_KEY "$out"
    absent "$out"
    # at rest and on the node: not in the database (nor its WAL), the agent's state
    # directory, or either log
    docketd_stop
    ls "$STATE_DIR"/docket.db*
    absent "$STATE_DIR"
    absent "$TEST_DIR/agent-s1"
    absent "$TEST_DIR/docketd.log" "$TEST_DIR/agent-s1.log" "$TEST_DIR/agent-s1.err"
    [[ -s $TEST_DIR/agent-s1/jobs/$id/job.json ]]
    # the key lives apart from the database, 0600
    [[ $(stat -c %a "$STATE_DIR/secrets.key") == 600 ]]
    [[ $(stat -c %s "$STATE_DIR/secrets.key") == 32 ]]
}

@test "a byte changed in the stored ciphertext fails the launch with a clear error" {
    "$DOCKET" secret set default API_KEY --allow members <<<"$VALUE"
    agent_start s2
    mkdir -p "$TEST_DIR/w" && chmod 0777 "$TEST_DIR/w"
    # flip one bit of the ciphertext's sixth byte, as someone with the database file would
    local h b
    h=$(sqlite3 "$STATE_DIR/docket.db" "SELECT hex(sealed) FROM secrets WHERE name = 'API_KEY'")
    [[ ${#h} -gt 40 ]]
    b=$(printf '%02X' $((0x${h:10:2} ^ 1)))
    sqlite3 "$STATE_DIR/docket.db" "UPDATE secrets SET sealed = X'${h:0:10}$b${h:12}' WHERE name = 'API_KEY'"
    [[ $(sqlite3 "$STATE_DIR/docket.db" "SELECT hex(sealed) FROM secrets WHERE name = 'API_KEY'") == "${h:0:10}$b${h:12}" ]]
    local tok id
    tok=$(user_token)
    run env DOCKET_TOKEN="$tok" "$DOCKET" submit -p default -c 1 --time 5m --json \
        --workdir "$TEST_DIR/w" --secret API_KEY -- sh -c "echo ran >$TEST_DIR/w/ran"
    [[ $status -eq 0 ]]
    id=$(jq -r .job.id <<<"$output")
    wait_for 30 job_ended "$id"
    api_get "/v1/jobs/$id"
    assert_json .job.state FAILED
    assert_json .job.exit.kind launch_failed
    [[ $(jq -r .job.exit.message <<<"$body") == *"secret 'API_KEY' of project 'default' cannot be decrypted: its authentication tag does not match"* ]]
    api_get "/v1/jobs/$id/events"
    [[ $body == *launch_failed*"authentication tag"* ]]
    [[ ! -e $TEST_DIR/w/ran ]]
    # set again, it works again
    "$DOCKET" secret set default API_KEY --allow members <<<"$VALUE"
    run env DOCKET_TOKEN="$tok" "$DOCKET" submit -p default -c 1 --time 5m --json \
        --workdir "$TEST_DIR/w" --secret API_KEY -- sh -c "echo ran >$TEST_DIR/w/ran"
    id=$(jq -r .job.id <<<"$output")
    wait_for 30 job_ended "$id"
    [[ $(job_state "$id") == COMPLETED && -e $TEST_DIR/w/ran ]]
}

@test "docketd refuses a secrets key others may read, or of the wrong size" {
    docketd_stop
    chmod 0644 "$STATE_DIR/secrets.key"
    run timeout 10 "$DOCKETD" --state-dir "$STATE_DIR" --listen 127.0.0.1:0 --socket -
    [[ $status -eq 1 ]]
    [[ $output == *"secrets key '$STATE_DIR/secrets.key' may be read by others"*"chmod 600"* ]]
    chmod 0600 "$STATE_DIR/secrets.key"
    head -c 16 /dev/urandom >"$STATE_DIR/secrets.key"
    run timeout 10 "$DOCKETD" --state-dir "$STATE_DIR" --listen 127.0.0.1:0 --socket -
    [[ $status -eq 1 ]]
    [[ $output == *"exactly 32 bytes"* ]]
    # a key elsewhere, by configuration, is made there at first start
    "$DOCKETD" --state-dir "$TEST_DIR/s2" --listen none --socket - \
        --secrets-key "$TEST_DIR/elsewhere.key" >>"$TEST_DIR/docketd.log" 2>&1 &
    docket_track_pid $!
    wait_for 20 test -s "$TEST_DIR/elsewhere.key"
    [[ $(stat -c %a "$TEST_DIR/elsewhere.key") == 600 ]]
    [[ ! -e $TEST_DIR/s2/secrets.key ]]
}

# redocketd [FLAGS...]: start docketd again (a new port: the CLI follows it).
redocketd() {
    docketd_start --heartbeat-wait 2s "$@"
    export DOCKET_URL=$DOCKETD_URL
}

# secret_hash_job TAG: a job (user token $tok) that writes the hash of $API_KEY to
# $TEST_DIR/w/TAG; waits for it to complete.
secret_hash_job() {
    run env DOCKET_TOKEN="$tok" "$DOCKET" submit -p default -c 1 --time 5m --json \
        --workdir "$TEST_DIR/w" --secret API_KEY -- \
        sh -c "printf %s \"\$API_KEY\" | sha256sum | cut -d' ' -f1 >$TEST_DIR/w/$1"
    [[ $status -eq 0 ]]
    local id
    id=$(jq -r .job.id <<<"$output")
    wait_for 30 job_ended "$id"
    [[ $(job_state "$id") == COMPLETED ]]
    [[ $(cat "$TEST_DIR/w/$1") == $(printf %s "$VALUE" | sha256sum | cut -d' ' -f1) ]]
}

# sealed PROJECT NAME: the stored nonce and ciphertext of a secret, in hex.
sealed() {
    sqlite3 "$STATE_DIR/docket.db" "SELECT hex(nonce) || hex(sealed) FROM secrets
        WHERE project = '$1' AND name = '$2'"
}

# rotation_setup: API_KEY set, a work directory, tok (a user token), the key as it is
# in $TEST_DIR/old.key, API_KEY's stored row in old_row; docketd stopped.
rotation_setup() {
    "$DOCKET" secret set default API_KEY --allow members <<<"$VALUE"
    mkdir -p "$TEST_DIR/w" && chmod 0777 "$TEST_DIR/w"
    tok=$(user_token)
    cp -p "$STATE_DIR/secrets.key" "$TEST_DIR/old.key"
    old_row=$(sealed default API_KEY)
    docketd_stop
}

@test "secrets key rotation: every secret re-sealed under a new key in one transaction, audited, jobs still get them" {
    "$DOCKET" secret set default OTHER <<<"other-value"
    api_post /v1/projects '{"name": "p2"}'
    "$DOCKET" secret set p2 P2_KEY <<<"p2-value"
    local tok old_row
    rotation_setup
    redocketd --rotate-secrets-key
    grep -q 'event=secrets_key_rotated .*secrets=3' "$TEST_DIR/docketd.log"
    # a new key, 0600, and no leftover; every row sealed anew
    ! cmp -s "$STATE_DIR/secrets.key" "$TEST_DIR/old.key" || false
    [[ $(stat -c %a "$STATE_DIR/secrets.key") == 600 && ! -e $STATE_DIR/secrets.key.new ]]
    [[ $(sealed default API_KEY) != "$old_row" && -n $(sealed default API_KEY) ]]
    # audited (the count, no value); the names and who set them unchanged
    api_get "/v1/audit?action=secrets.rotate_key"
    assert_json '.entries[0].after.secrets' 3
    assert_json '.entries[0].actor' docketd
    run "$DOCKET" secret list default --json
    [[ $(jq -r '[.secrets[] | .name + ":" + .set_by] | join(",")' <<<"$output") == API_KEY:admin,OTHER:admin ]]
    # a job still gets the value in its environment, which the database never holds
    agent_start s1
    secret_hash_job after-rotation
    docketd_stop
    absent "$STATE_DIR"
    # the old key would no longer open them: put it back and the launch fails, clearly
    cp -p "$TEST_DIR/old.key" "$STATE_DIR/secrets.key"
    redocketd
    run env DOCKET_TOKEN="$tok" "$DOCKET" submit -p default -c 1 --time 5m --json \
        --workdir "$TEST_DIR/w" --secret API_KEY -- true
    local id
    id=$(jq -r .job.id <<<"$output")
    wait_for 30 job_ended "$id"
    [[ $(job_state "$id") == FAILED ]]
    "$DOCKET" show "$id" --json | jq -r '.job.exit.message' | grep -q 'cannot be decrypted'
}

@test "secrets key rotation: a failure changes nothing; one stopped half-way is finished or abandoned at the next start" {
    local tok old_row
    rotation_setup
    # a secret that does not open with the current key stops the rotation: nothing changed
    sqlite3 "$STATE_DIR/docket.db" "INSERT INTO secrets SELECT project, 'BROKEN', nonce,
        sealed, set_by, set_ms, allow FROM secrets WHERE name = 'API_KEY'"
    run timeout 20 "$DOCKETD" --state-dir "$STATE_DIR" --listen 127.0.0.1:0 --socket - \
        --rotate-secrets-key
    [[ $status -eq 1 && $output == *"secret 'BROKEN' of project 'default' does not open"* ]]
    cmp -s "$STATE_DIR/secrets.key" "$TEST_DIR/old.key"
    [[ $(sealed default API_KEY) == "$old_row" && ! -e $STATE_DIR/secrets.key.new ]]
    sqlite3 "$STATE_DIR/docket.db" "DELETE FROM secrets WHERE name = 'BROKEN'"
    # a KEY.new that never committed (the rows still open with the old key): removed
    head -c 32 /dev/urandom >"$STATE_DIR/secrets.key.new"
    chmod 0600 "$STATE_DIR/secrets.key.new"
    redocketd
    grep -q 'event=secrets_key_rotation_abandoned' "$TEST_DIR/docketd.log"
    [[ ! -e $STATE_DIR/secrets.key.new ]]
    cmp -s "$STATE_DIR/secrets.key" "$TEST_DIR/old.key"
    # a rotation that committed but stopped before its rename: finished at the next start
    docketd_stop
    redocketd --rotate-secrets-key
    docketd_stop
    cp -p "$STATE_DIR/secrets.key" "$TEST_DIR/new.key"
    mv "$STATE_DIR/secrets.key" "$STATE_DIR/secrets.key.new"
    cp -p "$TEST_DIR/old.key" "$STATE_DIR/secrets.key"
    redocketd
    grep -q 'event=secrets_key_rotation_finished' "$TEST_DIR/docketd.log"
    cmp -s "$STATE_DIR/secrets.key" "$TEST_DIR/new.key"
    [[ ! -e $STATE_DIR/secrets.key.new ]]
    agent_start s1
    secret_hash_job finished
}
