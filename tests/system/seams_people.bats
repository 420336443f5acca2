#!/usr/bin/env bats
# seams_people.bats - trust between people (issue 33, items 4-8; docs/security.md
# "Hostile member"): each test performs the attack a hostile member tried and fails when
# the defence is taken out. Derived tokens die with their parent; a lead acts only inside
# its project; a job's script, command, env and logs are its owner's, its leads' and the
# admins'; a secret reaches only the jobs of those it names; a Unix login named `admin`
# is nobody special on the socket.

load lib/common
bats_require_minimum_version 1.5.0

setup() {
    docket_setup
    docketd_start
    DOCKET=$DOCKET_BUILD/src/cli/docket
}

teardown() {
    docket_teardown
}

# token USER [ROLE] [TTL]: a fresh API token (admin call); prints it.
token() {
    api_post /v1/tokens "{\"user\": \"$1\", \"role\": \"${2:-member}\", \"ttl\": \"${3:-90d}\"}"
    [[ $status_code == 201 ]] || { echo "token $1: $status_code $body" >&2; return 1; }
    jq -r .token <<<"$body"
}

# derive TOKEN: what POST /v1/console/codes and /v1/console/session make of TOKEN; sets
# DERIVED (the new token) and DERIVED_EXPIRES.
derive() {
    api_post /v1/console/codes '{}' "$1"
    assert_status 201 || return 1
    local code
    code=$(jq -r .code <<<"$body")
    api_post /v1/console/session "{\"code\": \"$code\"}" -
    assert_status 201 || return 1
    DERIVED=$(jq -r .token <<<"$body")
    DERIVED_EXPIRES=$(jq -r .expires_ms <<<"$body")
}

# token_field ID FIELD USER: a field of token ID as docketd lists USER's tokens (admin).
token_field() {
    api_get "/v1/tokens?user=$3"
    jq -r --arg id "$1" ".tokens[] | select(.id == \$id) | .$2" <<<"$body"
}

@test "a derived token ends no later than its parent, and a revoke of the parent ends the chain" {
    local parent parent_id parent_exp child child_exp grand
    api_post /v1/tokens '{"user": "mem", "role": "member", "ttl": "1h"}'
    assert_status 201
    parent=$(jq -r .token <<<"$body")
    parent_id=$(jq -r .id <<<"$body")
    parent_exp=$(jq -r .expires_ms <<<"$body")
    # a one-hour token asks for a code: the session it gives is not twelve hours
    derive "$parent"
    child=$DERIVED child_exp=$DERIVED_EXPIRES
    [ "$child_exp" -le "$parent_exp" ]
    # ... and the session cannot mint a token that outlives it
    derive "$child"
    grand=$DERIVED
    [ "$DERIVED_EXPIRES" -le "$child_exp" ]
    api_get /v1/whoami "$grand"
    assert_status 200
    assert_json .user mem
    # the chain is recorded: in the token list and in the audit trail
    child_id=$(jq -r .token_id <<<"$(curl -s -H "Authorization: Bearer $child" "$DOCKETD_URL/v1/whoami")")
    [ "$(token_field "$child_id" parent mem)" = "$parent_id" ]
    api_get "/v1/audit?action=token.issue"
    [ "$(jq -r --arg p "$parent_id" '[.entries[] | select(.after.parent == $p)] | length' <<<"$body")" = 1 ]
    [ "$(jq -r --arg p "$child_id" '[.entries[] | select(.after.parent == $p)] | length' <<<"$body")" = 1 ]
    # one revoke of the parent ends every descendant at once, and the trail counts them
    api_delete "/v1/tokens/$parent_id"
    assert_status 200
    assert_json .derived_revoked 2
    for t in "$parent" "$child" "$grand"; do
        api_get /v1/whoami "$t"
        assert_status 401
    done
    [ "$(token_field "$child_id" state mem)" = revoked ]
    api_get "/v1/audit?action=token.revoke"
    assert_json '.entries[-1].after.derived_revoked' 2
}

@test "a derived token is checked against its ancestors at every request, whatever the rows say" {
    local parent parent_id child
    parent=$(token mem member 1h)
    parent_id=$(curl -s -H "Authorization: Bearer $parent" "$DOCKETD_URL/v1/whoami" | jq -r .token_id)
    derive "$parent"
    child=$DERIVED
    derive "$child"
    grand=$DERIVED
    # the parent is revoked behind docketd's back, its descendants left alive in the rows
    docketd_stop
    sqlite3 "$STATE_DIR/docket.db" "UPDATE tokens SET revoked_ms = 1
        WHERE substr(hash, 1, 12) = '$parent_id'"
    docketd_start
    api_get /v1/whoami "$grand"
    assert_status 401
    [[ $(jq -r .error.message <<<"$body") == *"derived from token"*revoked* ]]
    # a code asked for before the revoke gives nothing after it
    docketd_stop
    sqlite3 "$STATE_DIR/docket.db" "UPDATE tokens SET revoked_ms = 0"
    docketd_start
    api_post /v1/console/codes '{}' "$child"
    assert_status 201
    code=$(jq -r .code <<<"$body")
    api_delete "/v1/tokens/$parent_id"
    assert_status 200
    api_post /v1/console/session "{\"code\": \"$code\"}" -
    assert_status 401
}
