#!/usr/bin/env bats
# roles.bats - who may do what (docs/security.md "Roles"), black-box against docketd.
#
# The role matrix: every route docketd has (`docketd --routes`, the route table itself)
# is tried as every role, on the caller's own project (A) and on another (B), and the
# HTTP status is checked against the matrix below. A route missing from the matrix fails
# the test, and so does a matrix row for a route docketd no longer has.
#
# Bodies are chosen so a call changes nothing: an allowed POST/PATCH/PUT gets a body with an
# unknown field (400 from the handler, after the check), a denied one 403 from the check.
# Submissions are held jobs; DELETEs target things made for the purpose.

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

# member PROJECT USER ROLE
member() {
    api_post "/v1/projects/$1/members" "{\"user\": \"$2\", \"role\": \"$3\"}"
    [[ $status_code == 201 || $status_code == 200 ]] || {
        echo "member $1 $2: $status_code $body" >&2
        return 1
    }
}

# Projects pa (the "own" project of lead and member) and pb, a node, users of each role,
# and a pending job in each project: JA owned by mem (in pa), JB by memb (in pb).
cluster() {
    api_post /v1/projects '{"name": "pa"}'
    assert_status 201
    api_post /v1/projects '{"name": "pb"}'
    assert_status 201
    NODE_CRED=$(fake_node gpu01 8 H100)
    TOK_admin=$ADMIN_TOKEN
    TOK_operator=$(api_token oper operator)
    TOK_viewer=$(api_token view viewer)
    TOK_lead=$(api_token lee member)
    TOK_member=$(api_token mem member)
    TOK_outsider=$(api_token out member)
    TOK_memb=$(api_token memb member)
    TOK_node=$NODE_CRED
    TOK_anon=-
    USER_admin=admin USER_operator=oper USER_viewer=view USER_lead=lee USER_member=mem
    USER_outsider=out USER_node=mem USER_anon=mem
    member pa lee lead
    member pa mem member
    member pb memb member
    # pending for an hour (begin), so they can be held and released at will
    api_post /v1/jobs '{"project": "pa", "command": ["x"], "begin": "1h",
        "env": {"AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI-of-mem", "MODE": "fast"}}' "$TOK_member"
    assert_status 201
    JA=$(jq -r .job.id <<<"$body")
    api_post /v1/jobs '{"project": "pb", "command": ["x"], "begin": "1h",
        "env": {"AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI-of-memb"}}' "$TOK_memb"
    assert_status 201
    JB=$(jq -r .job.id <<<"$body")
}

ROLES=(admin operator viewer lead member outsider node anon)

# METHOD PATTERN, then per role (in ROLES order) the status on A/B.
MATRIX=$(cat <<'EOF'
POST   /v1/jobs                   201/201 403/403 403/403 201/403 201/403 403/403 403/403 401/401
GET    /v1/jobs                   200/200 200/200 200/200 200/200 200/200 200/200 403/403 401/401
GET    /v1/jobs/:                 200/200 200/200 200/200 200/200 200/200 200/200 403/403 401/401
PATCH  /v1/jobs/:                 400/400 403/403 403/403 400/403 400/403 403/403 403/403 401/401
POST   /v1/jobs/:/:               400/400 400/400 403/403 400/403 400/403 403/403 403/403 401/401
GET    /v1/jobs/:/events          200/200 200/200 200/200 200/200 200/200 200/200 403/403 401/401
GET    /v1/jobs/:/explain         200/200 200/200 200/200 200/200 200/200 200/200 403/403 401/401
GET    /v1/jobs/:/logs            200/200 403/403 403/403 200/403 200/403 403/403 403/403 401/401
GET    /v1/jobs/:/usage           200/200 200/200 200/200 200/200 200/200 200/200 403/403 401/401
GET    /v1/jobs/:/tty             400/400 403/403 403/403 400/403 400/403 403/403 403/403 401/401
GET    /v1/forecast               200/200 200/200 200/200 200/200 200/200 200/200 403/403 401/401
GET    /v1/nodes                  200/200 200/200 200/200 200/200 200/200 200/200 403/403 401/401
GET    /v1/nodes/:                200/200 200/200 200/200 200/200 200/200 200/200 403/403 401/401
POST   /v1/nodes/:/drain          400/400 400/400 403/403 403/403 403/403 403/403 403/403 401/401
POST   /v1/nodes/:/resume         400/400 400/400 403/403 403/403 403/403 403/403 403/403 401/401
POST   /v1/nodes/:/down           400/400 403/403 403/403 403/403 403/403 403/403 403/403 401/401
POST   /v1/nodes/:/labels         400/400 400/400 403/403 403/403 403/403 403/403 403/403 401/401
POST   /v1/nodes/:/replace        400/400 403/403 403/403 403/403 403/403 403/403 403/403 401/401
GET    /v1/projects               200/200 200/200 200/200 200/200 200/200 200/200 403/403 401/401
POST   /v1/projects               400/400 403/403 403/403 403/403 403/403 403/403 403/403 401/401
GET    /v1/projects/:             200/200 200/200 200/200 200/200 200/200 200/200 403/403 401/401
PATCH  /v1/projects/:             400/400 403/403 403/403 400/403 403/403 403/403 403/403 401/401
POST   /v1/projects/:/boost       400/400 400/400 403/403 403/403 403/403 403/403 403/403 401/401
DELETE /v1/projects/:/boost       200/200 200/200 403/403 403/403 403/403 403/403 403/403 401/401
POST   /v1/projects/:/pause       400/400 403/403 403/403 403/403 403/403 403/403 403/403 401/401
POST   /v1/projects/:/resume      400/400 403/403 403/403 403/403 403/403 403/403 403/403 401/401
GET    /v1/projects/:/usage       200/200 200/200 200/200 200/200 200/200 200/200 403/403 401/401
GET    /v1/projects/:/members     200/200 200/200 200/200 200/200 200/200 200/200 403/403 401/401
POST   /v1/projects/:/members     400/400 403/403 403/403 400/403 403/403 403/403 403/403 401/401
DELETE /v1/projects/:/members/:   404/404 403/403 403/403 404/403 403/403 403/403 403/403 401/401
GET    /v1/projects/:/secrets     200/200 403/403 403/403 200/403 403/403 403/403 403/403 401/401
PUT    /v1/projects/:/secrets/:   400/400 403/403 403/403 400/403 403/403 403/403 403/403 401/401
DELETE /v1/projects/:/secrets/:   404/404 403/403 403/403 404/403 403/403 403/403 403/403 401/401
GET    /v1/users/:/default_project 200/200 200/403 200/403 200/403 200/403 200/403 403/403 401/401
POST   /v1/users/:/default_project 400/400 400/403 400/403 400/403 400/403 400/403 403/403 401/401
GET    /v1/services               200/200 200/200 200/200 200/200 200/200 200/200 403/403 401/401
POST   /v1/services               400/400 400/400 400/400 400/400 400/400 400/400 403/403 401/401
GET    /v1/services/:             404/404 404/404 404/404 404/404 404/404 404/404 403/403 401/401
POST   /v1/services/:/scale       400/400 400/400 400/400 400/400 400/400 400/400 403/403 401/401
POST   /v1/services/:/update      400/400 400/400 400/400 400/400 400/400 400/400 403/403 401/401
DELETE /v1/services/:             404/404 404/404 404/404 404/404 404/404 404/404 403/403 401/401
GET    /v1/storage                200/200 200/200 200/200 200/200 200/200 200/200 403/403 401/401
PUT    /v1/projects/:/storage/:   404/404 403/403 403/403 403/403 403/403 403/403 403/403 401/401
DELETE /v1/projects/:/storage/:   404/404 403/403 403/403 403/403 403/403 403/403 403/403 401/401
GET    /v1/storage/lifecycle      200/200 200/200 200/200 200/200 200/200 200/200 403/403 401/401
POST   /v1/storage/lifecycle      400/400 403/403 403/403 403/403 403/403 403/403 403/403 401/401
GET    /v1/storage/lifecycle/runs/: 404/404 404/404 404/404 404/404 404/404 404/404 403/403 401/401
GET    /v1/templates              200/200 200/200 200/200 200/200 200/200 200/200 403/403 401/401
GET    /v1/partitions             200/200 200/200 200/200 200/200 200/200 200/200 403/403 401/401
GET    /v1/templates/:            404/404 404/404 404/404 404/404 404/404 404/404 403/403 401/401
POST   /v1/templates/:/warm       400/400 400/400 400/400 400/400 400/400 400/400 403/403 401/401
GET    /v1/tiers                  200/200 200/200 200/200 200/200 200/200 200/200 403/403 401/401
GET    /v1/classes                200/200 200/200 200/200 200/200 200/200 200/200 403/403 401/401
PATCH  /v1/classes/:              400/400 403/403 403/403 403/403 403/403 403/403 403/403 401/401
GET    /v1/policy                 200/200 200/200 200/200 200/200 200/200 200/200 403/403 401/401
POST   /v1/policy                 400/400 403/403 403/403 403/403 403/403 403/403 403/403 401/401
GET    /v1/audit                  200/200 200/200 200/200 403/403 403/403 403/403 403/403 401/401
GET    /v1/audit/verify           200/200 200/200 200/200 403/403 403/403 403/403 403/403 401/401
POST   /v1/tokens                 400/400 403/403 403/403 403/403 403/403 403/403 403/403 401/401
GET    /v1/tokens                 200/200 200/200 200/200 200/200 200/200 200/200 403/403 401/401
DELETE /v1/tokens/:               200/200 200/403 200/403 200/403 200/403 200/403 403/403 401/401
POST   /v1/tokens/rotate-admin    400/400 403/403 403/403 403/403 403/403 403/403 403/403 401/401
POST   /v1/join-tokens            400/400 400/400 403/403 403/403 403/403 403/403 403/403 401/401
POST   /v1/agent/register         400/400 400/400 400/400 400/400 400/400 400/400 400/400 400/400
POST   /v1/agent/heartbeat        403/403 403/403 403/403 403/403 403/403 403/403 400/400 401/401
POST   /v1/agent/events           403/403 403/403 403/403 403/403 403/403 403/403 400/400 401/401
POST   /v1/agent/logs             403/403 403/403 403/403 403/403 403/403 403/403 400/400 401/401
POST   /v1/agent/rotate           403/403 403/403 403/403 403/403 403/403 403/403 400/400 401/401
GET    /v1/agent/jobs/:/tty       403/403 403/403 403/403 403/403 403/403 403/403 400/400 401/401
GET    /v1/alerts                 200/200 200/200 200/200 200/200 200/200 200/200 403/403 401/401
GET    /v1/changes                200/200 200/200 200/200 200/200 200/200 200/200 403/403 401/401
GET    /v1/alerts/history         200/200 200/200 200/200 200/200 200/200 200/200 403/403 401/401
GET    /v1/alerts/silences        200/200 200/200 200/200 200/200 200/200 200/200 403/403 401/401
POST   /v1/alerts/silences        400/400 400/400 403/403 403/403 403/403 403/403 403/403 401/401
DELETE /v1/alerts/silences/:      404/404 404/404 403/403 403/403 403/403 403/403 403/403 401/401
GET    /v1/reports/usage          200/200 200/200 200/200 200/200 403/403 403/403 403/403 401/401
GET    /v1/reports/capacity       200/200 200/200 200/200 403/403 403/403 403/403 403/403 401/401
GET    /v1/admin/backup           200/200 403/403 403/403 403/403 403/403 403/403 403/403 401/401
GET    /healthz                   200/200 200/200 200/200 200/200 200/200 200/200 200/200 200/200
GET    /metrics                   200/200 200/200 200/200 200/200 200/200 200/200 403/403 401/401
GET    /                          200/200 200/200 200/200 200/200 200/200 200/200 200/200 200/200
GET    /console/:                 200/200 200/200 200/200 200/200 200/200 200/200 200/200 200/200
POST   /v1/console/codes          400/400 400/400 400/400 400/400 400/400 400/400 403/403 401/401
POST   /v1/console/session        400/400 400/400 400/400 400/400 400/400 400/400 400/400 400/400
GET    /v1/whoami                 200/200 200/200 200/200 200/200 200/200 200/200 403/403 401/401
EOF
)

# fill PATTERN SIDE ROLE: the concrete path of a route for one side (A or B), in $filled
# (not printed: a subshell per call of the matrix's 1,296 was most of its time).
fill() {
    local pat=$1 side=$2 role=$3 job=$JA proj=pa u=USER_$role who
    [[ $side == B ]] && job=$JB proj=pb
    # the caller's own user on A, another user's on B
    who=${!u}
    [[ $side == B ]] && who=memb
    case $pat in
    /v1/jobs/:/:) filled="/v1/jobs/$job/hold" ;;
    /v1/jobs/:*) filled="/v1/jobs/$job${pat#/v1/jobs/:}" ;;
    /v1/agent/jobs/:*) filled="/v1/agent/jobs/$job${pat#/v1/agent/jobs/:}" ;;
    /v1/nodes/:*) filled="/v1/nodes/gpu01${pat#/v1/nodes/:}" ;;
    /v1/projects/:/members/:) filled="/v1/projects/$proj/members/ghost" ;;
    /v1/projects/:/secrets/:) filled="/v1/projects/$proj/secrets/GHOST_KEY" ;;
    /v1/projects/:/storage/:) filled="/v1/projects/$proj/storage/ghost" ;;
    /v1/templates/:) filled="/v1/templates/ghost" ;;
    /v1/templates/:/warm) filled="/v1/templates/ghost/warm" ;;
    /v1/storage/lifecycle/runs/:) filled="/v1/storage/lifecycle/runs/999999" ;;
    /v1/projects/:*) filled="/v1/projects/$proj${pat#/v1/projects/:}" ;;
    /v1/classes/:) filled="/v1/classes/training" ;;
    /v1/services/:*) filled="/v1/services/ghost${pat#/v1/services/:}" ;;
    /console/:) filled="/console/index.html" ;;
    /v1/alerts/silences/:) filled="/v1/alerts/silences/999999" ;;
    /v1/reports/capacity) filled="/v1/reports/capacity?month=2026-11" ;;
    /v1/users/:*) filled="/v1/users/$who${pat#/v1/users/:}" ;;
    /v1/tokens/:)
        # a token made for this call: the caller's own on A, another user's on B
        api_post /v1/tokens "{\"user\": \"$who\"}" "$ADMIN_TOKEN"
        filled="/v1/tokens/$(jq -r .id <<<"$body")"
        ;;
    *) filled=$pat ;;
    esac
}

# matrix_request CONF METHOD PATH DATA TOKEN OUT: one request, as `api` makes it, added to
# the curl config CONF; its status is written on a line of its own, its body to OUT.
matrix_request() {
    local conf=$1 method=$2 path=$3 data=$4 tok=$5 out=$6
    {
        [[ -s $conf ]] && echo 'next' # between two requests
        echo 'silent'
        echo "request = \"$method\""
        echo "url = \"$DOCKETD_URL$path\""
        [[ $tok != "-" ]] && echo "header = \"Authorization: Bearer $tok\""
        if [[ -n $data ]]; then
            data=${data//\\/\\\\}
            echo 'header = "Content-Type: application/json"'
            echo "data-binary = \"${data//\"/\\\"}\""
        fi
        echo "output = \"$out\""
        [[ $path == /v1/changes ]] && echo 'max-time = 1' # a stream: its status, then go
        echo 'write-out = "%{http_code}\\n"'
    } >>"$conf"
}

# body_for METHOD PATTERN SIDE: in $body_data, a body that is refused by the handler
# (unknown field), or a held submission into the side's project; none for other methods.
body_for() {
    local method=$1 pat=$2 side=$3 proj=pa
    [[ $side == B ]] && proj=pb
    body_data=
    if [[ $method == POST && $pat == /v1/jobs ]]; then
        body_data="{\"project\": \"$proj\", \"command\": [\"x\"], \"hold\": true}"
    elif [[ $method == POST || $method == PATCH || $method == PUT ]]; then
        body_data='{"bogus_field": 1}'
    fi
}

@test "role matrix: every route as every role, on its own project and on another" {
    cluster
    local routes failures=0 checked=0
    routes=$("$DOCKETD" --routes)
    [[ -n $routes ]]
    # every route has a row, every row a route
    while read -r method pat perm; do
        grep -qE "^$method +$pat +" <<<"$MATRIX" || {
            echo "route '$method $pat' ($perm) has no row in the role matrix" >&2
            failures=$((failures + 1))
        }
    done <<<"$routes"
    while read -r method pat _; do
        grep -qE "^$method $pat " <<<"$routes" || {
            echo "matrix row '$method $pat' is no route of docketd" >&2
            failures=$((failures + 1))
        }
    done <<<"$MATRIX"
    # Every call goes into one curl config (each request its own method, token, body and
    # output file), run by one curl; matrix.want has each call's expected status and name.
    # A subshell writes them, without bats' DEBUG trap: it runs before every command, and
    # with it (and a curl per call) writing the 1,296 calls took most of this test's time.
    local conf=$TEST_DIR/matrix.curl want=$TEST_DIR/matrix.want got=$TEST_DIR/matrix.got
    (
        trap - DEBUG
        : >"$conf"
        : >"$want"
        n=0
        while read -r method pat cells; do
            read -ra want_codes <<<"$cells"
            for i in "${!ROLES[@]}"; do
                role=${ROLES[$i]}
                tokvar=TOK_$role
                for side in A B; do
                    fill "$pat" "$side" "$role"
                    body_for "$method" "$pat" "$side"
                    expect=${want_codes[$i]%/*}
                    [[ $side == B ]] && expect=${want_codes[$i]#*/}
                    matrix_request "$conf" "$method" "$filled" "$body_data" "${!tokvar}" \
                        "$TEST_DIR/matrix.$n"
                    printf '%s\t%s\n' "$expect" "$method $filled as $role ($side)" >>"$want"
                    n=$((n + 1))
                done
            done
        done <<<"$MATRIX"
    )
    curl -K "$conf" >"$got" || [[ $? == 28 ]] # (28: the change stream's max-time)
    checked=$(wc -l <"$want")
    [ "$(wc -l <"$got")" -eq "$checked" ]
    # each call answered otherwise than its row says, with the head of the answer
    paste "$got" "$want" | awk -F '\t' -v dir="$TEST_DIR" '$1 != $2 {
        f = dir "/matrix." (NR - 1); b = ""; getline b <f; close(f)
        printf "%s: want %s, got %s: %s\n", $3, $2, $1, substr(b, 1, 200) }' >"$TEST_DIR/matrix.bad"
    failures=$((failures + $(wc -l <"$TEST_DIR/matrix.bad")))
    cat "$TEST_DIR/matrix.bad" >&2
    echo "# $checked calls checked" >&3
    [ "$failures" -eq 0 ]
}

@test "default project: the user reads and sets its own, to a project of its own; an admin anyone's" {
    cluster
    api_get /v1/users/mem/default_project "$TOK_member"
    assert_status 200
    assert_json .default_project null
    api_get /v1/users/mem/default_project "$TOK_outsider"
    assert_status 403
    # the user, to a project it is a member of; not to another; a lead never for another user
    api_post /v1/users/mem/default_project '{"project": "pa"}' "$TOK_member"
    assert_status 200
    assert_json .default_project pa
    api_post /v1/users/mem/default_project '{"project": "pb"}' "$TOK_member"
    assert_error 403 project
    api_post /v1/users/mem/default_project '{"project": "pa"}' "$TOK_lead"
    assert_status 403
    api_post /v1/users/out/default_project '{"project": "pa"}' "$TOK_lead"
    assert_status 403
    # a job that names no project goes to the default
    api_post /v1/jobs '{"command": ["x"], "hold": true}' "$TOK_member"
    assert_status 201
    assert_json .job.project pa
    # the user clears it; an admin sets anyone's
    api_post /v1/users/mem/default_project '{"project": null}' "$TOK_member"
    assert_status 200
    assert_json .default_project null
    api_post /v1/users/out/default_project '{"project": "pb"}'
    assert_status 200
    api_get /v1/users/out/default_project "$TOK_outsider"
    assert_json .default_project pb
}

@test "default project: a user in exactly one project needs none; in two, one is asked for" {
    cluster
    api_post /v1/jobs '{"command": ["true"], "hold": true}' "$TOK_member"
    assert_status 201
    assert_json .job.project pa
    member pb mem member
    api_post /v1/jobs '{"command": ["true"], "hold": true}' "$TOK_member"
    assert_error 400 project
}

@test "a list's kept rows never carry one caller's view to another, nor a change's past" {
    cluster
    # a row of a list is kept once made (docs/controller.md "The list's row cache"): the
    # owner's list first, so JA's row is kept with its command in it
    local q="/v1/jobs?state=all" f="/v1/jobs?state=all&fields=id,state,command,hidden"
    row() { jq -c --argjson id "$JA" '.jobs[] | select(.id == $id) | [.state, .command, .hidden]' <<<"$body"; }
    api_get "$q" "$TOK_member"
    [ "$(row)" = '["PENDING",["x"],null]' ]
    # then callers who may not see it, each between two that may: none gets another's view
    for role in operator lead viewer admin outsider member memb; do
        tokvar=TOK_$role
        want='["PENDING",null,true]'
        [[ $role == lead || $role == admin || $role == member ]] && want='["PENDING",["x"],null]'
        for path in "$q" "$f"; do
            api_get "$path" "${!tokvar}"
            assert_status 200
            [ "$(row)" = "$want" ] || { echo "$role $path: $(row), want $want"; false; }
        done
    done
    # a change shows at once, in a list just made and in one kept
    api_post "/v1/jobs/$JA/hold" '{}' "$TOK_member"
    assert_status 200
    api_get "$q" "$TOK_viewer"
    [ "$(row)" = '["HELD",null,true]' ]
    api_get "$q" "$TOK_member"
    [ "$(row)" = '["HELD",["x"],null]' ]
    api_post "/v1/jobs/$JA/release" '{}' "$TOK_member"
    assert_status 200
    api_get "$f" "$TOK_member"
    [ "$(row)" = '["PENDING",["x"],null]' ]
    api_get "$f" "$TOK_outsider"
    [ "$(row)" = '["PENDING",null,true]' ]
}

@test "a job's env is seen only by its owner, its project's leads and admins" {
    cluster
    for role in admin lead member; do
        tokvar=TOK_$role
        api_get "/v1/jobs/$JA" "${!tokvar}"
        assert_status 200
        assert_json '.job.env.AWS_SECRET_ACCESS_KEY' wJalrXUtnFEMI-of-mem
    done
    # another user's secret never comes back: not in show, not in the list, not in the
    # audit trail that operators and viewers read
    for role in operator viewer outsider lead member; do
        tokvar=TOK_$role
        api_get "/v1/jobs/$JB" "${!tokvar}"
        assert_status 200
        [[ $body != *wJalrXUtnFEMI-of-memb* ]]
        assert_json '.job.env.AWS_SECRET_ACCESS_KEY' '<hidden>'
        api_get "/v1/jobs?state=all" "${!tokvar}"
        [[ $body != *wJalrXUtnFEMI-of-memb* ]]
    done
    api_get "/v1/jobs?state=all" "$TOK_outsider"
    [[ $body != *wJalrXUtnFEMI* ]]
    api_get "/v1/audit?action=job.submit" "$TOK_viewer"
    assert_status 200
    [[ $body != *wJalrXUtnFEMI* ]]
    [[ $body == *AWS_SECRET_ACCESS_KEY* ]]
}

@test "membership: submit only into one's projects; leads manage members and per-user caps" {
    cluster
    api_post /v1/jobs '{"project": "pb", "command": ["x"]}' "$TOK_member"
    assert_error 403 project
    [[ $body == *"not a member of project 'pb'"* ]]
    # a lead adds a member to its project, not to another
    api_post /v1/projects/pa/members '{"user": "out"}' "$TOK_lead"
    assert_status 201
    api_post /v1/jobs '{"project": "pa", "command": ["x"], "hold": true}' "$TOK_outsider"
    assert_status 201
    api_post /v1/projects/pb/members '{"user": "out"}' "$TOK_lead"
    assert_error 403 ""
    api_post /v1/projects/pa/members '{"user": "out", "role": "admin"}' "$TOK_lead"
    assert_error 400 role
    # the lead sets per-user caps within the admin's limits, nothing else
    api_patch /v1/projects/pa '{"gpu_limit": 8}'
    assert_status 200
    api_patch /v1/projects/pa '{"user_gpu_limit": 4}' "$TOK_lead"
    assert_status 200
    assert_json .project.user_gpu_limit 4
    api_patch /v1/projects/pa '{"user_gpu_limit": 16}' "$TOK_lead"
    assert_error 403 user_gpu_limit
    api_patch /v1/projects/pa '{"gpu_limit": 64}' "$TOK_lead"
    assert_error 403 gpu_limit
    api_patch /v1/projects/pa '{"user_max_running": 2}' "$TOK_member"
    assert_error 403 ""
    # removed: no more submissions; the audit trail has both changes
    api_delete /v1/projects/pa/members/out "$TOK_lead"
    assert_status 200
    api_post /v1/jobs '{"project": "pa", "command": ["x"], "hold": true}' "$TOK_outsider"
    assert_error 403 project
    api_get '/v1/audit?target=pa'
    jq -e '[.entries[].action] | index("member.add") and index("member.remove")' <<<"$body"
    # the CLI speaks the same API
    DOCKET_URL=$DOCKETD_URL DOCKET_TOKEN=$TOK_lead run -0 "$DOCKET" projects members add pa view --role lead
    [[ $output == *"view is now a lead of project pa"* ]]
    DOCKET_URL=$DOCKETD_URL DOCKET_TOKEN=$TOK_lead run -0 "$DOCKET" projects members list pa
    [[ $output == *USER*ROLE* && $output == *mem*member* && $output == *view*lead* ]]
    DOCKET_URL=$DOCKETD_URL DOCKET_TOKEN=$TOK_lead run -0 "$DOCKET" projects members rm pa view
    DOCKET_URL=$DOCKETD_URL DOCKET_TOKEN=$TOK_member run -1 "$DOCKET" projects members add pa x
    run -2 "$DOCKET" projects members add pa x --role admin
}

@test "a lead sets its project's gpu_limit within its group's, never its guarantee" {
    cluster
    # pa is in no group: its limit is the admin's
    api_patch /v1/projects/pa '{"gpu_limit": 4}' "$TOK_lead"
    assert_error 403 gpu_limit
    [[ $body == *"in no group with a gpu_limit"* ]]
    cat >"$TEST_DIR/policy.yaml" <<'EOF2'
groups:
  - {name: lab, gpu_limit: 16}
projects:
  - {name: pa, group: lab}
  - {name: pb, group: lab}
EOF2
    api_file POST /v1/policy "$TEST_DIR/policy.yaml" application/yaml
    assert_status 200
    api_patch /v1/projects/pa '{"gpu_limit": 12}' "$TOK_lead"
    assert_status 200
    assert_json .project.gpu_limit 12
    api_patch /v1/projects/pa '{"gpu_limit": 17}' "$TOK_lead"
    assert_error 403 gpu_limit
    [[ $body == *"within 0..16, the gpu_limit of group 'lab'"* ]]
    api_patch /v1/projects/pa '{"gpu_limit": -1}' "$TOK_lead"
    assert_error 403 gpu_limit
    # not another project's, not the guarantee, not the group, not as a member
    api_patch /v1/projects/pb '{"gpu_limit": 4}' "$TOK_lead"
    assert_error 403 ""
    api_patch /v1/projects/pa '{"guarantee_gpus": 8}' "$TOK_lead"
    assert_error 403 guarantee_gpus
    api_patch /v1/projects/pa '{"group": ""}' "$TOK_lead"
    assert_error 403 group
    api_patch /v1/projects/pa '{"gpu_limit": 2}' "$TOK_member"
    assert_error 403 ""
    api_get /v1/projects/pa
    assert_json .project.gpu_limit 12
    # the change is audited as the lead's
    api_get '/v1/audit?target=pa'
    jq -e '[.entries[] | select(.action == "project.update" and .actor == "lee")] | length == 1' \
        <<<"$body"
}

@test "holds: a job's owner cannot release an admin's or an operator's hold" {
    cluster
    api_post "/v1/jobs/$JA/hold" '{"reason": "investigating"}' "$TOK_operator"
    assert_status 200
    api_post "/v1/jobs/$JA/release" "" "$TOK_member"
    assert_error 403 ""
    [[ $body == *"held by operator 'oper'"* ]]
    api_post "/v1/jobs/$JA/release" "" "$TOK_lead"
    assert_error 403 ""
    api_post "/v1/jobs/$JA/release" "" "$TOK_operator"
    assert_status 200
    api_post "/v1/jobs/$JA/hold" "" "$TOK_admin"
    api_post "/v1/jobs/$JA/release" "" "$TOK_operator"
    assert_error 403 ""
    # the level is kept across a restart
    docketd_stop
    docketd_start
    api_post "/v1/jobs/$JA/release" "" "$TOK_member"
    assert_error 403 ""
    api_post "/v1/jobs/$JA/release" ""
    assert_status 200
    # a hold by the owner itself is the owner's to lift
    api_post "/v1/jobs/$JA/hold" "" "$TOK_member"
    api_post "/v1/jobs/$JA/release" "" "$TOK_member"
    assert_status 200
}

@test "tokens: list, revoke, expiry, admin rotation; 401 says what to do" {
    cluster
    api_get /v1/tokens "$TOK_member"
    assert_status 200
    jq -e '[.tokens[].user] | unique == ["mem"]' <<<"$body"
    [[ $body != *dkt_* ]]
    api_get /v1/tokens
    jq -e '[.tokens[].kind] | index("node") and index("user")' <<<"$body"
    api_get '/v1/tokens?user=memb' "$TOK_member"
    assert_error 403 user
    # revoke: the token stops at once, and the 401 says so
    id=$(jq -r '.tokens[] | select(.user == "memb") | .id' <<<"$body" | head -1)
    [[ -z $id ]] && { api_get '/v1/tokens?user=memb'; id=$(jq -r '.tokens[0].id' <<<"$body"); }
    DOCKET_URL=$DOCKETD_URL DOCKET_TOKEN=$TOK_memb run -0 "$DOCKET" token revoke "$id"
    [[ $output == *"revoked token $id of memb"* ]]
    api_get /v1/jobs "$TOK_memb"
    assert_status 401
    [[ $body == *"was revoked"* && $body == *"docket token create --user memb"* ]]
    DOCKET_URL=$DOCKETD_URL DOCKET_TOKEN=$ADMIN_TOKEN run -1 "$DOCKET" token revoke "$id"
    DOCKET_URL=$DOCKETD_URL DOCKET_TOKEN=$ADMIN_TOKEN run -0 "$DOCKET" token list
    [[ $output == *ID*KIND*USER*ROLE*CREATED*EXPIRES*STATE* && $output == *revoked* ]]
    # every token expires: the default, or --expires
    api_get /v1/tokens
    jq -e '[.tokens[] | select(.kind != "node") | .expires_ms > 0] | all' <<<"$body"
    DOCKET_URL=$DOCKETD_URL DOCKET_TOKEN=$ADMIN_TOKEN run -0 --separate-stderr "$DOCKET" token create --user brief --expires 1s
    short=$output
    sleep 1.2
    api_get /v1/jobs "$short"
    assert_status 401
    [[ $body == *"expired"* ]]
    # admin rotation: printed once, written to admin.token, the old one refused
    old=$ADMIN_TOKEN
    DOCKET_URL=$DOCKETD_URL DOCKET_TOKEN=$old run -0 --separate-stderr "$DOCKET" token rotate-admin
    new=$output
    [[ $new == dkt_* && $new != "$old" ]]
    [[ $stderr == *"not shown again"* ]]
    [[ $(cat "$STATE_DIR/admin.token") == "$new" ]]
    [[ $(stat -c %a "$STATE_DIR/admin.token") == 600 ]]
    api_get /v1/nodes "$old"
    assert_status 401
    api_get /v1/nodes "$new"
    assert_status 200
    api_get '/v1/audit?action=token.rotate_admin' "$new"
    assert_json '.entries | length' 1
    run -2 "$DOCKET" token create --user x --role lead
    run -2 "$DOCKET" token revoke nothex
    # a user named like a node owns no node credential
    ADMIN_TOKEN=$new
    api_get '/v1/tokens' "$new"
    nid=$(jq -r '.tokens[] | select(.kind == "node") | .id' <<<"$body")
    api_delete "/v1/tokens/$nid" "$(api_token gpu01 member)"
    assert_error 403 ""
}

@test "audit: hash-chained; --verify finds a row changed by hand in the database" {
    cluster
    DOCKET_URL=$DOCKETD_URL DOCKET_TOKEN=$ADMIN_TOKEN run -0 "$DOCKET" audit --verify
    [[ $output == *"audit trail intact"* ]]
    api_get /v1/audit/verify
    assert_json .ok true
    n=$(jq -r .checked <<<"$body")
    [ "$n" -ge 8 ]
    # entries cut off the end leave a valid, shorter chain: a head kept from before finds it
    member pa view member
    api_get /v1/audit/verify
    head=$(jq -r .head <<<"$body")
    DOCKET_URL=$DOCKETD_URL DOCKET_TOKEN=$ADMIN_TOKEN run -0 "$DOCKET" audit --verify --head "$head"
    docketd_stop
    sqlite3 "$STATE_DIR/docket.db" "DROP TRIGGER audit_no_delete;
        DELETE FROM audit WHERE id = (SELECT max(id) FROM audit);"
    docketd_start
    api_get /v1/audit/verify
    assert_json .ok true
    api_get "/v1/audit/verify?head=$head"
    assert_json .ok false
    assert_json .head_found false
    DOCKET_URL=$DOCKETD_URL DOCKET_TOKEN=$ADMIN_TOKEN run -1 "$DOCKET" audit --verify --head "$head"
    [[ $output == *"audit trail CUT"* ]]
    api_get "/v1/audit/verify?head=xyz"
    assert_error 400 head
    # edit one entry by hand (the triggers refuse; whoever has the file can drop them)
    docketd_stop
    orig=$(sqlite3 "$STATE_DIR/docket.db" "SELECT actor FROM audit WHERE id = 4")
    sqlite3 "$STATE_DIR/docket.db" "DROP TRIGGER audit_no_update;
        UPDATE audit SET actor = 'nobody' WHERE id = 4;"
    docketd_start
    api_get /v1/audit/verify
    assert_status 200
    assert_json .ok false
    assert_json .first_bad.id 4
    DOCKET_URL=$DOCKETD_URL DOCKET_TOKEN=$ADMIN_TOKEN run -1 "$DOCKET" audit --verify
    [[ $output == *"BROKEN at entry 4"* ]]
    # and one removed
    docketd_stop
    sqlite3 "$STATE_DIR/docket.db" "UPDATE audit SET actor = '$orig' WHERE id = 4;
        DELETE FROM audit WHERE id = 6;"
    docketd_start
    api_get /v1/audit/verify
    assert_json .first_bad.id 7
}

@test "docs/api.md's route table is docketd's: every route with its permission" {
    local doc
    doc=$(sed -n '/<!-- route table/,/<!-- end of route table/p' \
        "$BATS_TEST_DIRNAME/../../docs/api.md" | grep '^| `' |
        sed -E 's/^\| `([A-Z]+)` \| `([^`]+)` \| (.*) \|$/\1 \2 \3/; s/\\\|/|/g')
    run -0 "$DOCKETD" --routes
    if [[ $output != "$doc" ]]; then
        diff <(echo "$output") <(echo "$doc") >&2
        return 1
    fi
}

@test "job signal (scancel --signal): allowed to whom may cancel; only a running job takes it" {
    cluster
    # per role (ROLES order): on JA (own project) / JB (another); 409: allowed, but the
    # job is pending (the role check comes first, then the body, then the state)
    local want=(409/409 409/409 403/403 409/403 409/403 403/403 403/403 401/401) i=0 failures=0
    for role in "${ROLES[@]}"; do
        tokvar=TOK_$role
        got=""
        for job in "$JA" "$JB"; do
            api_post "/v1/jobs/$job/signal" '{"signal": 10, "to": "steps"}' "${!tokvar}"
            got+="${got:+/}$status_code"
        done
        [[ $got == "${want[$i]}" ]] || { echo "$role: $got, wanted ${want[$i]}" >&2; failures=$((failures + 1)); }
        i=$((i + 1))
    done
    [ "$failures" -eq 0 ]
    api_post "/v1/jobs/$JA/signal" '{"signal": 99}'
    assert_error 400 signal
    api_post "/v1/jobs/$JA/signal" '{"signal": 10, "to": "everyone"}'
    assert_error 400 to
    api_post "/v1/jobs/$JA/signal" '{"signal": 10, "colour": "red"}'
    assert_status 400
}
