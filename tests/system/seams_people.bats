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

# token USER [ROLE] [TTL]: a member's token lasting 90 days unless told
token() { api_token "$1" "${2:-member}" "${3:-90d}"; }

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
    # ... and as the CLI prints them: docket token list's PARENT, docket audit's change
    run -0 env -u COLUMNS DOCKET_URL="$DOCKETD_URL" DOCKET_TOKEN="$ADMIN_TOKEN" "$DOCKET" token list --user mem
    echo "$output" >&3
    grep -Eq "^$child_id .* $parent_id *\$" <<<"$output"
    grep -Eq "^$parent_id .* - *\$" <<<"$output"
    run -0 env -u COLUMNS DOCKET_URL="$DOCKETD_URL" DOCKET_TOKEN="$ADMIN_TOKEN" "$DOCKET" audit --action token.issue
    [[ $output == *"parent: \"$parent_id\""* && $output == *"parent: \"$child_id\""* ]]
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

# Projects pa (lead lee) and pb (member bob), a node gpu01; tokens LEE and BOB.
two_projects() {
    api_post /v1/projects '{"name": "pa"}'
    assert_status 201
    api_post /v1/projects '{"name": "pb"}'
    assert_status 201
    api_post /v1/projects/pa/members '{"user": "lee", "role": "lead"}'
    assert_status 201
    api_post /v1/projects/pb/members '{"user": "bob", "role": "member"}'
    assert_status 201
    NODE_CRED=$(fake_node gpu01 8 H100)
    LEE=$(token lee)
    BOB=$(token bob)
}

@test "a lead cannot pull another project's member into its project, nor point his jobs at it" {
    two_projects
    # the attack: lee (lead of pa) adds bob (member of pb) and makes pa his default
    api_post /v1/projects/pa/members '{"user": "bob"}' "$LEE"
    assert_error 403 user
    [[ $(jq -r .error.message <<<"$body") == *"member of project 'pb'"* ]]
    api_post /v1/users/bob/default_project '{"project": "pa"}' "$LEE"
    assert_status 403
    api_get /v1/projects/pa/members
    [[ $body != *bob* ]]
    # bob's next submission without a project still lands in his own
    api_post /v1/jobs '{"command": ["x"], "hold": true}' "$BOB"
    assert_status 201
    assert_json .job.project pb
    # a lead still adds users of no other project, and changes roles within its own
    api_post /v1/projects/pa/members '{"user": "newcomer"}' "$LEE"
    assert_status 201
    api_post /v1/projects/pa/members '{"user": "newcomer", "role": "lead"}' "$LEE"
    assert_status 200
    # an admin adds bob; bob sets his own default, to his projects only
    api_post /v1/projects/pa/members '{"user": "bob"}'
    assert_status 201
    api_post /v1/users/bob/default_project '{"project": "pa"}' "$LEE"
    assert_status 403
    api_post /v1/users/bob/default_project '{"project": "pa"}' "$BOB"
    assert_status 200
    api_post /v1/users/lee/default_project '{"project": "pb"}' "$LEE"
    assert_error 403 project
}

@test "a job's script and command are seen only by its owner, its project's leads and admins" {
    two_projects
    api_post /v1/projects/pa/members '{"user": "mem"}'
    assert_status 201
    api_post /v1/projects/pa/members '{"user": "mem2"}'
    assert_status 201
    local MEM MEM2 VIEW OPER sid cid
    MEM=$(token mem) MEM2=$(token mem2) VIEW=$(token view viewer) OPER=$(token oper operator)
    # the attack: a token in a script comment, another in a command, read across users
    api_post /v1/jobs '{"project": "pa", "script": "#!/bin/sh\n# DOCKET_TOKEN=dkt_in_script_0001\ntrue\n",
        "hold": true}' "$MEM"
    assert_status 201
    sid=$(jq -r .job.id <<<"$body")
    api_post /v1/jobs '{"project": "pa", "command": ["curl", "-H", "Authorization: Bearer dkt_in_cmd_0002"],
        "hold": true, "env": {"K": "v_in_env_0003"}}' "$MEM"
    assert_status 201
    cid=$(jq -r .job.id <<<"$body")
    for who in MEM2 BOB VIEW OPER; do
        for id in "$sid" "$cid"; do
            api_get "/v1/jobs/$id" "${!who}"
            assert_status 200
            [[ $body != *dkt_in_* && $body != *v_in_env* ]] || { echo "$who sees job $id: $body" >&2; false; }
            assert_json .job.hidden true
            assert_json .job.command null
            assert_json .job.state HELD
            api_get "/v1/jobs/$id/logs" "${!who}"
            assert_status 403
        done
        # the list views (queue, history, the console's) show the jobs, not the secrets
        for q in "state=all" "state=terminal,active&order=desc" "user=mem" \
                 "state=all&fields=id,command,hidden" "state=all&fields=command,workdir"; do
            api_get "/v1/jobs?$q" "${!who}"
            assert_status 200
            [[ $body != *dkt_in_* ]] || { echo "$who sees a command in the list ($q): $body" >&2; false; }
        done
        api_get "/v1/jobs?state=all" "${!who}"
        [ "$(jq -r '[.jobs[] | select(.user == "mem")] | length' <<<"$body")" = 2 ]
    done
    # the audit trail, read by viewers and operators, keeps neither
    api_get "/v1/audit?action=job.submit" "$VIEW"
    assert_status 200
    [[ $body != *dkt_in_* && $body != *v_in_env* ]]
    # docket show says it is hidden
    DOCKET_URL=$DOCKETD_URL DOCKET_TOKEN=$MEM2 run -0 "$DOCKET" show "$cid"
    [[ $output == *hidden* && $output != *dkt_in_cmd* ]]
    # the owner, a lead of the project and an admin see them
    for tok in "$MEM" "$LEE" "$ADMIN_TOKEN"; do
        api_get "/v1/jobs/$sid" "$tok"
        [[ $(jq -r .job.script <<<"$body") == *dkt_in_script_0001* ]]
        api_get "/v1/jobs?state=all&user=mem" "$tok"
        [[ $body == *dkt_in_cmd_0002* ]]
    done
}

@test "a secret reaches only the jobs of those it names; docket secret never prints a value" {
    two_projects
    api_post /v1/projects/pa/members '{"user": "mem"}'
    assert_status 201
    api_post /v1/projects/pa/members '{"user": "mem2"}'
    assert_status 201
    local MEM MEM2 v
    MEM=$(token mem) MEM2=$(token mem2)
    v=sk-value-never-printed-7731
    # setting one prints no value either, as text or as JSON
    run -0 env DOCKET_URL="$DOCKETD_URL" DOCKET_TOKEN="$LEE" "$DOCKET" secret set pa API_KEY \
        --allow user:mem <<<"$v"
    [[ $output == *API_KEY* && $output != *"$v"* ]]
    run -0 env DOCKET_URL="$DOCKETD_URL" DOCKET_TOKEN="$LEE" "$DOCKET" secret set pa LEADS_ONLY \
        --json <<<"$v"
    [[ $(jq -r .secret.name <<<"$output") == LEADS_ONLY && $output != *"$v"* ]]
    run -0 env DOCKET_URL="$DOCKETD_URL" DOCKET_TOKEN="$LEE" "$DOCKET" secret set pa FOR_CLASS \
        --allow class:interactive <<<"$v"
    # the attack: a member names a secret that is not for it in a job of its own
    api_post /v1/jobs '{"project": "pa", "command": ["env"], "hold": true, "secrets": ["API_KEY"]}' "$MEM2"
    assert_error 403 'secrets[0]'
    [[ $(jq -r .error.message <<<"$body") == *"secret 'API_KEY' of project 'pa' is not for user 'mem2'"* ]]
    api_post /v1/jobs '{"project": "pa", "command": ["env"], "hold": true,
        "secrets": ["FOR_CLASS", "LEADS_ONLY"]}' "$MEM"
    assert_error 403 'secrets[0]'
    api_post /v1/jobs '{"project": "pa", "command": ["env"], "hold": true, "class": "interactive",
        "time_limit": "1h", "secrets": ["FOR_CLASS", "LEADS_ONLY"]}' "$MEM"
    assert_error 403 'secrets[1]'
    # ... and those it names get it: the user, the class, the project's lead
    api_post /v1/jobs '{"project": "pa", "command": ["env"], "hold": true, "secrets": ["API_KEY"]}' "$MEM"
    assert_status 201
    api_post /v1/jobs '{"project": "pa", "command": ["env"], "hold": true, "class": "interactive",
        "time_limit": "1h", "secrets": ["FOR_CLASS"]}' "$MEM2"
    assert_status 201
    api_post /v1/jobs '{"project": "pa", "command": ["env"], "hold": true,
        "secrets": ["API_KEY", "FOR_CLASS", "LEADS_ONLY"]}' "$LEE"
    assert_status 201
    # a lead widens the list; a bad entry is refused naming the field
    api PUT /v1/projects/pa/secrets/API_KEY "{\"value\": \"$v\", \"allow\": [\"members\"]}" "$LEE"
    assert_status 200
    api_post /v1/jobs '{"project": "pa", "command": ["env"], "hold": true, "secrets": ["API_KEY"]}' "$MEM2"
    assert_status 201
    api PUT /v1/projects/pa/secrets/API_KEY "{\"value\": \"$v\", \"allow\": [\"everyone\"]}" "$LEE"
    assert_error 400 allow
    # the list says who receives each, never a value
    run -0 env DOCKET_URL="$DOCKETD_URL" DOCKET_TOKEN="$LEE" "$DOCKET" secret list pa
    [[ $output == *API_KEY*leads,members* && $output == *FOR_CLASS*leads,class:interactive* ]]
    [[ $output != *"$v"* ]]
    run -0 env DOCKET_URL="$DOCKETD_URL" DOCKET_TOKEN="$LEE" "$DOCKET" secret list pa --json
    [[ $output != *"$v"* ]]
    [ "$(jq -r '.secrets[] | select(.name == "LEADS_ONLY") | .allow | length' <<<"$output")" = 0 ]
    api_get "/v1/audit?action=secret.set"
    [[ $body != *"$v"* ]]
    assert_json '.entries[-1].after.allow[0]' members
}

# docketd_with_admin_login: docketd again, in a mount namespace of its own whose
# /etc/passwd also has a login `admin` of uid 4242 (nothing outside it changes), its
# socket where any uid reaches it, and uid 4243 configured as an admin (--admin-uid).
docketd_with_admin_login() {
    unshare -m true 2>/dev/null || skip "no mount namespace here (unshare -m needs CAP_SYS_ADMIN)"
    docketd_stop
    cp /etc/passwd "$TEST_DIR/passwd"
    echo 'admin:x:4242:4242:a Unix login that happens to be named admin:/nonexistent:/bin/false' \
        >>"$TEST_DIR/passwd"
    mkdir -p "$TEST_DIR/sock"
    chmod 0755 "$TEST_DIR/sock"
    chmod 0711 "$TEST_DIR"
    SOCK=$TEST_DIR/sock/docketd.sock
    rm -f "$STATE_DIR/docketd.port"
    unshare -m sh -c 'mount --bind "$0" /etc/passwd && exec "$@"' "$TEST_DIR/passwd" \
        "$DOCKETD" --state-dir "$STATE_DIR" --listen 127.0.0.1:0 --socket "$SOCK" \
        --admin-uid 4243 >>"$TEST_DIR/docketd.log" 2>&1 &
    DOCKETD_PID=$!
    docket_track_pid "$DOCKETD_PID"
    docketd_wait
}

# as_uid UID METHOD PATH [BODY]: the API over the socket as that Unix uid (no token);
# sets status_code and body.
as_uid() {
    local out args=(-s -w '\n%{http_code}' -X "$2" --unix-socket "$SOCK")
    [[ -n ${4-} ]] && args+=(-H 'Content-Type: application/json' --data-binary "$4")
    out=$(setpriv --reuid="$1" --regid="$1" --clear-groups curl "${args[@]}" "http://docketd$3")
    status_code=${out##*$'\n'}
    body=${out%$'\n'*}
}

@test "a Unix login named admin is nobody special on the socket; admins are root and configured uids" {
    docketd_with_admin_login
    api_post /v1/projects '{"name": "pa"}'
    assert_status 201
    NODE_CRED=$(fake_node gpu01 8 H100)
    # the built-in admin's job, with a secret in its env
    api_post /v1/jobs '{"project": "pa", "command": ["backup", "--key", "adm-cmd-0001"],
        "hold": true, "env": {"ADMIN_KEY": "adm-env-0002"}}'
    assert_status 201
    local jid admin_tok_id
    jid=$(jq -r .job.id <<<"$body")
    admin_tok_id=$(curl -s -H "Authorization: Bearer $ADMIN_TOKEN" "$DOCKETD_URL/v1/whoami" | jq -r .token_id)
    # the attack: uid 4242, whose login is `admin`, over the socket
    as_uid 4242 GET /v1/whoami
    assert_status 200
    assert_json .user uid4242
    assert_json .role member
    as_uid 4242 GET "/v1/jobs/$jid"
    assert_status 200
    [[ $body != *adm-env-0002* && $body != *adm-cmd-0001* ]]
    as_uid 4242 GET "/v1/jobs/$jid/logs"
    assert_status 403
    as_uid 4242 GET "/v1/tokens?user=admin"
    assert_status 403
    as_uid 4242 DELETE "/v1/tokens/$admin_tok_id"
    assert_status 403
    as_uid 4242 POST "/v1/jobs/$jid/cancel" '{}'
    assert_status 403
    api_get /v1/whoami
    assert_status 200 # the admin token still works
    # admins on the socket: root, and the uid configured with --admin-uid (no login needed)
    as_uid 0 GET /v1/whoami
    assert_json .role admin
    as_uid 4243 GET /v1/whoami
    assert_json .user uid4243
    assert_json .role admin
    as_uid 4244 GET /v1/whoami
    assert_json .role member
}
