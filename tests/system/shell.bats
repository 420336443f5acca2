#!/usr/bin/env bats
# shell.bats - interactive sessions (issue 36, docs/interactive.md) on a real docketd and
# two real docket-node agents on loopback: `docket shell` driven through a real
# pseudo-terminal (lib/pty_drive.py): a command's output and exit status, Ctrl-C to a
# remote sleep, a window resize seen by `stty size`, a dropped connection and
# `docket attach`, the idle timeout; salloc and srun --pty; and the session under attack:
# another member, another node and a stranger cannot take its terminal.
# One cluster per file; every process it started is stopped by pid in teardown_file.

bats_require_minimum_version 1.5.0

CLUSTER_NAME=shell
load lib/cluster
AGENT_EXTRA=(--addr 127.0.0.1 --slurm-cli "$DOCKET")
# a session outlives docketd's idle timeout of connections (the typed-commands test waits
# past it)
DOCKETD_EXTRA=(--idle-timeout 4s)
DRIVE=$BATS_TEST_DIRNAME/lib/pty_drive.py

setup_file() {
    [[ -x $DOCKET && -x $DOCKETD_BIN && -x $AGENT_BIN ]] || skip "docket, docketd or docket-node not built"
    cluster_start
    "$DOCKET" apply -f "$BATS_TEST_DIRNAME/../../examples/policy.yaml" >/dev/null
    mkdir -p "$T/bin"
    for c in salloc srun; do ln -s "$DOCKET" "$T/bin/$c"; done
}

teardown_file() {
    cluster_stop
}

setup() {
    cd "$W"
    PATH=$T/bin:$PATH
}

# drive STEPS CMD...: CMD on a pseudo-terminal, driven by STEPS (lib/pty_drive.py)
drive() {
    local steps=$1
    shift
    python3 "$DRIVE" "$steps" "$@"
}

# last_job: the id of the newest job
last_job() {
    "$DOCKET" queue --json -a 2>/dev/null | jq -r '[.jobs[].id] | max // empty'
}

@test "docket shell runs a command on a terminal of the node and exits with its status" {
    run -3 drive '[]' "$DOCKET" shell -A vision -- sh -c 'tty; echo "out:$((6*7))"; exit 3'
    [[ $output == *"out:42"* ]]
    [[ $output == *"/dev/pts/"* ]]
}

@test "a session of two nodes: the command on the first, the second held, one end" {
    run -3 drive '[]' "$DOCKET" shell -A vision -N 2 -- sh -c 'echo "on:$DOCKET_NODE of $DOCKET_NODELIST"; exit 3'
    [[ $output =~ on:([^ ]+)\ of\ ([^[:space:]]+) ]]
    [[ ${BASH_REMATCH[2]} == "${BASH_REMATCH[1]},"* ]] # the first node of the list
    id=$(last_job)
    wait_for 60 state_in "$id" FAILED COMPLETED
    [[ $("$DOCKET" show "$id" --json | jq -r '.job.exit.code') == 3 ]]
}

@test "without a terminal (pipes): input, a flood of output in order, the exit status" {
    run -6 bash -c "echo 'seq 1 300000; exit 6' | '$DOCKET' shell -A vision -- /bin/sh 2>/dev/null"
    # the PTY's line discipline writes CRLF, the first line follows the shell's prompt;
    # every line arrives, in order
    tr -d '\r' <<<"$output" | sed 's/^# //' | grep -xE '[0-9]+' >"$T/seq.out"
    [[ $(wc -l <"$T/seq.out") == 300000 ]] || { wc -l "$T/seq.out"; false; }
    awk 'NR != $1 { bad = 1 } END { exit bad }' "$T/seq.out"
}

@test "a session that waits says why on the terminal; Ctrl-C then cancels it" {
    blocker=$("$DOCKET" submit -A vision -g 8 -N 2 --parsable -- sleep 600)
    wait_for 60 state_in "$blocker" RUNNING
    run drive '[{"expect": "waiting for resources \\(PENDING: [A-Za-z]+\\)"}, {"send": "\u0003"}]' \
        "$DOCKET" shell -A vision -g 1 -- true
    "$DOCKET" cancel "$blocker" >/dev/null
    [[ $status == 130 && $output == *"cancelled while it waited"* ]] || { echo "status $status: $output"; false; }
    id=$(last_job)
    wait_for 60 state_in "$id" CANCELLED
}

@test "a shell: typed commands run, Ctrl-C reaches a remote sleep, a resize shows in stty size" {
    steps='[{"expect": "session [0-9]+ on"}, {"idle": 6}, {"send": "PS1=@@; export PS1\r"}, {"expect": "@@"},
            {"send": "stty size\r"}, {"expect": "24 80"},
            {"resize": [33, 101]}, {"send": "stty size\r"}, {"expect": "33 101"},
            {"send": "sleep 600\r"}, {"expect": "sleep 600\r\n"}, {"idle": 1},
            {"send": "\u0003"}, {"send": "echo slept:$?\r"}, {"expect": "slept:130"},
            {"send": "exit 7\r"}]'
    run drive "$steps" "$DOCKET" shell -A vision -- /bin/sh
    [[ $status == 7 && $output == *"slept:130"* ]] || { echo "status $status: $output"; false; }
    id=$(last_job)
    wait_for 60 state_in "$id" COMPLETED FAILED
    [[ $("$DOCKET" show "$id" --json | jq -r '.job.exit.code') == 7 ]]
}

@test "a dropped connection leaves the session running; docket attach replays and goes on" {
    steps='[{"expect": "session [0-9]+ on"}, {"send": "echo mark-$((40+2))\r"},
            {"expect": "mark-42"}, {"close": true}]'
    run drive "$steps" "$DOCKET" shell -A vision -- /bin/sh
    id=$(last_job)
    [[ $(job_state "$id") == RUNNING ]]
    steps='[{"expect": "mark-42"}, {"send": "echo again-$((1+1))\r"}, {"expect": "again-2"},
            {"send": "exit 4\r"}]'
    run -4 drive "$steps" "$DOCKET" attach "$id"
    wait_for 60 state_in "$id" COMPLETED FAILED
}

@test "a session outlives a restart of its node's agent and of docketd; attach finds it" {
    steps='[{"expect": "session [0-9]+ on"}, {"send": "echo before-$((3*3))\r"},
            {"expect": "before-9"}, {"close": true}]'
    run drive "$steps" "$DOCKET" shell -A vision -- /bin/sh
    id=$(last_job)
    node=$("$DOCKET" show "$id" --json | jq -r '.job.allocation[0].node')
    n=${node##*-}
    kill_pidfile "$T/agent-$n.pid"
    agent_start "$n" "$("$DOCKET" token join)"
    kill_pidfile "$T/ctl.pid"
    ctl_start "$PORT"
    wait_for 60 nodes_up 2
    [[ $(job_state "$id") == RUNNING ]]
    steps='[{"expect": "before-9"}, {"send": "echo after-$((4*4))\r"}, {"expect": "after-16"},
            {"send": "exit 2\r"}]'
    run -2 drive "$steps" "$DOCKET" attach "$id"
}

@test "the session's working directory is kept per user and project between sessions" {
    run -0 drive '[]' "$DOCKET" shell -A vision -- sh -c 'pwd; echo kept >note'
    [[ $output == *"/sessions/vision/"* ]]
    run -0 drive '[]' "$DOCKET" shell -A vision -- cat note
    [[ $output == *kept* ]]
}

@test "an idle session is warned, then ended" {
    sed 's/session_idle: 1h/session_idle: 2s/' "$BATS_TEST_DIRNAME/../../examples/policy.yaml" >"$T/idle.yaml"
    "$DOCKET" apply -f "$T/idle.yaml" >/dev/null
    run drive '[{"expect": "idle for 2s"}, {"expect": "ends now"}]' "$DOCKET" shell -A vision -- sleep 600
    "$DOCKET" apply -f "$BATS_TEST_DIRNAME/../../examples/policy.yaml" >/dev/null
    [[ $status == 129 ]] || { echo "status $status: $output"; false; }
}

@test "salloc and srun --pty open a session; inside it srun --pty runs on its first node" {
    run -5 drive '[]' salloc -A vision -N 1 sh -c 'echo "in:$SLURM_JOB_ID"; exit 5'
    [[ $output =~ in:[0-9]+ ]]
    steps='[{"expect": "session [0-9]+ on"}, {"send": "srun --pty sh -c \"echo inner:\\$DOCKET_NODE\"; exit 6\r"},
            {"expect": "inner:shell"}]'
    run -6 drive "$steps" srun --pty -A vision /bin/sh
}

@test "another member, a lead, another node and a stranger cannot take a session's terminal" {
    before=$(last_job)
    # the victim's session is live and has shown its secret (victim.ready) before any attack;
    # pty_drive writes the output only at its end
    steps='[{"expect": "session [0-9]+ on"}, {"send": "echo secret-$((7*6))\r"}, {"expect": "secret-42"},
            {"touch": "'"$T"'/victim.ready"}, {"expect": "never-printed", "timeout": 600}]'
    drive "$steps" "$DOCKET" shell -A vision -- /bin/sh >"$T/victim.out" 3>&- &
    victim=$!
    wait_for 60 bash -c "[[ \$('$DOCKET' queue --json -a | jq -r '[.jobs[].id] | max') -gt ${before:-0} ]]"
    id=$(last_job)
    wait_for 60 state_in "$id" RUNNING
    wait_for 60 test -e "$T/victim.ready"
    local who tok
    for who in mallory:member lenny:lead; do
        tok=$("$DOCKET" token create --user "${who%%:*}" --role member --ttl 1d 2>/dev/null)
        "$DOCKET" projects members add vision "${who%%:*}" --role "${who##*:}" >/dev/null
        run ! env DOCKET_URL="http://127.0.0.1:$PORT" DOCKET_TOKEN="$tok" "$DOCKET" attach "$id"
        # a member fails the route's check, a lead the session's own: owner only
        [[ $output == *"only the owner of job $id"* || ($who == mallory* && $output == *"may not"*) ]] ||
            { echo "$who: $output"; false; }
        [[ $output != *secret-42* ]]
    done
    # no token at all
    run curl -s -H 'Upgrade: docket-tty' "http://127.0.0.1:$PORT/v1/jobs/$id/tty"
    [[ $output == *'"error"'* && $output != *secret-42* ]]
    # the other node's credential, on the node's side of the stream
    node=$("$DOCKET" show "$id" --json | jq -r '.job.allocation[0].node')
    other=$([[ $node == *-a ]] && echo b || echo a)
    run curl -s -H "Authorization: Bearer $(cat "$T/agent-$other/credential")" \
        -H 'Upgrade: docket-tty' "http://127.0.0.1:$PORT/v1/agent/jobs/$id/tty"
    [[ $output == *"not on node"* ]]
    # a user's token on the node's side
    run curl -s -H "Authorization: Bearer $tok" -H 'Upgrade: docket-tty' \
        "http://127.0.0.1:$PORT/v1/agent/jobs/$id/tty"
    [[ $output == *'"error"'* && $output != *secret-42* ]]
    # a process of another user on the node, at the supervisor's socket itself
    sock=$(ls "$T"/agent-*/jobs/"$id"/tty.sock)
    [[ $(stat -c %a "$sock") == 600 ]]
    if [[ $(id -u) == 0 ]]; then
        run python3 -c 'import os, socket, sys
os.setgid(65534); os.setuid(65534)
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1]); print("connected"); s.settimeout(2); print(s.recv(100))
except OSError as e:
    print("refused:", e.strerror)' "$sock"
        [[ $output == refused:* ]] || { echo "$output"; false; }
    fi
    "$DOCKET" cancel "$id" >/dev/null
    wait "$victim" || true
}
