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
AGENT_EXTRA=()

setup_file() {
    [[ -x $DOCKET && -x $DOCKETD_BIN && -x $AGENT_BIN ]] || skip "docket, docketd or docket-node not built"
    # ports of this run's own: the agents' replicas and haproxy's frontends (the agents and
    # docketd skip a port something else listens on)
    local base=$((20000 + ($$ % 300) * 100))
    export AGENT_EXTRA_a="--addr 127.0.0.1 --service-ports $base-$((base + 29))"
    export AGENT_EXTRA_b="--addr 127.0.0.1 --service-ports $((base + 30))-$((base + 59))"
    cluster_start
    cat >"$T/policy.yaml" <<'YAML'
tiers: [{name: high}, {name: normal}, {name: low}]
classes:
  - {name: training}
  - {name: experiment}
  - {name: exploration}
  - {name: interactive}
  - {name: service, default_limit: 0s, preemptible: false, restart_on_failure: true}
settings: {service_restart_delay: 0s}
projects: [{name: web, tier: normal}]
YAML
    "$DOCKET" apply -f "$T/policy.yaml" >/dev/null
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
    cluster_stop
}

setup() {
    cd "$W"
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
    f=$(spec web 2)
    run -0 "$DOCKET" services create -f "$f"
    wait_for 60 ready_is web 2
    s=$(svc web)
    a0=$(jq -r '.instances[0].addr' <<<"$s")
    a1=$(jq -r '.instances[1].addr' <<<"$s")
    [[ $a0 == 127.0.0.1:* && $a1 == 127.0.0.1:* && $a0 != "$a1" ]]
    [[ $(curl -sf "http://$a0/") == "replica 0 version 1" ]]
    [[ $(curl -sf "http://$a1/") == "replica 1 version 1" ]]
    # readiness fails: the replica is running but not ready, and says why
    touch "$W/notready-1"
    wait_for 60 ready_is web 1
    s=$(svc web)
    [ "$(jq -r '.instances[1].state' <<<"$s")" = not-ready ]
    [[ $(jq -r '.instances[1].last_probe_failure' <<<"$s") == "readiness: answered HTTP/1.0 503"* ]]
    rm "$W/notready-1"
    wait_for 60 ready_is web 2
    # liveness fails: the replica is killed and restarted (the same job, a new run)
    job=$(jq '.instances[0].job' <<<"$s")
    touch "$W/dead-0"
    wait_for 60 bash -c "[[ \$('$DOCKET' services show web --json | jq '.service.instances[0].restarts') -ge 1 ]]"
    rm "$W/dead-0"
    wait_for 60 ready_is web 2
    [ "$(svc web | jq '.instances[0].job')" = "$job" ]
    ev=$(curl -sf -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/v1/jobs/$job/events")
    [ "$(jq '[.events[] | select(.type == "probe")] | length' <<<"$ev")" -ge 1 ]
    jq -e '[.events[] | select(.type == "probe") | .reason] | any(test("liveness failed"))' <<<"$ev"
}
