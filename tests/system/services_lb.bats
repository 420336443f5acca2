#!/usr/bin/env bats
# services_lb.bats - services behind HAProxy (docs/services.md "Ports and probes", "The
# endpoint", "Rolling updates") on a real docketd, two real agents and Debian's haproxy:
# each replica gets a port of its node's --service-ports range; the agents run the
# probes of the spec and docketd acts on what they report (a liveness failure restarts the
# replica, a failed readiness probe takes it out of traffic); the service's endpoint keeps
# answering while a replica is killed, while its readiness fails, and through a rolling
# update, and a broken update rolls back.

bats_require_minimum_version 1.5.0

CLUSTER_NAME=svclb
load lib/cluster
load lib/ports
AGENT_EXTRA=()

setup_file() {
    [[ -x $DOCKET && -x $DOCKETD_BIN && -x $AGENT_BIN ]] || skip "docket, docketd or docket-node not built"
    # ports of this run's own: the agents' replicas and haproxy's frontends (the agents and
    # docketd skip a port something else listens on)
    LB_BASE=$(port_block 100)
    export LB_BASE
    export AGENT_EXTRA_a="--addr 127.0.0.1 --service-ports $LB_BASE-$((LB_BASE + 29))"
    export AGENT_EXTRA_b="--addr 127.0.0.1 --service-ports $((LB_BASE + 30))-$((LB_BASE + 59))"
    lb_flags
    cluster_start
    "$DOCKET" apply -f "$BATS_TEST_DIRNAME/../data/services-policy.yaml" >/dev/null
    # the replica: an HTTP server on $PORT saying who it is; /healthz answers 503 while
    # $W/notready-<replica> exists; it writes its pid to $W/pid-<replica>
    cat >"$T/server.py" <<'PY'
import http.server, os, sys
rep, port, flags = os.environ["DOCKET_REPLICA"], int(os.environ["PORT"]), sys.argv[1]
version = os.environ.get("VERSION", "1")
with open(os.path.join(flags, "pid-" + rep), "w") as f:
    f.write(str(os.getpid()))
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    def do_GET(self):
        code = 200
        if self.path == "/healthz" and os.path.exists(os.path.join(flags, "notready-" + rep)):
            code = 503
        body = ("replica %s version %s\n" % (rep, version)).encode()
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
PY
}

teardown_file() {
    [[ -z ${KEEP_DEBUG:-} ]] || cp -r "$T" /tmp/svclb-debug
    # docketd stops its haproxy; one left by a docketd that died is stopped here
    [[ ! -s $T/ctl/lb/haproxy.pid ]] || kill_pidfile "$T/ctl/lb/haproxy.pid"
    cluster_stop
}

setup() {
    lb_flags # for a test that starts docketd again
    cd "$W"
}

lb_flags() {
    DOCKETD_EXTRA=(--lb-haproxy "$(command -v haproxy)" --lb-ports "$((LB_BASE + 60))-$((LB_BASE + 99))")
}

# spec NAME REPLICAS [VERSION]: the spec of the HTTP service, its path printed.
spec() {
    local f=$T/$1.json
    jq -n --arg n "$1" --argjson r "$2" --arg v "${3:-1}" --arg py "$T/server.py" --arg w "$W" \
        '{name: $n, project: "web", replicas: $r, restart: {backoff: "200ms"},
          job: {command: ["python3", $py, $w], cpus: 1, env: {VERSION: $v}},
          probes: {readiness: {http: {path: "/healthz"}, period: "200ms", failure_threshold: 1},
                   liveness: {exec: {command: ["sh", "-c", ("test ! -e " + $w + "/dead-$DOCKET_REPLICA")]},
                              period: "200ms", failure_threshold: 2}},
          update: {deadline: "20s"}}' >"$f"
    echo "$f"
}

svc() { # NAME: the service object
    "$DOCKET" services show "$1" --json | jq -c .service
}

ready_is() { # NAME N
    [[ $(svc "$1" | jq .ready) == "$2" ]]
}

replica_addr() { # NAME SLOT-INDEX: host:port of that replica
    svc "$1" | jq -r ".instances[$2].addr // empty"
}

@test "replicas get ports of their node's range; readiness and liveness probes act" {
    # something else listens on the first port of each node's range: no replica gets it
    python3 -c 'import socket, sys, time
socks = []
for p in sys.argv[1:]:
    s = socket.socket(); s.bind(("127.0.0.1", int(p))); s.listen(); socks.append(s)
time.sleep(600)' "$LB_BASE" "$((LB_BASE + 30))" &
    echo $! >"$T/squat.pid"
    wait_for 30 bash -c "exec 3<>/dev/tcp/127.0.0.1/$((LB_BASE + 30))"
    f=$(spec web 2)
    run -0 "$DOCKET" services create -f "$f"
    wait_for 60 ready_is web 2
    s=$(svc web)
    a0=$(jq -r '.instances[0].addr' <<<"$s")
    a1=$(jq -r '.instances[1].addr' <<<"$s")
    [[ $a0 == 127.0.0.1:* && $a1 == 127.0.0.1:* && $a0 != "$a1" ]]
    for a in "$a0" "$a1"; do
        [[ ${a#*:} != "$LB_BASE" && ${a#*:} != "$((LB_BASE + 30))" ]]
    done
    kill_pidfile "$T/squat.pid"
    [[ $(curl -sf "http://$a0/") == "replica 0 version 1" ]]
    [[ $(curl -sf "http://$a1/") == "replica 1 version 1" ]]
    # readiness fails: the replica is running but not ready, and says why
    touch "$W/notready-1"
    wait_for 60 ready_is web 1
    s=$(svc web)
    [ "$(jq -r '.instances[1].state' <<<"$s")" = not-ready ]
    [[ $(jq -r '.instances[1].last_probe_failure' <<<"$s") == "readiness: answered HTTP/1.0 503"* ]]
    run -0 "$DOCKET" services
    [[ $output == *web*degraded*1/2*"readiness: answered HTTP/1.0 503"* ]]
    rm "$W/notready-1"
    wait_for 60 ready_is web 2
    # liveness fails: the replica is killed and restarted (the same job, a new run)
    job=$(jq '.instances[0].job' <<<"$s")
    before=$(jq '.instances[0].restarts' <<<"$s")
    touch "$W/dead-0"
    wait_for 60 bash -c "[[ \$('$DOCKET' services show web --json | jq '.service.instances[0].restarts') -gt $before ]]"
    rm "$W/dead-0"
    wait_for 60 ready_is web 2
    [ "$(svc web | jq '.instances[0].job')" = "$job" ]
    ev=$(curl -sf -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/v1/jobs/$job/events")
    [ "$(jq '[.events[] | select(.type == "probe")] | length' <<<"$ev")" -ge 1 ]
    jq -e '[.events[] | select(.type == "probe") | .reason] | any(test("liveness failed"))' <<<"$ev"
}

# load NAME FILE: requests through the endpoint, one after another, until $W/stop-load
# exists; each one's HTTP code (000: no answer) and body, a line each, into FILE.
load_start() {
    local ep
    ep=$("$DOCKET" services endpoint "$1")
    rm -f "$W/stop-load"
    (
        local out
        while [[ ! -e $W/stop-load ]]; do
            out=$(curl -s --max-time 10 -w ' %{http_code}' "http://$ep/") || out="${out:-} 000"
            echo "${out//$'\n'/}"
        done >"$2"
    ) &
    echo $! >"$T/load.pid"
}

load_stop() { # FILE: stops the load, waits for its last request
    touch "$W/stop-load"
    wait_for 30 bash -c "! kill -0 $(cat "$T/load.pid") 2>/dev/null"
}

answered() { # FILE N: at least N requests answered 200 so far
    [[ $(grep -c ' 200$' "$1") -ge $2 ]]
}

failed() { # FILE: the requests not answered 200
    grep -vc ' 200$' "$1" || true
}

@test "the endpoint: HAProxy serves the ready replicas; a kill -9 loses no request" {
    run -0 "$DOCKET" services endpoint web
    [[ $output == 127.0.0.1:* ]]
    ep=$output
    run -0 "$DOCKET" services show web
    [[ $output == *"endpoint $ep"* ]]
    [[ $(curl -sf "http://$ep/") == "replica "[01]" version 1" ]]
    load_start web "$T/kill.load"
    wait_for 30 answered "$T/kill.load" 20
    before=$(svc web | jq '.instances[1].restarts')
    kill -9 "$(cat "$W/pid-1")"
    wait_for 60 bash -c "[[ \$('$DOCKET' services show web --json | jq '.service.instances[1].restarts') -gt $before ]]"
    wait_for 60 ready_is web 2
    n=$(grep -c . "$T/kill.load")
    wait_for 60 answered "$T/kill.load" $((n + 20))
    load_stop
    grep -q 'replica 1 version 1 200' "$T/kill.load"
    [ "$(failed "$T/kill.load")" = 0 ]
}

@test "a replica whose readiness fails gets no traffic, and gets it back once ready" {
    touch "$W/notready-0"
    wait_for 60 ready_is web 1
    load_start web "$T/ready.load"
    wait_for 30 answered "$T/ready.load" 30
    load_stop
    [ "$(failed "$T/ready.load")" = 0 ]
    ! grep -q 'replica 0' "$T/ready.load"
    rm "$W/notready-0"
    wait_for 60 ready_is web 2
    load_start web "$T/ready2.load"
    wait_for 60 bash -c "grep -q 'replica 0' '$T/ready2.load'"
    load_stop
    [ "$(failed "$T/ready2.load")" = 0 ]
}

@test "a rolling update: one replica at a time, the new one ready first, no request lost" {
    old=$(svc web | jq -c '[.instances[].job]')
    f=$(spec web 2 2)
    load_start web "$T/update.load"
    wait_for 30 answered "$T/update.load" 20
    run -0 "$DOCKET" services update web -f "$f" --wait
    [[ $output == *"update to version 2: done"* ]]
    s=$(svc web)
    [ "$(jq '[.instances[] | select(.version == 2 and .state == "ready")] | length' <<<"$s")" = 2 ]
    [ "$(jq -r .update.state <<<"$s")" = done ]
    n=$(grep -c . "$T/update.load")
    wait_for 60 answered "$T/update.load" $((n + 20))
    load_stop
    [ "$(failed "$T/update.load")" = 0 ]
    grep -q 'version 2 200$' "$T/update.load"
    ! grep -q 'version 1 200$' <(tail -n 10 "$T/update.load")
    # each old replica's job says it left for the new version, and was stopped
    for j in $(jq '.[]' <<<"$old"); do
        ev=$(curl -sf -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/v1/jobs/$j/events")
        jq -e '[.events[] | select(.reason == "leaving")][0].detail | test("replaced by version 2")' <<<"$ev"
        wait_for 60 bash -c "[[ \$('$DOCKET' show $j --json | jq -r .job.state) == CANCELLED ]]"
    done
}

@test "an update whose replicas never get ready rolls back, and says so" {
    f=$(spec web 2 3)
    jq '.job.command = ["sleep", "600"] | .update.deadline = "2s"' "$f" >"$T/broken.json"
    load_start web "$T/broken.load"
    wait_for 30 answered "$T/broken.load" 20
    run -1 "$DOCKET" services update web -f "$T/broken.json" --wait
    [[ $output == *"rolled back"* ]]
    [[ $output == *"of version 3 was not ready within 2s"* ]]
    s=$(svc web)
    [ "$(jq -r .update.state <<<"$s")" = rolled-back ]
    [ "$(jq .version <<<"$s")" = 2 ]
    wait_for 60 ready_is web 2
    [ "$(svc web | jq '[.instances[] | select(.version == 2)] | length')" = 2 ]
    [ "$(svc web | jq -r '.spec.job.command[0]')" = python3 ]
    n=$(grep -c . "$T/broken.load")
    wait_for 60 answered "$T/broken.load" $((n + 20))
    load_stop
    [ "$(failed "$T/broken.load")" = 0 ]
    ! grep -q 'version 3' "$T/broken.load"
    # the rollback is in /metrics' probe families and the audit trail
    m=$(curl -sf -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/metrics")
    grep -qE '^docket_service_probe_failures_total\{service="web",project="web",probe="readiness"\} [1-9]' <<<"$m"
    grep -q '^docket_service_replicas_not_ready{service="web",project="web"} 0$' <<<"$m"
    # an update of a running update is refused; one changing the project too
    run -1 "$DOCKET" services update web -f <(jq '.project = "other"' "$f")
    [[ $output == *project* ]]
}

@test "a probe that hangs fails at its timeout and is killed; the agent goes on" {
    jq -n '{name: "hang", project: "web", replicas: 1,
            job: {command: ["sleep", "600"], cpus: 1},
            probes: {readiness: {exec: {command: ["sleep", "100"]}, period: "200ms",
                                 timeout: "300ms", failure_threshold: 1}}}' >"$T/hang.json"
    run -0 "$DOCKET" services create -f "$T/hang.json"
    wait_for 60 bash -c "[[ \$('$DOCKET' services show hang --json | jq -r '.service.instances[0].last_probe_failure') == 'readiness: timed out after 300 ms' ]]"
    [ "$(svc hang | jq -r '.instances[0].state')" = not-ready ]
    # its probes' children do not pile up: each is killed past its timeout
    sleep 2
    [ "$(pgrep -fc '^sleep 100$' || true)" -le 2 ]
    wait_for 60 nodes_up 2
    run -0 "$DOCKET" services rm hang
    wait_for 30 bash -c "! pgrep -f '^sleep 100$' >/dev/null"
}

@test "hostile updates: another user's, a bad spec; the endpoint outlives docketd's restart" {
    tok=$("$DOCKET" token create --user mallory --json | jq -r .token)
    code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $tok" \
        -H 'Content-Type: application/json' "http://127.0.0.1:$PORT/v1/services/web/update" \
        --data "$(jq -c . "$(spec web 2 9)")")
    [ "$code" = 403 ]
    echo '{"job": {"command": ["true"]}, "replicas": 99}' >"$T/bad.json"
    run -1 "$DOCKET" services update web -f "$T/bad.json"
    [[ $output == *replicas* ]]
    [ "$(svc web | jq .version)" = 2 ]
    # the endpoint survives a restart of docketd: same port, a new haproxy took over
    ep=$("$DOCKET" services endpoint web)
    kill_pidfile "$T/ctl.pid"
    ctl_start "$PORT"
    wait_for 60 nodes_up 2
    [ "$("$DOCKET" services endpoint web)" = "$ep" ]
    wait_for 60 bash -c "curl -sf 'http://$ep/' | grep -q 'version 2'"
}
