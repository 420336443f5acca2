#!/usr/bin/env bats
# tls.bats - docketd's HTTPS listener (docs/security.md "Network observer"): the
# self-signed certificate it makes at first start (key 0600, its fingerprint logged and
# handed over with join tokens), the CLI over https:// with a pinned key or a CA file,
# docket-node over TLS running a job, and the refusals: a wrong fingerprint (CLI and
# agent), plain HTTP to the TLS port, plain HTTP off loopback (docketd and agent).
# Real binaries on 127.0.0.1; every process started here is stopped by pid.

bats_require_minimum_version 1.5.0

load lib/common

DOCKET=$DOCKET_BUILD/src/cli/docket
AGENT_BIN=$DOCKET_BUILD/src/agent/docket-node
WRONG=sha256:$(printf 'ab%.0s' {1..32})

# Start docketd with TLS on loopback (port $PORT_WANTED, default any); DOCKETD_URL is
# https://, FPR its logged fingerprint.
tls_start() {
    rm -f "$STATE_DIR/docketd.port"
    "$DOCKETD" --state-dir "$STATE_DIR" --listen "127.0.0.1:${PORT_WANTED:-0}" --socket - --tls on \
        --heartbeat-wait 2s "$@" >>"$TEST_DIR/docketd.log" 2>&1 &
    DOCKETD_PID=$!
    docket_track_pid "$DOCKETD_PID"
    wait_for 20 test -s "$STATE_DIR/docketd.port"
    DOCKETD_PORT=$(cat "$STATE_DIR/docketd.port")
    DOCKETD_URL=https://127.0.0.1:$DOCKETD_PORT
    wait_for 20 curl -skf -o /dev/null "$DOCKETD_URL/healthz"
    ADMIN_TOKEN=$(cat "$STATE_DIR/admin.token")
    FPR=$(grep -o 'event=tls_ready.*fingerprint=sha256:[0-9a-f]*' "$TEST_DIR/docketd.log" |
        tail -n 1 | sed 's/.*fingerprint=//')
    [[ $FPR =~ ^sha256:[0-9a-f]{64}$ ]]
}

# The SHA-256 of the certificate's public key, as openssl computes it.
openssl_pin() {
    echo "sha256:$(openssl x509 -in "$1" -pubkey -noout | openssl pkey -pubin -outform der |
        sha256sum | cut -d' ' -f1)"
}

setup() {
    docket_setup
    export ASAN_OPTIONS
    unset DOCKET_URL DOCKET_TOKEN DOCKET_CA DOCKET_FINGERPRINT DOCKET_CONTROLLER_FINGERPRINT
}

teardown() {
    docket_teardown
}

@test "first start makes a self-signed key (0600) whose fingerprint is logged and given with join tokens" {
    tls_start
    [[ $(stat -c %a "$STATE_DIR/tls.key") == 600 ]]
    [[ -s $STATE_DIR/tls.crt ]]
    [[ $(openssl_pin "$STATE_DIR/tls.crt") == "$FPR" ]]
    # the server presents that certificate
    openssl s_client -connect "127.0.0.1:$DOCKETD_PORT" </dev/null 2>/dev/null |
        openssl x509 -pubkey -noout >"$TEST_DIR/served.pub"
    [[ "sha256:$(openssl pkey -pubin -in "$TEST_DIR/served.pub" -outform der | sha256sum | cut -d' ' -f1)" == "$FPR" ]]
    status_code=$(curl -sk -o "$TEST_DIR/body" -w '%{http_code}' -X POST \
        -H "Authorization: Bearer $ADMIN_TOKEN" "$DOCKETD_URL/v1/join-tokens" -d '{}')
    body=$(cat "$TEST_DIR/body")
    assert_status 201
    assert_json .controller_fingerprint "$FPR"
    # `docket token join`: the token on stdout, the fingerprint on stderr
    run --separate-stderr env DOCKET_URL="$DOCKETD_URL" DOCKET_TOKEN="$ADMIN_TOKEN" \
        DOCKET_FINGERPRINT="$FPR" "$DOCKET" token join
    [[ $status -eq 0 && $output == dkj_* ]]
    [[ $stderr == *"controller fingerprint: $FPR"* ]]
    # a restart keeps the key
    docketd_stop
    tls_start
    [[ $(grep -c tls_certificate_made "$TEST_DIR/docketd.log") -eq 1 ]]
    [[ $(openssl_pin "$STATE_DIR/tls.crt") == "$FPR" ]]
}

@test "plain HTTP to the TLS port gets no answer" {
    tls_start
    run curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$DOCKETD_PORT/healthz"
    [[ $status -ne 0 ]]
    [[ $output == 000 ]]
    run curl -sk -o /dev/null -w '%{http_code}' "$DOCKETD_URL/healthz"
    [[ $output == 200 ]]
}

@test "the web console is served over TLS too, with its headers" {
    tls_start
    run -0 curl -sk -D - -o /dev/null "$DOCKETD_URL/"
    [[ $output == *"HTTP/1.1 200"* && $output == *"Content-Security-Policy: default-src 'none'"* ]]
    run -0 curl -sk -o /dev/null -w '%{http_code}' "$DOCKETD_URL/console/index.html"
    [[ $output == 200 ]]
}

@test "the CLI over https:// with a pinned key or a CA file: submit and queue" {
    tls_start
    export DOCKET_URL=$DOCKETD_URL DOCKET_TOKEN=$ADMIN_TOKEN
    # a node that never runs anything, so the job can be placed (it stays PENDING/STARTING)
    local jt
    jt=$(curl -sk -X POST -H "Authorization: Bearer $ADMIN_TOKEN" "$DOCKETD_URL/v1/join-tokens" \
        -d '{}' | jq -r .join_token)
    curl -skf -o /dev/null -X POST "$DOCKETD_URL/v1/agent/register" -d "{\"join_token\": \"$jt\",
        \"agent_version\": \"test\", \"node\": {\"name\": \"f1\", \"gpu_type\": \"\", \"gpus\": 0,
        \"gpu_mem_mb\": 0, \"cpus\": 4, \"mem_mb\": 4096}}"
    run "$DOCKET" --fingerprint "$FPR" submit -p default -c 1 --time 5m -- true
    echo "$output"
    [[ $status -eq 0 ]]
    [[ $output == "submitted job 1 "* ]]
    run env DOCKET_FINGERPRINT="$FPR" "$DOCKET" queue --json
    [[ $status -eq 0 ]]
    [[ $(jq -r '.jobs[0].id' <<<"$output") == 1 ]]
    # the certificate names 127.0.0.1 and localhost: it checks as its own CA
    run env DOCKET_CA="$STATE_DIR/tls.crt" "$DOCKET" queue
    [[ $status -eq 0 ]]
    run "$DOCKET" --url "https://localhost:$DOCKETD_PORT" --ca "$STATE_DIR/tls.crt" queue
    [[ $status -eq 0 ]]
}

@test "the CLI refuses a controller whose key is not the pinned one, or that it cannot verify" {
    tls_start
    export DOCKET_URL=$DOCKETD_URL DOCKET_TOKEN=$ADMIN_TOKEN
    run "$DOCKET" --fingerprint "$WRONG" submit -p default -c 1 --time 5m -- true
    [[ $status -eq 1 ]]
    [[ $output == *"is not the one pinned"*"nothing was sent"* ]]
    run "$DOCKET" queue --json
    [[ $status -eq 1 ]]
    [[ $output == *"cannot verify docketd's certificate"*"--fingerprint"* ]]
    run "$DOCKET" --fingerprint nonsense queue
    [[ $status -ne 0 ]]
    [[ $output == *"bad fingerprint"* ]]
    # nothing reached docketd
    run env DOCKET_FINGERPRINT="$FPR" "$DOCKET" queue --json
    [[ $(jq '.jobs | length' <<<"$output") == 0 ]]
}

# agent_start NAME [TRUST FLAGS...]: docket-node over https:// (no cgroups).
agent_start() {
    local name=$1 jt
    shift
    jt=$(curl -sk -X POST -H "Authorization: Bearer $ADMIN_TOKEN" "$DOCKETD_URL/v1/join-tokens" \
        -d '{}' | jq -r .join_token)
    DOCKET_JOIN_TOKEN=$jt "$AGENT_BIN" --controller "$DOCKETD_URL" "$@" --name "$name" \
        --gpus 0 --cpus 2 --mem 2G --no-cgroups --allow-root-jobs \
        --state-dir "$TEST_DIR/agent-$name" --log-file "$TEST_DIR/agent-$name.log" \
        2>>"$TEST_DIR/agent-$name.err" &
    AGENT_PID=$!
    docket_track_pid $!
}

node_state() { # NAME
    curl -sk -H "Authorization: Bearer $ADMIN_TOKEN" "$DOCKETD_URL/v1/nodes/$1" | jq -r '.node.state // ""'
}
node_up() { [[ $(node_state "$1") == UP ]]; }

job_state() {
    curl -sk -H "Authorization: Bearer $ADMIN_TOKEN" "$DOCKETD_URL/v1/jobs/$1" | jq -r .job.state
}
job_done() { [[ $(job_state "$1") == COMPLETED ]]; }

@test "an agent over TLS with the pinned fingerprint registers and runs a job" {
    tls_start
    agent_start tn1 --controller-fingerprint "$FPR"
    wait_for 20 node_up tn1
    grep -q 'trust=pinned fingerprint' "$TEST_DIR/agent-tn1.log"
    mkdir -p "$TEST_DIR/w" && chmod 0777 "$TEST_DIR/w"
    local me
    me=$(id -un)
    export DOCKET_URL=$DOCKETD_URL DOCKET_FINGERPRINT=$FPR
    DOCKET_TOKEN=$("$DOCKET" --token "$ADMIN_TOKEN" token create --user "$me" 2>/dev/null)
    "$DOCKET" --token "$ADMIN_TOKEN" projects members add default "$me" >/dev/null
    export DOCKET_TOKEN
    run "$DOCKET" submit -p default -c 1 --time 5m --workdir "$TEST_DIR/w" -- \
        sh -c "echo over-tls >$TEST_DIR/w/proof"
    [[ $status -eq 0 ]]
    wait_for 30 job_done 1
    [[ $(cat "$TEST_DIR/w/proof") == over-tls ]]
    # a CA file instead of a pin works too
    agent_start tn2 --controller-ca "$STATE_DIR/tls.crt"
    wait_for 20 node_up tn2
}

@test "an interactive session over TLS: the CLI's and the agent's upgraded connections" {
    tls_start
    agent_start tn1 --controller-fingerprint "$FPR"
    wait_for 20 node_up tn1
    local me
    me=$(id -un)
    export DOCKET_URL=$DOCKETD_URL DOCKET_FINGERPRINT=$FPR
    DOCKET_TOKEN=$("$DOCKET" --token "$ADMIN_TOKEN" token create --user "$me" 2>/dev/null)
    "$DOCKET" --token "$ADMIN_TOKEN" projects members add default "$me" >/dev/null
    export DOCKET_TOKEN
    run python3 "$BATS_TEST_DIRNAME/lib/pty_drive.py" \
        '[{"expect": "session [0-9]+ on"}, {"send": "echo tls-$((20+1))\r"}, {"expect": "tls-21"}, {"send": "exit 9\r"}]' \
        "$DOCKET" shell -p default -c 1 -- /bin/sh
    [[ $status == 9 && $output == *tls-21* ]] || { echo "status $status: $output"; false; }
    # a wrong pin: nothing is sent, the session is not reached
    run env DOCKET_FINGERPRINT="$WRONG" "$DOCKET" attach 1
    [[ $status -ne 0 && $output != *tls-21* ]]
}

@test "an agent refuses a controller with another key, and says why" {
    tls_start
    agent_start tbad --controller-fingerprint "$WRONG"
    wait_for 20 grep -q controller_fingerprint_mismatch "$TEST_DIR/agent-tbad.log"
    grep controller_fingerprint_mismatch "$TEST_DIR/agent-tbad.log" | head -n 1 |
        grep -q "presented=$FPR"
    # without a pin or a CA, the self-signed certificate fails the system's CAs
    agent_start tnone
    wait_for 20 grep -q controller_certificate_refused "$TEST_DIR/agent-tnone.log"
    sleep 0.5
    [[ -z $(node_state tbad) && -z $(node_state tnone) ]]
}

@test "plain HTTP off loopback is refused at start, by docketd and by the agent" {
    run timeout 10 "$DOCKETD" --state-dir "$TEST_DIR/s2" --listen 0.0.0.0:0 --socket - --tls off
    [[ $status -eq 1 ]]
    [[ $output == *"refusing plain HTTP on '0.0.0.0:0'"*"not a loopback address"* ]]
    [[ ! -e $TEST_DIR/s2/docket.db ]]
    run timeout 10 "$AGENT_BIN" --controller http://192.0.2.1:8420 --join-token dkj_x \
        --name x --gpus 0 --state-dir "$TEST_DIR/ax" --no-cgroups
    [[ $status -ne 0 ]]
    [[ $output == *"refusing http:// to '192.0.2.1'"* ]]
    # tls: auto on a non-loopback address turns TLS on by itself
    "$DOCKETD" --state-dir "$TEST_DIR/s3" --listen 0.0.0.0:0 --socket - >"$TEST_DIR/s3.log" 2>&1 &
    docket_track_pid $!
    wait_for 20 test -s "$TEST_DIR/s3/docketd.port"
    grep -q 'tls=on' "$TEST_DIR/s3.log"
    [[ $(stat -c %a "$TEST_DIR/s3/tls.key") == 600 ]]
}

@test "a TLS key others can read is refused" {
    tls_start
    docketd_stop
    chmod 0644 "$STATE_DIR/tls.key"
    run timeout 10 "$DOCKETD" --state-dir "$STATE_DIR" --listen 127.0.0.1:0 --socket - --tls on
    [[ $status -eq 1 ]]
    [[ $output == *"tls.key' is readable by others"*"chmod 600"* ]]
}

@test "an agent over TLS comes back after docketd restarts (fresh TLS connections)" {
    tls_start
    agent_start tr1 --controller-fingerprint "$FPR"
    wait_for 20 node_up tr1
    docketd_stop
    PORT_WANTED=$DOCKETD_PORT tls_start
    mkdir -p "$TEST_DIR/w" && chmod 0777 "$TEST_DIR/w"
    wait_for 30 node_up tr1
    export DOCKET_URL=$DOCKETD_URL DOCKET_FINGERPRINT=$FPR
    DOCKET_TOKEN=$("$DOCKET" --token "$ADMIN_TOKEN" token create --user "$(id -un)" 2>/dev/null)
    "$DOCKET" --token "$ADMIN_TOKEN" projects members add default "$(id -un)" >/dev/null
    export DOCKET_TOKEN
    run "$DOCKET" submit -p default -c 1 --time 5m --json --workdir "$TEST_DIR/w" -- \
        sh -c "echo after-restart >$TEST_DIR/w/proof"
    [[ $status -eq 0 ]]
    wait_for 30 job_done "$(jq -r .job.id <<<"$output")"
    [[ $(cat "$TEST_DIR/w/proof") == after-restart ]]
    ! grep -q controller_fingerprint_mismatch "$TEST_DIR/agent-tr1.log" || false
}

@test "a configured certificate from a CA: the CLI and an agent check it against that CA" {
    local d=$TEST_DIR/pki
    mkdir -p "$d"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj /CN=test-ca -keyout "$d/ca.key" -out "$d/ca.crt" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=docketd \
        -keyout "$d/srv.key" -out "$d/srv.csr" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$d/ext"
    openssl x509 -req -in "$d/srv.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial \
        -days 2 -extfile "$d/ext" -out "$d/srv.crt" 2>/dev/null
    chmod 0600 "$d/srv.key"
    tls_start --tls-cert "$d/srv.crt" --tls-key "$d/srv.key"
    [[ $FPR == $(openssl_pin "$d/srv.crt") ]]
    [[ ! -e $STATE_DIR/tls.key ]]
    grep -q 'self_signed=no' "$TEST_DIR/docketd.log"
    export DOCKET_URL=$DOCKETD_URL DOCKET_TOKEN=$ADMIN_TOKEN
    run "$DOCKET" --ca "$d/ca.crt" queue
    [[ $status -eq 0 ]]
    run "$DOCKET" --url "https://localhost:$DOCKETD_PORT" --ca "$d/ca.crt" queue
    [[ $status -eq 0 ]]
    # another CA does not vouch for it: refused, by the CLI and by an agent
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj /CN=other-ca -keyout "$d/other.key" -out "$d/other.crt" 2>/dev/null
    run "$DOCKET" --ca "$d/other.crt" queue
    [[ $status -eq 1 && $output == *"cannot verify docketd's certificate"* ]]
    agent_start tother --controller-ca "$d/other.crt"
    wait_for 20 grep -q controller_certificate_refused "$TEST_DIR/agent-tother.log"
    agent_start tca --controller-ca "$d/ca.crt"
    wait_for 20 node_up tca
    grep -q "trust=$d/ca.crt" "$TEST_DIR/agent-tca.log"
    # a key everyone may read is refused
    docketd_stop
    chmod 0604 "$d/srv.key"
    run timeout 10 "$DOCKETD" --state-dir "$STATE_DIR" --listen 127.0.0.1:0 --socket - \
        --tls-cert "$d/srv.crt" --tls-key "$d/srv.key"
    [[ $status -eq 1 && $output == *"is readable by everyone"* ]]
}

@test "TLS connections count toward max_connections: past the cap the oldest unproven one is closed, counted" {
    tls_start --max-connections 3 --reserved-connections 1
    # three connections that never even start their handshake fill the cap (the third
    # already closes the first: unproven ones hold at most 3 - 1)
    exec 5<>"/dev/tcp/127.0.0.1/$DOCKETD_PORT" 6<>"/dev/tcp/127.0.0.1/$DOCKETD_PORT" \
        7<>"/dev/tcp/127.0.0.1/$DOCKETD_PORT"
    # a token holder over TLS takes the slot of the oldest (the connection budget,
    # seams_budget.bats; retried: one accepted in the same loop turn as the three is
    # refused instead, as none of them has had its turn yet)
    shed_seen() {
        run curl -sk --max-time 5 -H "Authorization: Bearer $ADMIN_TOKEN" "$DOCKETD_URL/metrics"
        [[ $status == 0 ]] &&
            [[ $(awk '$1 == "docket_connections_shed_total" { print $2 }' <<<"$output") -gt 0 ]]
    }
    wait_for 60 shed_seen
    exec 5>&- 6>&- 7>&-
    wait_for 5 curl -skf -o /dev/null "$DOCKETD_URL/healthz"
}

# served_pin: the public-key pin of the certificate docketd serves to a new connection.
served_pin() {
    echo | openssl s_client -connect "127.0.0.1:$DOCKETD_PORT" 2>/dev/null |
        openssl x509 -pubkey -noout | openssl pkey -pubin -outform der | sha256sum |
        sed 's/ .*//; s/^/sha256:/'
}

# ca_cert DIR NAME: a key (unless DIR/NAME.key exists) and a certificate for it from DIR/ca.
ca_cert() {
    local d=$1 n=$2
    [[ -e $d/$n.key ]] || openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
        -out "$d/$n.key" 2>/dev/null
    chmod 0600 "$d/$n.key"
    openssl req -new -key "$d/$n.key" -subj /CN=docketd -out "$d/$n.csr" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$d/ext"
    openssl x509 -req -in "$d/$n.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial \
        -days 2 -extfile "$d/ext" -out "$d/$n.crt" 2>/dev/null
}

run_job() { # TAG: a job writing TAG, run to completion
    run "$DOCKET" submit -p default -c 1 --time 5m --json --workdir "$TEST_DIR/w" -- \
        sh -c "echo $1 >$TEST_DIR/w/proof"
    [[ $status -eq 0 ]]
    wait_for 30 job_done "$(jq -r .job.id <<<"$output")"
    [[ $(cat "$TEST_DIR/w/proof") == "$1" ]]
}

@test "certificate rotation on SIGHUP, no restart: renewed (same key) and replaced (new key), agents keep working" {
    local d=$TEST_DIR/pki
    mkdir -p "$d" "$TEST_DIR/w" && chmod 0777 "$TEST_DIR/w"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj /CN=test-ca -keyout "$d/ca.key" -out "$d/ca.crt" 2>/dev/null
    ca_cert "$d" srv
    cp "$d/srv.key" "$d/live.key" && cp "$d/srv.crt" "$d/live.crt"
    tls_start --tls-cert "$d/live.crt" --tls-key "$d/live.key"
    local fpr1=$FPR pid=$DOCKETD_PID
    agent_start tpin --controller-fingerprint "$fpr1"
    local pin_pid=$AGENT_PID
    agent_start tca --controller-ca "$d/ca.crt"
    local ca_pid=$AGENT_PID
    wait_for 20 node_up tpin
    wait_for 20 node_up tca
    export DOCKET_URL=$DOCKETD_URL DOCKET_CA=$d/ca.crt
    DOCKET_TOKEN=$("$DOCKET" --token "$ADMIN_TOKEN" token create --user "$(id -un)" 2>/dev/null)
    "$DOCKET" --token "$ADMIN_TOKEN" projects members add default "$(id -un)" >/dev/null
    export DOCKET_TOKEN
    # 1. renewed: a new certificate for the same key; the pin does not change
    local serial1
    serial1=$(openssl x509 -in "$d/live.crt" -noout -serial)
    ca_cert "$d" srv
    [[ $(openssl x509 -in "$d/srv.crt" -noout -serial) != "$serial1" ]]
    cp "$d/srv.crt" "$d/live.crt"
    kill -HUP "$pid"
    wait_for 10 grep -q 'event=tls_reloaded' "$TEST_DIR/docketd.log"
    [[ $(echo | openssl s_client -connect "127.0.0.1:$DOCKETD_PORT" 2>/dev/null |
        openssl x509 -noout -serial) != "$serial1" ]]
    [[ $(served_pin) == "$fpr1" ]]
    run_job renewed
    # the pinned agent, restarted (fresh TLS connections), still trusts it
    docket_stop_pid "$pin_pid"
    agent_start tpin --controller-fingerprint "$fpr1"
    pin_pid=$AGENT_PID
    wait_for 20 node_up tpin
    # 2. replaced: a new key and certificate from the same CA; a broken pair first is
    # refused and the old one stays served
    ca_cert "$d" srv2
    cp "$d/srv2.crt" "$d/live.crt" # (the key does not match it yet)
    kill -HUP "$pid"
    wait_for 10 grep -q 'event=tls_reload_failed' "$TEST_DIR/docketd.log"
    [[ $(served_pin) == "$fpr1" ]]
    cp "$d/srv2.key" "$d/live.key"
    kill -HUP "$pid"
    local fpr2
    fpr2=$(openssl_pin "$d/srv2.crt")
    wait_for 10 grep -q "event=tls_reloaded fingerprint=$fpr2" "$TEST_DIR/docketd.log"
    [[ $(served_pin) == "$fpr2" && $fpr2 != "$fpr1" ]]
    # the CA agent, restarted, trusts the new key at once
    docket_stop_pid "$ca_pid"
    agent_start tca --controller-ca "$d/ca.crt"
    wait_for 20 node_up tca
    "$DOCKET" --token "$ADMIN_TOKEN" nodes drain tpin >/dev/null
    run_job replaced-ca
    # the agent pinned to the old key refuses the new one (it must be given the new pin,
    # docs/security.md), and with it works again
    docket_stop_pid "$pin_pid"
    agent_start tpin --controller-fingerprint "$fpr1"
    wait_for 20 grep -q controller_fingerprint_mismatch "$TEST_DIR/agent-tpin.log"
    docket_stop_pid "$AGENT_PID"
    agent_start tpin --controller-fingerprint "$fpr2"
    "$DOCKET" --token "$ADMIN_TOKEN" nodes resume tpin >/dev/null
    "$DOCKET" --token "$ADMIN_TOKEN" nodes drain tca >/dev/null
    wait_for 20 node_up tpin
    run_job replaced-pin
    [[ $DOCKETD_PID == "$pid" ]] && kill -0 "$pid" # never restarted
}
