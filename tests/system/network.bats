#!/usr/bin/env bats
# network.bats - job network boundaries end to end (docs/network.md): a real docketd and
# three real agents, each in a network namespace of its own on this machine.
#   F (fabric)  docketd (TLS, on 10.99.1.1 and 10.99.2.1), two services on lo:
#               10.98.0.1 (allowed) and 10.98.0.2 (denied), each answering "hello" on
#               port 7000, and iperf3 on 10.98.0.1:5201; routes 10.200.1.0/24 -> A and
#               10.200.2.0/24 -> B (what a site routes, docs/network.md "Routing")
#   A           agent a (zone=a, jobs 10.200.1.0/24) and agent c (zone=c, --nft missing)
#   B           agent b (zone=b, jobs 10.200.2.0/24)
# Veth pairs F<->A, F<->B. Policy: projects ml and ml2 in group research, bio in biology;
# research may reach 10.98.0.1:7000; bio 10.98.0.1 ports 7000 and 5201 with a 20 Mbit/s
# cap. Jobs run as nobody. Every process started here is stopped by pid; the namespaces
# are deleted in teardown_file.

bats_require_minimum_version 1.5.0

DOCKET_BUILD=${DOCKET_BUILD:-$BATS_TEST_DIRNAME/../../build}
DOCKET=$DOCKET_BUILD/src/cli/docket
DOCKETD_BIN=$DOCKET_BUILD/src/controller/docketd
AGENT_BIN=$DOCKET_BUILD/src/agent/docket-node
source "$BATS_TEST_DIRNAME/lib/wait.bash"

# the namespaces' names: made once (setup_file exports them; each test runs in a
# process of its own, with a $$ of its own)
NS_F=${NS_F:-dkt$$f}
NS_A=${NS_A:-dkt$$a}
NS_B=${NS_B:-dkt$$b}

# CMD in namespace NS: the network only (nsenter), so /sys and its cgroups stay this
# machine's (ip netns exec would mount a sysfs of the namespace's own, without them).
in_ns() { nsenter --net="/run/netns/$1" "${@:2}"; }

kill_pidfile() { # FILE
    local pid
    pid=$(cat "$1" 2>/dev/null) || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    wait_for 10 bash -c "! kill -0 $pid 2>/dev/null" || kill -9 "$pid" 2>/dev/null || true
}

# A namespace with lo up and forwarding on.
make_ns() {
    ip netns add "$1"
    ip -n "$1" link set lo up
    in_ns "$1" sysctl -qw net.ipv4.ip_forward=1
}

make_fabric() {
    make_ns "$NS_F"
    make_ns "$NS_A"
    make_ns "$NS_B"
    ip -n "$NS_F" link add fa type veth peer name uplink netns "$NS_A"
    ip -n "$NS_F" link add fb type veth peer name uplink netns "$NS_B"
    ip -n "$NS_F" addr add 10.99.1.1/30 dev fa
    ip -n "$NS_F" addr add 10.99.2.1/30 dev fb
    ip -n "$NS_A" addr add 10.99.1.2/30 dev uplink
    ip -n "$NS_B" addr add 10.99.2.2/30 dev uplink
    local ns
    for ns in "$NS_F:fa" "$NS_F:fb" "$NS_A:uplink" "$NS_B:uplink"; do
        ip -n "${ns%:*}" link set "${ns#*:}" up
    done
    ip -n "$NS_A" route add default via 10.99.1.1
    ip -n "$NS_B" route add default via 10.99.2.1
    ip -n "$NS_F" route add 10.200.1.0/24 via 10.99.1.2
    ip -n "$NS_F" route add 10.200.2.0/24 via 10.99.2.2
    ip -n "$NS_F" addr add 10.98.0.1/32 dev lo
    ip -n "$NS_F" addr add 10.98.0.2/32 dev lo
}

start_services() {
    cat >"$T/hello.py" <<'PY'
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1])))
s.listen(64)
while True:
    c, _ = s.accept()
    c.sendall(b"hello\n")
    c.close()
PY
    nsenter --net="/run/netns/$NS_F" python3 "$T/hello.py" 7000 >"$T/hello.log" 2>&1 3>&- &
    echo $! >"$T/hello.pid"
    nsenter --net="/run/netns/$NS_F" iperf3 -s -B 10.98.0.1 -p 5201 >"$T/iperf3.log" 2>&1 3>&- &
    echo $! >"$T/iperf3.pid"
}

start_docketd() {
    nsenter --net="/run/netns/$NS_F" "$DOCKETD_BIN" --state-dir "$T/ctl" --listen 0.0.0.0:0 --tls on \
        --socket "$T/ctl/docketd.sock" --heartbeat-wait 2s --node-timeout 30s \
        --log-file "$T/ctl.log" >"$T/ctl.err" 2>&1 3>&- &
    echo $! >"$T/ctl.pid"
    wait_for 60 test -s "$T/ctl/docketd.port"
    wait_for 60 test -S "$T/ctl/docketd.sock"
    PORT=$(cat "$T/ctl/docketd.port")
    TOKEN=$(cat "$T/ctl/admin.token")
    wait_for 60 grep -q 'event=tls_ready' "$T/ctl.log"
    FPR=$(grep -o 'event=tls_ready.*fingerprint=sha256:[0-9a-f]*' "$T/ctl.log" | tail -n 1 |
        sed 's/.*fingerprint=//')
}

start_agent() { # NAME NS CONTROLLER_ADDR EXTRA...
    local name=$1 ns=$2 addr=$3
    shift 3
    nsenter --net="/run/netns/$ns" "$AGENT_BIN" --controller "https://$addr:$PORT" --controller-fingerprint "$FPR" \
        --join-token "$JOIN" --name "$PREFIX-$name" --cpus 8 --mem 8G --label "zone=$name" \
        --state-dir "$T/agent-$name" --health-interval 1s --usage-interval 1s --log-file "$T/agent-$name.log" "$@" >"$T/agent-$name.err" 2>&1 3>&- &
    echo $! >"$T/agent-$name.pid"
}

setup_file() {
    [[ -x $DOCKET && -x $DOCKETD_BIN && -x $AGENT_BIN ]] || skip "docket, docketd or docket-node not built"
    [[ $(id -u) == 0 ]] || skip "needs root: network namespaces, veth pairs and nftables"
    export T W PREFIX DOCKET_URL PORT TOKEN FPR NS_F NS_A NS_B
    T=$(mktemp -d /tmp/docket-bats-net.XXXXXX)
    W=$T/work
    PREFIX=net$$
    mkdir -p "$T/ctl" "$W"
    chmod 0755 "$T"
    chmod 0777 "$W"
    if ! ip netns add "dkt$$probe" 2>"$T/netns.err"; then
        skip "cannot create network namespaces here: $(head -n1 "$T/netns.err")"
    fi
    ip netns del "dkt$$probe"
    make_fabric
    start_services
    start_docketd
    DOCKET_URL=unix:$T/ctl/docketd.sock
    export DOCKET_TOKEN=$TOKEN
    JOIN=$("$DOCKET" token join)
    start_agent a "$NS_A" 10.99.1.1 --job-net 10.200.1.0/24 --label fabric=ok
    start_agent b "$NS_B" 10.99.2.1 --job-net 10.200.2.0/24 --label fabric=ok
    start_agent c "$NS_A" 10.99.1.1 --job-net 10.200.3.0/24 --nft "$T/no-such-nft"
    wait_for 60 nodes_up 3
    cat >"$T/policy.yaml" <<YAML
groups:
  - {name: research}
  - {name: biology}
projects:
  - {name: ml, group: research}
  - {name: ml2, group: research}
  - {name: bio, group: biology}
network:
  isolate: true
  rules:
    - group: research
      allow:
        - {to: 10.98.0.1/32, ports: [7000]}
    - project: bio
      allow:
        - {to: 10.98.0.1, ports: [7000, 5201]}
      bandwidth_mbit: 20
YAML
    "$DOCKET" apply -f "$T/policy.yaml" >/dev/null
}

teardown_file() {
    [[ -n ${T:-} && -d $T ]] || return 0
    local f
    for f in agent-a agent-b agent-c ctl hello iperf3; do
        kill_pidfile "$T/$f.pid"
    done
    # supervisors outlive their agent by design: any left running goes now
    for f in "$T"/agent-*/jobs/*/state.json; do
        [[ -f $f ]] || continue
        pid=$(jq -r '.sup_pid // 0' "$f")
        [[ $(jq -r '.state' "$f") != exited && $pid -gt 0 ]] && kill -9 "$pid" 2>/dev/null
    done
    local ns
    for ns in $(ip netns list | awk '{print $1}' | grep -E "^($NS_F|$NS_A|$NS_B|docket-$PREFIX-)$"); do
        ip netns del "$ns" 2>/dev/null
    done
    [[ -z ${NET_KEEP_LOGS:-} ]] || cp "$T"/*.log "$NET_KEEP_LOGS/" 2>/dev/null
    rm -rf "$T"
}

setup() {
    cd "$W"
}

nodes_up() { # N: at least N nodes UP
    local n
    n=$("$DOCKET" nodes --json 2>/dev/null | jq '[.nodes[] | select(.state == "UP")] | length')
    [[ ${n:-0} -ge $1 ]]
}

capi() {
    local m=$1 p=$2
    shift 2
    curl -sS -X "$m" --unix-socket "$T/ctl/docketd.sock" -H "Authorization: Bearer $TOKEN" \
        -H 'Content-Type: application/json' "http://docketd$p" "$@"
}

submit() { # FIELDS (a jq object) over the defaults; prints the id
    local body
    body=$(jq -c -n --arg wd "$W" \
        '{project: "ml", user: "nobody", workdir: $wd, cpus: 1, time_limit: "5m",
          selectors: {zone: "a"}} + ('"$1"')')
    capi POST /v1/jobs -d "$body" | jq -r '.job.id'
}

job() { capi GET "/v1/jobs/$1"; }
refused_at_least() { # ID N: /metrics counts at least N refused packets of job ID
    local n
    n=$(capi GET /metrics | grep -F "docket_job_network_refused_total{job=\"$1\",project=" |
        awk '{ print $2 }')
    [[ ${n:-0} -ge $2 ]]
}
jstate() { job "$1" | jq -r '.job.state'; }
state_in() { # ID STATE...
    local s
    s=$(jstate "$1")
    shift
    local want
    for want in "$@"; do [[ $s == "$want" ]] && return 0; done
    return 1
}
ended() { state_in "$1" COMPLETED FAILED CANCELLED TIMEOUT; }
out() { # ID NODE: the job's stdout on that node
    cat "$T/agent-$2/jobs/$1/stdout" 2>/dev/null
}

# A job command that connects to HOST:PORT and prints "ok HOST" or "refused HOST".
connect_cmd() { # HOST PORT
    echo "import socket
try:
    s = socket.create_connection(('$1', $2), timeout=5)
    print('ok $1', s.recv(16).decode().strip())
except OSError as e:
    print('refused $1', e)"
}

@test "a job reaches its allowed address and not a denied one" {
    local py
    py="$(connect_cmd 10.98.0.1 7000)
$(connect_cmd 10.98.0.2 7000)
$(connect_cmd 10.98.0.1 5201)"
    id=$(submit "$(jq -n --arg py "$py" '{command: ["python3", "-c", $py]}')")
    wait_for 60 ended "$id"
    [[ $(jstate "$id") == COMPLETED ]]
    run out "$id" a
    [[ $output == *"ok 10.98.0.1 hello"* ]]
    [[ $output == *"refused 10.98.0.2"* ]]
    # the port of an allowed address is checked too
    [[ $(grep -c '^refused 10.98.0.1' <<<"$output") -eq 1 ]]
}

@test "group A's job cannot connect to group B's; A's own project and group can" {
    local listen='import socket
s = socket.socket(); s.bind(("0.0.0.0", 8000)); s.listen(8)
while True:
    c, _ = s.accept(); c.sendall(b"hello\n"); c.close()'
    srv=$(submit "$(jq -n --arg py "$listen" '{command: ["python3", "-c", $py], selectors: {zone: "b"}}')")
    wait_for 60 state_in "$srv" RUNNING
    addr=$(job "$srv" | jq -r '.job.network.addrs[0]')
    [[ $addr == 10.200.2.* ]]
    # show and explain name the policy, explain the address too
    run "$DOCKET" show "$srv"
    [[ $output == *"network"*"own namespace; peers: group research; 1 allowed destination"* ]]
    run "$DOCKET" explain "$srv"
    [[ $output == *"network"*"own namespace"*"address $addr"* ]]
    local py
    py=$(connect_cmd "$addr" 8000)
    same=$(submit "$(jq -n --arg py "$py" '{command: ["python3", "-c", $py]}')")
    group=$(submit "$(jq -n --arg py "$py" '{project: "ml2", command: ["python3", "-c", $py]}')")
    other=$(submit "$(jq -n --arg py "$py" '{project: "bio", command: ["python3", "-c", $py]}')")
    wait_for 60 ended "$same"
    wait_for 60 ended "$group"
    wait_for 60 ended "$other"
    [[ $(out "$same" a) == "ok $addr hello" ]]
    [[ $(out "$group" a) == "ok $addr hello" ]]
    [[ $(out "$other" a) == "refused $addr"* ]]
    "$DOCKET" cancel "$srv" >/dev/null
    wait_for 60 ended "$srv"
}

@test "a gang's ranks on both nodes connect to each other" {
    local py='import os, socket, time
rank, master = int(os.environ["NODE_RANK"]), os.environ["MASTER_ADDR"]
if rank == 0:
    s = socket.socket(); s.bind(("0.0.0.0", 29500)); s.listen(1)
    s.settimeout(60); c, peer = s.accept(); print("rank0 got", c.recv(16).decode())
else:
    for _ in range(600):
        try:
            c = socket.create_connection((master, 29500), timeout=2); break
        except OSError:
            time.sleep(0.1)
    c.sendall(b"rank1"); print("rank1 sent to", master)'
    id=$(submit "$(jq -n --arg py "$py" '{command: ["python3", "-c", $py], nodes: 2, selectors: {fabric: "ok"}}')")
    wait_for 120 ended "$id"
    [[ $(jstate "$id") == COMPLETED ]]
    # which node ran rank 0 is the scheduler's choice: one printed each line
    run bash -c "cat $T/agent-a/jobs/$id/stdout $T/agent-b/jobs/$id/stdout"
    [[ $output == *"rank0 got rank1"* ]]
    [[ $output == *"rank1 sent to 10.200."* ]]
}

@test "refused packets are counted per job in /metrics and explain" {
    local py
    py="import time
$(connect_cmd 10.98.0.2 7000)
time.sleep(300)"
    id=$(submit "$(jq -n --arg py "$py" '{command: ["python3", "-u", "-c", $py]}')")
    wait_for 60 state_in "$id" RUNNING
    wait_for 60 grep -q refused "$T/agent-a/jobs/$id/stdout"
    wait_for 60 refused_at_least "$id" 1
    run "$DOCKET" explain "$id"
    [[ $output == *"packets refused"* ]]
    "$DOCKET" cancel "$id" >/dev/null
    wait_for 60 ended "$id"
}

@test "a bandwidth cap holds within 10 %" {
    id=$(submit '{project: "bio", command: ["iperf3", "-c", "10.98.0.1", "-p", "5201", "-t", "4", "-J"]}')
    wait_for 120 ended "$id"
    [[ $(jstate "$id") == COMPLETED ]]
    bps=$(jq '.end.sum_received.bits_per_second' "$T/agent-a/jobs/$id/stdout")
    echo "received $bps bit/s under a 20 Mbit/s cap"
    # the cap holds: never above it by more than 10 %; and it is the cap that limits
    # (not, say, a policy that lets nothing through): at least half of it arrives
    awk -v b="$bps" 'BEGIN { exit !(b <= 22000000 && b >= 10000000) }'
}

@test "the rules, link and namespace are gone after reclaim" {
    id=$(submit '{command: ["sleep", "300"]}')
    wait_for 60 state_in "$id" RUNNING
    wait_for 30 bash -c "ip netns exec $NS_A nft list table inet docket_$id >/dev/null 2>&1"
    ip -n "$NS_A" link show "dk$id" >/dev/null
    "$DOCKET" cancel "$id" >/dev/null
    wait_for 60 ended "$id"
    wait_for 60 bash -c "! ip netns exec $NS_A nft list table inet docket_$id >/dev/null 2>&1"
    run ip -n "$NS_A" link show "dk$id"
    [[ $status -ne 0 ]]
    run in_ns "$NS_A" ls /run/netns
    [[ $output != *"docket-$PREFIX-a-$id"* ]]
}

@test "a node without nftables turns UNHEALTHY when a job needs a network policy" {
    id=$(submit '{command: ["true"], selectors: {zone: "c"}}')
    wait_for 60 ended "$id"
    [[ $(jstate "$id") == FAILED || $(job "$id" | jq -r '.job.exit.kind') == launch_failed ]]
    wait_for 60 bash -c "$DOCKET nodes --json | jq -e '.nodes[] | select(.name == \"$PREFIX-c\") | .state == \"UNHEALTHY\"' >/dev/null"
    run "$DOCKET" nodes --json
    [[ $(jq -r ".nodes[] | select(.name == \"$PREFIX-c\") | .reason // .message // .health_message // \"\"" <<<"$output") == *nftables* ]] ||
        grep -q 'network_unenforceable.*nftables' "$T/agent-c.log"
}

@test "a hostile job can neither lift its rules nor leave its namespace" {
    local sh="grep CapEff /proc/self/status
/usr/sbin/nft flush ruleset 2>/dev/null && echo FLUSHED
/usr/sbin/ip link set eth0 down 2>/dev/null && echo LINKDOWN
/usr/sbin/ip addr add 10.200.1.250/32 dev eth0 2>/dev/null && echo ADDRADDED
/usr/sbin/tc qdisc add dev eth0 root tbf rate 1gbit burst 1m latency 1ms 2>/dev/null && echo TCCHANGED
nsenter --net=/proc/1/ns/net true 2>/dev/null && echo ESCAPED
python3 -c \"$(connect_cmd 10.98.0.2 7000)\""
    id=$(submit "$(jq -n --arg sh "$sh" '{command: ["sh", "-c", $sh]}')")
    wait_for 60 ended "$id"
    run out "$id" a
    echo "$output"
    [[ $output == *"CapEff:	0000000000000000"* ]]
    [[ $output != *FLUSHED* && $output != *LINKDOWN* && $output != *ADDRADDED* ]]
    [[ $output != *TCCHANGED* && $output != *ESCAPED* ]]
    [[ $output == *"refused 10.98.0.2"* ]]
    # the node's rules for other jobs are untouched: its own table went at its reclaim only
    run in_ns "$NS_A" nft list tables
    [[ $status -eq 0 ]]
}
