#!/usr/bin/env bats
# standby.bats - active and standby on PostgreSQL (issue 32; docs/operations.md "Active and
# standby"): two docketd on one database, one leads, the other answers 503 with where the
# leader is; the leader is killed (-9) while submissions pour in through the CLI's list of
# both; the standby takes over: every submission is acknowledged (a cut one is sent again
# with its Idempotency-Key), is there, none twice, and it serves; a job running through it on an agent that knows both controllers runs once,
# to its end. HAProxy in front of both (docs/operations.md: the console's and other
# clients' one address) reaches whoever leads, before and after. A SQLite docketd has no
# standby.

bats_require_minimum_version 1.5.0

CLUSTER_NAME=ha
load lib/cluster

setup_file() {
    [[ -x $DOCKET && -x $DOCKETD_BIN && -x $AGENT_BIN ]] || skip "docket, docketd or docket-node not built"
    export DOCKET_TEST_PG=1
    cluster_start
    # the standby: its own state directory with the leader's secrets key (docs/operations.md)
    mkdir -p "$T/ctl2"
    cp "$T/ctl/secrets.key" "$T/ctl2/"
    "$DOCKETD_BIN" --state-dir "$T/ctl2" --listen 127.0.0.1:0 --socket "$T/ctl2/docketd.sock" \
        --db "$(cat "$T/pg.dsn")" --log-file "$T/ctl2.log" &
    echo $! >"$T/ctl2.pid"
    wait_for 20 test -s "$T/ctl2/docketd.port"
    export PORT2
    PORT2=$(cat "$T/ctl2/docketd.port")
    # an agent that knows both controllers (the cluster's two know the first only)
    "$AGENT_BIN" --controller "http://127.0.0.1:$PORT,http://127.0.0.1:$PORT2" \
        --join-token "$("$DOCKET" token join)" --name "$PREFIX-c" --gpus 8xH100-80GB --cpus 16 \
        --mem 64G --label zone=c --state-dir "$T/agent-c" --allow-root-jobs --log-file "$T/agent-c.log" &
    echo $! >"$T/agent-c.pid"
    wait_for 30 nodes_up 3
    haproxy_start
}

# HAProxy in front of both, as docs/operations.md "Active and standby" shows: a standby's
# 503 on /healthz keeps it out of the pool. HA_URL is its one address.
haproxy_start() {
    local port
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    printf '%s\n' defaults '    mode http' '    timeout connect 2s' '    timeout client 30s' \
        '    timeout server 30s' 'frontend docket' "    bind 127.0.0.1:$port" \
        '    default_backend docketd' 'backend docketd' '    option httpchk GET /healthz' \
        '    http-check expect status 200' \
        "    server ctl1 127.0.0.1:$PORT check inter 200ms fall 1 rise 1" \
        "    server ctl2 127.0.0.1:$PORT2 check inter 200ms fall 1 rise 1" >"$T/haproxy.cfg"
    haproxy -db -f "$T/haproxy.cfg" >"$T/haproxy.log" 2>&1 &
    echo $! >"$T/haproxy.pid"
    export HA_URL=http://127.0.0.1:$port
}

# through HAProxy: the API with the CLI, and the console's page
through_haproxy() {
    DOCKET_URL=$HA_URL DOCKET_TOKEN=$TOKEN "$DOCKET" nodes --json >/dev/null &&
        [ "$(curl -s -o /dev/null -w '%{http_code}' "$HA_URL/")" = 200 ]
}

teardown_file() {
    kill_pidfile "$T/haproxy.pid"
    kill_pidfile "$T/agent-c.pid"
    kill_pidfile "$T/ctl2.pid"
    cluster_stop
}

@test "a standby answers 503 with where the leader is; the CLI's list passes it over" {
    wait_for 20 grep -q "event=standby leader=http://127.0.0.1:$PORT " "$T/ctl2.log"
    run -0 curl -s -D "$T/h" "http://127.0.0.1:$PORT2/healthz"
    jq -e --arg u "http://127.0.0.1:$PORT" '.error.code == "standby" and .leader == $u' <<<"$output"
    grep -qi "^x-docket-leader: http://127.0.0.1:$PORT" "$T/h"
    grep -q "^HTTP/1.1 503" "$T/h"
    # the standby first in the list: the CLI moves on to the leader
    DOCKET_URL="http://127.0.0.1:$PORT2,http://127.0.0.1:$PORT" DOCKET_TOKEN=$TOKEN \
        run -0 "$DOCKET" nodes --json
    jq -e '.nodes | length == 3' <<<"$output"
    # the standby and a controller that cannot be reached (one being replaced): no leader,
    # and that is what is said, whichever of the two was tried last
    dead=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    DOCKET_URL="http://127.0.0.1:$PORT2,http://127.0.0.1:$dead" DOCKET_TOKEN=$TOKEN \
        run -1 "$DOCKET" nodes
    [[ $output == *"is a standby and no other controller leads"* ]]
}

@test "HAProxy in front of the pair sends the API and the console to the leader" {
    wait_for 30 through_haproxy
    for i in 1 2 3 4 5 6; do through_haproxy; done # never to the standby
    run -0 curl -s "$HA_URL/healthz"
    [[ $output != *standby* ]]
}

@test "kill -9 of the leader under a stream of submissions: the standby serves, nothing lost or doubled" {
    export DOCKET_URL="http://127.0.0.1:$PORT,http://127.0.0.1:$PORT2" DOCKET_TOKEN=$TOKEN
    # a job that runs through the takeover, on the agent that follows it
    # (submitted over the leader's socket: as root, a user the node has)
    run_id=$(DOCKET_URL=unix:$T/ctl/docketd.sock DOCKET_TOKEN='' "$DOCKET" submit --parsable \
        --select zone=c -- sh -c 'sleep 12; echo through')
    wait_for 60 state_in "$run_id" RUNNING || { "$DOCKET" explain "$run_id" >&2; "$DOCKET" nodes >&2; false; }
    # four CLI loops: each submission carries an Idempotency-Key of its own, and one cut
    # by the kill is sent again with it to the new leader (docs/api.md "Retrying a
    # submission"), so every one is acknowledged, and stored once
    : >"$T/acked"
    : >"$T/failed"
    feeders=()
    for w in 1 2 3 4; do
        (for i in $(seq 1 100); do
            if id=$("$DOCKET" submit --parsable --hold --name "ha-$w-$i" -- true 2>>"$T/err-$w"); then
                echo "$w-$i $id" >>"$T/acked"
            else
                echo "$w-$i" >>"$T/failed"
            fi
        done) &
        feeders+=($!)
    done
    wait_for 60 bash -c "[[ \$(wc -l <$T/acked) -ge 50 ]]"
    killed_ms=$(date +%s%3N)
    kill -9 "$(cat "$T/ctl.pid")"
    wait "${feeders[@]}"
    # the standby took over and loaded the state
    wait_for 60 grep -q "event=leading" "$T/ctl2.log"
    # no CLI saw an outcome it could not settle: all 400 acknowledged
    [[ ! -s $T/failed ]] || { cat "$T/failed" "$T"/err-* >&2; false; }
    ! grep -q "outcome is unknown" "$T"/err-*
    [[ $(wc -l <"$T/acked") == 400 ]]
    # every acknowledged submission is there, under its name, once
    "$DOCKET" queue --json -n 100000 >"$T/q.json"
    # (one jq over the whole list: a jq per submission took seconds)
    jq -r --rawfile acked "$T/acked" '
        (reduce (.jobs[] | select(.name | startswith("ha-"))) as $j ({};
            .[$j.name] += [$j.id])) as $by_name
        | $acked | split("\n")[] | select(length > 0) | split(" ") | . as [$i, $id]
        | select($by_name["ha-" + $i] != [($id | tonumber)])
        | "submission \($i) (job \($id)) lost or doubled"' "$T/q.json" >"$T/lost"
    [[ ! -s $T/lost ]] || { cat "$T/lost" >&2; false; }
    # and nothing else of the loops was stored: 400 names, 400 jobs
    jq -e '[.jobs[] | select(.name | startswith("ha-"))] | length == 400' "$T/q.json"
    # and it serves: a new submission, through the same list
    run -0 "$DOCKET" submit --parsable --hold --name after -- true
    # the agent with both URLs moved on to the new leader, whose heartbeats it answers
    heard_since() {
        "$DOCKET" nodes "$PREFIX-c" --json |
            jq -e --argjson t "$killed_ms" '.node.last_heartbeat_ms > $t' >/dev/null
    }
    wait_for 60 heard_since
    grep -q "event=controller_next host=127.0.0.1 port=$PORT2" "$T/agent-c.log"
    # the job ran on through it: once, to its end, its end reported to the new leader
    wait_for 60 state_in "$run_id" COMPLETED FAILED NODE_FAIL PENDING
    run -0 "$DOCKET" show "$run_id" --json
    jq -e '.job.state == "COMPLETED" and .job.exit.code == 0' <<<"$output" || { jq -c "{s: .job.state, e: .job.exit, ev: [.events[] | [.type, .from, .to, .node, .reason, .detail]]}" <<<"$output" >&2; false; }
    jq -e '[.events[] | select(.type == "start")] | length == 1' <<<"$output"
    # its output all in (-f: to the last byte; a plain read may come before the last chunk)
    [[ $(timeout 60 "$DOCKET" logs -f "$run_id") == through ]]
}

@test "after the takeover HAProxy sends the API and the console to the new leader" {
    wait_for 30 through_haproxy
    DOCKET_URL=$HA_URL DOCKET_TOKEN=$TOKEN run -0 "$DOCKET" submit --parsable --hold --name via-haproxy -- true
}
