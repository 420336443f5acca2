#!/usr/bin/env bats
# Leases (issue 32, docs/agent.md "Fencing and leases"): a controller outage longer than node_timeout
# stops no job. One docketd (node_timeout 3 s, so the outage below is long past it) and
# two real agents; eight jobs that each write a line every 0.2 s until the outage is over.
# docketd is stopped, stays away until both agents have said they lost it and the node
# timeout has passed again, and comes back: every job ran on, once, and ends COMPLETED with its events.

CLUSTER_NAME=leases
load lib/cluster
DOCKETD_EXTRA=(--node-timeout 3s --heartbeat-wait 1s)

setup_file() { cluster_start; }
teardown_file() { cluster_stop; }

# submit_ticker: a job (rank 0 of one node) that writes a line "tick" every 0.2 s until the
# test says the outage is over ($W/outage.over), then "count N", N its ticks: it runs
# through the outage however long that takes, and ends as soon as the outage is over
submit_ticker() {
    "$DOCKET" submit --json --gpus 1 --gpu-type H100-80GB -- \
        sh -c "n=0; until [ -e '$W/outage.over' ]; do echo tick; n=\$((n + 1)); sleep 0.2; done
            echo count \$n" | jq -r .job.id
}

@test "docketd away past node_timeout: no job stops, none runs twice, events complete" {
    ids=()
    for _ in 1 2 3 4 5 6 7 8; do ids+=("$(submit_ticker)"); done
    for id in "${ids[@]}"; do wait_for 60 state_in "$id" RUNNING; done
    kill_pidfile "$T/ctl.pid"
    # both agents notice (their own lease, node_timeout - margin, runs out) ...
    wait_for 60 grep -q event=controller_silent "$T/agent-a.log"
    wait_for 60 grep -q event=controller_silent "$T/agent-b.log"
    # ... and the outage goes on past node_timeout + margin once more
    sleep 5
    for id in "${ids[@]}"; do
        # each job's supervisor is there, and none has ended (it writes final.json then)
        compgen -G "$T/agent-*/jobs/$id/state.json" >/dev/null
        ! compgen -G "$T/agent-*/jobs/$id/final.json" >/dev/null ||
            { echo "job $id stopped during the outage" >&2; false; }
    done
    ctl_start "$PORT"
    touch "$W/outage.over"
    for id in "${ids[@]}"; do wait_for 120 state_in "$id" COMPLETED FAILED NODE_FAIL PENDING; done
    for id in "${ids[@]}"; do
        [[ $(job_state "$id") == COMPLETED ]]
        ev=$("$DOCKET" show "$id" --json)
        # one start, one run, no loss, no fence
        jq -e '[.events[] | select(.type == "start")] | length == 1' <<<"$ev"
        jq -e '[.events[] | select(.type == "lease_expired")] | length == 0' <<<"$ev"
        jq -e '.job.exit.kind == "code" and .job.exit.code == 0' <<<"$ev"
        # every line it wrote, once: as many ticks as it counted
        logs=$(curl -s -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/v1/jobs/$id/logs")
        [[ $logs =~ count\ ([0-9]+) ]] || { echo "job $id: no count in its log" >&2; false; }
        [[ $(grep -c tick <<<"$logs") == "${BASH_REMATCH[1]}" ]] ||
            { echo "job $id: $(grep -c tick <<<"$logs") ticks in its log, it wrote ${BASH_REMATCH[1]}" >&2; false; }
    done
    ! grep -h fenced "$T"/agent-*/jobs/*/sup.log 2>/dev/null || false
}
