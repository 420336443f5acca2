#!/usr/bin/env bats
# services.bats - services that stay up (docs/services.md) on a real docketd and two real
# agents: a service's replicas are jobs of class service kept at the desired count; a
# replica killed with kill -9 is restarted after its backoff, one that keeps failing shows
# crash-loop, scaling and removal cancel replicas, and a restart of docketd keeps it all.

bats_require_minimum_version 1.5.0

CLUSTER_NAME=svc
load lib/cluster
AGENT_EXTRA=()

setup_file() {
    [[ -x $DOCKET && -x $DOCKETD_BIN && -x $AGENT_BIN ]] || skip "docket, docketd or docket-node not built"
    cluster_start
    "$DOCKET" apply -f "$BATS_TEST_DIRNAME/../data/services-policy.yaml" >/dev/null
}

teardown_file() {
    cluster_stop
}

setup() {
    cd "$W"
}

# spec NAME REPLICAS COMMAND [RESTART]: a service spec file, its path printed.
spec() {
    local f=$T/$1.json
    jq -n --arg n "$1" --argjson r "$2" --arg cmd "$3" --argjson restart "${4:-{\}}" \
        '{name: $n, project: "web", replicas: $r, restart: $restart,
          job: {command: ["sh", "-c", $cmd], cpus: 1}}' >"$f"
    echo "$f"
}

svc() { # NAME: the service object
    "$DOCKET" services show "$1" --json | jq -c .service
}

ready_is() { # NAME N
    [[ $(svc "$1" | jq .ready) == "$2" ]]
}

@test "a 2-replica service: replicas run as jobs of class service; kill -9 of one restarts it" {
    f=$(spec web 2 'echo $$ >'"$W"'/pid-$DOCKET_REPLICA; exec sleep 600' '{"backoff": "200ms"}')
    run -0 "$DOCKET" services create -f "$f"
    [[ $output == *"service web"* ]]
    wait_for 60 ready_is web 2
    s=$(svc web)
    [ "$(jq -r .state <<<"$s")" = running ]
    [ "$(jq '[.instances[].job] | unique | length' <<<"$s")" = 2 ]
    job=$(jq '.instances[0].job' <<<"$s")
    [ "$("$DOCKET" show "$job" --json | jq -r .job.class)" = service ]
    [ "$("$DOCKET" show "$job" --json | jq -r .job.project)" = web ]
    run -0 "$DOCKET" services
    [[ $output == *web*running*2/2* ]]
    wait_for 30 test -s "$W/pid-0"
    kill -9 "$(cat "$W/pid-0")"
    wait_for 60 bash -c "[[ \$('$DOCKET' services show web --json | jq '.service.restarts') -ge 1 ]]"
    wait_for 60 ready_is web 2
    s=$(svc web)
    [ "$(jq '.instances[0].restarts' <<<"$s")" -ge 1 ]
    [ "$(jq '.instances[0].job' <<<"$s")" = "$job" ] # the same job, restarted
    # the backoff is in the replica's events: held, then released, by docketd
    ev=$(curl -sf -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/v1/jobs/$job/events")
    [ "$(jq '[.events[] | select(.type == "hold" and .reason == "docketd")] | length' <<<"$ev")" -ge 1 ]
    [ "$(jq '[.events[] | select(.type == "release" and .reason == "docketd")] | length' <<<"$ev")" -ge 1 ]
    [[ $(jq -r '[.events[] | select(.type == "hold")][0].detail' <<<"$ev") == "service web: restart 1,"* ]]
    # and in /metrics
    m=$(curl -sf -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/metrics")
    grep -q '^docket_service_replicas{service="web",project="web"} 2$' <<<"$m"
    grep -q '^docket_service_replicas_ready{service="web",project="web"} 2$' <<<"$m"
    grep -qE '^docket_service_restarts_total\{service="web",project="web"\} [1-9]' <<<"$m"
}

@test "a replica that keeps failing shows crash-loop, with its restarts counted" {
    f=$(spec flaky 1 'exit 3' '{"backoff": "100ms", "backoff_max": "400ms", "crash_loop_restarts": 3, "crash_loop_window": "10m"}')
    run -0 "$DOCKET" services create -f "$f"
    wait_for 60 bash -c "[[ \$('$DOCKET' services show flaky --json | jq -r .service.state) == crash-loop ]]"
    s=$(svc flaky)
    [ "$(jq '.instances[0].restarts' <<<"$s")" -ge 3 ]
    [ "$(jq '.instances[0].crash_loop' <<<"$s")" = true ]
    run -0 "$DOCKET" services
    [[ $output == *flaky*crash-loop* ]]
    run -0 "$DOCKET" services rm flaky
}

@test "a replica whose job is cancelled is replaced; scale down cancels, rm removes" {
    s=$(svc web)
    old=$(jq '.instances[1].job' <<<"$s")
    "$DOCKET" cancel "$old" >/dev/null
    wait_for 60 bash -c "[[ \$('$DOCKET' services show web --json | jq '.service.instances[1].job') != $old ]]"
    wait_for 60 ready_is web 2
    run -0 "$DOCKET" services scale web 1 --json
    [ "$(jq .service.replicas <<<"$output")" = 1 ]
    gone=$(svc web | jq '.instances | length')
    [ "$gone" = 1 ]
    wait_for 60 bash -c "[[ \$('$DOCKET' show $(svc web | jq .instances[0].job) --json | jq -r .job.state) == RUNNING ]]"
    run -0 "$DOCKET" services scale web 2
    wait_for 60 ready_is web 2
}

@test "services survive a restart of docketd: same replicas, same jobs" {
    before=$(svc web | jq -c '[.instances[].job]')
    kill_pidfile "$T/ctl.pid"
    ctl_start "$PORT"
    wait_for 60 nodes_up 2
    [ "$(svc web | jq -c '[.instances[].job]')" = "$before" ]
    wait_for 60 ready_is web 2
}

@test "bad specs are refused naming the field; a name is unique; others' services are theirs" {
    echo '{"name": "x", "job": {"command": ["true"], "class": "training"}}' >"$T/bad.json"
    run -1 "$DOCKET" services create -f "$T/bad.json"
    [[ $output == *"job.class"* ]]
    echo '{"name": "x", "replicas": 65, "job": {"command": ["true"]}}' >"$T/bad.json"
    run -1 "$DOCKET" services create -f "$T/bad.json"
    [[ $output == *replicas* ]]
    echo '{"name": "x", "job": {"command": ["true"]}, "probes": {"readiness": {"http": {"path": "no-slash"}}}}' >"$T/bad.json"
    run -1 "$DOCKET" services create -f "$T/bad.json"
    [[ $output == *"probes.readiness.http.path"* ]]
    f=$(spec web 1 'sleep 1')
    run -1 "$DOCKET" services create -f "$f"
    [[ $output == *"exists already"* ]]
    run -1 "$DOCKET" services show nosuch
    [[ $output == *"no such service"* ]]
    # a user of no project may neither create a service in web nor scale or remove web
    tok=$("$DOCKET" token create --user mallory --json | jq -r .token)
    as_mallory() {
        curl -s -o /dev/null -w '%{http_code}' -X "$1" -H "Authorization: Bearer $tok" \
            -H 'Content-Type: application/json' "http://127.0.0.1:$PORT$2" ${3:+--data "$3"}
    }
    [ "$(as_mallory POST /v1/services/web/scale '{"replicas": 0}')" = 403 ]
    [ "$(as_mallory DELETE /v1/services/web)" = 403 ]
    [ "$(as_mallory POST /v1/services "$(cat "$f" | jq -c '.name = "evil"')")" = 403 ]
    [ "$(as_mallory GET /v1/services/web)" = 200 ]
    # ... and reads its state, never its replicas' command or env values (issue 33, item 6)
    curl -s -H "Authorization: Bearer $tok" "http://127.0.0.1:$PORT/v1/services/web" |
        jq -e '.service.spec.job.command == null and .service.spec.job.hidden == true'
    curl -s -H "Authorization: Bearer $tok" "http://127.0.0.1:$PORT/v1/services" |
        jq -e '[.services[].spec.job.command] | all(. == null)'
    run -0 "$DOCKET" services show web --json
    jq -e '.service.spec.job.command != null' <<<"$output"
    [ "$(svc web | jq .replicas)" = 2 ]
    run -1 "$DOCKET" services show evil
}

@test "rm cancels every replica" {
    jobs=$(svc web | jq -r '.instances[].job')
    run -0 "$DOCKET" services rm web
    run -1 "$DOCKET" services show web
    for j in $jobs; do
        wait_for 60 bash -c "[[ \$('$DOCKET' show $j --json | jq -r .job.state) == CANCELLED ]]"
    done
}
